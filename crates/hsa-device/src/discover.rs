//! Agent, ISA and memory-pool discovery through the HSA runtime's iteration callbacks.
//!
//! Every iteration collects handles into a bounded `Vec` through its callback and queries their
//! attributes afterwards, so the callbacks stay trivial (no runtime calls from inside them).

use core::ffi::c_void;

use hsa_sys::{
    Agent, AgentInfo, AmdMemoryPool, AmdMemoryPoolGlobalFlag, AmdMemoryPoolInfo, AmdSegment, DeviceType, Flags, Hsa,
    HsaStatus, Isa, IsaInfo,
};
use pm4_encoding::Target;

use hal::{BackendError, RuntimeStatus};

/// Agents collected at most; iteration stops (`HSA_STATUS_INFO_BREAK`) at this many.
pub const AGENTS_MAX: usize = 64;
/// ISAs per agent collected at most.
pub const ISAS_MAX: usize = 8;
/// Memory pools per agent collected at most.
pub const POOLS_MAX: usize = 32;
/// Longest ISA name read, in bytes.
pub const ISA_NAME_BYTES_MAX: u32 = 256;
/// The prefix of an AMD GPU ISA name before the processor (`amdgcn-amd-amdhsa--gfx1100`).
pub const ISA_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// An HSA status as the HAL's backend-neutral [`RuntimeStatus`] (named from `hsa-sys`'s
/// transcription of the headers, written in hexadecimal as HSA's documentation does).
#[must_use]
pub fn runtime_status(status: HsaStatus) -> RuntimeStatus {
    RuntimeStatus { value: i64::from(status.0), name: status.name(), hex: true }
}

/// The status of a runtime call as a [`BackendError`] naming the call.
pub(super) fn check(call: &'static str, status: HsaStatus) -> Result<(), BackendError> {
    if status.is_success() { Ok(()) } else { Err(BackendError::Call { call, status: runtime_status(status) }) }
}

/// An iteration's status: `HSA_STATUS_INFO_BREAK` means the callback stopped at its bound.
fn check_iteration(call: &'static str, status: HsaStatus) -> Result<(), BackendError> {
    if status == HsaStatus::INFO_BREAK { Ok(()) } else { check(call, status) }
}

/// Pushes one handle into the bounded `Vec<T>` behind `data`.
///
/// # Safety
/// `data` must point at a live, exclusively borrowed `Vec<T>` whose capacity is the bound.
unsafe fn push_bounded<T>(item: T, data: *mut c_void) -> HsaStatus {
    // SAFETY: the caller passes the `&mut Vec<T>` it handed to the iteration as `data`, and the
    // runtime calls back synchronously on the iterating thread while that borrow is live.
    let out = unsafe { &mut *data.cast::<Vec<T>>() };
    if out.len() == out.capacity() {
        return HsaStatus::INFO_BREAK;
    }
    out.push(item);
    HsaStatus::SUCCESS
}

unsafe extern "C" fn collect_agent(agent: Agent, data: *mut c_void) -> HsaStatus {
    // SAFETY: `agents` hands a `&mut Vec<Agent>` with capacity AGENTS_MAX as `data`.
    unsafe { push_bounded(agent, data) }
}

unsafe extern "C" fn collect_isa(isa: Isa, data: *mut c_void) -> HsaStatus {
    // SAFETY: `isa_names` hands a `&mut Vec<Isa>` with capacity ISAS_MAX as `data`.
    unsafe { push_bounded(isa, data) }
}

unsafe extern "C" fn collect_pool(pool: AmdMemoryPool, data: *mut c_void) -> HsaStatus {
    // SAFETY: `pools` hands a `&mut Vec<AmdMemoryPool>` with capacity POOLS_MAX as `data`.
    unsafe { push_bounded(pool, data) }
}

/// Reads a plain attribute of type `T` with `get(handle, attribute, out)`.
fn info<H: Copy, A: Copy, T: Default>(
    call: &'static str,
    get: unsafe extern "C" fn(H, A, *mut c_void) -> HsaStatus,
    handle: H,
    attribute: A,
) -> Result<T, BackendError> {
    let mut value = T::default();
    // SAFETY: callers pair each attribute with the `T` its header documentation names (a plain
    // integer, bool or handle), so the runtime writes exactly `size_of::<T>()` bytes into `value`.
    let status = unsafe { get(handle, attribute, (&raw mut value).cast()) };
    check(call, status)?;
    Ok(value)
}

