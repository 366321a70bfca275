//! The HSA backend: [`HsaDevice`] implements [`Device`] over ROCr through `hsa-sys`.
//!
//! # What it uses
//!
//! - **Agents.** `hsa_iterate_agents`, GPU agents in the runtime's order; the agent's first ISA
//!   (`hsa_agent_iterate_isas` + `hsa_isa_get_info_alt(NAME)`, `amdgcn-amd-amdhsa--gfx1100`) is
//!   mapped to a [`Target`]; any other ISA fails closed with [`HsaOpenError::UnsupportedIsa`].
//! - **Memory.** Allocations and IBs come from the GPU agent's coarse-grained, device-local
//!   global pool. Host copies go through one fine-grained system-memory staging buffer of
//!   [`HsaDevice::STAGING_BYTES`] and `hsa_memory_copy` (the device pool need not be host
//!   visible). Kernargs of [`Device::launch`] are written by the host straight into memory from
//!   the CPU agent's `KERNARG_INIT` pool, which the packet processor reads.
//! - **IB memory.** [`Device::allocate_ib`] uses the same coarse device-local pool: the IB is
//!   written once through the staging copy before the PM4-IB packet naming it is published, and
//!   that packet's system-scope acquire makes it visible to the command processor.
//! - **Code objects.** `hsa_code_object_reader_create_from_memory`, `hsa_executable_create_alt`,
//!   `hsa_executable_load_agent_code_object`, `hsa_executable_freeze`; each kernel's `name.kd`
//!   symbol gives `KERNEL_OBJECT` (the descriptor VA). The metadata comes from `kernarg-abi`'s
//!   reading of the same bytes; the load base is the descriptor VA minus the descriptor's ELF
//!   address.
//! - **Queues.** `hsa_queue_create` (single producer) with an error callback that records the
//!   fault; the queue is inactivated the first time the fault is seen. Packets are published
//!   body first, header word last with a release store, and the doorbell is
//!   `hsa_signal_store_screlease` of the queue's `doorbell_signal`.
//! - **Waits.** Every wait is bounded by wall clock (see `queue::wait`). [`Drop`] destroys queues,
//!   signals and executables and frees memory without waiting on any signal.
//!
//! [`Device::submit`] returns once the packet processor has *read* every published packet
//! (bounded by [`HsaDevice::SUBMIT_TIMEOUT`]); completion is observed through the packets'
//! completion signals, as the retained route does.

mod discover;
mod queue;

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use aql_packets::{Dimensions, KernelDispatch, KernelDispatchError, PacketControl, RingSize, SignalCondition};
use hsa_sys::{Agent, AmdMemoryPool, Hsa, HsaStatus, Signal, SystemInfo};
use kernels::memory::{FaultReason, MemoryFault};
use pm4_encoding::Target;
use tape_core::AllocationId;

pub use code::{CODE_OBJECT_BYTES_MAX, CODE_OBJECTS_MAX};
pub use discover::{AGENTS_MAX, ISA_NAME_BYTES_MAX, ISA_PREFIX, ISAS_MAX, POOLS_MAX, target_of_isa};
pub use queue::WAIT_SLICE;

use discover::check;
use hal::{
    AllocateError, BackendError, Device, DeviceAllocation, FreeError, LaunchError, LaunchRequest, LoadError,
    LoadedCodeObject, QueueError, QueueHandle, SignalError, SignalHandle, TransferError, WaitError,
};
use queue::HsaQueue;

mod code;

/// Why [`HsaDevice::open`] failed.
#[derive(Debug, thiserror::Error)]
pub enum HsaOpenError {
    /// A runtime call failed (`hsa_init` on a machine without `/dev/kfd`, ...).
    #[error(transparent)]
    Call(#[from] BackendError),
    /// There is no GPU agent with this index.
    #[error("no GPU agent {index}: the runtime reports {found} GPU agents")]
    NoGpuAgent {
        /// The index asked for.
        index: usize,
        /// GPU agents found.
        found: usize,
    },
    /// The agent reports no ISA.
    #[error("GPU agent {index} reports no ISA")]
    NoIsa {
        /// The agent index.
        index: usize,
    },
    /// The agent's ISA is not one of the supported targets (fail closed).
    #[error(
        "GPU agent {index} has ISA {isa}, which the lowering does not support (supported: gfx1030, gfx1100, gfx1151, gfx1200, gfx1201)"
    )]
    UnsupportedIsa {
        /// The agent index.
        index: usize,
        /// The ISA name the runtime reported.
        isa: String,
    },
    /// A memory pool the device needs does not exist.
    #[error("no {0} memory pool")]
    NoPool(&'static str),
}

