//! The command processor's hazard model (`docs/ARCHITECTURE.md`, "The soft device"): ordering and visibility between the
//! dispatches of one indirect buffer, judged by their declared effects.
//!
//! **Ordering.** Dispatches not separated by a wait (`EVENT_WRITE CS_PARTIAL_FLUSH`, or an
//! end-of-pipe `RELEASE_MEM`) form a [group](conflict_in_group) that the hardware may run in any
//! order and concurrently. The command processor executes each group in reverse order (an
//! adversarial order: every producer-before-consumer expectation is broken) and faults when two
//! dispatches of one group have conflicting declared effects: the same allocation, overlapping
//! ranges, at least one of them writing. Non-conflicting dispatches commute, so a correct IB
//! still yields the memory of in-order execution.
//!
//! **Visibility.** A wait orders execution, it does not make one dispatch's writes visible to the
//! caches another dispatch reads through. A dispatch reading a range written by a dispatch of an
//! earlier group needs an `ACQUIRE_MEM` in between whose `GCR_CNTL` has every bit of
//! [`consumer_acquire_gcr`] set ([`Visibility`]).

use pm4_encoding::Family;
use pm4_encoding::packet::GcrCntl;
use tape_core::AllocationId;

use std::borrow::Borrow;

use crate::exec::ExecutedDispatch;

pub use pm4_encoding::policy::{consumer_acquire_gcr, invalidates_consumer_caches};

/// A declared range of one dispatch, located in its allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    allocation: AllocationId,
    start: u64,
    end: u64,
    reads: bool,
    writes: bool,
}

/// The non-empty declared ranges of `dispatch`.
fn ranges(dispatch: &ExecutedDispatch) -> impl Iterator<Item = Range> + '_ {
    dispatch.effects.iter().filter_map(|e| {
        let (allocation, start) = e.allocation?;
        let end = start.checked_add(e.effect.bytes)?;
        Some(Range { allocation, start, end, reads: e.effect.access.reads(), writes: e.effect.access.writes() })
    })
}

fn overlap(a: &Range, b: &Range) -> bool {
    a.allocation == b.allocation && a.start < b.end && b.start < a.end
}

/// Two dispatches of one group whose declared effects conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// IB dword offset of the earlier `DISPATCH_DIRECT`.
    pub first_offset: usize,
    /// Its kernel.
    pub first_kernel: String,
    /// IB dword offset of the later `DISPATCH_DIRECT`.
    pub second_offset: usize,
    /// Its kernel.
    pub second_kernel: String,
    /// The allocation both touch.
    pub allocation: AllocationId,
}

/// The first conflict between two dispatches of one group (each with its IB dword offset, in IB
/// order): same allocation, overlapping ranges, at least one write. "First": the earliest
/// dispatch that conflicts with a later one, paired with the earliest such later one.
///
/// Work: a sort and a sweep over all declared ranges; only when a conflict
/// exists are the pairs searched for the first one.
#[must_use]
pub fn conflict_in_group<D: Borrow<ExecutedDispatch>>(group: &[(usize, D)]) -> Option<Conflict> {
    // One dispatch conflicts with nothing.
    if group.len() < 2 || !has_conflict(group) {
        return None;
    }
    first_conflict(group)
}

/// The largest range ends seen so far from two different dispatches.
#[derive(Clone, Copy, Default)]
struct TopTwo {
    first: Option<(u64, usize)>,
    second: Option<(u64, usize)>,
}

impl TopTwo {
    fn add(&mut self, end: u64, dispatch: usize) {
        match (self.first, self.second) {
            (Some((e, d)), _) if d == dispatch => self.first = Some((e.max(end), d)),
            (Some((e, _)), Some((e2, d2))) if d2 == dispatch => {
                let merged = (e2.max(end), d2);
                if merged.0 > e {
                    self.second = self.first;
                    self.first = Some(merged);
                } else {
                    self.second = Some(merged);
                }
            }
            (Some((e, _)), _) if end > e => {
                self.second = self.first;
                self.first = Some((end, dispatch));
            }
            (Some(_), Some((e2, _))) if end <= e2 => {}
            (Some(_), _) => self.second = Some((end, dispatch)),
            (None, _) => self.first = Some((end, dispatch)),
        }
    }

    /// Whether a range of another dispatch than `dispatch` ends after `start`.
    fn reaches_past(&self, start: u64, dispatch: usize) -> bool {
        [self.first, self.second].into_iter().flatten().any(|(end, d)| d != dispatch && end > start)
    }
}

