//! [`SimDevice`]: the soft device behind the HAL's [`Device`] trait.
//!
//! # Asynchrony
//! The soft device keeps the trait's asynchronous meaning without threads: a doorbell only
//! records how far the packet processor may go, and the processor runs when the host would
//! otherwise wait for it — [`Device::finish`], [`Device::read`] and [`Device::write`] for the
//! ordinary path's queue, [`Device::wait_signal`] and [`Device::queue_progress`] for the
//! caller's queues, or [`SimDevice::process`] explicitly. So nothing a launch or a doorbell does
//! has happened when it returns, exactly as on a GPU, and a fault is reported where a GPU
//! program learns of it.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::ops::Bound;
use std::time::Duration;

use aql_packets::{Dimensions, FenceScope, KernelDispatch, PACKET_SIZE, PacketControl, RingSize, SignalCondition};
use hal::{
    AllocateError, BackendError, Device, DeviceAllocation, DeviceStats, FaultInjection, FaultReason, FreeError,
    Injection, KernelTable, LaunchError, LaunchRequest, Lifetime, LoadError, LoadedCodeObject, MemoryFault, Pm4Error,
    QueueError, QueueFault, QueueHandle, QueueProgress, SignalError, SignalHandle, Submission, TransferError,
    WaitError, signal_condition_holds,
};
use pm4_encoding::Target;
use tape_core::AllocationId;

use crate::SoftFault;
use crate::aql::{Pm4Hook, ProcessReport, SimQueue};
use crate::clock::GpuClock;
use crate::cp::{CommandProcessor, IbReport};
use crate::exec::{ExecutedDispatch, LDS_BYTES_MAX};
use crate::loader::SoftKernels;
use crate::memory::{RegionKind, SimMemory};
use crate::signal::Signals;
use tape_core::census::trace::TraceRow;

/// A CPU model of one GPU of `target`: its address space, loaded code objects, AQL queues and
/// signals.
///
/// The ordinary path publishes one AQL KERNEL_DISPATCH packet per launch into an internal queue
/// of [`SimDevice::LAUNCH_QUEUE_SLOTS`] slots, as HIP does, and rings its doorbell; the packets
/// run at the next wait (see the module documentation). Each launch's kernarg segment gets a
/// fresh slot in a device-owned kernarg pool of [`SimDevice::KERNARG_POOL_BYTES`]; the pool wraps
/// to its start when a segment no longer fits, after the launches that used it have run.
///
/// PM4-IB packets run on the device's PM4 [`CommandProcessor`] (one per device, for its family;
/// its SH register file persists across IBs, as the hardware's does); the reports of the IBs of
/// the last processing are kept ([`SimDevice::last_ib_reports`]). [`SimDevice::submit_with`]
/// takes another PM4 hook instead.
#[derive(Debug)]
pub struct SimDevice {
    target: Target,
    memory: SimMemory,
    objects: SoftKernels,
    kernarg: DeviceAllocation,
    /// Offset of the next free byte in the kernarg pool.
    kernarg_cursor: u64,
    launch_queue: Option<SimQueue>,
    /// Ordinary launches published since the last wait.
    unwaited: u64,
    /// The failure of an ordinary launch, until a wait reports it.
    launch_fault: Option<LaunchError>,
    stats: DeviceStats,
    queues: BTreeMap<QueueHandle, UserQueue>,
    next_queue: NonZeroU32,
    signals: Signals,
    cp: CommandProcessor,
    /// GPU clock for timestamps (COPY_DATA, RELEASE_MEM): host-monotonic ticks since the
    /// device was made ([`GpuClock`]).
    clock: GpuClock,
    ib_reports: Vec<IbReport>,
    lifetime: Lifetime,
    /// Faults armed by [`FaultInjection::inject`], each fired once, oldest first.
    injected: Vec<Injection>,
    /// The ordinary path's kernel trace while one is kept ([`Device::begin_kernel_trace`]).
    kernel_trace: Option<Vec<TraceRow>>,
}