/// What an allocation is for; only `User` allocations may be freed by the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    User,
    Ib,
    Code,
}

#[derive(Clone, Copy, Debug)]
struct Allocation {
    id: AllocationId,
    size: u64,
    kind: Kind,
    /// The runtime pointer to free; `None` for ranges the runtime owns (loaded code).
    ptr: Option<*mut core::ffi::c_void>,
}

/// The queue, signal and kernarg buffer of the ordinary launch path, created at the first launch.
#[derive(Debug)]
struct LaunchPath {
    queue: HsaQueue,
    signal: Signal,
    kernarg: *mut u8,
}

/// A GPU driven through the HSA runtime. See the module documentation.
#[derive(Debug)]
pub struct HsaDevice {
    hsa: Arc<Hsa>,
    agent: Agent,
    target: Target,
    isa: String,
    pools: discover::Pools,
    timestamp_hz: u64,
    // INVARIANT: STAGING_BYTES of fine-grained system memory the GPU agent may access.
    staging: *mut u8,
    allocations: BTreeMap<u64, Allocation>,
    next_allocation: u32,
    code: code::Executables,
    queues: BTreeMap<QueueHandle, HsaQueue>,
    next_queue: u32,
    signals: BTreeSet<u64>,
    launch_path: Option<LaunchPath>,
}

impl HsaDevice {
    /// Live allocations at most.
    pub const ALLOCATIONS_MAX: usize = 4096;
    /// Largest single allocation.
    pub const ALLOCATION_BYTES_MAX: u64 = 16 << 30;
    /// The host staging buffer used by [`Device::write`] and [`Device::read`].
    pub const STAGING_BYTES: usize = 4 << 20;
    /// Kernarg bytes of one ordinary launch at most.
    pub const KERNARG_BYTES_MAX: usize = 4096;
    /// Slots of the ordinary launch path's queue.
    pub const LAUNCH_QUEUE_SLOTS: u32 = 64;
    /// Bound on one ordinary launch, from doorbell to completion signal.
    pub const LAUNCH_TIMEOUT: Duration = Duration::from_secs(10);
    /// Bound on [`Device::submit`] waiting for the packet processor to read the queue.
    pub const SUBMIT_TIMEOUT: Duration = Duration::from_secs(10);
    /// Queues at most.
    pub const QUEUES_MAX: usize = 16;
    /// Signals at most.
    pub const SIGNALS_MAX: usize = 1024;

    /// Initialises the runtime (`hsa_init`) and opens GPU agent `agent_index`.
    ///
    /// # Errors
    /// [`HsaOpenError::Call`] naming `hsa_init` and its status when the runtime cannot start (no
    /// `/dev/kfd`: `HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)`), or any later discovery call;
    /// [`HsaOpenError::NoGpuAgent`], [`HsaOpenError::UnsupportedIsa`], [`HsaOpenError::NoPool`].
    pub fn open(hsa: Arc<Hsa>, agent_index: usize) -> Result<Self, HsaOpenError> {
        check("hsa_init", hsa.init())?;
        // From here on `guard` owns the runtime reference: every early return shuts it down.
        let guard = InitGuard(Some(hsa));
        let hsa = guard.hsa();
        let gpus = discover::gpu_agents(hsa)?;
        let agent = *gpus.get(agent_index).ok_or(HsaOpenError::NoGpuAgent { index: agent_index, found: gpus.len() })?;
        let isa =
            discover::isa_names(hsa, agent)?.into_iter().next().ok_or(HsaOpenError::NoIsa { index: agent_index })?;
        let target =
            target_of_isa(&isa).ok_or_else(|| HsaOpenError::UnsupportedIsa { index: agent_index, isa: isa.clone() })?;
        let (pools, _cpu_agent) = discover::pools(hsa, agent).map_err(|e| match e {
            discover::PoolError::Call(call) => HsaOpenError::Call(call),
            discover::PoolError::Missing(which) => HsaOpenError::NoPool(which),
        })?;
        let mut timestamp_hz = 0u64;
        // SAFETY: TIMESTAMP_FREQUENCY is a uint64_t (hsa.h), written into `timestamp_hz`.
        let status =
            unsafe { (hsa.fns().hsa_system_get_info)(SystemInfo::TIMESTAMP_FREQUENCY, (&raw mut timestamp_hz).cast()) };
        check("hsa_system_get_info", status)?;
        let staging = pool_allocate(hsa, pools.fine, Self::STAGING_BYTES as u64, agent)?;
        Ok(Self {
            hsa: guard.release(),
            agent,
            target,
            isa,
            pools,
            timestamp_hz,
            staging: staging.cast(),
            allocations: BTreeMap::new(),
            next_allocation: 1,
            code: code::Executables::default(),
            queues: BTreeMap::new(),
            next_queue: 1,
            signals: BTreeSet::new(),
            launch_path: None,
        })
    }

