//! [`Device`] and [`FaultInjection`] for [`HsaDevice`].

use std::sync::Arc;
use std::time::Duration;

use aql_packets::{
    Dimensions, KernelDispatch, KernelDispatchError, PACKET_SIZE, PacketControl, RingSize, SignalCondition,
};
use hal::{
    AllocateError, BackendError, Device, DeviceAllocation, DeviceStats, FaultInjection, FreeError, Injection,
    KernelTable, LaunchError, LaunchRequest, Lifetime, LoadError, LoadedCodeObject, QueueError, QueueFault,
    QueueHandle, QueueProgress, SignalError, SignalHandle, Submission, TransferError, WaitError,
};
use hsa_sys::{Hsa, HsaStatus, RedlineInjection, Signal};
use pm4_encoding::Target;
use tape_core::AllocationId;

use super::discover::{check, runtime_status};
use super::launch::LaunchPath;
use super::memory::{self, Kind};
use super::queue::{self, HsaQueue, WaitEnd};
use super::{HsaDevice, UserQueue, create_signal};

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
        let pool = match kind {
            Kind::Device | Kind::Code => self.pools.coarse,
            Kind::Kernarg => self.pools.kernarg,
            Kind::Ib => self.pools.fine,
        };
        let hsa = Arc::clone(&self.hsa);
        let ptr = memory::pool_allocate(&hsa, pool, size, self.agent)?;
        // CAST: a usize address is at most 64 bits on every supported host.
        let va = ptr.expose_provenance() as u64;
        if kind.is_host_visible() {
            // SAFETY: `ptr` is a fresh host-visible allocation of `size` bytes.
            unsafe { memory::host_zero(ptr, size) };
        } else if let Err(error) = self.staging().zero(&hsa, va, size) {
            // SAFETY: allocated above, named by nothing.
            let _ = unsafe { memory::pool_free(&self.hsa, ptr) };
            return Err(error.into());
        }
        Ok(self.memory.insert(va, size, kind, ptr))
    }

    /// Calls the runtime's fault-injection extension.
    fn arm_in_runtime(&self, kind: RedlineInjection, object: u64) -> Result<(), BackendError> {
        let inject = self.hsa.extensions().redline_soft_hsa_inject.ok_or(INJECTION_UNSUPPORTED)?;
        // SAFETY: the soft HSA runtime's extension, resolved with its prototype; it only compares
        // `object` with its tables.
        check("redline_soft_hsa_inject", unsafe { inject(kind.0, object) })
    }

    /// Removes and returns the oldest armed injection among `kinds`.
    fn take_injection(&mut self, kinds: &[Injection]) -> Option<Injection> {
        let at = self.injections.iter().position(|i| kinds.contains(i))?;
        Some(self.injections.remove(at))
    }

    /// The first fault of a caller queue that no wait has reported yet; it counts as reported.
    fn unreported_fault(
        hsa: &Hsa,
        queues: &mut std::collections::BTreeMap<QueueHandle, UserQueue>,
    ) -> Option<QueueFault> {
        queues.values_mut().filter(|q| !q.fault_reported).find_map(|q| {
            let fault = q.queue.fault(hsa)?;
            q.fault_reported = true;
            Some(fault)
        })
    }

    fn user_queue(&mut self, queue: QueueHandle) -> Result<&mut UserQueue, QueueError> {
        self.queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })
    }

    fn known_signal(&self, signal: SignalHandle) -> Result<Signal, SignalError> {
        if self.signals.contains(&signal.get()) {
            Ok(Signal { handle: signal.get() })
        } else {
            Err(SignalError::Unknown { handle: signal.get() })
        }
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
        if self.hsa.extensions().redline_soft_hsa_inject.is_none() {
            return Err(INJECTION_UNSUPPORTED);
        }
        self.injections.push(fault);
        Ok(())
    }
}

