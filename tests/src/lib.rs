//! The backend conformance suite: one set of test bodies, generic over the HAL's
//! [`hal::Device`], that every backend passes. [`suite!`] instantiates them as `#[test]`s for a
//! device factory; `tests/soft_device.rs` runs them on the soft device and `tests/hsa_backend.rs`
//! on the HSA backend over the soft HSA runtime. Each body states one clause of the trait's
//! documented meaning (`hal/src/lib.rs`) and fails when a backend gives it another.

#![forbid(unsafe_code)]

pub mod census;
pub mod route;

use std::time::Duration;

use aql_packets::{AqlPacket, Barrier, PACKET_SIZE, PacketControl, RingSize, SignalCondition};
use engine::examples::Chain;
use engine::funnel::Funnel;
use engine::workload::Workload;
use hal::{Device, FaultInjection, FaultReason, FreeError, Injection, Lifetime, Submission, TransferError, WaitError};
use lowering::plan::{ReplayError, prepare};
use pm4_encoding::Target;

/// Targets every body runs on: every row of the target table, so a target added there is in the
/// suite on both backends with no other change.
pub const TARGETS: [Target; Target::ALL.len()] = Target::ALL;

/// The bound of every wait in the suite (a soft runtime's thread, on a loaded machine).
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a test's body in this process.
pub fn run_here(_name: &str, body: &dyn Fn()) {
    body();
}

/// A barrier-AND packet with no dependencies that decrements `completion_signal`.
#[must_use]
pub fn barrier(completion_signal: u64) -> [u8; PACKET_SIZE] {
    AqlPacket::BarrierAnd(Barrier { control: PacketControl::NONE, dep_signal: [0; 5], completion_signal }).to_bytes()
}

/// Allocation identities are distinct, resolve to their allocation, and a free makes the range
/// unmapped, advances the lifetime's free count and cannot be repeated.
pub fn allocation_identity<D: Device>(device: &mut D) {
    let before = device.lifetime();
    let a = device.allocate(4096).unwrap();
    let b = device.allocate(100).unwrap();
    assert_ne!(a.id, b.id);
    assert!(b.size >= 100);
    assert_eq!(device.resolve(a.va + 17), Some((a.id, 17)));
    assert_eq!(device.resolve(b.va), Some((b.id, 0)));
    device.free(a).unwrap();
    assert_eq!(device.resolve(a.va + 17), None);
    assert_eq!(device.lifetime(), Lifetime { frees: before.frees + 1, ..before });
    assert_eq!(device.free(a), Err(FreeError::NotLive { id: a.id, va: a.va }));
    device.reset();
    assert_eq!(device.lifetime().epoch, before.epoch + 1);
    assert_eq!(device.resolve(b.va), None, "a reset frees everything");
}

/// The topology is the backend's: one GPU driven, at least that one visible, and the live caller
/// queues counted as they are created and destroyed.
pub fn topology<D: Device>(device: &mut D) {
    let before = device.topology();
    assert_eq!(before.gpus_used, 1);
    assert!(before.gpus_visible >= before.gpus_used, "{before:?}");
    let queue = device.create_queue(RingSize::new(64).unwrap()).unwrap();
    assert_eq!(device.topology().queues, before.queues + 1);
    device.destroy_queue(queue).unwrap();
    assert_eq!(device.topology(), before);
}

