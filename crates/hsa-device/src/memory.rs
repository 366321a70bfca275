//! Memory of the HSA backend: the allocation table, the three kinds of memory and their copies.
//!
//! - Device memory ([`Kind::Device`]): the GPU agent's coarse-grained device-local pool, never
//!   dereferenced by the host; copies go through the staging buffer (fine-grained system memory)
//!   and `hsa_memory_copy`.
//! - Kernarg memory ([`Kind::Kernarg`]): the CPU agent's `KERNARG_INIT` pool; IB memory
//!   ([`Kind::Ib`]): the CPU agent's fine-grained pool. Both are mapped into the process, so the
//!   host copies into them with `memcpy` and [`Memory::store_u32`] is one host store.
//! - Loaded code ([`Kind::Code`]): the runtime's, read and written like device memory, never
//!   freed by the caller.
//!
//! Every access is checked by one lookup, [`Memory::locate`] (`hal::memory::locate` over the
//! table).

use core::ffi::c_void;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use hal::{AllocateError, BackendError, DeviceAllocation, FaultReason, FreeError, MemoryFault};
use hsa_sys::{Agent, AmdMemoryPool, Hsa};
use tape_core::AllocationId;

use super::discover::check;

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

/// One live allocation.
#[derive(Clone, Copy, Debug)]
pub(super) struct Allocation {
    pub(super) id: AllocationId,
    pub(super) size: u64,
    pub(super) kind: Kind,
    /// The runtime pointer: what is freed, and for host-visible memory what the host writes
    /// through. Null for code, which the runtime owns.
    pub(super) ptr: *mut c_void,
}

/// The host-visible allocation the last [`store_u32`] went to: a host half stores its words into
/// one or two allocations, so the next store to it needs no table lookup.
#[derive(Clone, Copy, Debug)]
struct LastStore {
    va: u64,
    allocation: Allocation,
}

/// The allocation table of a device.
#[derive(Debug, Default)]
pub(super) struct Memory {
    // INVARIANT: non-overlapping ranges by first VA; `ptr` of every entry is live pool memory of
    // at least `size` bytes (or null for code).
    table: BTreeMap<u64, Allocation>,
    // INVARIANT: when set, a host-visible entry of `table` (cleared when entries leave it).
    last_store: Option<LastStore>,
    next_id: u32,
}

impl Memory {
    /// Live allocations at most.
    pub(super) const ALLOCATIONS_MAX: usize = 4096;

    /// Enters a new allocation; returns its handle.
    pub(super) fn insert(&mut self, va: u64, size: u64, kind: Kind, ptr: *mut c_void) -> DeviceAllocation {
        let id = AllocationId(self.next_id);
        self.next_id = self.next_id.wrapping_add(1);
        self.table.insert(va, Allocation { id, size, kind, ptr });
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

    /// The allocation containing `va` and the offset of `va` in it.
    pub(super) fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        self.locate(va, 1).ok().map(|(a, offset)| (a.id, offset))
    }

