//! [`SimDevice`]: the soft device behind the [`Device`] trait.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use aql_packets::{Dimensions, FenceScope, KernelDispatch, PACKET_SIZE, PacketControl, RingSize, SignalCondition};
use kernels::memory::DeviceMemory;
use kernels::registry::Registry;
use pm4_encoding::Target;
use tape_core::AllocationId;

use crate::device::{
    AllocateError, Device, DeviceAllocation, FreeError, LaunchError, LaunchRequest, LoadError, LoadedCodeObject,
    Pm4Error, Pm4NotAvailable, QueueError, QueueFault, QueueHandle, SignalError, SignalHandle, TransferError,
    WaitError, signal_condition_holds,
};
use crate::sim::aql::{Pm4Hook, ProcessReport, SimQueue};
use crate::sim::cp::{CommandProcessor, IbReport};
use crate::sim::exec::{ExecutedDispatch, LDS_BYTES_MAX};
use crate::sim::loader::CodeObjects;
use crate::sim::memory::{RegionKind, SimMemory};
use crate::sim::signal::Signals;

/// A CPU model of one GPU of `target`: its address space, loaded code objects, AQL queues and
/// signals.
///
/// The ordinary path issues one AQL KERNEL_DISPATCH packet per launch through an internal queue
/// of [`SimDevice::LAUNCH_QUEUE_SLOTS`] slots, as HIP does, and processes it before `launch`
/// returns. Each launch's kernarg segment gets a fresh slot in a device-owned kernarg pool of
/// [`SimDevice::KERNARG_POOL_BYTES`]; the pool wraps to its start when a segment no longer fits,
/// which is safe because the internal queue has drained by then (every launch is processed
/// synchronously). The internal queue's ring is allocated at the first launch that passes the
/// request checks.
///
/// PM4-IB packets run on the device's PM4 [`CommandProcessor`] (one per device, for its family;
/// its SH register file persists across IBs, as the hardware's does); the reports of the IBs of
/// the last submission are kept ([`SimDevice::last_ib_reports`]). [`SimDevice::submit_with`]
/// takes another PM4 hook instead.
#[derive(Debug)]
pub struct SimDevice {
    target: Target,
    memory: SimMemory,
    objects: CodeObjects,
    registry: Registry,
    kernarg: DeviceAllocation,
    /// Offset of the next free byte in the kernarg pool.
    kernarg_cursor: u64,
    launch_queue: Option<SimQueue>,
    queues: BTreeMap<QueueHandle, SimQueue>,
    next_queue: NonZeroU32,
    signals: Signals,
    cp: CommandProcessor,
    /// GPU clock for timestamps (COPY_DATA, RELEASE_MEM): a monotonic counter.
    clock: u64,
    ib_reports: Vec<IbReport>,
    /// What a prepared plan checks before every token, on a cache line of its own.
    generations: Generations,
    /// Faults armed by [`SimDevice::inject`], each fired once, oldest first.
    injected: Vec<Injection>,
}

/// The counters a prepared plan reads in the host half of every token. They change only at a
/// reset or a free, never while a token executes; kept on their own cache line so that the
/// device side of a token (which writes the rest of the device) does not share a line with them.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Generations {
    /// Advanced by every [`Device::reset`]: what a prepared plan checks its allocations against.
    epoch: u64,
    /// Advanced by every successful free of a caller allocation or an IB.
    free_generation: u64,
}

/// A fault the soft device injects on purpose, once, so that failure paths of the routes can be
/// exercised ([`SimDevice::inject`]). Injections apply to user queues and IB memory, never to the
/// ordinary launch path's internal queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Injection {
    /// The next [`Device::allocate_ib`] fails with [`AllocateError::Injected`].
    IbAllocation,
    /// The next [`Device::submit`] on a user queue inactivates that queue with
    /// [`QueueFault::Injected`](crate::device::QueueFault::Injected) before it processes anything.
    QueueFault,
    /// The next [`Device::submit`] on a user queue rings the doorbell but the packet processor
    /// makes no progress: nothing completes, so a wait on the packet's signal times out.
    Hang,
}

