//! Cross-position stability: what differs between two recordings of one decode step beyond the
//! values their bindings own.
//!
//! [`compare`] lists every drift of an immutable part, launch by launch: the launch count, the
//! artifact, the grid (except axes a grid binding owns), the work-group, the LDS, the wave size,
//! the pointer slots (by kernarg offset, allocation ordinal and offset in the allocation, never
//! by address or allocation id, see [`hash`](crate::hash)), the effects (in the same canonical
//! form), the kernarg bytes outside pointer slots and bound words (as byte ranges), and the
//! external counts. The bindings of **both** tapes mask what they own, and every binding of one
//! tape must predict the other tape's recorded value at the other tape's position
//! ([`Drift::BoundValue`]). The bindings themselves are not compared: they are calibration
//! results, not recorded launches.
//!
//! A report holds at most [`DRIFTS_MAX`] drifts and counts the rest.

use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::binding::{Binding, BindingKind};
use crate::hash::{AllocationOrdinals, CanonicalEffects, CanonicalPointer};
use crate::record::{ArtifactId, LaunchRecord, Lds};
use crate::serial::HexBytes;
use crate::tape::Tape;

/// Most drifts a report lists; further ones are only counted.
pub const DRIFTS_MAX: usize = 1024;

/// One immutable part that differs between tape `a` and tape `b`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Drift {
    /// Different numbers of launches (the common prefix is still compared).
    LaunchCount {
        /// Launches of `a`.
        a: usize,
        /// Launches of `b`.
        b: usize,
    },
    /// Another kernel.
    Artifact {
        /// Launch index.
        launch: usize,
        /// In `a`.
        a: ArtifactId,
        /// In `b`.
        b: ArtifactId,
    },
    /// Another grid on an axis no grid binding owns.
    Grid {
        /// Launch index.
        launch: usize,
        /// 0, 1 or 2.
        axis: u8,
        /// Work-items in `a`.
        a: u32,
        /// Work-items in `b`.
        b: u32,
    },
    /// Another work-group size.
    Workgroup {
        /// Launch index.
        launch: usize,
        /// Work-items per axis in `a`.
        a: [u16; 3],
        /// Work-items per axis in `b`.
        b: [u16; 3],
    },
    /// Other LDS sizes.
    Lds {
        /// Launch index.
        launch: usize,
        /// In `a`.
        a: Lds,
        /// In `b`.
        b: Lds,
    },
    /// Another wave size.
    WaveSize {
        /// Launch index.
        launch: usize,
        /// In `a`.
        a: u8,
        /// In `b`.
        b: u8,
    },
    /// Other pointer slots, allocations (by ordinal) or offsets in them.
    Pointers {
        /// Launch index.
        launch: usize,
        /// Canonical pointers of `a`.
        a: Vec<CanonicalPointer>,
        /// Canonical pointers of `b`.
        b: Vec<CanonicalPointer>,
    },
    /// Other effects.
    Effects {
        /// Launch index.
        launch: usize,
        /// Canonical effects of `a`.
        a: CanonicalEffects,
        /// Canonical effects of `b`.
        b: CanonicalEffects,
    },
    /// Kernarg blobs of different lengths (their bytes are not compared).
    KernargLength {
        /// Launch index.
        launch: usize,
        /// Bytes in `a`.
        a: usize,
        /// Bytes in `b`.
        b: usize,
    },
    /// A maximal run of differing kernarg bytes outside pointer slots and bound words.
    Kernarg {
        /// Launch index.
        launch: usize,
        /// First differing byte.
        start: u32,
        /// One past the last.
        end: u32,
        /// The bytes in `a`.
        a: Vec<u8>,
        /// The bytes in `b`.
        b: Vec<u8>,
    },
    /// Another count of external launches under a name (0 where a tape lacks the name).
    External {
        /// The name.
        name: String,
        /// Count in `a`.
        a: u32,
        /// Count in `b`.
        b: u32,
    },
    /// A binding of one tape does not predict the value the other tape recorded at its position.
    BoundValue {
        /// Launch index.
        launch: usize,
        /// The binding.
        name: String,
        /// The position of the tape whose value was predicted.
        position: u32,
        /// The predicted kernarg word, or grid in work-items; `None` when the binding cannot
        /// produce a value at `position`.
        predicted: Option<u64>,
        /// The recorded kernarg word, or grid in work-items.
        recorded: u64,
    },
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Drift::LaunchCount { a, b } => write!(f, "launch count {a} vs {b}"),
            Drift::Artifact { launch, a, b } => write!(
                f,
                "launch {launch}: artifact `{}` ({}) vs `{}` ({})",
                a.symbol,
                HexBytes(&a.code_object_sha256),
                b.symbol,
                HexBytes(&b.code_object_sha256)
            ),
            Drift::Grid { launch, axis, a, b } => write!(f, "launch {launch}: grid axis {axis} {a} vs {b} work-items"),
            Drift::Workgroup { launch, a, b } => write!(f, "launch {launch}: work-group {a:?} vs {b:?}"),
            Drift::Lds { launch, a, b } => write!(
                f,
                "launch {launch}: LDS {}+{} vs {}+{} bytes",
                a.static_bytes, a.dynamic_bytes, b.static_bytes, b.dynamic_bytes
            ),
            Drift::WaveSize { launch, a, b } => write!(f, "launch {launch}: wave size {a} vs {b}"),
            Drift::Pointers { launch, a, b } => write!(f, "launch {launch}: pointers {a:?} vs {b:?}"),
            Drift::Effects { launch, a, b } => write!(f, "launch {launch}: effects {a:?} vs {b:?}"),
            Drift::KernargLength { launch, a, b } => write!(f, "launch {launch}: kernarg {a} vs {b} bytes"),
            Drift::Kernarg { launch, start, end, a, b } => {
                write!(f, "launch {launch}: kernarg bytes {start}..{end} {} vs {}", HexBytes(a), HexBytes(b))
            }
            Drift::External { name, a, b } => write!(f, "external `{name}`: {a} vs {b} launches"),
            Drift::BoundValue { launch, name, position, predicted: Some(p), recorded } => {
                write!(f, "launch {launch}: binding `{name}` predicts {p} at position {position}, recorded {recorded}")
            }
            Drift::BoundValue { launch, name, position, predicted: None, recorded } => {
                write!(f, "launch {launch}: binding `{name}` has no value at position {position}, recorded {recorded}")
            }
        }
    }
}

