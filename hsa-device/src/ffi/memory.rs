//! Pool memory: host-visible blocks the host reads and writes directly, device blocks only the
//! runtime touches, and the staging buffer through which the runtime copies between them.

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use hal::BackendError;
use hsa_sys::{Agent, AmdMemoryPool, HsaStatus};

use super::{Runtime, SystemPool};
use crate::discover::{check, runtime_status};

/// A pool allocation of this crate's, freed only by [`PoolAllocation::free`].
#[derive(Debug)]
struct PoolAllocation {
    runtime: Runtime,
    // INVARIANT: a live allocation of `len` bytes that `hsa_amd_memory_pool_allocate` returned
    // under `runtime`; freed only by `free`, which consumes this value.
    ptr: NonNull<c_void>,
    len: usize,
}

impl PoolAllocation {
    /// `hsa_amd_memory_pool_allocate` of `size` bytes from `pool`.
    fn allocate(runtime: &Runtime, pool: AmdMemoryPool, size: u64) -> Result<Self, BackendError> {
        let len = usize::try_from(size).map_err(|_| BackendError::Limit {
            what: "allocation bytes",
            requested: size,
            limit: u64::try_from(usize::MAX).unwrap_or(u64::MAX),
        })?;
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is a valid out-pointer; flags must be 0 (hsa_ext_amd.h).
        let status = unsafe { (runtime.hsa().fns().hsa_amd_memory_pool_allocate)(pool, len, 0, &raw mut ptr) };
        check("hsa_amd_memory_pool_allocate", status)?;
        let ptr = NonNull::new(ptr).ok_or(BackendError::Call {
            call: "hsa_amd_memory_pool_allocate",
            status: runtime_status(HsaStatus::ERROR_OUT_OF_RESOURCES),
        })?;
        Ok(Self { runtime: runtime.clone(), ptr, len })
    }

    /// `hsa_amd_memory_pool_allocate` of `size` bytes from `pool`, then access for `agent`; the
    /// allocation is freed again when access cannot be granted.
    fn allocate_for(runtime: &Runtime, pool: AmdMemoryPool, size: u64, agent: Agent) -> Result<Self, BackendError> {
        let allocation = Self::allocate(runtime, pool, size)?;
        match allocation.allow_access(agent) {
            Ok(()) => Ok(allocation),
            Err(error) => {
                // Allocated just above; nothing else has seen it.
                let _ = allocation.free();
                Err(error)
            }
        }
    }

    /// `hsa_amd_agents_allow_access` of the allocation for `agent` alone.
    fn allow_access(&self, agent: Agent) -> Result<(), BackendError> {
        // SAFETY: one agent, read from a valid pointer; no flags (null); INVARIANT of `ptr`: a live
        // pool allocation of the runtime.
        let status = unsafe {
            (self.runtime.hsa().fns().hsa_amd_agents_allow_access)(
                1,
                &raw const agent,
                core::ptr::null(),
                self.ptr.as_ptr(),
            )
        };
        check("hsa_amd_agents_allow_access", status)
    }

    /// The allocation's address.
    fn va(&self) -> u64 {
        // CAST: a usize address is at most 64 bits on every supported host.
        self.ptr.as_ptr().expose_provenance() as u64
    }

    /// `hsa_amd_memory_pool_free`.
    fn free(self) -> Result<(), BackendError> {
        // SAFETY: INVARIANT of `ptr`: a live allocation of the runtime's pool; `self` is consumed,
        // so it is freed once, and the blocks that own an allocation hand out no reference into it
        // that outlives them.
        check("hsa_amd_memory_pool_free", unsafe {
            (self.runtime.hsa().fns().hsa_amd_memory_pool_free)(self.ptr.as_ptr())
        })
    }
}

/// Host-visible pool memory: an allocation of a CPU agent's pool, which is system memory the
/// host reads and writes at its pointer, and which the GPU agent it was allocated for may access.
#[derive(Debug)]
pub(crate) struct HostBlock {
    // INVARIANT: an allocation of a `SystemPool`, mapped into the process: `allocation.len` bytes
    // of host memory at `allocation.ptr`, freed only by `free`, which consumes the block.
    allocation: PoolAllocation,
}

impl HostBlock {
    /// Allocates `size` bytes of `pool` that `agent` may access. The bytes are not initialised
    /// by the runtime's contract; [`HostBlock::zero`] zeroes them.
    pub(crate) fn allocate(runtime: &Runtime, pool: SystemPool, size: u64, agent: Agent) -> Result<Self, BackendError> {
        Ok(Self { allocation: PoolAllocation::allocate_for(runtime, pool.pool(), size, agent)? })
    }

    /// The first byte's address (also its GPU VA: system memory is mapped at the same address).
    pub(crate) fn va(&self) -> u64 {
        self.allocation.va()
    }