/// Copies round-trip through every kind of memory, start zeroed, and refuse ranges that leave
/// their allocation without writing anything.
pub fn copies<D: Device>(device: &mut D) {
    let sizes = [1u64, 4096, 5 << 20];
    for (kind, allocation) in sizes
        .iter()
        .flat_map(|&size| {
            [("device", device.allocate(size).unwrap()), ("kernarg", device.allocate_kernarg(size).unwrap())]
        })
        .collect::<Vec<_>>()
    {
        let len = usize::try_from(allocation.size.min(5 << 20)).unwrap();
        let mut zeroed = vec![0xFFu8; len];
        device.read(allocation.va, &mut zeroed).unwrap();
        assert!(zeroed.iter().all(|&b| b == 0), "{kind} memory of {len} bytes starts zeroed");
        let data: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
        device.write(allocation.va, &data).unwrap();
        let mut back = vec![0u8; len];
        device.read(allocation.va, &mut back).unwrap();
        assert_eq!(back, data, "{kind} memory of {len} bytes");
        let past = vec![0u8; len + 1];
        let error = device.write(allocation.va, &past).unwrap_err();
        assert!(matches!(error, TransferError::Fault(f) if f.address == allocation.va), "{kind}: {error}");
        device.read(allocation.va, &mut back).unwrap();
        assert_eq!(back, data, "{kind}: a refused copy wrote nothing");
    }
}

/// A host store reaches kernarg and IB memory, and is refused on device memory.
pub fn host_stores<D: Device>(device: &mut D) {
    let kernarg = device.allocate_kernarg(64).unwrap();
    let ib = device.allocate_ib(16).unwrap();
    let memory = device.allocate(64).unwrap();
    device.store_u32(kernarg.va + 8, 0xDEAD_BEEF).unwrap();
    device.store_u32(ib.va + 60, 7).unwrap();
    let mut word = [0u8; 4];
    device.read(kernarg.va + 8, &mut word).unwrap();
    assert_eq!(u32::from_le_bytes(word), 0xDEAD_BEEF);
    device.read(ib.va + 60, &mut word).unwrap();
    assert_eq!(u32::from_le_bytes(word), 7);
    let error = device.store_u32(memory.va, 1).unwrap_err();
    assert!(matches!(error, TransferError::Fault(f) if f.reason == FaultReason::NotHostVisible), "{error}");
    let error = device.store_u32(kernarg.va + 62, 1).unwrap_err();
    assert!(matches!(error, TransferError::Fault(f) if f.address == kernarg.va + 62), "{error}");
    for allocation in [kernarg, ib, memory] {
        device.free(allocation).unwrap();
    }
}

/// Loading a code object fills the kernel table with its kernels, descriptors and metadata.
pub fn code_objects_and_the_kernel_table<D: Device>(device: &mut D) {
    let target = device.target();
    let artifact = kernels::artifact(&format!("{target}/fill.co")).unwrap();
    let loaded = device.load_code_object(artifact.bytes).unwrap();
    let fill = loaded.kernel("fill").unwrap();
    assert_eq!(fill.entry_va % 256, 0, "entry 256-byte aligned");
    let table = device.kernels();
    assert_eq!(table.objects().len(), 1);
    let slot = table.by_kd(fill.kd_va).unwrap();
    assert_eq!(slot.loaded.name, "fill");
    assert_eq!(slot.kernel.metadata.name, "fill");
    assert_eq!(table.by_entry(fill.entry_va).map(|s| s.loaded.kd_va), Some(fill.kd_va));
    // The table keeps the digest of the bytes loaded, by which a backend finds what runs the
    // kernel (the soft device: its CPU reference in `kernel-refs`' registry).
    let sha256 = table.objects()[0].sha256;
    assert_eq!(Some(sha256), kernels::parse_sha256_hex(artifact.sha256), "the table keeps the code object's digest");
    let registry = kernel_refs::registry::Registry::builtin();
    assert!(registry.get(&sha256, &slot.loaded.name).is_some(), "the built kernel has its registry entry");
    assert_eq!(device.resolve(fill.kd_va).map(|(id, _)| id), Some(loaded.allocation.id));
}

