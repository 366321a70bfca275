//! The immutable tape of one decode step: its launches, its named external launches, its dynamic
//! bindings and its identity.
//!
//! A [`Tape`] comes out of [`Recorder::finish`](crate::recorder::Recorder::finish) or out of
//! [`validate`](crate::serial::validate) (what deserialization calls); both run the same checks,
//! so every `Tape` value satisfies them:
//! - 1 to [`TAPE_LAUNCHES_MAX`] launches, each passing [`check_launch`], with at most
//!   [`TAPE_KERNARG_BYTES_MAX`] kernarg bytes in all;
//! - external counts with distinct valid names, each count positive, bounded in number and sum;
//! - bindings that pass the checks of [`Tape::with_bindings`], the only way to attach bindings to
//!   a recorded tape (a deserialized tape's bindings pass the same checks).
//!
//! The identity ([`TapeIdentity`]) is computed once, at construction.

use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use kernarg_abi::KernargLayout;
use serde::{Deserialize, Serialize};

use crate::binding::{Binding, BindingError, BindingKind};
use crate::hash;
use crate::record::{ArtifactId, LaunchRecord};
use crate::recorder::{
    EXTERNAL_LAUNCHES_MAX, EXTERNAL_NAMES_MAX, ExternalError, LaunchError, check_external_name, check_launch,
    check_launch_with_layout,
};
use crate::serial::{HexBytes, TapeData};

/// Most launches of one tape. A decode step is a few hundred to a few thousand launches.
pub const TAPE_LAUNCHES_MAX: usize = 1 << 16;
/// Most kernarg bytes of one tape, over all launches (64 MiB).
pub const TAPE_KERNARG_BYTES_MAX: usize = 64 << 20;
/// Most bindings of one tape.
pub const BINDINGS_MAX: usize = 4096;
/// Longest binding name, bytes.
pub const BINDING_NAME_BYTES_MAX: usize = 128;

/// How many launches of the decode step ran under one name outside the tape.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalCount {
    /// The name (`"token_embedding"`), unique within the tape.
    pub name: String,
    /// Launches under that name, at least 1.
    pub count: u32,
}

