//! Redline's device HAL: the [`Device`] trait, its handles, the kernel table and the
//! backend-neutral errors ([`MemoryFault`] with the range check that produces it,
//! [`memory::locate`]). It is the only thing the route (lowering, plans, controller, model)
//! knows of a GPU; every backend (the soft device, the HSA backend) implements it below. It
//! knows devices, memory, queues, packets, code objects and errors, and nothing of the kernels
//! a device runs or how a backend runs them (no kernel catalogue, no CPU references).
//!
//! # What a device is
//! A device owns a GPU virtual address space. Device memory is named by its virtual address
//! (VA); every allocation also has an [`AllocationId`] so that recorded effects can name the
//! allocation they touch. Identities restart when the device is [`reset`](Device::reset), and the
//! device's [`Lifetime`] says whether anything a holder of device addresses relies on may have
//! gone (a reset, a free).
//!
//! # Three kinds of memory
//! - [`Device::allocate`]: device memory. The host reaches it only through the copies
//!   [`Device::write`] and [`Device::read`] (on HSA: coarse-grained device-local memory and
//!   `hsa_memory_copy`).
//! - [`Device::allocate_kernarg`]: host-visible memory the packet processor and kernels read,
//!   for kernarg segments the host writes directly ([`Device::store_u32`] is one host store; on
//!   HSA: the kernarg pool, mapped into the process).
//! - [`Device::allocate_ib`]: host-visible memory the command processor executes as an indirect
//!   buffer, also written directly.
//!
//! # The ordinary path
//! [`Device::launch`] is asynchronous and in order, as a HIP stream launch is: it checks the
//! request, places the kernarg segment, publishes one AQL kernel-dispatch packet with the barrier
//! bit and rings the doorbell, and returns without waiting. The host waits only where it needs
//! results: [`Device::finish`] waits for every launch, and [`Device::read`] and [`Device::write`]
//! wait first (as `hipMemcpy` does), so a copy never overtakes a launch. A failure while a launch
//! runs is reported by the next of these waits, and later launches are refused with it until a
//! wait has reported it. [`Device::stats`] counts the launches and the waits that had launches to
//! wait for.
//!
//! # Queues, packets and signals
//! The retained route drives a queue of its own in three separate steps, the same on every
//! backend: [`Device::write_packet`] takes the next write index and publishes a packet into its
//! ring slot (body first, header word last with release); [`Device::ring_doorbell`] makes every
//! written packet visible to the packet processor and returns a [`Submission`] naming exactly the
//! packets this doorbell released; completion is observed through the packets' completion
//! signals ([`Device::wait_signal`]) and the queue's read index ([`Device::queue_progress`]).
//! Returning from `ring_doorbell` never means that a packet ran.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::num::{NonZeroU32, NonZeroU64};
use std::time::Duration;

use aql_packets::{RingSize, SignalCondition};
use pm4_encoding::Target;
pub use tape_core::AllocationId;

mod kernel_table;
pub mod memory;

pub use kernel_table::{KernelSlot, KernelTable};

/// A live device allocation: what [`Device::allocate`] returns and [`Device::free`] takes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceAllocation {
    /// Identity within the current device session (restarts on [`Device::reset`]).
    pub id: AllocationId,
    /// First byte.
    pub va: u64,
    /// Size in bytes (at least the size asked for).
    pub size: u64,
}

impl DeviceAllocation {
    /// The VA `offset` bytes into the allocation, when that byte lies inside it.
    #[must_use]
    pub fn at(&self, offset: u64) -> Option<u64> {
        (offset < self.size).then(|| self.va + offset)
    }
}

/// One kernel of a loaded code object, at its device addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedKernel {
    /// `.name` from the metadata.
    pub name: String,
    /// VA of the 64-byte kernel descriptor (`.kd`): the AQL packet's `kernel_object`.
    pub kd_va: u64,
    /// VA of the first instruction (PGM_LO/HI), 256-byte aligned.
    pub entry_va: u64,
    /// `.kernarg_segment_size`: the exact length of a launch's kernarg bytes.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`.
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size` (32 or 64).
    pub wavefront_size: u32,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.vgpr_count`.
    pub vgpr_count: u32,
    /// `.agpr_count` (0 where the metadata has none).
    pub agpr_count: u32,
    /// `.sgpr_count`.
    pub sgpr_count: u32,
}

