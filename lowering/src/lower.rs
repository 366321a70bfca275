//! Lowering a recorded [`Tape`] into what the retained route submits (`docs/ARCHITECTURE.md`,
//! "Data flow of one token").
//!
//! - [`lower_pm4`]: one PM4 indirect buffer for a GPU family, with the per-dispatch shape of
//!   [`ib_builder`] (entry acquire; per launch PGM, RSRC1/2/3, NUM_THREAD, USER_DATA,
//!   DISPATCH_DIRECT; a wait plus a consumer acquire exactly before each of tape-core's
//!   [boundaries](deps::boundaries); terminal wait plus system acquire), and the [`PatchSite`]s of the tape's
//!   bindings.
//! - [`verify`]: decodes a lowered IB and checks it against the tape and the kernel descriptors,
//!   dispatch by dispatch, re-deriving every expected value without the builder.
//! - [`lower_aql`]: the same launches as one AQL KERNEL_DISPATCH packet each.
//! - [`apply_patch_sites`]: writes the bindings' values for a position into the retained kernargs
//!   and the IB's dispatch dimensions.
//!
//! # Kernels and kernargs
//! Every launch names its code by [`ArtifactId`] (code-object digest and kernel name); the caller
//! resolves it to a loaded [`KernelSlot`] ([`slot_by_artifact`] does it for a device's
//! [`KernelTable`]). `kernarg_vas[i]` is the VA at which launch `i`'s recorded kernarg blob has
//! been placed in device memory (the retained kernarg buffers); lowering does not copy blobs.
//!
//! # Grid bindings and hidden geometry (fail closed)
//! A [`BindingKind::GridAxis`] binding changes the grid of its launch; a kernel whose kernarg
//! layout has `hidden_block_count_{axis}` or `hidden_remainder_{axis}` reads that grid from its
//! kernargs too. A grid binding is whole work-groups, so the remainder stays 0 and only the block
//! counts move: [`lower_pm4`] accepts the grid binding when every `hidden_block_count_{axis}`
//! argument of the launch's layout is bound by a [`BindingKind::KernargGridWorkgroups`] on that
//! axis (which tape-core ties to the grid binding's parameters) and every recorded
//! `hidden_remainder_{axis}` is 0. Otherwise patching only the dispatch dimensions would hand the
//! kernel a grid that disagrees with its hidden arguments, so the tape is refused with
//! [`LowerError::GridBindingWithHiddenGeometry`]. A `KernargGridWorkgroups` binding is patched
//! like any kernarg word ([`PatchTarget::KernargU32`]), with the grid's value in work-groups.

use kernarg_abi::layout::LayoutError;
use kernarg_abi::metadata::ValueKind;
use pm4_encoding::packet::Packet;
use pm4_encoding::{Decoder, Family};
use tape_core::ArtifactId;
use tape_core::binding::{BindingError, BindingKind, Rule};
use tape_core::deps::{self, DepsError};
use tape_core::tape::Tape;

use hal::{KernelSlot, KernelTable};
use pm4_encoding::policy::dims_in_work_items;

use crate::ib_builder::{self, IbBuildError, IbDispatch};

mod aql;
mod patch;
mod verify;

pub use aql::lower_aql;
pub(crate) use patch::binding_value;
pub use patch::{PatchError, apply_patch_sites, site_address, site_value};
pub use verify::{VerifyError, verify};

/// IB dwords reserved per dispatch: wait (2 + 8), PGM (4), RSRC1/2 (4), RSRC3 (3), NUM_THREAD
/// (5), USER_DATA (2 + 16), DISPATCH_DIRECT (5) = 49, rounded up.
const DISPATCH_DWORDS_MAX: usize = 64;
/// IB dwords of the entry acquire (8) and the terminal wait and acquire (2 + 8), rounded up.
const FRAME_DWORDS: usize = 32;

/// The unit `DISPATCH_DIRECT`'s `DIM_*` count in on one family (work-groups, or work-items on a
/// family that sets `USE_THREAD_DIMENSIONS`): tape-core's, which evaluates a binding in it.
pub use tape_core::binding::DimUnit;

