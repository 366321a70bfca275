//! The PM4 command processor on every target: a dependent chain (fill → axpy → scale → block_sum)
//! as one hand-built IB gives the same bytes as the ordinary launch path and as plain f64 math;
//! and each mutation of that IB fails with its specific fault.

use hal::{Device, DeviceAllocation, LaunchRequest};
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use lowering::ib_builder::{self, IbDispatch};
use pm4_encoding::packet::{DispatchDirect, Nop, SetShReg, SetUconfigReg};
use pm4_encoding::{Decoder, Emit, Packet, Target};
use soft_device::SimDevice;
use soft_device::cp::{CommandProcessor, CpFault, CpFaultKind, IbReport};
use soft_device::memory::SimMemory;

const N: u32 = 1000;
const GRID: u32 = 1024;
const WG: u16 = 64;
const LDS: u32 = 4 * 64;

fn x_value(i: u32) -> f64 {
    f64::from(i % 7) / 4.0 - 0.5
}

/// One prepared chain on a device: buffers, kernarg segments and the IB's dispatches.
struct Chain {
    device: SimDevice,
    y: DeviceAllocation,
    c: DeviceAllocation,
    d: DeviceAllocation,
    /// (kernel, kd VA, kernarg blob, kernarg VA, dynamic LDS).
    launches: Vec<(&'static str, u64, Vec<u8>, u64, u32)>,
}

fn chain(target: Target) -> Chain {
    let mut device = SimDevice::new(target);
    let bytes = 4 * u64::from(GRID);
    let mut kds = Vec::new();
    let mut cos = Vec::new();
    for module in ["fill", "axpy", "scale", "block_sum"] {
        let co = kernels::artifact(&format!("{target}/{module}.co")).unwrap().bytes.to_vec();
        let loaded = device.load_code_object(&co).unwrap();
        kds.push(loaded.kernel(module).unwrap().kd_va);
        cos.push(co);
    }
    let (y, x, c) = (device.allocate(bytes).unwrap(), device.allocate(bytes).unwrap(), device.allocate(bytes).unwrap());
    let d = device.allocate(4 * u64::from(GRID / u32::from(WG))).unwrap();
    let xs: Vec<u8> = (0..GRID)
        .flat_map(|i| {
            // CAST: exact multiples of 1/4.
            #[allow(clippy::cast_possible_truncation)]
            let v = x_value(i) as f32;
            v.to_le_bytes()
        })
        .collect();
    device.write(x.va, &xs).unwrap();
    let args: [(&str, Vec<ArgValue>, u32); 4] = [
        ("fill", vec![ArgValue::Pointer(y.va), ArgValue::F32(1.5), ArgValue::U32(N)], 0),
        ("axpy", vec![ArgValue::Pointer(y.va), ArgValue::Pointer(x.va), ArgValue::F32(2.0), ArgValue::U32(N)], 0),
        ("scale", vec![ArgValue::Pointer(c.va), ArgValue::Pointer(y.va), ArgValue::F32(0.5), ArgValue::U32(N)], 0),
        ("block_sum", vec![ArgValue::Pointer(d.va), ArgValue::Pointer(c.va), ArgValue::U32(N)], LDS),
    ];
    let mut launches = Vec::new();
    for (i, (name, values, lds)) in args.into_iter().enumerate() {
        let co = kernarg_abi::read_any(&cos[i], Some(target)).unwrap();
        let geometry = DispatchGeometry { dynamic_lds_bytes: lds, ..DispatchGeometry::linear(GRID, WG) };
        let blob = co.kernel(name).unwrap().kernarg_layout().unwrap().build(&values, &geometry).unwrap();
        let segment = device.allocate(u64::try_from(blob.len()).unwrap()).unwrap();
        device.write(segment.va, &blob).unwrap();
        launches.push((name, kds[i], blob, segment.va, lds));
    }
    Chain { device, y, c, d, launches }
}

impl Chain {
    /// The IB with a wait before every dependent dispatch (all but the first).
    fn ib(&self, waits: [bool; 4]) -> Vec<u32> {
        let objects = self.device.kernels();
        let dispatches: Vec<IbDispatch<'_>> = self
            .launches
            .iter()
            .zip(waits)
            .map(|(&(_, kd, _, kernarg_va, lds), wait)| {
                let slot = objects.by_kd(kd).unwrap();
                IbDispatch::from_slot(slot, kernarg_va, [GRID, 1, 1], [WG, 1, 1], lds, wait)
            })
            .collect();
        let mut out = vec![0u32; 1024];
        let len = ib_builder::build(self.device.target().family(), &dispatches, &mut out).unwrap();
        out.truncate(len);
        out
    }

