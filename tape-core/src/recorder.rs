//! The bounded recorder: copies the launches of one decode step into a [`Tape`].
//!
//! A capture is opened with [`Recorder::begin`] at a decode position, receives every launch of
//! the step through [`Recorder::record`] (checked against the kernel's [`KernargLayout`]) and
//! every launch deliberately kept off the tape through [`Recorder::record_external`], and is
//! closed by [`Recorder::finish`]. The first error of any call poisons the recorder: every later
//! call, `finish` included, returns [`RecordError::Poisoned`] naming that first error, so no
//! partial tape can come out of a capture that lost a launch. [`Recorder::reset`] starts over.
//!
//! The bound that is a constant is in the type: an open capture keeps its external names in a
//! `heapless::Vec<_, EXTERNAL_NAMES_MAX>`. Its launches stay a `Vec` reserved at [`Recorder::begin`]:
//! their bound is the capacity given to [`Recorder::new`], a run-time value, and a list typed at
//! [`RECORDER_CAPACITY_MAX`] launches would hold megabytes inline.
//!
//! A launch's owner declares the kernarg arguments that follow the position
//! ([`DeclaredArg`], through [`Recorder::record_declared`]): each becomes a named
//! [`Binding`] of that launch, checked at once against the value the
//! launch passes at the capture's position, and the finished tape carries them. Calibration then
//! confirms the declarations against a second recording and refuses any word that moves without
//! one ([`calibrate_declared`](crate::calibrate::calibrate_declared)).
//!
//! [`check_launch`] holds the checks a launch record must pass without its layout (they are
//! repeated on every tape that is deserialized); [`check_launch_with_layout`] adds those against
//! the layout, which only the recording side (or [`Tape::check_layouts`]) has.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use kernarg_abi::KernargLayout;
use kernarg_abi::layout::{KERNARG_SEGMENT_MAX_BYTES, KernargArg};
use kernarg_abi::metadata::ValueKind;

use crate::binding::{Binding, BindingError, BindingKind, Rule};
use crate::record::{Effects, LaunchRecord};
use crate::tape::{BINDINGS_MAX, ExternalCount, TAPE_KERNARG_BYTES_MAX, TAPE_LAUNCHES_MAX, Tape, TapeError};

/// Largest capacity a recorder accepts, in launches: [`TAPE_LAUNCHES_MAX`].
pub const RECORDER_CAPACITY_MAX: usize = TAPE_LAUNCHES_MAX;
/// Longest kernel symbol, bytes. Mangled template names run to a few hundred bytes.
pub const SYMBOL_BYTES_MAX: usize = 4096;
/// Most `Known` effects one launch may declare.
pub const EFFECTS_PER_LAUNCH_MAX: usize = 256;
/// Largest work-group, in work-items: the upper bound of AMDGPU's `.max_flat_workgroup_size`.
pub const WORKGROUP_WORK_ITEMS_MAX: u32 = 1024;
/// Largest grid, in work-items over all three axes (the product `x * y * z`): what an HSA GPU
/// agent reports as `HSA_ISA_INFO_GRID_MAX_SIZE`, 2^32 − 1. Each axis alone is a `u32` already.
pub const GRID_WORK_ITEMS_MAX: u64 = (1 << 32) - 1;
/// Largest static + dynamic LDS of a launch, bytes: what `COMPUTE_PGM_RSRC2.LDS_SIZE` (bits 23:15,
/// 9 bits) can encode in 512-byte granules (reference §3).
pub const LDS_BYTES_MAX: u32 = 0x1FF * 512;
/// Most distinct external names of one tape.
pub const EXTERNAL_NAMES_MAX: usize = 64;
/// Longest external name, bytes.
pub const EXTERNAL_NAME_BYTES_MAX: usize = 64;
/// Most external launches of one tape, over all names.
pub const EXTERNAL_LAUNCHES_MAX: u32 = 1 << 16;

/// Bytes of a pointer slot in the kernarg blob.
const POINTER_BYTES: u32 = 8;