/// The GPU agent's smallest and largest queue, in packets.
pub(super) fn queue_sizes(hsa: &Hsa, agent: Agent) -> Result<(u32, u32), BackendError> {
    let get = hsa.fns().hsa_agent_get_info;
    let min: u32 = info("hsa_agent_get_info", get, agent, AgentInfo::QUEUE_MIN_SIZE)?;
    let max: u32 = info("hsa_agent_get_info", get, agent, AgentInfo::QUEUE_MAX_SIZE)?;
    Ok((min, max))
}

/// Every agent, with its device type. The runtime must be initialised.
pub(super) fn agents(hsa: &Hsa) -> Result<Vec<(Agent, DeviceType)>, BackendError> {
    let mut agents: Vec<Agent> = Vec::with_capacity(AGENTS_MAX);
    // SAFETY: the callback only pushes into `agents`, which outlives the synchronous iteration.
    let status = unsafe { (hsa.fns().hsa_iterate_agents)(Some(collect_agent), (&raw mut agents).cast()) };
    check_iteration("hsa_iterate_agents", status)?;
    agents
        .into_iter()
        .map(|agent| {
            // CAST: `hsa_device_type_t` is a C enum, 4 bytes (checked by hsa-sys' layout table).
            let device: u32 = info("hsa_agent_get_info", hsa.fns().hsa_agent_get_info, agent, AgentInfo::DEVICE)?;
            Ok((agent, DeviceType(device)))
        })
        .collect()
}

/// The GPU agents, in the runtime's order.
pub(super) fn gpu_agents(hsa: &Hsa) -> Result<Vec<Agent>, BackendError> {
    Ok(agents(hsa)?.into_iter().filter(|(_, device)| *device == DeviceType::GPU).map(|(agent, _)| agent).collect())
}

/// The ISA names of `agent` (`amdgcn-amd-amdhsa--gfx1100`), in the runtime's order.
pub(super) fn isa_names(hsa: &Hsa, agent: Agent) -> Result<Vec<String>, BackendError> {
    let mut isas: Vec<Isa> = Vec::with_capacity(ISAS_MAX);
    // SAFETY: the callback only pushes into `isas`, which outlives the synchronous iteration.
    let status = unsafe { (hsa.fns().hsa_agent_iterate_isas)(agent, Some(collect_isa), (&raw mut isas).cast()) };
    check_iteration("hsa_agent_iterate_isas", status)?;
    isas.into_iter().map(|isa| isa_name(hsa, isa)).collect()
}

fn isa_name(hsa: &Hsa, isa: Isa) -> Result<String, BackendError> {
    let get = hsa.fns().hsa_isa_get_info_alt;
    let len: u32 = info("hsa_isa_get_info_alt", get, isa, IsaInfo::NAME_LENGTH)?;
    if len > ISA_NAME_BYTES_MAX {
        return Err(BackendError::Limit {
            what: "ISA name bytes",
            requested: u64::from(len),
            limit: u64::from(ISA_NAME_BYTES_MAX),
        });
    }
    // One spare byte: ROCr writes a NUL after the name.
    let mut name = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX) + 1];
    // SAFETY: `HSA_ISA_INFO_NAME` writes `NAME_LENGTH` bytes (plus at most a NUL), which `name`
    // holds.
    let status = unsafe { get(isa, IsaInfo::NAME, name.as_mut_ptr().cast()) };
    check("hsa_isa_get_info_alt", status)?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    name.truncate(end);
    Ok(String::from_utf8_lossy(&name).into_owned())
}

/// The supported target an ISA name denotes: `amdgcn-amd-amdhsa--gfxNNNN`, target features
/// (`:xnack-`) ignored because none of the supported RDNA targets has a feature that changes the
/// lowering. Anything else is `None` (fail closed).
#[must_use]
pub fn target_of_isa(isa: &str) -> Option<Target> {
    let processor = isa.strip_prefix(ISA_PREFIX)?;
    let processor = processor.split(':').next().unwrap_or(processor);
    processor.parse().ok()
}

/// The memory pools the device uses.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pools {
    /// System memory the packet processor reads kernargs from (`KERNARG_INIT`).
    pub kernarg: AmdMemoryPool,
    /// Fine-grained system memory: the host staging buffer and IBs.
    pub fine: AmdMemoryPool,
    /// Coarse-grained device-local memory: allocations.
    pub coarse: AmdMemoryPool,
}