    /// Runs `words` as an IB on a copy of the device's memory.
    fn run(&self, words: &[u32]) -> (SimMemory, Result<IbReport, CpFault>) {
        self.run_sized(words, u32::try_from(words.len()).unwrap())
    }

    fn run_sized(&self, words: &[u32], size_dwords: u32) -> (SimMemory, Result<IbReport, CpFault>) {
        let mut memory = self.device.memory().clone();
        let ib = memory.allocate(u64::try_from(4 * words.len().max(1)).unwrap()).unwrap();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        memory.write(ib.va, &bytes).unwrap();
        let mut cp = CommandProcessor::new(self.device.target().family());
        let mut clock = soft_device::clock::GpuClock::new();
        let result = cp.execute_ib(&mut memory, self.device.soft_kernels(), ib.va, size_dwords, &mut clock);
        (memory, result)
    }
}

fn read(memory: &SimMemory, va: u64, len: u64) -> Vec<u8> {
    let mut out = vec![0u8; usize::try_from(len).unwrap()];
    memory.read(va, &mut out).unwrap();
    out
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap()))).collect()
}

const WAITS: [bool; 4] = [false, true, true, true];

#[test]
fn chain_ib_matches_ordinary_launches_and_f64_math_on_every_target() {
    for target in Target::ALL {
        let mut ch = chain(target);
        let words = ch.ib(WAITS);
        let (memory, report) = ch.run(&words);
        let report = report.unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!(
            report.dispatches.iter().map(|d| d.kernel.as_str()).collect::<Vec<_>>(),
            ["fill", "axpy", "scale", "block_sum"]
        );
        assert_eq!(report.waits, 4, "{target}");
        assert_eq!(report.acquires.len(), 5, "{target}");

        // The same chain through the ordinary path.
        for (_, kd, blob, _, lds) in ch.launches.clone() {
            let request = LaunchRequest {
                kernel_object: kd,
                grid_work_items: [GRID, 1, 1],
                workgroup_work_items: [WG, 1, 1],
                dynamic_lds_bytes: lds,
                kernarg: &blob,
            };
            ch.device.launch(&request).unwrap();
        }
        for a in [ch.y, ch.c, ch.d] {
            let mut ordinary = vec![0u8; usize::try_from(a.size).unwrap()];
            ch.device.read(a.va, &mut ordinary).unwrap();
            assert_eq!(read(&memory, a.va, a.size), ordinary, "{target} allocation {:?}", a.id);
        }

        // Plain f64 math.
        let y: Vec<f64> = (0..GRID).map(|i| if i < N { 2.0 * x_value(i) + 1.5 } else { 0.0 }).collect();
        let c: Vec<f64> = y.iter().map(|v| v * 0.5).collect();
        let d: Vec<f64> = c.chunks(usize::from(WG)).map(|g| g.iter().sum()).collect();
        assert_eq!(f64s(&read(&memory, ch.y.va, 4 * u64::from(GRID))), y, "{target} y");
        assert_eq!(f64s(&read(&memory, ch.c.va, 4 * u64::from(GRID))), c, "{target} c");
        assert_eq!(f64s(&read(&memory, ch.d.va, 64)), d, "{target} d");
    }
}

