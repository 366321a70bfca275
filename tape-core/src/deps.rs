//! Conservative dependency derivation from declared resource effects.
//!
//! # The conflict rule
//! An earlier launch `j` and a later launch `i` *conflict* when
//! - either of them has [`Effects::Unknown`] (an undeclared launch is ordered against everything,
//!   in both directions), or
//! - some effect of `j` and some effect of `i` name the same allocation, their byte ranges
//!   `[offset, offset + len)` overlap (a zero-length range overlaps nothing), and at least one of
//!   the two writes. The hazard is named from `j`'s and `i`'s access: `j` writes and `i` reads is
//!   read-after-write, `j` reads and `i` writes is write-after-read, both write is
//!   write-after-write ([`Access::ReadWrite`](crate::Access::ReadWrite) on both sides is all three).
//!
//! Two reads never conflict. Range ends are computed in `u128`, so ranges reaching the top of the
//! 64-bit space are compared exactly.
//!
//! # Two views
//! - [`dependencies`]: the full DAG, every conflicting earlier launch of every launch, each edge
//!   with its hazard kinds and one witness range per kind; [`Dependencies::direct`] is its
//!   transitive reduction.
//! - [`boundaries`]: where a single in-order queue needs a wait (CS_PARTIAL_FLUSH + cache
//!   acquire), the fewest such waits that order every conflicting pair.
//!
//! # Bounds
//! Both functions refuse more than [`LAUNCHES_MAX`] launches or more than [`EFFECTS_MAX`] declared
//! effects in total. With `n` launches and `E` declared effects, the work is
//! `O(n² + E²)` effect comparisons (every pair of launches is looked at once, and every pair of
//! effects of two launches at most once). [`dependencies`] also refuses more than [`EDGES_MAX`]
//! conflicting pairs, which caps its memory (about 150 bytes per edge); [`boundaries`] stores
//! only its result.

use alloc::vec;
use alloc::vec::Vec;

use crate::record::{AllocationId, Effect, Effects, LaunchRecord};

/// Most launches one derivation accepts. A decode step is a few hundred launches; this leaves an
/// order of magnitude of headroom while keeping the `n²` pair scan and the edge storage bounded.
pub const LAUNCHES_MAX: usize = 4096;

/// Most declared effects (summed over all launches) one derivation accepts; bounds the `E²`
/// effect comparisons.
pub const EFFECTS_MAX: usize = 16 * 1024;

/// Most edges [`dependencies`] stores: enough for 1024 launches that all conflict with each
/// other (523 776 pairs), about 80 MB of edges. [`boundaries`] has no such limit.
pub const EDGES_MAX: usize = 1 << 19;

/// Why no dependencies were derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DepsError {
    /// More launches than [`LAUNCHES_MAX`].
    #[error("{launches} launches exceed the limit of {limit}")]
    TooManyLaunches {
        /// Launches given.
        launches: usize,
        /// The limit.
        limit: usize,
    },
    /// More declared effects than [`EFFECTS_MAX`].
    #[error("{effects} declared effects exceed the limit of {limit}")]
    TooManyEffects {
        /// Effects given, summed over all launches.
        effects: usize,
        /// The limit.
        limit: usize,
    },
    /// More conflicting pairs than [`EDGES_MAX`] (only from [`dependencies`]).
    #[error("more than {limit} conflicting pairs (at launch {launch})")]
    TooManyEdges {
        /// The launch whose edges crossed the limit.
        launch: usize,
        /// The limit.
        limit: usize,
    },
}

/// The kind of one ordering hazard between an earlier and a later launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hazard {
    /// The earlier launch writes what the later one reads (RAW).
    ReadAfterWrite,
    /// The earlier launch reads what the later one writes (WAR).
    WriteAfterRead,
    /// Both write (WAW).
    WriteAfterWrite,
    /// At least one of the two has undeclared effects.
    Unknown,
}

/// The witness of a hazard: the overlapping bytes of one effect of each launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RangeOverlap {
    /// The allocation both effects touch.
    pub allocation: AllocationId,
    /// First overlapping byte, relative to the allocation's start.
    pub offset_bytes: u64,
    /// Overlapping bytes (at least 1).
    pub len_bytes: u64,
    /// Index of the effect in the earlier launch's [`Effects::Known`] list.
    pub earlier_effect: usize,
    /// Index of the effect in the later launch's [`Effects::Known`] list.
    pub later_effect: usize,
}