    /// The ISA name the runtime reported for the agent.
    #[must_use]
    pub fn isa(&self) -> &str {
        &self.isa
    }

    /// The runtime.
    #[must_use]
    pub fn runtime(&self) -> &Arc<Hsa> {
        &self.hsa
    }

    fn insert(&mut self, va: u64, size: u64, kind: Kind, ptr: Option<*mut core::ffi::c_void>) -> DeviceAllocation {
        let id = AllocationId(self.next_allocation);
        self.next_allocation += 1;
        self.allocations.insert(va, Allocation { id, size, kind, ptr });
        DeviceAllocation { id, va, size }
    }

    fn allocate_kind(&mut self, size: u64, kind: Kind) -> Result<DeviceAllocation, AllocateError> {
        if size == 0 {
            return Err(AllocateError::Empty);
        }
        if size > Self::ALLOCATION_BYTES_MAX {
            return Err(AllocateError::TooLarge { size, limit: Self::ALLOCATION_BYTES_MAX });
        }
        if self.allocations.len() >= Self::ALLOCATIONS_MAX {
            return Err(AllocateError::TooMany { limit: Self::ALLOCATIONS_MAX });
        }
        let ptr = pool_allocate(&self.hsa, self.pools.coarse, size, self.agent)?;
        let allocation = self.insert(ptr.addr() as u64, size, kind, Some(ptr));
        if let Err(error) = self.fill_zero(allocation.va, size) {
            self.allocations.remove(&allocation.va);
            // SAFETY: `ptr` came from `hsa_amd_memory_pool_allocate` just above and is unused.
            let _ = unsafe { (self.hsa.fns().hsa_amd_memory_pool_free)(ptr) };
            return Err(error);
        }
        Ok(allocation)
    }

    /// Zeroes `size` bytes at `va` through the staging buffer.
    fn fill_zero(&mut self, va: u64, size: u64) -> Result<(), AllocateError> {
        // SAFETY: INVARIANT of `staging`: STAGING_BYTES writable host bytes.
        unsafe { core::ptr::write_bytes(self.staging, 0, Self::STAGING_BYTES) };
        let mut done = 0u64;
        while done < size {
            let n = (size - done).min(Self::STAGING_BYTES as u64);
            self.copy(va + done, self.staging.cast_const(), n)?;
            done += n;
        }
        Ok(())
    }

    /// `hsa_memory_copy` of `n` bytes.
    fn copy(&self, dst: u64, src: *const u8, n: u64) -> Result<(), BackendError> {
        let dst = core::ptr::with_exposed_provenance_mut::<core::ffi::c_void>(usize::try_from(dst).unwrap_or(0));
        // SAFETY: both ranges are runtime allocations (a device allocation checked by the caller
        // to contain the range, and the staging buffer); `n` <= STAGING_BYTES.
        let status = unsafe { (self.hsa.fns().hsa_memory_copy)(dst, src.cast(), usize::try_from(n).unwrap_or(0)) };
        check("hsa_memory_copy", status)
    }

    /// Checks that `[va, va + len)` lies inside one allocation.
    fn check_range(&self, va: u64, len: usize) -> Result<(), MemoryFault> {
        let len = len as u64;
        let fault = |reason| MemoryFault { address: va, len, reason };
        let Some((&base, allocation)) = self.allocations.range(..=va).next_back() else {
            return Err(fault(FaultReason::Unmapped));
        };
        if va - base >= allocation.size && len > 0 {
            return Err(fault(FaultReason::Unmapped));
        }
        if va - base + len > allocation.size {
            return Err(fault(FaultReason::OutOfBounds { base, size: allocation.size }));
        }
        Ok(())
    }

