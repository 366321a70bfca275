//! `HsaDevice` on the soft HSA runtime (`libsoft_hsa.so`, loaded by path): discovery, the three
//! kinds of memory, code objects and the kernel table, asynchronous ordinary launches, caller
//! queues with kernel-dispatch, PM4-IB and barrier packets, faults through the error callback,
//! injected faults and lifetimes.
//!
//! The runtime presents the target `REDLINE_SOFT_HSA_ISA` names; `every_target_in_its_own_process`
//! runs this binary again for gfx1030, gfx1100 and gfx1201 (and an unsupported name), since the
//! target is fixed when the process's runtime starts.

mod common;

use std::process::Command;
use std::time::Duration;

use aql_packets::{
    AmdPm4IbPacket, Barrier, BarrierAndPacket, Dimensions, FenceScope, KernelDispatch, PacketControl, RingSize,
    SignalCondition,
};
use common::{bytes_of, f32s, kernarg, load, open, runtime, serial, target, targets};
use hal::{
    AllocateError, Device, FaultInjection, FaultReason, FreeError, Injection, LaunchError, LaunchRequest, Lifetime,
    MemoryFault, QueueError, QueueFault, Submission, TransferError, WaitError,
};
use hsa_device::{HsaDevice, HsaOpenError, probe};
use hsa_sys::{HsaFns, HsaStatus};
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use pm4_encoding::Emit;
use pm4_encoding::packet::WriteData;

const N: u32 = 1000;
const GRID: u32 = 1024;
const WG: u16 = 64;
const WAIT: Duration = Duration::from_secs(20);
/// Set in the processes `every_target_in_its_own_process` starts.
const CHILD_ENV: &str = "REDLINE_HSA_DEVICE_TEST_CHILD";

/// The target of this process; the tests that need a device skip in the one process that runs
/// with an unsupported name (its only purpose is `probe_reports_the_gpu_agent_and_its_isa`).
fn device() -> Option<HsaDevice> {
    target().map(|_| open())
}

/// A launch of `kernel` over the 1-D test grid.
fn launch(device: &mut HsaDevice, co: &(Vec<u8>, hal::LoadedCodeObject), kernel: &str, args: &[ArgValue]) {
    let blob = kernarg(device.target(), &co.0, kernel, args, &DispatchGeometry::linear(GRID, WG));
    let request = LaunchRequest {
        kernel_object: co.1.kernel(kernel).unwrap().kd_va,
        grid_work_items: [GRID, 1, 1],
        workgroup_work_items: [WG, 1, 1],
        dynamic_lds_bytes: 0,
        kernarg: &blob,
    };
    device.launch(&request).unwrap_or_else(|e| panic!("{kernel}: {e}"));
}

/// x[i] = (i mod 7) / 4 - 0.5: exact in f32.
fn xs() -> Vec<f32> {
    (0..GRID).map(|i| f32::from(u16::try_from(i % 7).unwrap()) / 4.0 - 0.5).collect()
}

#[test]
fn probe_reports_the_gpu_agent_and_its_isa() {
    let _serial = serial();
    let hsa = runtime();
    assert!(hsa.library_path().ends_with(soft_hsa::LIBRARY_FILE_NAME), "{}", hsa.library_path().display());
    assert_eq!(HsaFns::SYMBOLS.len(), 37, "every symbol of the table resolved (a missing one fails the load)");
    assert!(hsa.extensions().redline_soft_hsa_inject.is_some());
    let report = probe(&hsa);
    let Some(target) = target() else {
        // An unsupported REDLINE_SOFT_HSA_ISA: hsa_init fails with a clear status.
        assert_eq!(report.init_status, HsaStatus::ERROR_INVALID_ISA_NAME);
        let error = HsaDevice::open(runtime(), 0).expect_err("the runtime cannot start");
        assert!(matches!(&error, HsaOpenError::Call(hal::BackendError::Call { call: "hsa_init", .. })), "{error:?}");
        assert_eq!(error.to_string(), "hsa_init returned HSA_STATUS_ERROR_INVALID_ISA_NAME (0x1017)");
        return;
    };
    assert_eq!(report.init_status, HsaStatus::SUCCESS);
    assert_eq!(report.error, None);
    let targets = targets().unwrap();
    assert_eq!(report.agents.len(), targets.len(), "{report:?}");
    for (agent, expected) in report.agents.iter().zip(&targets) {
        assert_eq!(agent.isa.as_deref(), Some(format!("amdgcn-amd-amdhsa--{}", expected.name()).as_str()));
        assert_eq!(agent.target, Some(*expected));
    }
    let device = open();
    assert_eq!((device.target(), device.isa()), (target, report.agents[0].isa.as_deref().unwrap()));
    let count = targets.len();
    let error = HsaDevice::open(runtime(), count).expect_err("one past the last GPU agent");
    assert!(matches!(error, HsaOpenError::NoGpuAgent { index, found } if index == count && found == count), "{error}");
}

