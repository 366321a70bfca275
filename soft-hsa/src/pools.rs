//! Memory pools: the GPU agent's coarse-grained device-local pool and the CPU agent's
//! fine-grained system pool and kernarg pool, their attributes, allocations and copies.
//!
//! - Device memory lies in the soft device's address space, inside the range the runtime reserved
//!   with no access rights: the program reaches it only through `hsa_memory_copy`, and a host
//!   dereference faults.
//! - System and kernarg memory is real host memory ([`HostBlock`]) that the program reads and
//!   writes directly, entered into the soft device's address space at the same address, so
//!   kernels and packet processors use it as the program's pointers name it.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use hal::{AllocateError, DeviceAllocation};
use hsa_sys::{AmdMemoryPoolGlobalFlag, AmdMemoryPoolInfo, AmdSegment, HsaStatus};
use soft_device::memory::{RegionKind, SimMemory};

use crate::abi::host::HostBlock;
use crate::agents::{Agents, Answer, CPU_AGENT};
use crate::runtime::Core;

/// Allocation granule and alignment of every pool.
pub(crate) const GRANULE_BYTES: u64 = 4096;
/// Bytes of system memory (both CPU pools) allocated at once, at most.
pub const HOST_BYTES_MAX: u64 = 4 << 30;
/// Bytes one `hsa_memory_copy` stages at a time.
pub(crate) const COPY_CHUNK_BYTES: usize = 4 << 20;

/// One of the runtime's memory pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Pool {
    /// The coarse-grained, device-local global pool of the GPU agent with this index. Every
    /// GPU's device memory lies in the one address space of the soft device.
    Device(u8),
    /// The CPU agent's fine-grained system pool.
    System,
    /// The CPU agent's fine-grained kernarg pool (`KERNARG_INIT`).
    Kernarg,
}

/// Handle of the CPU agent's system pool; the kernarg pool's is one more.
const SYSTEM_POOL: u64 = 0x9001_0000;
/// Handle of GPU 0's device pool; GPU `i`'s is `DEVICE_POOL + i`.
const DEVICE_POOL: u64 = 0x9001_0100;

impl Pool {
    /// The pool's `hsa_amd_memory_pool_t` handle.
    pub(crate) fn handle(self) -> u64 {
        match self {
            Pool::Device(index) => DEVICE_POOL + u64::from(index),
            Pool::System => SYSTEM_POOL,
            Pool::Kernarg => SYSTEM_POOL + 1,
        }
    }

    /// The pool with `handle` in a runtime with `agents`.
    pub(crate) fn from_handle(handle: u64, agents: &Agents) -> Option<Self> {
        match handle {
            SYSTEM_POOL => Some(Pool::System),
            h if h == SYSTEM_POOL + 1 => Some(Pool::Kernarg),
            h => {
                let index = u8::try_from(h.checked_sub(DEVICE_POOL)?).ok()?;
                (usize::from(index) < agents.gpu_count()).then_some(Pool::Device(index))
            }
        }
    }

    /// The pools of `agent`, in iteration order; `None` for an unknown agent.
    pub(crate) fn of_agent(agent: u64, agents: &Agents) -> Option<Vec<Pool>> {
        if agent == CPU_AGENT {
            return Some(vec![Pool::System, Pool::Kernarg]);
        }
        let (index, _) = agents.gpu(agent)?;
        Some(vec![Pool::Device(u8::try_from(index).ok()?)])
    }

    fn is_host(self) -> bool {
        !matches!(self, Pool::Device(_))
    }

    fn size(self) -> u64 {
        if self.is_host() { HOST_BYTES_MAX } else { SimMemory::TOTAL_BYTES_MAX }
    }

