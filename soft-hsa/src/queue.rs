//! User-mode AQL queues and their packet processors.
//!
//! A queue is an `amd_queue_t` descriptor (whose first field is the `hsa_queue_t` the program
//! receives) and a ring of 64-byte slots, both host memory the program writes directly, plus a
//! doorbell signal and a packet-processor thread. The program reserves slots with the write
//! index, publishes packets (header last, with release) and stores the id of the last packet it
//! released into the doorbell.
//!
//! An idle processor polls its doorbell, every [`DOORBELL_POLL`], for [`DOORBELL_POLL_WINDOW`]
//! after its last packet, as a command processor notices a doorbell write without the host
//! doing more than the store: a doorbell rung meanwhile costs the program one atomic store.
//! After the window it sleeps on the doorbell signal, and the doorbell store that finds it
//! asleep wakes it (a futex call on the program's thread). It takes the packet at the read index once the
//! doorbell has released it (doorbell value >= its id) and its header is valid (acquire load):
//! it copies the packet, resets the slot's header to `INVALID`, advances the read index (release)
//! and runs the packet on the soft device through its packet processor (`soft_device::aql`) and a
//! PM4 command processor of the target's family (one per queue: its register file persists across
//! the queue's IBs, as the hardware's does). Barrier-AND/OR and barrier-value packets first wait
//! until their condition holds, as a GPU's packet processor does (another queue or the program may
//! satisfy it), then run. Packets run one at a time, in order; the processor holds the soft
//! device's lock only while one runs.
//!
//! A packet that fails (a decoding error, a check of the soft device, a kernel's fault)
//! inactivates the queue: the processor stops and calls the queue's error callback with the
//! status [`fault_status`] gives, as ROCr does. Ringing the doorbell returns at once; nothing the
//! program does waits for the processor except its own signal waits.

#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use aql_packets::{AqlPacket, INVALID_HEADER_WORD, PACKET_SIZE, PacketType};
use hal::{DeviceFault, LaunchError, Pm4Error, QueueFault};
use hsa_sys::{AmdQueue, HsaStatus, Queue, QueueFeature, QueueType};
use pm4_encoding::Target;
use soft_device::SoftFault;
use soft_device::aql::{ProcessReport, decode_fault, execute};
use soft_device::cp::CommandProcessor;
use soft_device::loader::SoftKernels;
use soft_device::memory::SimMemory;
use soft_device::trace::TraceSite;

use crate::abi::host::HostBlock;
use crate::agents::{QUEUE_SLOTS_MAX, QUEUE_SLOTS_MIN, QUEUES_MAX};
use crate::lock;
use crate::runtime::Runtime;
use crate::signals::{SharedSignals, SignalCell};

/// How long a processor polls a released slot whose header is still `INVALID` (the producer is
/// between reserving the index and publishing the header).
pub(crate) const HEADER_POLL: Duration = Duration::from_micros(50);
/// How often an idle processor polls its doorbell within [`DOORBELL_POLL_WINDOW`].
pub(crate) const DOORBELL_POLL: Duration = Duration::from_micros(50);
/// How long after its last packet an idle processor polls its doorbell before it sleeps on it:
/// longer than the time between two tokens of a decoding server (milliseconds to a few tens of
/// them), so that a serving queue's doorbell never pays for a wake-up; short enough that an idle
/// queue costs nothing for long (about 20,000 short sleeps in the window).
pub(crate) const DOORBELL_POLL_WINDOW: Duration = Duration::from_secs(1);
/// Longest sleep of an idle processor before it re-checks its state.
pub(crate) const IDLE_SLICE: Duration = Duration::from_millis(100);
/// Longest sleep of a processor at an unsatisfied barrier before it re-evaluates it.
pub(crate) const BARRIER_SLICE: Duration = Duration::from_millis(10);
/// `amd_queue_properties_t`: `AMD_QUEUE_PROPERTIES_IS_PTR64` (bit 1).
const QUEUE_PROPERTIES_IS_PTR64: u32 = 1 << 1;