#[test]
fn every_gpu_agent_runs_its_own_target() {
    let _serial = serial();
    let Some(targets) = targets() else { return };
    for &target in &targets {
        let mut device = HsaDevice::open_target(runtime(), target).unwrap();
        assert_eq!(device.target(), target);
        let fill = load(&mut device, "fill");
        let y = device.allocate(4 * u64::from(GRID)).unwrap();
        launch(&mut device, &fill, "fill", &[ArgValue::Pointer(y.va), ArgValue::F32(0.75), ArgValue::U32(N)]);
        assert_eq!(f32s(&mut device, y.va, 2), [0.75, 0.75], "{target}");
    }
    let missing = pm4_encoding::Target::ALL.into_iter().find(|t| !targets.contains(t)).unwrap();
    let error = HsaDevice::open_target(runtime(), missing).expect_err("no such agent");
    let named =
        matches!(&error, HsaOpenError::NoTarget { target, isas } if *target == missing && isas.len() == targets.len());
    assert!(named, "{error}");
}

#[test]
fn memory_kinds_copies_and_host_stores() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let buffer = device.allocate(4096 + 12).unwrap();
    let kernarg = device.allocate_kernarg(256).unwrap();
    let ib = device.allocate_ib(16).unwrap();
    assert_eq!((ib.size, kernarg.size), (64, 256));
    let data: Vec<u8> = (0..=255).cycle().take(4108).collect();
    device.write(buffer.va, &data).unwrap();
    let mut back = vec![0u8; data.len()];
    device.read(buffer.va, &mut back).unwrap();
    assert_eq!(back, data, "device memory through the staging copy");
    let mut zero = [1u8; 64];
    device.read(ib.va, &mut zero).unwrap();
    assert_eq!(zero, [0; 64], "fresh IB memory is zeroed");

    device.store_u32(kernarg.va + 8, 0xdead_beef).unwrap();
    device.store_u32(ib.va + 60, 7).unwrap();
    device.store_u32(kernarg.va + 3, 0x0102_0304).unwrap();
    let mut word = [0u8; 4];
    device.read(kernarg.va + 8, &mut word).unwrap();
    assert_eq!(u32::from_le_bytes(word), 0xdead_beef);
    device.read(kernarg.va + 3, &mut word).unwrap();
    assert_eq!(word, [4, 3, 2, 1], "an unaligned store lands little-endian");
    device.read(ib.va + 60, &mut word).unwrap();
    assert_eq!(u32::from_le_bytes(word), 7);

    let fault = |e: TransferError| match e {
        TransferError::Fault(f) => f,
        other => panic!("{other:?}"),
    };
    let f = fault(device.store_u32(buffer.va, 1).unwrap_err());
    assert_eq!(f, MemoryFault { address: buffer.va, len: 4, reason: FaultReason::NotHostVisible });
    let f = fault(device.store_u32(ib.va + 62, 1).unwrap_err());
    assert_eq!(f.reason, FaultReason::OutOfBounds { base: ib.va, size: 64 });
    let f = fault(device.read(buffer.va + 4100, &mut [0; 16]).unwrap_err());
    assert_eq!(f.reason, FaultReason::OutOfBounds { base: buffer.va, size: 4108 });
    let f = fault(device.write(1 << 20, &[1]).unwrap_err());
    assert_eq!(f.reason, FaultReason::Unmapped);
    assert_eq!(device.resolve(buffer.va + 5), Some((buffer.id, 5)));
    assert_eq!(device.resolve(kernarg.va + 255), Some((kernarg.id, 255)));

    for allocation in [buffer, kernarg, ib] {
        device.free(allocation).unwrap();
    }
    assert_eq!(device.lifetime(), Lifetime { epoch: 0, frees: 3 });
    assert_eq!(device.free(buffer), Err(FreeError::NotLive { id: buffer.id, va: buffer.va }));
    assert_eq!(device.resolve(buffer.va), None);
    assert!(matches!(device.allocate(0), Err(AllocateError::Empty)));
    assert!(matches!(device.allocate_ib(0), Err(AllocateError::Empty)));
}

