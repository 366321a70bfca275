//! Dynamic bindings: the named values of a tape that follow the decode position.
//!
//! A binding is owned by one launch and says how one value of it is computed from the position:
//! - [`BindingKind::KernargU32`]: the little-endian `u32` at `offset` of the launch's kernarg blob
//!   is `position + addend` (checked: it must fit in `u32`);
//! - [`BindingKind::GridAxis`]: the launch's grid on `axis` is `ceil((position + addend) /
//!   divisor)` work-groups (the grid in work-items is that times the work-group size on the axis),
//!   never more than `max_workgroups`, the size the plan was prepared for;
//! - [`BindingKind::KernargGridWorkgroups`]: the little-endian `u32` at `offset` of the kernarg
//!   blob is that same work-group count (`ceil((position + addend) / divisor)`, at most
//!   `max_workgroups`): a kernarg word that follows a grid axis, such as a code-object v5
//!   `hidden_block_count_{x,y,z}` argument. The launch must have a [`BindingKind::GridAxis`]
//!   binding on the same axis with the same `addend`, `divisor` and `max_workgroups`, so the
//!   word and the grid always agree;
//! - [`BindingKind::KernargU32Clamped`]: the little-endian `u32` at `offset` is
//!   `max(0, position + addend)`, such as the first key of a sliding attention window. Such a
//!   word is constant through every position below `-addend`, so calibration cannot see it: its
//!   owner declares it (see [`calibrate`](crate::calibrate)'s declared bindings).
//!
//! Where a bound value is written decides its unit ([`DimUnit`]): a kernarg word holds the value as
//! bound, a grid binding's `DISPATCH_DIRECT` `DIM` dword counts work-items on a family whose
//! dimensions count work-items and work-groups otherwise, and an AQL packet's grid size is always in
//! work-items. [`BindingKind::rule`] turns a binding and that unit into the [`Rule`] of the written
//! word, and [`Rule::value_within`] is the one evaluation of every bound value: the tape's checks,
//! lowering's patch sites and the prepared plans all go through it. [`rule`] also owns the rule's
//! text form, which IB bundles carry for their patch sites.

use core::num::NonZeroU32;

use alloc::string::String;

use serde::{Deserialize, Serialize};

pub mod rule;

pub use rule::Rule;

/// How a bound value follows the position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum BindingKind {
    /// `u32` kernarg word at byte `offset` = `position + addend`.
    KernargU32 {
        /// Byte offset in the kernarg blob; the 4 bytes lie inside it.
        offset: u32,
        /// Added to the position.
        addend: i64,
    },
    /// Grid on `axis` = `ceil((position + addend) / divisor)` work-groups, at most `max_workgroups`.
    GridAxis {
        /// 0, 1 or 2.
        axis: u8,
        /// Added to the position.
        addend: i64,
        /// Positive.
        divisor: u32,
        /// Hard maximum, in work-groups.
        max_workgroups: u32,
    },
    /// `u32` kernarg word at byte `offset` = the grid on `axis` in work-groups,
    /// `ceil((position + addend) / divisor)`, at most `max_workgroups` (the value of the
    /// launch's [`GridAxis`](Self::GridAxis) binding with the same parameters). Last variant, so
    /// the serialized indices of the others do not change.
    KernargGridWorkgroups {
        /// Byte offset in the kernarg blob; the 4 bytes lie inside it.
        offset: u32,
        /// 0, 1 or 2: the grid axis the word follows.
        axis: u8,
        /// Added to the position.
        addend: i64,
        /// Positive.
        divisor: u32,
        /// Hard maximum, in work-groups.
        max_workgroups: u32,
    },
    /// `u32` kernarg word at byte `offset` = `max(0, position + addend)`. Last variant, so the
    /// serialized indices of the others do not change.
    KernargU32Clamped {
        /// Byte offset in the kernarg blob; the 4 bytes lie inside it.
        offset: u32,
        /// Added to the position before the clamp at 0.
        addend: i64,
    },
}

/// A named binding owned by one launch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// A name unique within the tape (`"layer3.attn.kv_len"`).
    pub name: String,
    /// Index of the owning launch in the tape.
    pub launch: u32,
    /// What is bound.
    pub kind: BindingKind,
}

