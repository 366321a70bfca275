//! The PM4 encoder of the lowering: the per-dispatch shape (`docs/ARCHITECTURE.md`, "Per-dispatch
//! PM4 shape") emitted directly from kernel descriptors. [`crate::lower::lower_pm4`] drives it for
//! a tape; the soft device's tests and IB bundles drive it by hand, so that mutating one packet of
//! a correct IB shows which check catches it. Layout of the IB:
//!
//! 1. entry: `ACQUIRE_MEM` with [`policy::system_acquire_gcr`] (system scope, GL2 included);
//! 2. per dispatch, when `wait_before`: `EVENT_WRITE CS_PARTIAL_FLUSH` and `ACQUIRE_MEM` with
//!    [`pm4_encoding::policy::consumer_acquire_gcr`]; then `SET_SH_REG` `COMPUTE_PGM_LO/HI`, `RSRC1/RSRC2`
//!    (RSRC2 = the descriptor's with `LDS_SIZE` = static + dynamic LDS in encode granules),
//!    `RSRC3`, `NUM_THREAD_X/Y/Z`, `USER_DATA_0..` (`RSRC2.USER_SGPR` registers: the
//!    private-segment buffer as 4 zero dwords where the family has absolute flat scratch (gfx10.3)
//!    and the descriptor enables it, the kernarg pointer at the
//!    layout's SGPRs, 0 elsewhere), and `DISPATCH_DIRECT` with the family's dimension semantics
//!    ([`dims_in_work_items`]);
//! 3. terminal: `EVENT_WRITE CS_PARTIAL_FLUSH` and `ACQUIRE_MEM` with [`policy::system_acquire_gcr`]
//!    (write-back included).

use kernarg_abi::sgpr::UserSgpr;
use kernarg_abi::{KernelDescriptor, UserSgprLayout};
use pm4_encoding::packet::{AcquireMem, DispatchDirect, DispatchInitiator, EventWrite, PacketError, SetShReg};
use pm4_encoding::regs::{self, LdsSizeTooLarge};
use pm4_encoding::{CapacityError, Family, Writer};

use hal::KernelSlot;
use pm4_encoding::policy::{self, dims_in_work_items};

/// One dispatch of a hand-built IB.
#[derive(Clone, Copy, Debug)]
pub struct IbDispatch<'a> {
    /// Entry VA (256-byte aligned): `COMPUTE_PGM_LO/HI`.
    pub entry_va: u64,
    /// The kernel descriptor: RSRC1/2/3, user SGPRs, wave size, static LDS.
    pub descriptor: &'a KernelDescriptor,
    /// VA of the kernarg segment.
    pub kernarg_va: u64,
    /// Grid in work-items.
    pub grid_work_items: [u32; 3],
    /// Work-group size.
    pub workgroup_work_items: [u16; 3],
    /// Dynamic LDS bytes.
    pub dynamic_lds_bytes: u32,
    /// Emit a wait and a consumer acquire before this dispatch.
    pub wait_before: bool,
}

impl<'a> IbDispatch<'a> {
    /// A dispatch of a loaded kernel.
    #[must_use]
    pub fn from_slot(
        slot: &'a KernelSlot,
        kernarg_va: u64,
        grid_work_items: [u32; 3],
        workgroup_work_items: [u16; 3],
        dynamic_lds_bytes: u32,
        wait_before: bool,
    ) -> Self {
        Self {
            entry_va: slot.loaded.entry_va,
            descriptor: &slot.kernel.descriptor,
            kernarg_va,
            grid_work_items,
            workgroup_work_items,
            dynamic_lds_bytes,
            wait_before,
        }
    }
}

/// Why an IB could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IbBuildError {
    /// The output buffer is too small.
    #[error(transparent)]
    Capacity(#[from] CapacityError),
    /// The descriptor enables a user-SGPR block the builder cannot fill.
    #[error(
        "dispatch {index}: the descriptor enables the {block} user SGPRs, which a PM4 dispatch here cannot provide"
    )]
    UnsupportedUserSgpr {
        /// Dispatch index.
        index: usize,
        /// The block.
        block: UserSgpr,
    },
    /// `RSRC2.USER_SGPR` is below the layout's total or above the 16 user-data registers.
    #[error(
        "dispatch {index}: RSRC2.USER_SGPR {user_sgpr} does not hold the {layout_total} SGPRs the layout needs within 16"
    )]
    UserSgprCount {
        /// Dispatch index.
        index: usize,
        /// RSRC2 `USER_SGPR`.
        user_sgpr: u8,
        /// Layout total.
        layout_total: u8,
    },
    /// Static plus dynamic LDS does not fit `LDS_SIZE`.
    #[error("dispatch {index}: {source}")]
    Lds {
        /// Dispatch index.
        index: usize,
        /// Why.
        source: LdsSizeTooLarge,
    },
    /// A zero dimension, a work-group size `NUM_THREAD_FULL` cannot hold, or an entry that is not
    /// 256-byte aligned.
    #[error("dispatch {index}: grid {grid:?} / work-group {workgroup:?} / entry {entry_va:#x} cannot be encoded")]
    Geometry {
        /// Dispatch index.
        index: usize,
        /// Grid.
        grid: [u32; 3],
        /// Work-group.
        workgroup: [u16; 3],
        /// Entry VA.
        entry_va: u64,
    },
    /// A packet constructor refused.
    #[error(transparent)]
    Packet(#[from] PacketError),
}

