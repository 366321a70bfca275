//! Code objects: readers over program memory, executables, their kernel symbols.
//!
//! A code object is loaded by the soft device's loader, which places it in device memory and
//! enters its kernels into the kernel table the packet processors run from; a kernel's
//! `KERNEL_OBJECT` is its descriptor's VA there. Only kernels the `kernel-refs` registry knows (with
//! a CPU reference) can run; others load, and a dispatch of one faults its queue.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use hal::{LoadError, LoadedCodeObject};
use hsa_sys::{ExecutableSymbolInfo, HsaStatus, SymbolKind, SymbolLinkage};
use kernarg_abi::{CodeObject, ReadError};
use soft_device::memory::RegionKind;

use crate::agents::{Agents, Answer};
use crate::runtime::Core;

/// Code object readers live at once, at most.
pub(crate) const READERS_MAX: usize = 256;
/// Executables live at once, at most (their code objects also count against the kernel table's
/// limit).
pub(crate) const EXECUTABLES_MAX: usize = 256;
/// First executable handle.
const EXECUTABLE_BASE: u64 = 0x3e00_0000;
/// First reader handle.
const READER_BASE: u64 = 0x3c00_0000;
/// Tag bit of symbol handles.
const SYMBOL_TAG: u64 = 1 << 62;
/// Tag bit of loaded-code-object handles.
const LOADED_TAG: u64 = 1 << 61;
/// Code objects per executable, kernels per code object at most (12-bit fields of a symbol
/// handle).
const INDEX_MAX: usize = 1 << 12;
/// Suffix of a kernel descriptor's symbol name.
const KD_SUFFIX: &str = ".kd";

/// One code object loaded into an executable.
#[derive(Debug)]
struct Loaded {
    /// The GPU agent it was loaded for.
    agent: u64,
    code_object: CodeObject,
    placed: LoadedCodeObject,
}

/// An executable: code objects loaded for the GPU agent, frozen or not.
#[derive(Debug, Default)]
struct Executable {
    frozen: bool,
    objects: Vec<Loaded>,
}

/// Readers and executables, inside [`Core`].
#[derive(Debug, Default)]
pub(crate) struct CodeState {
    readers: BTreeMap<u64, Arc<[u8]>>,
    next_reader: u64,
    executables: BTreeMap<u64, Executable>,
    next_executable: u64,
}

/// `hsa_code_object_reader_create_from_memory`: keeps a copy of `bytes`.
///
/// # Errors
/// `HSA_STATUS_ERROR_OUT_OF_RESOURCES` at [`READERS_MAX`].
pub(crate) fn create_reader(core: &mut Core, bytes: &[u8]) -> Result<u64, HsaStatus> {
    let code = &mut core.code;
    if code.readers.len() >= READERS_MAX {
        return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
    }
    let handle = READER_BASE + code.next_reader;
    code.next_reader += 1;
    code.readers.insert(handle, Arc::from(bytes));
    Ok(handle)
}

/// `hsa_code_object_reader_destroy`.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER`.
pub(crate) fn destroy_reader(core: &mut Core, reader: u64) -> Result<(), HsaStatus> {
    core.code.readers.remove(&reader).map(drop).ok_or(HsaStatus::ERROR_INVALID_CODE_OBJECT_READER)
}

/// `hsa_executable_create_alt`: an empty, unfrozen executable.
///
/// # Errors
/// `HSA_STATUS_ERROR_OUT_OF_RESOURCES` at [`EXECUTABLES_MAX`].
pub(crate) fn create_executable(core: &mut Core) -> Result<u64, HsaStatus> {
    let code = &mut core.code;
    if code.executables.len() >= EXECUTABLES_MAX {
        return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
    }
    let handle = EXECUTABLE_BASE + code.next_executable;
    code.next_executable += 1;
    code.executables.insert(handle, Executable::default());
    Ok(handle)
}