/// Why a binding cannot produce a value for a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// `position + addend` is negative or does not fit in `u32`.
    #[error("position {position} + addend {addend} is outside u32")]
    OutOfRange {
        /// The position.
        position: u32,
        /// The addend.
        addend: i64,
    },
    /// The grid would exceed the prepared maximum.
    #[error("grid of {workgroups} work-groups at position {position} exceeds the maximum {max_workgroups}")]
    GridAboveMax {
        /// The position.
        position: u32,
        /// The computed grid.
        workgroups: u32,
        /// The limit.
        max_workgroups: u32,
    },
    /// A grid binding with divisor 0 or an axis above 2.
    #[error("malformed grid binding (axis {axis}, divisor {divisor})")]
    Malformed {
        /// The axis.
        axis: u8,
        /// The divisor.
        divisor: u32,
    },
    /// The work-group count in work-items does not fit in `u32`.
    #[error(
        "grid of {workgroups} work-groups of {workgroup_work_items} work-items at position {position} overflows u32"
    )]
    WorkItemsOverflow {
        /// The position.
        position: u32,
        /// The computed grid, in work-groups.
        workgroups: u32,
        /// The work-group size it was multiplied by.
        workgroup_work_items: u32,
    },
}

/// The unit a grid value is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DimUnit {
    /// Work-groups: the value as the binding gives it (a kernarg word, or the `DIM` of a family
    /// whose dimensions count work-groups).
    Workgroups,
    /// Work-items: work-groups × `workgroup_work_items` (the `DIM` of a family that sets
    /// `USE_THREAD_DIMENSIONS`, or an AQL packet's grid size).
    WorkItems {
        /// The launch's work-group size on the axis. The text form refuses 0; a tape's work-group
        /// sizes are at least 1.
        workgroup_work_items: u32,
    },
}

impl DimUnit {
    /// The unit of a launch's `DISPATCH_DIRECT` `DIM` dword on an axis whose work-group size is
    /// `workgroup_work_items`. Whether the family counts `DIM` in work-items is the caller's
    /// family policy (`pm4_encoding::policy::dims_in_work_items`), passed as
    /// `dims_in_work_items`: this crate knows no families.
    #[must_use]
    pub fn of_dispatch(dims_in_work_items: bool, workgroup_work_items: u16) -> Self {
        if dims_in_work_items {
            DimUnit::WorkItems { workgroup_work_items: u32::from(workgroup_work_items) }
        } else {
            DimUnit::Workgroups
        }
    }
}

impl BindingKind {
    /// The rule of the word a site of this binding holds: a kernarg word as bound
    /// ([`KernargGridWorkgroups`](Self::KernargGridWorkgroups) in work-groups, as the kernarg ABI
    /// counts its hidden block counts), a [`GridAxis`](Self::GridAxis) binding's grid in `grid`,
    /// the unit of the place the grid is written (see [`DimUnit`]).
    ///
    /// # Errors
    /// [`BindingError::Malformed`] for a grid binding with divisor 0 or an axis above 2.
    pub fn rule(&self, grid: DimUnit) -> Result<Rule, BindingError> {
        let divisor = |axis: u8, divisor: u32| {
            NonZeroU32::new(divisor).filter(|_| axis <= 2).ok_or(BindingError::Malformed { axis, divisor })
        };
        Ok(match *self {
            BindingKind::KernargU32 { addend, .. } => Rule::Offset { addend },
            BindingKind::KernargU32Clamped { addend, .. } => Rule::Clamped { addend },
            BindingKind::GridAxis { axis, addend, divisor: d, .. } => {
                Rule::Grid { addend, divisor: divisor(axis, d)?, unit: grid }
            }
            BindingKind::KernargGridWorkgroups { axis, addend, divisor: d, .. } => {
                Rule::Grid { addend, divisor: divisor(axis, d)?, unit: DimUnit::Workgroups }
            }
        })
    }

    /// The bound value at `position` written in `grid` (see [`BindingKind::rule`]): the rule's
    /// value, its work-group count at most the binding's `max_workgroups`.
    ///
    /// # Errors
    /// [`BindingError`] for a malformed binding, a value out of range, a grid above the maximum,
    /// or a grid in work-items that overflows `u32`.
    pub fn value_in(&self, position: u32, grid: DimUnit) -> Result<u32, BindingError> {
        let max_workgroups = match *self {
            BindingKind::KernargU32 { .. } | BindingKind::KernargU32Clamped { .. } => u32::MAX,
            BindingKind::GridAxis { max_workgroups, .. }
            | BindingKind::KernargGridWorkgroups { max_workgroups, .. } => max_workgroups,
        };
        self.rule(grid)?.value_within(position, max_workgroups)
    }