/// Why two launches conflict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conflict {
    /// At least one of the two has [`Effects::Unknown`]; which ones is recorded.
    Unknown {
        /// The earlier launch's effects are unknown.
        earlier: bool,
        /// The later launch's effects are unknown.
        later: bool,
    },
    /// Both are declared and overlap with a write. Each present field is the first witness of
    /// that hazard kind (earlier effects in order, then later effects in order); at least one is
    /// present.
    Overlap {
        /// The earlier launch writes what the later one reads.
        read_after_write: Option<RangeOverlap>,
        /// The earlier launch reads what the later one writes.
        write_after_read: Option<RangeOverlap>,
        /// Both write.
        write_after_write: Option<RangeOverlap>,
    },
}

impl Conflict {
    /// The witness of `hazard`, if this conflict has that kind and it has a witness range
    /// ([`Hazard::Unknown`] never has one).
    #[must_use]
    pub fn witness(&self, hazard: Hazard) -> Option<&RangeOverlap> {
        match (self, hazard) {
            (Conflict::Overlap { read_after_write, .. }, Hazard::ReadAfterWrite) => read_after_write.as_ref(),
            (Conflict::Overlap { write_after_read, .. }, Hazard::WriteAfterRead) => write_after_read.as_ref(),
            (Conflict::Overlap { write_after_write, .. }, Hazard::WriteAfterWrite) => write_after_write.as_ref(),
            _ => None,
        }
    }

    /// Whether this conflict includes `hazard`.
    #[must_use]
    pub fn has(&self, hazard: Hazard) -> bool {
        match self {
            Conflict::Unknown { .. } => hazard == Hazard::Unknown,
            Conflict::Overlap { .. } => self.witness(hazard).is_some(),
        }
    }

    /// The hazard kinds of this conflict, in the order RAW, WAR, WAW, Unknown.
    pub fn hazards(&self) -> impl Iterator<Item = Hazard> + '_ {
        const ALL: [Hazard; 4] =
            [Hazard::ReadAfterWrite, Hazard::WriteAfterRead, Hazard::WriteAfterWrite, Hazard::Unknown];
        ALL.into_iter().filter(|&h| self.has(h))
    }
}

/// `[start, end)` of an effect, with the end in `u128` so it never wraps.
fn span(effect: &Effect) -> (u128, u128) {
    let start = u128::from(effect.offset_bytes);
    (start, start + u128::from(effect.len_bytes))
}

/// The overlapping bytes of two effects on the same allocation, if any.
fn overlap(earlier: &Effect, later: &Effect) -> Option<(u64, u64)> {
    if earlier.allocation != later.allocation {
        return None;
    }
    let (a_start, a_end) = span(earlier);
    let (b_start, b_end) = span(later);
    let start = a_start.max(b_start);
    let end = a_end.min(b_end);
    if start >= end {
        return None;
    }
    // Both fit in u64: `start` is one of the offsets, the length is at most either effect's length.
    let offset = u64::try_from(start).ok()?;
    let len = u64::try_from(end - start).ok()?;
    Some((offset, len))
}

/// Whether two effects form any hazard (overlap and at least one writes). Cheaper than [`conflict`].
fn effects_conflict(earlier: &Effect, later: &Effect) -> bool {
    (earlier.access.writes() || later.access.writes()) && overlap(earlier, later).is_some()
}

/// Whether `earlier` and `later` conflict (see the module documentation), without building the
/// witness.
fn conflicts(earlier: &LaunchRecord, later: &LaunchRecord) -> bool {
    match (&earlier.effects, &later.effects) {
        (Effects::Known(a), Effects::Known(b)) => a.iter().any(|ea| b.iter().any(|eb| effects_conflict(ea, eb))),
        _ => true,
    }
}