/// Why a launch record is not a valid tape entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// A wave size other than 32 or 64.
    #[error("wave size {wave_size} is neither 32 nor 64")]
    WaveSize {
        /// The recorded wave size.
        wave_size: u8,
    },
    /// A grid axis of 0 work-items.
    #[error("grid size along axis {axis} is 0")]
    ZeroGridAxis {
        /// 0 = x, 1 = y, 2 = z.
        axis: u8,
    },
    /// A work-group axis of 0 work-items.
    #[error("work-group size along axis {axis} is 0")]
    ZeroWorkgroupAxis {
        /// 0 = x, 1 = y, 2 = z.
        axis: u8,
    },
    /// A grid of more work-items than [`GRID_WORK_ITEMS_MAX`] (the product of the three axes).
    #[error("grid_work_items {grid:?} makes {work_items} work-items, above the limit of {limit}")]
    GridTooLarge {
        /// The recorded grid, work-items per axis.
        grid: [u32; 3],
        /// Product of the three axes.
        work_items: u128,
        /// [`GRID_WORK_ITEMS_MAX`].
        limit: u64,
    },
    /// A work-group above [`WORKGROUP_WORK_ITEMS_MAX`].
    #[error("work-group of {work_items} work-items exceeds the maximum of {limit}")]
    WorkgroupTooLarge {
        /// Product of the three axes.
        work_items: u64,
        /// [`WORKGROUP_WORK_ITEMS_MAX`].
        limit: u32,
    },
    /// Static + dynamic LDS above [`LDS_BYTES_MAX`].
    #[error("LDS of {static_bytes} static + {dynamic_bytes} dynamic bytes exceeds the {limit}-byte limit")]
    LdsTooLarge {
        /// Static LDS, bytes.
        static_bytes: u32,
        /// Dynamic LDS, bytes.
        dynamic_bytes: u32,
        /// [`LDS_BYTES_MAX`].
        limit: u32,
    },
    /// An empty kernel symbol.
    #[error("the kernel symbol is empty")]
    SymbolEmpty,
    /// A symbol above [`SYMBOL_BYTES_MAX`].
    #[error("kernel symbol of {len} bytes exceeds the {limit}-byte limit")]
    SymbolTooLong {
        /// Its length, bytes.
        len: usize,
        /// [`SYMBOL_BYTES_MAX`].
        limit: usize,
    },
    /// A kernarg blob above `KERNARG_SEGMENT_MAX_BYTES`.
    #[error("kernarg blob of {len} bytes exceeds the {limit}-byte limit")]
    KernargTooLarge {
        /// Blob length, bytes.
        len: usize,
        /// `kernarg_abi::layout::KERNARG_SEGMENT_MAX_BYTES`.
        limit: u32,
    },
    /// A kernarg blob whose length is not the layout's segment size.
    #[error("kernarg blob of {len} bytes, the layout's segment is {segment_size} bytes")]
    KernargLength {
        /// Blob length, bytes.
        len: usize,
        /// `.kernarg_segment_size`.
        segment_size: u32,
    },
    /// A pointer slot not 8-byte aligned.
    #[error("pointer at kernarg offset {kernarg_offset} is not 8-byte aligned")]
    PointerMisaligned {
        /// The slot's offset.
        kernarg_offset: u32,
    },
    /// A pointer slot reaching past the blob.
    #[error("pointer at kernarg offset {kernarg_offset} ends past the {kernarg_len}-byte kernarg blob")]
    PointerOutsideKernarg {
        /// The slot's offset.
        kernarg_offset: u32,
        /// Blob length, bytes.
        kernarg_len: usize,
    },
    /// Pointers not strictly increasing by offset (unsorted or two at one slot).
    #[error(
        "pointer at kernarg offset {kernarg_offset} follows one at {previous}: pointers must be sorted and distinct"
    )]
    PointersUnsorted {
        /// The offending slot's offset.
        kernarg_offset: u32,
        /// The previous pointer's offset.
        previous: u32,
    },
    /// A pointer slot whose 8 bytes are all zero: no allocation can be behind it.
    #[error("pointer slot at kernarg offset {kernarg_offset} holds a null address")]
    NullPointer {
        /// The slot's offset.
        kernarg_offset: u32,
    },
    /// A pointer where the layout has no `global_buffer` argument.
    #[error("pointer at kernarg offset {kernarg_offset} is not at a global_buffer argument of the layout")]
    PointerNotAtSlot {
        /// The pointer's offset.
        kernarg_offset: u32,
    },
    /// A `global_buffer` argument without a recorded pointer.
    #[error("global_buffer argument at kernarg offset {kernarg_offset} has no recorded pointer")]
    PointerMissing {
        /// The argument's offset.
        kernarg_offset: u32,
    },
    /// A `global_buffer` argument that is not 8 bytes.
    #[error("global_buffer argument at kernarg offset {kernarg_offset} is {size} bytes, not 8")]
    PointerSlotSize {
        /// The argument's offset.
        kernarg_offset: u32,
        /// `.size`.
        size: u32,
    },
    /// More `Known` effects than [`EFFECTS_PER_LAUNCH_MAX`].
    #[error("{count} effects exceed the limit of {limit}")]
    TooManyEffects {
        /// Effects declared.
        count: usize,
        /// [`EFFECTS_PER_LAUNCH_MAX`].
        limit: usize,
    },
    /// An effect whose end does not fit in `u64`.
    #[error("effect {index}: offset {offset_bytes} + length {len_bytes} overflows u64")]
    EffectOverflow {
        /// Index in the launch's effect list.
        index: usize,
        /// `offset_bytes`.
        offset_bytes: u64,
        /// `len_bytes`.
        len_bytes: u64,
    },
    /// An effect of 0 bytes: it would order the launch against nothing, so a launch that does
    /// touch the range would lose its waits.
    #[error("effect {index}: len_bytes is 0, an effect covers at least 1 byte")]
    EffectEmpty {
        /// Index in the launch's effect list.
        index: usize,
    },
    /// An effect on an allocation none of the launch's pointers points into (effects are
    /// resolved against the launch's pointers).
    #[error("effect {index} names allocation {allocation}, which no pointer of the launch points into")]
    EffectAllocation {
        /// Index in the launch's effect list.
        index: usize,
        /// The allocation id.
        allocation: u32,
    },
}