/// Rewrites `words` packet by packet: `f(index of the packet among those of its opcode, packet)`
/// returns the replacement words, or `None` to keep the packet.
fn rewrite(words: &[u32], mut f: impl FnMut(&Packet<'_>, &[u32]) -> Option<Vec<u32>>) -> Vec<u32> {
    let mut out = Vec::new();
    for item in Decoder::new(words) {
        let d = item.unwrap();
        out.extend(f(&d.packet, d.words).unwrap_or_else(|| d.words.to_vec()));
    }
    out
}

fn emit(p: &impl Emit) -> Vec<u32> {
    let mut out = vec![0u32; p.buffer_len()];
    p.emit(&mut out);
    out
}

/// The `n`-th (0-based) DISPATCH_DIRECT's IB dword offset.
fn dispatch_offset(words: &[u32], n: usize) -> usize {
    Decoder::new(words)
        .map(Result::unwrap)
        .filter(|d| matches!(d.packet, Packet::DispatchDirect(_)))
        .nth(n)
        .unwrap()
        .offset
}

fn fault(ch: &Chain, words: &[u32]) -> CpFault {
    ch.run(words).1.unwrap_err()
}

/// The `n`-th SET_SH_REG whose first register is `name`, rewritten by `f` on its values.
fn patch_reg(words: &[u32], target: Target, name: &str, n: usize, f: impl Fn(&mut Vec<u32>)) -> Vec<u32> {
    let dword = pm4_encoding::regs::by_name(target.family(), name).unwrap().dword;
    let mut seen = 0;
    rewrite(words, |p, _| match p {
        Packet::SetShReg(s) if s.first_dword() == dword => {
            seen += 1;
            (seen == n + 1).then(|| {
                let mut values = s.values.to_vec();
                f(&mut values);
                emit(&SetShReg::new(dword, &values).unwrap())
            })
        }
        _ => None,
    })
}

fn patch_dispatch(words: &[u32], n: usize, f: impl Fn(&mut DispatchDirect)) -> Vec<u32> {
    let mut seen = 0;
    rewrite(words, |p, _| match p {
        Packet::DispatchDirect(d) => {
            seen += 1;
            (seen == n + 1).then(|| {
                let mut d = *d;
                f(&mut d);
                emit(&d)
            })
        }
        _ => None,
    })
}

#[test]
fn missing_wait_between_dependent_dispatches_is_a_hazard() {
    for target in Target::ALL {
        let ch = chain(target);
        let words = ch.ib([false, false, true, true]);
        let f = fault(&ch, &words);
        let (fill, axpy) = (dispatch_offset(&words, 0), dispatch_offset(&words, 1));
        assert_eq!(f.offset_dwords, axpy, "{target}");
        assert!(
            matches!(&f.kind, CpFaultKind::Hazard(c) if c.first_offset == fill && c.second_offset == axpy && c.allocation == ch.y.id),
            "{target}: {f}"
        );
    }
}

#[test]
fn missing_cache_invalidate_before_a_consumer_is_a_visibility_fault() {
    for target in Target::ALL {
        let ch = chain(target);
        let words = ch.ib(WAITS);
        // Drop the consumer acquire before axpy (the second ACQUIRE_MEM: axpy reads fill's y),
        // or before scale (the third: scale reads axpy's y, fill's write made visible before
        // axpy), keep the waits. The fault names the writer among the IB's finished dispatches.
        for (acquire, writer, reader, names) in [(2, 0, 1, ("fill", "axpy")), (3, 1, 2, ("axpy", "scale"))] {
            let mut seen = 0;
            let mutated = rewrite(&words, |p, w| match p {
                Packet::AcquireMem(_) => {
                    seen += 1;
                    (seen == acquire).then(|| emit(&Nop::new(&vec![0; w.len() - 1]).unwrap()))
                }
                _ => None,
            });
            let f = fault(&ch, &mutated);
            let (writer, reader) = (dispatch_offset(&mutated, writer), dispatch_offset(&mutated, reader));
            assert!(
                matches!(&f.kind, CpFaultKind::Visibility(s) if (s.writer_offset, s.reader_offset) == (writer, reader)
                    && (s.writer_kernel.as_str(), s.reader_kernel.as_str()) == names && s.allocation == ch.y.id),
                "{target}: {f}"
            );
        }
    }
}

#[test]
fn wrong_pgm_address_is_an_unknown_entry() {
    for target in Target::ALL {
        let ch = chain(target);
        let words = patch_reg(&ch.ib(WAITS), target, "COMPUTE_PGM_LO", 0, |v| v[0] += 1);
        let f = fault(&ch, &words);
        assert_eq!(f.offset_dwords, dispatch_offset(&words, 0));
        assert!(matches!(f.kind, CpFaultKind::UnknownEntry { .. }), "{target}: {f}");
    }
}

#[test]
fn wrong_user_sgpr_count_in_rsrc2_is_refused() {
    for target in Target::ALL {
        let ch = chain(target);
        // RSRC2.USER_SGPR is bits [5:1] (reference §3): one more than the descriptor says.
        let words = patch_reg(&ch.ib(WAITS), target, "COMPUTE_PGM_RSRC1", 1, |v| v[1] += 1 << 1);
        let f = fault(&ch, &words);
        assert_eq!(f.offset_dwords, dispatch_offset(&words, 1));
        assert!(matches!(f.kind, CpFaultKind::UserSgprCount { .. }), "{target}: {f}");
    }
}

#[test]
fn kernarg_pointer_in_the_wrong_user_data_register_is_refused() {
    for target in Target::ALL {
        let ch = chain(target);
        // Shift the user data up by two registers: the kernarg pointer's registers hold what
        // precedes it (zeros) instead.
        let words = patch_reg(&ch.ib(WAITS), target, "COMPUTE_USER_DATA_0", 0, |v| {
            v.insert(0, 0);
            v.insert(0, 0);
            v.truncate(16);
        });
        let f = fault(&ch, &words);
        assert!(matches!(f.kind, CpFaultKind::KernargUnmapped { .. }), "{target}: {f}");
    }
}

#[test]
fn wrong_wave32_bit_is_refused() {
    for target in Target::ALL {
        let ch = chain(target);
        let words =
            patch_dispatch(&ch.ib(WAITS), 2, |d| d.initiator = d.initiator.with_cs_w32_en(d.initiator.cs_w32_en() ^ 1));
        let f = fault(&ch, &words);
        assert_eq!(f.offset_dwords, dispatch_offset(&words, 2));
        assert!(matches!(f.kind, CpFaultKind::WaveSize { .. }), "{target}: {f}");
    }
}

#[test]
fn lds_too_small_for_block_sum_is_refused() {
    for target in Target::ALL {
        let ch = chain(target);
        // LDS_SIZE is RSRC2 bits [23:15] (reference §3): clear it on block_sum (the 4th RSRC1/2).
        let words = patch_reg(&ch.ib(WAITS), target, "COMPUTE_PGM_RSRC1", 3, |v| v[1] &= !(0x1FF << 15));
        let f = fault(&ch, &words);
        assert_eq!(f.offset_dwords, dispatch_offset(&words, 3));
        assert!(
            matches!(&f.kind, CpFaultKind::LdsTooSmall { lds_size: 0, dynamic_bytes, .. } if *dynamic_bytes == LDS),
            "{target}: {f}"
        );
    }
}

#[test]
fn work_item_dimensions_on_gfx10_3_and_gfx11_disagree_with_the_hidden_arguments() {
    for target in [Target::Gfx1030, Target::Gfx1100, Target::Gfx1151] {
        let ch = chain(target);
        let words = patch_dispatch(&ch.ib(WAITS), 0, |d| d.dim_x = GRID);
        let f = fault(&ch, &words);
        assert_eq!(f.offset_dwords, dispatch_offset(&words, 0));
        assert!(
            matches!(&f.kind, CpFaultKind::HiddenArg(m) if m.arg == "hidden_block_count_x" && m.found == 16 && m.expected == u64::from(GRID)),
            "{target}: {f}"
        );
    }
    // On gfx12 the recipe is work-items with USE_THREAD_DIMENSIONS; work-groups without it fault.
    for target in [Target::Gfx1200, Target::Gfx1201] {
        let ch = chain(target);
        let words = patch_dispatch(&ch.ib(WAITS), 0, |d| {
            d.dim_x = GRID / u32::from(WG);
            d.initiator = d.initiator.with_use_thread_dimensions(0);
        });
        let f = fault(&ch, &words);
        assert!(
            matches!(f.kind, CpFaultKind::DimensionSemantics { found: false, required: true, .. }),
            "{target}: {f}"
        );
    }
}

#[test]
fn truncated_ib_is_a_decode_fault() {
    for target in Target::ALL {
        let ch = chain(target);
        let words = ch.ib(WAITS);
        let cut = dispatch_offset(&words, 1) + 2;
        let (_, result) = ch.run_sized(&words, u32::try_from(cut).unwrap());
        let f = result.unwrap_err();
        assert_eq!(f.offset_dwords, dispatch_offset(&words, 1), "{target}");
        assert!(matches!(f.kind, CpFaultKind::Decode(_)), "{target}: {f}");
    }
}

#[test]
fn unmodelled_packets_and_queue_owned_registers_are_faults() {
    for target in Target::ALL {
        let ch = chain(target);
        let words = ch.ib(WAITS);
        let mut mutated = emit(&SetUconfigReg::new(0xC000, &[0]).unwrap());
        mutated.extend(&words);
        let f = fault(&ch, &mutated);
        assert_eq!(f.offset_dwords, 0);
        assert!(matches!(f.kind, CpFaultKind::Unmodelled { .. }), "{target}: {f}");

        let tmpring = pm4_encoding::regs::by_name(target.family(), "COMPUTE_TMPRING_SIZE").unwrap().dword;
        let mut mutated = emit(&SetShReg::new(tmpring, &[0]).unwrap());
        mutated.extend(&words);
        let f = fault(&ch, &mutated);
        assert!(
            matches!(f.kind, CpFaultKind::QueueOwnedRegister { name: "COMPUTE_TMPRING_SIZE", .. }),
            "{target}: {f}"
        );
    }
}

/// The whole route on the device: the chain's IB in executable IB memory, submitted by ONE AMD
/// PM4-IB vendor packet on a user AQL queue with a completion signal, gives the same bytes as the
/// ordinary path (one AQL kernel dispatch per launch) on a second device, for every target.
#[test]
fn one_vendor_packet_replays_the_chain_like_the_ordinary_path_on_every_target() {
    use aql_packets::{AmdPm4IbPacket, FenceScope, RingSize, SignalCondition};
    for target in Target::ALL {
        let mut pm4 = chain(target);
        let words = pm4.ib(WAITS);
        let ib = pm4.device.allocate_ib(u32::try_from(words.len()).unwrap()).unwrap();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        pm4.device.write(ib.va, &bytes).unwrap();
        let queue = pm4.device.create_queue(RingSize::new(4).unwrap()).unwrap();
        let signal = pm4.device.create_signal(1).unwrap();
        let size = u32::try_from(words.len()).unwrap();
        let packet = AmdPm4IbPacket::new(ib.va, size, FenceScope::System, FenceScope::System, signal.get()).unwrap();
        pm4.device.write_packet(queue, packet.as_array()).unwrap();
        assert_eq!(pm4.device.run_queue(queue).unwrap(), 1, "{target}: one packet");
        let value = pm4.device.wait_signal(signal, SignalCondition::Eq, 0, std::time::Duration::from_millis(1));
        assert_eq!(value, Ok(0), "{target}: completion signal");
        let reports = pm4.device.last_ib_reports();
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].dispatches.len(), 4, "{target}");

        let mut ordinary = chain(target);
        for (_, kd, blob, _, lds) in ordinary.launches.clone() {
            let request = LaunchRequest {
                kernel_object: kd,
                grid_work_items: [GRID, 1, 1],
                workgroup_work_items: [WG, 1, 1],
                dynamic_lds_bytes: lds,
                kernarg: &blob,
            };
            ordinary.device.launch(&request).unwrap();
        }
        for (a, b) in [(pm4.y, ordinary.y), (pm4.c, ordinary.c), (pm4.d, ordinary.d)] {
            assert_eq!(a.va, b.va, "{target}: both devices lay the chain out identically");
            let (mut x, mut y) =
                (vec![0u8; usize::try_from(a.size).unwrap()], vec![0u8; usize::try_from(b.size).unwrap()]);
            pm4.device.read(a.va, &mut x).unwrap();
            ordinary.device.read(b.va, &mut y).unwrap();
            assert_eq!(x, y, "{target}: allocation {:?}", a.id);
        }
    }
}

