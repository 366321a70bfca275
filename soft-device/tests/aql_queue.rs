//! AQL queues of the soft device: packets published by the test through `Device::publish`, run
//! by the packet processor at `submit`, with expected values computed here independently.

use std::cell::RefCell;
use std::time::Duration;

use aql_packets::{
    AmdBarrierValue, AmdPm4IbPacket, AqlPacket, Barrier, Dimensions, FenceScope, KernelDispatch, PACKET_SIZE,
    PacketControl, PacketType, RingSize, SignalCondition,
};
use hal::{
    Device, LaunchError, LaunchRequest, LoadedCodeObject, Pm4Error, QueueError, QueueFault, QueueHandle, SignalHandle,
    WaitError,
};
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use pm4_encoding::Target;
use soft_device::SimDevice;
use soft_device::exec::{self, Dispatch};
use soft_device::loader::SoftKernels;
use soft_device::memory::SimMemory;

const TARGET: Target = Target::Gfx1100;
const GRID: u32 = 256;
const WG: u16 = 64;

fn artifact(module: &str) -> Vec<u8> {
    kernels::artifact(&format!("{TARGET}/{module}.co")).unwrap().bytes.to_vec()
}

fn kernarg(code_object: &[u8], kernel: &str, args: &[ArgValue]) -> Vec<u8> {
    let co = kernarg_abi::read_any(code_object, Some(TARGET)).unwrap();
    co.kernel(kernel).unwrap().kernarg_layout().unwrap().build(args, &DispatchGeometry::linear(GRID, WG)).unwrap()
}

fn dispatch_packet(kernel_object: u64, kernarg_address: u64, completion_signal: u64) -> KernelDispatch {
    KernelDispatch {
        control: PacketControl { barrier: true, acquire: FenceScope::System, release: FenceScope::System },
        dimensions: Dimensions::One,
        workgroup_size: [WG, 1, 1],
        grid_size: [GRID, 1, 1],
        private_segment_size: 0,
        group_segment_size: 0,
        kernel_object,
        kernarg_address,
        completion_signal,
    }
}

fn bytes(p: AqlPacket) -> [u8; PACKET_SIZE] {
    p.to_bytes()
}

fn barrier_and(deps: &[u64], completion_signal: u64) -> [u8; PACKET_SIZE] {
    let mut dep_signal = [0u64; 5];
    dep_signal[..deps.len()].copy_from_slice(deps);
    bytes(AqlPacket::BarrierAnd(Barrier { control: PacketControl::NONE, dep_signal, completion_signal }))
}

fn barrier_or(deps: &[u64], completion_signal: u64) -> [u8; PACKET_SIZE] {
    let mut dep_signal = [0u64; 5];
    dep_signal[..deps.len()].copy_from_slice(deps);
    bytes(AqlPacket::BarrierOr(Barrier { control: PacketControl::NONE, dep_signal, completion_signal }))
}

fn f32_bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values.flat_map(f32::to_le_bytes).collect()
}

fn ring(slots: u32) -> RingSize {
    RingSize::new(slots).unwrap()
}