#[test]
fn code_objects_fill_the_kernel_table() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let (fill_bytes, fill) = load(&mut device, "fill");
    let (_, axpy) = load(&mut device, "axpy");
    assert_eq!(device.kernels().objects().len(), 2);
    for (co, name) in [(&fill, "fill"), (&axpy, "axpy")] {
        let kernel = co.kernel(name).unwrap();
        let slot = device.kernels().by_kd(kernel.kd_va).unwrap();
        assert_eq!(slot.loaded, *kernel);
        // The digest the table keeps for the code object is the checked-in artifact's, whose
        // catalogued module defines the kernel (what a backend that runs it looks it up by).
        let artifact = kernels::artifacts().iter().find(|a| kernels::parse_sha256_hex(a.sha256) == Some(co.sha256));
        let module = artifact.and_then(|a| kernels::catalog::module_of(a.path));
        assert!(module.and_then(|m| m.kernel(name)).is_some(), "{name}: the table's digest names its code object");
        assert_eq!(kernel.kd_va - co.load_va, slot.kernel.descriptor_address, "load base = kd VA - ELF address");
        assert_eq!(device.kernels().by_entry(kernel.entry_va).map(|s| s.loaded.kd_va), Some(kernel.kd_va));
        assert_eq!(device.resolve(kernel.kd_va).map(|(id, _)| id), Some(co.allocation.id));
    }
    // Code is the device's: the caller cannot free it.
    assert!(matches!(device.free(fill.allocation), Err(FreeError::DeviceOwned { .. })));
    let other = pm4_encoding::Target::ALL.into_iter().find(|t| *t != device.target()).unwrap();
    let foreign = kernels::artifact(&format!("{other}/fill.co")).unwrap().bytes;
    assert!(device.load_code_object(foreign).is_err(), "a code object of {other} does not load");
    assert!(device.load_code_object(&fill_bytes[..100]).is_err());
    assert_eq!(device.kernels().objects().len(), 2);
}

#[test]
fn ordinary_launches_are_asynchronous_and_waited_once() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let fill = load(&mut device, "fill");
    let axpy = load(&mut device, "axpy");
    let bytes = 4 * u64::from(GRID);
    let (y, x) = (device.allocate(bytes).unwrap(), device.allocate(bytes).unwrap());
    device.write(x.va, &bytes_of(&xs())).unwrap();
    let before = device.stats();
    launch(&mut device, &fill, "fill", &[ArgValue::Pointer(y.va), ArgValue::F32(1.5), ArgValue::U32(N)]);
    let axpy_args = [ArgValue::Pointer(y.va), ArgValue::Pointer(x.va), ArgValue::F32(2.0), ArgValue::U32(N)];
    launch(&mut device, &axpy, "axpy", &axpy_args);
    assert_eq!(device.stats().launches - before.launches, 2);
    assert_eq!(device.stats().waits, before.waits, "launches do not wait");
    let got = f32s(&mut device, y.va, GRID as usize);
    assert_eq!(device.stats().waits - before.waits, 1, "one wait, by the read");
    for (i, (&value, &x)) in got.iter().zip(&xs()).enumerate() {
        let expected = if i < N as usize { 2.0 * x + 1.5 } else { 0.0 };
        assert_eq!(value, expected, "y[{i}]");
    }
    // Nothing launched since: no more waits.
    device.finish().unwrap();
    f32s(&mut device, y.va, 4);
    assert_eq!(device.stats().waits - before.waits, 1);

    // Many launches reuse kernarg slots and ring slots without waiting for more than they need.
    for _ in 0..300 {
        launch(&mut device, &axpy, "axpy", &axpy_args);
    }
    device.finish().unwrap();
    let got = f32s(&mut device, y.va, 2);
    assert_eq!(got, [2.0 * 301.0 * xs()[0] + 1.5, 2.0 * 301.0 * xs()[1] + 1.5]);
    assert_eq!(device.stats().waits - before.waits, 2);
}