    /// `hsa_amd_memory_pool_get_info`.
    pub(crate) fn info(self, attribute: AmdMemoryPoolInfo) -> Answer {
        let size = usize::try_from(self.size()).unwrap_or(usize::MAX);
        let granule = usize::try_from(GRANULE_BYTES).unwrap_or(usize::MAX);
        match attribute {
            AmdMemoryPoolInfo::SEGMENT => Ok(AmdSegment::GLOBAL.0.to_ne_bytes().to_vec()),
            AmdMemoryPoolInfo::GLOBAL_FLAGS => {
                let flags = match self {
                    Pool::Device(_) => AmdMemoryPoolGlobalFlag::COARSE_GRAINED.0,
                    Pool::System => AmdMemoryPoolGlobalFlag::FINE_GRAINED.0,
                    Pool::Kernarg => AmdMemoryPoolGlobalFlag::FINE_GRAINED.0 | AmdMemoryPoolGlobalFlag::KERNARG_INIT.0,
                };
                Ok(flags.to_ne_bytes().to_vec())
            }
            AmdMemoryPoolInfo::SIZE | AmdMemoryPoolInfo::ALLOC_MAX_SIZE => Ok(size.to_ne_bytes().to_vec()),
            AmdMemoryPoolInfo::RUNTIME_ALLOC_ALLOWED => Ok(vec![1]),
            AmdMemoryPoolInfo::RUNTIME_ALLOC_GRANULE | AmdMemoryPoolInfo::RUNTIME_ALLOC_ALIGNMENT => {
                Ok(granule.to_ne_bytes().to_vec())
            }
            AmdMemoryPoolInfo::ACCESSIBLE_BY_ALL => Ok(vec![u8::from(self.is_host())]),
            _ => Err(HsaStatus::ERROR_INVALID_ARGUMENT),
        }
    }
}

/// One live allocation of a pool.
#[derive(Clone, Copy, Debug)]
struct PoolAllocation {
    pool: Pool,
    allocation: DeviceAllocation,
}

/// The runtime's allocations, inside [`Core`].
#[derive(Debug, Default)]
pub(crate) struct PoolState {
    /// By first address.
    allocations: BTreeMap<u64, PoolAllocation>,
    /// Bytes of live system memory.
    host_bytes: u64,
    /// Pools whose next allocation fails (an injected fault).
    fail_next: std::collections::BTreeSet<Pool>,
}

/// `hsa_amd_memory_pool_allocate` of `size` bytes; returns the address.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_ALLOCATION` for 0 bytes or more than the pool holds,
/// `HSA_STATUS_ERROR_OUT_OF_RESOURCES` when a limit is reached or a fault was injected.
pub(crate) fn allocate(core: &mut Core, pool: Pool, size: u64) -> Result<u64, HsaStatus> {
    if size == 0 || size > pool.size() {
        return Err(HsaStatus::ERROR_INVALID_ALLOCATION);
    }
    if core.pools.fail_next.remove(&pool) {
        return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
    }
    let allocation = if pool.is_host() {
        let rounded = size.next_multiple_of(GRANULE_BYTES);
        if core.pools.host_bytes + rounded > HOST_BYTES_MAX {
            return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
        }
        let len = usize::try_from(rounded).map_err(|_| HsaStatus::ERROR_INVALID_ALLOCATION)?;
        let align = usize::try_from(GRANULE_BYTES).unwrap_or(usize::MAX);
        let block = HostBlock::new(len, align).ok_or(HsaStatus::ERROR_OUT_OF_RESOURCES)?;
        let address = block.addr();
        let allocation = core.memory.map_external(address, Arc::new(block), RegionKind::HostVisible);
        let allocation = allocation.map_err(allocate_status)?;
        core.pools.host_bytes += rounded;
        allocation
    } else {
        core.memory.allocate(size).map_err(allocate_status)?
    };
    core.pools.allocations.insert(allocation.va, PoolAllocation { pool, allocation });
    Ok(allocation.va)
}

fn allocate_status(error: AllocateError) -> HsaStatus {
    match error {
        AllocateError::Empty | AllocateError::TooLarge { .. } => HsaStatus::ERROR_INVALID_ALLOCATION,
        _ => HsaStatus::ERROR_OUT_OF_RESOURCES,
    }
}