/// fill(y, 1.5) then axpy(y += 2 x) through packets published by the test, with completion
/// signals; compared with the same two dispatches run directly by the executor, and with f64 math.
#[test]
fn dispatch_chain_matches_direct_execution_and_signals_count_packets() {
    let (fill_co, axpy_co) = (artifact("fill"), artifact("axpy"));
    let xs: Vec<f32> = (0..GRID).map(|i| f32::from(u16::try_from(i % 9).unwrap()) * 0.25).collect();
    let n = GRID - 6;

    // Through the queue.
    let mut device = SimDevice::new(TARGET);
    let fill = device.load_code_object(&fill_co).unwrap();
    let axpy = device.load_code_object(&axpy_co).unwrap();
    let (y, x) = (device.allocate(4 * u64::from(GRID)).unwrap(), device.allocate(4 * u64::from(GRID)).unwrap());
    device.write(x.va, &f32_bytes(xs.iter().copied())).unwrap();
    let args_fill = [ArgValue::Pointer(y.va), ArgValue::F32(1.5), ArgValue::U32(n)];
    let args_axpy = [ArgValue::Pointer(y.va), ArgValue::Pointer(x.va), ArgValue::F32(2.0), ArgValue::U32(n)];
    let ka = device.allocate(4096).unwrap();
    let (k_fill, k_axpy) = (kernarg(&fill_co, "fill", &args_fill), kernarg(&axpy_co, "axpy", &args_axpy));
    device.write(ka.va, &k_fill).unwrap();
    device.write(ka.va + 1024, &k_axpy).unwrap();
    let both = device.create_signal(2).unwrap();
    let last = device.create_signal(1).unwrap();
    let q = device.create_queue(ring(8)).unwrap();
    let kd = |co: &LoadedCodeObject, name: &str| co.kernel(name).unwrap().kd_va;
    let p0 = dispatch_packet(kd(&fill, "fill"), ka.va, both.get());
    let p1 = dispatch_packet(kd(&axpy, "axpy"), ka.va + 1024, both.get());
    assert_eq!(device.write_packet(q, p0.emit().as_array()).unwrap(), 0);
    assert_eq!(device.write_packet(q, p1.emit().as_array()).unwrap(), 1);
    assert_eq!(device.write_packet(q, &barrier_and(&[both.get()], last.get())).unwrap(), 2);
    // Nothing runs before the doorbell.
    assert_eq!(device.signal_value(both), Ok(2));
    let report = device.submit_traced(q).unwrap();
    assert_eq!(report.dispatches.iter().map(|d| d.kernel.as_str()).collect::<Vec<_>>(), ["fill", "axpy"]);
    let types: Vec<PacketType> = report.packets.iter().map(|p| p.packet_type).collect();
    assert_eq!(types, [PacketType::KernelDispatch, PacketType::KernelDispatch, PacketType::BarrierAnd]);
    assert_eq!(report.packets[0].control.release, FenceScope::System);
    assert!(report.packets[1].control.barrier);
    // Exactly one decrement per packet.
    assert_eq!(device.signal_value(both), Ok(0));
    assert_eq!(device.signal_value(last), Ok(0));
    assert_eq!(device.wait_signal(last, SignalCondition::Eq, 0, Duration::from_secs(1)), Ok(0));
    // A second submit with nothing new changes nothing.
    assert_eq!(device.run_queue(q).unwrap(), 0);
    assert_eq!(device.signal_value(both), Ok(0));
    let mut queued = vec![0u8; 4 * usize::try_from(GRID).unwrap()];
    device.read(y.va, &mut queued).unwrap();

    // Directly through the executor, in an address space of its own.
    let mut memory = SimMemory::new();
    let mut objects = SoftKernels::new();
    let fill_kd = soft_device::loader::load(&mut objects, &mut memory, TARGET, &fill_co, None)
        .unwrap()
        .kernel("fill")
        .unwrap()
        .kd_va;
    let axpy_kd = soft_device::loader::load(&mut objects, &mut memory, TARGET, &axpy_co, None)
        .unwrap()
        .kernel("axpy")
        .unwrap()
        .kd_va;
    let (y2, x2, ka2) =
        (memory.allocate(1024).unwrap(), memory.allocate(1024).unwrap(), memory.allocate(4096).unwrap());
    memory.write(x2.va, &f32_bytes(xs.iter().copied())).unwrap();
    let k_fill2 = kernarg(&fill_co, "fill", &[ArgValue::Pointer(y2.va), ArgValue::F32(1.5), ArgValue::U32(n)]);
    let k_axpy2 = kernarg(
        &axpy_co,
        "axpy",
        &[ArgValue::Pointer(y2.va), ArgValue::Pointer(x2.va), ArgValue::F32(2.0), ArgValue::U32(n)],
    );
    memory.write(ka2.va, &k_fill2).unwrap();
    memory.write(ka2.va + 1024, &k_axpy2).unwrap();
    for (kernel_object, kernarg_va) in [(fill_kd, ka2.va), (axpy_kd, ka2.va + 1024)] {
        let d = Dispatch {
            kernel_object,
            kernarg_va,
            grid_work_items: [GRID, 1, 1],
            workgroup_work_items: [WG, 1, 1],
            dynamic_lds_bytes: 0,
        };
        exec::execute(&mut memory, &objects, &d).unwrap();
    }
    let mut direct = vec![0u8; queued.len()];
    memory.read(y2.va, &mut direct).unwrap();
    assert_eq!(queued, direct);

    // And plain math: y = 2x + 1.5 below n, untouched (0) above.
    let expected = f32_bytes(
        (0..GRID).map(|i| if i < n { f64::from(xs[usize::try_from(i).unwrap()]) * 2.0 + 1.5 } else { 0.0 }).map(|v| {
            #[allow(clippy::cast_possible_truncation)] // CAST: exact multiples of 1/4.
            let f = v as f32;
            f
        }),
    );
    assert_eq!(queued, expected);
}

