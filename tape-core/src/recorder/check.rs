//! The checks a launch record must pass ([`check_launch`], [`check_launch_with_layout`]) and an
//! external launch's name must pass ([`check_external_name`]).

use alloc::string::String;

use kernarg_abi::KernargLayout;
use kernarg_abi::layout::{KERNARG_SEGMENT_MAX_BYTES, KernargArg};
use kernarg_abi::metadata::ValueKind;

use super::{
    EFFECTS_PER_LAUNCH_MAX, EXTERNAL_NAME_BYTES_MAX, GRID_WORK_ITEMS_MAX, LDS_BYTES_MAX, POINTER_BYTES,
    SYMBOL_BYTES_MAX, WORKGROUP_WORK_ITEMS_MAX,
};
use crate::record::{Effects, LaunchRecord};
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
