//! The SH register file and the translation of one `DISPATCH_DIRECT` into an executor
//! [`Dispatch`], with every register the dispatch reads checked against the kernel descriptor.
//!
//! Dimension semantics (a project policy, not a hardware limit): on gfx10.3 and gfx11
//! `DIM_X/Y/Z` count work-groups and `USE_THREAD_DIMENSIONS` must be 0; on gfx12 they count
//! work-items and `USE_THREAD_DIMENSIONS` must be 1. Reference §4 "DISPATCH_DIRECT": `DIM_*` are
//! thread groups "unless DISPATCH_INITIATOR.USE_THREAD_DIMENSIONS=1"; `docs/ARCHITECTURE.md` "Per-dispatch PM4 shape": gfx10.3/11
//! and gfx12 do not share one register recipe and each dispatch uses "the family's dimension
//! semantics". Either recipe on the wrong family is a fault, so a lowering that mixes them up
//! fails here. A partial last group needs `PARTIAL_TG_EN` and `NUM_THREAD_PARTIAL` = the partial
//! size on both recipes (gfx10.3/11: the last of `DIM` groups is partial; gfx12: `DIM` mod
//! `NUM_THREAD_FULL`).

use kernarg_abi::UserSgprLayout;
use pm4_encoding::Family;
use pm4_encoding::packet::DispatchDirect;
use pm4_encoding::regs::{self, RegisterInfo, SH_REG_BASE, SH_REG_END};

use super::fault::CpFaultKind;
use crate::exec::Dispatch;
use crate::loader::SoftKernels;
use crate::memory::SimMemory;
use hal::KernelSlot;