#[test]
fn ring_wraps_over_several_doorbells() {
    let mut device = SimDevice::new(TARGET);
    let q = device.create_queue(ring(4)).unwrap();
    let count = device.create_signal(10).unwrap();
    let mut published = 0u64;
    let mut completed = 0u64;
    for batch in [4u64, 3, 3] {
        for _ in 0..batch {
            assert_eq!(device.write_packet(q, &barrier_and(&[], count.get())).unwrap(), published);
            published += 1;
        }
        if batch == 4 {
            // Every slot is taken until the processor runs.
            assert!(matches!(
                device.write_packet(q, &barrier_and(&[], count.get())),
                Err(QueueError::Full { write_index: 4, read_index: 0, slots: 4 })
            ));
        }
        completed += device.run_queue(q).unwrap();
        assert_eq!(device.queue(q).unwrap().read_index(), published);
    }
    assert_eq!((published, completed), (10, 10));
    assert_eq!(device.signal_value(count), Ok(0));
    // Every slot is INVALID again after processing.
    let queue = device.queue(q).unwrap();
    for id in 0..4 {
        let mut word = [0u8; 4];
        device.memory().read(queue.slot_va(id), &mut word).unwrap();
        assert_eq!(u32::from_le_bytes(word), aql_packets::INVALID_HEADER_WORD);
    }
}

/// Publishes `good`, the bad slot, `good` again; the first runs, the fault stops the rest.
fn faulting(bad: [u8; PACKET_SIZE]) -> (QueueFault, SimDevice, QueueHandle, SignalHandle) {
    let mut device = SimDevice::new(TARGET);
    let q = device.create_queue(ring(8)).unwrap();
    let s = device.create_signal(5).unwrap();
    device.write_packet(q, &barrier_and(&[], s.get())).unwrap();
    device.write_packet(q, &bad).unwrap();
    device.write_packet(q, &barrier_and(&[], s.get())).unwrap();
    let Err(QueueError::Fault(fault)) = device.run_queue(q) else { panic!("no fault") };
    assert_eq!(device.signal_value(s), Ok(4), "only the packet before the fault completed");
    let queue = device.queue(q).unwrap();
    assert!(!queue.is_active());
    assert_eq!(queue.read_index(), 1);
    // Later publishes and doorbells return the recorded fault and run nothing.
    let again = device.run_queue(q).unwrap_err().to_string();
    assert_eq!(again, fault.to_string());
    let publish = device.write_packet(q, &barrier_and(&[], s.get())).unwrap_err().to_string();
    assert_eq!(publish, fault.to_string());
    assert_eq!(device.signal_value(s), Ok(4));
    (fault, device, q, s)
}

fn with_header(mut packet: [u8; PACKET_SIZE], header: u16) -> [u8; PACKET_SIZE] {
    packet[..2].copy_from_slice(&header.to_le_bytes());
    packet
}