    fn launch_path(&mut self) -> Result<&mut LaunchPath, LaunchError> {
        if self.launch_path.is_none() {
            let queue = HsaQueue::create(&self.hsa, self.agent, Self::LAUNCH_QUEUE_SLOTS)?;
            let signal = match create_signal(&self.hsa, 0) {
                Ok(signal) => signal,
                Err(error) => {
                    queue.destroy(&self.hsa);
                    return Err(error.into());
                }
            };
            let kernarg = pool_allocate(&self.hsa, self.pools.kernarg, Self::KERNARG_BYTES_MAX as u64, self.agent);
            let kernarg = match kernarg {
                Ok(ptr) => ptr.cast(),
                Err(error) => {
                    queue.destroy(&self.hsa);
                    // SAFETY: created just above, named by no packet.
                    let _ = unsafe { (self.hsa.fns().hsa_signal_destroy)(signal) };
                    return Err(error.into());
                }
            };
            self.launch_path = Some(LaunchPath { queue, signal, kernarg });
        }
        // PANIC: set just above when it was empty.
        Ok(self.launch_path.as_mut().expect("launch path exists"))
    }

    /// Destroys every runtime object and frees every allocation; never waits on a signal.
    fn release_all(&mut self) {
        let hsa = Arc::clone(&self.hsa);
        let fns = hsa.fns();
        if let Some(mut path) = self.launch_path.take() {
            path.queue.inactivate(&hsa);
            path.queue.destroy(&hsa);
            // SAFETY: the queue that could name the signal and kernargs is destroyed.
            unsafe {
                let _ = (fns.hsa_signal_destroy)(path.signal);
                let _ = (fns.hsa_amd_memory_pool_free)(path.kernarg.cast());
            }
        }
        for (_, mut queue) in std::mem::take(&mut self.queues) {
            queue.inactivate(&hsa);
            queue.destroy(&hsa);
        }
        for handle in std::mem::take(&mut self.signals) {
            // SAFETY: a signal this device created; no queue that could use it is left.
            let _ = unsafe { (fns.hsa_signal_destroy)(Signal { handle }) };
        }
        self.code.destroy_all(&hsa);
        for (_, allocation) in std::mem::take(&mut self.allocations) {
            if let Some(ptr) = allocation.ptr {
                // SAFETY: a live pool allocation of this device; nothing runs that uses it.
                let _ = unsafe { (fns.hsa_amd_memory_pool_free)(ptr) };
            }
        }
        self.next_allocation = 1;
    }
}

impl Drop for HsaDevice {
    fn drop(&mut self) {
        self.release_all();
        // SAFETY: the staging buffer is unused from here on; `hsa_shut_down` drops the reference
        // `open` took with `hsa_init`. Neither call waits on the GPU.
        unsafe {
            let _ = (self.hsa.fns().hsa_amd_memory_pool_free)(self.staging.cast());
            let _ = (self.hsa.fns().hsa_shut_down)();
        }
    }
}

/// Holds the `hsa_init` reference while [`HsaDevice::open`] runs.
struct InitGuard(Option<Arc<Hsa>>);

impl InitGuard {
    fn hsa(&self) -> &Hsa {
        // PANIC: `Some` until `release`, which consumes the guard.
        self.0.as_ref().expect("guard holds the runtime")
    }

    fn release(mut self) -> Arc<Hsa> {
        // PANIC: as above.
        self.0.take().expect("guard holds the runtime")
    }
}

impl Drop for InitGuard {
    fn drop(&mut self) {
        if let Some(hsa) = &self.0 {
            // SAFETY: drops the reference `hsa_init` took; nothing created under it survives.
            let _ = unsafe { (hsa.fns().hsa_shut_down)() };
        }
    }
}