/// Whether two dispatches of `group` conflict: every declared range sorted by allocation and
/// start, then one sweep per allocation that keeps the furthest-reaching earlier ranges (of
/// two different dispatches, all accesses and writes apart).
fn has_conflict<D: Borrow<ExecutedDispatch>>(group: &[(usize, D)]) -> bool {
    let mut all: Vec<(Range, usize)> =
        group.iter().enumerate().flat_map(|(i, (_, d))| ranges(d.borrow()).map(move |r| (r, i))).collect();
    all.sort_unstable_by_key(|(r, _)| (r.allocation, r.start));
    let mut current = None;
    let (mut any, mut writes) = (TopTwo::default(), TopTwo::default());
    for (r, dispatch) in all {
        if current != Some(r.allocation) {
            current = Some(r.allocation);
            (any, writes) = (TopTwo::default(), TopTwo::default());
        }
        let earlier = if r.writes { &any } else { &writes };
        if earlier.reaches_past(r.start, dispatch) {
            return true;
        }
        any.add(r.end, dispatch);
        if r.writes {
            writes.add(r.end, dispatch);
        }
    }
    false
}

/// [`conflict_in_group`]'s pair search.
fn first_conflict<D: Borrow<ExecutedDispatch>>(group: &[(usize, D)]) -> Option<Conflict> {
    for (i, (first_offset, first)) in group.iter().enumerate() {
        let (first_offset, first) = (*first_offset, first.borrow());
        for (second_offset, second) in &group[i + 1..] {
            let (second_offset, second) = (*second_offset, second.borrow());
            for a in ranges(first) {
                if let Some(b) = ranges(second).find(|b| overlap(&a, b) && (a.writes || b.writes)) {
                    return Some(Conflict {
                        first_offset,
                        first_kernel: first.kernel.clone(),
                        second_offset,
                        second_kernel: second.kernel.clone(),
                        allocation: b.allocation,
                    });
                }
            }
        }
    }
    None
}

/// A read of a range an earlier group wrote, with no consumer-cache invalidation in between.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleRead {
    /// IB dword offset of the writer's `DISPATCH_DIRECT`.
    pub writer_offset: usize,
    /// The writer's kernel.
    pub writer_kernel: String,
    /// IB dword offset of the reader's `DISPATCH_DIRECT`.
    pub reader_offset: usize,
    /// The reader's kernel.
    pub reader_kernel: String,
    /// The allocation.
    pub allocation: AllocationId,
}

/// A write of a finished group that no acquire has made visible to consumer caches yet.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DirtyWrite {
    range: Range,
    offset: usize,
    /// The writer's index among the IB's finished dispatches (it names the kernel).
    dispatch: usize,
}

/// Which finished writes a consumer's caches may still hold stale copies of.
#[derive(Clone, Debug)]
pub struct Visibility {
    family: Family,
    dirty: Vec<DirtyWrite>,
}

impl Visibility {
    /// Nothing written yet (the IB's entry acquire is the caller's business: memory written before
    /// the IB is treated as visible).
    #[must_use]
    pub fn new(family: Family) -> Self {
        Self { family, dirty: Vec::new() }
    }

    /// An `ACQUIRE_MEM` with `gcr`: when it invalidates the consumer caches, every finished write
    /// becomes visible. Returns whether it did.
    pub fn acquire(&mut self, gcr: GcrCntl) -> bool {
        let invalidates = invalidates_consumer_caches(self.family, gcr);
        if invalidates {
            self.dirty.clear();
        }
        invalidates
    }

    /// Checks the reads of `dispatch` (at IB dword `offset`) against the finished writes;
    /// `finished` are the IB's finished dispatches, as [`Visibility::record_writes`] counted them.
    ///
    /// # Errors
    /// [`StaleRead`] naming the first writer whose range the dispatch reads.
    pub fn check_reads(
        &self,
        offset: usize,
        dispatch: &ExecutedDispatch,
        finished: &[ExecutedDispatch],
    ) -> Result<(), StaleRead> {
        if self.dirty.is_empty() {
            return Ok(());
        }
        for read in ranges(dispatch).filter(|r| r.reads) {
            if let Some(w) = self.dirty.iter().find(|w| overlap(&w.range, &read)) {
                return Err(StaleRead {
                    writer_offset: w.offset,
                    writer_kernel: finished.get(w.dispatch).map(|d| d.kernel.clone()).unwrap_or_default(),
                    reader_offset: offset,
                    reader_kernel: dispatch.kernel.clone(),
                    allocation: read.allocation,
                });
            }
        }
        Ok(())
    }