/// A caller's queue and what its processing owes.
#[derive(Debug)]
struct UserQueue {
    queue: SimQueue,
    /// The doorbell's last value (one past the last packet released).
    released: u64,
    /// An injection that fires when the queue is next processed.
    armed: Option<Injection>,
    /// Whether a wait has reported the queue's fault already.
    fault_reported: bool,
}

/// The PM4 hook of a device without a command processor.
fn pm4_not_available(_: &mut SimMemory, _: &SoftKernels, ib_va: u64, size_dwords: u32) -> Result<(), Pm4Error> {
    Err(Box::new(SoftFault::Pm4NotAvailable { ib_va, size_dwords }))
}

impl SimDevice {
    /// Kernarg bytes of one launch, at most.
    pub const KERNARG_BYTES_MAX: u64 = 64 * 1024;
    /// Bytes of the ordinary path's kernarg pool.
    pub const KERNARG_POOL_BYTES: u64 = 4 << 20;
    /// Alignment of every kernarg slot (HIP's kernarg pool aligns segments to 16 bytes at least).
    pub const KERNARG_SLOT_ALIGN: u64 = 64;
    /// Slots of the ordinary path's internal queue.
    pub const LAUNCH_QUEUE_SLOTS: u32 = 4096;
    /// User queues live at once, at most.
    pub const QUEUES_MAX: usize = 64;

    /// A device of `target` with nothing loaded; kernels of the built-in `kernel-refs` registry
    /// run through their CPU references.
    #[must_use]
    pub fn new(target: Target) -> Self {
        let mut memory = SimMemory::new();
        let kernarg = Self::kernarg_pool(&mut memory);
        Self {
            target,
            memory,
            objects: SoftKernels::new(),
            kernarg,
            kernarg_cursor: 0,
            launch_queue: None,
            kernel_trace: None,
            unwaited: 0,
            launch_fault: None,
            stats: DeviceStats::default(),
            queues: BTreeMap::new(),
            next_queue: NonZeroU32::MIN,
            signals: Signals::new(),
            cp: CommandProcessor::new(target.family()),
            clock: GpuClock::new(),
            ib_reports: Vec::new(),
            lifetime: Lifetime::default(),
            injected: Vec::new(),
        }
    }

    fn kernarg_pool(memory: &mut SimMemory) -> DeviceAllocation {
        // PANIC: the first allocation of an empty address space is far inside every limit.
        memory
            .allocate_kind(Self::KERNARG_POOL_BYTES, SimMemory::GRANULE_BYTES, RegionKind::Kernarg)
            .expect("kernarg pool in an empty address space")
    }

    /// Allocates `size` bytes at the caller-given `va`, to replay a recorded layout.
    ///
    /// # Errors
    /// See [`SimMemory::allocate_at`].
    pub fn allocate_at(&mut self, va: u64, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.memory.allocate_at(va, size)
    }

    /// The address space.
    #[must_use]
    pub fn memory(&self) -> &SimMemory {
        &self.memory
    }

    /// The loaded kernels with the CPU references they run ([`Device::kernels`] is their table).
    #[must_use]
    pub fn soft_kernels(&self) -> &SoftKernels {
        &self.objects
    }

    /// The device-owned kernarg pool the ordinary path puts kernarg segments in.
    #[must_use]
    pub fn kernarg_buffer_allocation(&self) -> DeviceAllocation {
        self.kernarg
    }

    /// A caller's queue, to inspect its indices, ring and fault.
    #[must_use]
    pub fn queue(&self, queue: QueueHandle) -> Option<&SimQueue> {
        self.queues.get(&queue).map(|q| &q.queue)
    }

    /// The ordinary path's internal queue, once the first launch created it.
    #[must_use]
    pub fn launch_queue(&self) -> Option<&SimQueue> {
        self.launch_queue.as_ref()
    }

    /// Waits for the ordinary path, then runs `request` to completion at once and returns what
    /// the dispatch did (kernel, effects and the allocations they lie in) for hazard checking.
    ///
    /// # Errors
    /// As [`Device::launch`] and [`Device::finish`].
    pub fn launch_traced(&mut self, request: &LaunchRequest<'_>) -> Result<ExecutedDispatch, LaunchError> {
        self.finish()?;
        self.launch(request)?;
        self.unwaited = 0;
        let report = self.run_launch_queue()?;
        // PANIC: the queue had drained, so it ran exactly the dispatch published above.
        Ok(report.dispatches.into_iter().next_back().expect("the launch queue ran the published dispatch"))
    }