/// Why launch `earlier` must finish before launch `later` starts, or `None` when they may run in
/// any order. Argument order matters only for naming the hazard (RAW vs. WAR). Work:
/// `O(effects(earlier) × effects(later))`.
#[must_use]
pub fn conflict(earlier: &LaunchRecord, later: &LaunchRecord) -> Option<Conflict> {
    let (a, b) = match (&earlier.effects, &later.effects) {
        (Effects::Known(a), Effects::Known(b)) => (a, b),
        (ea, eb) => {
            return Some(Conflict::Unknown {
                earlier: matches!(ea, Effects::Unknown),
                later: matches!(eb, Effects::Unknown),
            });
        }
    };
    let (mut raw, mut war, mut waw) = (None, None, None);
    for (earlier_effect, ea) in a.iter().enumerate() {
        for (later_effect, eb) in b.iter().enumerate() {
            let Some((offset_bytes, len_bytes)) = overlap(ea, eb) else { continue };
            let witness =
                RangeOverlap { allocation: ea.allocation, offset_bytes, len_bytes, earlier_effect, later_effect };
            let (w, r) = (ea.access, eb.access);
            if w.writes() && r.reads() && raw.is_none() {
                raw = Some(witness);
            }
            if w.reads() && r.writes() && war.is_none() {
                war = Some(witness);
            }
            if w.writes() && r.writes() && waw.is_none() {
                waw = Some(witness);
            }
        }
    }
    if raw.is_none() && war.is_none() && waw.is_none() {
        return None;
    }
    Some(Conflict::Overlap { read_after_write: raw, write_after_read: war, write_after_write: waw })
}

/// Refuses inputs above [`LAUNCHES_MAX`] or [`EFFECTS_MAX`].
fn check_limits(launches: &[LaunchRecord]) -> Result<(), DepsError> {
    if launches.len() > LAUNCHES_MAX {
        return Err(DepsError::TooManyLaunches { launches: launches.len(), limit: LAUNCHES_MAX });
    }
    let effects = launches
        .iter()
        .map(|l| match &l.effects {
            Effects::Known(list) => list.len(),
            Effects::Unknown => 0,
        })
        .fold(0usize, usize::saturating_add);
    if effects > EFFECTS_MAX {
        return Err(DepsError::TooManyEffects { effects, limit: EFFECTS_MAX });
    }
    Ok(())
}

/// One edge of the DAG: the later launch must wait for `earlier`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Edge {
    /// Index of the earlier launch.
    pub earlier: usize,
    /// Why.
    pub conflict: Conflict,
}

/// The full dependency DAG of a launch sequence: for every launch, every earlier launch it
/// conflicts with (not transitively reduced; see [`Dependencies::direct`] for that).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependencies {
    /// `waits[i]`: the edges into launch `i`, sorted by `earlier`, each `earlier < i`.
    waits: Vec<Vec<Edge>>,
}

impl Dependencies {
    /// Number of launches the DAG covers.
    #[must_use]
    pub fn launches(&self) -> usize {
        self.waits.len()
    }

    /// Total number of edges (conflicting pairs).
    #[must_use]
    pub fn edge_count(&self) -> usize {
        self.waits.iter().map(Vec::len).sum()
    }

    /// Every earlier launch `later` conflicts with, sorted by index; `None` when `later` is out of
    /// range.
    #[must_use]
    pub fn waits_of(&self, later: usize) -> Option<&[Edge]> {
        self.waits.get(later).map(Vec::as_slice)
    }

    /// The edge from `earlier` into `later`, if they conflict.
    #[must_use]
    pub fn edge(&self, earlier: usize, later: usize) -> Option<&Edge> {
        let edges = self.waits.get(later)?;
        let at = edges.binary_search_by_key(&earlier, |e| e.earlier).ok()?;
        edges.get(at)
    }

    /// Every conflicting pair `(earlier, later)`, ordered by `later`, then `earlier`.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.waits.iter().enumerate().flat_map(|(later, edges)| edges.iter().map(move |e| (e.earlier, later)))
    }

    /// The transitive reduction: for every launch, the sorted earlier launches it conflicts with
    /// that are not already ordered before it through another conflicting launch (an edge
    /// `j → i` is dropped when some `k` with `j < k < i` has a path `j ⇝ k` and an edge
    /// `k → i`). Waiting for these is enough, because a launch that starts after `k` finished
    /// also starts after everything `k` waited for.
    ///
    /// Work `O(n · (d + r · n / 64))` for `n` launches, `d` edges per launch and `r` reduced edges
    /// per launch; memory `n² / 8` bytes of reachability bits.
    #[must_use]
    pub fn direct(&self) -> Vec<Vec<usize>> {
        let words = self.waits.len().div_ceil(64);
        // ancestors[i]: bit j set when j ⇝ i (transitively), j < i.
        let mut ancestors: Vec<Vec<u64>> = Vec::with_capacity(self.waits.len());
        let mut direct = Vec::with_capacity(self.waits.len());
        for edges in &self.waits {
            let mut covered = vec![0u64; words];
            let mut kept = Vec::new();
            // Latest first: a predecessor is redundant exactly when a later predecessor reaches it,
            // and all later predecessors were folded into `covered` before it is looked at.
            for edge in edges.iter().rev() {
                let j = edge.earlier;
                if bit(&covered, j) {
                    continue;
                }
                kept.push(j);
                set_bit(&mut covered, j);
                if let Some(reach) = ancestors.get(j) {
                    covered.iter_mut().zip(reach).for_each(|(c, r)| *c |= r);
                }
            }
            kept.reverse();
            ancestors.push(covered);
            direct.push(kept);
        }
        direct
    }
}