    /// Records the writes of a dispatch (at IB dword `offset`) whose group has finished, the
    /// `index`-th of the IB's finished dispatches.
    pub fn record_writes(&mut self, offset: usize, dispatch: &ExecutedDispatch, index: usize) {
        for range in ranges(dispatch).filter(|r| r.writes) {
            self.dirty.push(DirtyWrite { range, offset, dispatch: index });
        }
    }
}

#[cfg(test)]
mod tests {
    use kernel_refs::effects::ResolvedEffect;
    use tape_core::Access;

    use super::*;
    use crate::exec::ExecutedEffect;

    fn dispatch(kernel: &str, effects: &[(u32, u64, u64, Access)]) -> ExecutedDispatch {
        let effects = effects
            .iter()
            .enumerate()
            .map(|(arg_index, &(id, offset, bytes, access))| ExecutedEffect {
                effect: ResolvedEffect { arg_index, address: 0x1000 * u64::from(id) + offset, bytes, access },
                allocation: Some((AllocationId(id), offset)),
            })
            .collect();
        ExecutedDispatch { kernel: kernel.into(), kernel_object: 0, effects }
    }

    #[test]
    fn group_conflicts_need_overlap_in_one_allocation_and_a_write() {
        let w = dispatch("w", &[(1, 0, 16, Access::Write)]);
        let r = dispatch("r", &[(1, 12, 8, Access::Read)]);
        let r_other = dispatch("r2", &[(2, 0, 16, Access::Read)]);
        let r_after = dispatch("r3", &[(1, 16, 8, Access::Read)]);
        let c = conflict_in_group(&[(4, &w), (20, &r)]).unwrap();
        assert_eq!((c.first_offset, c.second_offset, c.allocation), (4, 20, AllocationId(1)));
        assert_eq!(conflict_in_group(&[(4, &w), (20, &r_other), (30, &r_after)]), None);
        assert_eq!(conflict_in_group(&[(4, &r), (20, &r_after)]), None);
    }

    /// The sweep finds a conflict exactly when the pairwise search does, on many random groups
    /// (small address ranges, few allocations, so that overlaps, same-dispatch overlaps,
    /// touching ends and empty ranges are all common).
    #[test]
    fn the_sweep_agrees_with_the_pairwise_search() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        let accesses = [Access::Read, Access::Write, Access::ReadWrite];
        let mut conflicts = 0;
        for _ in 0..20_000 {
            let dispatches: Vec<ExecutedDispatch> = (0..1 + next(6))
                .map(|_| {
                    let effects: Vec<(u32, u64, u64, Access)> = (0..next(4))
                        .map(|_| {
                            let id = u32::try_from(1 + next(3)).unwrap();
                            (id, next(24), next(12), accesses[usize::try_from(next(3)).unwrap()])
                        })
                        .collect();
                    dispatch("k", &effects)
                })
                .collect();
            let group: Vec<(usize, &ExecutedDispatch)> = dispatches.iter().enumerate().collect();
            let exact = first_conflict(&group);
            assert_eq!(conflict_in_group(&group), exact, "{dispatches:?}");
            if exact.is_some() {
                assert!(has_conflict(&group), "{dispatches:?}");
                conflicts += 1;
            }
        }
        assert!(conflicts > 1000, "the random groups conflict often enough to test both ways: {conflicts}");
    }

    #[test]
    fn reads_of_finished_writes_need_the_policy_bits() {
        for family in Family::ALL {
            let mut v = Visibility::new(family);
            let w = dispatch("w", &[(1, 0, 16, Access::Write)]);
            let r = dispatch("r", &[(1, 0, 4, Access::ReadWrite)]);
            let finished = [w.clone()];
            v.record_writes(4, &w, 0);
            let stale = v.check_reads(40, &r, &finished).unwrap_err();
            assert_eq!(
                (stale.writer_offset, stale.writer_kernel.as_str(), stale.reader_kernel.as_str()),
                (4, "w", "r")
            );
            // Scalar-only invalidation is not enough.
            assert!(!v.acquire(GcrCntl::from_raw(0).with_glk_inv(1)));
            assert!(v.check_reads(40, &r, &finished).is_err());
            assert!(v.acquire(consumer_acquire_gcr(family).with_gl2_wb(1)));
            assert_eq!(v.check_reads(40, &r, &finished), Ok(()));
        }
    }
}
