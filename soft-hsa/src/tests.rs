//! The runtime through its exported functions, in process: what Redline's HSA backend does not
//! exercise (reference counting, calls before `hsa_init`, status strings, iteration, copies with
//! unknown pointers, barrier-value packets, inactivation, executables destroyed). The runtime is
//! one per process, so the tests take one lock and balance their `hsa_init`s.

use core::ffi::{CStr, c_char, c_void};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use aql_packets::{AmdBarrierValue, AmdBarrierValuePacket, PacketControl, SignalCondition as AqlCondition};
use hsa_sys::{
    Agent, AgentInfo, AmdMemoryPool, HsaStatus, Queue, QueueType, RedlineInjection, Signal, SignalCondition,
    SystemInfo, WaitState,
};

use crate::abi::{code, ext, memory, queue, signal, system};
use crate::agents::{CPU_AGENT, GPU_AGENT};
use crate::pools::Pool;

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One `hsa_init` reference for the scope.
struct Init;

impl Init {
    fn new() -> Self {
        // SAFETY: no precondition.
        assert_eq!(unsafe { system::hsa_init() }, HsaStatus::SUCCESS);
        Self
    }
}

impl Drop for Init {
    fn drop(&mut self) {
        // SAFETY: balances `new`; the test uses no runtime object afterwards.
        assert_eq!(unsafe { system::hsa_shut_down() }, HsaStatus::SUCCESS);
    }
}

fn allocate(pool: Pool, size: usize) -> *mut c_void {
    let mut ptr = core::ptr::null_mut();
    // SAFETY: `ptr` is a valid out-pointer.
    let status =
        unsafe { memory::hsa_amd_memory_pool_allocate(AmdMemoryPool { handle: pool.handle() }, size, 0, &raw mut ptr) };
    assert_eq!(status, HsaStatus::SUCCESS);
    ptr
}

fn create_signal(initial: i64) -> Signal {
    let mut out = Signal::default();
    // SAFETY: no consumers; `out` is a valid out-pointer.
    assert_eq!(unsafe { signal::hsa_signal_create(initial, 0, core::ptr::null(), &raw mut out) }, HsaStatus::SUCCESS);
    out
}

/// Counts error callbacks and remembers the last status and queue.
static CALLBACKS: AtomicU32 = AtomicU32::new(0);
static LAST_STATUS: AtomicU32 = AtomicU32::new(0);
static LAST_QUEUE: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn on_error(status: HsaStatus, queue: *mut Queue, data: *mut c_void) {
    assert_eq!(data.addr(), 0x5eed, "the callback gets its data back");
    LAST_STATUS.store(status.0, Ordering::SeqCst);
    LAST_QUEUE.store(queue.addr() as u64, Ordering::SeqCst);
    CALLBACKS.fetch_add(1, Ordering::SeqCst);
}

fn create_queue(slots: u32) -> *mut Queue {
    let mut out: *mut Queue = core::ptr::null_mut();
    let data = core::ptr::without_provenance_mut::<c_void>(0x5eed);
    // SAFETY: a callback safe to call from any thread with `data` (it only reads its address);
    // `out` is a valid out-pointer.
    let status = unsafe {
        queue::hsa_queue_create(
            Agent { handle: GPU_AGENT },
            slots,
            QueueType::SINGLE.0,
            Some(on_error),
            data,
            u32::MAX,
            u32::MAX,
            &raw mut out,
        )
    };
    assert_eq!(status, HsaStatus::SUCCESS);
    out
}

