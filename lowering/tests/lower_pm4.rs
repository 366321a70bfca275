//! The PM4 and AQL lowerings of a recorded tape on every target: a dependent chain
//! fill(y) → axpy(y, x) → scale(c, y) with an independent sibling fill(z), recorded through the
//! `Recorder` from the real `kernels` code objects with fill's `n` bound to the position. Replays
//! (one vendor packet for the IB, one packet per launch for AQL) give the bytes of the ordinary
//! launch path on a second, identically laid-out device; waits sit exactly at the dependent
//! launches; verification rejects tampered IBs; patching the binding gives the ordinary result of
//! the new position; a grid binding on a kernel with hidden geometry is refused unless its hidden
//! block count is bound too, and then replays at another position like the ordinary path.

use std::time::Duration;

use aql_packets::{AmdPm4IbPacket, FenceScope, RingSize, SignalCondition};
use hal::{Device, DeviceAllocation, LaunchRequest};
use kernarg_abi::layout::ArgValue;
use kernarg_abi::metadata::ValueKind;
use lowering::lower::{
    DimUnit, LowerError, LoweredIb, PatchTarget, VerifyError, apply_patch_sites, lower_aql, lower_pm4, site_value,
    slot_by_artifact, verify,
};
use pm4_encoding::packet::{EventType, Nop, SetShReg};
use pm4_encoding::{Decoder, Emit, Packet, Target};
use soft_device::SimDevice;
use tape_core::binding::{Binding, BindingKind};
use tape_core::recorder::Recorder;
use tape_core::tape::Tape;

mod tape_fixture;

use tape_core::{Access, ArtifactId, LaunchRecord};
use tape_fixture::{GRID, N, N_ADDEND, TARGETS, WG, bytes_of, load, record, x_value};

const POSITION: u32 = 100;

/// A device with the chain's code objects, buffers and retained kernarg blobs, and its tape.
struct Setup {
    device: SimDevice,
    tape: Tape,
    kernarg_vas: Vec<u64>,
    outputs: [DeviceAllocation; 3],
}

/// The chain recorded at `position`, with `bindings`; the first fill runs over `GRID` work-items,
/// or, with `fill_grid_follows`, over `ceil(n / WG)` whole work-groups.
fn setup_with(target: Target, position: u32, fill_grid_follows: bool, bindings: impl Fn(u32) -> Vec<Binding>) -> Setup {
    let mut device = SimDevice::new(target);
    let (fill, axpy, scale) = (load(&mut device, "fill"), load(&mut device, "axpy"), load(&mut device, "scale"));
    let size = 4 * u64::from(GRID);
    let [x, y, z, c] = [0; 4].map(|_| device.allocate(size).unwrap());
    let xs: Vec<u8> = (0..GRID).flat_map(|i| x_value(i).to_le_bytes()).collect();
    device.write(x.va, &xs).unwrap();
    let n = u32::try_from(i64::from(position) + N_ADDEND).unwrap();
    let fill_grid = if fill_grid_follows { n.div_ceil(u32::from(WG)) * u32::from(WG) } else { GRID };
    let launches = [
        (
            &fill,
            record(
                &device,
                &fill,
                fill_grid,
                &[ArgValue::Pointer(y.va), ArgValue::F32(1.5), ArgValue::U32(n)],
                &[(0, y.va)],
                &[(0, Access::Write, bytes_of(n))],
            ),
        ),
        (
            &fill,
            record(
                &device,
                &fill,
                GRID,
                &[ArgValue::Pointer(z.va), ArgValue::F32(-2.0), ArgValue::U32(N)],
                &[(0, z.va)],
                &[(0, Access::Write, bytes_of(N))],
            ),
        ),
        (
            &axpy,
            record(
                &device,
                &axpy,
                GRID,
                &[ArgValue::Pointer(y.va), ArgValue::Pointer(x.va), ArgValue::F32(2.0), ArgValue::U32(N)],
                &[(0, y.va), (8, x.va)],
                &[(0, Access::ReadWrite, bytes_of(N)), (1, Access::Read, bytes_of(N))],
            ),
        ),
        (
            &scale,
            record(
                &device,
                &scale,
                GRID,
                &[ArgValue::Pointer(c.va), ArgValue::Pointer(y.va), ArgValue::F32(0.5), ArgValue::U32(N)],
                &[(0, c.va), (8, y.va)],
                &[(0, Access::Write, bytes_of(N)), (1, Access::Read, bytes_of(N))],
            ),
        ),
    ];
    let mut recorder = Recorder::new(8);
    recorder.begin(position).unwrap();
    let mut kernarg_vas = Vec::new();
    for (m, launch) in launches {
        let blob = device.allocate(u64::try_from(launch.kernarg.len()).unwrap()).unwrap();
        device.write(blob.va, &launch.kernarg).unwrap();
        kernarg_vas.push(blob.va);
        recorder.record(launch, &m.layout).unwrap();
    }
    let tape = recorder.finish().unwrap().with_bindings(bindings(position)).unwrap();
    Setup { device, tape, kernarg_vas, outputs: [y, z, c] }
}

