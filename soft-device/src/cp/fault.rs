//! Why the command processor stopped: [`CpFault`] and its [`CpFaultKind`].

use hal::MemoryFault;
use pm4_encoding::{DecodeError, Family, Opcode};

use crate::exec::HiddenArgMismatch;
use crate::hazard::{Conflict, StaleRead};
use hal::LaunchError;

/// A fault of the command processor: where in the IB and why. Execution stops at the first
/// fault; memory may hold the stores of dispatches that ran before it, as on a GPU.
#[derive(Debug, thiserror::Error)]
#[error("IB dword {offset_dwords}: {kind}")]
pub struct CpFault {
    /// Dword offset, in the IB, of the header of the packet the fault belongs to (for a dispatch
    /// that fails while its group runs, its `DISPATCH_DIRECT`).
    pub offset_dwords: usize,
    /// What went wrong.
    pub kind: CpFaultKind,
}

/// What went wrong; every variant carries the offending values.
#[derive(Debug, thiserror::Error)]
pub enum CpFaultKind {
    /// The IB address is not dword aligned.
    #[error("IB address {va:#x} is not dword aligned")]
    IbMisaligned {
        /// The IB VA.
        va: u64,
    },
    /// The IB is empty or longer than `IB_SIZE` can say.
    #[error("IB of {size_dwords} dwords is not in 1..={limit}")]
    IbSize {
        /// Requested size.
        size_dwords: u32,
        /// The limit.
        limit: u32,
    },
    /// The IB's dwords are not inside one allocation.
    #[error("IB memory: {0}")]
    IbUnmapped(MemoryFault),
    /// The decoder refused the stream.
    #[error("decode: {0}")]
    Decode(DecodeError),
    /// A packet with the `PREDICATE` header bit: predication is not modelled.
    #[error("predicated {opcode} packet: predication is not modelled")]
    Predicated {
        /// The packet.
        opcode: Opcode,
    },
    /// A packet or packet form the soft device does not model.
    #[error("{what} is not modelled by the soft device")]
    Unmodelled {
        /// What it is.
        what: String,
    },
    /// `SET_SH_REG` to a dword that is no register on this family.
    #[error("SET_SH_REG to dword {dword:#x}, which is no register on {family}")]
    UnknownRegister {
        /// The family.
        family: Family,
        /// Absolute dword.
        dword: u32,
    },
    /// A queue-owned register written in the IB (`docs/ARCHITECTURE.md`, "Per-dispatch PM4 shape": not rewritten per dispatch).
    #[error("SET_SH_REG to queue-owned {name} ({dword:#x}): it belongs to the queue, not to the IB")]
    QueueOwnedRegister {
        /// Register name.
        name: &'static str,
        /// Absolute dword.
        dword: u32,
    },
    /// A register the command processor does not model.
    #[error("SET_SH_REG to {name} ({dword:#x}), which the soft device does not model")]
    UnmodelledRegister {
        /// Register name.
        name: &'static str,
        /// Absolute dword.
        dword: u32,
    },
    /// A register a dispatch needs was never written.
    #[error("DISPATCH_DIRECT reads {name}, which the IB never wrote")]
    RegisterNotSet {
        /// Register name.
        name: &'static str,
    },
    /// Too many dispatches in one IB.
    #[error("more than {limit} dispatches in one IB")]
    TooManyDispatches {
        /// The limit.
        limit: usize,
    },
    /// `COMPUTE_PGM_LO/HI` name no loaded kernel's entry.
    #[error("COMPUTE_PGM_LO {pgm_lo:#x} / PGM_HI {pgm_hi:#x} give entry {entry_va:#x}, no loaded kernel starts there")]
    UnknownEntry {
        /// `COMPUTE_PGM_LO`.
        pgm_lo: u32,
        /// `COMPUTE_PGM_HI`.
        pgm_hi: u32,
        /// `(hi << 40) | (lo << 8)`.
        entry_va: u64,
    },
    /// A resource register that must equal the descriptor's does not.
    #[error("kernel {kernel}: {register} is {found:#010x}, the descriptor says {expected:#010x}")]
    RsrcMismatch {
        /// Kernel name.
        kernel: String,
        /// Register (and which bits are compared).
        register: &'static str,
        /// The IB's value (compared bits).
        found: u32,
        /// The descriptor's value (compared bits).
        expected: u32,
    },
    /// `COMPUTE_PGM_RSRC2.USER_SGPR` is not the descriptor's, or is below the layout's total.
    #[error(
        "kernel {kernel}: RSRC2.USER_SGPR is {found}, the descriptor says {descriptor} and its user-SGPR layout needs {layout_total}"
    )]
    UserSgprCount {
        /// Kernel name.
        kernel: String,
        /// The IB's `USER_SGPR`.
        found: u32,
        /// The descriptor's RSRC2 `USER_SGPR`.
        descriptor: u8,
        /// SGPRs the enabled blocks need.
        layout_total: u8,
    },
    /// The descriptor enables no kernarg segment pointer: the IB cannot pass one.
    #[error("kernel {kernel}: the descriptor enables no kernarg segment pointer")]
    NoKernargPointer {
        /// Kernel name.
        kernel: String,
    },
    /// The kernarg pointer's SGPRs are not among the `USER_SGPR` registers the CP loads.
    #[error("kernel {kernel}: kernarg pointer in user SGPRs {first}..={last}, but RSRC2.USER_SGPR is {user_sgpr}")]
    KernargPointerNotLoaded {
        /// Kernel name.
        kernel: String,
        /// First SGPR.
        first: u8,
        /// Last SGPR.
        last: u8,
        /// RSRC2 `USER_SGPR`.
        user_sgpr: u32,
    },
    /// The kernarg pointer read from `COMPUTE_USER_DATA_n` does not point at a mapped segment.
    #[error(
        "kernel {kernel}: COMPUTE_USER_DATA_{user_data}/{} give kernarg pointer {va:#x}, not a mapped {bytes}-byte segment", user_data + 1
    )]
    KernargUnmapped {
        /// Kernel name.
        kernel: String,
        /// First `COMPUTE_USER_DATA_n` of the pointer.
        user_data: u8,
        /// The pointer.
        va: u64,
        /// `.kernarg_segment_size`.
        bytes: u32,
    },
    /// `RSRC2.LDS_SIZE` does not cover the kernel's LDS.
    #[error(
        "kernel {kernel}: RSRC2.LDS_SIZE {lds_size} ({granule_bytes}-byte granules) gives {} bytes, the kernel needs {static_bytes} static + {dynamic_bytes} dynamic",
        lds_size * granule_bytes
    )]
    LdsTooSmall {
        /// Kernel name.
        kernel: String,
        /// The `LDS_SIZE` field.
        lds_size: u32,
        /// Bytes per `LDS_SIZE` unit on the family.
        granule_bytes: u32,
        /// `group_segment_fixed_size`.
        static_bytes: u32,
        /// Dynamic LDS bytes the kernel indexes (0 when the static size alone is not covered).
        dynamic_bytes: u32,
    },
    /// A `COMPUTE_NUM_THREAD_*` word the model refuses.
    #[error(
        "kernel {kernel}: COMPUTE_NUM_THREAD_{axis} = {word:#010x} (full {full}, partial {partial}, PARTIAL_TG_EN {partial_tg_en}): {reason}"
    )]
    NumThread {
        /// Kernel name.
        kernel: String,
        /// `X`, `Y` or `Z`.
        axis: char,
        /// The register.
        word: u32,
        /// `NUM_THREAD_FULL`.
        full: u32,
        /// `NUM_THREAD_PARTIAL`.
        partial: u32,
        /// The initiator's `PARTIAL_TG_EN`.
        partial_tg_en: bool,
        /// Why.
        reason: &'static str,
    },
    /// A `DISPATCH_INITIATOR` the model refuses.
    #[error("kernel {kernel}: DISPATCH_INITIATOR {initiator:#010x}: {reason}")]
    Initiator {
        /// Kernel name.
        kernel: String,
        /// The word.
        initiator: u32,
        /// Why.
        reason: &'static str,
    },
    /// The initiator's `CS_W32_EN` disagrees with the descriptor's `ENABLE_WAVEFRONT_SIZE32`.
    #[error(
        "kernel {kernel}: DISPATCH_INITIATOR.CS_W32_EN = {initiator}, descriptor ENABLE_WAVEFRONT_SIZE32 = {descriptor}"
    )]
    WaveSize {
        /// Kernel name.
        kernel: String,
        /// `CS_W32_EN`.
        initiator: bool,
        /// `ENABLE_WAVEFRONT_SIZE32`.
        descriptor: bool,
    },
    /// `USE_THREAD_DIMENSIONS` is not the family's dimension semantics.
    #[error(
        "kernel {kernel}: USE_THREAD_DIMENSIONS = {found} on {family}; the {family} recipe gives DIM_X/Y/Z in {}",
        if *required { "work-items (USE_THREAD_DIMENSIONS = 1)" } else { "work-groups (USE_THREAD_DIMENSIONS = 0)" }
    )]
    DimensionSemantics {
        /// Kernel name.
        kernel: String,
        /// The family.
        family: Family,
        /// The initiator's bit.
        found: bool,
        /// What the family requires.
        required: bool,
    },
    /// A grid dimension that is 0 or whose work-item count overflows 32 bits.
    #[error("kernel {kernel}: DISPATCH_DIRECT dims {dims:?} with work-group {workgroup:?} give no valid grid")]
    Grid {
        /// Kernel name.
        kernel: String,
        /// `DIM_X/Y/Z`.
        dims: [u32; 3],
        /// Work-group size.
        workgroup: [u32; 3],
    },
    /// The kernarg segment's hidden geometry disagrees with the dispatch the IB describes.
    #[error(transparent)]
    HiddenArg(HiddenArgMismatch),
    /// The dispatch failed in the executor.
    #[error(transparent)]
    Launch(LaunchError),
    /// Two dispatches with no wait between them have conflicting declared effects.
    #[error(
        "dispatches at IB dwords {} ({}) and {} ({}) are not separated by a wait and both touch allocation {:?}, at least one writing",
        .0.first_offset, .0.first_kernel, .0.second_offset, .0.second_kernel, .0.allocation
    )]
    Hazard(Conflict),
    /// A dispatch reads what an earlier group wrote with no consumer-cache invalidation between.
    #[error(
        "dispatch at IB dword {} ({}) reads allocation {:?} written by the dispatch at IB dword {} ({}) with no ACQUIRE_MEM invalidating the consumer caches in between",
        .0.reader_offset, .0.reader_kernel, .0.allocation, .0.writer_offset, .0.writer_kernel
    )]
    Visibility(StaleRead),
    /// An `EVENT_WRITE` or `RELEASE_MEM` event the model does not execute.
    #[error("{opcode} event type {event_type} (EVENT_INDEX {event_index}) is not modelled")]
    UnmodelledEvent {
        /// The packet.
        opcode: Opcode,
        /// `EVENT_TYPE`.
        event_type: u8,
        /// `EVENT_INDEX`.
        event_index: u32,
    },
    /// A `RELEASE_MEM` that asks for an interrupt, which a sim queue cannot deliver.
    #[error("RELEASE_MEM INT_SEL {int_sel} asks for an interrupt")]
    Interrupt {
        /// `INT_SEL`.
        int_sel: u32,
    },
    /// `WAIT_REG_MEM` whose condition is false: in a single-queue sim nothing else could make it
    /// true, so it would wait forever.
    #[error(
        "WAIT_REG_MEM on {address:#x}: (value {value:#x} & mask {mask:#x}) {function} reference {reference:#x} is false and nothing else runs"
    )]
    WaitNeverSatisfied {
        /// Polled address.
        address: u64,
        /// The value read.
        value: u32,
        /// `MASK`.
        mask: u32,
        /// The comparison.
        function: &'static str,
        /// `REFERENCE`.
        reference: u32,
    },
    /// A command-processor memory access (packet data write, poll) faulted.
    #[error("{opcode} memory access: {fault}")]
    Memory {
        /// The packet.
        opcode: Opcode,
        /// The fault.
        fault: MemoryFault,
    },
}

impl CpFaultKind {
    /// The fault at IB dword `offset_dwords`.
    #[must_use]
    pub fn at(self, offset_dwords: usize) -> CpFault {
        CpFault { offset_dwords, kind: self }
    }

    /// An [`CpFaultKind::Unmodelled`] naming `what`.
    pub(crate) fn unmodelled(what: impl Into<String>) -> Self {
        CpFaultKind::Unmodelled { what: what.into() }
    }
}
