//! Why two samples do not calibrate ([`CalibrationError`]), and how a pointer slot's value is
//! shown in it ([`PointerValue`]).

use alloc::boxed::Box;
use alloc::string::String;
use core::ops::Range;

use super::GridRule;
use crate::binding::{BindingError, BindingKind};
use crate::record::{AllocationId, ArtifactId, Effect, Lds};

/// The value of a pointer slot, as resolved or as the raw blob bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PointerValue {
    /// The recorder's resolution of the pointer.
    Resolved {
        /// The allocation.
        allocation: AllocationId,
        /// Offset from its start, bytes.
        offset_bytes: u64,
    },
    /// The slot's 8 bytes, little-endian.
    Bytes(u64),
}

/// Why two samples do not calibrate. `launch` is an index into both samples; `a` is the value at
/// `p0`, `b` at `p1`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CalibrationError {
    /// The positions are not strictly increasing.
    #[error("positions must increase: p0 = {p0}, p1 = {p1}")]
    PositionsNotIncreasing {
        /// First sample's position.
        p0: u32,
        /// Second sample's position.
        p1: u32,
    },
    /// The prepared maximum lies below the second sample.
    #[error("maximum position {max_position} is below the sample position {p1}")]
    MaxPositionBelowSample {
        /// The maximum.
        max_position: u32,
        /// Second sample's position.
        p1: u32,
    },
    /// Different launch counts.
    #[error("launch counts differ: {a} vs {b}")]
    LaunchCountDiffers {
        /// At `p0`.
        a: usize,
        /// At `p1`.
        b: usize,
    },
    /// More launches than [`LAUNCHES_MAX`](super::LAUNCHES_MAX).
    #[error("{launches} launches exceed the limit of {limit}")]
    TooManyLaunches {
        /// Launches per sample.
        launches: usize,
        /// The limit.
        limit: usize,
    },
    /// More grid rules than [`GRID_RULES_MAX`](super::GRID_RULES_MAX).
    #[error("{rules} grid rules exceed the limit of {limit}")]
    TooManyGridRules {
        /// Rules given.
        rules: usize,
        /// The limit.
        limit: usize,
    },
    /// A grid rule names a launch that does not exist.
    #[error("grid rule {rule} names launch {launch} of {launches}")]
    GridRuleLaunchOutOfRange {
        /// Index of the rule.
        rule: usize,
        /// The launch it names.
        launch: usize,
        /// Launches per sample.
        launches: usize,
    },
    /// A grid rule with an axis above 2 or divisor 0.
    #[error("grid rule {rule} is malformed (axis {axis}, divisor {divisor})")]
    MalformedGridRule {
        /// Index of the rule.
        rule: usize,
        /// Its axis.
        axis: u8,
        /// Its divisor.
        divisor: u32,
    },
    /// Different code.
    #[error("launch {launch}: artifacts differ ({a:?} vs {b:?})")]
    ArtifactDiffers {
        /// The launch.
        launch: usize,
        /// At `p0`.
        a: Box<ArtifactId>,
        /// At `p1`.
        b: Box<ArtifactId>,
    },
    /// Different wave sizes.
    #[error("launch {launch}: wave sizes differ ({a} vs {b})")]
    WaveSizeDiffers {
        /// The launch.
        launch: usize,
        /// At `p0`.
        a: u8,
        /// At `p1`.
        b: u8,
    },
    /// Different LDS.
    #[error("launch {launch}: LDS differs ({a:?} vs {b:?})")]
    LdsDiffers {
        /// The launch.
        launch: usize,
        /// At `p0`.
        a: Lds,
        /// At `p1`.
        b: Lds,
    },
    /// Different work-group sizes.
    #[error("launch {launch}: work-group sizes differ ({a:?} vs {b:?})")]
    WorkgroupSizeDiffers {
        /// The launch.
        launch: usize,
        /// At `p0`, work-items per axis.
        a: [u16; 3],
        /// At `p1`.
        b: [u16; 3],
    },
    /// Different kernarg blob lengths.
    #[error("launch {launch}: kernarg lengths differ ({a} vs {b} bytes)")]
    KernargLengthDiffers {
        /// The launch.
        launch: usize,
        /// At `p0`, bytes.
        a: usize,
        /// At `p1`, bytes.
        b: usize,
    },
    /// A kernarg blob longer than [`KERNARG_BYTES_MAX`](super::KERNARG_BYTES_MAX).
    #[error("launch {launch}: kernarg of {len_bytes} bytes exceeds the limit of {limit}")]
    KernargTooLong {
        /// The launch.
        launch: usize,
        /// Its length, bytes.
        len_bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Different numbers of pointer slots.
    #[error("launch {launch}: pointer counts differ ({a} vs {b})")]
    PointerCountDiffers {
        /// The launch.
        launch: usize,
        /// At `p0`.
        a: usize,
        /// At `p1`.
        b: usize,
    },
    /// More pointer slots than [`POINTERS_MAX`](super::POINTERS_MAX).
    #[error("launch {launch}: {pointers} pointers exceed the limit of {limit}")]
    TooManyPointers {
        /// The launch.
        launch: usize,
        /// Its pointer count.
        pointers: usize,
        /// The limit.
        limit: usize,
    },
    /// The `index`-th pointer slot sits at different kernarg offsets.
    #[error("launch {launch}: pointer {index} is at kernarg offset {a} vs {b}")]
    PointerSlotDiffers {
        /// The launch.
        launch: usize,
        /// Index in `pointers`.
        index: usize,
        /// Offset at `p0`.
        a: u32,
        /// Offset at `p1`.
        b: u32,
    },
    /// A pointer slot's 8 bytes do not lie inside the kernarg blob.
    #[error("launch {launch}: pointer at kernarg offset {kernarg_offset} is outside the {kernarg_len} byte blob")]
    PointerOutsideKernarg {
        /// The launch.
        launch: usize,
        /// The slot.
        kernarg_offset: u32,
        /// The blob length, bytes.
        kernarg_len: usize,
    },
    /// A pointer that changed between the samples (its resolved target, or kernarg bytes
    /// overlapping its slot).
    #[error("launch {launch}: pointer at kernarg offset {kernarg_offset} moved ({a:?} vs {b:?})")]
    MovedPointer {
        /// The launch.
        launch: usize,
        /// The slot.
        kernarg_offset: u32,
        /// At `p0`.
        a: PointerValue,
        /// At `p1`.
        b: PointerValue,
    },
    /// Different effect counts; `None` is [`Effects::Unknown`](crate::record::Effects::Unknown).
    #[error("launch {launch}: effect counts differ ({a:?} vs {b:?})")]
    EffectCountDiffers {
        /// The launch.
        launch: usize,
        /// At `p0`.
        a: Option<usize>,
        /// At `p1`.
        b: Option<usize>,
    },
    /// The `index`-th effect differs.
    #[error("launch {launch}: effect {index} differs ({a:?} vs {b:?})")]
    EffectDiffers {
        /// The launch.
        launch: usize,
        /// Index in the effect list.
        index: usize,
        /// At `p0`.
        a: Effect,
        /// At `p1`.
        b: Effect,
    },
    /// A differing kernarg word that does not move with the position.
    #[error("launch {launch}: kernarg word at {offset} went {a} -> {b}, but the position went {p0} -> {p1}")]
    InconsistentDelta {
        /// The launch.
        launch: usize,
        /// Byte offset of the aligned word.
        offset: u32,
        /// The word at `p0`.
        a: u32,
        /// The word at `p1`.
        b: u32,
        /// First position.
        p0: u32,
        /// Second position.
        p1: u32,
    },
    /// Differing kernarg bytes outside any whole word (the unaligned tail of the blob).
    #[error("launch {launch}: immutable kernarg bytes {range:?} differ")]
    ImmutableBytesDiffer {
        /// The launch.
        launch: usize,
        /// First to last differing byte, half-open.
        range: Range<u32>,
    },
    /// A grid axis no single caller rule explains (or, without rules, a grid that changed).
    #[error("launch {launch}: grid axis {axis} of {a} -> {b} work-groups is not explained by a grid rule")]
    UnexplainedGrid {
        /// The launch.
        launch: usize,
        /// The axis.
        axis: u8,
        /// Work-groups at `p0`.
        a: u32,
        /// Work-groups at `p1`.
        b: u32,
        /// Work-items at `p0`.
        a_work_items: u32,
        /// Work-items at `p1`.
        b_work_items: u32,
    },
    /// Two different rules both reproduce the samples.
    #[error("launch {launch}: grid axis {axis} is explained by both {first:?} and {second:?}")]
    AmbiguousGrid {
        /// The launch.
        launch: usize,
        /// The axis.
        axis: u8,
        /// The first matching rule.
        first: GridRule,
        /// A later matching rule with a different addend or divisor.
        second: GridRule,
    },
    /// A bound grid axis whose recorded grid is not a whole number of work-groups.
    #[error("launch {launch}: grid axis {axis} of {work_items} work-items is not whole work-groups of {workgroup}")]
    GridNotWholeWorkgroups {
        /// The launch.
        launch: usize,
        /// The axis.
        axis: u8,
        /// The recorded grid, work-items.
        work_items: u32,
        /// The work-group size on the axis, work-items.
        workgroup: u16,
    },
    /// A binding that cannot produce a value at the prepared maximum position.
    #[error("launch {launch}: binding {kind:?} has no value at position {max_position}: {error}")]
    UnreachableMaximum {
        /// The launch.
        launch: usize,
        /// The binding (for a grid, with `max_workgroups` not yet set).
        kind: BindingKind,
        /// The maximum position.
        max_position: u32,
        /// Why.
        error: BindingError,
    },
    /// A kernarg word that moves with the position, with no declaration
    /// ([`calibrate_declared`](super::calibrate_declared)).
    #[error(
        "launch {launch} ({kernel}): kernarg word at {offset} went {a} -> {b} between positions {p0} and {p1}, \
         and no binding declares it"
    )]
    Undeclared {
        /// The launch.
        launch: usize,
        /// Its kernel's symbol.
        kernel: String,
        /// Byte offset of the aligned word.
        offset: u32,
        /// The word at `p0`.
        a: u32,
        /// The word at `p1`.
        b: u32,
        /// First position.
        p0: u32,
        /// Second position.
        p1: u32,
    },
    /// A declared binding whose rule does not give what a sample recorded.
    #[error(
        "launch {launch}: declared binding {name:?} ({rule}) gives {bound:?} at position {position}, recorded {recorded}"
    )]
    DeclarationDisagrees {
        /// The launch.
        launch: usize,
        /// The binding's name.
        name: String,
        /// Its rule.
        rule: String,
        /// The sample's position.
        position: u32,
        /// The rule's value there (`None`: it has none).
        bound: Option<u32>,
        /// The recorded word.
        recorded: u32,
    },
    /// A declaration calibration cannot take: not a kernarg word, not on an aligned word inside
    /// the blob, on a pointer, on a launch that does not exist, or on a word declared twice.
    #[error("declared binding {name:?}: {problem}")]
    BadDeclaration {
        /// The binding's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// More bindings than [`BINDINGS_MAX`](super::BINDINGS_MAX).
    #[error("more than {limit} bindings")]
    TooManyBindings {
        /// The limit.
        limit: usize,
    },
}