#[test]
fn launch_requests_are_checked_before_anything_is_published() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let fill = load(&mut device, "fill");
    let kd = fill.1.kernel("fill").unwrap().kd_va;
    let good = kernarg(
        device.target(),
        &fill.0,
        "fill",
        &[ArgValue::Pointer(0), ArgValue::F32(0.0), ArgValue::U32(0)],
        &DispatchGeometry::linear(GRID, WG),
    );
    fn request(kernarg: &[u8], kernel_object: u64, grid: u32) -> LaunchRequest<'_> {
        LaunchRequest {
            kernel_object,
            grid_work_items: [grid, 1, 1],
            workgroup_work_items: [WG, 1, 1],
            dynamic_lds_bytes: 0,
            kernarg,
        }
    }
    assert!(matches!(device.launch(&request(&good, kd + 64, GRID)), Err(LaunchError::UnknownKernel { .. })));
    assert!(matches!(device.launch(&request(&good[1..], kd, GRID)), Err(LaunchError::KernargSize { .. })));
    assert!(matches!(device.launch(&request(&good, kd, 0)), Err(LaunchError::ZeroDimension { .. })));
    assert_eq!(device.stats().launches, 0);
}

#[test]
fn a_dispatch_packet_through_a_caller_queue_completes_on_its_signal() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let fill = load(&mut device, "fill");
    let y = device.allocate(4 * u64::from(GRID)).unwrap();
    let blob = kernarg(
        device.target(),
        &fill.0,
        "fill",
        &[ArgValue::Pointer(y.va), ArgValue::F32(-3.25), ArgValue::U32(N)],
        &DispatchGeometry::linear(GRID, WG),
    );
    let args = device.allocate_kernarg(blob.len() as u64).unwrap();
    device.write(args.va, &blob).unwrap();
    let queue = device.create_queue(RingSize::new(8).unwrap()).unwrap();
    let done = device.create_signal(1).unwrap();
    let kernel = fill.1.kernel("fill").unwrap();
    let dispatch = KernelDispatch {
        control: PacketControl::SYSTEM_BARRIER,
        dimensions: Dimensions::fewest([GRID, 1, 1], [WG, 1, 1]),
        workgroup_size: [WG, 1, 1],
        grid_size: [GRID, 1, 1],
        private_segment_size: 0,
        group_segment_size: kernel.group_segment_fixed_size,
        kernel_object: kernel.kd_va,
        kernarg_address: args.va,
        completion_signal: done.get(),
    };
    let id = device.write_packet(queue, dispatch.emit().as_array()).unwrap();
    assert_eq!(id, 0);
    assert_eq!(device.ring_doorbell(queue).unwrap(), Submission { first: 0, end: 1 });
    assert_eq!(device.wait_signal(done, SignalCondition::Eq, 0, WAIT).unwrap(), 0);
    let got = f32s(&mut device, y.va, GRID as usize);
    assert!(got[..N as usize].iter().all(|&v| v == -3.25) && got[N as usize..].iter().all(|&v| v == 0.0));
    assert_eq!(device.queue_progress(queue).unwrap().read_index, 1);
    assert_eq!(device.stats().launches, 0, "a caller's packet is not an ordinary launch");
    device.destroy_queue(queue).unwrap();
    assert!(matches!(device.queue_progress(queue), Err(QueueError::UnknownQueue { .. })));
}