/// Emits the IB for `dispatches` on `family` into `out`; returns its length in dwords.
///
/// # Errors
/// [`IbBuildError`] for a dispatch that cannot be encoded or an `out` that is too small.
pub fn build(family: Family, dispatches: &[IbDispatch<'_>], out: &mut [u32]) -> Result<usize, IbBuildError> {
    let mut w = Writer::new(out);
    w.emit(&AcquireMem::full_range(policy::system_acquire_gcr(family)))?;
    for (index, d) in dispatches.iter().enumerate() {
        if d.wait_before {
            w.emit(&EventWrite::cs_partial_flush())?;
            w.emit(&AcquireMem::full_range(policy::consumer_acquire_gcr(family)))?;
        }
        emit_dispatch(family, index, d, &mut w)?;
    }
    w.emit(&EventWrite::cs_partial_flush())?;
    w.emit(&AcquireMem::full_range(policy::system_acquire_gcr(family)))?;
    Ok(w.finish())
}

fn emit_dispatch(family: Family, index: usize, d: &IbDispatch<'_>, w: &mut Writer<'_>) -> Result<(), IbBuildError> {
    let compute = &family.facts().compute;
    let (grid, workgroup) = (d.grid_work_items, d.workgroup_work_items);
    let geometry = IbBuildError::Geometry { index, grid, workgroup, entry_va: d.entry_va };
    if !d.entry_va.is_multiple_of(256) || grid.contains(&0) || workgroup.contains(&0) {
        return Err(geometry);
    }
    let pgm_hi = u32::try_from(d.entry_va >> 40).map_err(|_| geometry)?;
    // CAST: PGM_LO holds entry bits [39:8], the truncation is the encoding (reference §2).
    #[allow(clippy::cast_possible_truncation)]
    let pgm_lo = (d.entry_va >> 8) as u32;
    w.emit(&SetShReg::new(compute.pgm_lo.dword, &[pgm_lo, pgm_hi])?)?;
    let lds_bytes = d.descriptor.group_segment_fixed_size().saturating_add(d.dynamic_lds_bytes);
    let lds_size = regs::lds_size_field(family, lds_bytes).map_err(|source| IbBuildError::Lds { index, source })?;
    // PANIC: `lds_size_field` bounded the value by the field's maximum, so it fits.
    let rsrc2 = regs::rsrc2_with_lds_size(family, d.descriptor.compute_pgm_rsrc2(), lds_size).expect("LDS_SIZE fits");
    w.emit(&SetShReg::new(compute.pgm_rsrc1.dword, &[d.descriptor.compute_pgm_rsrc1(), rsrc2])?)?;
    w.emit(&SetShReg::new(compute.pgm_rsrc3.dword, &[d.descriptor.compute_pgm_rsrc3()])?)?;
    let partial: [u32; 3] = core::array::from_fn(|a| grid[a] % u32::from(workgroup[a]));
    let mut num_thread = [0u32; 3];
    for axis in 0..3 {
        num_thread[axis] =
            regs::num_thread_word(family, axis, workgroup[axis].into(), partial[axis]).ok_or(geometry)?;
    }
    w.emit(&SetShReg::new(compute.num_thread[0].dword, &num_thread)?)?;
    let user_data = user_data(family, index, d)?;
    if !user_data.is_empty() {
        w.emit(&SetShReg::new(compute.user_data[0].dword, &user_data)?)?;
    }
    let items = dims_in_work_items(family);
    let dims: [u32; 3] =
        core::array::from_fn(|a| if items { grid[a] } else { grid[a].div_ceil(u32::from(workgroup[a])) });
    let wave32 = d.descriptor.kernel_code_properties().enable_wavefront_size32() != 0;
    let initiator = DispatchInitiator::typical(wave32)
        .with_use_thread_dimensions(u32::from(items))
        .with_partial_tg_en(u32::from(partial.iter().any(|&p| p != 0)));
    w.emit(&DispatchDirect::new(dims[0], dims[1], dims[2], initiator))?;
    Ok(())
}

/// `COMPUTE_USER_DATA_0..USER_SGPR` for `d`.
fn user_data(family: Family, index: usize, d: &IbDispatch<'_>) -> Result<Vec<u32>, IbBuildError> {
    let layout = UserSgprLayout::new(d.descriptor, family);
    let user_sgpr = layout.rsrc2_user_sgpr();
    // Reference §6: at most 16 user SGPRs are initialised from COMPUTE_USER_DATA_0..15.
    if user_sgpr < layout.total() || user_sgpr > 16 {
        return Err(IbBuildError::UserSgprCount { index, user_sgpr, layout_total: layout.total() });
    }
    let mut values = vec![0u32; usize::from(user_sgpr)];
    for block in layout.blocks() {
        let first = usize::from(block.first);
        match block.kind {
            // The V# of a scratch-less kernel: zeros, on a family with absolute flat scratch (the
            // verdict refuses the block elsewhere, from the same column).
            UserSgpr::PrivateSegmentBuffer if family.facts().private_segment_buffer() => {}
            UserSgpr::KernargSegmentPtr => {
                // CAST: split of a 64-bit pointer into its dwords.
                #[allow(clippy::cast_possible_truncation)]
                let (lo, hi) = (d.kernarg_va as u32, (d.kernarg_va >> 32) as u32);
                values[first] = lo;
                values[first + 1] = hi;
            }
            kind => return Err(IbBuildError::UnsupportedUserSgpr { index, block: kind }),
        }
    }
    Ok(values)
}