/// Why a set of launches, external counts and bindings is not a tape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TapeError {
    /// No launch at all.
    #[error("the tape has no launches")]
    Empty,
    /// More launches than [`TAPE_LAUNCHES_MAX`].
    #[error("{count} launches exceed the limit of {limit}")]
    TooManyLaunches {
        /// Launches given.
        count: usize,
        /// [`TAPE_LAUNCHES_MAX`].
        limit: usize,
    },
    /// A launch that fails its checks.
    #[error("launch {index}: {error}")]
    Launch {
        /// Its index.
        index: usize,
        /// What is wrong with it.
        error: LaunchError,
    },
    /// More kernarg bytes than [`TAPE_KERNARG_BYTES_MAX`].
    #[error("{total} kernarg bytes exceed the {limit}-byte limit")]
    KernargTotal {
        /// Bytes over all launches.
        total: usize,
        /// [`TAPE_KERNARG_BYTES_MAX`].
        limit: usize,
    },
    /// A bad external count.
    #[error(transparent)]
    External(#[from] ExternalError),
    /// A bad binding.
    #[error(transparent)]
    Binding(#[from] BindingCheckError),
    /// [`Tape::check_layouts`] found no layout for a launch's artifact.
    #[error("launch {index}: no kernarg layout for `{}` in code object {}", artifact.symbol, HexBytes(&artifact.code_object_sha256))]
    MissingLayout {
        /// The launch.
        index: usize,
        /// Its artifact.
        artifact: ArtifactId,
    },
}

/// Why a binding cannot be attached to a tape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindingCheckError {
    /// More bindings than [`BINDINGS_MAX`].
    #[error("{count} bindings exceed the limit of {limit}")]
    TooMany {
        /// Bindings given.
        count: usize,
        /// [`BINDINGS_MAX`].
        limit: usize,
    },
    /// Binding number `index` has an empty name.
    #[error("binding {index} has an empty name")]
    NameEmpty {
        /// Its index in the list.
        index: usize,
    },
    /// Binding number `index` has a name above [`BINDING_NAME_BYTES_MAX`].
    #[error("binding {index} has a name of {len} bytes, above the {limit}-byte limit")]
    NameTooLong {
        /// Its index in the list.
        index: usize,
        /// Name length, bytes.
        len: usize,
        /// [`BINDING_NAME_BYTES_MAX`].
        limit: usize,
    },
    /// Two bindings with one name.
    #[error("binding name `{name}` is used twice")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// The owning launch does not exist.
    #[error("binding `{name}` is owned by launch {launch}, the tape has {launches}")]
    LaunchOutOfRange {
        /// The binding.
        name: String,
        /// Its launch index.
        launch: u32,
        /// Launches in the tape.
        launches: usize,
    },
    /// A kernarg word reaching past the blob.
    #[error("binding `{name}`: word at offset {offset} ends past the {kernarg_len}-byte kernarg blob")]
    KernargOutside {
        /// The binding.
        name: String,
        /// Its offset.
        offset: u32,
        /// Blob length, bytes.
        kernarg_len: usize,
    },
    /// A kernarg word overlapping a pointer slot.
    #[error("binding `{name}`: word at offset {offset} overlaps the pointer slot at {pointer_offset}")]
    OverlapsPointer {
        /// The binding.
        name: String,
        /// Its offset.
        offset: u32,
        /// The slot's offset.
        pointer_offset: u32,
    },
    /// A grid axis above 2.
    #[error("binding `{name}`: grid axis {axis} is not 0, 1 or 2")]
    AxisOutOfRange {
        /// The binding.
        name: String,
        /// The axis.
        axis: u8,
    },
    /// A grid divisor of 0.
    #[error("binding `{name}`: grid divisor is 0")]
    ZeroDivisor {
        /// The binding.
        name: String,
    },
    /// A grid maximum below the recorded grid.
    #[error("binding `{name}`: maximum of {max_workgroups} work-groups is below the recorded {recorded_workgroups}")]
    MaxBelowRecorded {
        /// The binding.
        name: String,
        /// `max_workgroups`.
        max_workgroups: u32,
        /// Recorded grid on the axis, work-groups.
        recorded_workgroups: u32,
    },
    /// Two bindings of one launch that write the same kernarg bytes or the same grid axis.
    #[error("bindings `{name}` and `{other}` bind the same value of launch {launch}")]
    Conflict {
        /// The later binding (in kernarg-offset or axis order).
        name: String,
        /// The earlier one.
        other: String,
        /// The launch.
        launch: u32,
    },
    /// The binding cannot produce a value at the tape's own position.
    #[error("binding `{name}`: {error}")]
    Value {
        /// The binding.
        name: String,
        /// Why.
        error: BindingError,
    },
    /// At the tape's position, a kernarg binding gives another value than the recorded word.
    #[error("binding `{name}` gives {bound} at position {position}, the recorded word is {recorded}")]
    KernargDisagrees {
        /// The binding.
        name: String,
        /// The tape's position.
        position: u32,
        /// The binding's value there.
        bound: u32,
        /// The recorded little-endian `u32`.
        recorded: u32,
    },
    /// At the tape's position, a grid binding gives another grid than the recorded one (the
    /// bound grid in work-items is work-groups × work-group size, so the recorded grid must be a
    /// whole number of work-groups).
    #[error(
        "binding `{name}` gives {bound_work_items} work-items at position {position}, the recorded grid is {recorded_work_items}"
    )]
    GridDisagrees {
        /// The binding.
        name: String,
        /// The tape's position.
        position: u32,
        /// Bound work-groups × work-group size on the axis.
        bound_work_items: u64,
        /// The recorded grid on the axis, work-items.
        recorded_work_items: u32,
    },
    /// A [`BindingKind::KernargGridWorkgroups`] binding whose launch has no
    /// [`BindingKind::GridAxis`] binding on its axis with the same `addend`, `divisor` and
    /// `max_workgroups` (the word would drift from the grid it stands for).
    #[error(
        "binding `{name}` follows grid axis {axis} of launch {launch}, which no grid binding with the same parameters binds"
    )]
    GridWordWithoutGrid {
        /// The binding.
        name: String,
        /// The launch.
        launch: u32,
        /// The axis.
        axis: u8,
    },
}

/// The identity of a tape: what it runs, comparable across processes and machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapeIdentity {
    /// Launches on the tape.
    pub dispatch_count: u32,
    /// Distinct [`ArtifactId`]s (code object and symbol) among them.
    pub unique_kernels: u32,
    /// Launches of the step kept outside the tape, over all names.
    pub external_launches: u32,
    /// The ordered sequence hash ([`hash`] defines it).
    #[serde(with = "crate::serial::hex32")]
    pub sequence_hash: [u8; 32],
}

/// The compute launches observed for one step do not equal retained + external launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{observed} compute launches observed, the tape accounts for {retained} retained + {external} external")]
pub struct ReconcileError {
    /// [`TapeIdentity::dispatch_count`].
    pub retained: u32,
    /// [`TapeIdentity::external_launches`].
    pub external: u32,
    /// Launches observed.
    pub observed: u64,
}

