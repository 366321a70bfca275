//! Executing one dispatch on the soft device.
//!
//! The executor reads the kernarg segment from sim memory, checks the dispatch against the
//! kernel (geometry, LDS, wave size), resolves the kernel's declared effects for this launch and
//! runs its CPU reference against an [`EffectGuard`]: a [`DeviceMemory`] that lets the kernel
//! read only inside declared readable ranges and write only inside declared writable ranges. A
//! wrong declaration therefore cannot hide a missing dependency: an access it does not cover is
//! a fault, not a silent success.
//!
//! Before the reference runs, the kernarg segment's hidden geometry arguments
//! (`hidden_block_count_*`, `hidden_group_size_*`, `hidden_remainder_*`, `hidden_grid_dims`) are
//! compared with the dispatch's own geometry ([`check_hidden_geometry`]). The kernarg segment is
//! written once, by whoever built it; the geometry reaches the kernel another way (the AQL packet,
//! or the PM4 `DISPATCH_DIRECT` dimensions). When the two disagree the kernel would index with
//! one and bound with the other, so the disagreement is a typed fault ([`HiddenArgMismatch`]).

use std::cell::RefCell;
use std::sync::Arc;

use kernarg_abi::layout::DispatchGeometry;
use kernarg_abi::metadata::ValueKind;
use kernel_refs::effects::{self, ResolvedEffect};
use kernel_refs::launch::Launch;
use kernel_refs::memory::{self as model, DeviceMemory};
use tape_core::{Access, AllocationId};

use hal::{FaultReason, LaunchError, MemoryFault};

use crate::fault::{EffectViolation, SoftFault};
use crate::loader::SoftKernels;
use crate::memory::SimMemory;
use hal::KernelSlot;

/// LDS bytes one work-group can use (static plus dynamic) on every supported family.
pub const LDS_BYTES_MAX: u32 = 64 * 1024;

/// One dispatch as the packet processor sees it: the kernarg segment is already in sim memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// Descriptor VA of the kernel.
    pub kernel_object: u64,
    /// VA of the kernarg segment.
    pub kernarg_va: u64,
    /// Grid size in work-items.
    pub grid_work_items: [u32; 3],
    /// Work-group size in work-items.
    pub workgroup_work_items: [u16; 3],
    /// Dynamic LDS bytes.
    pub dynamic_lds_bytes: u32,
}

/// A declared effect of an executed dispatch, with the allocation it lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecutedEffect {
    /// The resolved range and access.
    pub effect: ResolvedEffect,
    /// The allocation holding the whole range and the range's offset in it; `None` only for an
    /// empty range.
    pub allocation: Option<(AllocationId, u64)>,
}

/// What one executed dispatch did, for later hazard checking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutedDispatch {
    /// Kernel name.
    pub kernel: String,
    /// Its descriptor VA.
    pub kernel_object: u64,
    /// Its declared effects for this launch, in declaration order.
    pub effects: Vec<ExecutedEffect>,
}

/// A hidden geometry argument of the kernarg segment that disagrees with the dispatch.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "kernel {kernel}: kernarg {arg} at offset {offset} holds {found}, the dispatch (grid {grid:?}, work-group {workgroup:?}) implies {expected}"
)]
pub struct HiddenArgMismatch {
    /// Kernel name.
    pub kernel: String,
    /// The argument's metadata name (`hidden_block_count_x`, ...).
    pub arg: &'static str,
    /// Its offset in the kernarg segment.
    pub offset: u32,
    /// The value the dispatch geometry implies.
    pub expected: u64,
    /// The value in the kernarg segment.
    pub found: u64,
    /// The dispatch's grid in work-items.
    pub grid: [u32; 3],
    /// The dispatch's work-group size.
    pub workgroup: [u16; 3],
}