/// Publishes `packet` into `queue` and rings its doorbell.
fn submit(q: *mut Queue, packet: &[u8; 64]) -> u64 {
    // SAFETY: a live queue of this runtime.
    let id = unsafe { queue::hsa_queue_add_write_index_scacq_screl(q, 1) };
    // SAFETY: the queue's ring holds `size` 64-byte slots; the slot of `id` is this producer's.
    let slot = unsafe {
        let header = &*q;
        header.base_address.cast::<u8>().add(usize::try_from(id % u64::from(header.size)).unwrap() * 64)
    };
    // SAFETY: the body bytes of the reserved slot, not read before its header is valid.
    unsafe { core::ptr::copy_nonoverlapping(packet[4..].as_ptr(), slot.add(4), 60) };
    // SAFETY: the slot's header word, 4-byte aligned; the processor reads it atomically.
    unsafe { AtomicU32::from_ptr(slot.cast::<u32>()) }
        .store(u32::from_le_bytes(packet[..4].try_into().unwrap()), Ordering::Release);
    // SAFETY: a live queue; its doorbell is a live signal.
    unsafe { signal::hsa_signal_store_screlease((*q).doorbell_signal, i64::try_from(id).unwrap()) };
    id
}

fn wait_eq(s: Signal, value: i64, timeout: Duration) -> i64 {
    let ticks = u64::try_from(timeout.as_nanos()).unwrap() / 10;
    // SAFETY: no precondition.
    unsafe { signal::hsa_signal_wait_scacquire(s, SignalCondition::EQ, value, ticks, WaitState::BLOCKED) }
}

#[test]
fn calls_before_init_fail_and_references_are_counted() {
    let _serial = serial();
    let mut out = 0u64;
    // SAFETY: `out` is a u64, the attribute's type.
    let status = unsafe { system::hsa_system_get_info(SystemInfo::TIMESTAMP_FREQUENCY, (&raw mut out).cast()) };
    assert_eq!(status, HsaStatus::ERROR_NOT_INITIALIZED);
    // SAFETY: no precondition.
    assert_eq!(unsafe { system::hsa_shut_down() }, HsaStatus::ERROR_NOT_INITIALIZED);
    // SAFETY: no precondition.
    assert_eq!(unsafe { ext::redline_soft_hsa_inject(1, 0) }, HsaStatus::ERROR_NOT_INITIALIZED);
    {
        let _outer = Init::new();
        let _inner = Init::new();
    }
    // SAFETY: `out` is a u64, the attribute's type.
    let status = unsafe { system::hsa_system_get_info(SystemInfo::TIMESTAMP_FREQUENCY, (&raw mut out).cast()) };
    assert_eq!(status, HsaStatus::ERROR_NOT_INITIALIZED, "both references were dropped");
}

#[test]
fn status_strings_work_before_init() {
    let _serial = serial();
    let mut text: *const c_char = core::ptr::null();
    // SAFETY: `text` is a valid out-pointer.
    assert_eq!(unsafe { system::hsa_status_string(HsaStatus::ERROR_INVALID_QUEUE, &raw mut text) }, HsaStatus::SUCCESS);
    // SAFETY: the runtime points at a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(text) }.to_str().unwrap();
    assert_eq!(text, "HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.");
    let mut unused: *const c_char = core::ptr::null();
    // SAFETY: `unused` is a valid out-pointer.
    let status = unsafe { system::hsa_status_string(HsaStatus(0x7777), &raw mut unused) };
    assert_eq!(status, HsaStatus::ERROR_INVALID_ARGUMENT);
}

unsafe extern "C" fn count_agents(agent: Agent, data: *mut c_void) -> HsaStatus {
    // SAFETY: the test passes a `Vec<u64>` as `data`.
    let seen = unsafe { &mut *data.cast::<Vec<u64>>() };
    seen.push(agent.handle);
    if agent.handle == CPU_AGENT { HsaStatus::INFO_BREAK } else { HsaStatus::SUCCESS }
}