/// `hsa_amd_memory_pool_allocate` plus access for `agent`.
fn pool_allocate(
    hsa: &Hsa,
    pool: AmdMemoryPool,
    size: u64,
    agent: Agent,
) -> Result<*mut core::ffi::c_void, BackendError> {
    let mut ptr: *mut core::ffi::c_void = core::ptr::null_mut();
    let bytes = usize::try_from(size).map_err(|_| BackendError::Limit {
        what: "allocation bytes",
        requested: size,
        limit: usize::MAX as u64,
    })?;
    // SAFETY: `ptr` is a valid out-pointer; flags must be 0 (hsa_ext_amd.h).
    let status = unsafe { (hsa.fns().hsa_amd_memory_pool_allocate)(pool, bytes, 0, &raw mut ptr) };
    check("hsa_amd_memory_pool_allocate", status)?;
    // SAFETY: one agent, no flags, `ptr` a live allocation of the pool.
    let status = unsafe { (hsa.fns().hsa_amd_agents_allow_access)(1, &raw const agent, core::ptr::null(), ptr) };
    if let Err(error) = check("hsa_amd_agents_allow_access", status) {
        // SAFETY: allocated above, unused.
        let _ = unsafe { (hsa.fns().hsa_amd_memory_pool_free)(ptr) };
        return Err(error);
    }
    Ok(ptr)
}

fn create_signal(hsa: &Hsa, initial: i64) -> Result<Signal, BackendError> {
    let mut signal = Signal::default();
    // SAFETY: no consumers list (0, null); `signal` is a valid out-pointer.
    let status = unsafe { (hsa.fns().hsa_signal_create)(initial, 0, core::ptr::null(), &raw mut signal) };
    check("hsa_signal_create", status)?;
    Ok(signal)
}

impl Device for HsaDevice {
    fn target(&self) -> Target {
        self.target
    }

    fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.allocate_kind(size, Kind::User)
    }

    fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError> {
        let not_live = FreeError::NotLive { id: allocation.id, va: allocation.va };
        let live = self.allocations.get(&allocation.va).ok_or(not_live)?;
        if live.id != allocation.id {
            return Err(not_live);
        }
        if live.kind != Kind::User {
            return Err(FreeError::DeviceOwned { id: allocation.id, va: allocation.va });
        }
        let ptr = live.ptr.ok_or(not_live)?;
        // SAFETY: a live pool allocation of this device, removed from the table below.
        let status = unsafe { (self.hsa.fns().hsa_amd_memory_pool_free)(ptr) };
        self.allocations.remove(&allocation.va);
        check("hsa_amd_memory_pool_free", status)?;
        Ok(())
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError> {
        self.check_range(va, data.len())?;
        for (index, chunk) in data.chunks(Self::STAGING_BYTES).enumerate() {
            // SAFETY: INVARIANT of `staging`; `chunk.len()` <= STAGING_BYTES.
            unsafe { core::ptr::copy_nonoverlapping(chunk.as_ptr(), self.staging, chunk.len()) };
            let offset = (index * Self::STAGING_BYTES) as u64;
            self.copy(va + offset, self.staging.cast_const(), chunk.len() as u64)?;
        }
        Ok(())
    }

    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError> {
        self.check_range(va, out.len())?;
        for (index, chunk) in out.chunks_mut(Self::STAGING_BYTES).enumerate() {
            let offset = (index * Self::STAGING_BYTES) as u64;
            let src = core::ptr::with_exposed_provenance::<u8>(usize::try_from(va + offset).unwrap_or(0));
            let dst = core::ptr::with_exposed_provenance_mut::<core::ffi::c_void>(self.staging.expose_provenance());
            // SAFETY: the range lies in one device allocation (checked); the staging buffer
            // holds `chunk.len()` <= STAGING_BYTES bytes.
            let status = unsafe { (self.hsa.fns().hsa_memory_copy)(dst, src.cast(), chunk.len()) };
            check("hsa_memory_copy", status)?;
            // SAFETY: INVARIANT of `staging`; the copy above filled `chunk.len()` bytes.
            unsafe { core::ptr::copy_nonoverlapping(self.staging.cast_const(), chunk.as_mut_ptr(), chunk.len()) };
        }
        Ok(())
    }

    fn load_code_object(&mut self, bytes: &[u8]) -> Result<LoadedCodeObject, LoadError> {
        let placed = self.code.load(&self.hsa, self.agent, self.target, bytes)?;
        let allocation = self.insert(placed.load_va, placed.span, Kind::Code, None);
        Ok(placed.finish(allocation))
    }

    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError> {
        let kernel = self.code.kernel(request.kernel_object)?.clone();
        code::check_launch(&kernel, request, Self::KERNARG_BYTES_MAX)?;
        let timeout = Self::LAUNCH_TIMEOUT;
        let (hsa, timestamp_hz) = (Arc::clone(&self.hsa), self.timestamp_hz);
        let path = self.launch_path()?;
        // SAFETY: KERNARG_BYTES_MAX bytes of kernarg memory; the previous launch completed (its
        // signal reached 0), so the packet processor no longer reads them.
        unsafe { core::ptr::copy_nonoverlapping(request.kernarg.as_ptr(), path.kernarg, request.kernarg.len()) };
        // SAFETY: a live signal of the launch path.
        unsafe { (hsa.fns().hsa_signal_store_relaxed)(path.signal, 1) };
        let dispatch = KernelDispatch {
            control: PacketControl::SYSTEM_BARRIER,
            dimensions: Dimensions::fewest(request.grid_work_items, request.workgroup_work_items),
            workgroup_size: request.workgroup_work_items,
            grid_size: request.grid_work_items,
            private_segment_size: kernel.private_segment_fixed_size,
            group_segment_size: kernel.group_segment_fixed_size.saturating_add(request.dynamic_lds_bytes),
            kernel_object: request.kernel_object,
            kernarg_address: path.kernarg.addr() as u64,
            completion_signal: path.signal.handle,
        };
        let packet = aql_packets::KernelDispatchPacket::new(&dispatch).map_err(|error| match error {
            KernelDispatchError::KernelObject { address, .. } => LaunchError::UnknownKernel { kernel_object: address },
            KernelDispatchError::ZeroWorkgroupSize { .. } | KernelDispatchError::ZeroGridSize { .. } => {
                LaunchError::ZeroDimension {
                    kernel: kernel.name.clone(),
                    grid: request.grid_work_items,
                    workgroup: request.workgroup_work_items,
                }
            }
        })?;
        path.queue.publish(&hsa, packet.as_array()).map_err(queue_launch_error)?;
        path.queue.ring_doorbell(&hsa).map_err(queue_launch_error)?;
        let waited = queue::wait(&hsa, path.signal, SignalCondition::Eq, 0, timeout, timestamp_hz);
        path.queue.check_fault(&hsa).map_err(|fault| LaunchError::Queue(Box::new(fault)))?;
        if waited.is_err() {
            // A dispatch that never completes leaves the queue unusable: inactivate it and
            // start a new launch path at the next launch.
            if let Some(mut path) = self.launch_path.take() {
                path.queue.inactivate(&hsa);
                path.queue.destroy(&hsa);
                // SAFETY: the queue is destroyed; the kernarg memory and signal are unused.
                unsafe {
                    let _ = (hsa.fns().hsa_signal_destroy)(path.signal);
                    let _ = (hsa.fns().hsa_amd_memory_pool_free)(path.kernarg.cast());
                }
            }
            return Err(BackendError::Timeout { call: "kernel dispatch completion", timeout }.into());
        }
        Ok(())
    }

    fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        let (&base, allocation) = self.allocations.range(..=va).next_back()?;
        (va - base < allocation.size).then_some((allocation.id, va - base))
    }

    fn reset(&mut self) {
        self.release_all();
    }

    fn create_queue(&mut self, slots: RingSize) -> Result<QueueHandle, QueueError> {
        if self.queues.len() >= Self::QUEUES_MAX {
            return Err(QueueError::TooManyQueues { limit: Self::QUEUES_MAX });
        }
        let queue = HsaQueue::create(&self.hsa, self.agent, slots.slots())?;
        // PANIC: next_queue starts at 1 and only grows (u32 wraps after 4e9 queues: saturate).
        let handle = QueueHandle(NonZeroU32::new(self.next_queue).unwrap_or(NonZeroU32::MAX));
        self.next_queue = self.next_queue.saturating_add(1);
        self.queues.insert(handle, queue);
        Ok(handle)
    }

    fn destroy_queue(&mut self, queue: QueueHandle) -> Result<(), QueueError> {
        let live = self.queues.remove(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        live.destroy(&self.hsa);
        Ok(())
    }

    fn publish(&mut self, queue: QueueHandle, packet: &[u8; aql_packets::PACKET_SIZE]) -> Result<u64, QueueError> {
        let live = self.queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        live.publish(&self.hsa, packet)
    }

    fn submit(&mut self, queue: QueueHandle) -> Result<u64, QueueError> {
        let live = self.queues.get_mut(&queue).ok_or(QueueError::UnknownQueue { queue })?;
        let before = live.ring_doorbell(&self.hsa)?;
        let read = live.drain(&self.hsa, Self::SUBMIT_TIMEOUT)?;
        Ok(read.min(before))
    }

    fn create_signal(&mut self, initial: i64) -> Result<SignalHandle, SignalError> {
        if self.signals.len() >= Self::SIGNALS_MAX {
            return Err(SignalError::TooMany { limit: Self::SIGNALS_MAX });
        }
        let signal = create_signal(&self.hsa, initial)?;
        let Some(handle) = SignalHandle::from_raw(signal.handle) else {
            return Err(BackendError::Hsa { call: "hsa_signal_create", status: HsaStatus::ERROR_INVALID_SIGNAL }.into());
        };
        self.signals.insert(signal.handle);
        Ok(handle)
    }

    fn destroy_signal(&mut self, signal: SignalHandle) -> Result<(), SignalError> {
        if !self.signals.remove(&signal.get()) {
            return Err(SignalError::Unknown { handle: signal.get() });
        }
        // SAFETY: a live signal of this device, removed from the table.
        let status = unsafe { (self.hsa.fns().hsa_signal_destroy)(Signal { handle: signal.get() }) };
        check("hsa_signal_destroy", status)?;
        Ok(())
    }

    fn signal_value(&self, signal: SignalHandle) -> Result<i64, SignalError> {
        if !self.signals.contains(&signal.get()) {
            return Err(SignalError::Unknown { handle: signal.get() });
        }
        // SAFETY: a live signal of this device.
        Ok(unsafe { (self.hsa.fns().hsa_signal_load_scacquire)(Signal { handle: signal.get() }) })
    }

    fn wait_signal(
        &mut self,
        signal: SignalHandle,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64, WaitError> {
        if !self.signals.contains(&signal.get()) {
            return Err(SignalError::Unknown { handle: signal.get() }.into());
        }
        let raw = Signal { handle: signal.get() };
        queue::wait(&self.hsa, raw, condition, compare, timeout, self.timestamp_hz)
            .map_err(|value| WaitError::Timeout { signal, value, condition, compare, timeout })
    }

    fn allocate_ib(&mut self, size_dwords: u32) -> Result<DeviceAllocation, AllocateError> {
        self.allocate_kind(u64::from(size_dwords) * 4, Kind::Ib)
    }
}

/// A queue error of the launch path as a launch error.
fn queue_launch_error(error: QueueError) -> LaunchError {
    match error {
        QueueError::Fault(fault) => LaunchError::Queue(Box::new(fault)),
        QueueError::Backend(backend) => LaunchError::Backend(backend),
        other => LaunchError::Backend(BackendError::Unsupported {
            backend: "HSA",
            operation: if matches!(other, QueueError::Full { .. }) { "launch on a full queue" } else { "launch" },
        }),
    }
}

/// One GPU agent as [`probe`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentProbe {
    /// Index among the GPU agents (the `agent_index` of [`HsaDevice::open`]).
    pub index: usize,
    /// The agent's first ISA name, if it reports one.
    pub isa: Option<String>,
    /// The supported target that ISA denotes; `None` when the lowering does not support it.
    pub target: Option<Target>,
}

