//! The command processor's non-dispatch packets on every family: WRITE_DATA to memory, COPY_DATA
//! timestamps from the monotonic clock, RELEASE_MEM data writes (32-bit, 64-bit, GPU clock),
//! WAIT_REG_MEM on memory (satisfied, or a typed fault when it could never be), and RELEASE_MEM
//! asking for an interrupt (a fault: the sim raises none).

use hal::Device;
use pm4_encoding::packet::release_mem::{DataCntl, DataSel, DstSel, EventCntl, IntSel};
use pm4_encoding::packet::wait_reg_mem::Function;
use pm4_encoding::packet::{CopyData, EventType, ReleaseMem, WaitRegMem, WriteData};
use pm4_encoding::{Emit, Target};
use soft_device::SimDevice;
use soft_device::clock::GpuClock;
use soft_device::cp::{CommandProcessor, CpFaultKind};
use soft_device::memory::SimMemory;

fn emit(out: &mut Vec<u32>, p: &impl Emit) {
    let mut w = vec![0; p.buffer_len()];
    p.emit(&mut w);
    out.extend(w);
}

/// Runs `ib` on a copy of `device`'s memory with a GPU clock made 10 ms before; returns the
/// memory, the result and the clock's last read.
fn run(device: &SimDevice, ib: &[u32]) -> (SimMemory, Result<(), CpFaultKind>, u64) {
    let mut memory = device.memory().clone();
    let at = memory.allocate(u64::try_from(4 * ib.len()).unwrap()).unwrap();
    memory.write(at.va, &ib.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let mut cp = CommandProcessor::new(device.target().family());
    let mut clock = GpuClock::new();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let r = cp.execute_ib(&mut memory, device.soft_kernels(), at.va, u32::try_from(ib.len()).unwrap(), &mut clock);
    (memory, r.map(drop).map_err(|f| f.kind), clock.last())
}

fn u64_at(memory: &SimMemory, va: u64) -> u64 {
    let mut b = [0u8; 8];
    memory.read(va, &mut b).unwrap();
    u64::from_le_bytes(b)
}

/// End-of-pipe RELEASE_MEM (BOTTOM_OF_PIPE_TS, EVENT_INDEX 5; reference §4) writing to memory.
fn release(address: u64, data_sel: DataSel, int_sel: IntSel, data: u64) -> ReleaseMem {
    let event = EventCntl::from_raw(0).with_event_type(EventType::BottomOfPipeTs).with_event_index(5);
    ReleaseMem::new(event, DataCntl::new(DstSel::MemoryController, int_sel, data_sel), address, data).unwrap()
}

#[test]
fn data_writes_timestamps_and_waits_on_every_target() {
    for target in Target::ALL {
        let mut device = SimDevice::new(target);
        let buf = device.allocate(256).unwrap();
        let mut ib = Vec::new();
        emit(&mut ib, &WriteData::memory(buf.va, &[0xDEAD_BEEF, 0x0123_4567]).unwrap());
        emit(&mut ib, &CopyData::timestamp(buf.va + 16).unwrap());
        emit(&mut ib, &CopyData::timestamp(buf.va + 24).unwrap());
        emit(&mut ib, &release(buf.va + 32, DataSel::Data32Low, IntSel::NoInterrupt, 0xAAAA_5555_1234_5678));
        emit(&mut ib, &release(buf.va + 40, DataSel::Data64, IntSel::NoInterrupt, 0xAAAA_5555_1234_5678));
        emit(&mut ib, &release(buf.va + 48, DataSel::GpuClockCounter64, IntSel::NoInterrupt, 0));
        // The word WRITE_DATA stored is there: (0xDEADBEEF & 0xFFFF) == 0xBEEF.
        emit(&mut ib, &WaitRegMem::memory(Function::Equal, buf.va, 0xBEEF, 0xFFFF, 4).unwrap());
        let (memory, result, clock) = run(&device, &ib);
        assert!(result.is_ok(), "{target}: {result:?}");
        assert_eq!(u64_at(&memory, buf.va), 0x0123_4567_DEAD_BEEF, "{target}: WRITE_DATA");
        let (t0, t1, t2) = (u64_at(&memory, buf.va + 16), u64_at(&memory, buf.va + 24), u64_at(&memory, buf.va + 48));
        // The clock is the host's in 10 ns ticks (soft_device::clock): 10 ms after its origin.
        assert!(t0 >= 1_000_000, "{target}: timestamp {t0} is not 10 ms of 100 MHz ticks after the origin");
        assert!(t1 > t0 && t2 > t1, "{target}: timestamps {t0} {t1} {t2} must increase");
        assert_eq!(clock, t2, "{target}: the clock is the last timestamp");
        // DATA_SEL 1 writes the low 32 bits only.
        assert_eq!(u64_at(&memory, buf.va + 32), 0x1234_5678, "{target}: 32-bit RELEASE_MEM");
        assert_eq!(u64_at(&memory, buf.va + 40), 0xAAAA_5555_1234_5678, "{target}: 64-bit RELEASE_MEM");
    }
}

#[test]
fn unsatisfiable_waits_and_interrupts_are_faults() {
    for target in Target::ALL {
        let mut device = SimDevice::new(target);
        let buf = device.allocate(256).unwrap();
        let mut ib = Vec::new();
        emit(&mut ib, &WaitRegMem::memory(Function::Equal, buf.va, 1, 0xFFFF_FFFF, 4).unwrap());
        let (_, result, _) = run(&device, &ib);
        assert!(matches!(result, Err(CpFaultKind::WaitNeverSatisfied { .. })), "{target}: {result:?}");

        let mut ib = Vec::new();
        emit(&mut ib, &release(buf.va, DataSel::Data32Low, IntSel::InterruptAfterWriteConfirm, 7));
        let (_, result, _) = run(&device, &ib);
        assert!(matches!(result, Err(CpFaultKind::Interrupt { .. })), "{target}: {result:?}");
    }
}