#[test]
fn a_pm4_ib_packet_completes_on_its_signal() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let out = device.allocate(64).unwrap();
    let mut words = vec![0u32; 0];
    let packet = WriteData::memory(out.va, &[0x1234_5678, 0x9abc_def0]).unwrap();
    words.resize(packet.buffer_len(), 0);
    packet.emit(&mut words);
    let size_dwords = u32::try_from(words.len()).unwrap();
    let ib = device.allocate_ib(size_dwords).unwrap();
    for (i, word) in words.iter().enumerate() {
        device.store_u32(ib.va + 4 * i as u64, *word).unwrap();
    }
    let queue = device.create_queue(RingSize::new(64).unwrap()).unwrap();
    let done = device.create_signal(1).unwrap();
    let pm4 = AmdPm4IbPacket::new(ib.va, size_dwords, FenceScope::System, FenceScope::System, done.get()).unwrap();
    device.write_packet(queue, pm4.as_array()).unwrap();
    assert_eq!(device.ring_doorbell(queue).unwrap(), Submission { first: 0, end: 1 });
    device.wait_signal(done, SignalCondition::Eq, 0, WAIT).unwrap();
    let mut back = [0u8; 8];
    device.read(out.va, &mut back).unwrap();
    assert_eq!(u64::from_le_bytes(back), 0x9abc_def0_1234_5678);
}

/// A barrier-AND with no dependencies that decrements `signal`.
fn barrier(signal: u64) -> [u8; 64] {
    *BarrierAndPacket::new(&Barrier {
        control: PacketControl::SYSTEM_BARRIER,
        dep_signal: [0; 5],
        completion_signal: signal,
    })
    .as_array()
}

#[test]
fn submissions_count_the_packets_of_each_doorbell() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let queue = device.create_queue(RingSize::new(4).unwrap()).unwrap();
    let done = device.create_signal(4).unwrap();
    for _ in 0..2 {
        device.write_packet(queue, &barrier(done.get())).unwrap();
    }
    assert_eq!(device.ring_doorbell(queue).unwrap(), Submission { first: 0, end: 2 });
    device.wait_signal(done, SignalCondition::Eq, 2, WAIT).unwrap();
    for _ in 0..2 {
        device.write_packet(queue, &barrier(done.get())).unwrap();
    }
    assert_eq!(device.ring_doorbell(queue).unwrap(), Submission { first: 2, end: 4 });
    assert_eq!(device.ring_doorbell(queue).unwrap(), Submission { first: 4, end: 4 });
    device.wait_signal(done, SignalCondition::Eq, 0, WAIT).unwrap();
    let progress = device.queue_progress(queue).unwrap();
    assert_eq!((progress.read_index, progress.write_index), (4, 4));

    // A barrier waits for its dependency, which the host satisfies later.
    let gate = device.create_signal(1).unwrap();
    let after = device.create_signal(1).unwrap();
    let waiting = Barrier {
        control: PacketControl::SYSTEM_BARRIER,
        dep_signal: [gate.get(), 0, 0, 0, 0],
        completion_signal: after.get(),
    };
    device.write_packet(queue, BarrierAndPacket::new(&waiting).as_array()).unwrap();
    device.ring_doorbell(queue).unwrap();
    let early = device.wait_signal(after, SignalCondition::Eq, 0, Duration::from_millis(50));
    assert!(matches!(early, Err(WaitError::Timeout { value: 1, .. })), "{early:?}");
    device.store_signal(gate, 0).unwrap();
    device.wait_signal(after, SignalCondition::Eq, 0, WAIT).unwrap();

    // A full ring refuses the packet and writes nothing: the processor is held at a barrier
    // (taken, so off the ring) while four more packets fill the caller's four slots.
    let stuck = device.create_signal(1).unwrap();
    let blocked =
        Barrier { control: PacketControl::SYSTEM_BARRIER, dep_signal: [stuck.get(), 0, 0, 0, 0], completion_signal: 0 };
    device.write_packet(queue, BarrierAndPacket::new(&blocked).as_array()).unwrap();
    device.ring_doorbell(queue).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while device.queue_progress(queue).unwrap().read_index < 6 {
        assert!(std::time::Instant::now() < deadline, "the processor did not take the barrier");
        std::thread::sleep(Duration::from_millis(1));
    }
    for _ in 0..4 {
        device.write_packet(queue, &barrier(0)).unwrap();
    }
    let full = device.write_packet(queue, &barrier(0));
    assert!(matches!(full, Err(QueueError::Full { write_index: 10, read_index: 6, slots: 4 })), "{full:?}");
    device.ring_doorbell(queue).unwrap();
    device.store_signal(stuck, 0).unwrap();
}