/// A tape whose kernel cannot be replayed from a retained body (the `dispatch_ptr` fixture: its
/// code reads the dispatch packet) is refused by `prepare`, naming the kernel and the verdict's
/// reason, before anything is allocated.
pub fn prepare_refuses_a_kernel_the_verdict_rejects<D: Device>(device: &mut D) {
    use kernarg_abi::layout::{ArgValue, DispatchGeometry};
    use tape_core::{Access, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};

    let target = device.target();
    let bytes = kernels::artifact(&format!("fixtures/{target}/dispatch_ptr.co")).unwrap().bytes;
    let loaded = device.load_code_object(bytes).unwrap();
    let co = kernarg_abi::read_any(bytes, Some(target)).unwrap();
    let kernel = co.kernel("uses_dispatch_ptr").unwrap();
    let verdict = kernarg_abi::verdict(kernel, &co.target);
    assert!(!verdict.supported, "the fixture is one the verdict rejects");
    let layout = kernel.kernarg_layout().unwrap();
    let out = device.allocate(256).unwrap();
    let placed = loaded.kernel("uses_dispatch_ptr").unwrap();
    let (allocation, offset_bytes) = device.resolve(out.va).unwrap();
    let launch = LaunchRecord {
        artifact: ArtifactId { code_object_sha256: loaded.sha256, symbol: "uses_dispatch_ptr".into() },
        kernarg: layout.build(&[ArgValue::Pointer(out.va)], &DispatchGeometry::linear(64, 64)).unwrap(),
        geometry: Geometry { grid_work_items: [64, 1, 1], workgroup_work_items: [64, 1, 1] },
        lds: Lds { static_bytes: placed.group_segment_fixed_size, dynamic_bytes: 0 },
        wave_size: u8::try_from(placed.wavefront_size).unwrap(),
        pointers: vec![PointerArg { kernarg_offset: 0, allocation, offset_bytes }],
        effects: Effects::Known(vec![Effect { allocation, offset_bytes, len_bytes: 256, access: Access::Write }]),
    };
    let mut recorder = tape_core::recorder::Recorder::new(1);
    recorder.begin(0).unwrap();
    recorder.record(launch, &layout).unwrap();
    let tape = recorder.finish().unwrap();
    let before = device.lifetime();
    let probe = device.allocate(64).unwrap();
    let error = prepare(device, &tape).unwrap_err();
    match &error {
        lowering::plan::PrepareError::UnsupportedKernel { launch: 0, symbol, reasons } => {
            assert_eq!(symbol, "uses_dispatch_ptr");
            assert!(reasons.contains(&verdict.reasons[0].to_string()), "{reasons}");
        }
        other => panic!("{other:?}"),
    }
    // Nothing was allocated: the next allocation follows the probe directly.
    let next = device.allocate(64).unwrap();
    assert_eq!(next.id.0, probe.id.0 + 1, "prepare allocated before refusing");
    assert_eq!(device.lifetime().epoch, before.epoch);
}

/// The chain's buffers `y, x, z, c, o` after its steps at `positions` on fresh buffers,
/// computed on the host from the kernels' definitions in `kernels/hip` (`fill`: `out[i] = value`
/// for `i < n`; `axpy`: `y[i] = a * x[i] + y[i]`; `scale`: `out[i] = s * x[i]`; `add`:
/// `out[i] = a[i] + b[i]`) with the chain's arguments (`engine::examples::Chain::step`), as
/// little-endian bytes. Independent of every backend and of the soft device's CPU references;
/// every value is a small binary fraction, exact in f32, so the comparison is bit for bit.
#[must_use]
pub fn chain_by_hand(positions: &[u32]) -> Vec<Vec<u8>> {
    let n = usize::try_from(Chain::N).unwrap();
    let x: Vec<f32> =
        engine::examples::pattern(n, 1).chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let (mut y, mut z, mut c, mut o) = (vec![0f32; n], vec![0f32; n], vec![0f32; n], vec![0f32; n]);
    for &position in positions {
        let filled = usize::try_from(position + Chain::N_ADDEND).unwrap().min(n);
        y[..filled].fill(1.5);
        z.fill(-2.0);
        for i in 0..n {
            // As the kernel writes it: the product rounded, then the sum (no fma).
            y[i] += 2.0 * x[i];
            c[i] = 0.5 * y[i];
            o[i] = c[i] + z[i];
        }
    }
    [y, x, z, c, o].iter().map(|v| v.iter().flat_map(|f| f.to_le_bytes()).collect()).collect()
}