/// `hsa_executable_load_agent_code_object`: loads the reader's code object for GPU agent `agent`
/// (of the target `agents` gives it); returns the loaded code object's handle.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_EXECUTABLE`, `..._FROZEN_EXECUTABLE`, `..._INVALID_AGENT`,
/// `..._INVALID_CODE_OBJECT_READER`; `..._INVALID_ISA` for a code object of another target,
/// `..._INVALID_CODE_OBJECT` for one the loader refuses, `..._OUT_OF_RESOURCES` at a limit.
pub(crate) fn load(
    core: &mut Core,
    executable: u64,
    agent: u64,
    reader: u64,
    agents: &Agents,
) -> Result<u64, HsaStatus> {
    let exe = core.code.executables.get(&executable).ok_or(HsaStatus::ERROR_INVALID_EXECUTABLE)?;
    if exe.frozen {
        return Err(HsaStatus::ERROR_FROZEN_EXECUTABLE);
    }
    if exe.objects.len() >= INDEX_MAX {
        return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
    }
    let (_, target) = agents.gpu(agent).ok_or(HsaStatus::ERROR_INVALID_AGENT)?;
    let bytes = core.code.readers.get(&reader).cloned().ok_or(HsaStatus::ERROR_INVALID_CODE_OBJECT_READER)?;
    let code_object = kernarg_abi::read_any(&bytes, Some(target)).map_err(|e| load_status(&LoadError::Read(e)))?;
    if code_object.kernels.len() > INDEX_MAX {
        return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
    }
    let Core { memory, kernels, code, .. } = core;
    let placed = soft_device::loader::load(kernels, memory, target, &bytes, None).map_err(|e| load_status(&e))?.clone();
    // PANIC: looked up above; nothing in between removes executables.
    let exe = code.executables.get_mut(&executable).expect("executable looked up above");
    let index = exe.objects.len();
    exe.objects.push(Loaded { agent, code_object, placed });
    Ok(LOADED_TAG | ((executable - EXECUTABLE_BASE) << 24) | u64::try_from(index).unwrap_or(0))
}

fn load_status(error: &LoadError) -> HsaStatus {
    match error {
        LoadError::Read(ReadError::TargetMismatch { .. } | ReadError::TargetRequired { .. }) => {
            HsaStatus::ERROR_INVALID_ISA
        }
        LoadError::TooMany { .. } | LoadError::Allocate(_) => HsaStatus::ERROR_OUT_OF_RESOURCES,
        _ => HsaStatus::ERROR_INVALID_CODE_OBJECT,
    }
}

/// `hsa_executable_freeze`.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_EXECUTABLE`, `HSA_STATUS_ERROR_FROZEN_EXECUTABLE` when frozen.
pub(crate) fn freeze(core: &mut Core, executable: u64) -> Result<(), HsaStatus> {
    let exe = core.code.executables.get_mut(&executable).ok_or(HsaStatus::ERROR_INVALID_EXECUTABLE)?;
    if exe.frozen {
        return Err(HsaStatus::ERROR_FROZEN_EXECUTABLE);
    }
    exe.frozen = true;
    Ok(())
}

/// `hsa_executable_destroy`: frees its code; the kernel table keeps the other executables'
/// kernels only.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_EXECUTABLE`.
pub(crate) fn destroy_executable(core: &mut Core, executable: u64) -> Result<(), HsaStatus> {
    let exe = core.code.executables.remove(&executable).ok_or(HsaStatus::ERROR_INVALID_EXECUTABLE)?;
    for loaded in &exe.objects {
        // A code region freed twice would be a bug of this module; the table is rebuilt anyway.
        let _ = core.memory.free_kind(loaded.placed.allocation, RegionKind::Code);
    }
    // The kernel table has no removal: enter the remaining code objects again.
    core.kernels.reset();
    for loaded in core.code.executables.values().flat_map(|e| &e.objects) {
        let p = &loaded.placed;
        core.kernels.insert(&loaded.code_object, p.allocation, p.load_va, p.sha256);
    }
    Ok(())
}