/// Queue ids: unique over the life of the process (hsa.h).
static NEXT_QUEUE_ID: AtomicU64 = AtomicU64::new(1);

/// The error callback of a queue, as the processor calls it: the status of the fault and the
/// queue's `hsa_queue_t` address.
pub(crate) type ErrorCallback = Box<dyn Fn(HsaStatus, u64) + Send + Sync>;

/// A queue as both the program's calls and the processor thread see it.
pub(crate) struct QueueShared {
    /// The `hsa_queue_t::id`.
    pub(crate) id: u64,
    /// The target of the GPU agent the queue was created on (its command processor's family).
    target: Target,
    /// The agent's index in `hsa_iterate_agents` order (the CPU agent is 0), as the kernel trace
    /// names it (`Agent N`).
    trace_agent: u32,
    descriptor: HostBlock,
    ring: HostBlock,
    slots: u32,
    doorbell: Arc<SignalCell>,
    /// The doorbell signal's handle.
    pub(crate) doorbell_handle: u64,
    active: AtomicBool,
    inject_fault: AtomicBool,
    hang: AtomicBool,
    on_error: Option<ErrorCallback>,
}

impl std::fmt::Debug for QueueShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueShared")
            .field("id", &self.id)
            .field("address", &format_args!("{:#x}", self.address()))
            .field("slots", &self.slots)
            .field("active", &self.is_active())
            .finish_non_exhaustive()
    }
}

impl QueueShared {
    /// The `hsa_queue_t*` the program holds: the descriptor's first byte.
    pub(crate) fn address(&self) -> u64 {
        self.descriptor.addr()
    }

    /// The descriptor, as the pointer `hsa_queue_create` returns.
    pub(crate) fn descriptor_ptr(&self) -> *mut Queue {
        self.descriptor.as_mut_ptr().cast()
    }

    fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Stops the processor: it takes no more packets (one that runs finishes).
    pub(crate) fn inactivate(&self) {
        // ORDERING: release, paired with the processor's acquire loads of `active`; the
        // notification after it wakes a processor asleep on the doorbell to see it.
        self.active.store(false, Ordering::Release);
        self.doorbell.notify();
    }

    fn read_index(&self) -> u64 {
        // Only the processor stores the read index, so its own relaxed load is exact.
        self.descriptor.load_u64(core::mem::offset_of!(AmdQueue, read_dispatch_id), Ordering::Relaxed)
    }

    fn slot_offset(&self, packet_id: u64) -> usize {
        // CAST: the remainder is below `slots` (a u32).
        usize::try_from(packet_id % u64::from(self.slots)).unwrap_or(0) * PACKET_SIZE
    }

    /// Whether the doorbell has released packet `packet_id`.
    fn released(doorbell: i64, packet_id: u64) -> bool {
        u64::try_from(doorbell).is_ok_and(|last| last >= packet_id)
    }

    /// Takes the packet at `packet_id` if its header is valid: copies it, resets the slot and
    /// advances the read index past it.
    fn take(&self, packet_id: u64) -> Option<[u8; PACKET_SIZE]> {
        let offset = self.slot_offset(packet_id);
        // ORDERING: acquire, pairing with the producer's release store of the header word: the
        // body read below is the one written before it.
        let word = self.ring.load_u32(offset, Ordering::Acquire);
        let header = u16::try_from(word & 0xffff).unwrap_or(0);
        if aql_packets::header::raw_packet_type(header) == PacketType::Invalid.to_u8() {
            return None;
        }
        let mut packet = [0u8; PACKET_SIZE];
        packet[..4].copy_from_slice(&word.to_le_bytes());
        self.ring.read_bytes(offset + 4, &mut packet[4..]);
        self.ring.store_u32(offset, INVALID_HEADER_WORD, Ordering::Relaxed);
        // ORDERING: release, after the slot's reset: a producer that sees the new read index
        // (acquire) may reuse the slot and finds it INVALID.
        let read = core::mem::offset_of!(AmdQueue, read_dispatch_id);
        self.descriptor.store_u64(read, packet_id + 1, Ordering::Release);
        Some(packet)
    }