/// The first buffer of `chain` on `device` that differs from `expected` (or whose guard bytes
/// were overwritten), as a message.
fn chain_differs<D: Device>(chain: &Chain, device: &mut D, expected: &[Vec<u8>]) -> Option<String> {
    chain.surfaces().iter().zip(expected).find_map(|(surface, expected)| {
        let snapshot = surface.snapshot(device).unwrap();
        if let Some(offset) = surface.guard_violation(&snapshot) {
            return Some(format!("{}: guard byte {offset} overwritten", surface.name));
        }
        let mut bytes = vec![0u8; expected.len()];
        device.read(surface.va, &mut bytes).unwrap();
        let first = bytes.chunks_exact(4).zip(expected.chunks_exact(4)).position(|(a, b)| a != b)?;
        let (got, want) = (&bytes[4 * first..4 * first + 4], &expected[4 * first..4 * first + 4]);
        Some(format!("{}[{first}]: {got:?}, expected {want:?}", surface.name))
    })
}

/// Ordinary launches are asynchronous and in order: a forward's dependent launches publish
/// without waiting between them, and the one wait is where the host reads the result; the
/// results are the kernels' definitions computed on the host ([`chain_by_hand`]).
pub fn ordinary_launches<D: Device>(device: &mut D) {
    let mut funnel = Funnel::new(64);
    let mut chain = Chain::new(device).unwrap();
    let before = device.stats();
    chain.step(device, &mut funnel, 7).unwrap();
    let after_step = device.stats();
    assert_eq!(after_step.launches - before.launches, 5, "the chain's five launches");
    assert_eq!(after_step.waits, before.waits, "no wait between launches");
    assert_eq!(chain_differs(&chain, device, &chain_by_hand(&[7])), None, "the ordinary path's outputs");
    assert_eq!(device.stats().waits, before.waits + 1, "one wait, where the host reads");
}

/// A launch that has to wait for ring slots or kernarg bytes of earlier launches waits as a
/// finish does, and [`hal::DeviceStats::waits`] counts it: 5,000 launches published without a
/// finish through a launch ring of 4,096 slots (on both backends) are not free of waits. (So the
/// one wait of a model forward, [`a_model_forward_waits_once`], leaves no wait out.) What they
/// computed is still the kernels' definitions.
pub fn waits_for_room_are_counted<D: Device>(device: &mut D) {
    let mut funnel = Funnel::new(64);
    let mut chain = Chain::new(device).unwrap();
    device.finish().unwrap();
    let before = device.stats();
    let positions: Vec<u32> = (0..1000).map(|step| step % 300).collect();
    for &position in &positions {
        chain.step(device, &mut funnel, position).unwrap();
    }
    let published = device.stats();
    assert_eq!(published.launches - before.launches, 5000);
    assert!(published.waits > before.waits, "5000 launches through a 4096-slot ring, and no wait counted");
    assert_eq!(chain_differs(&chain, device, &chain_by_hand(&positions)), None);
}

/// A doorbell's [`Submission`] names exactly the packets it released, counted from the previous
/// doorbell, the same on every backend (not a read index, not a count of completions).
pub fn submissions_name_the_packets_of_each_doorbell<D: Device>(device: &mut D) {
    let queue = device.create_queue(RingSize::new(8).unwrap()).unwrap();
    let signal = device.create_signal(2).unwrap();
    for token in 0..3u64 {
        device.store_signal(signal, 2).unwrap();
        assert_eq!(device.write_packet(queue, &barrier(signal.get())).unwrap(), 2 * token);
        assert_eq!(device.write_packet(queue, &barrier(signal.get())).unwrap(), 2 * token + 1);
        let submission = device.ring_doorbell(queue).unwrap();
        assert_eq!(submission, Submission { first: 2 * token, end: 2 * token + 2 }, "token {token}");
        assert_eq!(submission.packets(), 2);
        assert_eq!(device.wait_signal(signal, SignalCondition::Eq, 0, TIMEOUT), Ok(0), "token {token}");
    }
    let progress = device.queue_progress(queue).unwrap();
    assert_eq!((progress.read_index, progress.write_index), (6, 6));
    assert_eq!(device.ring_doorbell(queue).unwrap(), Submission { first: 6, end: 6 }, "nothing new");
    device.destroy_queue(queue).unwrap();
}