#[test]
fn invalid_headers_inactivate_the_queue_each_with_its_fault() {
    let plain = barrier_and(&[], 0);
    let f = faulting(with_header(plain, 0x0006)).0;
    assert!(matches!(f, QueueFault::InvalidPacketType { packet_id: 1, packet_type: 6 }), "{f}");
    // Barrier-AND (3) with acquire scope 3 (bits [10:9]).
    let f = faulting(with_header(plain, 0x0003 | (3 << 9))).0;
    assert!(matches!(f, QueueFault::InvalidFenceScope { packet_id: 1, field: "SCACQUIRE_FENCE_SCOPE", value: 3 }));
    let f = faulting(with_header(plain, 0x0003 | (3 << 11))).0;
    assert!(matches!(f, QueueFault::InvalidFenceScope { field: "SCRELEASE_FENCE_SCOPE", value: 3, .. }));
    let f = faulting(with_header(plain, 0x0003 | (1 << 14))).0;
    assert!(matches!(f, QueueFault::ReservedHeaderBits { packet_id: 1, bits: 0x4000 }), "{f}");
    let mut dispatch = *dispatch_packet(0x1000, 0x2000, 0).emit().as_array();
    dispatch[2..4].copy_from_slice(&0u16.to_le_bytes());
    let f = faulting(dispatch).0;
    assert!(matches!(f, QueueFault::InvalidDimensions { packet_id: 1, dimensions: 0 }), "{f}");
    dispatch[2..4].copy_from_slice(&0x0011u16.to_le_bytes());
    let f = faulting(dispatch).0;
    assert!(matches!(f, QueueFault::ReservedSetupBits { packet_id: 1, bits: 0x0010 }), "{f}");
    // Vendor-specific (type 0) with AMD format 7.
    let mut vendor = [0u8; PACKET_SIZE];
    vendor[2] = 7;
    let f = faulting(vendor).0;
    assert!(matches!(f, QueueFault::UnsupportedVendorFormat { packet_id: 1, format: 7 }), "{f}");
    // A reserved body field: barrier-AND reserved1 at byte 4.
    let mut reserved = plain;
    reserved[4] = 1;
    let f = faulting(reserved).0;
    assert!(matches!(f, QueueFault::InvalidPacket { packet_id: 1, .. }), "{f}");
    // Agent dispatch decodes but has no agent.
    let f = faulting(with_header([0; PACKET_SIZE], 0x0004)).0;
    assert!(matches!(f, QueueFault::UnsupportedPacket { packet_id: 1, packet_type: PacketType::AgentDispatch }));
    // A completion signal that does not exist.
    let f = faulting(barrier_and(&[], 0xdead)).0;
    assert!(matches!(f, QueueFault::UnknownSignal { packet_id: 1, handle: 0xdead }), "{f}");
}

#[test]
fn barrier_and_or_with_satisfied_and_unsatisfiable_dependencies() {
    let mut device = SimDevice::new(TARGET);
    let zero = device.create_signal(0).unwrap().get();
    let one = device.create_signal(1).unwrap().get();
    let done = device.create_signal(100).unwrap();
    let q = device.create_queue(ring(8)).unwrap();
    device.write_packet(q, &barrier_and(&[zero, zero], done.get())).unwrap();
    device.write_packet(q, &barrier_or(&[one, zero], done.get())).unwrap();
    device.write_packet(q, &barrier_or(&[], done.get())).unwrap();
    device.write_packet(q, &barrier_and(&[], done.get())).unwrap();
    assert_eq!(device.run_queue(q).unwrap(), 4);
    assert_eq!(device.signal_value(done), Ok(96));

    let mut device = SimDevice::new(TARGET);
    let zero = device.create_signal(0).unwrap().get();
    let one = device.create_signal(1).unwrap().get();
    let two = device.create_signal(2).unwrap().get();
    let q = device.create_queue(ring(2)).unwrap();
    device.write_packet(q, &barrier_and(&[zero, two, one], 0)).unwrap();
    let e = device.run_queue(q).unwrap_err();
    assert!(
        matches!(e, QueueError::Fault(QueueFault::BarrierNeverSatisfied { packet_id: 0, signal, value: 2 }) if signal == two),
        "{e}"
    );
    let q = device.create_queue(ring(2)).unwrap();
    device.write_packet(q, &barrier_or(&[one, two], 0)).unwrap();
    let e = device.run_queue(q).unwrap_err();
    assert!(
        matches!(e, QueueError::Fault(QueueFault::BarrierNeverSatisfied { signal, value: 1, .. }) if signal == one),
        "{e}"
    );
    let q = device.create_queue(ring(2)).unwrap();
    device.write_packet(q, &barrier_or(&[one, 0x77], 0)).unwrap();
    let e = device.run_queue(q).unwrap_err();
    assert!(matches!(e, QueueError::Fault(QueueFault::UnknownSignal { handle: 0x77, .. })), "{e}");
}