#[test]
fn agents_iterate_cpu_first_and_a_callback_can_break() {
    let _serial = serial();
    let _init = Init::new();
    let mut seen: Vec<u64> = Vec::new();
    // SAFETY: the callback only pushes into `seen`, which outlives the iteration.
    let status = unsafe { system::hsa_iterate_agents(Some(count_agents), (&raw mut seen).cast()) };
    assert_eq!((status, seen.as_slice()), (HsaStatus::INFO_BREAK, &[CPU_AGENT][..]));
    let mut device = 7u32;
    // SAFETY: DEVICE is a 4-byte enum.
    let status =
        unsafe { system::hsa_agent_get_info(Agent { handle: GPU_AGENT }, AgentInfo::DEVICE, (&raw mut device).cast()) };
    assert_eq!((status, device), (HsaStatus::SUCCESS, 1));
    let (mut t0, mut t1) = (0u64, 0u64);
    // SAFETY: TIMESTAMP is a u64.
    unsafe {
        system::hsa_system_get_info(SystemInfo::TIMESTAMP, (&raw mut t0).cast());
        std::thread::sleep(Duration::from_millis(2));
        system::hsa_system_get_info(SystemInfo::TIMESTAMP, (&raw mut t1).cast());
    }
    assert!(t1 >= t0 + 100_000, "2 ms are at least 200000 ticks of 10 ns: {t0} {t1}");
}

#[test]
fn copies_reach_device_memory_and_refuse_unknown_pointers() {
    let _serial = serial();
    let _init = Init::new();
    let device = allocate(Pool::Device(0), 64);
    let host = allocate(Pool::System, 64).cast::<u8>();
    // SAFETY: 64 bytes of live system memory, directly addressable by the host.
    unsafe { core::ptr::copy_nonoverlapping([7u8; 64].as_ptr(), host, 64) };
    // SAFETY: both are live allocations of 64 bytes.
    assert_eq!(unsafe { memory::hsa_memory_copy(device, host.cast(), 64) }, HsaStatus::SUCCESS);
    let back = allocate(Pool::Kernarg, 64).cast::<u8>();
    // SAFETY: as above.
    assert_eq!(unsafe { memory::hsa_memory_copy(back.cast(), device, 64) }, HsaStatus::SUCCESS);
    // SAFETY: 64 bytes of live kernarg memory.
    assert_eq!(unsafe { core::slice::from_raw_parts(back, 64) }, &[7u8; 64]);
    let stack = [0u8; 64];
    // SAFETY: the runtime only compares the pointer with its tables before refusing.
    let status = unsafe { memory::hsa_memory_copy(device, stack.as_ptr().cast(), 64) };
    assert_eq!(status, HsaStatus::ERROR_INVALID_ARGUMENT, "host memory the runtime did not allocate");
    // SAFETY: as above: the range runs past the allocation.
    assert_eq!(unsafe { memory::hsa_memory_copy(device, host.cast(), 65) }, HsaStatus::ERROR_INVALID_ARGUMENT);
    // SAFETY: three live allocations, unused from here on; the second free of `device` is refused.
    unsafe {
        assert_eq!(memory::hsa_amd_memory_pool_free(device), HsaStatus::SUCCESS);
        assert_eq!(memory::hsa_amd_memory_pool_free(device), HsaStatus::ERROR_INVALID_ALLOCATION);
        memory::hsa_amd_memory_pool_free(host.cast());
        memory::hsa_amd_memory_pool_free(back.cast());
    }
    // SAFETY: only compared with the runtime's tables.
    assert_eq!(unsafe { ext::redline_soft_hsa_inject(9, 0) }, HsaStatus::ERROR_INVALID_ARGUMENT);
    // SAFETY: only compared with the runtime's tables.
    let status = unsafe { ext::redline_soft_hsa_inject(RedlineInjection::ALLOCATION.0, 5) };
    assert_eq!(status, HsaStatus::ERROR_INVALID_MEMORY_POOL);
}