/// Signals keep their values, and a wait that cannot be satisfied ends at its bound.
pub fn signals_and_bounded_waits<D: Device>(device: &mut D) {
    let signal = device.create_signal(5).unwrap();
    assert_eq!(device.signal_value(signal), Ok(5));
    device.store_signal(signal, -3).unwrap();
    assert_eq!(device.signal_value(signal), Ok(-3));
    assert_eq!(device.wait_signal(signal, SignalCondition::Lt, 0, TIMEOUT), Ok(-3));
    let bound = Duration::from_millis(20);
    let error = device.wait_signal(signal, SignalCondition::Eq, 0, bound).unwrap_err();
    assert!(matches!(error, WaitError::Timeout { value: -3, timeout, .. } if timeout == bound), "{error}");
    device.destroy_signal(signal).unwrap();
    assert!(matches!(device.signal_value(signal), Err(hal::SignalError::Unknown { .. })));
}

/// The chain recorded at three positions and prepared as a plan: every replay gives what the
/// ordinary path's kernels define for the same history ([`chain_by_hand`]), one packet per token;
/// a reset or a freed buffer makes the plan stale by name.
pub fn plans_replay_and_go_stale<D: Device>(device: &mut D) {
    let mut funnel = Funnel::new(64);
    let mut chain = Chain::new(device).unwrap();
    let tape = engine::replay::capture_tape(device, &mut funnel, &mut chain, &[3, 4, 5]).unwrap();
    let mut plan = prepare(device, &tape).unwrap();
    assert_eq!(plan.submission_identity().packets_per_token, 1);
    // The history: the recorded steps, then the replayed positions.
    let mut history = vec![3, 4, 5];
    for (token, position) in [9u32, 10, 30].into_iter().enumerate() {
        let outcome = plan.replay(device, position, TIMEOUT).unwrap();
        let token = u64::try_from(token).unwrap();
        assert_eq!(outcome.submission, Submission { first: token, end: token + 1 });
        history.push(position);
        let differs = chain_differs(&chain, device, &chain_by_hand(&history));
        assert_eq!(differs, None, "position {position}");
    }
    let x = chain.surfaces()[1].allocation;
    device.free(x).unwrap();
    let result = plan.replay(device, 11, TIMEOUT);
    assert!(matches!(result, Err(ReplayError::AllocationGone { allocation, .. }) if allocation == x.id), "{result:?}");
    device.reset();
    let result = plan.replay(device, 12, TIMEOUT);
    assert!(matches!(result, Err(ReplayError::StalePlan { .. })), "{result:?}");
}

/// A fault injected into the plan's queue during a retained token makes that replay an error,
/// poisons the plan (no retry), and later replays are refused.
pub fn a_fault_fails_closed<D: Device + FaultInjection>(device: &mut D) {
    let mut funnel = Funnel::new(64);
    let mut chain = Chain::new(device).unwrap();
    let tape = engine::replay::capture_tape(device, &mut funnel, &mut chain, &[3, 4, 5]).unwrap();
    let mut plan = prepare(device, &tape).unwrap();
    plan.replay(device, 6, TIMEOUT).unwrap();
    device.inject(Injection::QueueFault).unwrap();
    let result = plan.replay(device, 7, TIMEOUT);
    assert!(matches!(result, Err(ReplayError::Wait { position: 7, source: WaitError::Fault { .. } })), "{result:?}");
    assert_eq!(plan.poisoned(), Some(7));
    let result = plan.replay(device, 8, TIMEOUT);
    assert!(matches!(result, Err(ReplayError::Poisoned { failed_position: 7 })), "{result:?}");
}