#[test]
fn a_dispatch_completion_satisfies_a_later_barrier() {
    let fill_co = artifact("fill");
    let mut device = SimDevice::new(TARGET);
    let fill = device.load_code_object(&fill_co).unwrap();
    let y = device.allocate(4 * u64::from(GRID)).unwrap();
    let ka = device.allocate(4096).unwrap();
    device
        .write(ka.va, &kernarg(&fill_co, "fill", &[ArgValue::Pointer(y.va), ArgValue::F32(3.0), ArgValue::U32(GRID)]))
        .unwrap();
    let dep = device.create_signal(1).unwrap();
    let after = device.create_signal(1).unwrap();
    let q = device.create_queue(ring(4)).unwrap();
    device
        .write_packet(q, dispatch_packet(fill.kernel("fill").unwrap().kd_va, ka.va, dep.get()).emit().as_array())
        .unwrap();
    device.write_packet(q, &barrier_and(&[dep.get()], after.get())).unwrap();
    assert_eq!(device.run_queue(q).unwrap(), 2);
    assert_eq!((device.signal_value(dep), device.signal_value(after)), (Ok(0), Ok(0)));
    let mut out = [0u8; 4];
    device.read(y.va + 4 * u64::from(GRID - 1), &mut out).unwrap();
    assert_eq!(f32::from_le_bytes(out), 3.0);
}

fn barrier_value(signal: u64, value: u64, mask: u64, cond: SignalCondition) -> [u8; PACKET_SIZE] {
    let control = PacketControl { barrier: true, acquire: FenceScope::Agent, release: FenceScope::None };
    bytes(AqlPacket::AmdBarrierValue(AmdBarrierValue { control, signal, value, mask, cond, completion_signal: 0 }))
}

#[test]
fn barrier_value_compares_masked_signal() {
    let mut device = SimDevice::new(TARGET);
    let s = device.create_signal(0x1234).unwrap();
    let q = device.create_queue(ring(8)).unwrap();
    // (0x1234 & 0xff) = 0x34.
    device.write_packet(q, &barrier_value(s.get(), 0x34, 0xff, SignalCondition::Eq)).unwrap();
    device.write_packet(q, &barrier_value(s.get(), 0x35, 0xff, SignalCondition::Ne)).unwrap();
    device.write_packet(q, &barrier_value(s.get(), 0x35, 0xff, SignalCondition::Lt)).unwrap();
    device.write_packet(q, &barrier_value(s.get(), 0x1234, u64::MAX, SignalCondition::Gte)).unwrap();
    let report = device.submit_traced(q).unwrap();
    assert_eq!(report.packets.len(), 4);
    assert_eq!(report.packets[0].amd_format, Some(aql_packets::AmdFormat::BarrierValue));
    assert_eq!(report.packets[0].control.acquire, FenceScope::Agent);
    device.write_packet(q, &barrier_value(s.get(), 0x30, 0xff, SignalCondition::Lt)).unwrap();
    let e = device.run_queue(q).unwrap_err();
    assert!(
        matches!(
            e,
            QueueError::Fault(QueueFault::BarrierValueNeverSatisfied {
                packet_id: 4,
                current: 0x1234,
                mask: 0xff,
                cond: SignalCondition::Lt,
                value: 0x30,
                ..
            })
        ),
        "{e}"
    );
}

