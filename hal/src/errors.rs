//! The errors of [`super::Device`] operations, one enum per operation. Failures only one backend
//! knows (the soft device's effect checks, a CPU reference's own error) are a
//! [`DeviceFault`] carrying that backend's own error type.

use aql_packets::{DecodeError, PacketType, SignalCondition};
use kernarg_abi::ReadError;
use std::sync::Arc;
use std::time::Duration;
use tape_core::AllocationId;

use crate::memory::MemoryFault;

#[allow(unused_imports, reason = "named by doc links")]
use super::Device;
use super::{QueueHandle, SignalHandle};

/// Why an allocation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocateError {
    /// Zero bytes were asked for.
    #[error("an allocation must have at least one byte")]
    Empty,
    /// One allocation larger than the device's per-allocation limit.
    #[error("an allocation of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Requested bytes.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The device already holds its maximum number of allocations.
    #[error("the device already holds {limit} allocations, its limit")]
    TooMany {
        /// The limit.
        limit: usize,
    },
    /// The allocation would take the device past its total byte limit.
    #[error("{size} more bytes on top of {in_use} in use exceed the device limit of {limit} bytes")]
    OutOfMemory {
        /// Requested bytes (rounded to the granule).
        size: u64,
        /// Bytes in use.
        in_use: u64,
        /// The limit.
        limit: u64,
    },
    /// No unused VA range of this size is left.
    #[error("no unused virtual address range of {size} bytes is left")]
    AddressSpaceExhausted {
        /// Requested bytes (rounded to the granule).
        size: u64,
    },
    /// A caller-given VA range outside the device's address space.
    #[error("{size} bytes at {va:#x} are outside the address space [{min:#x}, {end:#x})")]
    OutOfRange {
        /// Requested first byte.
        va: u64,
        /// Requested bytes.
        size: u64,
        /// Lowest VA an allocation may start at.
        min: u64,
        /// One past the highest VA an allocation may end at.
        end: u64,
    },
    /// A caller-given VA that is not aligned as the device requires.
    #[error("{va:#x} is not {align}-byte aligned")]
    Misaligned {
        /// Requested first byte.
        va: u64,
        /// Required alignment.
        align: u64,
    },
    /// A caller-given VA range overlapping a live allocation.
    #[error("{size} bytes at {va:#x} overlap the allocation of {existing_size} bytes at {existing_va:#x}")]
    Overlaps {
        /// Requested first byte.
        va: u64,
        /// Requested bytes.
        size: u64,
        /// First byte of the allocation it overlaps.
        existing_va: u64,
        /// Size of that allocation.
        existing_size: u64,
    },
    /// Refused by a fault the test harness injected ([`crate::FaultInjection`]).
    #[error("allocation of {size} bytes refused by an injected fault")]
    Injected {
        /// Requested bytes.
        size: u64,
    },
    /// A hardware backend's runtime call failed, or the backend cannot do this.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why [`Device::free`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FreeError {
    /// No live allocation has this identity at this VA (freed already, or from before a reset).
    #[error("no live allocation {id:?} at {va:#x}")]
    NotLive {
        /// The identity given.
        id: AllocationId,
        /// The VA given.
        va: u64,
    },
    /// The allocation belongs to the device (loaded code, kernarg memory), not to the caller.
    #[error("allocation {id:?} at {va:#x} is owned by the device")]
    DeviceOwned {
        /// The identity given.
        id: AllocationId,
        /// The VA given.
        va: u64,
    },
    /// A hardware backend's runtime call failed, or the backend cannot do this.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why a host↔device copy failed; nothing was copied.