/// One command processor executing IBs written in turn at one address of one memory: a replay.
struct Replayer {
    memory: SimMemory,
    cp: CommandProcessor,
    va: u64,
}

impl Replayer {
    fn new(ch: &Chain, dwords: usize) -> Self {
        let mut memory = ch.device.memory().clone();
        let va = memory.allocate(u64::try_from(4 * dwords).unwrap()).unwrap().va;
        Self { memory, cp: CommandProcessor::new(ch.device.target().family()), va }
    }

    /// Writes `words` at the IB's address and executes them; the outputs' bytes after.
    fn run(&mut self, ch: &Chain, words: &[u32]) -> (Result<IbReport, CpFault>, Vec<Vec<u8>>) {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.memory.write(self.va, &bytes).unwrap();
        let mut clock = soft_device::clock::GpuClock::new();
        let size = u32::try_from(words.len()).unwrap();
        let report = self.cp.execute_ib(&mut self.memory, ch.device.soft_kernels(), self.va, size, &mut clock);
        (report, [ch.y, ch.c, ch.d].iter().map(|a| read(&self.memory, a.va, a.size)).collect())
    }
}

#[test]
fn a_replayed_ib_follows_every_rewrite_of_its_dwords() {
    // The command processor keeps the last IB decoded and reuses the packets whose dwords did
    // not change: each run here must give what a fresh command processor on a fresh copy of
    // the memory gives for the same dwords (report, fault and bytes).
    for target in Target::ALL {
        let ch = chain(target);
        let words = ch.ib(WAITS);
        let fresh = |words: &[u32]| {
            let (memory, report) = ch.run(words);
            (report, [ch.y, ch.c, ch.d].iter().map(|a| read(&memory, a.va, a.size)).collect::<Vec<_>>())
        };
        // Dispatch 1 (axpy) over half the grid: same length, a patched dimension (a fault: its
        // kernarg's hidden arguments say the whole grid).
        let half = patch_dispatch(&words, 1, |d| d.dim_x /= 2);
        assert_eq!(half.len(), words.len());
        // The first program address off by one: same length, a fault at dispatch 0.
        let wrong = patch_reg(&words, target, "COMPUTE_PGM_LO", 0, |v| v[0] += 1);
        // One more user-data value: another length.
        let longer = patch_reg(&words, target, "COMPUTE_PGM_LO", 0, |v| v.push(0));
        // The program address's SET_SH_REG moved, same length, to a queue-owned register (a
        // fault), and the same packet predicated (a fault): a replay must classify the rewritten
        // packet again, not write its values where the kept one went.
        let pgm_lo = pm4_encoding::regs::by_name(target.family(), "COMPUTE_PGM_LO").unwrap().dword;
        let owned = target.family().facts().compute.queue_owned[0].dword;
        let moved = rewrite(&words, |p, _| match p {
            Packet::SetShReg(s) if s.first_dword() == pgm_lo => Some(emit(&SetShReg::new(owned, s.values).unwrap())),
            _ => None,
        });
        assert_eq!(moved.len(), words.len());
        let predicated = rewrite(&words, |p, w| match p {
            // Bit 0 of a type-3 header is PREDICATE (reference §4, "Header").
            Packet::SetShReg(s) if s.first_dword() == pgm_lo => Some([&[w[0] | 1], &w[1..]].concat()),
            _ => None,
        });
        let mut replay = Replayer::new(&ch, words.len() + 8);
        for (step, ib) in [&words, &words, &half, &half, &words, &wrong, &words, &longer, &words, &moved, &words]
            .into_iter()
            .chain([&predicated, &words])
            .enumerate()
        {
            let (report, bytes) = replay.run(&ch, ib);
            let (expected, expected_bytes) = fresh(ib);
            let debug = |r: &Result<IbReport, CpFault>| r.as_ref().map_err(|f| format!("{f:?}")).cloned();
            assert_eq!(debug(&report), debug(&expected), "{target} step {step}");
            if expected.is_ok() {
                assert_eq!(bytes, expected_bytes, "{target} step {step}");
            }
        }
        // The halved dimension reaches the dispatch, where the hidden arguments written for the
        // whole grid disagree with it: a replay that reused the stale packet would not fault.
        let f = fresh(&half).0.unwrap_err();
        assert!(matches!(&f.kind, CpFaultKind::HiddenArg(m) if m.grid[0] == GRID / 2), "{target}: {f}");
        let f = fresh(&moved).0.unwrap_err();
        assert!(matches!(&f.kind, CpFaultKind::QueueOwnedRegister { dword, .. } if *dword == owned), "{target}: {f}");
        let f = fresh(&predicated).0.unwrap_err();
        assert!(matches!(&f.kind, CpFaultKind::Predicated { .. }), "{target}: {f}");
    }
}