/// Checks what a launch record must satisfy on its own, without its kernel's layout: wave size,
/// geometry (no zero axis, at most [`GRID_WORK_ITEMS_MAX`] work-items in the grid and
/// [`WORKGROUP_WORK_ITEMS_MAX`] in a work-group), LDS, symbol, blob size, pointer slots (8-byte
/// aligned, inside the blob, sorted, distinct, non-null) and effects (bounded in number, each at
/// least 1 byte long, no overflow, on allocations the launch points into).
///
/// # Errors
/// The first [`LaunchError`] found.
pub fn check_launch(launch: &LaunchRecord) -> Result<(), LaunchError> {
    check_shape(launch)?;
    check_pointers(launch)?;
    check_effects(launch)
}

fn check_shape(launch: &LaunchRecord) -> Result<(), LaunchError> {
    if launch.wave_size != 32 && launch.wave_size != 64 {
        return Err(LaunchError::WaveSize { wave_size: launch.wave_size });
    }
    let geometry = &launch.geometry;
    for (axis, &grid) in (0u8..).zip(&geometry.grid_work_items) {
        if grid == 0 {
            return Err(LaunchError::ZeroGridAxis { axis });
        }
    }
    for (axis, &workgroup) in (0u8..).zip(&geometry.workgroup_work_items) {
        if workgroup == 0 {
            return Err(LaunchError::ZeroWorkgroupAxis { axis });
        }
    }
    let grid = geometry.grid_work_items;
    let grid_work_items = grid.iter().map(|&g| u128::from(g)).product::<u128>();
    if grid_work_items > u128::from(GRID_WORK_ITEMS_MAX) {
        return Err(LaunchError::GridTooLarge { grid, work_items: grid_work_items, limit: GRID_WORK_ITEMS_MAX });
    }
    let work_items = geometry.workgroup_work_items.iter().map(|&w| u64::from(w)).product::<u64>();
    if work_items > u64::from(WORKGROUP_WORK_ITEMS_MAX) {
        return Err(LaunchError::WorkgroupTooLarge { work_items, limit: WORKGROUP_WORK_ITEMS_MAX });
    }
    let lds = launch.lds;
    if u64::from(lds.static_bytes) + u64::from(lds.dynamic_bytes) > u64::from(LDS_BYTES_MAX) {
        return Err(LaunchError::LdsTooLarge {
            static_bytes: lds.static_bytes,
            dynamic_bytes: lds.dynamic_bytes,
            limit: LDS_BYTES_MAX,
        });
    }
    let symbol_len = launch.artifact.symbol.len();
    if symbol_len == 0 {
        return Err(LaunchError::SymbolEmpty);
    }
    if symbol_len > SYMBOL_BYTES_MAX {
        return Err(LaunchError::SymbolTooLong { len: symbol_len, limit: SYMBOL_BYTES_MAX });
    }
    let len = launch.kernarg.len();
    if u64::try_from(len).map_or(true, |l| l > u64::from(KERNARG_SEGMENT_MAX_BYTES)) {
        return Err(LaunchError::KernargTooLarge { len, limit: KERNARG_SEGMENT_MAX_BYTES });
    }
    Ok(())
}