#[derive(Clone, Debug, thiserror::Error)]
pub enum TransferError {
    /// The device range is not inside one allocation (of the kind the operation needs).
    #[error(transparent)]
    Fault(#[from] MemoryFault),
    /// An earlier ordinary launch failed; the copy waited for it and did not run.
    #[error("an earlier launch failed: {0}")]
    Launch(Box<LaunchError>),
    /// A hardware backend's runtime call failed, or the backend cannot do this.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why a code object could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file is larger than the device accepts.
    #[error("a code object of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// File length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The device already holds its maximum number of code objects.
    #[error("the device already holds {limit} code objects, its limit")]
    TooMany {
        /// The limit.
        limit: usize,
    },
    /// The code object does not read as one for this device's target.
    #[error("code object: {0}")]
    Read(#[from] ReadError),
    /// The ELF program headers could not be read.
    #[error("ELF program headers: {0}")]
    ProgramHeaders(object::read::Error),
    /// No PT_LOAD segment.
    #[error("the code object has no PT_LOAD segment")]
    NoLoadSegment,
    /// More PT_LOAD segments than the loader handles.
    #[error("{count} PT_LOAD segments exceed the limit of {limit}")]
    TooManySegments {
        /// Segments found.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A PT_LOAD segment whose file bytes are not inside the file, or larger than its memory.
    #[error(
        "PT_LOAD segment {index}: {filesz} file bytes at offset {offset:#x} (memsz {memsz}) do not fit the {len}-byte file"
    )]
    SegmentFile {
        /// Segment index among the program headers.
        index: usize,
        /// `p_offset`.
        offset: u64,
        /// `p_filesz`.
        filesz: u64,
        /// `p_memsz`.
        memsz: u64,
        /// File length.
        len: usize,
    },
    /// The loaded image would be larger than the loader handles.
    #[error("the loaded image spans {span} bytes, over the limit of {limit}")]
    ImageTooLarge {
        /// `max(p_vaddr + p_memsz)` over the PT_LOAD segments, or `u64::MAX` on overflow.
        span: u64,
        /// The limit.
        limit: u64,
    },
    /// A PT_LOAD alignment that is not a power of two or is larger than the loader handles.
    #[error("PT_LOAD segment {index}: alignment {align} is not a power of two up to {limit}")]
    SegmentAlign {
        /// Segment index among the program headers.
        index: usize,
        /// `p_align`.
        align: u64,
        /// The largest alignment handled.
        limit: u64,
    },
    /// Device memory for the image could not be allocated.
    #[error("image memory: {0}")]
    Allocate(#[from] AllocateError),
    /// A hardware backend's runtime call failed, or the backend cannot do this.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why an ordinary launch failed. Checks happen before the kernel runs; a failure while it runs
/// may leave earlier stores in memory, as on a GPU.
#[derive(Clone, Debug, thiserror::Error)]
pub enum LaunchError {
    /// No loaded kernel has its descriptor at this VA.
    #[error("no loaded kernel descriptor at {kernel_object:#x}")]
    UnknownKernel {
        /// The request's `kernel_object`.
        kernel_object: u64,
    },
    /// The kernarg bytes are not the kernel's kernarg segment size.
    #[error("kernel {kernel}: {found} kernarg bytes, the segment is {expected}")]
    KernargSize {
        /// Kernel name.
        kernel: String,
        /// `.kernarg_segment_size`.
        expected: u32,
        /// Bytes given.
        found: usize,
    },
    /// The kernarg segment is larger than the device's kernarg memory per dispatch.
    #[error("kernel {kernel}: a {size}-byte kernarg segment exceeds the device limit of {limit}")]
    KernargTooLarge {
        /// Kernel name.
        kernel: String,
        /// Segment size.
        size: u32,
        /// The limit.
        limit: u64,
    },
    /// The kernarg segment could not be read back from device memory.
    #[error("kernel {kernel}: kernarg memory: {fault}")]
    KernargFault {
        /// Kernel name.
        kernel: String,
        /// The fault.
        fault: MemoryFault,
    },
    /// A grid or work-group dimension is 0.
    #[error("kernel {kernel}: grid {grid:?} or work-group {workgroup:?} has a zero dimension")]
    ZeroDimension {
        /// Kernel name.
        kernel: String,
        /// Grid size in work-items.
        grid: [u32; 3],
        /// Work-group size.
        workgroup: [u16; 3],
    },
    /// The work-group has more work-items than `.max_flat_workgroup_size`.
    #[error("kernel {kernel}: work-group of {work_items} work-items exceeds its limit of {limit}")]
    WorkgroupTooLarge {
        /// Kernel name.
        kernel: String,
        /// Work-items per work-group.
        work_items: u64,
        /// `.max_flat_workgroup_size`.
        limit: u32,
    },
    /// Static plus dynamic LDS exceed the work-group's LDS.
    #[error("kernel {kernel}: {static_bytes} static + {dynamic_bytes} dynamic LDS bytes exceed {limit}")]
    LdsTooLarge {
        /// Kernel name.
        kernel: String,
        /// `.group_segment_fixed_size`.
        static_bytes: u32,
        /// The request's dynamic LDS.
        dynamic_bytes: u32,
        /// LDS bytes per work-group.
        limit: u32,
    },
    /// The metadata's wavefront size disagrees with the descriptor's wave32 bit, or is neither
    /// 32 nor 64.
    #[error("kernel {kernel}: .wavefront_size {metadata} with descriptor ENABLE_WAVEFRONT_SIZE32 = {wave32}")]
    WaveSize {
        /// Kernel name.
        kernel: String,
        /// `.wavefront_size`.
        metadata: u32,
        /// The descriptor's wave32 bit.
        wave32: bool,
    },
    /// A failure of the backend's own kind: on the soft device, a kernel without a CPU
    /// reference, a hidden argument that disagrees with the geometry, an access outside the
    /// declared effects, the CPU reference's own error.
    #[error("kernel {kernel}: {fault}")]
    Device {
        /// Kernel name.
        kernel: String,
        /// The backend's error.
        fault: DeviceFault,
    },
    /// The queue the ordinary path dispatches through faulted for a reason other than the
    /// dispatch itself (its ring memory, a packet it could not decode).
    #[error("ordinary-path queue: {0}")]
    Queue(Box<QueueFault>),
    /// A hardware backend's runtime call failed, or the backend cannot do this.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The kernel trace the runtime handed over cannot be read ([`crate::Device::take_kernel_trace`]).
    #[error("the runtime's kernel trace: {0}")]
    KernelTrace(String),
}

/// The error a PM4 command processor returns for an indirect buffer it could not execute.
pub type Pm4Error = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a queue's packet processor stopped. The queue is inactive from then on: every later
/// doorbell returns this fault again and processes nothing (ROCr reports it once through the
/// queue's error callback and the queue stays unusable).
///
/// `packet_id` is the id (value of the write index when it was published) of the packet the
/// processor was at; the read index stays there.
#[derive(Clone, Debug, thiserror::Error)]
pub enum QueueFault {
    /// The header's `TYPE` is not an HSA packet type.
    #[error("packet {packet_id}: unknown AQL packet type {packet_type}")]
    InvalidPacketType {
        /// The packet.
        packet_id: u64,
        /// The raw `TYPE` byte.
        packet_type: u8,
    },
    /// A fence scope field of the header holds 3.
    #[error("packet {packet_id}: {field} holds {value}, which is not a fence scope")]
    InvalidFenceScope {
        /// The packet.
        packet_id: u64,
        /// `SCACQUIRE_FENCE_SCOPE` or `SCRELEASE_FENCE_SCOPE`.
        field: &'static str,
        /// The raw value.
        value: u8,
    },
    /// Header bits `[15:13]` are set.
    #[error("packet {packet_id}: reserved AQL header bits {bits:#06x} are set")]
    ReservedHeaderBits {
        /// The packet.
        packet_id: u64,
        /// The offending bits, in place.
        bits: u16,
    },
    /// A kernel dispatch's `setup` has `DIMENSIONS` 0.
    #[error("packet {packet_id}: kernel dispatch DIMENSIONS is {dimensions}, expected 1..=3")]
    InvalidDimensions {
        /// The packet.
        packet_id: u64,
        /// The raw value.
        dimensions: u8,
    },
    /// A kernel dispatch's `setup` has reserved bits `[15:2]` set.
    #[error("packet {packet_id}: reserved kernel dispatch setup bits {bits:#06x} are set")]
    ReservedSetupBits {
        /// The packet.
        packet_id: u64,
        /// The offending bits, in place.
        bits: u16,
    },
    /// A vendor-specific packet of an AMD format the packet processor does not execute.
    #[error("packet {packet_id}: AMD vendor packet format {format:#04x} is not supported")]
    UnsupportedVendorFormat {
        /// The packet.
        packet_id: u64,
        /// The raw AMD format byte.
        format: u8,
    },
    /// Any other field the decoder rejects (a reserved field, a malformed `ib_jump_cmd`, a
    /// barrier-value `cond`).
    #[error("packet {packet_id}: {source}")]
    InvalidPacket {
        /// The packet.
        packet_id: u64,
        /// What the decoder rejected.
        source: DecodeError,
    },
    /// A valid packet type this device does not execute (agent dispatch: there is no agent to
    /// serve it).
    #[error("packet {packet_id}: {} packets are not supported", packet_type.name())]
    UnsupportedPacket {
        /// The packet.
        packet_id: u64,
        /// Its type.
        packet_type: PacketType,
    },
    /// A completion or dependency signal handle that names no live signal.
    #[error("packet {packet_id}: signal {handle:#x} does not exist")]
    UnknownSignal {
        /// The packet.
        packet_id: u64,
        /// The raw handle.
        handle: u64,
    },
    /// A barrier-AND/OR whose condition does not hold when the processor reaches it and, on a
    /// device that runs nothing else concurrently, never can.
    #[error("packet {packet_id}: barrier dependency {signal:#x} has value {value}, the barrier can never be satisfied")]
    BarrierNeverSatisfied {
        /// The packet.
        packet_id: u64,
        /// The first dependency signal that is not 0.
        signal: u64,
        /// Its value.
        value: i64,
    },
    /// An AMD barrier-value packet whose condition does not hold when the processor reaches it.
    #[error(
        "packet {packet_id}: barrier-value ({current:#x} & {mask:#x}) {} {value:#x} is false and can never become true",
        cond.name()
    )]
    BarrierValueNeverSatisfied {
        /// The packet.
        packet_id: u64,
        /// The signal compared.
        signal: u64,
        /// Its value.
        current: i64,
        /// The packet's mask.
        mask: u64,
        /// The packet's condition.
        cond: SignalCondition,
        /// The packet's comparison value.
        value: i64,
    },
    /// `group_segment_size` is smaller than the kernel's static LDS.
    #[error("packet {packet_id}: kernel {kernel}: group_segment_size {group_segment_size} < static LDS {static_bytes}")]
    GroupSegmentTooSmall {
        /// The packet.
        packet_id: u64,
        /// Kernel name.
        kernel: String,
        /// The packet's `group_segment_size`.
        group_segment_size: u32,
        /// `.group_segment_fixed_size`.
        static_bytes: u32,
    },
    /// `private_segment_size` is neither 0 nor the kernel's `.private_segment_fixed_size`.
    #[error("packet {packet_id}: kernel {kernel}: private_segment_size {requested}, the kernel's is {kernel_bytes}")]
    PrivateSegmentSize {
        /// The packet.
        packet_id: u64,
        /// Kernel name.
        kernel: String,
        /// The packet's `private_segment_size`.
        requested: u32,
        /// `.private_segment_fixed_size`.
        kernel_bytes: u32,
    },
    /// The kernel needs scratch (private segment) memory, which the device does not model.
    #[error("packet {packet_id}: kernel {kernel} needs {kernel_bytes} scratch bytes per work-item, not modelled")]
    ScratchNotModelled {
        /// The packet.
        packet_id: u64,
        /// Kernel name.
        kernel: String,
        /// `.private_segment_fixed_size`.
        kernel_bytes: u32,
    },
    /// A kernel dispatch failed (checks or execution); earlier stores may be in memory.
    #[error("packet {packet_id}: {source}")]
    Dispatch {
        /// The packet.
        packet_id: u64,
        /// Why.
        source: LaunchError,
    },
    /// The PM4 command processor refused or failed the indirect buffer of a PM4-IB packet.
    #[error("packet {packet_id}: PM4 IB of {size_dwords} dwords at {ib_va:#x}: {source}")]
    Pm4 {
        /// The packet.
        packet_id: u64,
        /// `IB_BASE`.
        ib_va: u64,
        /// `IB_SIZE`.
        size_dwords: u32,
        /// The command processor's error.
        source: Arc<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A failure of the backend's own kind (an injected fault, for example).
    #[error("packet {packet_id}: {fault}")]
    Device {
        /// The packet the processor was at.
        packet_id: u64,
        /// The backend's error.
        fault: DeviceFault,
    },
    /// The ring memory itself faulted (it was freed or overwritten out of range).
    #[error("packet {packet_id}: ring memory: {fault}")]
    Ring {
        /// The packet.
        packet_id: u64,
        /// The fault.
        fault: MemoryFault,
    },
    /// The runtime reported an error for the queue through its error callback (a hardware
    /// backend); the queue was inactivated.
    #[error("queue {queue_id}: the runtime reported {status}")]
    Runtime {
        /// The runtime's queue id.
        queue_id: u64,
        /// The status the error callback received.
        status: RuntimeStatus,
    },
}

/// Why a queue operation was refused.
#[derive(Clone, Debug, thiserror::Error)]
pub enum QueueError {
    /// No live queue has this handle.
    #[error("no live queue {queue:?}")]
    UnknownQueue {
        /// The handle given.
        queue: QueueHandle,
    },
    /// The device already holds its maximum number of queues.
    #[error("the device already holds {limit} queues, its limit")]
    TooManyQueues {
        /// The limit.
        limit: usize,
    },
    /// A ring larger than the device accepts.
    #[error("a ring of {slots} slots exceeds the limit of {limit}")]
    RingTooLarge {
        /// Slots asked for.
        slots: u32,
        /// The limit.
        limit: u32,
    },
    /// Ring memory could not be allocated.
    #[error("ring memory: {0}")]
    Allocate(#[from] AllocateError),
    /// Every slot holds a packet the processor has not finished; nothing was written.
    #[error("queue full: write index {write_index}, read index {read_index}, {slots} slots")]
    Full {
        /// The write index.
        write_index: u64,
        /// The read index.
        read_index: u64,
        /// Ring slots.
        slots: u32,
    },
    /// The doorbell was rung with a value past the write index, or below an earlier value.
    #[error("doorbell value {value} outside [{doorbell}, {write_index}]")]
    Doorbell {
        /// The value rung.
        value: u64,
        /// The previous doorbell value.
        doorbell: u64,
        /// The write index.
        write_index: u64,
    },
    /// Writing the packet into its slot faulted.
    #[error("ring memory: {0}")]
    RingMemory(MemoryFault),
    /// The queue is inactive after a fault, or faulted while processing.
    #[error(transparent)]
    Fault(#[from] QueueFault),
    /// A hardware backend's runtime call failed, or the backend cannot do this.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why a signal operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignalError {
    /// No live signal has this handle.
    #[error("signal {handle:#x} does not exist")]
    Unknown {
        /// The raw handle.
        handle: u64,
    },
    /// The device already holds its maximum number of signals.
    #[error("the device already holds {limit} signals, its limit")]
    TooMany {
        /// The limit.
        limit: usize,
    },
    /// A signal with this handle already exists (or the handle is 0).
    #[error("signal handle {handle:#x} is 0 or already in use")]
    HandleInUse {
        /// The raw handle.
        handle: u64,
    },
    /// A hardware backend's runtime call failed, or the backend cannot do this.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why [`Device::wait_signal`] returned without the condition holding.
#[derive(Clone, Debug, thiserror::Error)]
pub enum WaitError {
    /// The signal does not exist.
    #[error(transparent)]
    Signal(#[from] SignalError),
    /// The condition did not hold within the timeout.
    #[error("signal {:#x} is {value}, not {} {compare}, after {timeout:?}", signal.get(), condition.name())]
    Timeout {
        /// The signal.
        signal: SignalHandle,
        /// Its value when the wait gave up.
        value: i64,
        /// The condition waited for.
        condition: SignalCondition,
        /// The value compared with.
        compare: i64,
        /// The timeout given.
        timeout: Duration,
    },
    /// A queue of the caller's faulted while the signal was waited for: nothing it holds
    /// completes any more.
    #[error("while waiting on signal {:#x}: {fault}", signal.get())]
    Fault {
        /// The signal.
        signal: SignalHandle,
        /// The queue's fault.
        fault: Box<QueueFault>,
    },
    /// A hardware backend's runtime call failed, or the backend cannot do this.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// A failure of a hardware backend (HSA, HIP) that the operation's own variants do not describe:
/// a runtime call that returned an error status, or an operation the backend cannot perform
/// faithfully. Never a silent success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// A runtime call returned an error status.
    #[error("{call} returned {status}")]
    Call {
        /// The C function called (`hsa_init`, `hipModuleLaunchKernel`, ...).
        call: &'static str,
        /// Its status.
        status: RuntimeStatus,
    },
    /// The backend cannot perform the operation faithfully, so it refuses it.
    #[error("{operation} is not supported by the {backend} backend")]
    Unsupported {
        /// `HSA` or `HIP`.
        backend: &'static str,
        /// What was asked.
        operation: &'static str,
    },
    /// A runtime wait did not finish within its bound.
    #[error("{call} did not complete within {timeout:?}")]
    Timeout {
        /// What was waited for.
        call: &'static str,
        /// The bound.
        timeout: Duration,
    },
    /// A request larger than the backend's own limit.
    #[error("{what}: {requested} exceeds the limit of {limit}")]
    Limit {
        /// What is limited.
        what: &'static str,
        /// The amount asked for.
        requested: u64,
        /// The limit.
        limit: u64,
    },
}

/// A status a runtime returned, with its name when the backend knows it: `NAME (value)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuntimeStatus {
    /// The raw value.
    pub value: i64,
    /// Its name in the runtime's header (`HSA_STATUS_ERROR_OUT_OF_RESOURCES`).
    pub name: Option<&'static str>,
    /// Whether the runtime's own documentation writes the value in hexadecimal (HSA) rather
    /// than decimal (HIP).
    pub hex: bool,
}

impl core::fmt::Display for RuntimeStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match (self.name, self.hex) {
            (Some(name), true) => write!(f, "{name} ({:#x})", self.value),
            (Some(name), false) => write!(f, "{name} ({})", self.value),
            (None, true) => write!(f, "unknown status {:#x}", self.value),
            (None, false) => write!(f, "unknown status {}", self.value),
        }
    }
}

/// A failure only one backend knows, in that backend's own error type (shared, so that errors
/// stay cheap to clone). [`DeviceFault::downcast_ref`] recovers the type.
#[derive(Clone, Debug)]
pub struct DeviceFault(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl DeviceFault {
    /// Wraps a backend's error.
    pub fn new<E: std::error::Error + Send + Sync + 'static>(error: E) -> Self {
        Self(Arc::new(error))
    }

    /// The backend's error as `E`, when it is one.
    #[must_use]
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl PartialEq for DeviceFault {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for DeviceFault {}

impl core::fmt::Display for DeviceFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&self.0, f)
    }
}

impl PartialEq for TransferError {
    /// Launch failures compare by their message (a [`LaunchError`] holds backend errors that
    /// are not comparable themselves).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (TransferError::Fault(a), TransferError::Fault(b)) => a == b,
            (TransferError::Backend(a), TransferError::Backend(b)) => a == b,
            (TransferError::Launch(a), TransferError::Launch(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}

impl Eq for TransferError {}

impl PartialEq for WaitError {
    /// Queue faults compare by their message (a [`QueueFault`] holds backend errors that are
    /// not comparable themselves).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (WaitError::Signal(a), WaitError::Signal(b)) => a == b,
            (
                WaitError::Timeout { signal, value, condition, compare, timeout },
                WaitError::Timeout { signal: s, value: v, condition: c, compare: k, timeout: t },
            ) => signal == s && value == v && condition == c && compare == k && timeout == t,
            (WaitError::Fault { signal, fault }, WaitError::Fault { signal: s, fault: f }) => {
                signal == s && fault.to_string() == f.to_string()
            }
            (WaitError::Backend(a), WaitError::Backend(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for WaitError {}

impl LaunchError {
    /// The backend's own error inside a [`LaunchError::Device`], or inside the dispatch fault
    /// of [`LaunchError::Queue`], as `E`.
    #[must_use]
    pub fn device_fault<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            LaunchError::Device { fault, .. } => fault.downcast_ref(),
            LaunchError::Queue(fault) => match fault.as_ref() {
                QueueFault::Device { fault, .. } => fault.downcast_ref(),
                QueueFault::Dispatch { source, .. } => source.device_fault(),
                _ => None,
            },
            _ => None,
        }
    }
}