/// A model forward on the ordinary path publishes its launches without waiting between them and
/// waits once, where the host reads the logits (every wait counts, a wait for ring or kernarg
/// room too: [`waits_for_room_are_counted`]); the retained route then takes over (one packet per
/// token, no ordinary launch in a retained forward) with bit-identical logits.
pub fn a_model_forward_waits_once<D: Device>(device: &mut D, reference: &mut D) {
    use engine::model::Llama;
    use engine::replay::{Backend, ReplayConfig, ReplayController, Route, Step};
    let file = gguf::Gguf::parse(gguf::tiny_llama(&gguf::TinyLlamaConfig::default())).unwrap();
    let decode = |device: &mut D, backend: Backend| {
        let mut model = Llama::load(device, &file, 32).unwrap();
        let mut funnel = Funnel::new(4096);
        let config = ReplayConfig { backend, explicit: true, ..ReplayConfig::default() };
        let mut controller = ReplayController::new(config);
        controller.configure_model_default(true);
        let mut logits = Vec::new();
        let mut routes = Vec::new();
        for position in 0..12u32 {
            model.set_token(40 + position).unwrap();
            let before = device.stats();
            let step = if position == 0 { Step::Prompt } else { Step::Continuation };
            let report = controller.forward(device, &mut funnel, &mut model, position, step).unwrap();
            logits.push(model.logits(device).unwrap());
            let after = device.stats();
            if report.route == Route::Retained {
                assert_eq!(after.launches, before.launches, "no ordinary launch in a retained forward");
            } else {
                assert!(report.ordinary_launches > 20, "a forward is tens of launches");
                assert_eq!(after.launches - before.launches, report.ordinary_launches, "every launch published");
                assert_eq!(after.waits - before.waits, 1, "position {position}: one wait per forward");
            }
            routes.push(report.route);
        }
        (logits, routes)
    };
    let (ordinary, routes) = decode(reference, Backend::Hip);
    assert!(routes.iter().all(|&r| r == Route::Ordinary), "{routes:?}");
    let (retained, routes) = decode(device, Backend::Auto);
    assert!(routes[routes.len() - 4..].iter().all(|&r| r == Route::Retained), "{routes:?}");
    for (position, (a, b)) in ordinary.iter().zip(&retained).enumerate() {
        assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()), "position {position}: logits differ");
    }
}