    /// The first byte.
    fn ptr(&self) -> *mut u8 {
        self.allocation.ptr.as_ptr().cast()
    }

    /// `offset` as an index with `len` bytes from it inside the block.
    ///
    /// PANIC: a range outside the block is a programmer error (every caller located or sized the
    /// range against the block first).
    fn at(&self, offset: u64, len: usize) -> usize {
        let size = self.allocation.len;
        let start = usize::try_from(offset).ok().filter(|&start| start.checked_add(len).is_some_and(|end| end <= size));
        start.unwrap_or_else(|| panic!("{len} bytes at {offset} outside a host block of {size} bytes"))
    }

    /// Copies `data` into the block at `offset`.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) {
        let at = self.at(offset, data.len());
        // SAFETY: INVARIANT of `allocation`: `len` bytes of live host memory, and
        // `[at, at + data.len())` lies inside them (checked); `data` is the caller's buffer, not
        // this block (`&mut self`).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr().add(at), data.len()) };
    }

    /// Copies the block's bytes at `offset` into `out`.
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) {
        let at = self.at(offset, out.len());
        // SAFETY: as `write`, reading; `out` is the caller's exclusive buffer, not this block.
        unsafe { core::ptr::copy_nonoverlapping(self.ptr().add(at).cast_const(), out.as_mut_ptr(), out.len()) };
    }

    /// Zeroes every byte of the block.
    pub(crate) fn zero(&mut self) {
        // SAFETY: INVARIANT of `allocation`: `len` writable bytes of host memory.
        unsafe { core::ptr::write_bytes(self.ptr(), 0, self.allocation.len) };
    }

    /// One little-endian store of `value` at `offset`: an atomic store where the address is
    /// 4-byte aligned (one plain store on x86-64), else one unaligned store.
    pub(crate) fn store_u32(&mut self, offset: u64, value: u32) {
        let at = self.at(offset, 4);
        // The four bytes lie inside the block (checked), so the offset pointer is in bounds.
        let ptr = self.ptr().wrapping_add(at).cast::<u32>();
        // SAFETY: the four bytes lie inside the live block (checked). Where they are 4-byte
        // aligned they may be viewed as an atomic for the one store the HAL promises; otherwise
        // they take one unaligned store.
        unsafe {
            if ptr.is_aligned() {
                AtomicU32::from_ptr(ptr).store(value.to_le(), Ordering::Relaxed);
            } else {
                ptr.write_unaligned(value.to_le());
            }
        }
    }

    /// `hsa_amd_memory_pool_free` of the block.
    pub(crate) fn free(self) -> Result<(), BackendError> {
        self.allocation.free()
    }
}

/// Device pool memory: an allocation the host never dereferences; the runtime copies into and
/// out of it ([`Staging`]).
#[derive(Debug)]
pub(crate) struct DeviceBlock {
    // INVARIANT: freed only by `free`, which consumes the block.
    allocation: PoolAllocation,
}

impl DeviceBlock {
    /// Allocates `size` bytes of `pool` that `agent` may access.
    pub(crate) fn allocate(
        runtime: &Runtime,
        pool: AmdMemoryPool,
        size: u64,
        agent: Agent,
    ) -> Result<Self, BackendError> {
        Ok(Self { allocation: PoolAllocation::allocate_for(runtime, pool, size, agent)? })
    }

    /// The block's GPU VA.
    pub(crate) fn va(&self) -> u64 {
        self.allocation.va()
    }

    /// The whole block.
    pub(crate) fn whole(&self) -> DeviceRange<'_> {
        DeviceRange { va: self.va(), len: self.allocation.len, _owner: PhantomData }
    }

    /// `len` bytes at `offset` of the block, when they lie inside it.
    pub(crate) fn range(&self, offset: u64, len: usize) -> Option<DeviceRange<'_>> {
        let start = usize::try_from(offset).ok()?;
        (start.checked_add(len)? <= self.allocation.len).then(|| DeviceRange {
            va: self.va() + offset,
            len,
            _owner: PhantomData,
        })
    }

    /// `hsa_amd_memory_pool_free` of the block.
    pub(crate) fn free(self) -> Result<(), BackendError> {
        self.allocation.free()
    }
}

/// A range of device memory the runtime may copy to or from: inside a live [`DeviceBlock`] or a
/// live [`super::Executable`]'s loaded image, which it borrows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeviceRange<'a> {
    // INVARIANT: `[va, va + len)` lies inside device memory of the runtime that the borrowed owner
    // keeps alive for `'a`.
    va: u64,
    len: usize,
    _owner: PhantomData<&'a ()>,
}