impl TapeIdentity {
    /// Every compute launch of the step: `dispatch_count + external_launches`.
    #[must_use]
    pub fn compute_launches(&self) -> u64 {
        u64::from(self.dispatch_count) + u64::from(self.external_launches)
    }

    /// Checks that `observed_compute_launches` (counted by whoever issued the step, a runtime
    /// trace or the device) is exactly [`compute_launches`](Self::compute_launches).
    ///
    /// # Errors
    /// [`ReconcileError`] with both sides when they differ.
    pub fn reconcile(&self, observed_compute_launches: u64) -> Result<(), ReconcileError> {
        if observed_compute_launches == self.compute_launches() {
            return Ok(());
        }
        Err(ReconcileError {
            retained: self.dispatch_count,
            external: self.external_launches,
            observed: observed_compute_launches,
        })
    }
}

impl fmt::Display for TapeIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dispatches={} unique_kernels={} external_launches={} sequence_hash={}",
            self.dispatch_count,
            self.unique_kernels,
            self.external_launches,
            HexBytes(&self.sequence_hash)
        )
    }
}

/// One decode step, recorded and checked. Immutable: bindings are attached by consuming it
/// ([`with_bindings`](Self::with_bindings)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tape {
    position: u32,
    launches: Vec<LaunchRecord>,
    external: Vec<ExternalCount>,
    bindings: Vec<Binding>,
    /// INVARIANT: computed from `launches` and `external` at construction.
    identity: TapeIdentity,
}

impl Tape {
    /// Checks every part and builds the tape; the one constructor.
    pub(crate) fn from_parts(
        position: u32,
        launches: Vec<LaunchRecord>,
        external: Vec<ExternalCount>,
        bindings: Vec<Binding>,
    ) -> Result<Self, TapeError> {
        check_launches(&launches)?;
        check_external(&external)?;
        check_bindings(position, &launches, &bindings)?;
        let identity = compute_identity(&launches, &external);
        Ok(Self { position, launches, external, bindings, identity })
    }

    /// The decode position the tape was recorded at.
    #[must_use]
    pub fn position(&self) -> u32 {
        self.position
    }

    /// The launches, in issue order.
    #[must_use]
    pub fn launches(&self) -> &[LaunchRecord] {
        &self.launches
    }

    /// The launches kept outside the tape, by name, in order of first appearance.
    #[must_use]
    pub fn external(&self) -> &[ExternalCount] {
        &self.external
    }

    /// The dynamic bindings (empty until [`with_bindings`](Self::with_bindings)).
    #[must_use]
    pub fn bindings(&self) -> &[Binding] {
        &self.bindings
    }

    /// The identity, computed when the tape was built.
    #[must_use]
    pub fn identity(&self) -> TapeIdentity {
        self.identity
    }

    /// The tape with `bindings` in place of its current ones. Each binding must name an existing
    /// launch, a name unique in the list; a kernarg binding a `u32` word inside the blob clear of
    /// every pointer slot, a grid binding an axis ≤ 2, a positive divisor and a maximum at least
    /// the recorded grid; a grid-workgroups kernarg binding both (a word, an axis ≤ 2 and a
    /// positive divisor) and a grid binding of its launch on its axis with the same `addend`,
    /// `divisor` and `max_workgroups`; no two bindings may bind the same bytes or axis of a
    /// launch; and at the tape's position each binding must reproduce the recorded word or grid
    /// exactly.
    ///
    /// # Errors
    /// [`TapeError::Binding`] naming the first offending binding.
    pub fn with_bindings(self, bindings: Vec<Binding>) -> Result<Self, TapeError> {
        check_bindings(self.position, &self.launches, &bindings)?;
        Ok(Self { bindings, ..self })
    }

    /// Checks every launch against its kernel's kernarg layout, as recording does
    /// ([`check_launch_with_layout`]); for a deserialized tape, whose layouts were not at hand.
    ///
    /// # Errors
    /// [`TapeError::MissingLayout`] when `layout_of` knows no layout for an artifact, or
    /// [`TapeError::Launch`] for the first launch that disagrees with its layout.
    pub fn check_layouts<'a>(
        &self,
        mut layout_of: impl FnMut(&ArtifactId) -> Option<&'a KernargLayout>,
    ) -> Result<(), TapeError> {
        for (index, launch) in self.launches.iter().enumerate() {
            let layout = layout_of(&launch.artifact)
                .ok_or_else(|| TapeError::MissingLayout { index, artifact: launch.artifact.clone() })?;
            check_launch_with_layout(launch, layout).map_err(|error| TapeError::Launch { index, error })?;
        }
        Ok(())
    }

    /// The plain data of the tape (what it serializes as).
    #[must_use]
    pub fn into_data(self) -> TapeData {
        TapeData { position: self.position, launches: self.launches, external: self.external, bindings: self.bindings }
    }
}