/// What writing one SH-window dword means, decided once per register file.
#[derive(Clone, Copy, Debug)]
enum Class {
    /// Not a register of the family.
    Unknown,
    /// Written by the queue's owner, never by an IB.
    QueueOwned(&'static str),
    /// A register the soft device does not model.
    Unmodelled(&'static str),
    /// A modelled register or a user-data register.
    Accepted,
}

/// The persistent SH register state of one command processor.
#[derive(Clone, Debug)]
pub(super) struct ShRegisters {
    family: Family,
    /// Indexed by `dword - SH_REG_BASE`; `None` = never written.
    values: Vec<Option<u32>>,
    /// Indexed like `values`: what a write of the dword means on this family.
    classes: Vec<Class>,
}

impl ShRegisters {
    /// Registers a dispatch reads and the user-data window are accepted, the queue-owned ones and
    /// every other register of the family refused (the family table's `ComputeRegisters`).
    pub(super) fn new(family: Family) -> Self {
        let compute = &family.facts().compute;
        let modelled = [compute.pgm_lo, compute.pgm_hi, compute.pgm_rsrc1, compute.pgm_rsrc2, compute.pgm_rsrc3];
        let accepted =
            |dword: u32| modelled.iter().chain(&compute.num_thread).chain(&compute.user_data).any(|r| r.dword == dword);
        let classes = (SH_REG_BASE..SH_REG_END)
            .map(|dword| match regs::lookup(family, dword) {
                None => Class::Unknown,
                Some(info) if compute.queue_owned.iter().any(|r| r.dword == dword) => Class::QueueOwned(info.name),
                Some(_) if accepted(dword) => Class::Accepted,
                Some(info) => Class::Unmodelled(info.name),
            })
            .collect::<Vec<_>>();
        Self { family, values: vec![None; classes.len()], classes }
    }

    /// One `SET_SH_REG` value.
    pub(super) fn write(&mut self, dword: u32, value: u32) -> Result<(), CpFaultKind> {
        let family = self.family;
        let class = dword.checked_sub(SH_REG_BASE).and_then(|i| self.classes.get(usize::try_from(i).ok()?));
        match class.copied().unwrap_or(Class::Unknown) {
            Class::Unknown => Err(CpFaultKind::UnknownRegister { family, dword }),
            Class::QueueOwned(name) => Err(CpFaultKind::QueueOwnedRegister { name, dword }),
            Class::Unmodelled(name) => Err(CpFaultKind::UnmodelledRegister { name, dword }),
            Class::Accepted => {
                // INVARIANT: a classified dword lies inside the window.
                self.values[index(dword)] = Some(value);
                Ok(())
            }
        }
    }

    /// Whether [`ShRegisters::write`] accepts each of the `n` dwords from `first`.
    pub(super) fn accepts(&self, first: u32, n: usize) -> bool {
        let Some(start) = first.checked_sub(SH_REG_BASE).and_then(|i| usize::try_from(i).ok()) else { return false };
        start
            .checked_add(n)
            .and_then(|end| self.classes.get(start..end))
            .is_some_and(|classes| classes.iter().all(|c| matches!(c, Class::Accepted)))
    }

    /// Writes `values` from `first`, dwords [`ShRegisters::accepts`] said it accepts: as many
    /// [`ShRegisters::write`]s, each `Ok`.
    pub(super) fn write_accepted(&mut self, first: u32, values: &[u32]) {
        let slots = self.values.get_mut(index(first)..).unwrap_or_default();
        for (slot, &value) in slots.iter_mut().zip(values) {
            *slot = Some(value);
        }
    }

    /// The value of `register`, one of the family's compute registers.
    fn get(&self, register: RegisterInfo) -> Result<u32, CpFaultKind> {
        self.values[index(register.dword)].ok_or_else(|| CpFaultKind::RegisterNotSet { name: register.name })
    }

    fn user_data(&self, n: u8) -> Result<u32, CpFaultKind> {
        let register = self.family.facts().compute.user_data[usize::from(n)];
        self.get(register)
    }
}

fn index(dword: u32) -> usize {
    // CAST: callers pass SH-window dwords, so the difference is below 0x400.
    usize::try_from(dword - SH_REG_BASE).unwrap_or(usize::MAX)
}

/// A dispatch the IB describes, checked, waiting for its group to run.
#[derive(Clone, Copy, Debug)]
pub(super) struct DecodedDispatch {
    pub(super) dispatch: Dispatch,
    /// `RSRC2.LDS_SIZE`, for the LDS fault.
    pub(super) lds_size: u32,
}

pub use pm4_encoding::policy::dims_in_work_items;

/// Checks the registers and `packet` against the kernel `PGM_LO/HI` name and builds the dispatch.
pub(super) fn decode(
    regs: &ShRegisters,
    memory: &SimMemory,
    objects: &SoftKernels,
    packet: &DispatchDirect,
) -> Result<DecodedDispatch, CpFaultKind> {
    let family = regs.family;
    let compute = &family.facts().compute;
    let (pgm_lo, pgm_hi) = (regs.get(compute.pgm_lo)?, regs.get(compute.pgm_hi)?);
    // Reference §2 usage notes: PGM_LO = entry >> 8, PGM_HI = entry >> 40.
    let entry_va = (u64::from(pgm_hi) << 40) | (u64::from(pgm_lo) << 8);
    let slot = objects.by_entry(entry_va).ok_or_else(|| CpFaultKind::UnknownEntry { pgm_lo, pgm_hi, entry_va })?;
    let kernel = || slot.loaded.name.clone();
    let descriptor = &slot.kernel.descriptor;
    let layout = UserSgprLayout::new(descriptor, family);
    check_equal(slot, "COMPUTE_PGM_RSRC1", regs.get(compute.pgm_rsrc1)?, descriptor.compute_pgm_rsrc1())?;
    check_equal(slot, "COMPUTE_PGM_RSRC3", regs.get(compute.pgm_rsrc3)?, descriptor.compute_pgm_rsrc3())?;
    let (user_sgpr, lds_size, rest) = regs::rsrc2_split(family, regs.get(compute.pgm_rsrc2)?);
    let (_, _, descriptor_rest) = regs::rsrc2_split(family, descriptor.compute_pgm_rsrc2());
    if user_sgpr < u32::from(layout.total()) || user_sgpr != u32::from(layout.rsrc2_user_sgpr()) {
        let (descriptor, layout_total) = (layout.rsrc2_user_sgpr(), layout.total());
        return Err(CpFaultKind::UserSgprCount { kernel: kernel(), found: user_sgpr, descriptor, layout_total });
    }
    check_equal(slot, "COMPUTE_PGM_RSRC2 (bits other than USER_SGPR and LDS_SIZE)", rest, descriptor_rest)?;
    let granule_bytes = regs::lds_encode_granule_bytes(family);
    let static_bytes = slot.loaded.group_segment_fixed_size;
    let lds_bytes = lds_size.saturating_mul(granule_bytes);
    let Some(dynamic_lds_bytes) = lds_bytes.checked_sub(static_bytes) else {
        return Err(CpFaultKind::LdsTooSmall {
            kernel: kernel(),
            lds_size,
            granule_bytes,
            static_bytes,
            dynamic_bytes: 0,
        });
    };
    let (grid_work_items, workgroup_work_items) = geometry(regs, slot, packet)?;
    let kernarg_va = kernarg_pointer(regs, memory, slot, &layout, user_sgpr)?;
    let dispatch = Dispatch {
        kernel_object: slot.loaded.kd_va,
        kernarg_va,
        grid_work_items,
        workgroup_work_items,
        dynamic_lds_bytes,
    };
    Ok(DecodedDispatch { dispatch, lds_size })
}

fn check_equal(slot: &KernelSlot, register: &'static str, found: u32, expected: u32) -> Result<(), CpFaultKind> {
    if found == expected {
        return Ok(());
    }
    Err(CpFaultKind::RsrcMismatch { kernel: slot.loaded.name.clone(), register, found, expected })
}

/// The kernarg pointer from the `COMPUTE_USER_DATA_n` pair the descriptor's layout names.
fn kernarg_pointer(
    regs: &ShRegisters,
    memory: &SimMemory,
    slot: &KernelSlot,
    layout: &UserSgprLayout,
    user_sgpr: u32,
) -> Result<u64, CpFaultKind> {
    let kernel = || slot.loaded.name.clone();
    let first = layout.kernarg_ptr_sgpr().ok_or_else(|| CpFaultKind::NoKernargPointer { kernel: kernel() })?;
    let last = first + 1;
    // The CP loads only USER_SGPR registers into SGPRs (reference §6 "Initial SGPR order").
    if u32::from(last) >= user_sgpr {
        return Err(CpFaultKind::KernargPointerNotLoaded { kernel: kernel(), first, last, user_sgpr });
    }
    let va = u64::from(regs.user_data(first)?) | (u64::from(regs.user_data(last)?) << 32);
    let bytes = slot.loaded.kernarg_segment_size;
    if memory.resolve_range(va, u64::from(bytes).max(1)).is_none() {
        return Err(CpFaultKind::KernargUnmapped { kernel: kernel(), user_data: first, va, bytes });
    }
    Ok(va)
}

/// Grid in work-items and work-group size from `NUM_THREAD_*`, the initiator and `DIM_*`.
fn geometry(
    regs: &ShRegisters,
    slot: &KernelSlot,
    packet: &DispatchDirect,
) -> Result<([u32; 3], [u16; 3]), CpFaultKind> {
    let family = regs.family;
    let kernel = || slot.loaded.name.clone();
    let init = packet.initiator;
    let raw = init.raw();
    let fault = |reason| CpFaultKind::Initiator { kernel: kernel(), initiator: raw, reason };
    let modelled = pm4_encoding::packet::DispatchInitiator::from_raw(0)
        .with_compute_shader_en(1)
        .with_partial_tg_en(1)
        .with_force_start_at_000(1)
        .with_use_thread_dimensions(1)
        .with_order_mode(1)
        .with_cs_w32_en(1)
        .raw();
    if raw & !modelled != 0 {
        return Err(fault("sets bits the soft device does not model"));
    }
    if init.compute_shader_en() == 0 {
        return Err(fault("COMPUTE_SHADER_EN is 0"));
    }
    if init.force_start_at_000() == 0 {
        return Err(fault("FORCE_START_AT_000 is 0 and COMPUTE_START_* are not modelled"));
    }
    let descriptor_w32 = slot.kernel.descriptor.kernel_code_properties().enable_wavefront_size32() != 0;
    if (init.cs_w32_en() != 0) != descriptor_w32 {
        return Err(CpFaultKind::WaveSize { kernel: kernel(), initiator: !descriptor_w32, descriptor: descriptor_w32 });
    }
    let (found, required) = (init.use_thread_dimensions() != 0, dims_in_work_items(family));
    if found != required {
        return Err(CpFaultKind::DimensionSemantics { kernel: kernel(), family, found, required });
    }
    let partial_tg_en = init.partial_tg_en() != 0;
    let dims = [packet.dim_x, packet.dim_y, packet.dim_z];
    let mut grid = [0u32; 3];
    let mut workgroup = [0u16; 3];
    let mut fulls = [0u32; 3];
    for (axis, register) in family.facts().compute.num_thread.into_iter().enumerate() {
        let word = regs.get(register)?;
        // PANIC: `axis` ranges over 0..3.
        let regs::NumThread { full, partial, other_bits: rest } =
            regs::num_thread_split(family, axis, word).expect("axis below 3");
        let axis_name = ['X', 'Y', 'Z'][axis];
        let bad = |reason| CpFaultKind::NumThread {
            kernel: kernel(),
            axis: axis_name,
            word,
            full,
            partial,
            partial_tg_en,
            reason,
        };
        if rest != 0 {
            return Err(bad("sets bits other than NUM_THREAD_FULL and NUM_THREAD_PARTIAL"));
        }
        if full == 0 {
            return Err(bad("NUM_THREAD_FULL is 0"));
        }
        if partial != 0 && (!partial_tg_en || partial >= full) {
            return Err(bad("NUM_THREAD_PARTIAL needs PARTIAL_TG_EN and must be below NUM_THREAD_FULL"));
        }
        let dim = dims[axis];
        let items = if required {
            if dim % full != partial {
                return Err(bad("NUM_THREAD_PARTIAL is not DIM mod NUM_THREAD_FULL"));
            }
            Some(dim)
        } else if partial == 0 {
            dim.checked_mul(full)
        } else {
            dim.checked_sub(1).and_then(|d| d.checked_mul(full)).and_then(|d| d.checked_add(partial))
        };
        fulls[axis] = full;
        grid[axis] = items.filter(|&n| n != 0).unwrap_or(0);
        workgroup[axis] = u16::try_from(full).unwrap_or(0);
    }
    if grid.contains(&0) || workgroup.contains(&0) {
        return Err(CpFaultKind::Grid { kernel: kernel(), dims, workgroup: fulls });
    }
    Ok((grid, workgroup))
}