impl Device for HsaDevice {
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
        self.arm_in_runtime(RedlineInjection::ALLOCATION, self.pools.fine.handle)?;
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
        let ptr = self.memory.remove(allocation)?;
        // SAFETY: a live pool allocation of this device, removed from the table; the caller
        // frees only memory no packet in flight names (the HAL's contract).
        unsafe { memory::pool_free(&self.hsa, ptr) }?;
        self.lifetime.frees += 1;
        Ok(())
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError> {
        self.finish().map_err(|e| TransferError::Launch(Box::new(e)))?;
        if data.is_empty() {
            return Ok(());
        }
        let (allocation, offset) = self.memory.locate(va, data.len()).map(|(a, o)| (*a, o))?;
        if allocation.kind.is_host_visible() {
            memory::host_write(&allocation, offset, data);
            return Ok(());
        }
        let hsa = Arc::clone(&self.hsa);
        for (index, chunk) in data.chunks(Self::STAGING_BYTES).enumerate() {
            // CAST: chunk offsets stay inside the located range, below 2^64.
            let at = va + (index * Self::STAGING_BYTES) as u64;
            self.staging().write(&hsa, at, chunk)?;
        }
        Ok(())
    }

    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError> {
        self.finish().map_err(|e| TransferError::Launch(Box::new(e)))?;
        if out.is_empty() {
            return Ok(());
        }
        let (allocation, offset) = self.memory.locate(va, out.len()).map(|(a, o)| (*a, o))?;
        if allocation.kind.is_host_visible() {
            memory::host_read(&allocation, offset, out);
            return Ok(());
        }
        let hsa = Arc::clone(&self.hsa);
        for (index, chunk) in out.chunks_mut(Self::STAGING_BYTES).enumerate() {
            // CAST: as in `write`.
            let at = va + (index * Self::STAGING_BYTES) as u64;
            self.staging().read(&hsa, at, chunk)?;
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
        let placed = self.code.load(&self.hsa, self.agent, self.target, bytes, &self.kernels)?;
        let allocation = self.memory.insert(placed.load_va, placed.span, Kind::Code, core::ptr::null_mut());
        let loaded = self.kernels.insert(&placed.code_object, allocation, placed.load_va, placed.sha256);
        Ok(loaded.clone())
    }

    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError> {
        if let Some(fault) = &self.launch_fault {
            return Err(fault.clone());
        }
        let dispatch = self.launch_dispatch(request)?;
        let hsa = Arc::clone(&self.hsa);
        if self.launch.is_none() {
            self.launch = Some(LaunchPath::create(&hsa, self.agent, self.pools.kernarg)?);
        }
        // PANIC: set just above when it was empty.
        let path = self.launch.as_mut().expect("the launch path exists");
        let published = match path.fault(&hsa) {
            Some(fault) => Err(fault),
            None => path.publish(&hsa, self.timestamp_hz, dispatch, request.kernarg),
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
        if self.unwaited > 0 {
            self.unwaited = 0;
            self.stats.waits += 1;
            let hsa = Arc::clone(&self.hsa);
            if let Some(path) = self.launch.as_mut()
                && let Err(error) = path.wait_all(&hsa, self.timestamp_hz)
            {
                self.fail_launch_path(error);
            }
        }
        self.launch_fault.take().map_or(Ok(()), Err)
    }

    fn stats(&self) -> DeviceStats {
        self.stats
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
        let queue = HsaQueue::create(&self.hsa, self.agent, slots.slots().max(min))?;
        let handle = QueueHandle(self.next_queue);
        // Handles are not reused; 2^32 queue creations are out of reach.
        self.next_queue = self.next_queue.saturating_add(1);
        self.queues.insert(handle, UserQueue { queue, slots: slots.slots(), released: 0, fault_reported: false });
        Ok(handle)
    }

    fn destroy_queue(&mut self, queue: QueueHandle) -> Result<(), QueueError> {
        let user = self.queues.remove(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        user.queue.destroy(&self.hsa);
        Ok(())
    }

    fn write_packet(&mut self, queue: QueueHandle, packet: &[u8; PACKET_SIZE]) -> Result<u64, QueueError> {
        let hsa = Arc::clone(&self.hsa);
        let user = self.user_queue(queue)?;
        user.queue.write_packet(&hsa, packet, user.slots)
    }

    fn ring_doorbell(&mut self, queue: QueueHandle) -> Result<Submission, QueueError> {
        let hsa = Arc::clone(&self.hsa);
        // An inactive queue's doorbell fails and leaves an armed injection for the next one.
        self.user_queue(queue)?.queue.check_fault(&hsa)?;
        if let Some(injection) = self.take_injection(&[Injection::QueueFault, Injection::Hang]) {
            let kind =
                if injection == Injection::Hang { RedlineInjection::QUEUE_HANG } else { RedlineInjection::QUEUE_FAULT };
            let address = self.user_queue(queue)?.queue.address();
            self.arm_in_runtime(kind, address)?;
        }
        let user = self.user_queue(queue)?;
        let end = user.queue.ring_doorbell(&hsa)?;
        let submission = Submission { first: user.released, end };
        user.released = end;
        Ok(submission)
    }

    fn queue_progress(&mut self, queue: QueueHandle) -> Result<QueueProgress, QueueError> {
        let hsa = Arc::clone(&self.hsa);
        let user = self.user_queue(queue)?;
        user.queue.check_fault(&hsa)?;
        Ok(user.queue.progress(&hsa))
    }

    fn create_signal(&mut self, initial: i64) -> Result<SignalHandle, SignalError> {
        if self.signals.len() >= Self::SIGNALS_MAX {
            return Err(SignalError::TooMany { limit: Self::SIGNALS_MAX });
        }
        let signal = create_signal(&self.hsa, initial)?;
        let Some(handle) = SignalHandle::from_raw(signal.handle) else {
            let status = runtime_status(HsaStatus::ERROR_INVALID_SIGNAL);
            return Err(BackendError::Call { call: "hsa_signal_create", status }.into());
        };
        self.signals.insert(signal.handle);
        Ok(handle)
    }

    fn destroy_signal(&mut self, signal: SignalHandle) -> Result<(), SignalError> {
        let raw = self.known_signal(signal)?;
        self.signals.remove(&signal.get());
        // SAFETY: a live signal of this device, removed from the table.
        let status = unsafe { (self.hsa.fns().hsa_signal_destroy)(raw) };
        check("hsa_signal_destroy", status)?;
        Ok(())
    }

    fn signal_value(&self, signal: SignalHandle) -> Result<i64, SignalError> {
        let raw = self.known_signal(signal)?;
        // SAFETY: a live signal of this device.
        Ok(unsafe { (self.hsa.fns().hsa_signal_load_scacquire)(raw) })
    }

    fn store_signal(&mut self, signal: SignalHandle, value: i64) -> Result<(), SignalError> {
        let raw = self.known_signal(signal)?;
        // SAFETY: a live signal of this device.
        unsafe { (self.hsa.fns().hsa_signal_store_relaxed)(raw, value) };
        Ok(())
    }

    fn wait_signal(
        &mut self,
        signal: SignalHandle,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64, WaitError> {
        let raw = self.known_signal(signal)?;
        let hsa = Arc::clone(&self.hsa);
        let queues = &mut self.queues;
        let stop = || Self::unreported_fault(&hsa, queues);
        match queue::wait(&hsa, raw, (condition, compare), timeout, self.timestamp_hz, stop) {
            Ok(value) => Ok(value),
            Err(WaitEnd::Stopped(fault)) => Err(WaitError::Fault { signal, fault: Box::new(fault) }),
            Err(WaitEnd::Timeout(value)) => Err(WaitError::Timeout { signal, value, condition, compare, timeout }),
        }
    }
}
