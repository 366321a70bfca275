//! Code objects on the HSA backend: readers, executables, `.kd` symbols. The device enters what
//! [`Executables::load`] placed into its kernel table.

use std::ffi::CString;

use hsa_sys::{
    Agent, CodeObjectReader, DefaultFloatRoundingMode, Executable, ExecutableSymbol, ExecutableSymbolInfo, Hsa, Profile,
};
use kernarg_abi::bundle;
use object::LittleEndian;
use object::elf::{self, FileHeader64, ProgramHeader64};
use object::read::elf::{FileHeader, ProgramHeader};
use pm4_encoding::Target;
use sha2::{Digest, Sha256};

use super::discover::check;
use hal::{BackendError, KernelTable, LaunchError, LaunchRequest, LoadError, LoadedKernel};

/// Code objects loaded at most (the kernel table's limit).
pub const CODE_OBJECTS_MAX: usize = KernelTable::CODE_OBJECTS_MAX;
/// Largest code object accepted, in bytes (the kernel table's limit).
pub const CODE_OBJECT_BYTES_MAX: usize = KernelTable::CODE_OBJECT_BYTES_MAX;
/// LDS bytes one work-group can use (static plus dynamic) on every supported family.
pub const LDS_BYTES_MAX: u32 = 64 * 1024;

/// One loaded executable and the reader it was loaded from.
#[derive(Debug)]
struct Loaded {
    executable: Executable,
    reader: CodeObjectReader,
    // INVARIANT: the bytes the reader reads; `hsa_code_object_reader_create_from_memory`
    // requires them to outlive the reader, so they are dropped after it is destroyed.
    _elf: Box<[u8]>,
}

/// The executables of a device.
#[derive(Debug, Default)]
pub(super) struct Executables {
    loaded: Vec<Loaded>,
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
        hsa: &Hsa,
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
        let span = image_span(&elf_bytes)?;
        let loaded = load_executable(hsa, agent, elf_bytes)?;
        match load_base(hsa, agent, loaded.executable, &code_object) {
            Ok(load_va) => {
                self.loaded.push(loaded);
                Ok(Placed { code_object, load_va, span, sha256: Sha256::digest(bytes).into() })
            }
            Err(error) => {
                destroy(hsa, loaded);
                Err(error)
            }
        }
    }

    /// Destroys every executable and reader.
    pub(super) fn destroy_all(&mut self, hsa: &Hsa) {
        for loaded in self.loaded.drain(..) {
            destroy(hsa, loaded);
        }
    }
}

/// The load base every kernel's `.kd` symbol in the frozen executable implies: its
/// `KERNEL_OBJECT` minus the descriptor's ELF address, the same for all of them.
fn load_base(
    hsa: &Hsa,
    agent: Agent,
    executable: Executable,
    code_object: &kernarg_abi::CodeObject,
) -> Result<u64, LoadError> {
    let mut load_va = None;
    for kernel in &code_object.kernels {
        let kd_va = kernel_object(hsa, executable, agent, &kernel.metadata.name)?;
        let base = kd_va.wrapping_sub(kernel.descriptor_address);
        if *load_va.get_or_insert(base) != base {
            let operation = "a code object loaded non-contiguously";
            return Err(BackendError::Unsupported { backend: "HSA", operation }.into());
        }
    }
    let operation = "a code object without kernels";
    load_va.ok_or_else(|| BackendError::Unsupported { backend: "HSA", operation }.into())
}

/// Destroys one executable and its reader.
fn destroy(hsa: &Hsa, loaded: Loaded) {
    // SAFETY: an executable and reader this table created; no queue that could run their kernels
    // is left (the device destroys queues first), or none ever saw them (a failed load).
    unsafe {
        let _ = (hsa.fns().hsa_executable_destroy)(loaded.executable);
        let _ = (hsa.fns().hsa_code_object_reader_destroy)(loaded.reader);
    }
}

