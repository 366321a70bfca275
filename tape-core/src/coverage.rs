//! Whether a launch's declared effects cover what its kernel declares it touches.
//!
//! A launch's owner declares the ranges it reads and writes (the launch record's [`Effects`]),
//! and everything built on the tape trusts that declaration: the dependency derivation
//! ([`crate::deps`]) orders two launches only when their declared ranges conflict, so a store the
//! owner left out is a store no barrier waits for. The kernel's own declaration (what its code
//! may touch for these arguments, resolved by the recording side from the kernel catalogue) is
//! the other account of the same launch; [`uncovered`] compares the two and returns the first
//! range of the kernel's that the owner's declaration does not grant. [`Effects::Unknown`] grants
//! everything (the launch is serialised against every other).
//!
//! A range is covered when every byte of it lies in some declared range of the same allocation
//! whose access permits it: a kernel's [`Access::Read`] needs a readable declared range, its
//! [`Access::Write`] a writable one, its [`Access::ReadWrite`] both (from possibly different
//! declared ranges). Empty kernel ranges are covered.

use alloc::vec::Vec;

use crate::record::{Access, Effect, Effects};

/// A range of the kernel's declaration that the launch's declared effects leave out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uncovered {
    /// Index of the range in the kernel's declaration.
    pub index: usize,
    /// The kernel's range.
    pub effect: Effect,
    /// The access the declared effects do not grant over all of it ([`Access::Read`] or
    /// [`Access::Write`]).
    pub missing: Access,
}

/// The first of `kernel`'s ranges that `declared` does not cover (see the module
/// documentation), or `None` when all are covered.
#[must_use]
pub fn uncovered(declared: &Effects, kernel: &[Effect]) -> Option<Uncovered> {
    let Effects::Known(declared) = declared else { return None };
    kernel.iter().enumerate().find_map(|(index, effect)| {
        let needs = [(effect.access.reads(), Access::Read), (effect.access.writes(), Access::Write)];
        needs.into_iter().filter(|&(needed, _)| needed).find_map(|(_, missing)| {
            let grants = |d: &&Effect| {
                d.allocation == effect.allocation
                    && if missing == Access::Read { d.access.reads() } else { d.access.writes() }
            };
            let ranges: Vec<(u64, u64)> = declared
                .iter()
                .filter(grants)
                .map(|d| (d.offset_bytes, d.offset_bytes.saturating_add(d.len_bytes)))
                .collect();
            let end = effect.offset_bytes.saturating_add(effect.len_bytes);
            (!covers(ranges, effect.offset_bytes, end)).then_some(Uncovered { index, effect: *effect, missing })
        })
    })
}

/// Whether the union of the half-open `ranges` contains `[start, end)`.
fn covers(mut ranges: Vec<(u64, u64)>, start: u64, end: u64) -> bool {
    ranges.sort_unstable();
    let mut reached = start;
    for (a, b) in ranges {
        if reached >= end {
            break;
        }
        if a <= reached {
            reached = reached.max(b);
        }
    }
    reached >= end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::AllocationId;

    fn effect(allocation: u32, offset_bytes: u64, len_bytes: u64, access: Access) -> Effect {
        Effect { allocation: AllocationId(allocation), offset_bytes, len_bytes, access }
    }

    #[test]
    fn a_declared_read_does_not_cover_a_kernel_store() {
        let declared = Effects::Known(alloc::vec![effect(1, 0, 64, Access::Read)]);
        let kernel = [effect(1, 0, 64, Access::ReadWrite)];
        assert_eq!(
            uncovered(&declared, &kernel),
            Some(Uncovered { index: 0, effect: kernel[0], missing: Access::Write })
        );
        let declared = Effects::Known(alloc::vec![effect(1, 0, 64, Access::ReadWrite)]);
        assert_eq!(uncovered(&declared, &kernel), None);
    }

    #[test]
    fn coverage_is_by_allocation_and_union_of_ranges() {
        let kernel = [effect(2, 10, 30, Access::Write)];
        // Two adjacent writable ranges cover it; a gap of one byte does not.
        let joined = Effects::Known(alloc::vec![effect(2, 20, 20, Access::Write), effect(2, 0, 20, Access::ReadWrite)]);
        assert_eq!(uncovered(&joined, &kernel), None);
        let gap = Effects::Known(alloc::vec![effect(2, 21, 19, Access::Write), effect(2, 0, 20, Access::Write)]);
        assert_eq!(uncovered(&gap, &kernel).map(|u| u.missing), Some(Access::Write));
        // The same offsets in another allocation grant nothing.
        let other = Effects::Known(alloc::vec![effect(3, 0, 64, Access::Write)]);
        assert!(uncovered(&other, &kernel).is_some());
        // A range ending one byte short does not cover the last byte.
        let short = Effects::Known(alloc::vec![effect(2, 10, 29, Access::Write)]);
        assert!(uncovered(&short, &kernel).is_some());
    }

    #[test]
    fn unknown_effects_and_empty_ranges_are_covered() {
        assert_eq!(uncovered(&Effects::Unknown, &[effect(1, 0, 8, Access::Write)]), None);
        let declared = Effects::Known(alloc::vec![effect(1, 0, 8, Access::Read)]);
        assert_eq!(uncovered(&declared, &[effect(4, 100, 0, Access::Write)]), None);
        // The second range is the first uncovered one.
        let kernel = [effect(1, 0, 8, Access::Read), effect(1, 0, 8, Access::Write)];
        assert_eq!(uncovered(&declared, &kernel).map(|u| u.index), Some(1));
    }
}