impl LoadedKernel {
    /// `kernel` of a code object whose ELF virtual address 0 is at `load_va`: its descriptor and
    /// entry at their ELF addresses from there, its launch facts from its metadata.
    #[must_use]
    pub fn placed(kernel: &kernarg_abi::Kernel, load_va: u64) -> Self {
        let m = &kernel.metadata;
        Self {
            name: m.name.clone(),
            kd_va: load_va.wrapping_add(kernel.descriptor_address),
            entry_va: load_va.wrapping_add(kernel.entry_address),
            kernarg_segment_size: m.kernarg_segment_size,
            kernarg_segment_align: m.kernarg_segment_align,
            group_segment_fixed_size: m.group_segment_fixed_size,
            private_segment_fixed_size: m.private_segment_fixed_size,
            wavefront_size: m.wavefront_size,
            max_flat_workgroup_size: m.max_flat_workgroup_size,
            vgpr_count: m.vgpr_count,
            agpr_count: m.agpr_count.unwrap_or(0),
            sgpr_count: m.sgpr_count,
        }
    }
}

/// A code object placed in device memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedCodeObject {
    /// The allocation holding the loaded segments.
    pub allocation: DeviceAllocation,
    /// Load base: the VA that ELF virtual address 0 maps to.
    pub load_va: u64,
    /// SHA-256 of the bytes given to [`Device::load_code_object`].
    pub sha256: [u8; 32],
    /// Every kernel of the code object, in metadata order.
    pub kernels: Vec<LoadedKernel>,
}

impl LoadedCodeObject {
    /// The kernel called `name`.
    #[must_use]
    pub fn kernel(&self, name: &str) -> Option<&LoadedKernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// One ordinary launch: what an AQL kernel-dispatch packet carries, with the kernarg segment as
/// bytes the device places in its own kernarg memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchRequest<'a> {
    /// The kernel's descriptor VA ([`LoadedKernel::kd_va`]), as in the packet's `kernel_object`.
    pub kernel_object: u64,
    /// Grid size in work-items per dimension (not in work-groups).
    pub grid_work_items: [u32; 3],
    /// Work-group size in work-items per dimension.
    pub workgroup_work_items: [u16; 3],
    /// Dynamic LDS bytes on top of the kernel's static group segment.
    pub dynamic_lds_bytes: u32,
    /// The exact kernarg segment: [`LoadedKernel::kernarg_segment_size`] bytes.
    pub kernarg: &'a [u8],
}

mod errors;

pub use errors::*;
pub use memory::{FaultReason, MemoryFault};

/// An AQL queue of a device: what [`Device::create_queue`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueHandle(pub NonZeroU32);

/// A signal of a device, as an AQL packet names it (`hsa_signal_t`, never 0: 0 means "no
/// signal" in a packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SignalHandle(pub NonZeroU64);

impl SignalHandle {
    /// The raw handle, as written into a packet's `completion_signal` or `dep_signal`.
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0.get()
    }

    /// The handle a packet names, or `None` for 0 (no signal).
    #[must_use]
    pub const fn from_raw(raw: u64) -> Option<Self> {
        match NonZeroU64::new(raw) {
            Some(h) => Some(Self(h)),
            None => None,
        }
    }
}

/// Whether `value` `condition` `compare` holds (HSA signal conditions; values are signed).
#[must_use]
pub fn signal_condition_holds(value: i64, condition: SignalCondition, compare: i64) -> bool {
    match condition {
        SignalCondition::Eq => value == compare,
        SignalCondition::Ne => value != compare,
        SignalCondition::Lt => value < compare,
        SignalCondition::Gte => value >= compare,
    }
}

/// What a holder of device addresses (a prepared plan) checks before it uses them: the device
/// session and how many allocations were freed in it. While both are unchanged, every
/// allocation that was live is still live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Lifetime {
    /// 0 for a new device, advanced by every [`Device::reset`]: allocation identities, VAs,
    /// queues and signals of one epoch mean nothing in another.
    pub epoch: u64,
    /// Advanced by every successful [`Device::free`] in the epoch.
    pub frees: u64,
}