    /// Runs the ordinary path's queue up to its doorbell. A failure is returned (and the queue
    /// recovered, its unprocessed packets dropped).
    fn run_launch_queue(&mut self) -> Result<ProcessReport, LaunchError> {
        let Self { memory, objects, signals, launch_queue, kernel_trace, .. } = self;
        let Some(queue) = launch_queue else { return Ok(ProcessReport::default()) };
        queue.set_keep_trace(kernel_trace.is_some());
        match on_pool(|| queue.process(memory, objects, signals, &mut pm4_not_available)) {
            Ok(mut report) => {
                if let (Some(kept), Some(rows)) = (kernel_trace.as_mut(), report.trace.take()) {
                    for mut row in rows {
                        // Dispatch ids count the trace's rows from 1, as rocprofv3's do.
                        row.dispatch_id = u64::try_from(kept.len()).unwrap_or(u64::MAX).saturating_add(1);
                        row.correlation_id = row.dispatch_id;
                        kept.push(row);
                    }
                }
                Ok(report)
            }
            Err(_) => Err(match queue.recover(memory) {
                Some(QueueFault::Dispatch { source, .. }) => source,
                Some(fault) => LaunchError::Queue(Box::new(fault)),
                None => unreachable!("a failed launch queue records its fault"),
            }),
        }
    }

    /// The host waits for the ordinary path: its packets run; a failure is kept for the next
    /// report ([`SimDevice::make_room`]).
    fn drain_launches(&mut self) {
        self.make_room();
    }

    /// The device catches up with the ordinary path, for the host (a finish, a read or write) or
    /// so that kernarg bytes or ring slots can be reused: its packets run; a failure is kept for
    /// the next report. Every wait of the ordinary path is this one, and counts in
    /// [`DeviceStats::waits`] when launches were waiting (as on the HSA backend, where a wait for
    /// ring or kernarg room counts too).
    fn make_room(&mut self) {
        if self.unwaited == 0 {
            return;
        }
        self.stats.waits += 1;
        self.unwaited = 0;
        if let Err(e) = self.run_launch_queue() {
            self.launch_fault.get_or_insert(e);
        }
    }

    fn new_launch_queue(memory: &mut SimMemory) -> Result<SimQueue, LaunchError> {
        // PANIC: a constant power of two.
        let size = RingSize::new(Self::LAUNCH_QUEUE_SLOTS).expect("power-of-two launch ring");
        SimQueue::new(memory, size).map_err(|e| LaunchError::Queue(Box::new(queue_error_fault(&e))))
    }

    /// Checks `request`, writes its kernarg segment into a fresh pool slot and builds the
    /// dispatch packet HIP would publish for it.
    fn launch_packet(&mut self, request: &LaunchRequest<'_>) -> Result<[u8; PACKET_SIZE], LaunchError> {
        let kernel_object = request.kernel_object;
        let slot = self.objects.by_kd(kernel_object).ok_or(LaunchError::UnknownKernel { kernel_object })?;
        let kernel = || slot.loaded.name.clone();
        let size = slot.loaded.kernarg_segment_size;
        if u64::from(size) > Self::KERNARG_BYTES_MAX {
            return Err(LaunchError::KernargTooLarge { kernel: kernel(), size, limit: Self::KERNARG_BYTES_MAX });
        }
        if usize::try_from(size).ok() != Some(request.kernarg.len()) {
            return Err(LaunchError::KernargSize { kernel: kernel(), expected: size, found: request.kernarg.len() });
        }
        let static_bytes = slot.loaded.group_segment_fixed_size;
        let dynamic_bytes = request.dynamic_lds_bytes;
        let Some(group_segment_size) = static_bytes.checked_add(dynamic_bytes) else {
            return Err(LaunchError::LdsTooLarge {
                kernel: kernel(),
                static_bytes,
                dynamic_bytes,
                limit: LDS_BYTES_MAX,
            });
        };
        let private_segment_size = slot.loaded.private_segment_fixed_size;
        let kernarg_va = self.kernarg_slot(u64::from(size));
        // The pool is device-owned and the slot lies inside it (size checked above).
        self.memory.write(kernarg_va, request.kernarg).map_err(|fault| LaunchError::KernargFault {
            kernel: self.objects.by_kd(kernel_object).map(|s| s.loaded.name.clone()).unwrap_or_default(),
            fault,
        })?;
        let (grid, workgroup) = (request.grid_work_items, request.workgroup_work_items);
        let dimensions = Dimensions::fewest(grid, workgroup);
        // HIP's in-order stream: barrier bit set, system-scope acquire and release.
        let control = PacketControl { barrier: true, acquire: FenceScope::System, release: FenceScope::System };
        let dispatch = KernelDispatch {
            control,
            dimensions,
            workgroup_size: workgroup,
            grid_size: grid,
            private_segment_size,
            group_segment_size,
            kernel_object,
            kernarg_address: kernarg_va,
            completion_signal: 0,
        };
        Ok(*dispatch.emit().as_array())
    }