/// Why [`execute_checked`] refused or failed a dispatch.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// A check or the kernel failed as on the ordinary path.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The kernarg segment's hidden geometry disagrees with the dispatch.
    #[error(transparent)]
    HiddenArg(#[from] HiddenArgMismatch),
}

/// Which hidden geometry arguments [`check_hidden_geometry`] compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HiddenCheck {
    /// Only `hidden_group_size_*`.
    GroupSizeOnly,
    /// Every hidden geometry argument.
    All,
}

/// Executes `dispatch`: checks, resolves effects, runs the CPU reference under an
/// [`EffectGuard`].
///
/// This is the ordinary path's entry and keeps its error type: it checks every hidden geometry
/// argument ([`HiddenCheck::All`]) and reports a mismatch as [`SoftFault::HiddenArg`] inside
/// [`LaunchError::Device`]; [`execute_checked`] does the same with the narrower [`ExecError`]
/// the command processor uses.
///
/// # Errors
/// [`LaunchError`] for an unknown kernel, an unreadable kernarg segment, a rejected geometry, a
/// kernel without CPU implementation, unresolvable or unmapped effects, an access outside the
/// declared effects, or a failure of the CPU reference.
pub fn execute(
    memory: &mut SimMemory,
    objects: &SoftKernels,
    dispatch: &Dispatch,
) -> Result<ExecutedDispatch, LaunchError> {
    execute_with(memory, objects, dispatch, HiddenCheck::All).map_err(|e| match e {
        ExecError::Launch(e) => e,
        ExecError::HiddenArg(m) => {
            let kernel = m.kernel.clone();
            SoftFault::HiddenArg(m).launch(&kernel)
        }
    })
}

/// [`execute`] with every hidden geometry argument checked and a mismatch reported as its own
/// typed fault.
///
/// # Errors
/// [`ExecError::HiddenArg`] when a hidden geometry argument disagrees with the dispatch,
/// [`ExecError::Launch`] for everything [`execute`] reports.
pub fn execute_checked(
    memory: &mut SimMemory,
    objects: &SoftKernels,
    dispatch: &Dispatch,
) -> Result<ExecutedDispatch, ExecError> {
    execute_with(memory, objects, dispatch, HiddenCheck::All)
}

fn execute_with(
    memory: &mut SimMemory,
    objects: &SoftKernels,
    dispatch: &Dispatch,
    hidden: HiddenCheck,
) -> Result<ExecutedDispatch, ExecError> {
    let kernel_object = dispatch.kernel_object;
    let slot = objects.by_kd(kernel_object).ok_or(LaunchError::UnknownKernel { kernel_object })?;
    let name = &slot.loaded.name;
    let kernarg = read_kernarg(memory, slot, dispatch.kernarg_va)?;
    check_dispatch(slot, dispatch)?;
    check_hidden_geometry(slot, &kernarg, dispatch, hidden)?;
    let entry = objects
        .reference(kernel_object)
        .ok_or_else(|| SoftFault::NoCpuImplementation { kernel_object }.launch(name))?;
    let launch = Launch {
        kernarg: &kernarg,
        grid_size: dispatch.grid_work_items,
        workgroup_size: dispatch.workgroup_work_items,
        dynamic_lds_bytes: dispatch.dynamic_lds_bytes,
    };
    let resolved =
        effects::resolve(entry.effects, &launch).map_err(|source| SoftFault::Effects(source).launch(name))?;
    let executed = locate_effects(memory, name, &resolved)?;
    let mut guard = EffectGuard::new(memory, name, &resolved);
    if let Err(source) = (entry.cpu)(&launch, &mut guard) {
        return Err(match guard.into_violation() {
            Some(violation) => SoftFault::EffectViolation(violation).launch(name),
            None => SoftFault::Kernel(source).launch(name),
        }
        .into());
    }
    Ok(ExecutedDispatch { kernel: name.clone(), kernel_object, effects: executed })
}