/// The packets one [`Device::ring_doorbell`] made visible to the packet processor: the ids
/// `first..end` (ids are write indices). Identical meaning on every backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Submission {
    /// Id of the first packet released by this doorbell (the previous doorbell's `end`).
    pub first: u64,
    /// One past the last packet released: the queue's write index when the doorbell rang.
    pub end: u64,
}

impl Submission {
    /// Packets released by this doorbell.
    #[must_use]
    pub const fn packets(&self) -> u64 {
        self.end.saturating_sub(self.first)
    }
}

/// How far a queue's packet processor got: packets below `read_index` have been taken from
/// the ring (not necessarily completed: completion is a signal), `write_index` is the next id a
/// packet will get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueueProgress {
    /// The read index.
    pub read_index: u64,
    /// The write index.
    pub write_index: u64,
}

/// The devices a [`Device`] sees and drives, as its backend reports them (admission and the
/// bench report read it; nothing assumes a constant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Topology {
    /// GPUs the backend's runtime reports on this machine (the soft device: its one simulated GPU).
    pub gpus_visible: u32,
    /// GPUs this device drives: a route runs on each of them.
    pub gpus_used: u32,
    /// Caller queues ([`Device::create_queue`]) live now.
    pub queues: u32,
}

/// Counters of the ordinary path, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DeviceStats {
    /// Ordinary launches published.
    pub launches: u64,
    /// Host waits that had launches to wait for: [`Device::finish`], a read or write that had to
    /// wait, and a launch that had to wait for ring slots or kernarg bytes of earlier launches.
    /// A wait counts once for the launches no earlier wait covered, whether or not they had
    /// completed (so the count does not depend on the device's timing).
    pub waits: u64,
}

/// A fault the test harness arms on purpose, once, so that failure paths of the routes can be
/// exercised on a device that would not fail by itself ([`FaultInjection`]). Injections apply to
/// the caller's queues and IB memory, never to the ordinary path's own queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Injection {
    /// The next [`Device::allocate_ib`] fails.
    IbAllocation,
    /// The next packet the processor takes from a caller's queue inactivates that queue with a
    /// fault instead of running.
    QueueFault,
    /// The next doorbell of a caller's queue is rung but its packets make no progress: a wait on
    /// their signal times out.
    Hang,
}

/// Devices whose faults can be injected (the soft device; the HSA backend when its runtime is
/// the soft HSA runtime). Not part of [`Device`]: a GPU has no such control.
pub trait FaultInjection {
    /// Arms `fault`: it fires once, at the next operation it names.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] when this device cannot inject faults (a real GPU runtime).
    fn inject(&mut self, fault: Injection) -> Result<(), BackendError>;
}

/// A GPU as the routes use it. See the crate documentation for the meaning of each group of
/// methods; it is the same on every backend, and the conformance suite (`tests/`) checks it on
/// each.
///
/// Every method either completes or returns an error; a backend never returns partial success
/// silently. Implementations document their limits as constants.
pub trait Device {
    /// The GPU target this device executes.
    fn target(&self) -> Target;

    /// The GPUs this device sees and drives, and its live queues.
    fn topology(&self) -> Topology;

    /// The device's current [`Lifetime`].
    fn lifetime(&self) -> Lifetime;

    /// Ticks per second of the GPU clock that PM4 timestamps read (`COPY_DATA` `SRC_SEL` 9,
    /// `RELEASE_MEM` `DATA_SEL` 3): the HSA runtime's `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY` on
    /// the HSA backend, the soft device's own clock's rate on the soft device. Never 0.
    fn timestamp_frequency_hz(&self) -> u64;

    /// The loaded code objects and their kernels, with descriptors and metadata.
    fn kernels(&self) -> &KernelTable;

    /// Allocates `size` bytes of zeroed device memory at a VA the device chooses.
    ///
    /// # Errors
    /// [`AllocateError`] for an empty or oversized request, or when a device limit is reached.
    fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError>;