#[test]
fn barrier_value_packets_wait_and_inactivation_stops_a_queue() {
    let _serial = serial();
    let _init = Init::new();
    let q = create_queue(64);
    let (gate, done) = (create_signal(5), create_signal(1));
    let barrier = AmdBarrierValue {
        control: PacketControl::SYSTEM_BARRIER,
        signal: gate.handle,
        value: 0x10,
        mask: 0xf0,
        cond: AqlCondition::Eq,
        completion_signal: done.handle,
    };
    submit(q, AmdBarrierValuePacket::new(&barrier).as_array());
    assert_eq!(wait_eq(done, 0, Duration::from_millis(30)), 1, "(5 & 0xf0) != 0x10: the packet waits");
    // SAFETY: no precondition.
    unsafe { signal::hsa_signal_store_relaxed(gate, 0x1f) };
    assert_eq!(wait_eq(done, 0, Duration::from_secs(10)), 0);

    // Inactivated, the queue takes nothing more and no callback runs.
    let before = CALLBACKS.load(Ordering::SeqCst);
    // SAFETY: a live queue.
    assert_eq!(unsafe { queue::hsa_queue_inactivate(q) }, HsaStatus::SUCCESS);
    let again = create_signal(1);
    let barrier = AmdBarrierValue { signal: gate.handle, completion_signal: again.handle, ..barrier };
    let id = submit(q, AmdBarrierValuePacket::new(&barrier).as_array());
    assert_eq!(wait_eq(again, 0, Duration::from_millis(30)), 1);
    // SAFETY: a live queue.
    assert_eq!(unsafe { queue::hsa_queue_load_read_index_scacquire(q) }, id);
    assert_eq!(CALLBACKS.load(Ordering::SeqCst), before);
    // SAFETY: a live queue, unused afterwards; the second destroy is refused.
    unsafe {
        assert_eq!(queue::hsa_queue_destroy(q), HsaStatus::SUCCESS);
        assert_eq!(queue::hsa_queue_destroy(q), HsaStatus::ERROR_INVALID_QUEUE);
    }
}

