//! [`Device`] and [`FaultInjection`] for [`HsaDevice`].

use std::time::Duration;

use aql_packets::{
    Dimensions, KernelDispatch, KernelDispatchError, PACKET_SIZE, PacketControl, RingSize, SignalCondition,
};
use hal::{
    AllocateError, BackendError, Device, DeviceAllocation, DeviceStats, FaultInjection, FaultReason, FreeError,
    Injection, KernelTable, LaunchError, LaunchRequest, Lifetime, LoadError, LoadedCodeObject, MemoryFault, QueueError,
    QueueFault, QueueHandle, QueueProgress, SignalError, SignalHandle, Submission, TransferError, WaitError,
};
use hsa_sys::{HsaStatus, RedlineInjection};
use pm4_encoding::Target;
use tape_core::AllocationId;

use super::discover::{check, runtime_status};
use super::launch::LaunchPath;
use super::memory::{self, Backing, Kind};
use super::queue::{self, HsaQueue, WaitEnd};
use super::{HsaDevice, UserQueue, staging};
use crate::ffi::{DeviceBlock, DeviceRange, HostBlock, Signal, Staging};

impl HsaDevice {
    /// Allocates `size` zeroed bytes of `kind` from its pool.
    fn allocate_kind(&mut self, size: u64, kind: Kind) -> Result<DeviceAllocation, AllocateError> {
        if size == 0 {
            return Err(AllocateError::Empty);
        }
        if size > Self::ALLOCATION_BYTES_MAX {
            return Err(AllocateError::TooLarge { size, limit: Self::ALLOCATION_BYTES_MAX });
        }
        self.memory.check_room()?;
        let (runtime, agent) = (&self.runtime, self.agent);
        let backing = match kind {
            Kind::Kernarg | Kind::Ib => {
                let pool = if kind == Kind::Kernarg { self.pools.kernarg } else { self.pools.fine };
                let mut block = HostBlock::allocate(runtime, pool, size, agent)?;
                block.zero();
                Backing::Host(block)
            }
            Kind::Device | Kind::Code => {
                let block = DeviceBlock::allocate(runtime, self.pools.coarse, size, agent)?;
                if let Err(error) = staging(&mut self.staging).zero_device(block.whole()) {
                    // Allocated above, named by nothing.
                    let _ = block.free();
                    return Err(error.into());
                }
                Backing::Device(block)
            }
        };
        let va = match &backing {
            Backing::Host(block) => block.va(),
            Backing::Device(block) => block.va(),
            Backing::Code => 0,
        };
        Ok(self.memory.insert(va, size, kind, backing))
    }

    /// Calls the runtime's fault-injection extension.
    fn arm_in_runtime(&self, kind: RedlineInjection, object: u64) -> Result<(), BackendError> {
        check("redline_soft_hsa_inject", self.runtime.inject(kind, object).ok_or(INJECTION_UNSUPPORTED)?)
    }

    /// Removes and returns the oldest armed injection among `kinds`.
    fn take_injection(&mut self, kinds: &[Injection]) -> Option<Injection> {
        let at = self.injections.iter().position(|i| kinds.contains(i))?;
        Some(self.injections.remove(at))
    }

    /// The first fault of a caller queue that no wait has reported yet; it counts as reported.
    fn unreported_fault(queues: &mut std::collections::BTreeMap<QueueHandle, UserQueue>) -> Option<QueueFault> {
        queues.values_mut().filter(|q| !q.fault_reported).find_map(|q| {
            let fault = q.queue.fault()?;
            q.fault_reported = true;
            Some(fault)
        })
    }

    fn user_queue(&mut self, queue: QueueHandle) -> Result<&mut UserQueue, QueueError> {
        self.queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })
    }

    fn known_signal(&self, signal: SignalHandle) -> Result<&Signal, SignalError> {
        self.signals.get(&signal.get()).ok_or(SignalError::Unknown { handle: signal.get() })
    }

    /// The dispatch HIP would publish for `request` (its kernarg address and completion signal
    /// filled in by the launch path), checked.
    fn launch_dispatch(&self, request: &LaunchRequest<'_>) -> Result<KernelDispatch, LaunchError> {
        let kernel_object = request.kernel_object;
        let slot = self.kernels.by_kd(kernel_object).ok_or(LaunchError::UnknownKernel { kernel_object })?;
        let kernel = &slot.loaded;
        super::code::check_launch(kernel, request, Self::KERNARG_BYTES_MAX)?;
        let dispatch = KernelDispatch {
            control: PacketControl::SYSTEM_BARRIER,
            dimensions: Dimensions::fewest(request.grid_work_items, request.workgroup_work_items),
            workgroup_size: request.workgroup_work_items,
            grid_size: request.grid_work_items,
            private_segment_size: kernel.private_segment_fixed_size,
            group_segment_size: kernel.group_segment_fixed_size + request.dynamic_lds_bytes,
            kernel_object,
            kernarg_address: 0,
            completion_signal: 0,
        };
        dispatch.validate().map_err(|error| match error {
            KernelDispatchError::KernelObject { address, .. } => LaunchError::UnknownKernel { kernel_object: address },
            KernelDispatchError::ZeroWorkgroupSize { .. } | KernelDispatchError::ZeroGridSize { .. } => {
                LaunchError::ZeroDimension {
                    kernel: kernel.name.clone(),
                    grid: request.grid_work_items,
                    workgroup: request.workgroup_work_items,
                }
            }
        })?;
        Ok(dispatch)
    }
}