#[test]
fn a_packet_fault_reaches_the_error_callback_and_one_wait() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let queue = device.create_queue(RingSize::new(64).unwrap()).unwrap();
    let done = device.create_signal(1).unwrap();
    // TYPE 7 is not an AQL packet type.
    let mut bad = barrier(done.get());
    bad[0] = 7;
    device.write_packet(queue, &bad).unwrap();
    device.ring_doorbell(queue).unwrap();
    let error = device.wait_signal(done, SignalCondition::Eq, 0, WAIT).expect_err("the packet faults");
    let WaitError::Fault { fault, .. } = &error else { panic!("{error:?}") };
    let QueueFault::Runtime { status, .. } = fault.as_ref() else { panic!("{fault:?}") };
    assert_eq!(status.name, Some("HSA_STATUS_ERROR_INVALID_PACKET_FORMAT"), "{error}");
    // The fault was reported by that wait; the next one times out; the queue stays faulted.
    let again = device.wait_signal(done, SignalCondition::Eq, 0, Duration::from_millis(20));
    assert!(matches!(again, Err(WaitError::Timeout { .. })), "{again:?}");
    assert!(matches!(device.queue_progress(queue), Err(QueueError::Fault(QueueFault::Runtime { .. }))));
    assert!(matches!(device.ring_doorbell(queue), Err(QueueError::Fault(_))));
    assert!(matches!(device.write_packet(queue, &barrier(0)), Err(QueueError::Fault(_))));

    // A dispatch the soft device rejects (no such kernel) faults with an exception.
    let other = device.create_queue(RingSize::new(64).unwrap()).unwrap();
    let dispatch = KernelDispatch {
        control: PacketControl::SYSTEM_BARRIER,
        dimensions: Dimensions::One,
        workgroup_size: [64, 1, 1],
        grid_size: [64, 1, 1],
        private_segment_size: 0,
        group_segment_size: 0,
        kernel_object: 0x1000,
        kernarg_address: 0,
        completion_signal: done.get(),
    };
    device.write_packet(other, dispatch.emit().as_array()).unwrap();
    device.ring_doorbell(other).unwrap();
    let error = device.wait_signal(done, SignalCondition::Eq, 0, WAIT).expect_err("the dispatch faults");
    let WaitError::Fault { fault, .. } = &error else { panic!("{error:?}") };
    assert!(
        matches!(fault.as_ref(), QueueFault::Runtime { status, .. } if status.name == Some("HSA_STATUS_ERROR_EXCEPTION")),
        "{error}"
    );
}

#[test]
fn a_failed_launch_is_reported_by_the_next_wait_then_a_fresh_path_runs() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    let fill = load(&mut device, "fill");
    let y = device.allocate(4 * u64::from(GRID)).unwrap();
    // A pointer outside every allocation: the dispatch faults on the device.
    launch(&mut device, &fill, "fill", &[ArgValue::Pointer(0x10_0000), ArgValue::F32(1.0), ArgValue::U32(N)]);
    let error = device.finish().expect_err("the launch failed");
    assert!(
        matches!(&error, LaunchError::Queue(fault) if matches!(fault.as_ref(), QueueFault::Runtime { .. })),
        "{error:?}"
    );
    device.finish().expect("reported once");
    launch(&mut device, &fill, "fill", &[ArgValue::Pointer(y.va), ArgValue::F32(2.5), ArgValue::U32(N)]);
    assert_eq!(f32s(&mut device, y.va, 2), [2.5, 2.5], "a fresh launch path");

    // A read after a failed launch reports it (and copies nothing).
    launch(&mut device, &fill, "fill", &[ArgValue::Pointer(0x10_0000), ArgValue::F32(1.0), ArgValue::U32(N)]);
    let mut out = [0u8; 4];
    assert!(matches!(device.read(y.va, &mut out), Err(TransferError::Launch(_))));
    device.read(y.va, &mut out).unwrap();
}