fn load_executable(hsa: &Hsa, agent: Agent, elf: Box<[u8]>) -> Result<Loaded, BackendError> {
    let fns = hsa.fns();
    let mut reader = CodeObjectReader::default();
    // SAFETY: `elf` is kept in the returned `Loaded` for as long as the reader lives.
    let status =
        unsafe { (fns.hsa_code_object_reader_create_from_memory)(elf.as_ptr().cast(), elf.len(), &raw mut reader) };
    check("hsa_code_object_reader_create_from_memory", status)?;
    let mut executable = Executable::default();
    // SAFETY: null options are allowed; `executable` is a valid out-pointer.
    let status = unsafe {
        (fns.hsa_executable_create_alt)(
            Profile::FULL,
            DefaultFloatRoundingMode::DEFAULT,
            core::ptr::null(),
            &raw mut executable,
        )
    };
    let loaded = Loaded { executable, reader, _elf: elf };
    let result = check("hsa_executable_create_alt", status).and_then(|()| {
        // SAFETY: a fresh executable and a live reader; null options and loaded-object out-pointer.
        let status = unsafe {
            (fns.hsa_executable_load_agent_code_object)(
                executable,
                agent,
                reader,
                core::ptr::null(),
                core::ptr::null_mut(),
            )
        };
        check("hsa_executable_load_agent_code_object", status)?;
        // SAFETY: a live executable, null options.
        check("hsa_executable_freeze", unsafe { (fns.hsa_executable_freeze)(executable, core::ptr::null()) })
    });
    if let Err(error) = result {
        // SAFETY: created above (the executable only if its creation succeeded), used by nothing.
        unsafe {
            if status.is_success() {
                let _ = (fns.hsa_executable_destroy)(loaded.executable);
            }
            let _ = (fns.hsa_code_object_reader_destroy)(loaded.reader);
        }
        return Err(error);
    }
    Ok(loaded)
}

/// `KERNEL_OBJECT` of the symbol `name.kd`.
fn kernel_object(hsa: &Hsa, executable: Executable, agent: Agent, name: &str) -> Result<u64, BackendError> {
    let symbol_name = CString::new(format!("{name}.kd"))
        .map_err(|_| BackendError::Unsupported { backend: "HSA", operation: "a kernel name with a NUL byte" })?;
    let mut symbol = ExecutableSymbol::default();
    // SAFETY: a frozen executable, a NUL-terminated name, a valid agent pointer and out-pointer.
    let status = unsafe {
        (hsa.fns().hsa_executable_get_symbol_by_name)(
            executable,
            symbol_name.as_ptr(),
            &raw const agent,
            &raw mut symbol,
        )
    };
    check("hsa_executable_get_symbol_by_name", status)?;
    let mut kd_va = 0u64;
    // SAFETY: KERNEL_OBJECT is a uint64_t (hsa.h), written into `kd_va`.
    let status = unsafe {
        (hsa.fns().hsa_executable_symbol_get_info)(symbol, ExecutableSymbolInfo::KERNEL_OBJECT, (&raw mut kd_va).cast())
    };
    check("hsa_executable_symbol_get_info", status)?;
    Ok(kd_va)
}

/// `max(p_vaddr + p_memsz)` over the PT_LOAD segments: the range the loaded image spans.
fn image_span(elf_bytes: &[u8]) -> Result<u64, LoadError> {
    const LE: LittleEndian = LittleEndian;
    let header = FileHeader64::<LittleEndian>::parse(elf_bytes).map_err(LoadError::ProgramHeaders)?;
    let headers: &[ProgramHeader64<LittleEndian>] =
        header.program_headers(LE, elf_bytes).map_err(LoadError::ProgramHeaders)?;
    headers
        .iter()
        .filter(|ph| ph.p_type(LE) == elf::PT_LOAD)
        .map(|ph| ph.p_vaddr(LE).saturating_add(ph.p_memsz(LE)))
        .max()
        .ok_or(LoadError::NoLoadSegment)
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