/// Compares the kernarg segment's hidden geometry arguments with `dispatch`.
///
/// Expected values follow [`DispatchGeometry::block_count`] (full work-groups) and
/// [`DispatchGeometry::remainder`] (size of the partial last group, 0 if none);
/// `hidden_grid_dims` must be the number of the dispatch's leading axes that are not 1 (at least
/// 1), as the AQL packet's `setup` dimensions would say. Arguments the kernel does not declare are
/// not checked.
///
/// # Errors
/// [`HiddenArgMismatch`] for the first argument, in layout order, that disagrees.
pub fn check_hidden_geometry(
    slot: &KernelSlot,
    kernarg: &[u8],
    dispatch: &Dispatch,
    which: HiddenCheck,
) -> Result<(), HiddenArgMismatch> {
    let (grid, workgroup) = (dispatch.grid_work_items, dispatch.workgroup_work_items);
    let geometry = DispatchGeometry {
        grid_size: grid,
        workgroup_size: workgroup,
        dims: grid_dims(grid, workgroup),
        dynamic_lds_bytes: 0,
    };
    let (blocks, remainder) = (geometry.block_count(), geometry.remainder());
    for arg in &slot.kernel.metadata.args {
        use ValueKind as K;
        let group_size = matches!(arg.value_kind, K::HiddenGroupSizeX | K::HiddenGroupSizeY | K::HiddenGroupSizeZ);
        if which == HiddenCheck::GroupSizeOnly && !group_size {
            continue;
        }
        let (name, expected) = match arg.value_kind {
            K::HiddenBlockCountX => ("hidden_block_count_x", u64::from(blocks[0])),
            K::HiddenBlockCountY => ("hidden_block_count_y", u64::from(blocks[1])),
            K::HiddenBlockCountZ => ("hidden_block_count_z", u64::from(blocks[2])),
            K::HiddenGroupSizeX => ("hidden_group_size_x", u64::from(workgroup[0])),
            K::HiddenGroupSizeY => ("hidden_group_size_y", u64::from(workgroup[1])),
            K::HiddenGroupSizeZ => ("hidden_group_size_z", u64::from(workgroup[2])),
            K::HiddenRemainderX => ("hidden_remainder_x", u64::from(remainder[0])),
            K::HiddenRemainderY => ("hidden_remainder_y", u64::from(remainder[1])),
            K::HiddenRemainderZ => ("hidden_remainder_z", u64::from(remainder[2])),
            K::HiddenGridDims => ("hidden_grid_dims", u64::from(geometry.dims)),
            _ => continue,
        };
        let found = read_le(kernarg, arg.offset, arg.size);
        if found != Some(expected) {
            return Err(HiddenArgMismatch {
                kernel: slot.loaded.name.clone(),
                arg: name,
                offset: arg.offset,
                expected,
                found: found.unwrap_or(u64::MAX),
                grid,
                workgroup,
            });
        }
    }
    Ok(())
}

/// Dimensionality of a dispatch: 1 plus the index of the last axis with a grid or work-group
/// size other than 1.
fn grid_dims(grid: [u32; 3], workgroup: [u16; 3]) -> u8 {
    match (grid, workgroup) {
        ([_, _, z], [_, _, wz]) if z != 1 || wz != 1 => 3,
        ([_, y, _], [_, wy, _]) if y != 1 || wy != 1 => 2,
        _ => 1,
    }
}