    /// VA of a fresh kernarg slot of `size` bytes (at most [`Self::KERNARG_BYTES_MAX`]). The pool
    /// wraps once the launches that used its start have run: after a wait, at no cost.
    fn kernarg_slot(&mut self, size: u64) -> u64 {
        let mut offset = self.kernarg_cursor.next_multiple_of(Self::KERNARG_SLOT_ALIGN);
        if offset + size > Self::KERNARG_POOL_BYTES {
            self.make_room();
            offset = 0;
        }
        self.kernarg_cursor = offset + size;
        self.kernarg.va + offset
    }

    /// Rings `queue`'s doorbell and runs it at once with `pm4` as the PM4 command processor for
    /// PM4-IB packets, returning the processor's report (a test harness's synchronous submit).
    ///
    /// # Errors
    /// The fault that inactivated the queue, or [`QueueError::UnknownQueue`].
    pub fn submit_with(&mut self, queue: QueueHandle, pm4: &mut Pm4Hook<'_>) -> Result<ProcessReport, QueueError> {
        self.ring_doorbell(queue)?;
        let Self { memory, objects, signals, queues, .. } = self;
        let q = queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        Ok(q.queue.process(memory, objects, signals, pm4)?)
    }

    /// Rings `queue`'s doorbell and runs it at once on the device's command processor,
    /// returning the processor's report (a test harness's synchronous submit).
    ///
    /// # Errors
    /// The fault that inactivated the queue (now or earlier), or [`QueueError::UnknownQueue`].
    pub fn submit_traced(&mut self, queue: QueueHandle) -> Result<ProcessReport, QueueError> {
        self.ring_doorbell(queue)?;
        self.process_queue(queue)
    }

    /// Rings `queue`'s doorbell and runs it at once; returns the packets completed by this call
    /// (a test harness's synchronous submit, [`SimDevice::submit_traced`] without the report).
    ///
    /// # Errors
    /// As [`SimDevice::submit_traced`].
    pub fn run_queue(&mut self, queue: QueueHandle) -> Result<u64, QueueError> {
        let report = self.submit_traced(queue)?;
        // CAST: at most RING_SLOTS_MAX packets per call.
        Ok(u64::try_from(report.packets.len()).unwrap_or(u64::MAX))
    }

    /// Runs the packet processor of every caller queue up to its doorbell, and the ordinary
    /// path's queue: what a GPU does while the host is busy elsewhere. Faults stay with their
    /// queues.
    pub fn process(&mut self) {
        self.drain_launches();
        // In handle order, without a heap allocation (the host's wait calls this too).
        let mut next = self.queues.keys().next().copied();
        while let Some(queue) = next {
            let _ = self.process_queue(queue);
            next = self.queues.range((Bound::Excluded(queue), Bound::Unbounded)).next().map(|(&q, _)| q);
        }
    }