fn check_pointers(launch: &LaunchRecord) -> Result<(), LaunchError> {
    let kernarg_len = launch.kernarg.len();
    let mut previous: Option<u32> = None;
    for pointer in &launch.pointers {
        let kernarg_offset = pointer.kernarg_offset;
        if let Some(previous) = previous.filter(|&p| p >= kernarg_offset) {
            return Err(LaunchError::PointersUnsorted { kernarg_offset, previous });
        }
        previous = Some(kernarg_offset);
        if !kernarg_offset.is_multiple_of(POINTER_BYTES) {
            return Err(LaunchError::PointerMisaligned { kernarg_offset });
        }
        let slot = pointer_slot(&launch.kernarg, kernarg_offset)
            .ok_or(LaunchError::PointerOutsideKernarg { kernarg_offset, kernarg_len })?;
        if slot.iter().all(|&b| b == 0) {
            return Err(LaunchError::NullPointer { kernarg_offset });
        }
    }
    Ok(())
}

/// The 8 bytes of the pointer slot at `offset`, if they lie inside `kernarg`.
pub(crate) fn pointer_slot(kernarg: &[u8], offset: u32) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    kernarg.get(start..start.checked_add(8)?)
}

fn check_effects(launch: &LaunchRecord) -> Result<(), LaunchError> {
    let Effects::Known(effects) = &launch.effects else { return Ok(()) };
    if effects.len() > EFFECTS_PER_LAUNCH_MAX {
        return Err(LaunchError::TooManyEffects { count: effects.len(), limit: EFFECTS_PER_LAUNCH_MAX });
    }
    for (index, effect) in effects.iter().enumerate() {
        let (offset_bytes, len_bytes) = (effect.offset_bytes, effect.len_bytes);
        if len_bytes == 0 {
            return Err(LaunchError::EffectEmpty { index });
        }
        if offset_bytes.checked_add(len_bytes).is_none() {
            return Err(LaunchError::EffectOverflow { index, offset_bytes, len_bytes });
        }
        if !launch.pointers.iter().any(|p| p.allocation == effect.allocation) {
            return Err(LaunchError::EffectAllocation { index, allocation: effect.allocation.0 });
        }
    }
    Ok(())
}

/// [`check_launch`], then the blob against the kernel's layout: its length is the segment size,
/// every `global_buffer` argument is an 8-byte slot with exactly one recorded pointer, and every
/// recorded pointer sits at such an argument. (Which allocation an address belongs to is the
/// caller's knowledge; the layout only says where the pointers are.)
///
/// # Errors
/// The first [`LaunchError`] found.
pub fn check_launch_with_layout(launch: &LaunchRecord, layout: &KernargLayout) -> Result<(), LaunchError> {
    check_launch(launch)?;
    let segment_size = layout.segment_size();
    let len = launch.kernarg.len();
    if usize::try_from(segment_size).ok() != Some(len) {
        return Err(LaunchError::KernargLength { len, segment_size });
    }
    let is_slot = |a: &&KernargArg| a.kind == ValueKind::GlobalBuffer;
    for slot in layout.args().iter().filter(is_slot) {
        let kernarg_offset = slot.offset;
        if slot.size != POINTER_BYTES {
            return Err(LaunchError::PointerSlotSize { kernarg_offset, size: slot.size });
        }
        // INVARIANT: `check_launch` proved the pointers sorted and distinct, so a hit is the one.
        if launch.pointers.binary_search_by_key(&kernarg_offset, |p| p.kernarg_offset).is_err() {
            return Err(LaunchError::PointerMissing { kernarg_offset });
        }
    }
    let at_slot = |offset: u32| layout.args().iter().filter(is_slot).any(|a| a.offset == offset);
    match launch.pointers.iter().find(|p| !at_slot(p.kernarg_offset)) {
        Some(p) => Err(LaunchError::PointerNotAtSlot { kernarg_offset: p.kernarg_offset }),
        None => Ok(()),
    }
}

