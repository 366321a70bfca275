//! Code objects on the HSA backend: readers, executables, `.kd` symbols. The device enters what
//! [`Executables::load`] placed into its kernel table.

use hsa_sys::Agent;
use kernarg_abi::bundle;
use pm4_encoding::Target;
use sha2::{Digest, Sha256};

use crate::ffi::{DeviceRange, Executable, Runtime};
use hal::{KernelTable, LaunchError, LaunchRequest, LoadError, LoadedKernel};

/// Code objects loaded at most (the kernel table's limit).
pub const CODE_OBJECTS_MAX: usize = KernelTable::CODE_OBJECTS_MAX;
/// Largest code object accepted, in bytes (the kernel table's limit).
pub const CODE_OBJECT_BYTES_MAX: usize = KernelTable::CODE_OBJECT_BYTES_MAX;
/// LDS bytes one work-group can use (static plus dynamic) on every supported family.
pub const LDS_BYTES_MAX: u32 = 64 * 1024;

/// The executables of a device.
#[derive(Debug, Default)]
pub(super) struct Executables {
    loaded: Vec<Executable>,
}

/// A code object placed by the runtime, before its range and kernels are entered into the
/// device's tables.
pub(super) struct Placed {
    /// What `kernarg-abi` read of the bytes.
    pub(super) code_object: kernarg_abi::CodeObject,
    /// The VA that ELF address 0 maps to.
    pub(super) load_va: u64,
    /// Bytes the loaded image spans from `load_va`.
    pub(super) span: u64,
    /// SHA-256 of the bytes given.
    pub(super) sha256: [u8; 32],
}

impl Executables {
    /// Reads, loads and freezes a code object for `agent`; looks every kernel's `name.kd` up.
    /// `table` is the device's kernel table (for its limit).
    pub(super) fn load(
        &mut self,
        runtime: &Runtime,
        agent: Agent,
        target: Target,
        bytes: &[u8],
        table: &KernelTable,
    ) -> Result<Placed, LoadError> {
        if bytes.len() > CODE_OBJECT_BYTES_MAX {
            return Err(LoadError::TooLarge { len: bytes.len(), limit: CODE_OBJECT_BYTES_MAX });
        }
        if self.loaded.len() >= CODE_OBJECTS_MAX || table.is_full() {
            return Err(LoadError::TooMany { limit: CODE_OBJECTS_MAX });
        }
        let code_object = kernarg_abi::read_any(bytes, Some(target))?;
        let elf_bytes: Box<[u8]> = if bundle::is_bundle(bytes) {
            bundle::select(bytes, target).map_err(kernarg_abi::ReadError::from)?.into()
        } else {
            bytes.into()
        };
        let kernels: Vec<(&str, u64)> =
            code_object.kernels.iter().map(|k| (k.metadata.name.as_str(), k.descriptor_address)).collect();
        let executable = Executable::load(runtime, agent, elf_bytes, &kernels)?;
        let (load_va, span) = (executable.load_va(), executable.span());
        self.loaded.push(executable);
        Ok(Placed { code_object, load_va, span, sha256: Sha256::digest(bytes).into() })
    }

    /// The `len` bytes at `va` of a loaded image, for a copy by the runtime.
    pub(super) fn range(&self, va: u64, len: usize) -> Option<DeviceRange<'_>> {
        self.loaded.iter().find_map(|executable| executable.range(va, len))
    }

    /// Destroys every executable and reader.
    pub(super) fn destroy_all(&mut self) {
        for executable in self.loaded.drain(..) {
            executable.destroy();
        }
    }
}

/// The checks of an ordinary launch that do not need the GPU.
pub(super) fn check_launch(
    kernel: &LoadedKernel,
    request: &LaunchRequest<'_>,
    kernarg_bytes_max: usize,
) -> Result<(), LaunchError> {
    if request.kernarg.len() != kernel.kernarg_segment_size as usize {
        return Err(LaunchError::KernargSize {
            kernel: kernel.name.clone(),
            expected: kernel.kernarg_segment_size,
            found: request.kernarg.len(),
        });
    }
    if request.kernarg.len() > kernarg_bytes_max {
        return Err(LaunchError::KernargTooLarge {
            kernel: kernel.name.clone(),
            size: kernel.kernarg_segment_size,
            // CAST: a usize limit is at most 64 bits on every supported host.
            limit: kernarg_bytes_max as u64,
        });
    }
    let (static_bytes, dynamic_bytes) = (kernel.group_segment_fixed_size, request.dynamic_lds_bytes);
    if static_bytes.checked_add(dynamic_bytes).is_none_or(|total| total > LDS_BYTES_MAX) {
        return Err(LaunchError::LdsTooLarge {
            kernel: kernel.name.clone(),
            static_bytes,
            dynamic_bytes,
            limit: LDS_BYTES_MAX,
        });
    }
    if request.grid_work_items.contains(&0) || request.workgroup_work_items.contains(&0) {
        return Err(LaunchError::ZeroDimension {
            kernel: kernel.name.clone(),
            grid: request.grid_work_items,
            workgroup: request.workgroup_work_items,
        });
    }
    let work_items: u64 = request.workgroup_work_items.iter().map(|&n| u64::from(n)).product();
    if work_items > u64::from(kernel.max_flat_workgroup_size) {
        return Err(LaunchError::WorkgroupTooLarge {
            kernel: kernel.name.clone(),
            work_items,
            limit: kernel.max_flat_workgroup_size,
        });
    }
    Ok(())
}