/// The PM4 hook of a device without a command processor.
fn pm4_not_available(_: &mut SimMemory, _: &CodeObjects, ib_va: u64, size_dwords: u32) -> Result<(), Pm4Error> {
    Err(Box::new(Pm4NotAvailable { ib_va, size_dwords }))
}

impl SimDevice {
    /// Kernarg bytes of one launch, at most.
    pub const KERNARG_BYTES_MAX: u64 = 64 * 1024;
    /// Bytes of the ordinary path's kernarg pool.
    pub const KERNARG_POOL_BYTES: u64 = 256 * 1024;
    /// Alignment of every kernarg slot (HIP's kernarg pool aligns segments to 16 bytes at least).
    pub const KERNARG_SLOT_ALIGN: u64 = 64;
    /// Slots of the ordinary path's internal queue.
    pub const LAUNCH_QUEUE_SLOTS: u32 = 64;
    /// User queues live at once, at most.
    pub const QUEUES_MAX: usize = 64;

    /// A device of `target` with nothing loaded; kernels of the built-in `kernels` registry run
    /// through their CPU references.
    #[must_use]
    pub fn new(target: Target) -> Self {
        let mut memory = SimMemory::new();
        let kernarg = Self::kernarg_pool(&mut memory);
        Self {
            target,
            memory,
            objects: CodeObjects::new(),
            registry: Registry::builtin(),
            kernarg,
            kernarg_cursor: 0,
            launch_queue: None,
            queues: BTreeMap::new(),
            next_queue: NonZeroU32::MIN,
            signals: Signals::new(),
            cp: CommandProcessor::new(target.family()),
            clock: 0,
            ib_reports: Vec::new(),
            generations: Generations::default(),
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

    /// The loaded code objects and kernel table.
    #[must_use]
    pub fn code_objects(&self) -> &CodeObjects {
        &self.objects
    }

    /// The device-owned kernarg pool the ordinary path puts kernarg segments in.
    #[must_use]
    pub fn kernarg_buffer_allocation(&self) -> DeviceAllocation {
        self.kernarg
    }

    /// A user queue, to inspect its indices, ring and fault.
    #[must_use]
    pub fn queue(&self, queue: QueueHandle) -> Option<&SimQueue> {
        self.queues.get(&queue)
    }

    /// The ordinary path's internal queue, once the first launch created it.
    #[must_use]
    pub fn launch_queue(&self) -> Option<&SimQueue> {
        self.launch_queue.as_ref()
    }

    /// [`Device::launch`], returning what the dispatch did (kernel, effects and the allocations
    /// they lie in) for hazard checking.
    ///
    /// # Errors
    /// As [`Device::launch`].
    pub fn launch_traced(&mut self, request: &LaunchRequest<'_>) -> Result<ExecutedDispatch, LaunchError> {
        let packet = self.launch_packet(request)?;
        let Self { memory, objects, signals, launch_queue, .. } = self;
        let queue = match launch_queue {
            Some(queue) => queue,
            None => launch_queue.insert(Self::new_launch_queue(memory)?),
        };
        let result = queue
            .publish(memory, &packet)
            .and_then(|_| queue.ring_doorbell(queue.write_index()))
            .map_err(|e| match e {
                QueueError::Fault(fault) => fault,
                other => QueueFault::Ring { packet_id: queue.write_index(), fault: ring_fault(queue, &other) },
            })
            .and_then(|()| queue.process(memory, objects, signals, &mut pm4_not_available));
        match result {
            Ok(mut report) => {
                // PANIC: the queue had drained, so it ran exactly the dispatch published above.
                Ok(report.dispatches.pop().expect("the launch queue ran the published dispatch"))
            }
            Err(_) => match queue.recover(memory) {
                Some(QueueFault::Dispatch { source, .. }) => Err(source),
                Some(fault) => Err(LaunchError::Queue(Box::new(fault))),
                None => unreachable!("a failed launch queue records its fault"),
            },
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

    /// VA of a fresh kernarg slot of `size` bytes (at most [`Self::KERNARG_BYTES_MAX`]).
    fn kernarg_slot(&mut self, size: u64) -> u64 {
        let mut offset = self.kernarg_cursor.next_multiple_of(Self::KERNARG_SLOT_ALIGN);
        if offset + size > Self::KERNARG_POOL_BYTES {
            // INVARIANT: the launch queue is drained between launches, so no pending dispatch
            // still reads the slots being reused.
            debug_assert!(self.launch_queue.as_ref().is_none_or(|q| q.read_index() == q.write_index()));
            offset = 0;
        }
        self.kernarg_cursor = offset + size;
        self.kernarg.va + offset
    }

    /// [`Device::submit`] with `pm4` as the PM4 command processor for PM4-IB packets, returning
    /// the processor's report.
    ///
    /// # Errors
    /// As [`Device::submit`].
    pub fn submit_with(&mut self, queue: QueueHandle, pm4: &mut Pm4Hook<'_>) -> Result<ProcessReport, QueueError> {
        let Self { memory, objects, signals, queues, .. } = self;
        let q = queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        if let Some(fault) = q.fault() {
            return Err(QueueError::Fault(fault.clone()));
        }
        q.ring_doorbell(q.write_index())?;
        Ok(q.process(memory, objects, signals, pm4)?)
    }

    /// Arms `fault`: it fires once, at the next operation it names (see [`Injection`]).
    /// Injections fire in the order they were armed; [`Device::reset`] disarms them all.
    pub fn inject(&mut self, fault: Injection) {
        self.injected.push(fault);
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

    /// [`Device::submit`], returning the processor's report.
    ///
    /// # Errors
    /// As [`Device::submit`].
    pub fn submit_traced(&mut self, queue: QueueHandle) -> Result<ProcessReport, QueueError> {
        let injection = if self.queues.contains_key(&queue) {
            self.take_injection(&[Injection::QueueFault, Injection::Hang])
        } else {
            None
        };
        let Self { memory, objects, signals, queues, cp, clock, ib_reports, .. } = self;
        ib_reports.clear();
        let q = queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        if let Some(fault) = q.fault() {
            return Err(QueueError::Fault(fault.clone()));
        }
        q.ring_doorbell(q.write_index())?;
        match injection {
            Some(Injection::QueueFault) => return Err(QueueError::Fault(q.inject_fault())),
            Some(Injection::Hang) => return Ok(ProcessReport::default()),
            _ => {}
        }
        let mut hook = |m: &mut SimMemory, o: &CodeObjects, ib_va: u64, size_dwords: u32| -> Result<(), Pm4Error> {
            let report = cp.execute_ib(m, o, ib_va, size_dwords, clock).map_err(|f| Box::new(f) as Pm4Error)?;
            ib_reports.push(report);
            Ok(())
        };
        Ok(q.process(memory, objects, signals, &mut hook)?)
    }

    /// What the command processor reported for each IB of the last submission, in order.
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
        self.objects.load_at(&mut self.memory, &self.registry, self.target, bytes, load_va).cloned()
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

    /// Frees an IB from [`Device::allocate_ib`].
    ///
    /// # Errors
    /// [`FreeError::NotLive`] when it is not a live IB allocation.
    pub fn free_ib(&mut self, ib: DeviceAllocation) -> Result<(), FreeError> {
        self.memory.free_kind(ib, RegionKind::Ib)?;
        self.generations.free_generation += 1;
        Ok(())
    }

    /// The device session: 0 for a new device, advanced by every [`Device::reset`]. Allocation
    /// identities, VAs handed out, queues and signals of one epoch mean nothing in another, so
    /// whatever holds device addresses (a prepared plan) records the epoch it was made in.
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.generations.epoch
    }

    /// A counter advanced by every successful [`Device::free`] and [`SimDevice::free_ib`]: while
    /// it is unchanged (and the [epoch](Self::epoch) too), every allocation that was live is
    /// still live, so a holder of device addresses re-checks them only when it moved.
    #[must_use]
    pub fn free_generation(&self) -> u64 {
        self.generations.free_generation
    }

    /// Stores `value` into a signal (`hsa_signal_store_relaxed`): a completion signal is set
    /// before the packet that decrements it is published.
    ///
    /// # Errors
    /// [`SignalError::Unknown`].
    pub fn store_signal(&mut self, signal: SignalHandle, value: i64) -> Result<(), SignalError> {
        self.signals.store(signal, value)
    }
}

/// The memory fault inside a publish error of the launch queue (a full queue cannot happen: it
/// drains at every launch).
fn ring_fault(queue: &SimQueue, error: &QueueError) -> kernels::memory::MemoryFault {
    match error {
        QueueError::RingMemory(fault) => *fault,
        _ => kernels::memory::MemoryFault {
            address: queue.ring().va,
            len: queue.ring().size,
            reason: kernels::memory::FaultReason::Unmapped,
        },
    }
}

/// The launch path reports a queue that could not be created as a ring fault at packet 0.
fn queue_error_fault(error: &QueueError) -> QueueFault {
    let fault = match error {
        QueueError::RingMemory(fault) => *fault,
        _ => kernels::memory::MemoryFault { address: 0, len: 0, reason: kernels::memory::FaultReason::Unmapped },
    };
    QueueFault::Ring { packet_id: 0, fault }
}

impl Device for SimDevice {
    fn target(&self) -> Target {
        self.target
    }

    fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.memory.allocate(size)
    }

    fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError> {
        self.memory.free(allocation)?;
        self.generations.free_generation += 1;
        Ok(())
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError> {
        Ok(self.memory.write(va, data)?)
    }

    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError> {
        Ok(self.memory.read(va, out)?)
    }

    fn load_code_object(&mut self, bytes: &[u8]) -> Result<LoadedCodeObject, LoadError> {
        self.objects.load(&mut self.memory, &self.registry, self.target, bytes).cloned()
    }

    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError> {
        self.launch_traced(request).map(drop)
    }

    fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        self.memory.resolve(va)
    }

    fn reset(&mut self) {
        self.memory.reset();
        self.objects.reset();
        self.launch_queue = None;
        self.queues.clear();
        self.signals.clear();
        self.kernarg = Self::kernarg_pool(&mut self.memory);
        self.kernarg_cursor = 0;
        self.injected.clear();
        self.generations.epoch += 1;
    }

    fn create_queue(&mut self, slots: RingSize) -> Result<QueueHandle, QueueError> {
        if self.queues.len() >= Self::QUEUES_MAX {
            return Err(QueueError::TooManyQueues { limit: Self::QUEUES_MAX });
        }
        let queue = SimQueue::new(&mut self.memory, slots)?;
        let handle = QueueHandle(self.next_queue);
        // Handles are not reused; 2^32 queue creations are out of reach.
        self.next_queue = self.next_queue.saturating_add(1);
        self.queues.insert(handle, queue);
        Ok(handle)
    }

    fn destroy_queue(&mut self, queue: QueueHandle) -> Result<(), QueueError> {
        let q = self.queues.remove(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        // The ring is live: it is freed only here and by reset, which also drops the queue.
        q.release(&mut self.memory).map_err(|_| QueueError::UnknownQueue { queue })
    }

    fn publish(&mut self, queue: QueueHandle, packet: &[u8; PACKET_SIZE]) -> Result<u64, QueueError> {
        let q = self.queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        q.publish(&mut self.memory, packet)
    }

    fn submit(&mut self, queue: QueueHandle) -> Result<u64, QueueError> {
        let report = self.submit_traced(queue)?;
        // CAST: at most RING_SLOTS_MAX packets per call.
        Ok(u64::try_from(report.packets.len()).unwrap_or(u64::MAX))
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

    fn wait_signal(
        &mut self,
        signal: SignalHandle,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64, WaitError> {
        let value = self.signals.load(signal)?;
        if signal_condition_holds(value, condition, compare) {
            return Ok(value);
        }
        // TIMEOUT: nothing runs between submissions, so a condition that does not hold now never
        // will before the next submit; the wait times out at once instead of sleeping `timeout`.
        Err(WaitError::Timeout { signal, value, condition, compare, timeout })
    }

    fn allocate_ib(&mut self, size_dwords: u32) -> Result<DeviceAllocation, AllocateError> {
        if self.take_injection(&[Injection::IbAllocation]).is_some() {
            return Err(AllocateError::Injected { size: u64::from(size_dwords) * 4 });
        }
        self.memory.allocate_kind(u64::from(size_dwords) * 4, SimMemory::GRANULE_BYTES, RegionKind::Ib)
    }
}
