//! Executables: a code object read from memory, loaded for one agent and frozen, its kernels'
//! `.kd` symbols, and the range its image occupies in device memory.

use std::ffi::CString;

use hal::{BackendError, LoadError};
use hsa_sys::{Agent, CodeObjectReader, DefaultFloatRoundingMode, ExecutableSymbol, ExecutableSymbolInfo, Profile};
use object::LittleEndian;
use object::elf::{self, FileHeader64, ProgramHeader64};
use object::read::elf::{FileHeader, ProgramHeader};

use super::{DeviceRange, Runtime};
use crate::discover::check;

/// A loaded, frozen executable, the reader it was loaded from, and where its image lies.
#[derive(Debug)]
pub(crate) struct Executable {
    runtime: Runtime,
    // INVARIANT: an executable `hsa_executable_create_alt` returned under `runtime`, loaded with
    // the code object `reader` reads and frozen; destroyed only by `destroy`, which consumes this
    // value (and destroys `reader` after it).
    executable: hsa_sys::Executable,
    reader: CodeObjectReader,
    // INVARIANT: the bytes `reader` reads; `hsa_code_object_reader_create_from_memory` requires
    // them to outlive the reader, so they are dropped after it is destroyed.
    elf: Box<[u8]>,
    // INVARIANT: `[load_va, load_va + span)` is the loaded image: ELF address 0 is at `load_va`
    // (every kernel's `KERNEL_OBJECT` minus its descriptor's ELF address, the same for all), and
    // the runtime's loader places the ELF's PT_LOAD segments, which end at `span`, at that one
    // base; the memory stays the runtime's until the executable is destroyed.
    load_va: u64,
    span: u64,
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

/// The runtime objects of a load in progress, destroyed when the load fails part-way.
struct Partial<'a> {
    runtime: &'a Runtime,
    reader: CodeObjectReader,
    // INVARIANT: when `Some`, an executable `hsa_executable_create_alt` returned.
    executable: Option<hsa_sys::Executable>,
}

impl Partial<'_> {
    /// Destroys the executable (when created) and the reader.
    fn destroy(self) {
        // SAFETY: created by this load (the executable only if its creation succeeded), used by
        // nothing: no packet was ever given one of its kernels.
        unsafe { destroy_raw(self.runtime, self.executable, self.reader) }
    }
}

/// Destroys an executable (when given) and then its reader.
///
/// # Safety
/// `executable` and `reader` must be live objects of `runtime`, destroyed once, whose kernels no
/// queue may run any more.
unsafe fn destroy_raw(runtime: &Runtime, executable: Option<hsa_sys::Executable>, reader: CodeObjectReader) {
    let fns = runtime.hsa().fns();
    // SAFETY: the caller's contract.
    unsafe {
        if let Some(executable) = executable {
            let _ = (fns.hsa_executable_destroy)(executable);
        }
        let _ = (fns.hsa_code_object_reader_destroy)(reader);
    }
}

impl Executable {
    /// Reads `elf` (one code object for `agent`'s target), loads it for `agent`, freezes the
    /// executable and finds where its image lies from the `.kd` symbols of `kernels` (kernel
    /// name and the descriptor's ELF address).
    ///
    /// # Errors
    /// [`LoadError`] for ELF program headers that do not read or have no PT_LOAD segment, a
    /// runtime call that fails, a code object without kernels or loaded non-contiguously.
    pub(crate) fn load(
        runtime: &Runtime,
        agent: Agent,
        elf: Box<[u8]>,
        kernels: &[(&str, u64)],
    ) -> Result<Self, LoadError> {
        let span = image_span(&elf)?;
        let fns = runtime.hsa().fns();
        let mut reader = CodeObjectReader::default();
        // SAFETY: `elf` is kept in the returned `Executable` (or dropped after the reader is
        // destroyed on failure) for as long as the reader lives; `reader` is a valid out-pointer.
        let status =
            unsafe { (fns.hsa_code_object_reader_create_from_memory)(elf.as_ptr().cast(), elf.len(), &raw mut reader) };
        check("hsa_code_object_reader_create_from_memory", status)?;
        let mut partial = Partial { runtime, reader, executable: None };
        let executable = match create_frozen(runtime, agent, reader, &mut partial) {
            Ok(executable) => executable,
            Err(error) => {
                partial.destroy();
                return Err(error.into());
            }
        };
        match load_base(runtime, executable, agent, kernels) {
            Ok(load_va) => Ok(Self { runtime: runtime.clone(), executable, reader, elf, load_va, span }),
            Err(error) => {
                partial.destroy();
                Err(error.into())
            }
        }
    }

    /// The VA that ELF address 0 maps to.
    pub(crate) fn load_va(&self) -> u64 {
        self.load_va
    }

    /// Bytes the loaded image spans from [`Executable::load_va`].
    pub(crate) fn span(&self) -> u64 {
        self.span
    }

    /// The `len` bytes at `va`, when they lie inside the loaded image.
    pub(crate) fn range(&self, va: u64, len: usize) -> Option<DeviceRange<'_>> {
        let offset = va.checked_sub(self.load_va)?;
        // CAST: a usize length is at most 64 bits on every supported host.
        if offset.checked_add(len as u64)? > self.span {
            return None;
        }
        // SAFETY: `[va, va + len)` lies inside the loaded image (checked against INVARIANT of
        // `load_va` and `span`), which the runtime keeps until this executable, borrowed for the
        // range's life, is destroyed.
        Some(unsafe { DeviceRange::new(va, len) })
    }

    /// Destroys the executable, then its reader, then drops the bytes the reader read. The
    /// caller destroys first every queue that could still run one of its kernels.
    pub(crate) fn destroy(self) {
        let Self { runtime, executable, reader, elf, .. } = self;
        // SAFETY: INVARIANT of `executable` and `reader`: live objects of `runtime`; consumed, so
        // destroyed once; the caller left no queue that could run their kernels.
        unsafe { destroy_raw(&runtime, Some(executable), reader) };
        drop(elf);
    }
}