/// Where a binding's value goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchTarget {
    /// A little-endian `u32` in device memory: the bound kernarg word of the retained blob.
    KernargU32 {
        /// Byte address: the launch's kernarg VA plus the binding's offset.
        va: u64,
    },
    /// A `DIM_*` dword of the launch's `DISPATCH_DIRECT` in the IB.
    DispatchDim {
        /// Dword index in the IB.
        ib_dword: usize,
        /// What the dword counts on this family.
        unit: DimUnit,
    },
}

impl PatchTarget {
    /// The unit a grid value is written in here: the `DIM`'s, or work-groups for a kernarg word
    /// (tape-core writes a kernarg binding's word as bound whatever unit it is given).
    #[must_use]
    pub fn unit(&self) -> DimUnit {
        match *self {
            PatchTarget::KernargU32 { .. } => DimUnit::Workgroups,
            PatchTarget::DispatchDim { unit, .. } => unit,
        }
    }
}

/// One place a binding's value is written at replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PatchSite {
    /// Index of the binding in [`Tape::bindings`].
    pub binding: usize,
    /// The owning launch.
    pub launch: usize,
    /// How the value follows the position.
    pub kind: BindingKind,
    /// Where it goes.
    pub target: PatchTarget,
}

impl PatchSite {
    /// The rule of the word the site holds: its binding's, in the target's unit (tape-core's
    /// [`BindingKind::rule`]); its text is the rule an IB bundle gives for the site.
    ///
    /// # Errors
    /// [`BindingError::Malformed`] for a malformed grid binding (a checked tape has none).
    pub fn rule(&self) -> Result<Rule, BindingError> {
        self.kind.rule(self.target.unit())
    }
}

/// A tape lowered into one PM4 indirect buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoweredIb {
    /// The family the IB is encoded for.
    pub family: Family,
    /// The IB.
    pub words: Vec<u32>,
    /// Dword offset of each launch's `DISPATCH_DIRECT` header, in launch order.
    pub dispatch_offsets: Vec<usize>,
    /// Launch indices with a wait before them (tape-core's [boundaries](deps::boundaries)).
    pub boundaries: Vec<usize>,
    /// One site per binding of the tape, in binding order.
    pub patch_sites: Vec<PatchSite>,
}

/// Why a tape was not lowered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// `kernarg_vas` does not hold one VA per launch.
    #[error("{vas} kernarg VAs for {launches} launches")]
    KernargVaCount {
        /// Launches of the tape.
        launches: usize,
        /// VAs given.
        vas: usize,
    },
    /// No loaded kernel for a launch's artifact.
    #[error("launch {launch}: no loaded kernel `{}` for its code-object digest", artifact.symbol)]
    UnknownKernel {
        /// The launch.
        launch: usize,
        /// Its artifact.
        artifact: ArtifactId,
    },
    /// The recorded kernarg blob is not the loaded kernel's kernarg segment size.
    #[error("launch {launch}: kernarg blob of {found} bytes, the kernel's segment is {expected}")]
    KernargSize {
        /// The launch.
        launch: usize,
        /// `kernarg_segment_size` of the loaded kernel.
        expected: u32,
        /// Bytes recorded.
        found: usize,
    },
    /// The recorded wave size is not the loaded kernel's.
    #[error("launch {launch}: recorded wave size {recorded}, the kernel's is {kernel}")]
    WaveSize {
        /// The launch.
        launch: usize,
        /// Recorded.
        recorded: u8,
        /// `wavefront_size` of the loaded kernel.
        kernel: u32,
    },
    /// The dependency derivation refused the tape.
    #[error(transparent)]
    Deps(#[from] DepsError),
    /// The kernel's kernarg layout could not be read.
    #[error("launch {launch}: {source}")]
    Layout {
        /// The launch.
        launch: usize,
        /// Why.
        source: LayoutError,
    },
    /// A grid binding on a kernel that also reads its grid from a hidden kernarg that no binding
    /// keeps in step with it: a `hidden_block_count` without a grid-workgroups binding, or a
    /// recorded `hidden_remainder` that is not 0 (see the module documentation).
    #[error(
        "binding `{binding}` binds axis {axis} of launch {launch}, whose kernel reads `{arg}` from its kernargs unbound"
    )]
    GridBindingWithHiddenGeometry {
        /// The binding's name.
        binding: String,
        /// The launch.
        launch: usize,
        /// The bound axis.
        axis: u8,
        /// The hidden argument that would go stale.
        arg: &'static str,
    },
    /// The IB builder refused a dispatch.
    #[error(transparent)]
    Build(#[from] IbBuildError),
}