/// The little-endian value of `size` (1..=8) bytes at `offset`, `None` when outside `kernarg`.
fn read_le(kernarg: &[u8], offset: u32, size: u32) -> Option<u64> {
    let start = usize::try_from(offset).ok()?;
    let len = usize::try_from(size).ok().filter(|&l| (1..=8).contains(&l))?;
    let bytes = kernarg.get(start..start.checked_add(len)?)?;
    Some(bytes.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

/// The kernel's `.kernarg_segment_size` bytes at `kernarg_va`.
fn read_kernarg(memory: &SimMemory, slot: &KernelSlot, kernarg_va: u64) -> Result<Vec<u8>, LaunchError> {
    let size = slot.loaded.kernarg_segment_size;
    let fault = |fault| LaunchError::KernargFault { kernel: slot.loaded.name.clone(), fault };
    let len = usize::try_from(size)
        .map_err(|_| fault(MemoryFault { address: kernarg_va, len: size.into(), reason: FaultReason::Unmapped }))?;
    let mut kernarg = vec![0u8; len];
    memory.read(kernarg_va, &mut kernarg).map_err(fault)?;
    Ok(kernarg)
}

/// Checks the dispatch geometry, LDS and wave size against the kernel.
fn check_dispatch(slot: &KernelSlot, dispatch: &Dispatch) -> Result<(), LaunchError> {
    let kernel = || slot.loaded.name.clone();
    let (grid, workgroup) = (dispatch.grid_work_items, dispatch.workgroup_work_items);
    if grid.contains(&0) || workgroup.contains(&0) {
        return Err(LaunchError::ZeroDimension { kernel: kernel(), grid, workgroup });
    }
    let work_items: u64 = workgroup.iter().map(|&w| u64::from(w)).product();
    let limit = slot.loaded.max_flat_workgroup_size;
    if work_items > u64::from(limit) {
        return Err(LaunchError::WorkgroupTooLarge { kernel: kernel(), work_items, limit });
    }
    let static_bytes = slot.loaded.group_segment_fixed_size;
    let dynamic_bytes = dispatch.dynamic_lds_bytes;
    if static_bytes.checked_add(dynamic_bytes).is_none_or(|total| total > LDS_BYTES_MAX) {
        return Err(LaunchError::LdsTooLarge { kernel: kernel(), static_bytes, dynamic_bytes, limit: LDS_BYTES_MAX });
    }
    let metadata = slot.loaded.wavefront_size;
    let wave32 = slot.kernel.descriptor.kernel_code_properties().enable_wavefront_size32() != 0;
    if !matches!((metadata, wave32), (32, true) | (64, false)) {
        return Err(LaunchError::WaveSize { kernel: kernel(), metadata, wave32 });
    }
    Ok(())
}

/// Every non-empty effect range must lie inside one allocation: its identity is what hazard
/// checking and the tape compare.
fn locate_effects(
    memory: &SimMemory,
    kernel: &str,
    resolved: &[ResolvedEffect],
) -> Result<Vec<ExecutedEffect>, LaunchError> {
    resolved
        .iter()
        .map(|&effect| {
            if effect.bytes == 0 {
                return Ok(ExecutedEffect { effect, allocation: None });
            }
            let (id, offset, _) = memory.resolve_range(effect.address, effect.bytes).ok_or_else(|| {
                SoftFault::EffectUnmapped { arg_index: effect.arg_index, va: effect.address, bytes: effect.bytes }
                    .launch(kernel)
            })?;
            Ok(ExecutedEffect { effect, allocation: Some((id, offset)) })
        })
        .collect()
}

/// A [`DeviceMemory`] that forwards only the accesses a kernel's declared effects allow.
///
/// A read must lie entirely inside one declared range whose access reads, a write inside one
/// whose access writes. Anything else is refused without touching memory: the first such access
/// is kept as an [`EffectViolation`] ([`EffectGuard::violation`]) and the kernel sees a memory
/// model fault ([`model::MemoryFault`]) with [`model::FaultReason::Unmapped`] (the memory model
/// has no reason for "not declared"; the violation is the authoritative report).
#[derive(Debug)]
pub struct EffectGuard<'a, M: DeviceMemory + ?Sized> {
    inner: &'a mut M,
    kernel: &'a str,
    effects: &'a [ResolvedEffect],
    violation: RefCell<Option<EffectViolation>>,
}

impl<'a, M: DeviceMemory + ?Sized> EffectGuard<'a, M> {
    /// Guards `inner` for `kernel` with the declared `effects`.
    pub fn new(inner: &'a mut M, kernel: &'a str, effects: &'a [ResolvedEffect]) -> Self {
        Self { inner, kernel, effects, violation: RefCell::new(None) }
    }

    /// The first access outside the declared effects, if any.
    #[must_use]
    pub fn violation(&self) -> Option<EffectViolation> {
        self.violation.borrow().clone()
    }

    /// The first access outside the declared effects, if any.
    #[must_use]
    pub fn into_violation(self) -> Option<EffectViolation> {
        self.violation.into_inner()
    }

    /// Whether `[va, va + len)` lies inside one declared range allowing `access`.
    fn allowed(&self, va: u64, len: u64, access: Access) -> bool {
        let Some(end) = va.checked_add(len) else { return false };
        self.effects.iter().any(|e| {
            let permits = if access == Access::Read { e.access.reads() } else { e.access.writes() };
            // `resolve` checked that address + bytes does not overflow.
            permits && va >= e.address && end <= e.address + e.bytes
        })
    }

    /// Checks one access; records and returns the fault when it is not allowed.
    fn check(&self, va: u64, len: usize, access: Access) -> Result<(), model::MemoryFault> {
        let len = u64::try_from(len).unwrap_or(u64::MAX);
        if len == 0 || self.allowed(va, len, access) {
            return Ok(());
        }
        let mut slot = self.violation.borrow_mut();
        if slot.is_none() {
            *slot = Some(EffectViolation { kernel: self.kernel.to_string(), va, len, access });
        }
        Err(model::MemoryFault { address: va, len, reason: model::FaultReason::Unmapped })
    }
}

impl<M: DeviceMemory + ?Sized> DeviceMemory for EffectGuard<'_, M> {
    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), model::MemoryFault> {
        self.check(address, out.len(), Access::Read)?;
        self.inner.read(address, out)
    }

    /// Lends only a range a declared readable effect covers; an undeclared range is not lent
    /// and not recorded: the caller's fallback read records it.
    fn view(&self, address: u64, len: usize) -> Option<&[u8]> {
        let len_u64 = u64::try_from(len).ok()?;
        if len == 0 || !self.allowed(address, len_u64, Access::Read) {
            return None;
        }
        self.inner.view(address, len)
    }

    /// Derives only from a range a declared readable effect covers, as [`Self::view`] lends.
    fn derived(&self, address: u64, len: usize, key: u64, derive: &dyn Fn(&[u8]) -> Vec<u8>) -> Option<Arc<[u8]>> {
        let len_u64 = u64::try_from(len).ok()?;
        if len == 0 || !self.allowed(address, len_u64, Access::Read) {
            return None;
        }
        self.inner.derived(address, len, key, derive)
    }

    /// Forms only a range a declared readable effect covers, as [`Self::view`] lends.
    fn with_row_form(
        &self,
        address: u64,
        row_bytes: usize,
        rows: usize,
        key: u64,
        update: &kernel_refs::memory::RowUpdate<'_>,
        use_form: &mut dyn FnMut(&[f32]),
    ) -> bool {
        let Some(len) = row_bytes.checked_mul(rows).and_then(|n| u64::try_from(n).ok()) else { return false };
        if len == 0 || !self.allowed(address, len, Access::Read) {
            return false;
        }
        self.inner.with_row_form(address, row_bytes, rows, key, update, use_form)
    }

    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), model::MemoryFault> {
        self.check(address, data.len(), Access::Write)?;
        self.inner.write(address, data)
    }

    /// Only a range a declared writable effect covers; nothing is recorded.
    fn writable(&self, address: u64, len: usize) -> bool {
        let Ok(len_u64) = u64::try_from(len) else { return false };
        len == 0 || (self.allowed(address, len_u64, Access::Write) && self.inner.writable(address, len))
    }
}

#[cfg(test)]
mod tests;
