//! Per-family command policy: which cache bits an acquire sets and how `DISPATCH_DIRECT` counts
//! its dimensions. The values are columns of the family table ([`crate::family::FamilyFacts`],
//! one row in each family module of [`crate::regs`]); these functions read them.
//!
//! Dimension semantics: on gfx10.3 and gfx11 `DIM_X/Y/Z` count work-groups and
//! `USE_THREAD_DIMENSIONS` is 0; on gfx12 they count work-items and `USE_THREAD_DIMENSIONS` is 1.
//! gfx10.3/gfx11 and gfx12 do not share one register recipe; a lowering and a command processor
//! that both ask this module agree by construction, and a stream that uses the other recipe is
//! refused by the soft device's command processor.

use crate::Family;
use crate::packet::GcrCntl;

/// The `GCR_CNTL` bits an `ACQUIRE_MEM` must set, on `family`, before a dispatch that reads what
/// an earlier dispatch wrote.
#[must_use]
pub const fn consumer_acquire_gcr(family: Family) -> GcrCntl {
    family.facts().consumer_acquire_gcr
}

/// Whether `gcr` sets every bit [`consumer_acquire_gcr`] requires on `family`.
#[must_use]
pub const fn invalidates_consumer_caches(family: Family, gcr: GcrCntl) -> bool {
    family.facts().invalidates_consumer_caches(gcr)
}

/// The `GCR_CNTL` of a system-scope acquire (entry and terminal of an IB) on `family`.
#[must_use]
pub const fn system_acquire_gcr(family: Family) -> GcrCntl {
    family.facts().system_acquire_gcr
}

/// Whether `family` gives `DIM_*` in work-items (`USE_THREAD_DIMENSIONS` = 1).
#[must_use]
pub const fn dims_in_work_items(family: Family) -> bool {
    family.facts().dims_in_work_items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_acquires_invalidate_the_caches_a_kernel_reads_through() {
        // GLV_INV bit 8, GLK_INV bit 7 everywhere; GL1_INV bit 9 where GL1 exists (reference §4).
        assert_eq!(consumer_acquire_gcr(Family::Gfx10_3).raw(), 0x380);
        assert_eq!(consumer_acquire_gcr(Family::Gfx11).raw(), 0x380);
        assert_eq!(consumer_acquire_gcr(Family::Gfx12).raw(), 0x180);
        assert!(!invalidates_consumer_caches(Family::Gfx11, consumer_acquire_gcr(Family::Gfx12)));
        assert!(invalidates_consumer_caches(Family::Gfx12, consumer_acquire_gcr(Family::Gfx11)));
        for family in Family::ALL {
            assert!(invalidates_consumer_caches(family, system_acquire_gcr(family)), "{family}");
            assert_eq!(system_acquire_gcr(family).raw(), 0xC3B1);
        }
    }

    #[test]
    fn only_gfx12_counts_dimensions_in_work_items() {
        assert!(!dims_in_work_items(Family::Gfx10_3));
        assert!(!dims_in_work_items(Family::Gfx11));
        assert!(dims_in_work_items(Family::Gfx12));
    }
}