/// A lookup of loaded kernels by artifact over `objects`: the code object whose digest is the
/// artifact's, and its kernel of the artifact's name.
pub fn slot_by_artifact<'a>(objects: &'a KernelTable) -> impl Fn(&ArtifactId) -> Option<&'a KernelSlot> + 'a {
    move |artifact: &ArtifactId| -> Option<&'a KernelSlot> {
        objects
            .objects()
            .iter()
            .filter(|o| o.sha256 == artifact.code_object_sha256)
            .find_map(|o| o.kernel(&artifact.symbol))
            .and_then(|k| objects.by_kd(k.kd_va))
    }
}

/// The slot of every launch, checked against the recording (kernarg size, wave size).
pub(crate) fn resolve_slots<'k>(
    tape: &Tape,
    kernels: &dyn Fn(&ArtifactId) -> Option<&'k KernelSlot>,
    kernarg_vas: &[u64],
) -> Result<Vec<&'k KernelSlot>, LowerError> {
    let launches = tape.launches();
    if kernarg_vas.len() != launches.len() {
        return Err(LowerError::KernargVaCount { launches: launches.len(), vas: kernarg_vas.len() });
    }
    let mut slots = Vec::with_capacity(launches.len());
    for (launch, record) in launches.iter().enumerate() {
        let slot = kernels(&record.artifact)
            .ok_or_else(|| LowerError::UnknownKernel { launch, artifact: record.artifact.clone() })?;
        let expected = slot.loaded.kernarg_segment_size;
        if usize::try_from(expected).ok() != Some(record.kernarg.len()) {
            return Err(LowerError::KernargSize { launch, expected, found: record.kernarg.len() });
        }
        if u32::from(record.wave_size) != slot.loaded.wavefront_size {
            return Err(LowerError::WaveSize {
                launch,
                recorded: record.wave_size,
                kernel: slot.loaded.wavefront_size,
            });
        }
        slots.push(slot);
    }
    Ok(slots)
}

/// Lowers `tape` into one PM4 IB for `family`: one dispatch per launch, a wait exactly before each
/// of tape-core's [boundaries](deps::boundaries), launch `i`'s kernarg pointer = `kernarg_vas[i]`.
///
/// # Errors
/// [`LowerError`] for a missing kernel, a kernarg or wave size that disagrees with it, a grid
/// binding on a kernel with hidden geometry arguments that no binding follows (see the module
/// documentation), or a dispatch the builder cannot encode.
pub fn lower_pm4<'k>(
    tape: &Tape,
    family: Family,
    kernels: &dyn Fn(&ArtifactId) -> Option<&'k KernelSlot>,
    kernarg_vas: &[u64],
) -> Result<LoweredIb, LowerError> {
    let slots = resolve_slots(tape, kernels, kernarg_vas)?;
    refuse_grid_bindings_with_hidden_geometry(tape, &slots)?;
    let boundaries = deps::boundaries(tape.launches())?;
    let dispatches: Vec<IbDispatch<'_>> = tape
        .launches()
        .iter()
        .zip(&slots)
        .zip(kernarg_vas)
        .enumerate()
        .map(|(i, ((record, slot), &kernarg_va))| {
            let g = record.geometry;
            let wait = boundaries.binary_search(&i).is_ok();
            IbDispatch::from_slot(
                slot,
                kernarg_va,
                g.grid_work_items,
                g.workgroup_work_items,
                record.lds.dynamic_bytes,
                wait,
            )
        })
        .collect();
    let mut words = vec![0u32; FRAME_DWORDS + DISPATCH_DWORDS_MAX * dispatches.len()];
    let len = ib_builder::build(family, &dispatches, &mut words)?;
    words.truncate(len);
    let dispatch_offsets: Vec<usize> = Decoder::new(&words)
        .filter_map(|d| d.ok().filter(|d| matches!(d.packet, Packet::DispatchDirect(_))).map(|d| d.offset))
        .collect();
    // INVARIANT: the builder emits exactly one DISPATCH_DIRECT per dispatch and decodable words.
    assert_eq!(dispatch_offsets.len(), dispatches.len(), "one DISPATCH_DIRECT per launch");
    let patch_sites = patch_sites(tape, family, kernarg_vas, &dispatch_offsets);
    Ok(LoweredIb { family, words, dispatch_offsets, boundaries, patch_sites })
}