/// The drifts between two tapes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StabilityReport {
    drifts: Vec<Drift>,
    omitted: usize,
}

impl StabilityReport {
    /// Whether nothing drifted.
    #[must_use]
    pub fn is_stable(&self) -> bool {
        self.drifts.is_empty() && self.omitted == 0
    }

    /// The first [`DRIFTS_MAX`] drifts, in launch order.
    #[must_use]
    pub fn drifts(&self) -> &[Drift] {
        &self.drifts
    }

    /// Drifts found beyond [`DRIFTS_MAX`].
    #[must_use]
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    fn push(&mut self, drift: Drift) {
        if self.drifts.len() < DRIFTS_MAX {
            self.drifts.push(drift);
        } else {
            self.omitted = self.omitted.saturating_add(1);
        }
    }
}

impl fmt::Display for StabilityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_stable() {
            return f.write_str("stable");
        }
        for drift in &self.drifts {
            writeln!(f, "{drift}")?;
        }
        if self.omitted > 0 {
            writeln!(f, "... and {} more", self.omitted)?;
        }
        Ok(())
    }
}

/// What the bindings of both tapes own.
struct Owned {
    /// (launch, axis) of every grid binding.
    axes: BTreeSet<(u32, u8)>,
    /// (launch, offset) of every kernarg binding's word.
    words: BTreeSet<(u32, u32)>,
}

impl Owned {
    fn of(a: &Tape, b: &Tape) -> Self {
        let mut owned = Owned { axes: BTreeSet::new(), words: BTreeSet::new() };
        for binding in a.bindings().iter().chain(b.bindings()) {
            match binding.kind {
                BindingKind::KernargU32 { offset, .. }
                | BindingKind::KernargGridWorkgroups { offset, .. }
                | BindingKind::KernargU32Clamped { offset, .. } => owned.words.insert((binding.launch, offset)),
                BindingKind::GridAxis { axis, .. } => owned.axes.insert((binding.launch, axis)),
            };
        }
        owned
    }
}

/// Compares two recordings of one decode step (see the module documentation).
#[must_use]
pub fn compare(a: &Tape, b: &Tape) -> StabilityReport {
    let mut report = StabilityReport::default();
    let (la, lb) = (a.launches(), b.launches());
    if la.len() != lb.len() {
        report.push(Drift::LaunchCount { a: la.len(), b: lb.len() });
    }
    let (oa, ob) = (AllocationOrdinals::of(la), AllocationOrdinals::of(lb));
    let owned = Owned::of(a, b);
    for (launch, (x, y)) in la.iter().zip(lb).enumerate() {
        compare_launch(&mut report, &owned, launch, (x, &oa), (y, &ob));
    }
    compare_external(&mut report, a, b);
    for binding in a.bindings() {
        check_prediction(&mut report, binding, b);
    }
    for binding in b.bindings() {
        check_prediction(&mut report, binding, a);
    }
    report
}

