//! Memory pools, allocations, access and copies.

use core::ffi::c_void;

use hsa_sys::{Agent, AmdMemoryPool, AmdMemoryPoolInfo, HsaStatus, MemoryPoolCallback};

use super::{address, pointer, status, write_answer, write_out};
use crate::pools::{self, Pool};
use crate::runtime;

/// `hsa_amd_agent_iterate_memory_pools`: a GPU agent's device pool; the CPU agent's system pool
/// and kernarg pool.
///
/// # Safety
/// `callback` must be safe to call with `data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: Agent,
    callback: Option<MemoryPoolCallback>,
    data: *mut c_void,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let Some(callback) = callback else { return HsaStatus::ERROR_INVALID_ARGUMENT };
    let Some(pools) = Pool::of_agent(agent.handle, &runtime.agents) else { return HsaStatus::ERROR_INVALID_AGENT };
    for pool in pools {
        // SAFETY: the program's callback with the program's data; no lock is held.
        let status = unsafe { callback(AmdMemoryPool { handle: pool.handle() }, data) };
        if status != HsaStatus::SUCCESS {
            return status;
        }
    }
    HsaStatus::SUCCESS
}

/// `hsa_amd_memory_pool_get_info`.
///
/// # Safety
/// `value` must be valid for writes of the attribute's documented type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    memory_pool: AmdMemoryPool,
    attribute: AmdMemoryPoolInfo,
    value: *mut c_void,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let Some(pool) = Pool::from_handle(memory_pool.handle, &runtime.agents) else {
        return HsaStatus::ERROR_INVALID_MEMORY_POOL;
    };
    // SAFETY: the caller's contract for `value`.
    unsafe { write_answer(value, pool.info(attribute)) }
}

/// `hsa_amd_memory_pool_allocate`: `size` zeroed bytes, 4096-byte aligned. Device memory is
/// reachable only through `hsa_memory_copy` (the address faults on a host access); system and
/// kernarg memory is host memory.
///
/// # Safety
/// `ptr` must be valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    memory_pool: AmdMemoryPool,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let Some(pool) = Pool::from_handle(memory_pool.handle, &runtime.agents) else {
        return HsaStatus::ERROR_INVALID_MEMORY_POOL;
    };
    // hsa_ext_amd.h: flags are reserved and must be 0.
    if flags != 0 || ptr.is_null() {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    // CAST: a usize is at most 64 bits on every supported host.
    match pools::allocate(&mut runtime.core(), pool, size as u64) {
        // SAFETY: `ptr` is non-null and valid for a pointer write by the caller's contract.
        Ok(allocated) => unsafe { write_out(ptr, pointer(allocated)) },
        Err(status) => status,
    }
}

/// `hsa_amd_memory_pool_free` of an allocation's first byte.
///
/// # Safety
/// No packet or host access may use the memory afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> HsaStatus {
    match runtime::current() {
        Ok(runtime) => status(pools::free(&mut runtime.core(), address(ptr))),
        Err(status) => status,
    }
}

/// `hsa_amd_agents_allow_access`: every agent of the runtime already reaches every pool, so this
/// checks the agents and that `ptr` lies in an allocation.
///
/// # Safety
/// `agents` must be valid for reads of `num_agents` handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const Agent,
    flags: *const u32,
    ptr: *const c_void,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    // hsa_ext_amd.h: `flags` is reserved and must be NULL.
    if num_agents == 0 || agents.is_null() || !flags.is_null() {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    let count = usize::try_from(num_agents).unwrap_or(usize::MAX);
    // SAFETY: non-null, and valid for `num_agents` reads by the caller's contract; agent handles
    // are plain integers, so any bytes are a valid `Agent`.
    let listed = unsafe { core::slice::from_raw_parts(agents, count) };
    if listed.iter().any(|agent| !runtime.agents.contains(agent.handle)) {
        return HsaStatus::ERROR_INVALID_AGENT;
    }
    if !pools::contains(&runtime.core(), address(ptr)) {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    HsaStatus::SUCCESS
}

/// `hsa_memory_copy` between any two ranges the runtime knows (device, system, kernarg memory,
/// loaded code); anything else is `HSA_STATUS_ERROR_INVALID_ARGUMENT` and nothing is copied.
///
/// # Safety
/// No host thread may access the host-memory parts of the ranges during the copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_memory_copy(dst: *mut c_void, src: *const c_void, size: usize) -> HsaStatus {
    match runtime::current() {
        // CAST: a usize is at most 64 bits on every supported host.
        Ok(runtime) => status(pools::copy(&mut runtime.core(), address(dst), address(src), size as u64)),
        Err(status) => status,
    }
}
