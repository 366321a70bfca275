//! Code objects on the HSA backend: readers, executables, `.kd` symbols, the kernel table.

use std::collections::BTreeMap;
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
use hal::{BackendError, DeviceAllocation, LaunchError, LaunchRequest, LoadError, LoadedCodeObject, LoadedKernel};

/// Code objects loaded at most.
pub const CODE_OBJECTS_MAX: usize = 64;
/// Largest code object accepted, in bytes.
pub const CODE_OBJECT_BYTES_MAX: usize = 64 << 20;

/// One loaded executable and the reader it was loaded from.
#[derive(Debug)]
struct Loaded {
    executable: Executable,
    reader: CodeObjectReader,
    // INVARIANT: the bytes the reader reads; `hsa_code_object_reader_create_from_memory`
    // requires them to outlive the reader, so they are dropped after it is destroyed.
    _elf: Box<[u8]>,
}

/// The executables of a device and the kernels by descriptor VA.
#[derive(Debug, Default)]
pub(super) struct Executables {
    loaded: Vec<Loaded>,
    by_kd: BTreeMap<u64, LoadedKernel>,
}

/// A code object placed by the runtime, before its range is entered into the allocation table.
pub(super) struct Placed {
    pub load_va: u64,
    pub span: u64,
    sha256: [u8; 32],
    kernels: Vec<LoadedKernel>,
}

impl Placed {
    pub(super) fn finish(self, allocation: DeviceAllocation) -> LoadedCodeObject {
        LoadedCodeObject { allocation, load_va: self.load_va, sha256: self.sha256, kernels: self.kernels }
    }
}

impl Executables {
    /// Reads, loads and freezes a code object for `agent`; looks every kernel's `name.kd` up.
    pub(super) fn load(&mut self, hsa: &Hsa, agent: Agent, target: Target, bytes: &[u8]) -> Result<Placed, LoadError> {
        if bytes.len() > CODE_OBJECT_BYTES_MAX {
            return Err(LoadError::TooLarge { len: bytes.len(), limit: CODE_OBJECT_BYTES_MAX });
        }
        if self.loaded.len() >= CODE_OBJECTS_MAX {
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
        match placed_kernels(hsa, agent, loaded.executable, &code_object) {
            Ok((load_va, kernels)) => {
                self.loaded.push(loaded);
                for kernel in &kernels {
                    self.by_kd.insert(kernel.kd_va, kernel.clone());
                }
                Ok(Placed { load_va, span, sha256: Sha256::digest(bytes).into(), kernels })
            }
            Err(error) => {
                destroy(hsa, loaded);
                Err(error)
            }
        }
    }

    /// The kernel whose descriptor is at `kernel_object`.
    pub(super) fn kernel(&self, kernel_object: u64) -> Result<&LoadedKernel, LaunchError> {
        self.by_kd.get(&kernel_object).ok_or(LaunchError::UnknownKernel { kernel_object })
    }

    /// Destroys every executable and reader.
    pub(super) fn destroy_all(&mut self, hsa: &Hsa) {
        for loaded in self.loaded.drain(..) {
            destroy(hsa, loaded);
        }
        self.by_kd.clear();
    }
}

/// Every kernel's `.kd` symbol in the frozen executable, and the load base they imply.
fn placed_kernels(
    hsa: &Hsa,
    agent: Agent,
    executable: Executable,
    code_object: &kernarg_abi::CodeObject,
) -> Result<(u64, Vec<LoadedKernel>), LoadError> {
    let mut kernels = Vec::with_capacity(code_object.kernels.len());
    let mut load_va = None;
    for kernel in &code_object.kernels {
        let kd_va = kernel_object(hsa, executable, agent, &kernel.metadata.name)?;
        let base = kd_va.wrapping_sub(kernel.descriptor_address);
        if *load_va.get_or_insert(base) != base {
            return Err(BackendError::Unsupported {
                backend: "HSA",
                operation: "a code object loaded non-contiguously",
            }
            .into());
        }
        kernels.push(LoadedKernel::placed(kernel, base));
    }
    let Some(load_va) = load_va else {
        return Err(BackendError::Unsupported { backend: "HSA", operation: "a code object without kernels" }.into());
    };
    Ok((load_va, kernels))
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
            limit: kernarg_bytes_max as u64,
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
