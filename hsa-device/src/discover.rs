//! Agent, ISA and memory-pool discovery through the HSA runtime's iteration callbacks.
//!
//! Every iteration (`crate::ffi::Runtime::agents`, `isas`, `pools`) collects handles into a
//! bounded `Vec` through its callback and queries their attributes afterwards, so the callbacks
//! stay trivial (no runtime calls from inside them).

use hsa_sys::{Agent, AmdMemoryPool, AmdMemoryPoolGlobalFlag, AmdSegment, DeviceType, Flags, HsaStatus};
use pm4_encoding::Target;

use hal::{BackendError, RuntimeStatus};

use crate::ffi::{AgentU32, Runtime, SystemPool};

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
pub(crate) fn check(call: &'static str, status: HsaStatus) -> Result<(), BackendError> {
    if status.is_success() { Ok(()) } else { Err(BackendError::Call { call, status: runtime_status(status) }) }
}

/// An iteration's status: `HSA_STATUS_INFO_BREAK` means the callback stopped at its bound.
pub(crate) fn check_iteration(call: &'static str, status: HsaStatus) -> Result<(), BackendError> {
    if status == HsaStatus::INFO_BREAK { Ok(()) } else { check(call, status) }
}

/// The GPU agent's smallest and largest queue, in packets.
pub(super) fn queue_sizes(runtime: &Runtime, agent: Agent) -> Result<(u32, u32), BackendError> {
    Ok((runtime.agent_u32(agent, AgentU32::QueueMinSize)?, runtime.agent_u32(agent, AgentU32::QueueMaxSize)?))
}

/// Every agent, with its device type.
pub(super) fn agents(runtime: &Runtime) -> Result<Vec<(Agent, DeviceType)>, BackendError> {
    runtime
        .agents()?
        .into_iter()
        .map(|agent| Ok((agent, DeviceType(runtime.agent_u32(agent, AgentU32::Device)?))))
        .collect()
}

/// The GPU agents, in the runtime's order.
pub(super) fn gpu_agents(runtime: &Runtime) -> Result<Vec<Agent>, BackendError> {
    Ok(agents(runtime)?.into_iter().filter(|(_, device)| *device == DeviceType::GPU).map(|(agent, _)| agent).collect())
}

/// The ISA names of `agent` (`amdgcn-amd-amdhsa--gfx1100`), in the runtime's order.
pub(super) fn isa_names(runtime: &Runtime, agent: Agent) -> Result<Vec<String>, BackendError> {
    runtime.isas(agent)?.into_iter().map(|isa| runtime.isa_name(isa)).collect()
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
    pub kernarg: SystemPool,
    /// Fine-grained system memory: the host staging buffer and IBs.
    pub fine: SystemPool,
    /// Coarse-grained device-local memory: allocations.
    pub coarse: AmdMemoryPool,
}

/// Whether `pool` is a global pool the runtime allocates from, and its flags.
fn global_flags(runtime: &Runtime, pool: AmdMemoryPool) -> Result<Option<AmdMemoryPoolGlobalFlag>, BackendError> {
    if AmdSegment(runtime.pool_segment(pool)?) != AmdSegment::GLOBAL || !runtime.pool_alloc_allowed(pool)? {
        return Ok(None);
    }
    Ok(Some(AmdMemoryPoolGlobalFlag::from_bits_retain(runtime.pool_global_flags(pool)?)))
}

/// The global, runtime-allocatable pools of `agent` with their flags.
fn global_pools(
    runtime: &Runtime,
    agent: Agent,
) -> Result<Vec<(AmdMemoryPool, AmdMemoryPoolGlobalFlag)>, BackendError> {
    let mut out = Vec::new();
    for pool in runtime.pools(agent)? {
        if let Some(flags) = global_flags(runtime, pool)? {
            out.push((pool, flags));
        }
    }
    Ok(out)
}

/// The global, runtime-allocatable system pools of a CPU agent with their flags.
fn global_system_pools(
    runtime: &Runtime,
    cpu: Agent,
) -> Result<Vec<(SystemPool, AmdMemoryPoolGlobalFlag)>, BackendError> {
    let mut out = Vec::new();
    for pool in runtime.system_pools(cpu)? {
        if let Some(flags) = global_flags(runtime, pool.pool())? {
            out.push((pool, flags));
        }
    }
    Ok(out)
}

/// The first pool whose flags contain `flag`.
fn find<P: Copy>(pools: &[(P, AmdMemoryPoolGlobalFlag)], flag: AmdMemoryPoolGlobalFlag) -> Option<P> {
    pools.iter().find(|(_, flags)| flags.contains(flag)).map(|(pool, _)| *pool)
}

/// Why the pools could not be chosen.
#[derive(Debug)]
pub(super) enum PoolError {
    Call(BackendError),
    Missing(&'static str),
}

/// Kernarg and fine-grained pools from the first CPU agent that has them (ROCr exposes system
/// memory through the CPU agents), the coarse-grained pool from the GPU agent.
pub(super) fn pools(runtime: &Runtime, gpu: Agent) -> Result<(Pools, Agent), PoolError> {
    let coarse = find(&global_pools(runtime, gpu).map_err(PoolError::Call)?, AmdMemoryPoolGlobalFlag::COARSE_GRAINED)
        .ok_or(PoolError::Missing("coarse-grained device-local"))?;
    let cpus = agents(runtime).map_err(PoolError::Call)?;
    for (cpu, _) in cpus.into_iter().filter(|(_, device)| *device == DeviceType::CPU) {
        let system = global_system_pools(runtime, cpu).map_err(PoolError::Call)?;
        let kernarg = find(&system, AmdMemoryPoolGlobalFlag::KERNARG_INIT);
        // Fine-grained but not the kernarg pool when the agent has both (ROCr and the soft HSA
        // runtime do): staging and IB memory then never compete with kernargs.
        let fine = system
            .iter()
            .find(|(pool, flags)| flags.contains(AmdMemoryPoolGlobalFlag::FINE_GRAINED) && Some(*pool) != kernarg)
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
