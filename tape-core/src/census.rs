//! The census: a tape reconciled against an independent kernel trace.
//!
//! The recorder's own counts cannot show that a launch bypassed it: a launch issued around the
//! recorder makes a smaller tape that agrees with itself. The census compares the tape with what
//! the device executed, from a kernel trace written by whoever ran the packets ([`trace`]:
//! rocprofv3's `kernel_trace.csv`, which the soft device and the soft HSA runtime also write).
//!
//! # Splitting the trace into forwards
//! The trace of a run of ordinary forwards is cut before every dispatch of the tape's first
//! kernel (its *anchor*), which must occur once in the tape; dispatches before the first anchor
//! are the *preamble* (work of the run that is no forward, reported and not reconciled). Each cut
//! moves back over the dispatches of external kernels just before the anchor: an external launch
//! issued before the tape's first kernel (the token embedding) belongs to the forward it starts.
//! Forward
//! `k` is at position `first_position + k`, where the caller says at which position the trace's
//! first forward ran.
//!
//! # Reconciling one position
//! At position `p` the tape's launches are its records with every grid binding evaluated at `p`
//! ([`expected_launches`]); a position at which a binding has no value is not certified and is
//! not reconciled. The forward's dispatches must be those launches, kernel by kernel and in
//! order, each compared by its [`LaunchKey`] (symbol, grid, work-group, LDS as the trace reports
//! it), with exactly [`TapeIdentity::external_launches`] dispatches beside them (the launches the
//! tape names as kept outside). So `compute launches = retained dispatches + external launches`
//! holds launch by launch, and the first launch that differs is named ([`LaunchDifference`]).
//! An external launch's name is the symbol of the kernel it runs: a dispatch that is not the
//! next retained launch counts against the external launches of its kernel's name while any
//! remain, and anything else is a difference.
//!
//! [`TapeIdentity::external_launches`]: crate::tape::TapeIdentity::external_launches

pub mod trace;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use serde::Serialize;

use crate::binding::{BindingError, BindingKind, DimUnit};
use crate::tape::Tape;
use trace::{TraceRow, lds_block_size};

/// A launch as a kernel trace can see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LaunchKey {
    /// The kernel's symbol (`Kernel_Name`).
    pub symbol: String,
    /// Grid in work-items per axis.
    pub grid_work_items: [u32; 3],
    /// Work-group in work-items per axis.
    pub workgroup_work_items: [u32; 3],
    /// Static LDS rounded up to the trace's LDS block ([`trace::lds_block_size`]), bytes.
    pub lds_block_bytes: u32,
}

impl LaunchKey {
    /// The key of a trace row.
    #[must_use]
    pub fn of_row(row: &TraceRow) -> Self {
        Self {
            symbol: row.kernel_name.clone(),
            grid_work_items: row.grid_size,
            workgroup_work_items: row.workgroup_size,
            lds_block_bytes: row.lds_block_size_bytes,
        }
    }
}

impl fmt::Display for LaunchKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} grid {:?} work-group {:?} LDS {} B",
            self.symbol, self.grid_work_items, self.workgroup_work_items, self.lds_block_bytes
        )
    }
}

/// The tape's launches at `position`, as a trace sees them: each grid binding evaluated there (in
/// work-items, as an AQL packet carries the grid).
///
/// # Errors
/// [`BindingError`] of the first binding without a value at `position`.
pub fn expected_launches(tape: &Tape, position: u32) -> Result<Vec<LaunchKey>, BindingError> {
    let mut keys: Vec<LaunchKey> = tape
        .launches()
        .iter()
        .map(|l| LaunchKey {
            symbol: l.artifact.symbol.clone(),
            grid_work_items: l.geometry.grid_work_items,
            workgroup_work_items: l.geometry.workgroup_work_items.map(u32::from),
            lds_block_bytes: lds_block_size(l.lds.static_bytes),
        })
        .collect();
    for binding in tape.bindings() {
        let BindingKind::GridAxis { axis, .. } = binding.kind else {
            // Kernarg words are not in a kernel trace; they still need a value at `position`.
            binding.kind.value_at(position)?;
            continue;
        };
        let (Some(key), Some(launch)) = (
            keys.get_mut(usize::try_from(binding.launch).unwrap_or(usize::MAX)),
            tape.launches().get(usize::try_from(binding.launch).unwrap_or(usize::MAX)),
        ) else {
            continue;
        };
        let axis_index = usize::from(axis);
        let Some(&workgroup) = launch.geometry.workgroup_work_items.get(axis_index) else {
            return Err(BindingError::Malformed { axis, divisor: 0 });
        };
        let unit = DimUnit::WorkItems { workgroup_work_items: u32::from(workgroup) };
        key.grid_work_items[axis_index] = binding.kind.value_in(position, unit)?;
    }
    Ok(keys)
}

