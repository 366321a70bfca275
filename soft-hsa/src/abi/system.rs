//! Initialisation, status strings, system attributes, agents and ISAs.

use core::ffi::{c_char, c_void};
use std::ffi::CString;
use std::sync::OnceLock;

use hsa_sys::{Agent, AgentCallback, AgentInfo, HsaStatus, Isa, IsaCallback, IsaInfo, SystemInfo};

use super::{address, write_answer, write_out};
use crate::agents::{self, BUILD_VERSION, CPU_AGENT};
use crate::runtime;

/// `hsa_init`: takes a reference to the runtime, starting it at the first one with the target
/// `REDLINE_SOFT_HSA_ISA` names. An unsupported value fails with
/// `HSA_STATUS_ERROR_INVALID_ISA_NAME` (and a line on standard error naming it).
///
/// # Safety
/// None beyond the C ABI: callable at any time from any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_init() -> HsaStatus {
    runtime::init()
}

/// `hsa_shut_down`: drops a reference; the last one destroys every queue (joining its processor
/// thread), signal, executable and allocation.
///
/// # Safety
/// The program must not use any runtime object after the last reference is dropped.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_shut_down() -> HsaStatus {
    runtime::shut_down()
}

/// `NAME: description` of every status, NUL-terminated, for the life of the process.
fn status_texts() -> &'static [(HsaStatus, CString)] {
    static TEXTS: OnceLock<Vec<(HsaStatus, CString)>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        HsaStatus::ALL
            .iter()
            .filter_map(|&(status, name, description)| {
                CString::new(format!("{name}: {description}")).ok().map(|text| (status, text))
            })
            .collect()
    })
}

/// `hsa_status_string`: points `status_string` at the runtime's text for `status`. Like ROCr's,
/// it works before `hsa_init` too, so that a failed `hsa_init` can be explained.
///
/// # Safety
/// `status_string` must be null or valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_status_string(status: HsaStatus, status_string: *mut *const c_char) -> HsaStatus {
    let Some((_, text)) = status_texts().iter().find(|(known, _)| *known == status) else {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    };
    // SAFETY: the caller's contract; the text has static storage (see `status_texts`).
    unsafe { write_out(status_string, text.as_ptr()) }
}

/// `hsa_system_get_info`.
///
/// # Safety
/// `value` must be valid for writes of the attribute's documented type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_system_get_info(attribute: SystemInfo, value: *mut c_void) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let answer = agents::system_info(attribute, runtime.timestamp(), address(BUILD_VERSION.as_ptr()));
    // SAFETY: the caller's contract for `value`.
    unsafe { write_answer(value, answer) }
}

/// `hsa_iterate_agents`: the CPU agent, then the GPU agents in `REDLINE_SOFT_HSA_ISA`'s order. A
/// callback status other than `HSA_STATUS_SUCCESS` ends the iteration and is returned.
///
/// # Safety
/// `callback` must be safe to call with `data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_iterate_agents(callback: Option<AgentCallback>, data: *mut c_void) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let Some(callback) = callback else { return HsaStatus::ERROR_INVALID_ARGUMENT };
    for handle in runtime.agents.handles() {
        // SAFETY: the program's callback with the program's data, as it asked; the runtime holds
        // no lock, so the callback may call back into it.
        let status = unsafe { callback(Agent { handle }, data) };
        if status != HsaStatus::SUCCESS {
            return status;
        }
    }
    HsaStatus::SUCCESS
}

/// `hsa_agent_get_info`, for the `hsa_agent_info_t` and `hsa_amd_agent_info_t` attributes the
/// runtime answers (see `agents`).
///
/// # Safety
/// `value` must be valid for writes of the attribute's documented type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_agent_get_info(agent: Agent, attribute: AgentInfo, value: *mut c_void) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let answer = agents::agent_info(&runtime.agents, agent.handle, attribute.0);
    // SAFETY: the caller's contract for `value`.
    unsafe { write_answer(value, answer) }
}

/// `hsa_agent_iterate_isas`: a GPU agent's one ISA; the CPU agent has none.
///
/// # Safety
/// `callback` must be safe to call with `data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: Agent,
    callback: Option<IsaCallback>,
    data: *mut c_void,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let Some(callback) = callback else { return HsaStatus::ERROR_INVALID_ARGUMENT };
    match runtime.agents.gpu(agent.handle) {
        // SAFETY: the program's callback with the program's data; no lock is held.
        Some((_, target)) => unsafe { callback(Isa { handle: agents::isa_handle(target) }, data) },
        None if agent.handle == CPU_AGENT => HsaStatus::SUCCESS,
        None => HsaStatus::ERROR_INVALID_AGENT,
    }
}

/// `hsa_isa_get_info_alt`. `HSA_ISA_INFO_NAME` writes exactly `HSA_ISA_INFO_NAME_LENGTH` bytes.
///
/// # Safety
/// `value` must be valid for writes of the attribute's documented type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_isa_get_info_alt(isa: Isa, attribute: IsaInfo, value: *mut c_void) -> HsaStatus {
    if let Err(status) = runtime::current() {
        return status;
    }
    // SAFETY: the caller's contract for `value`.
    unsafe { write_answer(value, agents::isa_info(isa.handle, attribute)) }
}
