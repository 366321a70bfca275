//! Writing the bindings' values for a position into the retained kernargs and the IB.

use tape_core::binding::{BindingError, BindingKind, DimUnit};

use super::{PatchSite, PatchTarget};
use hal::{Device, TransferError};

/// Why the patch sites were not applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// A binding has no value at the position.
    #[error("binding {binding}: {source}")]
    Binding {
        /// Index of the binding.
        binding: usize,
        /// Why.
        source: BindingError,
    },
    /// Work-groups times the work-group size does not fit a `DIM` dword.
    #[error("binding {binding}: {workgroups} work-groups of {workgroup_work_items} work-items overflow DIM")]
    DimOverflow {
        /// Index of the binding.
        binding: usize,
        /// The bound grid.
        workgroups: u32,
        /// The work-group size on the axis.
        workgroup_work_items: u32,
    },
    /// The IB dword's address overflows.
    #[error("binding {binding}: IB dword {ib_dword} is outside the address space")]
    IbAddress {
        /// Index of the binding.
        binding: usize,
        /// The dword.
        ib_dword: usize,
    },
    /// The device refused the write.
    #[error("binding {binding}: {source}")]
    Transfer {
        /// Index of the binding.
        binding: usize,
        /// Why.
        source: TransferError,
    },
}

/// The byte address `site` writes to (its IB dword's address for a `DIM` site in the IB at
/// `ib_va`); it does not depend on the position.
///
/// # Errors
/// [`PatchError::IbAddress`] when the address overflows.
pub fn site_address(ib_va: u64, site: &PatchSite) -> Result<u64, PatchError> {
    match site.target {
        PatchTarget::KernargU32 { va } => Ok(va),
        PatchTarget::DispatchDim { ib_dword, .. } => u64::try_from(ib_dword)
            .ok()
            .and_then(|d| d.checked_mul(4))
            .and_then(|off| ib_va.checked_add(off))
            .ok_or(PatchError::IbAddress { binding: site.binding, ib_dword }),
    }
}

/// The little-endian word `site` gets at `position` (a `DIM` in the family's unit).
///
/// # Errors
/// [`PatchError::Binding`] when the binding has no value there, [`PatchError::DimOverflow`].
pub fn site_value(site: &PatchSite, position: u32) -> Result<u32, PatchError> {
    binding_value(site.binding, &site.kind, site.target.unit(), position)
}

/// Binding `binding`'s value at `position` written in `unit`: tape-core's evaluation
/// ([`BindingKind::value_in`]), its refusals as patch errors. A grid in work-items that overflows
/// is [`PatchError::DimOverflow`], apart from the other refusals: a prepared plan stays usable
/// after a binding without a value at the position, and is poisoned by an overflow.
pub(crate) fn binding_value(
    binding: usize,
    kind: &BindingKind,
    unit: DimUnit,
    position: u32,
) -> Result<u32, PatchError> {
    kind.value_in(position, unit).map_err(|source| match source {
        BindingError::WorkItemsOverflow { workgroups, workgroup_work_items, .. } => {
            PatchError::DimOverflow { binding, workgroups, workgroup_work_items }
        }
        source => PatchError::Binding { binding, source },
    })
}

/// The address and the little-endian word `site` gets at `position`.
fn site_write(ib_va: u64, site: &PatchSite, position: u32) -> Result<(u64, u32), PatchError> {
    let value = site_value(site, position)?;
    Ok((site_address(ib_va, site)?, value))
}

/// Writes every site's value at `position`: kernarg words into device memory, `DIM` dwords
/// into the IB at `ib_va` (in the family's unit, recorded in the site). Every value is computed
/// and checked before the first write, so a binding without a value at `position` leaves memory
/// untouched. Work: two passes over `sites`; no heap allocation.
///
/// A grid binding's value is a whole number of work-groups, and the tape checked that the recorded
/// grid is too, so `NUM_THREAD_PARTIAL` and `PARTIAL_TG_EN` (0) stay right after a `DIM` patch.
///
/// # Errors
/// [`PatchError`] for a binding without a value at `position`, a `DIM` that overflows, or a
/// write the device refuses (then earlier sites have been written).
pub fn apply_patch_sites<D: Device + ?Sized>(
    device: &mut D,
    ib_va: u64,
    sites: &[PatchSite],
    position: u32,
) -> Result<(), PatchError> {
    for site in sites {
        site_write(ib_va, site, position)?;
    }
    for site in sites {
        let (va, word) = site_write(ib_va, site, position)?;
        device
            .write(va, &word.to_le_bytes())
            .map_err(|source| PatchError::Transfer { binding: site.binding, source })?;
    }
    Ok(())
}