    /// Inactivates the queue after `fault` and calls the error callback.
    fn fail(&self, runtime: &Runtime, packet_id: u64, fault: &QueueFault) {
        let status = fault_status(fault);
        // ORDERING: release, before the callback: a program thread that learns of the fault from
        // the callback and then calls the runtime sees the queue inactive.
        self.active.store(false, Ordering::Release);
        if runtime.log_faults {
            eprintln!("soft-hsa: queue {} faulted at packet {packet_id}: {fault}; reporting {status}", self.id);
        }
        if let Some(callback) = &self.on_error {
            callback(status, self.address());
        }
    }
}

/// A live queue in the runtime's table.
#[derive(Debug)]
pub(crate) struct QueueEntry {
    /// The queue.
    pub(crate) shared: Arc<QueueShared>,
    thread: Option<JoinHandle<()>>,
}

impl QueueEntry {
    /// Stops the processor and waits for it (unless this is the processor's own thread, in a
    /// program callback), then destroys the doorbell signal.
    fn stop(mut self, runtime: &Runtime) {
        self.shared.inactivate();
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            // A processor that panicked has stopped all the same.
            let _ = thread.join();
        }
        let _ = runtime.signals.destroy(self.shared.doorbell_handle);
    }
}

/// The status the error callback receives for `fault`.
pub(crate) fn fault_status(fault: &QueueFault) -> HsaStatus {
    match fault {
        QueueFault::InvalidPacketType { .. }
        | QueueFault::InvalidFenceScope { .. }
        | QueueFault::ReservedHeaderBits { .. }
        | QueueFault::InvalidDimensions { .. }
        | QueueFault::ReservedSetupBits { .. }
        | QueueFault::UnsupportedVendorFormat { .. }
        | QueueFault::InvalidPacket { .. }
        | QueueFault::UnsupportedPacket { .. } => HsaStatus::ERROR_INVALID_PACKET_FORMAT,
        QueueFault::UnknownSignal { .. } => HsaStatus::ERROR_INVALID_SIGNAL,
        QueueFault::Ring { .. } | QueueFault::Dispatch { source: LaunchError::KernargFault { .. }, .. } => {
            HsaStatus::ERROR_MEMORY_FAULT
        }
        _ => HsaStatus::ERROR_EXCEPTION,
    }
}