/// The bindings the kernarg ABI implies for a tape's grid bindings: for every
/// [`BindingKind::GridAxis`] binding, every `hidden_block_count_{axis}` argument of the launch's
/// layout that no [`BindingKind::KernargGridWorkgroups`] binding covers yet gets one with the grid
/// binding's parameters — the argument is, by the ABI, the grid in work-groups — provided the
/// recorded word equals the grid binding's value at the tape's position. Calibration cannot
/// discover such a word from samples whose grids happen to be equal; the layout names it.
/// Returns the tape's bindings plus the new ones (named as tape-core's calibration names them).
/// A word that does not match is left unbound, and [`lower_pm4`] refuses the grid binding.
///
/// # Errors
/// [`LowerError`] for a launch whose kernel is not loaded or whose layout does not read.
pub fn with_hidden_grid_bindings<'k>(
    tape: &Tape,
    kernels: &dyn Fn(&ArtifactId) -> Option<&'k KernelSlot>,
) -> Result<Vec<tape_core::binding::Binding>, LowerError> {
    let mut bindings = tape.bindings().to_vec();
    for binding in tape.bindings() {
        let BindingKind::GridAxis { axis, addend, divisor, max_workgroups } = binding.kind else { continue };
        let launch = usize::try_from(binding.launch).unwrap_or(usize::MAX);
        let Some(record) = tape.launches().get(launch) else { continue };
        let slot = kernels(&record.artifact)
            .ok_or_else(|| LowerError::UnknownKernel { launch, artifact: record.artifact.clone() })?;
        let layout = slot.kernel.kernarg_layout().map_err(|source| LowerError::Layout { launch, source })?;
        let [(block_count, _), _] = hidden_geometry_args(axis);
        let Ok(value) = binding.kind.value_at(tape.position()) else { continue };
        for arg in layout.args().iter().filter(|a| a.kind == block_count && a.size == 4) {
            let covered =
                bindings.iter().any(|b| b.launch == binding.launch && b.kind.kernarg_offset() == Some(arg.offset));
            let at = usize::try_from(arg.offset).unwrap_or(usize::MAX);
            let recorded = record.kernarg.get(at..at.saturating_add(4)).and_then(|b| <[u8; 4]>::try_from(b).ok());
            if covered || recorded != Some(value.to_le_bytes()) {
                continue;
            }
            bindings.push(tape_core::binding::Binding {
                name: tape_core::calibrate::kernarg_grid_name(launch, arg.offset, axis),
                launch: binding.launch,
                kind: BindingKind::KernargGridWorkgroups { offset: arg.offset, axis, addend, divisor, max_workgroups },
            });
        }
    }
    Ok(bindings)
}