fn n_binding(_: u32) -> Vec<Binding> {
    vec![Binding { name: "fill.n".into(), launch: 0, kind: BindingKind::KernargU32 { offset: 12, addend: N_ADDEND } }]
}

fn setup(target: Target, position: u32) -> Setup {
    setup_with(target, position, false, n_binding)
}

impl Setup {
    fn lower(&self) -> LoweredIb {
        let lookup = slot_by_artifact(self.device.kernels());
        let lowered = lower_pm4(&self.tape, self.device.target().family(), &lookup, &self.kernarg_vas).unwrap();
        self.verify(&lowered).unwrap();
        lowered
    }

    fn verify(&self, lowered: &LoweredIb) -> Result<(), VerifyError> {
        let lookup = slot_by_artifact(self.device.kernels());
        verify(lowered, &self.tape, self.device.target().family(), &lookup, &self.kernarg_vas)
    }

    /// The IB in executable IB memory; returns its VA.
    fn upload(&mut self, words: &[u32]) -> u64 {
        let ib = self.device.allocate_ib(u32::try_from(words.len()).unwrap()).unwrap();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.device.write(ib.va, &bytes).unwrap();
        ib.va
    }

    /// Publishes `packets` on a fresh queue, submits once and waits for the signal.
    fn submit(&mut self, packets: &[[u8; 64]], signal: hal::SignalHandle) {
        let queue = self.device.create_queue(RingSize::new(8).unwrap()).unwrap();
        for p in packets {
            self.device.write_packet(queue, p).unwrap();
        }
        assert_eq!(self.device.run_queue(queue).unwrap(), u64::try_from(packets.len()).unwrap());
        assert_eq!(self.device.wait_signal(signal, SignalCondition::Eq, 0, Duration::from_millis(1)), Ok(0));
    }

    fn replay_ib(&mut self, ib_va: u64, size_dwords: usize) {
        let signal = self.device.create_signal(1).unwrap();
        let size = u32::try_from(size_dwords).unwrap();
        let packet = AmdPm4IbPacket::new(ib_va, size, FenceScope::System, FenceScope::System, signal.get()).unwrap();
        self.submit(&[*packet.as_array()], signal);
        assert_eq!(self.device.last_ib_reports().len(), 1);
        assert_eq!(self.device.last_ib_reports()[0].dispatches.len(), 4);
    }

    /// The tape's launches through `Device::launch`.
    fn run_ordinary(&mut self) {
        let launches: Vec<LaunchRecord> = self.tape.launches().to_vec();
        for launch in &launches {
            let kd = slot_by_artifact(self.device.kernels())(&launch.artifact).unwrap().loaded.kd_va;
            let request = LaunchRequest {
                kernel_object: kd,
                grid_work_items: launch.geometry.grid_work_items,
                workgroup_work_items: launch.geometry.workgroup_work_items,
                dynamic_lds_bytes: launch.lds.dynamic_bytes,
                kernarg: &launch.kernarg,
            };
            self.device.launch(&request).unwrap();
        }
    }