/// `hsa_executable_create_alt`, `hsa_executable_load_agent_code_object` of `reader` for
/// `agent`, `hsa_executable_freeze`; the executable is recorded in `partial` as soon as it exists.
fn create_frozen(
    runtime: &Runtime,
    agent: Agent,
    reader: CodeObjectReader,
    partial: &mut Partial<'_>,
) -> Result<hsa_sys::Executable, BackendError> {
    let executable = create(runtime)?;
    partial.executable = Some(executable);
    load_agent_code_object(runtime, executable, agent, reader)?;
    freeze(runtime, executable)?;
    Ok(executable)
}

/// `hsa_executable_create_alt` with the full profile and default rounding, no options.
fn create(runtime: &Runtime) -> Result<hsa_sys::Executable, BackendError> {
    let mut executable = hsa_sys::Executable::default();
    // SAFETY: null options are allowed; `executable` is a valid out-pointer.
    let status = unsafe {
        (runtime.hsa().fns().hsa_executable_create_alt)(
            Profile::FULL,
            DefaultFloatRoundingMode::DEFAULT,
            core::ptr::null(),
            &raw mut executable,
        )
    };
    check("hsa_executable_create_alt", status)?;
    Ok(executable)
}

/// `hsa_executable_load_agent_code_object` without options or a loaded-object handle.
fn load_agent_code_object(
    runtime: &Runtime,
    executable: hsa_sys::Executable,
    agent: Agent,
    reader: CodeObjectReader,
) -> Result<(), BackendError> {
    // SAFETY: a fresh executable and a live reader of this load (the only caller's); null options
    // and loaded-object out-pointer are allowed.
    let status = unsafe {
        (runtime.hsa().fns().hsa_executable_load_agent_code_object)(
            executable,
            agent,
            reader,
            core::ptr::null(),
            core::ptr::null_mut(),
        )
    };
    check("hsa_executable_load_agent_code_object", status)
}

/// `hsa_executable_freeze` without options.
fn freeze(runtime: &Runtime, executable: hsa_sys::Executable) -> Result<(), BackendError> {
    // SAFETY: a live executable of this load (the only caller's), null options.
    check("hsa_executable_freeze", unsafe {
        (runtime.hsa().fns().hsa_executable_freeze)(executable, core::ptr::null())
    })
}

/// The load base every kernel's `.kd` symbol in the frozen executable implies: its
/// `KERNEL_OBJECT` minus the descriptor's ELF address, the same for all of them.
fn load_base(
    runtime: &Runtime,
    executable: hsa_sys::Executable,
    agent: Agent,
    kernels: &[(&str, u64)],
) -> Result<u64, BackendError> {
    let mut load_va = None;
    for &(name, descriptor_address) in kernels {
        let kd_va = kernel_object(runtime, executable, agent, name)?;
        let base = kd_va.wrapping_sub(descriptor_address);
        if *load_va.get_or_insert(base) != base {
            let operation = "a code object loaded non-contiguously";
            return Err(BackendError::Unsupported { backend: "HSA", operation });
        }
    }
    let operation = "a code object without kernels";
    load_va.ok_or(BackendError::Unsupported { backend: "HSA", operation })
}

/// `KERNEL_OBJECT` of the symbol `name.kd` of a frozen executable.
fn kernel_object(
    runtime: &Runtime,
    executable: hsa_sys::Executable,
    agent: Agent,
    name: &str,
) -> Result<u64, BackendError> {
    let symbol_name = CString::new(format!("{name}.kd"))
        .map_err(|_| BackendError::Unsupported { backend: "HSA", operation: "a kernel name with a NUL byte" })?;
    let symbol = symbol_by_name(runtime, executable, agent, &symbol_name)?;
    let mut kd_va = 0u64;
    // SAFETY: a symbol of a live executable; KERNEL_OBJECT is a uint64_t (hsa.h), written into
    // `kd_va`.
    let status = unsafe {
        (runtime.hsa().fns().hsa_executable_symbol_get_info)(
            symbol,
            ExecutableSymbolInfo::KERNEL_OBJECT,
            (&raw mut kd_va).cast(),
        )
    };
    check("hsa_executable_symbol_get_info", status)?;
    Ok(kd_va)
}

/// `hsa_executable_get_symbol_by_name` for `agent`.
fn symbol_by_name(
    runtime: &Runtime,
    executable: hsa_sys::Executable,
    agent: Agent,
    name: &std::ffi::CStr,
) -> Result<ExecutableSymbol, BackendError> {
    let mut symbol = ExecutableSymbol::default();
    // SAFETY: a frozen, live executable (the only caller's), a NUL-terminated name, a valid agent
    // pointer and out-pointer.
    let status = unsafe {
        (runtime.hsa().fns().hsa_executable_get_symbol_by_name)(
            executable,
            name.as_ptr(),
            &raw const agent,
            &raw mut symbol,
        )
    };
    check("hsa_executable_get_symbol_by_name", status)?;
    Ok(symbol)
}