/// Why an external-launch name or count is not acceptable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExternalError {
    /// An empty name.
    #[error("empty external-launch name")]
    NameEmpty,
    /// A name above [`EXTERNAL_NAME_BYTES_MAX`].
    #[error("external-launch name of {len} bytes exceeds the {limit}-byte limit")]
    NameTooLong {
        /// Its length, bytes.
        len: usize,
        /// [`EXTERNAL_NAME_BYTES_MAX`].
        limit: usize,
    },
    /// More distinct names than [`EXTERNAL_NAMES_MAX`].
    #[error("more than {limit} distinct external-launch names")]
    TooManyNames {
        /// [`EXTERNAL_NAMES_MAX`].
        limit: usize,
    },
    /// More external launches than [`EXTERNAL_LAUNCHES_MAX`].
    #[error("more than {limit} external launches")]
    TooManyLaunches {
        /// [`EXTERNAL_LAUNCHES_MAX`].
        limit: u32,
    },
    /// A name listed twice.
    #[error("external-launch name `{name}` is listed twice")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A name listed with a count of 0.
    #[error("external-launch name `{name}` has a count of 0")]
    ZeroCount {
        /// The name.
        name: String,
    },
}

/// Checks one external-launch name's length.
///
/// # Errors
/// [`ExternalError::NameEmpty`] or [`ExternalError::NameTooLong`].
pub fn check_external_name(name: &str) -> Result<(), ExternalError> {
    if name.is_empty() {
        return Err(ExternalError::NameEmpty);
    }
    if name.len() > EXTERNAL_NAME_BYTES_MAX {
        return Err(ExternalError::NameTooLong { len: name.len(), limit: EXTERNAL_NAME_BYTES_MAX });
    }
    Ok(())
}

/// The recorder operation that found no open capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// [`Recorder::record`].
    Record,
    /// [`Recorder::record_external`].
    RecordExternal,
    /// [`Recorder::finish`].
    Finish,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Record => "record",
            Operation::RecordExternal => "record_external",
            Operation::Finish => "finish",
        })
    }
}

/// A kernarg argument of one launch that follows the decode position, declared by the launch's
/// owner: explicit argument `arg` (a 4-byte by-value argument) holds `rule` at every position.
/// A [`Rule::Offset`] becomes a [`BindingKind::KernargU32`], a [`Rule::Clamped`] a
/// [`BindingKind::KernargU32Clamped`]; grids are not kernarg arguments (a launch's grid follows
/// the position through calibration's grid rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeclaredArg<'a> {
    /// The binding's name, unique within the step (`layer3.attention.n`).
    pub name: &'a str,
    /// Index among the kernel's explicit arguments.
    pub arg: usize,
    /// What the argument holds at a position.
    pub rule: Rule,
}

/// What is wrong with a declared argument.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeclaredProblem {
    /// The kernel has no explicit argument with that index.
    #[error("the kernel has {explicit} explicit arguments, not an argument {arg}")]
    NoSuchArgument {
        /// The index declared.
        arg: usize,
        /// Explicit arguments of the kernel.
        explicit: usize,
    },
    /// The argument is not a 4-byte by-value argument.
    #[error("argument {arg} is a {kind} of {size} bytes, not a 4-byte by-value word")]
    NotAWord {
        /// The index declared.
        arg: usize,
        /// Its value kind, as the metadata names it.
        kind: String,
        /// Its size, bytes.
        size: u32,
    },
    /// A grid rule declared for a kernarg argument.
    #[error("rule `{rule}` is a grid rule: a kernarg argument holds `position + A` or `max(0, position + A)`")]
    GridRule {
        /// The rule.
        rule: Rule,
    },
    /// The rule has no value at the capture's position.
    #[error("rule `{rule}` has no value at position {position}: {error}")]
    NoValue {
        /// The rule.
        rule: Rule,
        /// The capture's position.
        position: u32,
        /// Why.
        error: BindingError,
    },
    /// The launch passes another value than the rule gives.
    #[error("rule `{rule}` gives {bound} at position {position}, the launch passes {passed}")]
    Disagrees {
        /// The rule.
        rule: Rule,
        /// The capture's position.
        position: u32,
        /// The rule's value.
        bound: u32,
        /// The word in the kernarg blob.
        passed: u32,
    },
    /// More declarations in the capture than a tape may hold.
    #[error("more than {limit} declared bindings in one capture")]
    TooMany {
        /// [`BINDINGS_MAX`].
        limit: usize,
    },
}