#[test]
fn a_fault_calls_the_error_callback_with_the_queue() {
    let _serial = serial();
    let _init = Init::new();
    let q = create_queue(64);
    let before = CALLBACKS.load(Ordering::SeqCst);
    let packet = *AmdBarrierValuePacket::new(&AmdBarrierValue {
        control: PacketControl::SYSTEM_BARRIER,
        signal: 0x1234,
        value: 0,
        mask: 0,
        cond: AqlCondition::Eq,
        completion_signal: 0,
    })
    .as_array();
    // An unknown signal: the barrier-value packet names no live signal.
    submit(q, &packet);
    let deadline = Instant::now() + Duration::from_secs(10);
    while CALLBACKS.load(Ordering::SeqCst) == before {
        assert!(Instant::now() < deadline, "no error callback");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(HsaStatus(LAST_STATUS.load(Ordering::SeqCst)), HsaStatus::ERROR_INVALID_SIGNAL);
    assert_eq!(LAST_QUEUE.load(Ordering::SeqCst), q.addr() as u64);
    // SAFETY: a live queue, unused afterwards.
    assert_eq!(unsafe { queue::hsa_queue_destroy(q) }, HsaStatus::SUCCESS);
}

#[test]
fn destroying_an_executable_keeps_the_others_kernels() {
    let _serial = serial();
    let _init = Init::new();
    let gpu = Agent { handle: GPU_AGENT };
    let load = |module: &str| {
        let bytes = kernels::artifact(&format!("gfx1100/{module}.co")).unwrap().bytes;
        let (mut reader, mut exe) = (hsa_sys::CodeObjectReader::default(), hsa_sys::Executable::default());
        // SAFETY: `bytes` is readable for its length; the out-pointers are valid; null options.
        unsafe {
            assert_eq!(
                code::hsa_code_object_reader_create_from_memory(bytes.as_ptr().cast(), bytes.len(), &raw mut reader),
                HsaStatus::SUCCESS
            );
            assert_eq!(
                code::hsa_executable_create_alt(
                    hsa_sys::Profile::FULL,
                    hsa_sys::DefaultFloatRoundingMode::DEFAULT,
                    core::ptr::null(),
                    &raw mut exe
                ),
                HsaStatus::SUCCESS
            );
            assert_eq!(
                code::hsa_executable_load_agent_code_object(exe, gpu, reader, core::ptr::null(), core::ptr::null_mut()),
                HsaStatus::SUCCESS
            );
            assert_eq!(code::hsa_executable_freeze(exe, core::ptr::null()), HsaStatus::SUCCESS);
            assert_eq!(code::hsa_executable_freeze(exe, core::ptr::null()), HsaStatus::ERROR_FROZEN_EXECUTABLE);
            assert_eq!(code::hsa_code_object_reader_destroy(reader), HsaStatus::SUCCESS);
        }
        exe
    };
    let kernel_object = |exe: hsa_sys::Executable, name: &CStr| {
        let mut symbol = hsa_sys::ExecutableSymbol::default();
        let mut kd = 0u64;
        // SAFETY: a NUL-terminated name, a valid agent and out-pointers; KERNEL_OBJECT is a u64.
        unsafe {
            let status = code::hsa_executable_get_symbol_by_name(exe, name.as_ptr(), &raw const gpu, &raw mut symbol);
            if status != HsaStatus::SUCCESS {
                return Err(status);
            }
            code::hsa_executable_symbol_get_info(
                symbol,
                hsa_sys::ExecutableSymbolInfo::KERNEL_OBJECT,
                (&raw mut kd).cast(),
            );
        }
        Ok(kd)
    };
    let fill = load("fill");
    let axpy = load("axpy");
    let fill_kd = kernel_object(fill, c"fill.kd").unwrap();
    assert_eq!(kernel_object(fill, c"fill"), Err(HsaStatus::ERROR_INVALID_SYMBOL_NAME), "kernels are named NAME.kd");
    // SAFETY: no queue runs the executable's kernels.
    assert_eq!(unsafe { code::hsa_executable_destroy(fill) }, HsaStatus::SUCCESS);
    assert_eq!(kernel_object(fill, c"fill.kd"), Err(HsaStatus::ERROR_INVALID_EXECUTABLE));
    let axpy_kd = kernel_object(axpy, c"axpy.kd").unwrap();
    let runtime = crate::runtime::current().unwrap();
    let core = runtime.core();
    assert!(core.kernels.by_kd(fill_kd).is_none(), "the destroyed executable's kernel is gone");
    assert!(core.kernels.by_kd(axpy_kd).is_some(), "the other executable's kernel stays");
    drop(core);
    // SAFETY: as above.
    assert_eq!(unsafe { code::hsa_executable_destroy(axpy) }, HsaStatus::SUCCESS);
}

#[test]
fn an_idle_processor_polls_its_doorbell_then_sleeps_on_it_and_either_way_runs_the_next_packet() {
    use crate::queue::DOORBELL_POLL_WINDOW;

    let _serial = serial();
    let _init = Init::new();
    let q = create_queue(64);
    let (gate, done) = (create_signal(0), create_signal(1));
    let barrier = AmdBarrierValue {
        control: PacketControl::SYSTEM_BARRIER,
        signal: gate.handle,
        value: 0,
        mask: 0,
        cond: AqlCondition::Eq,
        completion_signal: done.handle,
    };
    // SAFETY: a live queue; its descriptor's doorbell field never changes.
    let doorbell = unsafe { (*q).doorbell_signal };
    let cell = crate::runtime::with_current(|runtime| runtime.signals.get(doorbell.handle)).unwrap().unwrap();
    let run_one = || {
        // SAFETY: no precondition.
        unsafe { signal::hsa_signal_store_relaxed(done, 1) };
        submit(q, AmdBarrierValuePacket::new(&barrier).as_array());
        assert_eq!(wait_eq(done, 0, Duration::from_secs(10)), 0);
    };
    run_one();
    // Within the window the processor polls: nobody sleeps on the doorbell, so ringing it takes
    // one store and no wake-up.
    let after = Instant::now();
    assert_eq!(cell.sleepers(), 0, "a polling processor does not sleep on its doorbell");
    run_one();
    assert!(after.elapsed() < DOORBELL_POLL_WINDOW, "the second packet ran within the window");
    // After the window it sleeps on the doorbell, and the doorbell wakes it.
    let deadline = Instant::now() + DOORBELL_POLL_WINDOW * 10;
    while cell.sleepers() == 0 {
        assert!(Instant::now() < deadline, "the idle processor never went to sleep on its doorbell");
        std::thread::sleep(Duration::from_millis(20));
    }
    run_one();
    // SAFETY: a live queue, unused afterwards.
    assert_eq!(unsafe { queue::hsa_queue_destroy(q) }, HsaStatus::SUCCESS);
}

/// The crate documentation's list of entry points is the function table `hsa-sys` loads (every
/// one of which the library must export for the load to succeed) and Redline's extension.
#[test]
fn the_documented_entry_points_are_the_table() {
    let docs = include_str!("lib.rs");
    let start = docs.find("//! # Entry points").unwrap();
    let end = docs.find("//! # Departures from ROCr").unwrap();
    let listed: std::collections::BTreeSet<&str> = docs[start..end]
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
        .filter(|name| name.starts_with("hsa_") || name.starts_with("redline_"))
        .collect();
    let table: std::collections::BTreeSet<&str> =
        hsa_sys::HsaFns::SYMBOLS.iter().chain(hsa_sys::HsaExtFns::SYMBOLS).copied().collect();
    assert_eq!(listed, table);
    assert_eq!(hsa_sys::HsaFns::SYMBOLS.len(), 37, "the documentation says 37");
}

/// The kernel-trace extension's operations: nothing kept until BEGIN; TAKE reports the text's
/// length without writing when the buffer is short, and hands it over (and stops keeping) when
/// it fits; an unknown operation changes nothing.
#[test]
fn the_kernel_trace_extension_hands_over_what_it_kept_once() {
    use tape_core::census::trace::header_line;
    let take = |buffer: &mut [u8]| {
        // SAFETY: `buffer` holds `buffer.len()` bytes.
        unsafe {
            ext::redline_soft_hsa_kernel_trace(
                hsa_sys::RedlineTraceOperation::TAKE.0,
                buffer.as_mut_ptr(),
                buffer.len(),
            )
        }
    };
    // Every test that runs packets holds the runtime's lock, so none adds a row meanwhile.
    let _serial = serial();
    crate::queue::kept_trace::end();
    assert_eq!(take(&mut []), usize::MAX, "nothing is kept before BEGIN");
    // SAFETY: BEGIN and an unknown operation read no buffer.
    assert_eq!(unsafe { ext::redline_soft_hsa_kernel_trace(9, std::ptr::null_mut(), 0) }, usize::MAX);
    assert_eq!(
        // SAFETY: as above.
        unsafe { ext::redline_soft_hsa_kernel_trace(hsa_sys::RedlineTraceOperation::BEGIN.0, std::ptr::null_mut(), 0) },
        0
    );
    let header = header_line();
    assert_eq!(take(&mut []), header.len(), "the length, nothing written");
    let mut short = vec![0u8; header.len() - 1];
    assert_eq!(take(&mut short), header.len());
    assert!(short.iter().all(|&b| b == 0), "a short buffer is not written");
    let mut buffer = vec![0u8; header.len() + 16];
    assert_eq!(take(&mut buffer), header.len());
    assert_eq!(&buffer[..header.len()], header.as_bytes());
    assert_eq!(take(&mut buffer), usize::MAX, "handed over once: no longer kept");
}