/// The first dispatch of a forward that is not what the tape says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LaunchDifference {
    /// Index of the launch in the forward (0 = its first dispatch).
    pub launch: u32,
    /// The retained launch expected there (`None`: the tape has no more).
    pub expected: Option<LaunchKey>,
    /// The dispatch found there (`None`: the forward ended).
    pub found: Option<LaunchKey>,
    /// The found dispatch's `Dispatch_Id`.
    pub dispatch_id: Option<u64>,
}

impl fmt::Display for LaunchDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "launch {}: ", self.launch)?;
        match (&self.expected, &self.found) {
            (Some(e), Some(d)) => write!(f, "the tape has {e}, the trace {d}")?,
            (Some(e), None) => write!(f, "the tape has {e}, the trace's forward ended")?,
            (None, Some(d)) => write!(f, "the tape has no more launches, the trace {d}")?,
            (None, None) => write!(f, "nothing expected and nothing found")?,
        }
        if let Some(id) = self.dispatch_id {
            write!(f, " (Dispatch_Id {id})")?;
        }
        Ok(())
    }
}

/// External launches a forward lacks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExternalMissing {
    /// The external name (the kernel's symbol).
    pub name: String,
    /// Launches of it the forward lacks.
    pub missing: u32,
}

/// The census's verdict at one position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every dispatch is accounted for, in order.
    Reconciled,
    /// The first launch that differs.
    Differs {
        /// The difference.
        difference: LaunchDifference,
    },
    /// Every retained launch is there, in order, but fewer dispatches of an external kernel than
    /// the tape names.
    ExternalMissing {
        /// The external name and how many of its launches are missing.
        missing: ExternalMissing,
    },
    /// A binding has no value at this position: it is not a certified position.
    NotCertified {
        /// The binding's error.
        reason: String,
    },
}

/// The census at one position: the three counts and the verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PositionCensus {
    /// The decode position of the forward.
    pub position: u32,
    /// Compute launches the trace shows for the forward.
    pub compute_launches: u64,
    /// Launches on the tape.
    pub retained_dispatches: u32,
    /// Launches the tape names as kept outside it.
    pub external_launches: u32,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

impl PositionCensus {
    /// Whether the position reconciled.
    #[must_use]
    pub fn reconciled(&self) -> bool {
        self.verdict == Verdict::Reconciled
    }
}

/// Reconciles one forward's dispatches (in issue order) with the tape at `position`.
#[must_use]
pub fn reconcile_forward(tape: &Tape, position: u32, dispatches: &[TraceRow]) -> PositionCensus {
    let identity = tape.identity();
    let census = |verdict| PositionCensus {
        position,
        compute_launches: u64::try_from(dispatches.len()).unwrap_or(u64::MAX),
        retained_dispatches: identity.dispatch_count,
        external_launches: identity.external_launches,
        verdict,
    };
    let expected = match expected_launches(tape, position) {
        Ok(keys) => keys,
        Err(e) => return census(Verdict::NotCertified { reason: alloc::format!("{e}") }),
    };
    let index = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
    // What each external name still may account for in this forward.
    let mut outside: Vec<(&str, u32)> = tape.external().iter().map(|e| (e.name.as_str(), e.count)).collect();
    let mut next = 0usize;
    for (i, row) in dispatches.iter().enumerate() {
        let key = LaunchKey::of_row(row);
        if expected.get(next) == Some(&key) {
            next += 1;
            continue;
        }
        if let Some((_, left)) = outside.iter_mut().find(|(name, left)| *name == row.kernel_name && *left > 0) {
            *left -= 1;
            continue;
        }
        let difference = LaunchDifference {
            launch: index(i),
            expected: expected.get(next).cloned(),
            found: Some(key),
            dispatch_id: Some(row.dispatch_id),
        };
        return census(Verdict::Differs { difference });
    }
    if let Some(missing) = expected.get(next) {
        let difference = LaunchDifference {
            launch: index(dispatches.len()),
            expected: Some(missing.clone()),
            found: None,
            dispatch_id: None,
        };
        return census(Verdict::Differs { difference });
    }
    if let Some(&(name, left)) = outside.iter().find(|(_, left)| *left > 0) {
        let missing = ExternalMissing { name: String::from(name), missing: left };
        return census(Verdict::ExternalMissing { missing });
    }
    census(Verdict::Reconciled)
}