/// `hsa_queue_create` on a GPU agent: a queue of `slots` packets, active, indices 0, every slot
/// `INVALID`, with its processor thread started.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_AGENT` for another agent, `..._INVALID_ARGUMENT` for a size that is
/// not a power of two in `[QUEUE_SLOTS_MIN, QUEUE_SLOTS_MAX]`, `..._INVALID_QUEUE_CREATION` for a
/// queue type other than single or multiple producers, `..._OUT_OF_RESOURCES` at [`QUEUES_MAX`]
/// or when memory or a thread cannot be had.
pub(crate) fn create(
    runtime: &Arc<Runtime>,
    agent: u64,
    slots: u32,
    queue_type: u32,
    on_error: Option<ErrorCallback>,
) -> Result<Arc<QueueShared>, HsaStatus> {
    let (gpu_index, target) = runtime.agents.gpu(agent).ok_or(HsaStatus::ERROR_INVALID_AGENT)?;
    let trace_agent = u32::try_from(gpu_index + 1).unwrap_or(u32::MAX);
    if !slots.is_power_of_two() || !(QUEUE_SLOTS_MIN..=QUEUE_SLOTS_MAX).contains(&slots) {
        return Err(HsaStatus::ERROR_INVALID_ARGUMENT);
    }
    if queue_type != QueueType::MULTI.0 && queue_type != QueueType::SINGLE.0 {
        return Err(HsaStatus::ERROR_INVALID_QUEUE_CREATION);
    }
    if lock(&runtime.queues).len() >= usize::try_from(QUEUES_MAX).unwrap_or(usize::MAX) {
        return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
    }
    let ring_bytes = usize::try_from(slots).map_err(|_| HsaStatus::ERROR_INVALID_ARGUMENT)? * PACKET_SIZE;
    let ring = HostBlock::new(ring_bytes, 4096).ok_or(HsaStatus::ERROR_OUT_OF_RESOURCES)?;
    let descriptor = HostBlock::new(size_of::<AmdQueue>(), hsa_sys::AMD_QUEUE_ALIGN_BYTES)
        .ok_or(HsaStatus::ERROR_OUT_OF_RESOURCES)?;
    for slot in 0..usize::try_from(slots).unwrap_or(0) {
        ring.store_u32(slot * PACKET_SIZE, INVALID_HEADER_WORD, Ordering::Relaxed);
    }
    // The doorbell releases nothing until the program stores a packet id into it.
    let (doorbell_handle, doorbell) = runtime.signals.create(-1)?;
    let id = NEXT_QUEUE_ID.fetch_add(1, Ordering::Relaxed);
    fill_descriptor(&descriptor, queue_type, ring.addr(), doorbell_handle, slots, id);
    let shared = Arc::new(QueueShared {
        id,
        target,
        trace_agent,
        descriptor,
        ring,
        slots,
        doorbell,
        doorbell_handle,
        active: AtomicBool::new(true),
        inject_fault: AtomicBool::new(false),
        hang: AtomicBool::new(false),
        on_error,
    });
    let (thread_runtime, thread_queue) = (Arc::clone(runtime), Arc::clone(&shared));
    let spawned = std::thread::Builder::new()
        .name(format!("soft-hsa-queue-{id}"))
        .spawn(move || process(&thread_runtime, &thread_queue));
    let Ok(thread) = spawned else {
        let _ = runtime.signals.destroy(doorbell_handle);
        return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
    };
    let entry = QueueEntry { shared: Arc::clone(&shared), thread: Some(thread) };
    lock(&runtime.queues).insert(shared.address(), entry);
    Ok(shared)
}

/// Lays the `amd_queue_t` out as `amd_hsa_queue.h` says (everything else stays 0).
fn fill_descriptor(descriptor: &HostBlock, queue_type: u32, ring: u64, doorbell: u64, slots: u32, id: u64) {
    use core::mem::offset_of;
    let relaxed = Ordering::Relaxed;
    descriptor.store_u32(offset_of!(Queue, queue_type), queue_type, relaxed);
    descriptor.store_u32(offset_of!(Queue, features), QueueFeature::KERNEL_DISPATCH.0, relaxed);
    descriptor.store_u64(offset_of!(Queue, base_address), ring, relaxed);
    descriptor.store_u64(offset_of!(Queue, doorbell_signal), doorbell, relaxed);
    descriptor.store_u32(offset_of!(Queue, size), slots, relaxed);
    descriptor.store_u64(offset_of!(Queue, id), id, relaxed);
    let read = offset_of!(AmdQueue, read_dispatch_id);
    let read_offset = u32::try_from(read).unwrap_or(u32::MAX);
    descriptor.store_u32(offset_of!(AmdQueue, read_dispatch_id_field_base_byte_offset), read_offset, relaxed);
    descriptor.store_u32(offset_of!(AmdQueue, queue_properties), QUEUE_PROPERTIES_IS_PTR64, relaxed);
}

/// The live queue whose `hsa_queue_t` is at `address`.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_QUEUE`.
pub(crate) fn find(runtime: &Runtime, address: u64) -> Result<Arc<QueueShared>, HsaStatus> {
    lock(&runtime.queues).get(&address).map(|e| Arc::clone(&e.shared)).ok_or(HsaStatus::ERROR_INVALID_QUEUE)
}

/// `hsa_queue_destroy`: stops the processor (packets not yet taken are dropped) and frees the
/// queue.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_QUEUE`.
pub(crate) fn destroy(runtime: &Runtime, address: u64) -> Result<(), HsaStatus> {
    let entry = lock(&runtime.queues).remove(&address).ok_or(HsaStatus::ERROR_INVALID_QUEUE)?;
    entry.stop(runtime);
    Ok(())
}