fn check_launches(launches: &[LaunchRecord]) -> Result<(), TapeError> {
    if launches.is_empty() {
        return Err(TapeError::Empty);
    }
    if launches.len() > TAPE_LAUNCHES_MAX {
        return Err(TapeError::TooManyLaunches { count: launches.len(), limit: TAPE_LAUNCHES_MAX });
    }
    let mut total = 0usize;
    for (index, launch) in launches.iter().enumerate() {
        check_launch(launch).map_err(|error| TapeError::Launch { index, error })?;
        total = total.saturating_add(launch.kernarg.len());
    }
    if total > TAPE_KERNARG_BYTES_MAX {
        return Err(TapeError::KernargTotal { total, limit: TAPE_KERNARG_BYTES_MAX });
    }
    Ok(())
}

fn check_external(external: &[ExternalCount]) -> Result<(), ExternalError> {
    if external.len() > EXTERNAL_NAMES_MAX {
        return Err(ExternalError::TooManyNames { limit: EXTERNAL_NAMES_MAX });
    }
    let mut names = BTreeSet::new();
    let mut total = 0u64;
    for entry in external {
        check_external_name(&entry.name)?;
        if !names.insert(entry.name.as_str()) {
            return Err(ExternalError::DuplicateName { name: entry.name.clone() });
        }
        if entry.count == 0 {
            return Err(ExternalError::ZeroCount { name: entry.name.clone() });
        }
        total += u64::from(entry.count);
    }
    if total > u64::from(EXTERNAL_LAUNCHES_MAX) {
        return Err(ExternalError::TooManyLaunches { limit: EXTERNAL_LAUNCHES_MAX });
    }
    Ok(())
}

/// The bytes (kernarg) or axis (grid) of its launch a binding writes, for the overlap check.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Claim {
    launch: u32,
    /// 0 = kernarg bytes, 1 = grid axes.
    site: u8,
    start: u64,
    end: u64,
    index: usize,
}

fn check_bindings(position: u32, launches: &[LaunchRecord], bindings: &[Binding]) -> Result<(), BindingCheckError> {
    if bindings.len() > BINDINGS_MAX {
        return Err(BindingCheckError::TooMany { count: bindings.len(), limit: BINDINGS_MAX });
    }
    let mut names = BTreeSet::new();
    let mut claims = Vec::with_capacity(bindings.len());
    for (index, binding) in bindings.iter().enumerate() {
        let len = binding.name.len();
        if len == 0 {
            return Err(BindingCheckError::NameEmpty { index });
        }
        if len > BINDING_NAME_BYTES_MAX {
            return Err(BindingCheckError::NameTooLong { index, len, limit: BINDING_NAME_BYTES_MAX });
        }
        if !names.insert(binding.name.as_str()) {
            return Err(BindingCheckError::DuplicateName { name: binding.name.clone() });
        }
        let launch = usize::try_from(binding.launch).ok().and_then(|i| launches.get(i)).ok_or_else(|| {
            BindingCheckError::LaunchOutOfRange {
                name: binding.name.clone(),
                launch: binding.launch,
                launches: launches.len(),
            }
        })?;
        let (site, start, end) = match binding.kind {
            BindingKind::KernargU32 { offset, .. } | BindingKind::KernargU32Clamped { offset, .. } => {
                check_kernarg_binding(position, launch, binding, offset)?;
                (0, u64::from(offset), u64::from(offset) + 4)
            }
            BindingKind::GridAxis { axis, .. } => {
                check_grid_binding(position, launch, binding)?;
                (1, u64::from(axis), u64::from(axis) + 1)
            }
            BindingKind::KernargGridWorkgroups { offset, axis, divisor, .. } => {
                if axis > 2 {
                    return Err(BindingCheckError::AxisOutOfRange { name: binding.name.clone(), axis });
                }
                if divisor == 0 {
                    return Err(BindingCheckError::ZeroDivisor { name: binding.name.clone() });
                }
                check_kernarg_binding(position, launch, binding, offset)?;
                (0, u64::from(offset), u64::from(offset) + 4)
            }
        };
        claims.push(Claim { launch: binding.launch, site, start, end, index });
    }
    claims.sort_unstable();
    // Sorted by start, any overlap shows between neighbours.
    for pair in claims.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.launch == b.launch && a.site == b.site && b.start < a.end {
            return Err(BindingCheckError::Conflict {
                name: bindings[b.index].name.clone(),
                other: bindings[a.index].name.clone(),
                launch: a.launch,
            });
        }
    }
    check_grid_words_have_grids(bindings)
}