/// What [`probe`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The status of `hsa_init`.
    pub init_status: HsaStatus,
    /// The GPU agents (empty when `hsa_init` failed).
    pub agents: Vec<AgentProbe>,
    /// A discovery call that failed after a successful `hsa_init`.
    pub error: Option<BackendError>,
}

/// Initialises the runtime, lists the GPU agents and their targets, and shuts the runtime down
/// again (for diagnostics: `redline doctor`).
#[must_use]
pub fn probe(hsa: &Hsa) -> Probe {
    let init_status = hsa.init();
    if !init_status.is_success() {
        return Probe { init_status, agents: Vec::new(), error: None };
    }
    let mut agents = Vec::new();
    let mut error = None;
    match discover::gpu_agents(hsa) {
        Ok(gpus) => {
            for (index, agent) in gpus.into_iter().enumerate() {
                match discover::isa_names(hsa, agent) {
                    Ok(names) => {
                        let isa = names.into_iter().next();
                        let target = isa.as_deref().and_then(target_of_isa);
                        agents.push(AgentProbe { index, isa, target });
                    }
                    Err(e) => error = Some(e),
                }
            }
        }
        Err(e) => error = Some(e),
    }
    // SAFETY: drops the reference the successful `hsa_init` above took; nothing created under it
    // survives (discovery creates no runtime objects).
    let _ = unsafe { (hsa.fns().hsa_shut_down)() };
    Probe { init_status, agents, error }
}