impl<'a> DeviceRange<'a> {
    /// A range the caller proved inside a live owner of `'a`.
    ///
    /// # Safety
    /// `[va, va + len)` must lie inside device memory of the runtime that stays allocated for `'a`.
    pub(super) unsafe fn new(va: u64, len: usize) -> Self {
        Self { va, len, _owner: PhantomData }
    }

    /// Bytes of the range.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The `len` bytes at `offset` of this range, when they lie inside it.
    pub(crate) fn sub(&self, offset: usize, len: usize) -> Option<DeviceRange<'a>> {
        // CAST: a usize offset is at most 64 bits on every supported host.
        (offset.checked_add(len)? <= self.len).then(|| DeviceRange {
            va: self.va + offset as u64,
            len,
            _owner: PhantomData,
        })
    }

    fn ptr(&self) -> *mut c_void {
        core::ptr::with_exposed_provenance_mut(usize::try_from(self.va).unwrap_or(0))
    }
}

/// The host staging buffer: host-visible memory the GPU agent may access, through which the
/// runtime copies to and from device memory (`hsa_memory_copy`).
#[derive(Debug)]
pub(crate) struct Staging {
    // INVARIANT: `Staging::BYTES` long; not in use by the runtime between calls (copies are
    // synchronous).
    block: HostBlock,
}

/// `hsa_memory_copy` of `len` bytes.
///
/// # Safety
/// `dst` and `src` must each be `len` bytes of memory the runtime may access (a live host block,
/// or a [`DeviceRange`]'s device memory) that nothing else accesses during the call.
unsafe fn memory_copy(runtime: &Runtime, dst: *mut c_void, src: *const c_void, len: usize) -> Result<(), BackendError> {
    // SAFETY: the caller's contract.
    check("hsa_memory_copy", unsafe { (runtime.hsa().fns().hsa_memory_copy)(dst, src, len) })
}

impl Staging {
    /// Bytes of the buffer: the largest piece of one copy.
    pub(crate) const BYTES: usize = 4 << 20;

    /// Allocates the buffer from `pool` for `agent`.
    pub(crate) fn new(runtime: &Runtime, pool: SystemPool, agent: Agent) -> Result<Self, BackendError> {
        // CAST: a usize constant, lossless.
        Ok(Self { block: HostBlock::allocate(runtime, pool, Self::BYTES as u64, agent)? })
    }

    /// Frees the buffer.
    pub(crate) fn free(self) -> Result<(), BackendError> {
        self.block.free()
    }

    /// Copies `data` (at most [`Self::BYTES`], exactly `dst`'s length) to device memory at `dst`.
    ///
    /// PANIC: a longer piece, or one of another length than `dst`, is a programmer error.
    pub(crate) fn copy_to_device(&mut self, dst: DeviceRange<'_>, data: &[u8]) -> Result<(), BackendError> {
        assert!(data.len() <= Self::BYTES && data.len() == dst.len(), "a staged copy of {} bytes", data.len());
        self.block.write(0, data);
        // SAFETY: `dst` is device memory kept alive for the call (INVARIANT of `DeviceRange`); the
        // staging block holds `data.len()` bytes and nothing else uses it now.
        unsafe { memory_copy(&self.block.allocation.runtime, dst.ptr(), self.block.ptr().cast(), data.len()) }
    }

    /// Copies device memory at `src` into `out` (at most [`Self::BYTES`], exactly `src`'s
    /// length).
    ///
    /// PANIC: as [`Staging::copy_to_device`].
    pub(crate) fn copy_from_device(&mut self, src: DeviceRange<'_>, out: &mut [u8]) -> Result<(), BackendError> {
        assert!(out.len() <= Self::BYTES && out.len() == src.len(), "a staged copy of {} bytes", out.len());
        // SAFETY: `src` is device memory kept alive for the call (INVARIANT of `DeviceRange`); the
        // staging block holds `out.len()` bytes and nothing else uses it now.
        unsafe { memory_copy(&self.block.allocation.runtime, self.block.ptr().cast(), src.ptr(), out.len()) }?;
        self.block.read(0, out);
        Ok(())
    }

    /// Zeroes the device memory at `dst`, a buffer's worth at a time.
    pub(crate) fn zero_device(&mut self, dst: DeviceRange<'_>) -> Result<(), BackendError> {
        self.block.zero();
        let mut done = 0;
        while done < dst.len() {
            let n = (dst.len() - done).min(Self::BYTES);
            // PANIC: `done + n <= dst.len()`.
            let piece = dst.sub(done, n).expect("a piece of the range");
            // SAFETY: `piece` is device memory kept alive for the call (INVARIANT of
            // `DeviceRange`); the staging block holds `n` zero bytes and nothing else uses it now.
            unsafe { memory_copy(&self.block.allocation.runtime, piece.ptr(), self.block.ptr().cast(), n) }?;
            done += n;
        }
        Ok(())
    }
}
