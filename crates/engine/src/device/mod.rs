//! The [`Device`] trait: what the routes need from a GPU, whichever backend provides it.
//!
//! A device owns a GPU virtual address space. Device memory is named by its virtual address
//! (VA), never by a host pointer; every allocation also has an [`AllocationId`] so that recorded
//! effects can name the allocation they touch. Identities restart when the device is
//! [`reset`](Device::reset).
//!
//! Scope of this trait: memory, host↔device copies, code-object loading, the ordinary launch
//! path (one dispatch at a time, in order, finished when `launch` returns), and what the retained
//! route needs underneath: AQL queues that packets are published into
//! ([`Device::create_queue`], [`Device::publish`], [`Device::submit`]), signals with a bounded
//! wait, and executable indirect-buffer memory ([`Device::allocate_ib`]).

use std::num::{NonZeroU32, NonZeroU64};
use std::time::Duration;

use aql_packets::{RingSize, SignalCondition};
use pm4_encoding::Target;
use tape_core::AllocationId;

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

/// A GPU as the routes use it.
///
/// Every method either completes or returns an error; a backend never returns partial success
/// silently. Implementations document their limits as constants.
pub trait Device {
    /// The GPU target this device executes.
    fn target(&self) -> Target;

    /// Allocates `size` bytes of zeroed device memory at a VA the device chooses.
    ///
    /// # Errors
    /// [`AllocateError`] for an empty or oversized request, or when a device limit is reached.
    fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError>;

    /// Frees a live allocation returned by [`Device::allocate`].
    ///
    /// # Errors
    /// [`FreeError`] when `allocation` is not live or not the caller's.
    fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError>;

    /// Copies `data` to device memory at `va`; the range must lie inside one allocation.
    ///
    /// # Errors
    /// [`TransferError`] when it does not; nothing is written then.
    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError>;

    /// Copies device memory at `va` into `out`; the range must lie inside one allocation.
    ///
    /// # Errors
    /// [`TransferError`] when it does not.
    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError>;

    /// Loads a code object (an ELF file or an offload bundle with an entry for this target).
    ///
    /// # Errors
    /// [`LoadError`] when it is not a code object for this target or does not fit the device.
    fn load_code_object(&mut self, bytes: &[u8]) -> Result<LoadedCodeObject, LoadError>;

    /// Runs one dispatch on the ordinary path; when this returns `Ok`, its stores are visible to
    /// [`Device::read`] and to later launches.
    ///
    /// # Errors
    /// [`LaunchError`] for a request the kernel or device rejects, or a fault while it runs.
    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError>;

    /// The allocation containing `va` and the offset of `va` in it.
    fn resolve(&self, va: u64) -> Option<(AllocationId, u64)>;

    /// Frees every allocation, code object, queue and signal; allocation identities restart.
    fn reset(&mut self);

    /// Creates an AQL queue of `slots` 64-byte slots in device memory, active, with read and
    /// write index 0 and every slot `INVALID`.
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
    /// Returns the packet's id (the write index it took). The packet is not processed before
    /// [`Device::submit`] rings the doorbell.
    ///
    /// # Errors
    /// [`QueueError::Full`] when every slot is taken (nothing written),
    /// [`QueueError::UnknownQueue`], or the recorded fault of an inactive queue.
    fn publish(&mut self, queue: QueueHandle, packet: &[u8; aql_packets::PACKET_SIZE]) -> Result<u64, QueueError>;

    /// Rings the queue's doorbell with its write index and lets the packet processor run every
    /// published packet in order. Returns the number of packets completed.
    ///
    /// # Errors
    /// The [`QueueFault`] that inactivated the queue (now or at an earlier submission), or
    /// [`QueueError::UnknownQueue`].
    fn submit(&mut self, queue: QueueHandle) -> Result<u64, QueueError>;

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

    /// Waits at most `timeout` until `value condition compare` holds; returns the value that
    /// satisfied it.
    ///
    /// # Errors
    /// [`WaitError::Timeout`] when it did not hold in time, [`WaitError::Signal`] for an unknown
    /// signal.
    fn wait_signal(
        &mut self,
        signal: SignalHandle,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64, WaitError>;

    /// Allocates zeroed, device-owned memory for an indirect buffer of `size_dwords` dwords that
    /// the command processor may execute (a PM4-IB packet's target). The caller fills it with
    /// [`Device::write`].
    ///
    /// # Errors
    /// [`AllocateError`] for 0 dwords or when a device limit is reached.
    fn allocate_ib(&mut self, size_dwords: u32) -> Result<DeviceAllocation, AllocateError>;
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
        let v = EffectViolation { kernel: "axpy".into(), va: 0x10, len: 4, access: tape_core::Access::Write };
        assert_eq!(v.to_string(), "kernel axpy: Write of 4 bytes at 0x10 is outside its declared effects");
    }
}