fn compare_launch(
    report: &mut StabilityReport,
    owned: &Owned,
    launch: usize,
    (x, ox): (&LaunchRecord, &AllocationOrdinals),
    (y, oy): (&LaunchRecord, &AllocationOrdinals),
) {
    // INVARIANT: launch < TAPE_LAUNCHES_MAX.
    let index = u32::try_from(launch).unwrap_or(u32::MAX);
    if x.artifact != y.artifact {
        report.push(Drift::Artifact { launch, a: x.artifact.clone(), b: y.artifact.clone() });
    }
    for axis in 0u8..3 {
        let (ga, gb) = (x.geometry.grid_work_items[usize::from(axis)], y.geometry.grid_work_items[usize::from(axis)]);
        if ga != gb && !owned.axes.contains(&(index, axis)) {
            report.push(Drift::Grid { launch, axis, a: ga, b: gb });
        }
    }
    if x.geometry.workgroup_work_items != y.geometry.workgroup_work_items {
        let (a, b) = (x.geometry.workgroup_work_items, y.geometry.workgroup_work_items);
        report.push(Drift::Workgroup { launch, a, b });
    }
    if x.lds != y.lds {
        report.push(Drift::Lds { launch, a: x.lds, b: y.lds });
    }
    if x.wave_size != y.wave_size {
        report.push(Drift::WaveSize { launch, a: x.wave_size, b: y.wave_size });
    }
    let (pa, pb) = (ox.pointers(x).unwrap_or_default(), oy.pointers(y).unwrap_or_default());
    if pa != pb {
        report.push(Drift::Pointers { launch, a: pa, b: pb });
    }
    let (ea, eb) = (ox.effects(x), oy.effects(y));
    if ea != eb {
        let unknown = || CanonicalEffects::Unknown;
        report.push(Drift::Effects { launch, a: ea.unwrap_or_else(unknown), b: eb.unwrap_or_else(unknown) });
    }
    compare_kernarg(report, owned, launch, index, x, y);
}

fn compare_kernarg(
    report: &mut StabilityReport,
    owned: &Owned,
    launch: usize,
    index: u32,
    x: &LaunchRecord,
    y: &LaunchRecord,
) {
    let (ka, kb) = (&x.kernarg, &y.kernarg);
    if ka.len() != kb.len() {
        report.push(Drift::KernargLength { launch, a: ka.len(), b: kb.len() });
        return;
    }
    let mut masked = vec![false; ka.len()];
    let mut mask = |offset: u32, len: usize| {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(len).min(masked.len());
        if let Some(bytes) = masked.get_mut(start..end) {
            bytes.fill(true);
        }
    };
    for pointer in x.pointers.iter().chain(&y.pointers) {
        mask(pointer.kernarg_offset, 8);
    }
    for &(_, offset) in owned.words.range((index, 0)..=(index, u32::MAX)) {
        mask(offset, 4);
    }
    let differs = |i: usize| !masked[i] && ka[i] != kb[i];
    let mut i = 0;
    while i < ka.len() {
        if !differs(i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < ka.len() && differs(i) {
            i += 1;
        }
        // INVARIANT: blobs are at most KERNARG_SEGMENT_MAX_BYTES long.
        let offset = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let (a, b) = (ka[start..i].to_vec(), kb[start..i].to_vec());
        report.push(Drift::Kernarg { launch, start: offset(start), end: offset(i), a, b });
    }
}

fn compare_external(report: &mut StabilityReport, a: &Tape, b: &Tape) {
    let count = |tape: &Tape, name: &str| tape.external().iter().find(|e| e.name == name).map_or(0, |e| e.count);
    let names = a.external().iter().chain(b.external()).map(|e| e.name.as_str());
    let mut seen = BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            continue;
        }
        let (ca, cb) = (count(a, name), count(b, name));
        if ca != cb {
            report.push(Drift::External { name: String::from(name), a: ca, b: cb });
        }
    }
}

/// Checks that `binding` (of the other tape) predicts what `tape` recorded at its position.
fn check_prediction(report: &mut StabilityReport, binding: &Binding, tape: &Tape) {
    let Some(launch_record) = usize::try_from(binding.launch).ok().and_then(|i| tape.launches().get(i)) else {
        return; // The launch count drift is reported already.
    };
    let position = tape.position();
    let value = binding.kind.value_at(position).ok();
    let (predicted, recorded) = match binding.kind {
        BindingKind::KernargU32 { offset, .. }
        | BindingKind::KernargGridWorkgroups { offset, .. }
        | BindingKind::KernargU32Clamped { offset, .. } => {
            let Some(word) =
                usize::try_from(offset).ok().and_then(|start| launch_record.kernarg.get(start..start.checked_add(4)?))
            else {
                return; // A kernarg length drift is reported already.
            };
            (value.map(u64::from), u64::from(u32::from_le_bytes([word[0], word[1], word[2], word[3]])))
        }
        BindingKind::GridAxis { axis, .. } => {
            let axis = usize::from(axis).min(2);
            let workgroup = u64::from(launch_record.geometry.workgroup_work_items[axis]);
            (value.map(|groups| u64::from(groups) * workgroup), u64::from(launch_record.geometry.grid_work_items[axis]))
        }
    };
    if predicted != Some(recorded) {
        let launch = usize::try_from(binding.launch).unwrap_or(usize::MAX);
        report.push(Drift::BoundValue { launch, name: binding.name.clone(), position, predicted, recorded });
    }
}