/// Every [`BindingKind::KernargGridWorkgroups`] has a [`BindingKind::GridAxis`] of its launch on
/// its axis with the same parameters (after the conflict check, at most one per axis).
fn check_grid_words_have_grids(bindings: &[Binding]) -> Result<(), BindingCheckError> {
    let grids: BTreeSet<(u32, u8, i64, u32, u32)> = bindings
        .iter()
        .filter_map(|b| match b.kind {
            BindingKind::GridAxis { axis, addend, divisor, max_workgroups } => {
                Some((b.launch, axis, addend, divisor, max_workgroups))
            }
            _ => None,
        })
        .collect();
    for b in bindings {
        if let BindingKind::KernargGridWorkgroups { axis, addend, divisor, max_workgroups, .. } = b.kind
            && !grids.contains(&(b.launch, axis, addend, divisor, max_workgroups))
        {
            return Err(BindingCheckError::GridWordWithoutGrid { name: b.name.clone(), launch: b.launch, axis });
        }
    }
    Ok(())
}

fn check_kernarg_binding(
    position: u32,
    launch: &LaunchRecord,
    binding: &Binding,
    offset: u32,
) -> Result<(), BindingCheckError> {
    let name = || binding.name.clone();
    let kernarg_len = launch.kernarg.len();
    let word = usize::try_from(offset)
        .ok()
        .and_then(|start| launch.kernarg.get(start..start.checked_add(4)?))
        .ok_or_else(|| BindingCheckError::KernargOutside { name: name(), offset, kernarg_len })?;
    let end = u64::from(offset) + 4;
    for pointer in &launch.pointers {
        let pointer_offset = pointer.kernarg_offset;
        if u64::from(offset) < u64::from(pointer_offset) + 8 && u64::from(pointer_offset) < end {
            return Err(BindingCheckError::OverlapsPointer { name: name(), offset, pointer_offset });
        }
    }
    let bound = binding.kind.value_at(position).map_err(|error| BindingCheckError::Value { name: name(), error })?;
    let recorded = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
    if bound != recorded {
        return Err(BindingCheckError::KernargDisagrees { name: name(), position, bound, recorded });
    }
    Ok(())
}

fn check_grid_binding(position: u32, launch: &LaunchRecord, binding: &Binding) -> Result<(), BindingCheckError> {
    let name = || binding.name.clone();
    let BindingKind::GridAxis { axis, divisor, max_workgroups, .. } = binding.kind else {
        return Ok(());
    };
    if axis > 2 {
        return Err(BindingCheckError::AxisOutOfRange { name: name(), axis });
    }
    if divisor == 0 {
        return Err(BindingCheckError::ZeroDivisor { name: name() });
    }
    let axis = usize::from(axis);
    let recorded_workgroups = launch.geometry.grid_workgroups()[axis];
    if max_workgroups < recorded_workgroups {
        return Err(BindingCheckError::MaxBelowRecorded { name: name(), max_workgroups, recorded_workgroups });
    }
    let bound = binding.kind.value_at(position).map_err(|error| BindingCheckError::Value { name: name(), error })?;
    let bound_work_items = u64::from(bound) * u64::from(launch.geometry.workgroup_work_items[axis]);
    let recorded_work_items = launch.geometry.grid_work_items[axis];
    if bound_work_items != u64::from(recorded_work_items) {
        return Err(BindingCheckError::GridDisagrees { name: name(), position, bound_work_items, recorded_work_items });
    }
    Ok(())
}

fn compute_identity(launches: &[LaunchRecord], external: &[ExternalCount]) -> TapeIdentity {
    let unique: BTreeSet<&ArtifactId> = launches.iter().map(|l| &l.artifact).collect();
    // PANIC: launches and distinct names are bounded by TAPE_LAUNCHES_MAX, the external sum by
    // EXTERNAL_LAUNCHES_MAX; both far below u32::MAX.
    let count = |n: usize| u32::try_from(n).expect("INVARIANT: counts are bounded below u32::MAX");
    let external_launches = external.iter().map(|e| u64::from(e.count)).sum::<u64>();
    TapeIdentity {
        dispatch_count: count(launches.len()),
        unique_kernels: count(unique.len()),
        external_launches: u32::try_from(external_launches).expect("INVARIANT: bounded by EXTERNAL_LAUNCHES_MAX"),
        sequence_hash: hash::sequence_hash(launches),
    }
}
