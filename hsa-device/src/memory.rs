//! Memory of the HSA backend: the allocation table, the three kinds of memory and their copies.
//!
//! - Device memory ([`Kind::Device`]): the GPU agent's coarse-grained device-local pool, never
//!   dereferenced by the host; copies go through the staging buffer (fine-grained system memory)
//!   and `hsa_memory_copy` ([`crate::ffi::Staging`]).
//! - Kernarg memory ([`Kind::Kernarg`]): the CPU agent's `KERNARG_INIT` pool; IB memory
//!   ([`Kind::Ib`]): the CPU agent's fine-grained pool. Both are mapped into the process, so the
//!   host copies into them with `memcpy` and [`store_u32`] is one host store
//!   ([`crate::ffi::HostBlock`]).
//! - Loaded code ([`Kind::Code`]): the runtime's, read and written like device memory, never
//!   freed by the caller.
//!
//! Every access is checked by one lookup, [`Memory::locate`] (`hal::memory::locate` over the
//! table).

use std::collections::BTreeMap;

use hal::{AllocateError, BackendError, DeviceAllocation, FaultReason, FreeError, MemoryFault};
use tape_core::AllocationId;

use crate::ffi::{DeviceBlock, HostBlock};

/// What an allocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Device memory ([`hal::Device::allocate`]).
    Device,
    /// Host-visible kernarg memory ([`hal::Device::allocate_kernarg`]).
    Kernarg,
    /// Host-visible IB memory ([`hal::Device::allocate_ib`]).
    Ib,
    /// A loaded code object's image (the runtime owns it).
    Code,
}

impl Kind {
    /// Whether the host reaches it directly.
    pub(super) fn is_host_visible(self) -> bool {
        matches!(self, Kind::Kernarg | Kind::Ib)
    }
}

/// What holds an allocation's bytes.
#[derive(Debug)]
pub(super) enum Backing {
    /// Host-visible pool memory ([`Kind::Kernarg`], [`Kind::Ib`]).
    Host(HostBlock),
    /// Device pool memory ([`Kind::Device`]).
    Device(DeviceBlock),
    /// A loaded code object's image ([`Kind::Code`]): the runtime's, reached through the device's
    /// executables.
    Code,
}

impl Backing {
    /// Frees the pool memory (code is the runtime's: nothing to free).
    pub(super) fn free(self) -> Result<(), BackendError> {
        match self {
            Backing::Host(block) => block.free(),
            Backing::Device(block) => block.free(),
            Backing::Code => Ok(()),
        }
    }
}

/// One live allocation.
#[derive(Debug)]
pub(super) struct Allocation {
    pub(super) id: AllocationId,
    pub(super) size: u64,
    pub(super) kind: Kind,
    pub(super) backing: Backing,
}

/// The host-visible allocation the last [`store_u32`] went to: a host half stores its words into
/// one or two allocations, so the next store to it needs no range search.
#[derive(Clone, Copy, Debug)]
struct LastStore {
    /// Its first VA.
    va: u64,
    size: u64,
}

/// The allocation table of a device.
#[derive(Debug, Default)]
pub(super) struct Memory {
    // INVARIANT: non-overlapping ranges by first VA, each `size` bytes of its backing.
    table: BTreeMap<u64, Allocation>,
    // INVARIANT: when set, a host-visible entry of `table` (cleared when entries leave it).
    last_store: Option<LastStore>,
    next_id: u32,
}

impl Memory {
    /// Live allocations at most.
    pub(super) const ALLOCATIONS_MAX: usize = 4096;

    /// Enters a new allocation; returns its handle.
    pub(super) fn insert(&mut self, va: u64, size: u64, kind: Kind, backing: Backing) -> DeviceAllocation {
        let id = AllocationId(self.next_id);
        self.next_id = self.next_id.wrapping_add(1);
        self.table.insert(va, Allocation { id, size, kind, backing });
        DeviceAllocation { id, va, size }
    }

    /// Whether another allocation fits [`Self::ALLOCATIONS_MAX`].
    pub(super) fn check_room(&self) -> Result<(), AllocateError> {
        if self.table.len() >= Self::ALLOCATIONS_MAX {
            return Err(AllocateError::TooMany { limit: Self::ALLOCATIONS_MAX });
        }
        Ok(())
    }

    /// The allocation holding all of `[va, va + len)` and the offset of `va` in it: the one range
    /// check of every access.
    pub(super) fn locate(&self, va: u64, len: usize) -> Result<(&Allocation, u64), MemoryFault> {
        let (_, allocation, offset) = hal::memory::locate_entry(&self.table, |a| a.size, va, len)?;
        // CAST: a usize offset is at most 64 bits on every supported host.
        Ok((allocation, offset as u64))
    }

    /// [`Memory::locate`], for a host write.
    pub(super) fn locate_mut(&mut self, va: u64, len: usize) -> Result<(&mut Allocation, u64), MemoryFault> {
        let (base, offset) = hal::memory::locate(&self.table, |a| a.size, va, len)?;
        let unmapped =
            MemoryFault { address: va, len: u64::try_from(len).unwrap_or(u64::MAX), reason: FaultReason::Unmapped };
        let allocation = self.table.get_mut(&base).ok_or(unmapped)?;
        // CAST: a usize offset is at most 64 bits on every supported host.
        Ok((allocation, offset as u64))
    }

    /// The allocation containing `va` and the offset of `va` in it.
    pub(super) fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        self.locate(va, 1).ok().map(|(a, offset)| (a.id, offset))
    }

    /// Removes the caller's allocation `allocation`; returns what backed it.
    pub(super) fn remove(&mut self, allocation: DeviceAllocation) -> Result<Backing, FreeError> {
        let DeviceAllocation { id, va, .. } = allocation;
        match self.table.get(&va) {
            Some(live) if live.id == id && live.kind == Kind::Code => Err(FreeError::DeviceOwned { id, va }),
            Some(live) if live.id == id => {
                self.last_store = None;
                self.table.remove(&va).map(|a| a.backing).ok_or(FreeError::NotLive { id, va })
            }
            _ => Err(FreeError::NotLive { id, va }),
        }
    }

    /// Empties the table (the caller frees the memory); identities restart.
    pub(super) fn take_all(&mut self) -> Vec<Allocation> {
        self.next_id = 0;
        self.last_store = None;
        std::mem::take(&mut self.table).into_values().collect()
    }
}

/// One host store of `value` at `va` in host-visible memory: into the allocation of the last
/// store when it holds the four bytes, else after a range search.
pub(super) fn store_u32(memory: &mut Memory, va: u64, value: u32) -> Result<(), MemoryFault> {
    let holds =
        |last: &LastStore| va.checked_sub(last.va).and_then(|o| o.checked_add(4)).is_some_and(|end| end <= last.size);
    let not_host_visible = MemoryFault { address: va, len: 4, reason: FaultReason::NotHostVisible };
    let base = match memory.last_store.filter(holds) {
        Some(last) => last.va,
        None => {
            let (allocation, offset) = memory.locate(va, 4)?;
            if !allocation.kind.is_host_visible() {
                return Err(not_host_visible);
            }
            let last = LastStore { va: va - offset, size: allocation.size };
            memory.last_store = Some(last);
            last.va
        }
    };
    match memory.table.get_mut(&base).map(|a| &mut a.backing) {
        Some(Backing::Host(block)) => {
            block.store_u32(va - base, value);
            Ok(())
        }
        Some(_) => Err(not_host_visible),
        None => Err(MemoryFault { address: va, len: 4, reason: FaultReason::Unmapped }),
    }
}