/// Injection on a runtime without the Redline extension.
const INJECTION_UNSUPPORTED: BackendError = BackendError::Unsupported {
    backend: "HSA",
    operation: "fault injection (the runtime does not export redline_soft_hsa_inject; only the soft HSA runtime does)",
};

impl FaultInjection for HsaDevice {
    /// Arms `fault` when the runtime is the soft HSA runtime; it fires at the next operation it
    /// names (an IB allocation, a caller queue's doorbell), where the runtime is told. Injections
    /// fire in the order they were armed; [`Device::reset`] disarms them.
    fn inject(&mut self, fault: Injection) -> Result<(), BackendError> {
        if self.runtime.hsa().extensions().redline_soft_hsa_inject.is_none() {
            return Err(INJECTION_UNSUPPORTED);
        }
        self.injections.push(fault);
        Ok(())
    }
}

impl Device for HsaDevice {
    /// Over the soft HSA runtime, its packet processors' trace (its extension
    /// `redline_soft_hsa_kernel_trace`); a real ROCr keeps none in the process (rocprofv3
    /// traces it from outside: `redline census`).
    fn begin_kernel_trace(&mut self) -> Option<&'static str> {
        // Launches published before the call run first, untraced; a failure among them is
        // reported by the next wait, as the launch path keeps it.
        let _ = self.finish().map_err(|e| self.launch_fault.get_or_insert(e).clone());
        self.runtime.begin_kernel_trace().then_some("the soft HSA runtime's packet processors")
    }

    fn take_kernel_trace(&mut self) -> Result<Option<Vec<tape_core::census::trace::TraceRow>>, LaunchError> {
        self.finish()?;
        let Some(text) = self.runtime.take_kernel_trace() else { return Ok(None) };
        let text = String::from_utf8(text).map_err(|e| LaunchError::KernelTrace(format!("not UTF-8: {e}")))?;
        let rows = tape_core::census::trace::parse(&text).map_err(|e| LaunchError::KernelTrace(e.to_string()))?;
        Ok(Some(rows))
    }

    fn target(&self) -> Target {
        self.target
    }

    fn topology(&self) -> hal::Topology {
        hal::Topology {
            gpus_visible: self.gpus_visible,
            gpus_used: 1,
            queues: u32::try_from(self.queues.len()).unwrap_or(u32::MAX),
        }
    }

    fn lifetime(&self) -> Lifetime {
        self.lifetime
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        self.timestamp_hz
    }

    fn kernels(&self) -> &KernelTable {
        &self.kernels
    }

    fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.allocate_kind(size, Kind::Device)
    }

    fn allocate_kernarg(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.allocate_kind(size, Kind::Kernarg)
    }

    fn allocate_ib(&mut self, size_dwords: u32) -> Result<DeviceAllocation, AllocateError> {
        let size = u64::from(size_dwords) * 4;
        if size == 0 {
            return Err(AllocateError::Empty);
        }
        if self.take_injection(&[Injection::IbAllocation]).is_none() {
            return self.allocate_kind(size, Kind::Ib);
        }
        self.arm_in_runtime(RedlineInjection::ALLOCATION, self.pools.fine.pool().handle)?;
        match self.allocate_kind(size, Kind::Ib) {
            Err(AllocateError::Backend(BackendError::Call { call: "hsa_amd_memory_pool_allocate", status }))
                if status.value == i64::from(HsaStatus::ERROR_OUT_OF_RESOURCES.0) =>
            {
                Err(AllocateError::Injected { size })
            }
            other => other,
        }
    }

    fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError> {
        // The caller frees only memory no packet in flight names (the HAL's contract).
        self.memory.remove(allocation)?.free()?;
        self.lifetime.frees += 1;
        Ok(())
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError> {
        self.finish().map_err(|e| TransferError::Launch(Box::new(e)))?;
        if data.is_empty() {
            return Ok(());
        }
        let Self { memory, staging: staging_buffer, code, .. } = self;
        let (allocation, offset) = memory.locate_mut(va, data.len())?;
        let range = match &mut allocation.backing {
            Backing::Host(block) => {
                block.write(offset, data);
                return Ok(());
            }
            Backing::Device(block) => block.range(offset, data.len()),
            Backing::Code => code.range(va, data.len()),
        };
        let range = range.ok_or_else(|| unreachable_range(va, data.len()))?;
        let staging = staging(staging_buffer);
        for (index, chunk) in data.chunks(Staging::BYTES).enumerate() {
            staging.copy_to_device(piece(range, index, chunk.len())?, chunk)?;
        }
        Ok(())
    }

    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError> {
        self.finish().map_err(|e| TransferError::Launch(Box::new(e)))?;
        if out.is_empty() {
            return Ok(());
        }
        let Self { memory, staging: staging_buffer, code, .. } = self;
        let (allocation, offset) = memory.locate(va, out.len())?;
        let range = match &allocation.backing {
            Backing::Host(block) => {
                block.read(offset, out);
                return Ok(());
            }
            Backing::Device(block) => block.range(offset, out.len()),
            Backing::Code => code.range(va, out.len()),
        };
        let range = range.ok_or_else(|| unreachable_range(va, out.len()))?;
        let staging = staging(staging_buffer);
        for (index, chunk) in out.chunks_mut(Staging::BYTES).enumerate() {
            let len = chunk.len();
            staging.copy_from_device(piece(range, index, len)?, chunk)?;
        }
        Ok(())
    }

    fn store_u32(&mut self, va: u64, value: u32) -> Result<(), TransferError> {
        Ok(memory::store_u32(&mut self.memory, va, value)?)
    }

    fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        self.memory.resolve(va)
    }

    fn load_code_object(&mut self, bytes: &[u8]) -> Result<LoadedCodeObject, LoadError> {
        self.memory.check_room()?;
        let placed = self.code.load(&self.runtime, self.agent, self.target, bytes, &self.kernels)?;
        let allocation = self.memory.insert(placed.load_va, placed.span, Kind::Code, Backing::Code);
        let loaded = self.kernels.insert(&placed.code_object, allocation, placed.load_va, placed.sha256);
        Ok(loaded.clone())
    }

    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError> {
        if let Some(fault) = &self.launch_fault {
            return Err(fault.clone());
        }
        let dispatch = self.launch_dispatch(request)?;
        if self.launch.is_none() {
            self.launch = Some(LaunchPath::create(&self.runtime, self.agent, self.pools.kernarg)?);
        }
        // PANIC: set just above when it was empty.
        let path = self.launch.as_mut().expect("the launch path exists");
        let published = match path.fault() {
            Some(fault) => Err(fault),
            None => path.publish(self.timestamp_hz, dispatch, request.kernarg),
        };
        if let Err(error) = published {
            self.fail_launch_path(error.clone());
            return Err(error);
        }
        self.stats.launches += 1;
        self.unwaited += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), LaunchError> {
        // The wait is counted where every wait of the launch path is (`LaunchPath::waits`), once
        // for the launches no earlier wait (for ring or kernarg room) covered.
        if self.unwaited > 0 {
            self.unwaited = 0;
            if let Some(path) = self.launch.as_mut()
                && let Err(error) = path.wait_all(self.timestamp_hz)
            {
                self.fail_launch_path(error);
            }
        }
        self.launch_fault.take().map_or(Ok(()), Err)
    }

    fn stats(&self) -> DeviceStats {
        let path_waits = self.launch.as_ref().map_or(0, LaunchPath::waits);
        DeviceStats { waits: self.stats.waits + path_waits, ..self.stats }
    }

    fn reset(&mut self) {
        self.release_all();
        self.launch_fault = None;
        self.unwaited = 0;
        self.injections.clear();
        self.lifetime = Lifetime { epoch: self.lifetime.epoch + 1, frees: 0 };
    }

    fn create_queue(&mut self, slots: RingSize) -> Result<QueueHandle, QueueError> {
        if self.queues.len() >= Self::QUEUES_MAX {
            return Err(QueueError::TooManyQueues { limit: Self::QUEUES_MAX });
        }
        let (min, max) = self.queue_slots;
        if slots.slots() > max {
            return Err(QueueError::RingTooLarge { slots: slots.slots(), limit: max });
        }
        // A ring below the agent's minimum is made at the minimum; `Full` still counts the
        // caller's slots.
        let queue = HsaQueue::create(&self.runtime, self.agent, slots.slots().max(min))?;
        let handle = QueueHandle(self.next_queue);
        // Handles are not reused; 2^32 queue creations are out of reach.
        self.next_queue = self.next_queue.saturating_add(1);
        self.queues.insert(handle, UserQueue { queue, slots: slots.slots(), released: 0, fault_reported: false });
        Ok(handle)
    }

    fn destroy_queue(&mut self, queue: QueueHandle) -> Result<(), QueueError> {
        let user = self.queues.remove(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        user.queue.destroy();
        Ok(())
    }

    fn write_packet(&mut self, queue: QueueHandle, packet: &[u8; PACKET_SIZE]) -> Result<u64, QueueError> {
        let user = self.user_queue(queue)?;
        user.queue.write_packet(packet, user.slots)
    }

    fn ring_doorbell(&mut self, queue: QueueHandle) -> Result<Submission, QueueError> {
        // An inactive queue's doorbell fails and leaves an armed injection for the next one.
        self.user_queue(queue)?.queue.check_fault()?;
        if let Some(injection) = self.take_injection(&[Injection::QueueFault, Injection::Hang]) {
            let kind =
                if injection == Injection::Hang { RedlineInjection::QUEUE_HANG } else { RedlineInjection::QUEUE_FAULT };
            let address = self.user_queue(queue)?.queue.address();
            self.arm_in_runtime(kind, address)?;
        }
        let user = self.user_queue(queue)?;
        let end = user.queue.ring_doorbell()?;
        let submission = Submission { first: user.released, end };
        user.released = end;
        Ok(submission)
    }

    fn queue_progress(&mut self, queue: QueueHandle) -> Result<QueueProgress, QueueError> {
        let user = self.user_queue(queue)?;
        user.queue.check_fault()?;
        Ok(user.queue.progress())
    }

    fn create_signal(&mut self, initial: i64) -> Result<SignalHandle, SignalError> {
        if self.signals.len() >= Self::SIGNALS_MAX {
            return Err(SignalError::TooMany { limit: Self::SIGNALS_MAX });
        }
        let signal = Signal::create(&self.runtime, initial)?;
        let Some(handle) = SignalHandle::from_raw(signal.handle()) else {
            // Named by nothing yet.
            let _ = signal.destroy();
            let status = runtime_status(HsaStatus::ERROR_INVALID_SIGNAL);
            return Err(BackendError::Call { call: "hsa_signal_create", status }.into());
        };
        self.signals.insert(signal.handle(), signal);
        Ok(handle)
    }

    fn destroy_signal(&mut self, signal: SignalHandle) -> Result<(), SignalError> {
        let live = self.signals.remove(&signal.get()).ok_or(SignalError::Unknown { handle: signal.get() })?;
        live.destroy()?;
        Ok(())
    }

    fn signal_value(&self, signal: SignalHandle) -> Result<i64, SignalError> {
        Ok(self.known_signal(signal)?.load_acquire())
    }

    fn store_signal(&mut self, signal: SignalHandle, value: i64) -> Result<(), SignalError> {
        self.known_signal(signal)?.store_relaxed(value);
        Ok(())
    }

    fn wait_signal(
        &mut self,
        signal: SignalHandle,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64, WaitError> {
        let Self { signals, queues, timestamp_hz, .. } = self;
        let live = signals.get(&signal.get()).ok_or(SignalError::Unknown { handle: signal.get() })?;
        let stop = || Self::unreported_fault(queues);
        match queue::wait(live, (condition, compare), timeout, *timestamp_hz, stop) {
            Ok(value) => Ok(value),
            Err(WaitEnd::Stopped(fault)) => Err(WaitError::Fault { signal, fault: Box::new(fault) }),
            Err(WaitEnd::Timeout(value)) => Err(WaitError::Timeout { signal, value, condition, compare, timeout }),
        }
    }
}

/// The piece `index` (of [`Staging::BYTES`] each) of `range`, `len` bytes long.
fn piece<'a>(range: DeviceRange<'a>, index: usize, len: usize) -> Result<DeviceRange<'a>, TransferError> {
    index.checked_mul(Staging::BYTES).and_then(|offset| range.sub(offset, len)).ok_or_else(|| unreachable_range(0, len))
}

/// A located range the device cannot name for the runtime: it lies in the allocation table but
/// in no block or image (the table and its backings disagree). Reported as unmapped, never
/// copied.
fn unreachable_range(va: u64, len: usize) -> TransferError {
    TransferError::Fault(MemoryFault {
        address: va,
        len: u64::try_from(len).unwrap_or(u64::MAX),
        reason: FaultReason::Unmapped,
    })
}