    /// The bound value at `position`: the kernarg word, or the grid in work-groups (for
    /// [`KernargGridWorkgroups`](Self::KernargGridWorkgroups), the kernarg word, which is the
    /// grid in work-groups).
    ///
    /// # Errors
    /// [`BindingError`] when the value is out of range or above the grid maximum.
    pub fn value_at(&self, position: u32) -> Result<u32, BindingError> {
        self.value_in(position, DimUnit::Workgroups)
    }

    /// The kernarg word offset of a kernarg binding, `None` for a grid binding.
    #[must_use]
    pub fn kernarg_offset(&self) -> Option<u32> {
        match *self {
            BindingKind::KernargU32 { offset, .. }
            | BindingKind::KernargGridWorkgroups { offset, .. }
            | BindingKind::KernargU32Clamped { offset, .. } => Some(offset),
            BindingKind::GridAxis { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernarg_word() {
        let k = BindingKind::KernargU32 { offset: 12, addend: 1 };
        assert_eq!(k.value_at(41), Ok(42));
        assert_eq!(
            BindingKind::KernargU32 { offset: 0, addend: -5 }.value_at(4),
            Err(BindingError::OutOfRange { position: 4, addend: -5 })
        );
    }

    /// A sliding window's first key: constant 0 through position 511 (where an unclamped rule
    /// would already fail), then one further per position; the kernarg offset is the word's.
    #[test]
    fn clamped_kernarg_word() {
        let k = BindingKind::KernargU32Clamped { offset: 20, addend: -511 };
        for (position, value) in [(0, 0), (8, 0), (510, 0), (511, 0), (512, 1), (513, 2), (700, 189), (2047, 1536)] {
            assert_eq!(k.value_at(position), Ok(value), "position {position}");
        }
        assert_eq!(k.kernarg_offset(), Some(20));
        assert_eq!(k.rule(DimUnit::Workgroups), Ok(Rule::Clamped { addend: -511 }));
        assert_eq!(
            BindingKind::KernargU32Clamped { offset: 0, addend: i64::from(u32::MAX) }.value_at(1),
            Err(BindingError::OutOfRange { position: 1, addend: i64::from(u32::MAX) })
        );
    }

    #[test]
    fn grid_axis() {
        let g = BindingKind::GridAxis { axis: 0, addend: 1, divisor: 64, max_workgroups: 3 };
        assert_eq!(g.value_at(0), Ok(1));
        assert_eq!(g.value_at(63), Ok(1));
        assert_eq!(g.value_at(64), Ok(2));
        assert_eq!(g.value_at(191), Ok(3));
        assert_eq!(
            g.value_at(192),
            Err(BindingError::GridAboveMax { position: 192, workgroups: 4, max_workgroups: 3 })
        );
    }

    #[test]
    fn kernarg_grid_workgroups_follows_the_grid() {
        let w = BindingKind::KernargGridWorkgroups { offset: 24, axis: 1, addend: 1, divisor: 64, max_workgroups: 3 };
        let g = BindingKind::GridAxis { axis: 1, addend: 1, divisor: 64, max_workgroups: 3 };
        for position in [0, 1, 62, 63, 64, 127, 128, 191, 192, 1000] {
            assert_eq!(w.value_at(position), g.value_at(position), "position {position}");
        }
        assert_eq!(w.value_at(64), Ok(2));
        assert_eq!(
            w.value_at(192),
            Err(BindingError::GridAboveMax { position: 192, workgroups: 4, max_workgroups: 3 })
        );
        assert_eq!(
            BindingKind::KernargGridWorkgroups { offset: 0, axis: 3, addend: 0, divisor: 1, max_workgroups: 9 }
                .value_at(1),
            Err(BindingError::Malformed { axis: 3, divisor: 1 })
        );
        assert_eq!(
            BindingKind::KernargGridWorkgroups { offset: 0, axis: 0, addend: 0, divisor: 0, max_workgroups: 9 }
                .value_at(1),
            Err(BindingError::Malformed { axis: 0, divisor: 0 })
        );
        assert_eq!(
            BindingKind::KernargGridWorkgroups { offset: 0, axis: 0, addend: -5, divisor: 1, max_workgroups: 9 }
                .value_at(4),
            Err(BindingError::OutOfRange { position: 4, addend: -5 })
        );
        assert_eq!(w.kernarg_offset(), Some(24));
        assert_eq!(g.kernarg_offset(), None);
    }
}