#[test]
fn pm4_ib_packet_reaches_the_hook_with_its_ib() {
    let mut device = SimDevice::new(TARGET);
    let ib = device.allocate_ib(40).unwrap();
    assert_eq!(ib.size, 160);
    let s = device.create_signal(1).unwrap();
    let q = device.create_queue(ring(4)).unwrap();
    let packet = AmdPm4IbPacket::new(ib.va + 8, 38, FenceScope::System, FenceScope::System, s.get()).unwrap();
    device.write_packet(q, packet.as_array()).unwrap();
    let calls = RefCell::new(Vec::new());
    let mut hook = |_: &mut SimMemory, _: &SoftKernels, va: u64, size: u32| -> Result<(), Pm4Error> {
        calls.borrow_mut().push((va, size));
        Ok(())
    };
    let report = device.submit_with(q, &mut hook).unwrap();
    assert_eq!(calls.borrow().as_slice(), [(ib.va + 8, 38)]);
    assert_eq!(report.packets[0].amd_format, Some(aql_packets::AmdFormat::Pm4Ib));
    assert_eq!(device.signal_value(s), Ok(0));

    // A hook error is a queue fault; the completion signal is not decremented.
    device.write_packet(q, packet.as_array()).unwrap();
    let mut failing = |_: &mut SimMemory, _: &SoftKernels, _: u64, _: u32| -> Result<(), Pm4Error> {
        Err("bad opcode at dword 3".into())
    };
    let e = device.submit_with(q, &mut failing).unwrap_err();
    assert!(
        matches!(&e, QueueError::Fault(QueueFault::Pm4 { packet_id: 1, ib_va, size_dwords: 38, source }) if *ib_va == ib.va + 8 && source.to_string() == "bad opcode at dword 3"),
        "{e}"
    );
    assert_eq!(device.signal_value(s), Ok(0));
    assert!(!device.queue(q).unwrap().is_active());

    // The plain submit runs the IB on the device's command processor: this IB holds no packet
    // the processor models, so the submission faults with the processor's own fault at dword 0.
    let q = device.create_queue(ring(4)).unwrap();
    device.write_packet(q, packet.as_array()).unwrap();
    let Err(QueueError::Fault(QueueFault::Pm4 { source, .. })) = device.run_queue(q) else { panic!("no PM4 fault") };
    let fault = source.downcast_ref::<soft_device::cp::CpFault>().expect("a command-processor fault");
    assert_eq!(fault.offset_dwords, 0, "{fault}");
    assert_eq!(device.signal_value(s), Ok(0));
    device.free(ib).unwrap();
    assert!(device.free(ib).is_err());
}