    fn outputs(&mut self) -> Vec<Vec<u8>> {
        self.outputs
            .map(|a| {
                let mut out = vec![0u8; usize::try_from(a.size).unwrap()];
                self.device.read(a.va, &mut out).unwrap();
                out
            })
            .to_vec()
    }
}

/// The ordinary path's bytes at `position`, on a fresh identically laid-out device.
fn ordinary(target: Target, position: u32) -> Vec<Vec<u8>> {
    let mut s = setup(target, position);
    s.run_ordinary();
    s.outputs()
}

/// `y` from plain math: fill(y, 1.5, n) then axpy(y, x, 2.0, N).
fn expected_y(n: u32) -> Vec<u8> {
    (0..GRID)
        .flat_map(|i| {
            let fill = if i < n { 1.5 } else { 0.0 };
            let v = if i < N { 2.0 * x_value(i) + fill } else { fill };
            v.to_le_bytes()
        })
        .collect()
}

#[test]
fn lowered_ib_replays_like_the_ordinary_path() {
    for target in TARGETS {
        let mut s = setup(target, POSITION);
        let lowered = s.lower();
        let ib = s.upload(&lowered.words);
        s.replay_ib(ib, lowered.words.len());
        let replayed = s.outputs();
        assert_eq!(replayed, ordinary(target, POSITION), "{target}");
        let n = u32::try_from(i64::from(POSITION) + N_ADDEND).unwrap();
        assert_eq!(replayed[0], expected_y(n), "{target}: y");
    }
}

/// CS_PARTIAL_FLUSH packets before each dispatch (since the previous one) and after the last.
fn flushes(lowered: &LoweredIb) -> (Vec<usize>, usize) {
    let mut per_dispatch = Vec::new();
    let mut count = 0;
    for d in Decoder::new(&lowered.words).map(Result::unwrap) {
        match d.packet {
            Packet::EventWrite(e) if e.control.event_type() == EventType::CsPartialFlush => count += 1,
            Packet::DispatchDirect(_) => {
                per_dispatch.push(count);
                count = 0;
            }
            _ => {}
        }
    }
    (per_dispatch, count)
}

#[test]
fn waits_sit_exactly_before_the_dependent_launches() {
    for target in TARGETS {
        let s = setup(target, POSITION);
        let lowered = s.lower();
        // fill(z) is independent of fill(y); axpy reads fill(y)'s output, scale reads axpy's.
        assert_eq!(lowered.boundaries, [2, 3], "{target}");
        assert_eq!(flushes(&lowered), (vec![0, 0, 1, 1], 1), "{target}");
        assert_eq!(lowered.dispatch_offsets.len(), 4);
        for &o in &lowered.dispatch_offsets {
            assert!(
                matches!(Decoder::new(&lowered.words[o..]).next(), Some(Ok(d)) if matches!(d.packet, Packet::DispatchDirect(_)))
            );
        }
        let [site] = lowered.patch_sites.as_slice() else { panic!("one site") };
        assert_eq!(site.target, PatchTarget::KernargU32 { va: s.kernarg_vas[0] + 12 }, "{target}");
    }
}

fn emit(p: &impl Emit) -> Vec<u32> {
    let mut out = vec![0u32; p.buffer_len()];
    p.emit(&mut out);
    out
}