/// Why a trace cannot be split into forwards of a tape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CensusError {
    /// The tape has no launches.
    #[error("the tape has no launches to split a trace at")]
    EmptyTape,
    /// The tape's first kernel occurs more than once in it, so it does not mark forwards.
    #[error(
        "the tape's first kernel {symbol} occurs {count} times in it; a trace is split at a kernel the tape runs once"
    )]
    AnchorNotUnique {
        /// The kernel.
        symbol: String,
        /// Its launches on the tape.
        count: usize,
    },
    /// The trace never runs the anchor.
    #[error("the trace never dispatches the tape's first kernel {symbol}")]
    NoForward {
        /// The kernel.
        symbol: String,
    },
    /// The positions of the forwards pass `u32`.
    #[error("{forwards} forwards from position {first_position} pass the largest position")]
    PositionOverflow {
        /// The first position.
        first_position: u32,
        /// Forwards in the trace.
        forwards: usize,
    },
}

/// The census of a trace of ordinary forwards against a tape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Census {
    /// The kernel the trace was split at (the tape's first).
    pub anchor: String,
    /// Dispatches before the first forward.
    pub preamble_launches: u64,
    /// Every forward's census, in trace order.
    pub positions: Vec<PositionCensus>,
}

impl Census {
    /// The first certified position that does not reconcile.
    #[must_use]
    pub fn first_mismatch(&self) -> Option<&PositionCensus> {
        self.positions.iter().find(|p| matches!(p.verdict, Verdict::Differs { .. } | Verdict::ExternalMissing { .. }))
    }

    /// Positions that were reconciled (certified ones).
    #[must_use]
    pub fn certified(&self) -> usize {
        self.positions.iter().filter(|p| !matches!(p.verdict, Verdict::NotCertified { .. })).count()
    }
}

/// Splits `rows` (a trace of ordinary forwards, in file order) into forwards and reconciles each
/// with `tape`; the first forward ran at `first_position`. Rows are taken in `Dispatch_Id` order
/// (a stable sort: a producer that writes them out of order is read in issue order).
///
/// # Errors
/// [`CensusError`] when the trace cannot be split (see the module documentation).
pub fn census(tape: &Tape, rows: &[TraceRow], first_position: u32) -> Result<Census, CensusError> {
    let anchor = tape.launches().first().map(|l| l.artifact.symbol.clone()).ok_or(CensusError::EmptyTape)?;
    let count = tape.launches().iter().filter(|l| l.artifact.symbol == anchor).count();
    if count != 1 {
        return Err(CensusError::AnchorNotUnique { symbol: anchor, count });
    }
    let mut ordered = rows.to_vec();
    ordered.sort_by_key(|r| r.dispatch_id);
    let external = |r: &TraceRow| tape.external().iter().any(|e| e.name == r.kernel_name);
    let mut starts: Vec<usize> = Vec::new();
    let mut previous_anchor = None;
    for (i, _) in ordered.iter().enumerate().filter(|(_, r)| r.kernel_name == anchor) {
        let floor = previous_anchor.map_or(0, |a: usize| a + 1);
        previous_anchor = Some(i);
        let mut start = i;
        while start > floor && external(&ordered[start - 1]) {
            start -= 1;
        }
        starts.push(start);
    }
    let Some(&first) = starts.first() else {
        return Err(CensusError::NoForward { symbol: anchor });
    };
    let forwards = starts.len();
    let mut positions = Vec::with_capacity(forwards);
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(ordered.len());
        let position = u32::try_from(k)
            .ok()
            .and_then(|k| first_position.checked_add(k))
            .ok_or(CensusError::PositionOverflow { first_position, forwards })?;
        positions.push(reconcile_forward(tape, position, &ordered[start..end]));
    }
    Ok(Census { anchor, preamble_launches: u64::try_from(first).unwrap_or(u64::MAX), positions })
}