    /// Removes the caller's allocation `allocation`; returns its runtime pointer.
    pub(super) fn remove(&mut self, allocation: DeviceAllocation) -> Result<*mut c_void, FreeError> {
        let DeviceAllocation { id, va, .. } = allocation;
        match self.table.get(&va) {
            Some(live) if live.id == id && live.kind == Kind::Code => Err(FreeError::DeviceOwned { id, va }),
            Some(live) if live.id == id => {
                self.last_store = None;
                Ok(self.table.remove(&va).map_or(core::ptr::null_mut(), |a| a.ptr))
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
/// store when it holds the four bytes, else after a table lookup.
pub(super) fn store_u32(memory: &mut Memory, va: u64, value: u32) -> Result<(), MemoryFault> {
    let holds = |last: &LastStore| {
        va.checked_sub(last.va).and_then(|o| o.checked_add(4)).is_some_and(|end| end <= last.allocation.size)
    };
    let last = memory.last_store.filter(holds);
    let (allocation, offset) = match last {
        Some(last) => (last.allocation, va - last.va),
        None => {
            let (allocation, offset) = memory.locate(va, 4)?;
            if !allocation.kind.is_host_visible() {
                return Err(MemoryFault { address: va, len: 4, reason: FaultReason::NotHostVisible });
            }
            let allocation = *allocation;
            memory.last_store = Some(LastStore { va: va - offset, allocation });
            (allocation, offset)
        }
    };
    let ptr = host_ptr(&allocation, offset, 4);
    if ptr.addr().is_multiple_of(4) {
        // SAFETY: the four bytes lie inside the live host-visible allocation `ptr` points into
        // (checked); aligned, so an atomic (one plain store on x86-64) is allowed, and it is the
        // one store the HAL promises.
        unsafe { AtomicU32::from_ptr(ptr.cast::<u32>()) }.store(value.to_le(), Ordering::Relaxed);
    } else {
        // SAFETY: as above; unaligned, so one unaligned store.
        unsafe { ptr.cast::<u32>().write_unaligned(value.to_le()) };
    }
    Ok(())
}

/// `ptr + offset` of a host-visible allocation, for `len` bytes inside it.
///
/// PANIC: a range outside the allocation or an allocation that is not host-visible is a
/// programmer error (every caller located the range first).
fn host_ptr(allocation: &Allocation, offset: u64, len: usize) -> *mut u8 {
    assert!(allocation.kind.is_host_visible(), "a host access to {:?} memory", allocation.kind);
    // CAST: a usize length is at most 64 bits on every supported host.
    let end = offset.checked_add(len as u64);
    assert!(end.is_some_and(|end| end <= allocation.size), "{len} bytes at {offset} outside {}", allocation.size);
    // `offset` is inside the allocation, whose size fits the host's memory.
    allocation.ptr.cast::<u8>().wrapping_add(usize::try_from(offset).unwrap_or(0))
}

/// Copies `data` into host-visible memory at `offset` of `allocation`.
pub(super) fn host_write(allocation: &Allocation, offset: u64, data: &[u8]) {
    let dst = host_ptr(allocation, offset, data.len());
    // SAFETY: INVARIANT of the table: `ptr` is live host-visible pool memory of `size` bytes, and
    // the range lies inside it (checked); `data` is the caller's buffer, not pool memory.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
}

/// Copies host-visible memory at `offset` of `allocation` into `out`.
pub(super) fn host_read(allocation: &Allocation, offset: u64, out: &mut [u8]) {
    let src = host_ptr(allocation, offset, out.len());
    // SAFETY: as `host_write`, reading.
    unsafe { core::ptr::copy_nonoverlapping(src.cast_const(), out.as_mut_ptr(), out.len()) };
}

/// Zeroes `len` bytes of host-visible memory at `ptr`.
///
/// # Safety
/// `ptr` must be a live host-visible allocation of at least `len` bytes.
pub(super) unsafe fn host_zero(ptr: *mut c_void, len: u64) {
    // `len` is an allocation's size, which fits the host's memory.
    let len = usize::try_from(len).unwrap_or(0);
    // SAFETY: the caller's contract.
    unsafe { core::ptr::write_bytes(ptr.cast::<u8>(), 0, len) };
}

/// `hsa_amd_memory_pool_allocate` of `size` bytes plus access for `agent`.
pub(super) fn pool_allocate(
    hsa: &Hsa,
    pool: AmdMemoryPool,
    size: u64,
    agent: Agent,
) -> Result<*mut c_void, BackendError> {
    let mut ptr: *mut c_void = core::ptr::null_mut();
    let bytes = usize::try_from(size).map_err(|_| BackendError::Limit {
        what: "allocation bytes",
        requested: size,
        limit: u64::try_from(usize::MAX).unwrap_or(u64::MAX),
    })?;
    // SAFETY: `ptr` is a valid out-pointer; flags must be 0 (hsa_ext_amd.h).
    let status = unsafe { (hsa.fns().hsa_amd_memory_pool_allocate)(pool, bytes, 0, &raw mut ptr) };
    check("hsa_amd_memory_pool_allocate", status)?;
    // SAFETY: one agent, no flags, `ptr` a live allocation of the pool.
    let status = unsafe { (hsa.fns().hsa_amd_agents_allow_access)(1, &raw const agent, core::ptr::null(), ptr) };
    if let Err(error) = check("hsa_amd_agents_allow_access", status) {
        // SAFETY: allocated above, unused.
        let _ = unsafe { (hsa.fns().hsa_amd_memory_pool_free)(ptr) };
        return Err(error);
    }
    Ok(ptr)
}

/// `hsa_amd_memory_pool_free`.
///
/// # Safety
/// `ptr` must be a live pool allocation that nothing uses any more (no packet names it).
pub(super) unsafe fn pool_free(hsa: &Hsa, ptr: *mut c_void) -> Result<(), BackendError> {
    // SAFETY: the caller's contract.
    check("hsa_amd_memory_pool_free", unsafe { (hsa.fns().hsa_amd_memory_pool_free)(ptr) })
}

/// A device pointer as the runtime takes it.
pub(super) fn device_ptr(va: u64) -> *mut c_void {
    core::ptr::with_exposed_provenance_mut(usize::try_from(va).unwrap_or(0))
}

/// The host staging buffer: fine-grained system memory the GPU agent may access, for copies to
/// and from device memory.
#[derive(Debug)]
pub(super) struct Staging {
    // INVARIANT: `Staging::BYTES` of live, host-writable pool memory, freed only by `free`.
    ptr: *mut u8,
}

impl Staging {
    /// Bytes of the buffer: the largest piece of one copy.
    pub(super) const BYTES: usize = 4 << 20;

    /// Allocates the buffer from `pool` for `agent`.
    pub(super) fn new(hsa: &Hsa, pool: AmdMemoryPool, agent: Agent) -> Result<Self, BackendError> {
        // CAST: a usize constant, lossless.
        let ptr = pool_allocate(hsa, pool, Self::BYTES as u64, agent)?;
        Ok(Self { ptr: ptr.cast() })
    }

    /// Frees the buffer.
    pub(super) fn free(self, hsa: &Hsa) {
        // SAFETY: INVARIANT of `ptr`; consumed, so freed once; no copy is in flight (copies are
        // synchronous).
        let _ = unsafe { pool_free(hsa, self.ptr.cast()) };
    }

    /// Copies `data` (at most [`Self::BYTES`]) to device memory at `va` (checked by the caller).
    pub(super) fn write(&mut self, hsa: &Hsa, va: u64, data: &[u8]) -> Result<(), BackendError> {
        assert!(data.len() <= Self::BYTES, "a staged copy of {} bytes", data.len());
        // SAFETY: INVARIANT of `ptr`: BYTES writable bytes, not in use by the runtime now.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, data.len()) };
        // SAFETY: the range at `va` lies in one device allocation (the caller located it) and
        // the staging buffer holds `data.len()` bytes.
        let status = unsafe { (hsa.fns().hsa_memory_copy)(device_ptr(va), self.ptr.cast(), data.len()) };
        check("hsa_memory_copy", status)
    }

    /// Copies device memory at `va` (checked by the caller) into `out` (at most [`Self::BYTES`]).
    pub(super) fn read(&mut self, hsa: &Hsa, va: u64, out: &mut [u8]) -> Result<(), BackendError> {
        assert!(out.len() <= Self::BYTES, "a staged copy of {} bytes", out.len());
        // SAFETY: the range at `va` lies in one device allocation (the caller located it) and
        // the staging buffer holds `out.len()` bytes.
        let status = unsafe { (hsa.fns().hsa_memory_copy)(self.ptr.cast(), device_ptr(va), out.len()) };
        check("hsa_memory_copy", status)?;
        // SAFETY: INVARIANT of `ptr`; the copy above filled `out.len()` bytes.
        unsafe { core::ptr::copy_nonoverlapping(self.ptr.cast_const(), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Zeroes `size` bytes of device memory at `va` (checked by the caller).
    pub(super) fn zero(&mut self, hsa: &Hsa, va: u64, size: u64) -> Result<(), BackendError> {
        // SAFETY: INVARIANT of `ptr`.
        unsafe { core::ptr::write_bytes(self.ptr, 0, Self::BYTES) };
        let mut done = 0u64;
        while done < size {
            // CAST: BYTES is a usize constant, lossless.
            let n = (size - done).min(Self::BYTES as u64);
            // SAFETY: `va + done .. + n` lies in the device allocation; the buffer holds n zeroes.
            let status = unsafe {
                (hsa.fns().hsa_memory_copy)(device_ptr(va + done), self.ptr.cast(), usize::try_from(n).unwrap_or(0))
            };
            check("hsa_memory_copy", status)?;
            done += n;
        }
        Ok(())
    }
}
