//! Code object readers, executables and their symbols.

use core::ffi::{CStr, c_char, c_void};

use hsa_sys::{
    Agent, CodeObjectReader, DefaultFloatRoundingMode, Executable, ExecutableSymbol, ExecutableSymbolInfo, HsaStatus,
    LoadedCodeObject, Profile,
};

use super::{status, write_answer, write_out};
use crate::code;
use crate::runtime;

/// `hsa_code_object_reader_create_from_memory`. The runtime keeps a copy of the bytes, so the
/// memory need not outlive the reader (it must for ROCr).
///
/// # Safety
/// `code_object` must be valid for reads of `size` bytes; `code_object_reader` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    code_object_reader: *mut CodeObjectReader,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    if code_object.is_null() || size == 0 || code_object_reader.is_null() {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null and valid for `size` reads by the caller's contract; copied before return.
    let bytes = unsafe { core::slice::from_raw_parts(code_object.cast::<u8>(), size) };
    match code::create_reader(&mut runtime.core(), bytes) {
        // SAFETY: non-null, valid for a write by the caller's contract.
        Ok(handle) => unsafe { write_out(code_object_reader, CodeObjectReader { handle }) },
        Err(status) => status,
    }
}

/// `hsa_code_object_reader_destroy`.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_code_object_reader_destroy(code_object_reader: CodeObjectReader) -> HsaStatus {
    match runtime::current() {
        Ok(runtime) => status(code::destroy_reader(&mut runtime.core(), code_object_reader.handle)),
        Err(status) => status,
    }
}

/// `hsa_executable_create_alt`: an empty executable of the base or full profile; `options` are
/// ignored.
///
/// # Safety
/// `executable` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_create_alt(
    profile: Profile,
    default_float_rounding_mode: DefaultFloatRoundingMode,
    _options: *const c_char,
    executable: *mut Executable,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let known_mode =
        [DefaultFloatRoundingMode::DEFAULT, DefaultFloatRoundingMode::ZERO, DefaultFloatRoundingMode::NEAR]
            .contains(&default_float_rounding_mode);
    if ![Profile::BASE, Profile::FULL].contains(&profile) || !known_mode || executable.is_null() {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    match code::create_executable(&mut runtime.core()) {
        // SAFETY: non-null, valid for a write by the caller's contract.
        Ok(handle) => unsafe { write_out(executable, Executable { handle }) },
        Err(status) => status,
    }
}

/// `hsa_executable_load_agent_code_object` for a GPU agent; `options` are ignored and
/// `loaded_code_object` may be null.
///
/// # Safety
/// `loaded_code_object` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: Executable,
    agent: Agent,
    code_object_reader: CodeObjectReader,
    _options: *const c_char,
    loaded_code_object: *mut LoadedCodeObject,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let (agents, reader) = (&runtime.agents, code_object_reader.handle);
    let loaded = code::load(&mut runtime.core(), executable.handle, agent.handle, reader, agents);
    match loaded {
        Ok(_) if loaded_code_object.is_null() => HsaStatus::SUCCESS,
        // SAFETY: non-null, valid for a write by the caller's contract.
        Ok(handle) => unsafe { write_out(loaded_code_object, LoadedCodeObject { handle }) },
        Err(status) => status,
    }
}

/// `hsa_executable_freeze`; `options` are ignored.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_freeze(executable: Executable, _options: *const c_char) -> HsaStatus {
    match runtime::current() {
        Ok(runtime) => status(code::freeze(&mut runtime.core(), executable.handle)),
        Err(status) => status,
    }
}

/// `hsa_executable_get_symbol_by_name`: kernel descriptor symbols (`name.kd`); `agent` may be
/// null.
///
/// # Safety
/// `symbol_name` must be a NUL-terminated string; `agent` null or valid for a read; `symbol`
/// valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: Executable,
    symbol_name: *const c_char,
    agent: *const Agent,
    symbol: *mut ExecutableSymbol,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    if symbol_name.is_null() || symbol.is_null() {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let name = unsafe { CStr::from_ptr(symbol_name) };
    let Ok(name) = name.to_str() else { return HsaStatus::ERROR_INVALID_SYMBOL_NAME };
    // SAFETY: null or valid for a read by the caller's contract.
    let agent = unsafe { agent.as_ref() }.map(|agent| agent.handle);
    match code::symbol_by_name(&runtime.core(), executable.handle, name, agent) {
        // SAFETY: non-null, valid for a write by the caller's contract.
        Ok(handle) => unsafe { write_out(symbol, ExecutableSymbol { handle }) },
        Err(status) => status,
    }
}

/// `hsa_executable_symbol_get_info` of a kernel symbol.
///
/// # Safety
/// `value` must be valid for writes of the attribute's documented type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_symbol_get_info(
    executable_symbol: ExecutableSymbol,
    attribute: ExecutableSymbolInfo,
    value: *mut c_void,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let answer = code::symbol_info(&runtime.core(), executable_symbol.handle, attribute);
    // SAFETY: the caller's contract for `value`.
    unsafe { write_answer(value, answer) }
}

/// `hsa_executable_destroy`: frees the executable's code.
///
/// # Safety
/// No queue may run the executable's kernels any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_destroy(executable: Executable) -> HsaStatus {
    match runtime::current() {
        Ok(runtime) => status(code::destroy_executable(&mut runtime.core(), executable.handle)),
        Err(status) => status,
    }
}