fn bit(bits: &[u64], index: usize) -> bool {
    bits.get(index / 64).is_some_and(|w| (w >> (index % 64)) & 1 == 1)
}

fn set_bit(bits: &mut [u64], index: usize) {
    if let Some(w) = bits.get_mut(index / 64) {
        *w |= 1 << (index % 64);
    }
}

/// The full dependency DAG of `launches` (see the module documentation for the rule and the
/// bounds): every conflicting pair, not transitively reduced.
///
/// # Errors
/// [`DepsError`] when the input is above [`LAUNCHES_MAX`] or [`EFFECTS_MAX`], or has more than
/// [`EDGES_MAX`] conflicting pairs.
pub fn dependencies(launches: &[LaunchRecord]) -> Result<Dependencies, DepsError> {
    check_limits(launches)?;
    let mut waits: Vec<Vec<Edge>> = Vec::with_capacity(launches.len());
    let mut edges_total: usize = 0;
    for (i, later) in launches.iter().enumerate() {
        let edges: Vec<Edge> = launches[..i]
            .iter()
            .enumerate()
            .filter_map(|(earlier, e)| conflict(e, later).map(|conflict| Edge { earlier, conflict }))
            .collect();
        edges_total = edges_total.saturating_add(edges.len());
        if edges_total > EDGES_MAX {
            return Err(DepsError::TooManyEdges { launch: i, limit: EDGES_MAX });
        }
        debug_assert!(edges.is_sorted_by_key(|e| e.earlier) && edges.iter().all(|e| e.earlier < i));
        waits.push(edges);
    }
    Ok(Dependencies { waits })
}

/// The launch indices before which a single in-order queue must wait, sorted ascending, each in
/// `1..launches.len()`. A wait before launch `i` orders `i` and everything after it behind
/// everything launched before it.
///
/// Greedy: keep the start `s` of the current wait-free segment (0 at first); for each `i` in
/// order, if `i` conflicts with any launch in `s..i`, put a boundary before `i` and set `s = i`.
///
/// - **Safe**: for a conflicting pair `j < i`, if no boundary lay in `j+1..=i` then `s ≤ j` when
///   `i` is looked at, so `i` conflicts with a launch of its segment and gets a boundary —
///   a contradiction.
/// - **Minimal** (fewest possible, not just irredundant): each boundary `b_k` is forced by some
///   `j_k` in `b_{k-1}..b_k` (`b_0 = 0`) that conflicts with `b_k`; every valid placement needs a boundary in
///   `j_k+1..=b_k`, and these intervals are pairwise disjoint, so every valid placement has at
///   least as many boundaries. In particular dropping any one boundary leaves `(j_k, b_k)`
///   unordered.
///
/// A launch with unknown effects conflicts with its neighbours, so it always gets a boundary
/// before it (unless it is first) and one before the next launch.
///
/// # Errors
/// [`DepsError`] when the input is above [`LAUNCHES_MAX`] or [`EFFECTS_MAX`].
pub fn boundaries(launches: &[LaunchRecord]) -> Result<Vec<usize>, DepsError> {
    check_limits(launches)?;
    let mut out = Vec::new();
    let mut segment_start: usize = 0;
    for (i, later) in launches.iter().enumerate() {
        // Nearest first: in practice the producer of what `i` reads is usually close by.
        if launches[segment_start..i].iter().rev().any(|earlier| conflicts(earlier, later)) {
            out.push(i);
            segment_start = i;
        }
    }
    debug_assert!(out.is_sorted() && out.first().is_none_or(|&b| b >= 1));
    Ok(out)
}