    /// Runs one caller queue up to its doorbell (firing an injection armed on it).
    fn process_queue(&mut self, queue: QueueHandle) -> Result<ProcessReport, QueueError> {
        let Self { memory, objects, signals, queues, cp, clock, ib_reports, .. } = self;
        let q = queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        if let Some(fault) = q.queue.fault() {
            return Err(QueueError::Fault(fault.clone()));
        }
        if q.queue.read_index() >= q.queue.doorbell() {
            return Ok(ProcessReport::default());
        }
        match q.armed.take() {
            Some(Injection::QueueFault) => return Err(QueueError::Fault(q.queue.inject_fault())),
            Some(Injection::Hang) => return Ok(ProcessReport::default()),
            _ => {}
        }
        ib_reports.clear();
        let queue = &mut q.queue;
        on_pool(|| {
            let mut hook = |m: &mut SimMemory, o: &SoftKernels, ib_va: u64, size_dwords: u32| -> Result<(), Pm4Error> {
                let report = cp.execute_ib(m, o, ib_va, size_dwords, clock).map_err(|f| Box::new(f) as Pm4Error)?;
                ib_reports.push(report);
                Ok(())
            };
            Ok(queue.process(memory, objects, signals, &mut hook)?)
        })
    }

    /// Faults armed and not fired yet.
    #[must_use]
    pub fn pending_injections(&self) -> &[Injection] {
        &self.injected
    }

    /// Removes and returns the oldest armed injection among `kinds`.
    fn take_injection(&mut self, kinds: &[Injection]) -> Option<Injection> {
        let at = self.injected.iter().position(|i| kinds.contains(i))?;
        Some(self.injected.remove(at))
    }

    /// What the command processor reported for each IB of the last processing, in order.
    #[must_use]
    pub fn last_ib_reports(&self) -> &[IbReport] {
        &self.ib_reports
    }

    /// Loads a code object with its image at `load_va` exactly (as an IB bundle records it).
    ///
    /// # Errors
    /// As [`Device::load_code_object`]; a misaligned or overlapping `load_va` is
    /// [`LoadError::Allocate`].
    pub fn load_code_object_at(&mut self, bytes: &[u8], load_va: u64) -> Result<LoadedCodeObject, LoadError> {
        crate::loader::load(&mut self.objects, &mut self.memory, self.target, bytes, Some(load_va)).cloned()
    }

    /// The value of the signal with raw handle `handle`.
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when no such signal is live.
    pub fn signal_value_raw(&self, handle: u64) -> Result<i64, SignalError> {
        self.signals.load_raw(handle)
    }

    /// Creates a signal with a given raw handle (IB bundles name completion signals by handle).
    ///
    /// # Errors
    /// [`SignalError::HandleInUse`] or [`SignalError::TooMany`].
    pub fn create_signal_at(&mut self, handle: u64, initial: i64) -> Result<SignalHandle, SignalError> {
        self.signals.create_at(handle, initial)
    }

    /// The first fault of a caller queue that no wait has reported yet; it counts as reported.
    fn unreported_fault(&mut self) -> Option<QueueFault> {
        self.queues.values_mut().find_map(|q| match q.queue.fault() {
            Some(fault) if !q.fault_reported => {
                q.fault_reported = true;
                Some(fault.clone())
            }
            _ => None,
        })
    }
}

/// The launch path reports a queue that could not be created as a ring fault at packet 0.
fn queue_error_fault(error: &QueueError) -> QueueFault {
    let fault = match error {
        QueueError::RingMemory(fault) => *fault,
        _ => MemoryFault { address: 0, len: 0, reason: FaultReason::Unmapped },
    };
    QueueFault::Ring { packet_id: 0, fault }
}

impl FaultInjection for SimDevice {
    /// Arms `fault`; injections fire in the order they were armed; [`Device::reset`] disarms them.
    fn inject(&mut self, fault: Injection) -> Result<(), BackendError> {
        self.injected.push(fault);
        Ok(())
    }
}

impl Device for SimDevice {
    fn target(&self) -> Target {
        self.target
    }