/// The hidden arguments that carry the grid on `axis`: the block count, then the remainder.
fn hidden_geometry_args(axis: u8) -> [(ValueKind, &'static str); 2] {
    match axis {
        0 => [
            (ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
            (ValueKind::HiddenRemainderX, "hidden_remainder_x"),
        ],
        1 => [
            (ValueKind::HiddenBlockCountY, "hidden_block_count_y"),
            (ValueKind::HiddenRemainderY, "hidden_remainder_y"),
        ],
        _ => [
            (ValueKind::HiddenBlockCountZ, "hidden_block_count_z"),
            (ValueKind::HiddenRemainderZ, "hidden_remainder_z"),
        ],
    }
}

/// Refuses a grid binding whose launch's hidden geometry on the axis would go stale: a block
/// count without a [`BindingKind::KernargGridWorkgroups`] at its offset on the axis, or a recorded
/// remainder other than 0.
fn refuse_grid_bindings_with_hidden_geometry(tape: &Tape, slots: &[&KernelSlot]) -> Result<(), LowerError> {
    for binding in tape.bindings() {
        let BindingKind::GridAxis { axis, .. } = binding.kind else { continue };
        // INVARIANT: the tape checked that the owning launch exists.
        let launch = usize::try_from(binding.launch).expect("launch index fits usize");
        let layout = slots[launch].kernel.kernarg_layout().map_err(|source| LowerError::Layout { launch, source })?;
        let kernarg = &tape.launches()[launch].kernarg;
        let [(block_count, block_count_name), (remainder, remainder_name)] = hidden_geometry_args(axis);
        let refuse =
            |arg| LowerError::GridBindingWithHiddenGeometry { binding: binding.name.clone(), launch, axis, arg };
        for arg in layout.args() {
            if arg.kind == block_count {
                let covered = tape.bindings().iter().any(|b| {
                    b.launch == binding.launch
                        && matches!(b.kind, BindingKind::KernargGridWorkgroups { offset, axis: a, .. }
                            if offset == arg.offset && a == axis)
                });
                if !covered {
                    return Err(refuse(block_count_name));
                }
            } else if arg.kind == remainder {
                // The layout's arguments lie inside the segment, which resolve_slots checked is
                // the recorded blob; a missing range counts as not 0.
                let bytes = usize::try_from(arg.offset)
                    .ok()
                    .zip(usize::try_from(arg.size).ok())
                    .and_then(|(start, size)| kernarg.get(start..start.checked_add(size)?));
                if bytes.is_none_or(|bytes| bytes.iter().any(|&b| b != 0)) {
                    return Err(refuse(remainder_name));
                }
            }
        }
    }
    Ok(())
}

/// One site per binding: the kernarg word's byte address, or the dispatch's `DIM` dword in the
/// family's unit (`pm4_encoding`'s policy decides the unit, tape-core evaluates in it). The
/// verifier checks a lowered IB's sites against this same function's.
pub(crate) fn patch_sites(
    tape: &Tape,
    family: Family,
    kernarg_vas: &[u64],
    dispatch_offsets: &[usize],
) -> Vec<PatchSite> {
    let dims_in_work_items = dims_in_work_items(family);
    tape.bindings()
        .iter()
        .enumerate()
        .map(|(binding, b)| {
            // INVARIANT: the tape checked that the owning launch exists.
            let launch = usize::try_from(b.launch).expect("launch index fits usize");
            let target = match b.kind {
                BindingKind::KernargU32 { offset, .. }
                | BindingKind::KernargGridWorkgroups { offset, .. }
                | BindingKind::KernargU32Clamped { offset, .. } => {
                    PatchTarget::KernargU32 { va: kernarg_vas[launch] + u64::from(offset) }
                }
                BindingKind::GridAxis { axis, .. } => {
                    let axis = usize::from(axis);
                    let workgroup_work_items = tape.launches()[launch].geometry.workgroup_work_items[axis];
                    let unit = DimUnit::of_dispatch(dims_in_work_items, workgroup_work_items);
                    // DISPATCH_DIRECT: header, DIM_X, DIM_Y, DIM_Z, initiator (reference §4).
                    PatchTarget::DispatchDim { ib_dword: dispatch_offsets[launch] + 1 + axis, unit }
                }
            };
            PatchSite { binding, launch, kind: b.kind, target }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_geometry_args_name_their_axis() {
        for axis in 0..3u8 {
            for (kind, name) in hidden_geometry_args(axis) {
                assert_eq!(kind.as_str(), name);
                assert!(name.ends_with(["x", "y", "z"][usize::from(axis)]));
            }
        }
    }
}