/// `hsa_amd_memory_pool_free` of the allocation at `address`.
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_ALLOCATION` when no allocation starts there.
pub(crate) fn free(core: &mut Core, address: u64) -> Result<(), HsaStatus> {
    let live = core.pools.allocations.remove(&address).ok_or(HsaStatus::ERROR_INVALID_ALLOCATION)?;
    let freed = if live.pool.is_host() {
        core.pools.host_bytes -= live.allocation.size;
        core.memory.free_kind(live.allocation, RegionKind::HostVisible)
    } else {
        core.memory.free(live.allocation)
    };
    freed.map_err(|_| HsaStatus::ERROR_INVALID_ALLOCATION)
}

/// Whether `address` lies inside a live pool allocation.
pub(crate) fn contains(core: &Core, address: u64) -> bool {
    core.pools
        .allocations
        .range(..=address)
        .next_back()
        .is_some_and(|(&base, live)| address - base < live.allocation.size)
}

/// Arms an injected fault: the next allocation from `pool` fails.
pub(crate) fn fail_next(core: &mut Core, pool: Pool) {
    core.pools.fail_next.insert(pool);
}

/// `hsa_memory_copy` of `size` bytes from `src` to `dst`, each inside one range of the soft
/// device's address space (device memory, system memory, loaded code).
///
/// # Errors
/// `HSA_STATUS_ERROR_INVALID_ARGUMENT` when a range is not inside one allocation (nothing is
/// copied then).
pub(crate) fn copy(core: &mut Core, dst: u64, src: u64, size: u64) -> Result<(), HsaStatus> {
    if size == 0 {
        return Ok(());
    }
    let known = |va| core.memory.resolve_range(va, size).is_some();
    if !known(dst) || !known(src) {
        return Err(HsaStatus::ERROR_INVALID_ARGUMENT);
    }
    let mut chunk = vec![0u8; COPY_CHUNK_BYTES.min(usize::try_from(size).unwrap_or(usize::MAX))];
    let mut done = 0u64;
    while done < size {
        // CAST: chunk.len() <= COPY_CHUNK_BYTES, lossless.
        let n = (size - done).min(chunk.len() as u64);
        let part = &mut chunk[..usize::try_from(n).unwrap_or(0)];
        let faulted = core.memory.read(src + done, part).and_then(|()| core.memory.write(dst + done, part));
        faulted.map_err(|_| HsaStatus::ERROR_INVALID_ARGUMENT)?;
        done += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_belong_to_their_agents_and_say_what_they_are() {
        let agents = Agents::new(vec![pm4_encoding::Target::Gfx1100, pm4_encoding::Target::Gfx1030]);
        let second = crate::agents::gpu_agent(1);
        assert_eq!(Pool::of_agent(second, &agents), Some(vec![Pool::Device(1)]));
        assert_eq!(Pool::of_agent(CPU_AGENT, &agents), Some(vec![Pool::System, Pool::Kernarg]));
        assert_eq!(Pool::of_agent(crate::agents::gpu_agent(2), &agents), None);
        for pool in [Pool::Device(0), Pool::Device(1), Pool::System, Pool::Kernarg] {
            assert_eq!(Pool::from_handle(pool.handle(), &agents), Some(pool));
        }
        assert_eq!(Pool::from_handle(Pool::Device(2).handle(), &agents), None);
        assert_eq!(Pool::from_handle(1, &agents), None);
        let flags = Pool::Kernarg.info(AmdMemoryPoolInfo::GLOBAL_FLAGS).unwrap();
        assert_eq!(flags, 3u32.to_ne_bytes());
        assert_eq!(Pool::Device(0).info(AmdMemoryPoolInfo::GLOBAL_FLAGS).unwrap(), 4u32.to_ne_bytes());
        assert_eq!(Pool::Device(0).info(AmdMemoryPoolInfo::ACCESSIBLE_BY_ALL).unwrap(), [0]);
        assert_eq!(Pool::System.info(AmdMemoryPoolInfo(99)), Err(HsaStatus::ERROR_INVALID_ARGUMENT));
    }
}