/// The global, runtime-allocatable pools of `agent` with their flags.
fn global_pools(hsa: &Hsa, agent: Agent) -> Result<Vec<(AmdMemoryPool, u32)>, BackendError> {
    let mut pools: Vec<AmdMemoryPool> = Vec::with_capacity(POOLS_MAX);
    // SAFETY: the callback only pushes into `pools`, which outlives the synchronous iteration.
    let status =
        unsafe { (hsa.fns().hsa_amd_agent_iterate_memory_pools)(agent, Some(collect_pool), (&raw mut pools).cast()) };
    check_iteration("hsa_amd_agent_iterate_memory_pools", status)?;
    let get = hsa.fns().hsa_amd_memory_pool_get_info;
    let call = "hsa_amd_memory_pool_get_info";
    let mut out = Vec::new();
    for pool in pools {
        let segment: u32 = info(call, get, pool, AmdMemoryPoolInfo::SEGMENT)?;
        if AmdSegment(segment) != AmdSegment::GLOBAL {
            continue;
        }
        let allowed: bool = info(call, get, pool, AmdMemoryPoolInfo::RUNTIME_ALLOC_ALLOWED)?;
        if allowed {
            out.push((pool, info(call, get, pool, AmdMemoryPoolInfo::GLOBAL_FLAGS)?));
        }
    }
    Ok(out)
}

/// The first pool whose flags contain `flag`.
fn find(pools: &[(AmdMemoryPool, u32)], flag: AmdMemoryPoolGlobalFlag) -> Option<AmdMemoryPool> {
    pools
        .iter()
        .find(|(_, flags)| AmdMemoryPoolGlobalFlag::from_bits_retain(*flags).contains(flag))
        .map(|(pool, _)| *pool)
}

/// Why the pools could not be chosen.
#[derive(Debug)]
pub(super) enum PoolError {
    Call(BackendError),
    Missing(&'static str),
}

/// Kernarg and fine-grained pools from the first CPU agent that has them (ROCr exposes system
/// memory through the CPU agents), the coarse-grained pool from the GPU agent.
pub(super) fn pools(hsa: &Hsa, gpu: Agent) -> Result<(Pools, Agent), PoolError> {
    let coarse = find(&global_pools(hsa, gpu).map_err(PoolError::Call)?, AmdMemoryPoolGlobalFlag::COARSE_GRAINED)
        .ok_or(PoolError::Missing("coarse-grained device-local"))?;
    let cpus = agents(hsa).map_err(PoolError::Call)?;
    for (cpu, _) in cpus.into_iter().filter(|(_, device)| *device == DeviceType::CPU) {
        let system = global_pools(hsa, cpu).map_err(PoolError::Call)?;
        let kernarg = find(&system, AmdMemoryPoolGlobalFlag::KERNARG_INIT);
        // Fine-grained but not the kernarg pool when the agent has both (ROCr and the soft HSA
        // runtime do): staging and IB memory then never compete with kernargs.
        let fine = system
            .iter()
            .find(|(pool, flags)| {
                AmdMemoryPoolGlobalFlag::from_bits_retain(*flags).contains(AmdMemoryPoolGlobalFlag::FINE_GRAINED)
                    && Some(*pool) != kernarg
            })
            .map(|(pool, _)| *pool)
            .or_else(|| find(&system, AmdMemoryPoolGlobalFlag::FINE_GRAINED));
        if let (Some(kernarg), Some(fine)) = (kernarg, fine) {
            return Ok((Pools { kernarg, fine, coarse }, cpu));
        }
    }
    Err(PoolError::Missing("kernarg and fine-grained system"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isa_names_map_to_supported_targets_only() {
        assert_eq!(target_of_isa("amdgcn-amd-amdhsa--gfx1100"), Some(Target::Gfx1100));
        assert_eq!(target_of_isa("amdgcn-amd-amdhsa--gfx1030:xnack-"), Some(Target::Gfx1030));
        assert_eq!(target_of_isa("amdgcn-amd-amdhsa--gfx1201"), Some(Target::Gfx1201));
        for bad in ["amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", "gfx1100", "amdgcn-amd-amdhsa--", ""] {
            assert_eq!(target_of_isa(bad), None, "{bad}");
        }
    }
}