/// Instantiates every body of the suite as a `#[test]` for each of [`TARGETS`], with `$make`
/// an expression of type `fn(Target) -> D` that opens a fresh device, and `$run` a function
/// `fn(&str, &dyn Fn())` that runs one test's body (see [`run_here`]; a backend whose devices
/// need a prepared process runs each body in one).
#[macro_export]
macro_rules! suite {
    ($make:expr) => {
        $crate::suite!($make, $crate::run_here);
    };
    ($make:expr, $run:path) => {
        $crate::conformance_test!($make, $run, allocation_identity, $crate::allocation_identity, one);
        $crate::conformance_test!($make, $run, copies, $crate::copies, one);
        $crate::conformance_test!($make, $run, host_stores, $crate::host_stores, one);
        $crate::conformance_test!(
            $make,
            $run,
            code_objects_and_the_kernel_table,
            $crate::code_objects_and_the_kernel_table,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            prepare_refuses_a_kernel_the_verdict_rejects,
            $crate::prepare_refuses_a_kernel_the_verdict_rejects,
            one
        );
        $crate::conformance_test!($make, $run, ordinary_launches, $crate::ordinary_launches, one);
        $crate::conformance_test!($make, $run, waits_for_room_are_counted, $crate::waits_for_room_are_counted, one);
        $crate::conformance_test!(
            $make,
            $run,
            submissions_name_the_packets_of_each_doorbell,
            $crate::submissions_name_the_packets_of_each_doorbell,
            one
        );
        $crate::conformance_test!($make, $run, signals_and_bounded_waits, $crate::signals_and_bounded_waits, one);
        $crate::conformance_test!($make, $run, plans_replay_and_go_stale, $crate::plans_replay_and_go_stale, one);
        $crate::conformance_test!($make, $run, a_model_forward_waits_once, $crate::a_model_forward_waits_once, two);
        $crate::conformance_test!($make, $run, a_fault_fails_closed, $crate::a_fault_fails_closed, one);
        $crate::conformance_test!(
            $make,
            $run,
            replay_failure_is_worded_and_sticky,
            $crate::route::replay_failure_is_worded_and_sticky,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            manual_shadow_failure_is_worded_and_changes_no_route,
            $crate::route::manual_shadow_failure_is_worded_and_changes_no_route,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            preparation_failure_is_worded_and_sticky,
            $crate::route::preparation_failure_is_worded_and_sticky,
            two
        );
        $crate::conformance_test!(
            $make,
            $run,
            recorder_capacity_is_named_and_sticky,
            $crate::route::recorder_capacity_is_named_and_sticky,
            two
        );
        $crate::conformance_test!(
            $make,
            $run,
            a_broken_capture_contract_is_named_and_sticky,
            $crate::route::a_broken_capture_contract_is_named_and_sticky,
            two
        );
        $crate::conformance_test!(
            $make,
            $run,
            reconfiguration_is_worded_and_re_arms,
            $crate::route::reconfiguration_is_worded_and_re_arms,
            two
        );
        $crate::conformance_test!(
            $make,
            $run,
            only_the_next_continuation_replays,
            $crate::route::only_the_next_continuation_replays,
            two
        );
        $crate::conformance_test!(
            $make,
            $run,
            a_position_past_the_calibrated_maximum_is_refused_by_name,
            $crate::route::a_position_past_the_calibrated_maximum_is_refused_by_name,
            two
        );
        $crate::conformance_test!(
            $make,
            $run,
            the_shadow_backend_never_routes_product_forwards,
            $crate::route::the_shadow_backend_never_routes_product_forwards,
            two
        );
        $crate::conformance_test!(
            $make,
            $run,
            shadow_parity_over_the_whole_context,
            $crate::route::shadow_parity_over_the_whole_context,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            batched_prefill_is_the_prompt_step_by_step,
            $crate::route::batched_prefill_is_the_prompt_step_by_step,
            two
        );
        $crate::conformance_test!(
            $make,
            $run,
            gemma3_shadow_parity_across_the_window,
            $crate::route::gemma3_shadow_parity_across_the_window,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            sequence_state_parity_through_the_convolution_window,
            $crate::route::sequence_state_parity_through_the_convolution_window,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            the_census_reconciles_every_recorded_position,
            $crate::census::the_census_reconciles_every_recorded_position,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            a_launch_around_the_recorder_fails_gate_2_by_name,
            $crate::census::a_launch_around_the_recorder_fails_gate_2_by_name,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            a_launch_recorded_twice_fails_gate_2_by_name,
            $crate::census::a_launch_recorded_twice_fails_gate_2_by_name,
            one
        );
        $crate::conformance_test!(
            $make,
            $run,
            swapped_launches_fail_gate_2_by_name,
            $crate::census::swapped_launches_fail_gate_2_by_name,
            one
        );
        $crate::conformance_test!($make, $run, topology, $crate::topology, one);
    };
}

/// One `#[test]` of [`suite!`]: `$body` on a fresh device of each of [`TARGETS`] (`one`), or on
/// two fresh devices of it, the second a reference (`two`), run by `$run`.
#[doc(hidden)]
#[macro_export]
macro_rules! conformance_test {
    ($make:expr, $run:path, $name:ident, $body:path, one) => {
        #[test]
        fn $name() {
            $run(stringify!($name), &|| {
                for target in $crate::TARGETS {
                    $body(&mut ($make)(target));
                }
            });
        }
    };
    ($make:expr, $run:path, $name:ident, $body:path, two) => {
        #[test]
        fn $name() {
            $run(stringify!($name), &|| {
                for target in $crate::TARGETS {
                    $body(&mut ($make)(target), &mut ($make)(target));
                }
            });
        }
    };
}