/// `hsa_executable_get_symbol_by_name`: a kernel's descriptor symbol `name.kd` in a code object
/// loaded for `agent` (any agent's when not given).
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_EXECUTABLE`, `HSA_STATUS_ERROR_INVALID_AGENT`,
/// `HSA_STATUS_ERROR_INVALID_SYMBOL_NAME` (variables and indirect functions are not modelled).
pub(crate) fn symbol_by_name(core: &Core, executable: u64, name: &str, agent: Option<u64>) -> Result<u64, HsaStatus> {
    let exe = core.code.executables.get(&executable).ok_or(HsaStatus::ERROR_INVALID_EXECUTABLE)?;
    let kernel = name.strip_suffix(KD_SUFFIX).ok_or(HsaStatus::ERROR_INVALID_SYMBOL_NAME)?;
    let for_agent = |loaded: &Loaded| agent.is_none_or(|agent| agent == loaded.agent);
    for (object, loaded) in exe.objects.iter().enumerate().filter(|(_, loaded)| for_agent(loaded)) {
        if let Some(index) = loaded.placed.kernels.iter().position(|k| k.name == kernel) {
            let object = u64::try_from(object).unwrap_or(0);
            let index = u64::try_from(index).unwrap_or(0);
            return Ok(SYMBOL_TAG | ((executable - EXECUTABLE_BASE) << 24) | (object << 12) | index);
        }
    }
    Err(HsaStatus::ERROR_INVALID_SYMBOL_NAME)
}

/// `hsa_executable_symbol_get_info`.
pub(crate) fn symbol_info(core: &Core, symbol: u64, attribute: ExecutableSymbolInfo) -> Answer {
    let invalid = HsaStatus::ERROR_INVALID_EXECUTABLE_SYMBOL;
    if symbol & SYMBOL_TAG == 0 {
        return Err(invalid);
    }
    let executable = EXECUTABLE_BASE + ((symbol & !SYMBOL_TAG) >> 24);
    let exe = core.code.executables.get(&executable).ok_or(invalid)?;
    let object = usize::try_from((symbol >> 12) & 0xfff).unwrap_or(usize::MAX);
    let index = usize::try_from(symbol & 0xfff).unwrap_or(usize::MAX);
    let loaded = exe.objects.get(object).ok_or(invalid)?;
    let kernel = loaded.placed.kernels.get(index).ok_or(invalid)?;
    let u32_of = |v: u32| Ok(v.to_ne_bytes().to_vec());
    let name = format!("{}{KD_SUFFIX}", kernel.name);
    match attribute {
        ExecutableSymbolInfo::TYPE => u32_of(SymbolKind::KERNEL.0),
        ExecutableSymbolInfo::NAME_LENGTH => u32_of(u32::try_from(name.len()).unwrap_or(u32::MAX)),
        ExecutableSymbolInfo::NAME => Ok(name.into_bytes()),
        ExecutableSymbolInfo::LINKAGE => u32_of(SymbolLinkage::PROGRAM.0),
        ExecutableSymbolInfo::IS_DEFINITION => Ok(vec![1]),
        ExecutableSymbolInfo::AGENT => Ok(loaded.agent.to_ne_bytes().to_vec()),
        // The header: 0 while the executable is not frozen.
        ExecutableSymbolInfo::KERNEL_OBJECT => Ok(if exe.frozen { kernel.kd_va } else { 0 }.to_ne_bytes().to_vec()),
        ExecutableSymbolInfo::KERNEL_KERNARG_SEGMENT_SIZE => u32_of(kernel.kernarg_segment_size),
        ExecutableSymbolInfo::KERNEL_KERNARG_SEGMENT_ALIGNMENT => u32_of(kernel.kernarg_segment_align.max(16)),
        ExecutableSymbolInfo::KERNEL_GROUP_SEGMENT_SIZE => u32_of(kernel.group_segment_fixed_size),
        ExecutableSymbolInfo::KERNEL_PRIVATE_SEGMENT_SIZE => u32_of(kernel.private_segment_fixed_size),
        ExecutableSymbolInfo::KERNEL_DYNAMIC_CALLSTACK => Ok(vec![0]),
        _ => Err(HsaStatus::ERROR_INVALID_ARGUMENT),
    }
}