#[test]
fn injected_faults_fire_once_at_what_they_name() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    device.inject(Injection::IbAllocation).unwrap();
    assert_eq!(device.allocate_ib(16), Err(AllocateError::Injected { size: 64 }));
    device.allocate_ib(16).expect("the injection fired once");

    let queue = device.create_queue(RingSize::new(64).unwrap()).unwrap();
    let done = device.create_signal(1).unwrap();
    device.inject(Injection::QueueFault).unwrap();
    device.write_packet(queue, &barrier(done.get())).unwrap();
    device.ring_doorbell(queue).unwrap();
    let error = device.wait_signal(done, SignalCondition::Eq, 0, WAIT).expect_err("injected fault");
    assert!(
        matches!(&error, WaitError::Fault { fault, .. } if matches!(fault.as_ref(), QueueFault::Runtime { status, .. } if status.name == Some("HSA_STATUS_ERROR_EXCEPTION"))),
        "{error:?}"
    );

    let hung = device.create_queue(RingSize::new(64).unwrap()).unwrap();
    let later = device.create_signal(1).unwrap();
    device.inject(Injection::Hang).unwrap();
    device.write_packet(hung, &barrier(later.get())).unwrap();
    assert_eq!(device.ring_doorbell(hung).unwrap(), Submission { first: 0, end: 1 });
    let timeout = device.wait_signal(later, SignalCondition::Eq, 0, Duration::from_millis(100));
    assert!(matches!(timeout, Err(WaitError::Timeout { value: 1, .. })), "{timeout:?}");
    assert_eq!(device.queue_progress(hung).unwrap().read_index, 0, "the hung queue took nothing");

    // Ordinary launches are never injected into.
    device.inject(Injection::QueueFault).unwrap();
    let fill = load(&mut device, "fill");
    let y = device.allocate(4 * u64::from(GRID)).unwrap();
    launch(&mut device, &fill, "fill", &[ArgValue::Pointer(y.va), ArgValue::F32(4.0), ArgValue::U32(N)]);
    assert_eq!(f32s(&mut device, y.va, 1), [4.0]);
}

#[test]
fn lifetimes_go_stale_after_free_and_reset() {
    let _serial = serial();
    let Some(mut device) = device() else { return };
    assert_eq!(device.lifetime(), Lifetime { epoch: 0, frees: 0 });
    let a = device.allocate(16).unwrap();
    let b = device.allocate_kernarg(16).unwrap();
    load(&mut device, "fill");
    let queue = device.create_queue(RingSize::new(64).unwrap()).unwrap();
    let signal = device.create_signal(0).unwrap();
    device.free(a).unwrap();
    assert_eq!(device.lifetime(), Lifetime { epoch: 0, frees: 1 });
    device.inject(Injection::IbAllocation).unwrap();
    device.reset();
    assert_eq!(device.lifetime(), Lifetime { epoch: 1, frees: 0 });
    assert!(device.kernels().objects().is_empty());
    assert_eq!(device.free(b), Err(FreeError::NotLive { id: b.id, va: b.va }));
    assert!(matches!(device.queue_progress(queue), Err(QueueError::UnknownQueue { .. })));
    assert!(device.signal_value(signal).is_err());
    let ib = device.allocate_ib(4).expect("reset disarmed the injection");
    assert_eq!(ib.id, a.id, "identities restart after a reset");
}

#[test]
fn every_target_in_its_own_process() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for isa in ["gfx1030", "gfx1100", "gfx1201", "gfx1030,gfx1100,gfx1201", "gfx90a"] {
        let mut command = Command::new(&exe);
        command.env(soft_hsa::ISA_ENV, isa).env(CHILD_ENV, "1").args(["--test-threads", "1", "--skip", "every_target"]);
        if isa == "gfx90a" {
            command.args(["--exact", "probe_reports_the_gpu_agent_and_its_isa"]);
        }
        let output = command.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "{isa}:\n{text}");
        assert!(text.contains("test result: ok"), "{isa}:\n{text}");
    }
}