    /// Allocates `size` bytes of zeroed, host-visible kernarg memory (see the crate docs).
    ///
    /// # Errors
    /// As [`Device::allocate`].
    fn allocate_kernarg(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError>;

    /// Allocates zeroed, host-visible memory for an indirect buffer of `size_dwords` dwords that
    /// the command processor may execute (a PM4-IB packet's target).
    ///
    /// # Errors
    /// [`AllocateError`] for 0 dwords or when a device limit is reached.
    fn allocate_ib(&mut self, size_dwords: u32) -> Result<DeviceAllocation, AllocateError>;

    /// Frees a live allocation of any of the three kinds; advances [`Lifetime::frees`].
    ///
    /// # Errors
    /// [`FreeError`] when `allocation` is not live or not the caller's.
    fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError>;

    /// Copies `data` to memory at `va`, after every ordinary launch finished; the range must lie
    /// inside one allocation.
    ///
    /// # Errors
    /// [`TransferError`] when it does not (nothing is written), or the failure of an earlier
    /// launch.
    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError>;

    /// Copies memory at `va` into `out`, after every ordinary launch finished; the range must
    /// lie inside one allocation.
    ///
    /// # Errors
    /// [`TransferError`] when it does not, or the failure of an earlier launch.
    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError>;

    /// One host store of `value` (little-endian) at `va` in host-visible memory (kernarg or IB
    /// memory), without waiting for anything: packets published after it see it. The retained
    /// route's patch sites are such stores.
    ///
    /// # Errors
    /// [`TransferError`] when the four bytes are not inside one host-visible allocation.
    fn store_u32(&mut self, va: u64, value: u32) -> Result<(), TransferError>;

    /// The allocation containing `va` and the offset of `va` in it.
    fn resolve(&self, va: u64) -> Option<(AllocationId, u64)>;

    /// Loads a code object (an ELF file or an offload bundle with an entry for this target).
    ///
    /// # Errors
    /// [`LoadError`] when it is not a code object for this target or does not fit the device.
    fn load_code_object(&mut self, bytes: &[u8]) -> Result<LoadedCodeObject, LoadError>;

    /// Publishes one ordinary launch (asynchronous, in order; see the crate docs).
    ///
    /// # Errors
    /// [`LaunchError`] for a request the kernel or device rejects (nothing is published), or the
    /// failure of an earlier launch that no wait has reported yet.
    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError>;

    /// Waits until every ordinary launch finished; their stores are then visible to reads and
    /// to packets published later.
    ///
    /// # Errors
    /// The failure of a launch since the last wait (reported once), or a wait that timed out.
    fn finish(&mut self) -> Result<(), LaunchError>;

    /// The ordinary path's counters.
    fn stats(&self) -> DeviceStats;

    /// Starts keeping, in memory, a kernel trace of the ordinary path: one row per kernel
    /// dispatch the device's packet processor executes from now on, as rocprofv3's
    /// `kernel_trace.csv` has it (`tape_core::census::trace`), made where the packets run and
    /// not from whoever launched them. Returns the producer's name, or `None` when this device
    /// keeps no trace (a real ROCr runtime: reconcile a rocprofv3 trace with `redline census`
    /// instead). A trace already being kept starts over. (Required, not defaulted: a device
    /// that wraps another must pass it on, or the census would silently lose its trace.)
    fn begin_kernel_trace(&mut self) -> Option<&'static str>;

    /// Waits for the ordinary path ([`Device::finish`]), then returns the rows kept since
    /// [`Device::begin_kernel_trace`] in the order the dispatches ran, and stops keeping them;
    /// `None` when no trace was being kept.
    ///
    /// # Errors
    /// [`Device::finish`]'s, or the runtime's failure to hand the trace over.
    fn take_kernel_trace(&mut self) -> Result<Option<Vec<tape_core::census::trace::TraceRow>>, LaunchError>;

    /// Frees every allocation, code object, queue and signal; identities restart and
    /// [`Lifetime::epoch`] advances.
    fn reset(&mut self);

    /// Creates an AQL queue of `slots` 64-byte slots, active, with read and write index 0 and
    /// every slot `INVALID`.
    ///
    /// # Errors
    /// [`QueueError`] when a queue or ring limit is reached or ring memory cannot be allocated.
    fn create_queue(&mut self, slots: RingSize) -> Result<QueueHandle, QueueError>;

    /// Destroys a queue and frees its ring; packets not yet processed are dropped.
    ///
    /// # Errors
    /// [`QueueError::UnknownQueue`].
    fn destroy_queue(&mut self, queue: QueueHandle) -> Result<(), QueueError>;

    /// Takes the next write index and publishes `packet` into its slot with
    /// [`aql_packets::publish`] order (body first, then the header word in one release store).
    /// Returns the packet's id (the write index it took). The packet processor does not take it
    /// before [`Device::ring_doorbell`].
    ///
    /// # Errors
    /// [`QueueError::Full`] when every slot is taken (nothing written),
    /// [`QueueError::UnknownQueue`], or the fault of an inactive queue.
    fn write_packet(&mut self, queue: QueueHandle, packet: &[u8; aql_packets::PACKET_SIZE]) -> Result<u64, QueueError>;

    /// Rings the queue's doorbell with its write index and returns the packets it released. Does
    /// not wait for any of them.
    ///
    /// # Errors
    /// The fault of an inactive queue, or [`QueueError::UnknownQueue`].
    fn ring_doorbell(&mut self, queue: QueueHandle) -> Result<Submission, QueueError>;

    /// The queue's read and write index.
    ///
    /// # Errors
    /// The fault that inactivated the queue, or [`QueueError::UnknownQueue`].
    fn queue_progress(&mut self, queue: QueueHandle) -> Result<QueueProgress, QueueError>;

    /// Creates a signal with value `initial`.
    ///
    /// # Errors
    /// [`SignalError::TooMany`] at the device's signal limit.
    fn create_signal(&mut self, initial: i64) -> Result<SignalHandle, SignalError>;

    /// Destroys a signal; packets naming it later fault.
    ///
    /// # Errors
    /// [`SignalError::Unknown`].
    fn destroy_signal(&mut self, signal: SignalHandle) -> Result<(), SignalError>;

    /// The signal's current value.
    ///
    /// # Errors
    /// [`SignalError::Unknown`].
    fn signal_value(&self, signal: SignalHandle) -> Result<i64, SignalError>;

    /// Stores `value` into a signal (`hsa_signal_store_relaxed`): a completion signal is set
    /// before the packet that decrements it is published.
    ///
    /// # Errors
    /// [`SignalError::Unknown`].
    fn store_signal(&mut self, signal: SignalHandle, value: i64) -> Result<(), SignalError>;

    /// Waits at most `timeout` until `value condition compare` holds; returns the value that
    /// satisfied it. The wait ends early with [`WaitError::Fault`] when a queue of the caller's
    /// faulted, since a faulted queue completes nothing more.
    ///
    /// # Errors
    /// [`WaitError::Timeout`], [`WaitError::Fault`], or [`WaitError::Signal`] for an unknown
    /// signal.
    fn wait_signal(
        &mut self,
        signal: SignalHandle,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64, WaitError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_offsets_stay_inside() {
        let a = DeviceAllocation { id: AllocationId(3), va: 0x7f00_0000_0000, size: 0x1000 };
        assert_eq!(a.at(0), Some(0x7f00_0000_0000));
        assert_eq!(a.at(0xfff), Some(0x7f00_0000_0fff));
        assert_eq!(a.at(0x1000), None);
    }

    #[test]
    fn errors_name_the_offending_values() {
        let e = AllocateError::Overlaps { va: 0x2000, size: 16, existing_va: 0x1000, existing_size: 0x1001 };
        assert_eq!(e.to_string(), "16 bytes at 0x2000 overlap the allocation of 4097 bytes at 0x1000");
        let hsa = RuntimeStatus { value: 0x1008, name: Some("HSA_STATUS_ERROR_OUT_OF_RESOURCES"), hex: true };
        let e = BackendError::Call { call: "hsa_init", status: hsa };
        assert_eq!(e.to_string(), "hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
        let hip = RuntimeStatus { value: 101, name: None, hex: false };
        assert_eq!(
            BackendError::Call { call: "hipInit", status: hip }.to_string(),
            "hipInit returned unknown status 101"
        );
    }

    #[test]
    fn submissions_count_the_packets_one_doorbell_released() {
        assert_eq!(Submission { first: 4, end: 6 }.packets(), 2);
        assert_eq!(Submission { first: 6, end: 6 }.packets(), 0);
    }
}