/// Destroys every queue (at shutdown).
pub(crate) fn destroy_all(runtime: &Runtime) {
    let entries = std::mem::take(&mut *lock(&runtime.queues));
    for entry in entries.into_values() {
        entry.stop(runtime);
    }
}

/// Arms an injected fault on a queue: the next packet it takes faults (`hang` false), or it takes
/// no more packets (`hang` true).
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_QUEUE`.
pub(crate) fn arm(runtime: &Runtime, address: u64, hang: bool) -> Result<(), HsaStatus> {
    let queue = find(runtime, address)?;
    // ORDERING: release, before the doorbell that the caller rings next (itself a release the
    // processor acquires): the processor sees the armed fault before that doorbell's packets.
    if hang {
        queue.hang.store(true, Ordering::Release);
        queue.doorbell.notify();
    } else {
        queue.inject_fault.store(true, Ordering::Release);
    }
    Ok(())
}

/// The processor thread: takes released packets in order until the queue is inactive.
fn process(runtime: &Runtime, queue: &QueueShared) {
    let mut cp = CommandProcessor::new(queue.target.family());
    let mut last_packet = Instant::now();
    while queue.is_active() {
        let read = queue.read_index();
        // TIMEOUT: an idle processor sleeps at most IDLE_SLICE at a time (a doorbell or an
        // inactivation wakes it earlier), so it never waits unboundedly on a lost wake-up.
        let idle_until = Some(Instant::now() + IDLE_SLICE);
        if queue.hang.load(Ordering::Acquire) {
            queue.doorbell.wait_until(idle_until, |_| !queue.is_active());
            continue;
        }
        if !QueueShared::released(queue.doorbell.load(Ordering::Acquire), read) {
            if last_packet.elapsed() < DOORBELL_POLL_WINDOW {
                // TIMEOUT: one poll; the loop re-checks the doorbell and inactivation after it.
                std::thread::sleep(DOORBELL_POLL);
            } else {
                queue.doorbell.wait_until(idle_until, |value| QueueShared::released(value, read) || !queue.is_active());
            }
            continue;
        }
        let Some(packet) = queue.take(read) else {
            // TIMEOUT: none: a released slot whose header never becomes valid stalls the queue,
            // as it stalls a GPU's packet processor; the loop re-checks inactivation every poll.
            std::thread::sleep(HEADER_POLL);
            continue;
        };
        if let Err(fault) = run_packet(runtime, queue, &mut cp, read, &packet) {
            queue.fail(runtime, read, &fault);
            return;
        }
        last_packet = Instant::now();
    }
}

/// Runs one taken packet to completion (its completion signal decremented).
fn run_packet(
    runtime: &Runtime,
    queue: &QueueShared,
    cp: &mut CommandProcessor,
    packet_id: u64,
    bytes: &[u8; PACKET_SIZE],
) -> Result<(), QueueFault> {
    if queue.inject_fault.swap(false, Ordering::AcqRel) {
        return Err(QueueFault::Device { packet_id, fault: DeviceFault::new(SoftFault::Injected) });
    }
    let packet = aql_packets::decode(bytes).map_err(|e| decode_fault(packet_id, e))?;
    if !wait_for_dependencies(runtime, queue, &packet) {
        // Inactivated while waiting: the packet is dropped, as the queue's others are.
        return Ok(());
    }
    let mut core = runtime.core();
    let core = &mut *core;
    let clock = &mut core.clock;
    let mut pm4 = |memory: &mut SimMemory, kernels: &SoftKernels, ib_va: u64, size_dwords: u32| {
        cp.execute_ib(memory, kernels, ib_va, size_dwords, clock).map(drop).map_err(|f| Box::new(f) as Pm4Error)
    };
    let mut signals = SharedSignals(&runtime.signals);
    // A kept row is added before the packet's completion signal moves, so a host that waited
    // for the dispatch finds its row.
    let sink: fn(tape_core::census::trace::TraceRow) = kept_trace::push;
    let mut report = ProcessReport { trace_sink: kept_trace::keeping().then_some(sink), ..ProcessReport::default() };
    let site = TraceSite { agent: queue.trace_agent, queue_id: queue.id };
    execute::packet(site, packet_id, &packet, &mut core.memory, &core.kernels, &mut signals, &mut pm4, &mut report)
}

/// The kernel trace kept in memory for the extension `redline_soft_hsa_kernel_trace`: every
/// queue's packet processor appends the rows of the dispatches it ran while one is kept.
pub(crate) mod kept_trace {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, PoisonError};

    use tape_core::census::trace::{TraceRow, header_line};

    static KEEPING: AtomicBool = AtomicBool::new(false);
    static ROWS: Mutex<Vec<TraceRow>> = Mutex::new(Vec::new());

    fn rows() -> std::sync::MutexGuard<'static, Vec<TraceRow>> {
        ROWS.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a trace is kept.
    pub(crate) fn keeping() -> bool {
        KEEPING.load(Ordering::Acquire)
    }

    /// Starts keeping a trace (over).
    pub(crate) fn begin() {
        let _ = soft_device::trace::origin();
        rows().clear();
        KEEPING.store(true, Ordering::Release);
    }

    /// Stops keeping the trace and drops its rows.
    pub(crate) fn end() {
        KEEPING.store(false, Ordering::Release);
        rows().clear();
    }

    /// Appends the row of a dispatch that ran, numbering it.
    pub(crate) fn push(mut row: TraceRow) {
        if !keeping() {
            return;
        }
        let mut kept = rows();
        // Dispatch ids count the trace's rows from 1, as rocprofv3's do.
        row.dispatch_id = u64::try_from(kept.len()).unwrap_or(u64::MAX).saturating_add(1);
        row.correlation_id = row.dispatch_id;
        kept.push(row);
    }

    /// The kept trace as CSV text, header first; `None` when none is kept.
    pub(crate) fn text() -> Option<String> {
        if !keeping() {
            return None;
        }
        let mut text = header_line();
        for row in rows().iter() {
            row.write_line(&mut text);
        }
        Some(text)
    }
}

/// Waits until the barrier condition of `packet` holds (at once for other packets). Returns
/// `false` when the queue was inactivated meanwhile. A dependency that names no live signal ends
/// the wait: running the packet reports it.
fn wait_for_dependencies(runtime: &Runtime, queue: &QueueShared, packet: &AqlPacket) -> bool {
    loop {
        let Some((cell, seen)) = unsatisfied(runtime, packet) else { return true };
        if !queue.is_active() {
            return false;
        }
        // TIMEOUT: none for the barrier itself (a GPU waits as long as it takes); each sleep
        // ends at a change of the signal or after BARRIER_SLICE, so an inactivation or a change
        // of another dependency is seen within one slice.
        cell.wait_until(Some(Instant::now() + BARRIER_SLICE), |value| value != seen);
    }
}

/// A dependency of `packet` that keeps its condition from holding, with the value it has.
fn unsatisfied(runtime: &Runtime, packet: &AqlPacket) -> Option<(Arc<SignalCell>, i64)> {
    let value_of = |handle: u64| runtime.signals.get(handle).map(|cell| (cell.load(Ordering::Acquire), cell));
    match packet {
        AqlPacket::BarrierAnd(b) | AqlPacket::BarrierOr(b) => {
            let mut first = None;
            for &handle in b.dep_signal.iter().filter(|&&h| h != 0) {
                // An unknown signal: let the packet processor report it.
                let (value, cell) = value_of(handle)?;
                if value == 0 && matches!(packet, AqlPacket::BarrierOr(_)) {
                    return None;
                }
                if value != 0 && first.is_none() {
                    first = Some((cell, value));
                }
            }
            first
        }
        AqlPacket::AmdBarrierValue(b) => {
            let (current, cell) = value_of(b.signal)?;
            let masked = i64::from_le_bytes((u64::from_le_bytes(current.to_le_bytes()) & b.mask).to_le_bytes());
            let value = i64::from_le_bytes(b.value.to_le_bytes());
            (!hal::signal_condition_holds(masked, b.cond, value)).then_some((cell, current))
        }
        _ => None,
    }
}