#[test]
fn segment_size_rules() {
    let (fill_co, rms_co) = (artifact("fill"), artifact("rmsnorm"));
    let mut device = SimDevice::new(TARGET);
    let fill = device.load_code_object(&fill_co).unwrap();
    let rms = device.load_code_object(&rms_co).unwrap();
    let y = device.allocate(4 * u64::from(GRID)).unwrap();
    let ka = device.allocate(4096).unwrap();
    device
        .write(ka.va, &kernarg(&fill_co, "fill", &[ArgValue::Pointer(y.va), ArgValue::F32(1.0), ArgValue::U32(GRID)]))
        .unwrap();
    let fill_kd = fill.kernel("fill").unwrap().kd_va;

    // private_segment_size other than 0 and the kernel's own (0).
    let q = device.create_queue(ring(2)).unwrap();
    let p = KernelDispatch { private_segment_size: 16, ..dispatch_packet(fill_kd, ka.va, 0) };
    device.write_packet(q, p.emit().as_array()).unwrap();
    let e = device.run_queue(q).unwrap_err();
    assert!(
        matches!(&e, QueueError::Fault(QueueFault::PrivateSegmentSize { requested: 16, kernel_bytes: 0, .. })),
        "{e}"
    );

    // group_segment_size below the kernel's static LDS.
    let k = &rms.kernels[0];
    assert!(k.group_segment_fixed_size > 0, "rmsnorm has static LDS");
    let q = device.create_queue(ring(2)).unwrap();
    let p = KernelDispatch { group_segment_size: k.group_segment_fixed_size - 1, ..dispatch_packet(k.kd_va, ka.va, 0) };
    device.write_packet(q, p.emit().as_array()).unwrap();
    let e = device.run_queue(q).unwrap_err();
    assert!(
        matches!(&e, QueueError::Fault(QueueFault::GroupSegmentTooSmall { group_segment_size, static_bytes, .. })
            if *group_segment_size + 1 == k.group_segment_fixed_size && *static_bytes == k.group_segment_fixed_size),
        "{e}"
    );

    // The rest of group_segment_size is dynamic LDS: fill accepts 0 dynamic bytes and up to the
    // 64 KiB limit, one byte more is the executor's LdsTooLarge.
    let q = device.create_queue(ring(4)).unwrap();
    device
        .write_packet(
            q,
            KernelDispatch { group_segment_size: 65_536, ..dispatch_packet(fill_kd, ka.va, 0) }.emit().as_array(),
        )
        .unwrap();
    assert_eq!(device.run_queue(q).unwrap(), 1);
    device
        .write_packet(
            q,
            KernelDispatch { group_segment_size: 65_537, ..dispatch_packet(fill_kd, ka.va, 0) }.emit().as_array(),
        )
        .unwrap();
    let e = device.run_queue(q).unwrap_err();
    assert!(
        matches!(
            &e,
            QueueError::Fault(QueueFault::Dispatch {
                source: LaunchError::LdsTooLarge { dynamic_bytes: 65_537, .. },
                ..
            })
        ),
        "{e}"
    );
}

#[test]
fn ordinary_launches_go_through_the_internal_queue_with_fresh_kernarg_slots() {
    let fill_co = artifact("fill");
    let mut device = SimDevice::new(TARGET);
    let fill = device.load_code_object(&fill_co).unwrap();
    assert!(device.launch_queue().is_none());
    let y = device.allocate(4 * u64::from(GRID)).unwrap();
    let mut kernarg_vas = Vec::new();
    for (i, value) in [1.0f32, 2.0, 4.0].into_iter().enumerate() {
        let blob = kernarg(&fill_co, "fill", &[ArgValue::Pointer(y.va), ArgValue::F32(value), ArgValue::U32(GRID)]);
        let request = LaunchRequest {
            kernel_object: fill.kernel("fill").unwrap().kd_va,
            grid_work_items: [GRID, 1, 1],
            workgroup_work_items: [WG, 1, 1],
            dynamic_lds_bytes: 0,
            kernarg: &blob,
        };
        let executed = device.launch_traced(&request).unwrap();
        assert_eq!(executed.kernel, "fill");
        let q = device.launch_queue().unwrap();
        assert_eq!((q.read_index(), q.write_index()), (u64::try_from(i).unwrap() + 1, u64::try_from(i).unwrap() + 1));
        // The packet's kernarg VA: the slot just processed is INVALID again, so read the kernarg
        // pool for the blob instead.
        let pool = device.kernarg_buffer_allocation();
        let mut found = None;
        for offset in (0..=pool.size - u64::try_from(blob.len()).unwrap()).step_by(64) {
            let mut b = vec![0u8; blob.len()];
            device.memory().read(pool.va + offset, &mut b).unwrap();
            if b == blob {
                found = Some(offset);
            }
        }
        kernarg_vas.push(found.unwrap());
        let mut out = [0u8; 4];
        device.read(y.va, &mut out).unwrap();
        assert_eq!(f32::from_le_bytes(out), value);
    }
    // Three launches, three different kernarg slots.
    kernarg_vas.dedup();
    assert_eq!(kernarg_vas.len(), 3);
    let three = device.create_signal(3).unwrap();
    assert!(matches!(
        device.wait_signal(three, SignalCondition::Lt, 1, Duration::from_millis(5)),
        Err(WaitError::Timeout { value: 3, .. })
    ));
}