/// Why a capture failed. Every variant but [`RecordError::Poisoned`] poisons the recorder.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// A launch beyond the recorder's capacity.
    #[error("capture exceeds the recorder's capacity of {capacity} launches")]
    CapacityExceeded {
        /// The capacity.
        capacity: usize,
    },
    /// `record`, `record_external` or `finish` without an open capture.
    #[error("{operation} without an open capture")]
    NotOpen {
        /// The call.
        operation: Operation,
    },
    /// `begin` while a capture is open.
    #[error("begin while the capture at position {position} is open")]
    AlreadyOpen {
        /// Position of the open capture.
        position: u32,
    },
    /// A launch that fails its checks.
    #[error("launch {index}: {error}")]
    Launch {
        /// Index the launch would have had in the tape.
        index: usize,
        /// What is wrong with it.
        error: LaunchError,
    },
    /// A declared argument that is not what its declaration says.
    #[error("launch {index}: declared binding {name:?}: {problem}")]
    Declared {
        /// Index of the launch in the tape.
        index: usize,
        /// The declared name, cut to 64 characters.
        name: String,
        /// What is wrong.
        problem: DeclaredProblem,
    },
    /// Kernarg bytes of the capture above [`TAPE_KERNARG_BYTES_MAX`].
    #[error("capture holds {total} kernarg bytes, above the {limit}-byte limit")]
    KernargTotal {
        /// Bytes the capture would hold.
        total: usize,
        /// [`TAPE_KERNARG_BYTES_MAX`].
        limit: usize,
    },
    /// A bad external launch.
    #[error(transparent)]
    External(#[from] ExternalError),
    /// The finished capture is not a valid tape (an empty capture).
    #[error(transparent)]
    Tape(#[from] TapeError),
    /// An earlier error poisoned the recorder; [`Recorder::reset`] starts over.
    #[error("the recorder is poisoned by an earlier error: {first}")]
    Poisoned {
        /// The error that poisoned it.
        first: Box<RecordError>,
    },
}

/// A bounded, fail-closed recorder of one decode step.
#[derive(Debug)]
pub struct Recorder {
    capacity_launches: usize,
    state: State,
}

#[derive(Debug)]
enum State {
    Idle,
    /// Boxed: the capture holds its external names inline.
    Open(Box<Capture>),
    /// INVARIANT: never holds a `RecordError::Poisoned`.
    Poisoned(RecordError),
}

#[derive(Debug)]
struct Capture {
    position: u32,
    launches: Vec<LaunchRecord>,
    external: heapless::Vec<ExternalCount, EXTERNAL_NAMES_MAX>,
    external_launches: u32,
    kernarg_bytes: usize,
    /// Declared bindings, in launch order.
    bindings: Vec<Binding>,
}

impl Capture {
    /// The bindings `declared` for the launch about to be recorded as `index`, checked against
    /// its blob at the capture's position.
    fn declare(
        &self,
        index: usize,
        launch: &LaunchRecord,
        layout: &KernargLayout,
        declared: &[DeclaredArg<'_>],
    ) -> Result<Vec<Binding>, RecordError> {
        let mut out = Vec::with_capacity(declared.len());
        for d in declared {
            let fail = |problem| RecordError::Declared { index, name: cut_name(d.name), problem };
            if self.bindings.len() + out.len() >= BINDINGS_MAX {
                return Err(fail(DeclaredProblem::TooMany { limit: BINDINGS_MAX }));
            }
            let explicit = layout.explicit_args().count();
            let arg = layout
                .explicit_args()
                .nth(d.arg)
                .ok_or_else(|| fail(DeclaredProblem::NoSuchArgument { arg: d.arg, explicit }))?;
            if arg.kind != ValueKind::ByValue || arg.size != 4 {
                return Err(fail(DeclaredProblem::NotAWord {
                    arg: d.arg,
                    kind: String::from(arg.kind.as_str()),
                    size: arg.size,
                }));
            }
            let (offset, rule, position) = (arg.offset, d.rule, self.position);
            let kind = match rule {
                Rule::Offset { addend } => BindingKind::KernargU32 { offset, addend },
                Rule::Clamped { addend } => BindingKind::KernargU32Clamped { offset, addend },
                Rule::Grid { .. } => return Err(fail(DeclaredProblem::GridRule { rule })),
            };
            let bound =
                kind.value_at(position).map_err(|error| fail(DeclaredProblem::NoValue { rule, position, error }))?;
            // The layout check of the launch (run before) keeps every argument inside the blob.
            let passed = usize::try_from(offset)
                .ok()
                .and_then(|at| launch.kernarg.get(at..at.checked_add(4)?))
                .map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            if bound != passed {
                return Err(fail(DeclaredProblem::Disagrees { rule, position, bound, passed }));
            }
            // CAST: `index` is below the recorder's capacity, at most TAPE_LAUNCHES_MAX.
            let launch = u32::try_from(index).unwrap_or(u32::MAX);
            out.push(Binding { name: String::from(d.name), launch, kind });
        }
        Ok(out)
    }

    fn record(&mut self, launch: LaunchRecord, layout: &KernargLayout, capacity: usize) -> Result<(), RecordError> {
        let index = self.launches.len();
        if index >= capacity {
            return Err(RecordError::CapacityExceeded { capacity });
        }
        check_launch_with_layout(&launch, layout).map_err(|error| RecordError::Launch { index, error })?;
        let total = self.kernarg_bytes.saturating_add(launch.kernarg.len());
        if total > TAPE_KERNARG_BYTES_MAX {
            return Err(RecordError::KernargTotal { total, limit: TAPE_KERNARG_BYTES_MAX });
        }
        self.kernarg_bytes = total;
        self.launches.push(launch);
        Ok(())
    }

    fn record_external(&mut self, name: &str) -> Result<(), ExternalError> {
        check_external_name(name)?;
        if self.external_launches >= EXTERNAL_LAUNCHES_MAX {
            return Err(ExternalError::TooManyLaunches { limit: EXTERNAL_LAUNCHES_MAX });
        }
        match self.external.iter_mut().find(|e| e.name == name) {
            // INVARIANT: count <= external_launches < EXTERNAL_LAUNCHES_MAX, so it cannot wrap.
            Some(entry) => entry.count += 1,
            None => {
                // A full list hands the new entry back: one name too many.
                if self.external.push(ExternalCount { name: String::from(name), count: 1 }).is_err() {
                    return Err(ExternalError::TooManyNames { limit: EXTERNAL_NAMES_MAX });
                }
            }
        }
        self.external_launches += 1;
        Ok(())
    }
}

impl Recorder {
    /// A recorder for captures of at most `capacity_launches` launches.
    ///
    /// # Panics
    /// When `capacity_launches` is 0 or above [`RECORDER_CAPACITY_MAX`] (a programming error).
    #[must_use]
    pub fn new(capacity_launches: usize) -> Self {
        assert!(
            capacity_launches > 0 && capacity_launches <= RECORDER_CAPACITY_MAX,
            "recorder capacity {capacity_launches} outside 1..={RECORDER_CAPACITY_MAX}"
        );
        Self { capacity_launches, state: State::Idle }
    }

    /// The capacity, in launches.
    #[must_use]
    pub fn capacity_launches(&self) -> usize {
        self.capacity_launches
    }

    /// Whether a capture is open.
    #[must_use]
    pub fn is_open(&self) -> bool {
        matches!(self.state, State::Open(_))
    }

    /// The error that poisoned the recorder, if one did.
    #[must_use]
    pub fn poisoned_by(&self) -> Option<&RecordError> {
        match &self.state {
            State::Poisoned(first) => Some(first),
            State::Idle | State::Open(_) => None,
        }
    }

    /// Launches recorded so far in the open capture (0 when none is open).
    #[must_use]
    pub fn recorded_launches(&self) -> usize {
        match &self.state {
            State::Open(capture) => capture.launches.len(),
            State::Idle | State::Poisoned(_) => 0,
        }
    }

    /// Opens a capture of the decode step at `position`.
    ///
    /// # Errors
    /// [`RecordError::AlreadyOpen`] (poisons), or [`RecordError::Poisoned`].
    pub fn begin(&mut self, position: u32) -> Result<(), RecordError> {
        match &self.state {
            State::Poisoned(first) => Err(poisoned(first)),
            State::Open(capture) => {
                let position = capture.position;
                Err(self.poison(RecordError::AlreadyOpen { position }))
            }
            State::Idle => {
                self.state = State::Open(Box::new(Capture {
                    position,
                    launches: Vec::with_capacity(self.capacity_launches),
                    external: heapless::Vec::new(),
                    external_launches: 0,
                    kernarg_bytes: 0,
                    bindings: Vec::new(),
                }));
                Ok(())
            }
        }
    }

    /// Appends one launch, checked against its kernel's kernarg layout
    /// ([`check_launch_with_layout`]).
    ///
    /// # Errors
    /// [`RecordError::NotOpen`], [`RecordError::CapacityExceeded`], [`RecordError::Launch`] or
    /// [`RecordError::KernargTotal`] (each poisons), or [`RecordError::Poisoned`].
    pub fn record(&mut self, launch: LaunchRecord, layout: &KernargLayout) -> Result<(), RecordError> {
        let result = match &mut self.state {
            State::Poisoned(first) => return Err(poisoned(first)),
            State::Idle => Err(RecordError::NotOpen { operation: Operation::Record }),
            State::Open(capture) => capture.record(launch, layout, self.capacity_launches),
        };
        result.map_err(|e| self.poison(e))
    }

    /// Appends one launch as [`Recorder::record`] does, with the kernarg arguments its owner
    /// declares to follow the position ([`DeclaredArg`]): each becomes a binding of this launch,
    /// named as declared, whose rule must give the value the launch passes at the capture's
    /// position. The finished tape carries them.
    ///
    /// # Errors
    /// As [`Recorder::record`], and [`RecordError::Declared`] (poisons) for a declaration that
    /// names no 4-byte argument, holds a grid rule, or disagrees with the launch.
    pub fn record_declared(
        &mut self,
        launch: LaunchRecord,
        layout: &KernargLayout,
        declared: &[DeclaredArg<'_>],
    ) -> Result<(), RecordError> {
        let result = match &mut self.state {
            State::Poisoned(first) => return Err(poisoned(first)),
            State::Idle => Err(RecordError::NotOpen { operation: Operation::Record }),
            State::Open(capture) => {
                let index = capture.launches.len();
                let checked = check_launch_with_layout(&launch, layout)
                    .map_err(|error| RecordError::Launch { index, error })
                    .and_then(|()| capture.declare(index, &launch, layout, declared));
                checked.and_then(|bindings| {
                    capture.record(launch, layout, self.capacity_launches)?;
                    capture.bindings.extend(bindings);
                    Ok(())
                })
            }
        };
        result.map_err(|e| self.poison(e))
    }

    /// Counts one launch deliberately kept off the tape, under `name` (the token embedding, ...).
    ///
    /// # Errors
    /// [`RecordError::NotOpen`] or [`RecordError::External`] (each poisons), or
    /// [`RecordError::Poisoned`].
    pub fn record_external(&mut self, name: &str) -> Result<(), RecordError> {
        let result = match &mut self.state {
            State::Poisoned(first) => return Err(poisoned(first)),
            State::Idle => Err(RecordError::NotOpen { operation: Operation::RecordExternal }),
            State::Open(capture) => capture.record_external(name).map_err(RecordError::External),
        };
        result.map_err(|e| self.poison(e))
    }

    /// Closes the capture into a tape whose bindings are the declared ones
    /// ([`Recorder::record_declared`]), none when nothing was declared.
    ///
    /// # Errors
    /// [`RecordError::NotOpen`] or [`RecordError::Tape`] (an empty capture, or declarations the
    /// tape refuses: duplicate names, overlapping words; each poisons), or
    /// [`RecordError::Poisoned`].
    pub fn finish(&mut self) -> Result<Tape, RecordError> {
        let capture = match core::mem::replace(&mut self.state, State::Idle) {
            State::Poisoned(first) => {
                let error = poisoned(&first);
                self.state = State::Poisoned(first);
                return Err(error);
            }
            State::Idle => return Err(self.poison(RecordError::NotOpen { operation: Operation::Finish })),
            State::Open(capture) => *capture,
        };
        Tape::from_parts(capture.position, capture.launches, capture.external.into_iter().collect(), capture.bindings)
            .map_err(|e| self.poison(RecordError::Tape(e)))
    }

    /// Drops any capture and any poison: the recorder is as new.
    pub fn reset(&mut self) {
        self.state = State::Idle;
    }

    /// Poisons the recorder with `error` and returns it.
    fn poison(&mut self, error: RecordError) -> RecordError {
        assert!(!matches!(error, RecordError::Poisoned { .. }), "a Poisoned error never poisons");
        self.state = State::Poisoned(error.clone());
        error
    }
}

/// A declared name as messages show it: at most 64 characters.
fn cut_name(name: &str) -> String {
    match name.char_indices().nth(64) {
        None => String::from(name),
        Some((at, _)) => String::from(&name[..at]),
    }
}

fn poisoned(first: &RecordError) -> RecordError {
    RecordError::Poisoned { first: Box::new(first.clone()) }
}