/// `lowered` with the `n`-th packet satisfying `pick` replaced by `f(values-or-words)`, same length.
fn tamper(
    lowered: &LoweredIb,
    mut pick: impl FnMut(&Packet<'_>) -> bool,
    n: usize,
    f: impl Fn(&Packet<'_>, &[u32]) -> Vec<u32>,
) -> LoweredIb {
    let mut words = Vec::new();
    let mut seen = 0;
    for d in Decoder::new(&lowered.words).map(Result::unwrap) {
        if pick(&d.packet) {
            seen += 1;
            if seen == n + 1 {
                let replaced = f(&d.packet, d.words);
                assert_eq!(replaced.len(), d.words.len());
                words.extend(replaced);
                continue;
            }
        }
        words.extend(d.words);
    }
    LoweredIb { words, ..lowered.clone() }
}

fn sh_reg(target: Target, name: &str) -> impl FnMut(&Packet<'_>) -> bool {
    let dword = pm4_encoding::regs::by_name(target.family(), name).unwrap().dword;
    move |p| matches!(p, Packet::SetShReg(s) if s.first_dword() == dword)
}

fn rewrite_values(f: impl Fn(&mut Vec<u32>)) -> impl Fn(&Packet<'_>, &[u32]) -> Vec<u32> {
    move |p, _| {
        let Packet::SetShReg(s) = p else { unreachable!() };
        let mut values = s.values.to_vec();
        f(&mut values);
        emit(&SetShReg::new(s.first_dword(), &values).unwrap())
    }
}

#[test]
fn verification_rejects_tampered_ibs() {
    for target in TARGETS {
        let s = setup(target, POSITION);
        let lowered = s.lower();

        let wrong_pgm = tamper(&lowered, sh_reg(target, "COMPUTE_PGM_LO"), 1, rewrite_values(|v| v[0] += 1));
        assert!(matches!(s.verify(&wrong_pgm), Err(VerifyError::ProgramAddress { dispatch: 1, .. })), "{target}");

        let shifted = tamper(
            &lowered,
            sh_reg(target, "COMPUTE_USER_DATA_0"),
            2,
            rewrite_values(|v| {
                let len = v.len();
                v.insert(0, 0);
                v.truncate(len);
            }),
        );
        assert!(matches!(s.verify(&shifted), Err(VerifyError::UserData { dispatch: 2, .. })), "{target}");

        // The first CS_PARTIAL_FLUSH is the wait before axpy (dispatch 2).
        let is_flush =
            |p: &Packet<'_>| matches!(p, Packet::EventWrite(e) if e.control.event_type() == EventType::CsPartialFlush);
        let no_wait = tamper(&lowered, is_flush, 0, |_, w| emit(&Nop::new(&vec![0; w.len() - 1]).unwrap()));
        assert_eq!(
            s.verify(&no_wait),
            Err(VerifyError::Wait { dispatch: 2, expected: true, found: false }),
            "{target}"
        );

        let mut wrong_dim = lowered.clone();
        wrong_dim.words[lowered.dispatch_offsets[3] + 1] += 1;
        assert!(matches!(s.verify(&wrong_dim), Err(VerifyError::Dimensions { dispatch: 3, .. })), "{target}");

        assert_eq!(s.verify(&lowered), Ok(()));
    }
}

#[test]
fn aql_lowering_replays_like_the_ordinary_path() {
    for target in TARGETS {
        let mut s = setup(target, POSITION);
        let signal = s.device.create_signal(1).unwrap();
        let packets = {
            let lookup = slot_by_artifact(s.device.kernels());
            lower_aql(&s.tape, &lookup, &s.kernarg_vas, signal.get()).unwrap()
        };
        let barriers: Vec<bool> = packets
            .iter()
            .map(|p| aql_packets::KernelDispatchPacket::from_array(p).parse().unwrap().control.barrier)
            .collect();
        assert_eq!(barriers, [false, false, true, true], "{target}");
        let signals: Vec<u64> = packets
            .iter()
            .map(|p| aql_packets::KernelDispatchPacket::from_array(p).parse().unwrap().completion_signal)
            .collect();
        assert_eq!(signals, [0, 0, 0, signal.get()], "{target}");
        s.submit(&packets, signal);
        assert_eq!(s.outputs(), ordinary(target, POSITION), "{target}");
    }
}

#[test]
fn patched_position_replays_like_an_ordinary_run_at_that_position() {
    const LATER: u32 = 350;
    for target in TARGETS {
        let mut s = setup(target, POSITION);
        let lowered = s.lower();
        let ib = s.upload(&lowered.words);
        apply_patch_sites(&mut s.device, ib, &lowered.patch_sites, LATER).unwrap();
        s.replay_ib(ib, lowered.words.len());
        let replayed = s.outputs();
        assert_eq!(replayed, ordinary(target, LATER), "{target}");
        assert_eq!(replayed[0], expected_y(u32::try_from(i64::from(LATER) + N_ADDEND).unwrap()), "{target}");
        assert_ne!(replayed, ordinary(target, POSITION), "{target}: the position matters");
    }
}

#[test]
fn grid_binding_on_a_kernel_with_hidden_block_counts_is_refused() {
    for target in TARGETS {
        let grid = |position: u32| {
            let mut b = n_binding(position);
            let addend = i64::from(GRID) - i64::from(position);
            let kind = BindingKind::GridAxis { axis: 0, addend, divisor: u32::from(WG), max_workgroups: 32 };
            b.push(Binding { name: "fill.z.grid".into(), launch: 1, kind });
            b
        };
        let s = setup_with(target, POSITION, false, grid);
        let lookup = slot_by_artifact(s.device.kernels());
        let result = lower_pm4(&s.tape, target.family(), &lookup, &s.kernarg_vas);
        assert_eq!(
            result,
            Err(LowerError::GridBindingWithHiddenGeometry {
                binding: "fill.z.grid".into(),
                launch: 1,
                axis: 0,
                arg: "hidden_block_count_x"
            }),
            "{target}"
        );
    }
}

#[test]
fn unknown_kernels_and_missing_kernarg_vas_are_refused() {
    let s = setup(Target::Gfx1100, POSITION);
    let none = |_: &ArtifactId| None;
    let result = lower_pm4(&s.tape, s.device.target().family(), &none, &s.kernarg_vas);
    assert!(matches!(result, Err(LowerError::UnknownKernel { launch: 0, .. })), "{result:?}");
    let lookup = slot_by_artifact(s.device.kernels());
    let result = lower_pm4(&s.tape, s.device.target().family(), &lookup, &s.kernarg_vas[..3]);
    assert_eq!(result, Err(LowerError::KernargVaCount { launches: 4, vas: 3 }));
    assert!(matches!(lower_aql(&s.tape, &none, &s.kernarg_vas, 0), Err(LowerError::UnknownKernel { launch: 0, .. })));
}

/// Byte offset of `hidden_block_count_x` in fill's kernarg layout on `target`.
fn fill_block_count_offset(target: Target) -> u32 {
    let bytes = kernels::artifact(&format!("{target}/fill.co")).unwrap().bytes;
    let co = kernarg_abi::read_any(bytes, Some(target)).unwrap();
    co.kernel("fill").unwrap().kernarg_layout().unwrap().offset_of(&ValueKind::HiddenBlockCountX).unwrap()
}

/// Most work-groups of the first fill: `ceil((position + N_ADDEND) / WG)` up to `GRID` elements.
const FILL_MAX_WORKGROUPS: u32 = GRID / WG as u32;

/// The first fill's `n`, its grid and its hidden block count, all following the position.
fn fill_grid_bindings(target: Target) -> impl Fn(u32) -> Vec<Binding> {
    let offset = fill_block_count_offset(target);
    move |position| {
        let (addend, divisor, max_workgroups) = (N_ADDEND, u32::from(WG), FILL_MAX_WORKGROUPS);
        let mut b = n_binding(position);
        b.push(Binding {
            name: "fill.grid.x".into(),
            launch: 0,
            kind: BindingKind::GridAxis { axis: 0, addend, divisor, max_workgroups },
        });
        b.push(Binding {
            name: "fill.block_count.x".into(),
            launch: 0,
            kind: BindingKind::KernargGridWorkgroups { offset, axis: 0, addend, divisor, max_workgroups },
        });
        b
    }
}

/// The ordinary path's bytes at `position` with the first fill's grid following the position.
fn ordinary_fill_grid(target: Target, position: u32) -> Vec<Vec<u8>> {
    let mut s = setup_with(target, position, true, fill_grid_bindings(target));
    s.run_ordinary();
    s.outputs()
}

#[test]
fn grid_binding_with_bound_hidden_block_count_patches_and_replays() {
    const LATER: u32 = 350;
    for target in TARGETS {
        let mut s = setup_with(target, POSITION, true, fill_grid_bindings(target));
        assert_eq!(s.tape.launches()[0].geometry.grid_work_items[0], 704, "{target}: 11 work-groups at 100");
        let lowered = s.lower();
        let offset = fill_block_count_offset(target);
        assert_eq!(lowered.patch_sites.len(), 3);
        assert_eq!(lowered.patch_sites[2].target, PatchTarget::KernargU32 { va: s.kernarg_vas[0] + u64::from(offset) });
        let ib = s.upload(&lowered.words);
        apply_patch_sites(&mut s.device, ib, &lowered.patch_sites, LATER).unwrap();
        // n = 950: 15 work-groups, in the kernarg and in DIM_X (work-items on gfx12).
        let mut word = [0u8; 4];
        s.device.read(s.kernarg_vas[0] + u64::from(offset), &mut word).unwrap();
        assert_eq!(u32::from_le_bytes(word), 15, "{target}");
        let dim_x = lowered.dispatch_offsets[0] + 1;
        s.device.read(ib + 4 * u64::try_from(dim_x).unwrap(), &mut word).unwrap();
        let expected_dim = if target == Target::Gfx1201 { 15 * u32::from(WG) } else { 15 };
        assert_eq!(u32::from_le_bytes(word), expected_dim, "{target}");
        s.replay_ib(ib, lowered.words.len());
        let replayed = s.outputs();
        assert_eq!(replayed, ordinary_fill_grid(target, LATER), "{target}");
        assert_eq!(replayed[0], expected_y(u32::try_from(i64::from(LATER) + N_ADDEND).unwrap()), "{target}");
        assert_ne!(replayed, ordinary_fill_grid(target, POSITION), "{target}: the position matters");
        // Patching only n and DIM leaves a stale block count, which the CP refuses.
        let mut stale = setup_with(target, POSITION, true, fill_grid_bindings(target));
        let lowered = stale.lower();
        let ib = stale.upload(&lowered.words);
        apply_patch_sites(&mut stale.device, ib, &lowered.patch_sites[..2], LATER).unwrap();
        let signal = stale.device.create_signal(1).unwrap();
        let size = u32::try_from(lowered.words.len()).unwrap();
        let packet = AmdPm4IbPacket::new(ib, size, FenceScope::System, FenceScope::System, signal.get()).unwrap();
        let queue = stale.device.create_queue(RingSize::new(8).unwrap()).unwrap();
        stale.device.write_packet(queue, packet.as_array()).unwrap();
        let err = stale.device.run_queue(queue).unwrap_err();
        assert!(format!("{err:?}").contains("hidden_block_count_x"), "{target}: {err:?}");
    }
}

/// The grid binding's `DIM` site is in the family's unit (work-items on gfx12, `W` per
/// work-group), its rule says so in the bundle text form, its value at a position is the work-group
/// count in that unit, and the verifier refuses the same site in the other unit or with another
/// addend: the site is built once, by the function the verifier checks against.
#[test]
fn the_grid_site_is_in_the_family_unit_and_the_verifier_holds_it_there() {
    const LATER: u32 = 350;
    for target in TARGETS {
        let s = setup_with(target, POSITION, true, fill_grid_bindings(target));
        let lowered = s.lower();
        let site = lowered.patch_sites[1];
        let items = DimUnit::WorkItems { workgroup_work_items: u32::from(WG) };
        let (unit, other) =
            if target == Target::Gfx1201 { (items, DimUnit::Workgroups) } else { (DimUnit::Workgroups, items) };
        assert_eq!(site.target.unit(), unit, "{target}");
        let suffix = if unit == items { format!(" * {WG}") } else { String::new() };
        assert_eq!(
            site.rule().unwrap().to_string(),
            format!("ceil((position + {N_ADDEND}) / {WG}){suffix}"),
            "{target}"
        );
        // n = 950 at LATER: 15 work-groups of WG (rounding down gives 14, the addend twice 25).
        let workgroups = u32::try_from(i64::from(LATER) + N_ADDEND).unwrap().div_ceil(u32::from(WG));
        assert_eq!(workgroups, 15);
        let expected = if unit == items { workgroups * u32::from(WG) } else { workgroups };
        assert_eq!(site_value(&site, LATER), Ok(expected), "{target}");
        // The block count's word is in work-groups on every family.
        assert_eq!(site_value(&lowered.patch_sites[2], LATER), Ok(workgroups), "{target}");

        let mut wrong_unit = lowered.clone();
        let PatchTarget::DispatchDim { ib_dword, .. } = site.target else { panic!("{target}: a DIM site") };
        wrong_unit.patch_sites[1].target = PatchTarget::DispatchDim { ib_dword, unit: other };
        assert_eq!(s.verify(&wrong_unit), Err(VerifyError::PatchSite { binding: 1 }), "{target}");
        let mut wrong_addend = lowered.clone();
        let BindingKind::GridAxis { axis, addend, divisor, max_workgroups } = site.kind else { panic!("a grid site") };
        wrong_addend.patch_sites[1].kind = BindingKind::GridAxis { axis, addend: addend + 1, divisor, max_workgroups };
        assert_eq!(s.verify(&wrong_addend), Err(VerifyError::PatchSite { binding: 1 }), "{target}");
        let mut missing = lowered.clone();
        missing.patch_sites.pop();
        assert_eq!(s.verify(&missing), Err(VerifyError::PatchSite { binding: 2 }), "{target}");
    }
}

#[test]
fn grid_binding_with_a_stale_or_nonzero_hidden_argument_is_refused() {
    for target in TARGETS {
        let s = setup_with(target, POSITION, true, fill_grid_bindings(target));
        let lookup = slot_by_artifact(s.device.kernels());
        let refused = |arg| {
            Err(LowerError::GridBindingWithHiddenGeometry { binding: "fill.grid.x".into(), launch: 0, axis: 0, arg })
        };
        // Without the block count's binding.
        let mut data = s.tape.clone().into_data();
        data.bindings.retain(|b| b.name != "fill.block_count.x");
        let tape = tape_core::serial::validate(data).unwrap();
        assert_eq!(
            lower_pm4(&tape, target.family(), &lookup, &s.kernarg_vas),
            refused("hidden_block_count_x"),
            "{target}"
        );
        // A recorded remainder other than 0 (the blob is only checked against its layout when
        // recorded, not when deserialized).
        let layout = slot_by_artifact(s.device.kernels())(&s.tape.launches()[0].artifact)
            .unwrap()
            .kernel
            .kernarg_layout()
            .unwrap();
        let remainder = usize::try_from(layout.offset_of(&ValueKind::HiddenRemainderX).unwrap()).unwrap();
        let mut data = s.tape.clone().into_data();
        data.launches[0].kernarg[remainder] = 1;
        let tape = tape_core::serial::validate(data).unwrap();
        assert_eq!(
            lower_pm4(&tape, target.family(), &lookup, &s.kernarg_vas),
            refused("hidden_remainder_x"),
            "{target}"
        );
    }
}
