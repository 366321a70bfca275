//! Why a plan was not prepared, and why a replay failed.

use aql_packets::AmdPm4IbError;
use tape_core::AllocationId;

use crate::lower::{LowerError, PatchError, VerifyError};
use hal::{AllocateError, QueueError, SignalError, TransferError, WaitError};

/// Why [`prepare`](super::prepare) did not make a plan. Whatever it had created on the device
/// by then is released again.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The tape has no launches.
    #[error("the tape has no launches")]
    EmptyTape,
    /// A launch's kernel is not loaded on the device (its kernarg placement needs it).
    #[error("launch {launch}: no loaded kernel `{symbol}` for its code-object digest")]
    UnknownKernel {
        /// The launch.
        launch: usize,
        /// The kernel's symbol.
        symbol: String,
    },
    /// A launch's kernel cannot be replayed from a retained body (`kernarg_abi::verdict`):
    /// scratch, a dynamic stack, implicit SGPRs the body cannot set, kernarg preload, a hidden
    /// argument no retained replay provides, ...
    #[error("launch {launch}: kernel `{symbol}` cannot be replayed from a retained body: {reasons}")]
    UnsupportedKernel {
        /// The launch.
        launch: usize,
        /// The kernel's symbol.
        symbol: String,
        /// Every reason the verdict gave, joined by "; ".
        reasons: String,
    },
    /// A launch's kernel name names more than one kernel of its code object.
    #[error("launch {launch}: kernel name `{symbol}` is ambiguous: it names the descriptors at {descriptors:#x?}")]
    AmbiguousKernel {
        /// The launch.
        launch: usize,
        /// The kernel's name.
        symbol: String,
        /// The descriptor VAs it names.
        descriptors: Vec<u64>,
    },
    /// A launch's kernarg alignment differs from its metadata's, or the metadata's cannot keep
    /// its arguments aligned.
    #[error("launch {launch}: kernel `{symbol}`: kernarg alignment: {detail}")]
    KernargAlignment {
        /// The launch.
        launch: usize,
        /// The kernel's name.
        symbol: String,
        /// What differs.
        detail: String,
    },
    /// The retained kernarg blobs together exceed the plan's limit.
    #[error("{bytes} bytes of retained kernargs exceed the limit of {limit}")]
    KernargTooLarge {
        /// Bytes needed, alignment included.
        bytes: u64,
        /// [`PreparedPlan::KERNARG_BYTES_MAX`](super::PreparedPlan::KERNARG_BYTES_MAX).
        limit: u64,
    },
    /// A recorded pointer argument does not point into the allocation the tape says it does on
    /// this device (the tape is from another session or the buffer was freed).
    #[error(
        "launch {launch}: pointer at kernarg offset {kernarg_offset} = {va:#x} is not in allocation {allocation:?}"
    )]
    PointerNotLive {
        /// The launch.
        launch: usize,
        /// Offset of the pointer in the kernarg blob.
        kernarg_offset: u32,
        /// The pointer's value in the blob (0 when the blob is too short to hold it).
        va: u64,
        /// The allocation the tape recorded.
        allocation: AllocationId,
    },
    /// Lowering refused the tape.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The lowered IB did not verify against the tape.
    #[error("the lowered IB does not match the tape: {0}")]
    Verify(#[from] VerifyError),
    /// The AQL transport's packets do not fit one queue.
    #[error("{packets} AQL packets per token do not fit one queue")]
    TooManyPackets {
        /// Packets per token.
        packets: usize,
    },
    /// A binding's patch site has no address.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// The IB's dword count does not fit a `u32`.
    #[error("IB of {dwords} dwords is too large")]
    IbTooLarge {
        /// Its size.
        dwords: usize,
    },
    /// The IB does not fit one `INDIRECT_BUFFER`.
    #[error("IB of {dwords} dwords: {source}")]
    Packet {
        /// Its size.
        dwords: usize,
        /// Why the packet could not be built.
        source: AmdPm4IbError,
    },
    /// Device memory (kernargs or IB) could not be allocated.
    #[error(transparent)]
    Allocate(#[from] AllocateError),
    /// Kernargs or the IB could not be written.
    #[error(transparent)]
    Transfer(#[from] TransferError),
    /// The plan's queue could not be created.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The plan's completion signal could not be created.
    #[error(transparent)]
    Signal(#[from] SignalError),
}

/// Why a [`replay`](super::PreparedPlan::replay) did not run the tape.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The device was reset since the plan was prepared: its addresses, queue and signal are
    /// gone. The device was not touched.
    #[error("stale plan: prepared in device epoch {plan_epoch}, the device is in epoch {device_epoch}")]
    StalePlan {
        /// The epoch the plan was prepared in.
        plan_epoch: u64,
        /// The device's epoch now.
        device_epoch: u64,
    },
    /// An allocation the tape points into was freed since the plan was prepared (same epoch).
    /// The device was not touched.
    #[error("stale plan: allocation {allocation:?} at {va:#x} is no longer live")]
    AllocationGone {
        /// The tape's allocation.
        allocation: AllocationId,
        /// A VA the tape points at inside it.
        va: u64,
    },
    /// An earlier replay of this plan failed on the device; the plan is not used again.
    #[error("the plan failed at position {failed_position} and is poisoned")]
    Poisoned {
        /// The position whose replay failed.
        failed_position: u32,
    },
    /// [`PreparedPlan::publish_token`](super::PreparedPlan::publish_token) was called twice
    /// without [`PreparedPlan::complete_token`](super::PreparedPlan::complete_token).
    #[error("position {pending} is published and not finished")]
    TokenPending {
        /// The published position.
        pending: u32,
    },
    /// [`PreparedPlan::complete_token`](super::PreparedPlan::complete_token) without a published
    /// token.
    #[error("no token is published")]
    NothingPublished,
    /// A binding has no value at the position, or a patch write failed.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// The completion signal could not be reset.
    #[error(transparent)]
    Signal(#[from] SignalError),
    /// Publishing or processing the packet failed: a queue fault (the queue is inactive now).
    #[error("position {position}: {source}")]
    Queue {
        /// The position replayed.
        position: u32,
        /// The queue's error.
        source: QueueError,
    },
    /// The completion signal did not reach 0 within the timeout.
    #[error("position {position}: {source}")]
    Wait {
        /// The position replayed.
        position: u32,
        /// The wait's error.
        source: WaitError,
    },
    /// The doorbell released another number of packets than the token published.
    #[error("position {position}: the doorbell released {released} packets, the token published {published}")]
    Released {
        /// The position replayed.
        position: u32,
        /// Packets the doorbell's [`hal::Submission`] names.
        released: u64,
        /// Packets of one token.
        published: u32,
    },
    /// An ordinary launch before the token failed; the token was not published.
    #[error("position {position}: the ordinary launches before the token failed: {source}")]
    Ordinary {
        /// The position replayed.
        position: u32,
        /// The failure the ordinary path reported.
        source: hal::LaunchError,
    },
}