    fn topology(&self) -> hal::Topology {
        hal::Topology { gpus_visible: 1, gpus_used: 1, queues: u32::try_from(self.queues.len()).unwrap_or(u32::MAX) }
    }

    fn lifetime(&self) -> Lifetime {
        self.lifetime
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        GpuClock::FREQUENCY_HZ
    }

    fn kernels(&self) -> &KernelTable {
        self.objects.table()
    }

    fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.memory.allocate(size)
    }

    fn allocate_kernarg(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.memory.allocate_kind(size, SimMemory::GRANULE_BYTES, RegionKind::HostVisible)
    }

    fn allocate_ib(&mut self, size_dwords: u32) -> Result<DeviceAllocation, AllocateError> {
        let size = u64::from(size_dwords) * 4;
        if self.take_injection(&[Injection::IbAllocation]).is_some() {
            return Err(AllocateError::Injected { size });
        }
        self.memory.allocate_kind(size, SimMemory::GRANULE_BYTES, RegionKind::Ib)
    }

    fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError> {
        self.memory.free(allocation)?;
        self.lifetime.frees += 1;
        Ok(())
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError> {
        self.finish().map_err(|e| TransferError::Launch(Box::new(e)))?;
        Ok(self.memory.write(va, data)?)
    }

    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError> {
        self.finish().map_err(|e| TransferError::Launch(Box::new(e)))?;
        Ok(self.memory.read(va, out)?)
    }

    fn store_u32(&mut self, va: u64, value: u32) -> Result<(), TransferError> {
        Ok(self.memory.store_u32(va, value)?)
    }

    fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        self.memory.resolve(va)
    }

    fn load_code_object(&mut self, bytes: &[u8]) -> Result<LoadedCodeObject, LoadError> {
        crate::loader::load(&mut self.objects, &mut self.memory, self.target, bytes, None).cloned()
    }

    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError> {
        if let Some(fault) = &self.launch_fault {
            return Err(fault.clone());
        }
        let packet = self.launch_packet(request)?;
        if self.launch_queue.as_ref().is_some_and(|q| q.size().is_full(q.write_index(), q.read_index())) {
            self.make_room();
            if let Some(fault) = &self.launch_fault {
                return Err(fault.clone());
            }
        }
        let Self { memory, launch_queue, .. } = self;
        let queue = match launch_queue {
            Some(queue) => queue,
            None => launch_queue.insert(Self::new_launch_queue(memory)?),
        };
        let published = queue.publish(memory, &packet).and_then(|_| queue.ring_doorbell(queue.write_index()));
        if let Err(e) = published {
            let fault = match e {
                QueueError::Fault(fault) => fault,
                QueueError::RingMemory(fault) => QueueFault::Ring { packet_id: queue.write_index(), fault },
                other => return Err(LaunchError::Queue(Box::new(queue_error_fault(&other)))),
            };
            return Err(LaunchError::Queue(Box::new(fault)));
        }
        self.stats.launches += 1;
        self.unwaited += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), LaunchError> {
        self.drain_launches();
        self.launch_fault.take().map_or(Ok(()), Err)
    }

    fn stats(&self) -> DeviceStats {
        self.stats
    }

    /// The soft device keeps the rows its ordinary path's packet processor makes (the AQL
    /// processor that runs every ordinary launch, [`crate::aql::execute`]); launches published
    /// before the call run first, untraced.
    fn begin_kernel_trace(&mut self) -> Option<&'static str> {
        self.drain_launches();
        let _ = crate::trace::origin();
        self.kernel_trace = Some(Vec::new());
        Some("the soft device's AQL packet processor")
    }

    fn take_kernel_trace(&mut self) -> Result<Option<Vec<TraceRow>>, LaunchError> {
        let finished = self.finish();
        let rows = self.kernel_trace.take();
        finished.map(|()| rows)
    }

    fn reset(&mut self) {
        self.memory.reset();
        self.objects.reset();
        self.launch_queue = None;
        self.unwaited = 0;
        self.launch_fault = None;
        self.queues.clear();
        self.signals.clear();
        self.kernarg = Self::kernarg_pool(&mut self.memory);
        self.kernarg_cursor = 0;
        self.injected.clear();
        self.lifetime = Lifetime { epoch: self.lifetime.epoch + 1, frees: 0 };
    }

    fn create_queue(&mut self, slots: RingSize) -> Result<QueueHandle, QueueError> {
        if self.queues.len() >= Self::QUEUES_MAX {
            return Err(QueueError::TooManyQueues { limit: Self::QUEUES_MAX });
        }
        let queue = SimQueue::new(&mut self.memory, slots)?;
        let handle = QueueHandle(self.next_queue);
        // Handles are not reused; 2^32 queue creations are out of reach.
        self.next_queue = self.next_queue.saturating_add(1);
        self.queues.insert(handle, UserQueue { queue, released: 0, armed: None, fault_reported: false });
        Ok(handle)
    }

    fn destroy_queue(&mut self, queue: QueueHandle) -> Result<(), QueueError> {
        let q = self.queues.remove(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        // The ring is live: it is freed only here and by reset, which also drops the queue.
        q.queue.release(&mut self.memory).map_err(|_| QueueError::UnknownQueue { queue })
    }

    fn write_packet(&mut self, queue: QueueHandle, packet: &[u8; PACKET_SIZE]) -> Result<u64, QueueError> {
        let q = self.queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        q.queue.publish(&mut self.memory, packet)
    }

    fn ring_doorbell(&mut self, queue: QueueHandle) -> Result<Submission, QueueError> {
        let injection = if self.queues.contains_key(&queue) {
            self.take_injection(&[Injection::QueueFault, Injection::Hang])
        } else {
            None
        };
        let q = self.queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        if let Some(fault) = q.queue.fault() {
            return Err(QueueError::Fault(fault.clone()));
        }
        let end = q.queue.write_index();
        q.queue.ring_doorbell(end)?;
        if injection.is_some() {
            q.armed = injection;
        }
        let submission = Submission { first: q.released, end };
        q.released = end;
        Ok(submission)
    }

    fn queue_progress(&mut self, queue: QueueHandle) -> Result<QueueProgress, QueueError> {
        // A fault found here is this call's error.
        let _ = self.process_queue(queue);
        let q = self.queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        if let Some(fault) = q.queue.fault() {
            return Err(QueueError::Fault(fault.clone()));
        }
        Ok(QueueProgress { read_index: q.queue.read_index(), write_index: q.queue.write_index() })
    }

    fn create_signal(&mut self, initial: i64) -> Result<SignalHandle, SignalError> {
        self.signals.create(initial)
    }

    fn destroy_signal(&mut self, signal: SignalHandle) -> Result<(), SignalError> {
        self.signals.destroy(signal)
    }

    fn signal_value(&self, signal: SignalHandle) -> Result<i64, SignalError> {
        self.signals.load(signal)
    }

    fn store_signal(&mut self, signal: SignalHandle, value: i64) -> Result<(), SignalError> {
        self.signals.store(signal, value)
    }

    fn wait_signal(
        &mut self,
        signal: SignalHandle,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64, WaitError> {
        self.signals.load(signal)?;
        self.process();
        let value = self.signals.load(signal)?;
        if signal_condition_holds(value, condition, compare) {
            return Ok(value);
        }
        if let Some(fault) = self.unreported_fault() {
            return Err(WaitError::Fault { signal, fault: Box::new(fault) });
        }
        // TIMEOUT: every queue ran as far as it can; nothing else runs until the host acts, so a
        // condition that does not hold now never will before then: the wait gives up at once
        // instead of sleeping `timeout`.
        Err(WaitError::Timeout { signal, value, condition, compare, timeout })
    }
}

/// Runs `work` (a queue's packet processor) on a thread of the pool the kernels' CPU references
/// split large dispatches across ([`rayon`]'s global pool): from there a split hands half of
/// its rows to the other threads and computes the rest itself, where a split started outside
/// the pool would put the calling thread to sleep and wake a worker for every dispatch. One hand-off
/// per run of a queue, however many packets it runs; called on a pool thread, `work` runs at once.
fn on_pool<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    rayon::scope(|_| work())
}
