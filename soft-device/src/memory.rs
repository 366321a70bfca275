//! The soft device's GPU virtual address space.
//!
//! VAs have nothing to do with host pointers: the sim picks them itself, from
//! [`SimMemory::VA_BASE`] upward in [`SimMemory::GRANULE_BYTES`] granules with an unmapped guard
//! granule after every allocation, and never hands out a range again once it was used (so a
//! stale pointer into freed memory faults instead of reaching a newer allocation). A caller may
//! also place an allocation at a VA of its choice ([`SimMemory::allocate_at`]) to replay a
//! recorded layout.
//!
//! Every access must lie inside one live allocation; anything else is a [`MemoryFault`] naming
//! the VA and length. An access that runs from one allocation into the next faults too. The
//! address space's own accesses ([`SimMemory::read`], [`SimMemory::write`],
//! [`SimMemory::store_u32`]: host copies and stores, the packet and command processors) report
//! the HAL's [`MemoryFault`]; as the [`DeviceMemory`] the kernels' CPU references run against,
//! the same accesses report the memory model's (`kernel_refs::memory::MemoryFault`), from the
//! same range check.
//!
//! # Memory the device shares with a host
//! A runtime built on the soft device (the soft HSA runtime) hands out host memory that both the
//! host and the device's kernels and packet processor use at the same address (kernarg and
//! fine-grained system memory). [`SimMemory::map_external`] enters such memory as a region whose
//! bytes live in an [`ExternalMemory`] the runtime implements (with the raw-pointer accesses this
//! crate does not make), and [`SimMemory::with_va_range`] confines the VAs the sim chooses to a
//! range the runtime reserved, so they never collide with host pointers.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use kernel_refs::memory::{self as model, DerivedForms, DeviceMemory};
use tape_core::AllocationId;

use hal::{AllocateError, DeviceAllocation, FaultReason, FreeError, MemoryFault};

/// Who owns an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegionKind {
    /// Caller memory from [`SimMemory::allocate`] or [`SimMemory::allocate_at`].
    Buffer,
    /// A loaded code object's image.
    Code,
    /// The device's kernarg memory.
    Kernarg,
    /// An AQL queue's ring of packet slots.
    Ring,
    /// Executable indirect-buffer memory for the command processor (host-visible).
    Ib,
    /// Caller kernarg memory from [`hal::Device::allocate_kernarg`] (host-visible).
    HostVisible,
}

impl RegionKind {
    /// Whether the caller allocated it and may free it.
    #[must_use]
    pub const fn is_caller_owned(self) -> bool {
        matches!(self, RegionKind::Buffer | RegionKind::Ib | RegionKind::HostVisible)
    }

    /// Whether the host stores into it directly ([`hal::Device::store_u32`]).
    #[must_use]
    pub const fn is_host_visible(self) -> bool {
        matches!(self, RegionKind::Ib | RegionKind::HostVisible)
    }
}

/// Bytes the sim does not own: memory a runtime shares between its host and the device, entered
/// with [`SimMemory::map_external`]. Every access the sim makes lies inside `[0, len())`.
///
/// Implementations decide how an access reaches memory that the host may touch at the same time
/// (the soft HSA runtime copies with relaxed atomics); the sim only promises in-bounds offsets.
pub trait ExternalMemory: Send + Sync + fmt::Debug {
    /// Size in bytes (at least 1).
    fn len(&self) -> u64;

    /// Whether the memory is empty (never for a mapped region).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `out.len()` bytes at `offset` into `out`; `offset + out.len() <= len()`.
    fn read(&self, offset: u64, out: &mut [u8]);

    /// Copies `data` to `offset`; `offset + data.len() <= len()`.
    fn write(&self, offset: u64, data: &[u8]);
}

/// Where a region's bytes live.
#[derive(Clone, Debug)]
enum Backing {
    /// Owned by the sim.
    Owned(Vec<u8>),
    /// Shared with a host ([`SimMemory::map_external`]); a clone of the address space shares it.
    External(Arc<dyn ExternalMemory>),
}

/// One live allocation.
#[derive(Clone, Debug)]
struct Region {
    id: AllocationId,
    kind: RegionKind,
    backing: Backing,
    /// Forms derived from the bytes ([`DeviceMemory::derived`], [`DeviceMemory::with_row_form`]):
    /// host memory of the sim's own, not counted against the address space's budget; a form is
    /// forgotten at every write, a row form keeps its rows before the first one written.
    derived: DerivedForms,
}

impl Region {
    fn size(&self) -> u64 {
        match &self.backing {
            Backing::Owned(bytes) => len_u64(bytes),
            Backing::External(memory) => memory.len(),
        }
    }

    /// Bytes of the sim's own memory budget the region takes (external memory takes none).
    fn budget(&self) -> u64 {
        match self.backing {
            Backing::Owned(_) => round_up(self.size(), SimMemory::GRANULE_BYTES),
            Backing::External(_) => 0,
        }
    }

    /// Copies `out.len()` bytes at `offset` (inside the region) into `out`.
    fn read(&self, offset: usize, out: &mut [u8]) {
        match &self.backing {
            Backing::Owned(bytes) => out.copy_from_slice(&bytes[offset..offset + out.len()]),
            Backing::External(memory) => memory.read(len_u64_of(offset), out),
        }
    }

    /// Copies `data` to `offset` (inside the region).
    fn write(&mut self, offset: usize, data: &[u8]) {
        self.derived.written(offset, data.len());
        match &mut self.backing {
            Backing::Owned(bytes) => bytes[offset..offset + data.len()].copy_from_slice(data),
            Backing::External(memory) => memory.write(len_u64_of(offset), data),
        }
    }
}

/// A GPU virtual address space backed by host memory.
#[derive(Clone, Debug)]
pub struct SimMemory {
    /// Live allocations by first VA.
    regions: BTreeMap<u64, Region>,
    /// Lowest VA the next sim-chosen allocation may use; only grows.
    cursor: u64,
    /// Identity of the next allocation.
    next_id: u32,
    /// Granule-rounded bytes of the live allocations the sim backs.
    in_use_bytes: u64,
    /// First VA the sim chooses.
    va_base: u64,
    /// One past the last VA the sim chooses.
    va_end: u64,
}

impl Default for SimMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl SimMemory {
    /// First VA the sim chooses: a high, canonical, user-half address that no host pointer test
    /// data is likely to equal by accident.
    pub const VA_BASE: u64 = 0x7f00_0000_0000;
    /// One past the last VA of the address space (end of the canonical lower half, 47 bits).
    pub const VA_END: u64 = 0x8000_0000_0000;
    /// Lowest VA a caller-given allocation may start at: the first 64 KiB stay unmapped so
    /// that null and small pointers fault.
    pub const VA_MIN: u64 = 0x1_0000;
    /// Allocation granule and alignment of sim-chosen VAs.
    pub const GRANULE_BYTES: u64 = 0x1000;
    /// Alignment a caller-given VA must have (HIP's allocation alignment).
    pub const ALLOCATE_AT_ALIGN: u64 = 256;
    /// Live allocations at most.
    pub const ALLOCATIONS_MAX: usize = 16_384;
    /// Granule-rounded bytes of all live allocations at most (host memory backs them all).
    pub const TOTAL_BYTES_MAX: u64 = 1 << 30;

    /// An empty address space.
    #[must_use]
    pub fn new() -> Self {
        Self::with_va_range(Self::VA_BASE, Self::VA_END)
    }

    /// An empty address space whose sim-chosen VAs lie in `[va_base, va_end)` (a range a runtime
    /// reserved in its own process, so that no host pointer ever falls inside it).
    ///
    /// # Panics
    /// When `va_base` is not granule aligned or the range is shorter than two granules (a
    /// programmer error).
    #[must_use]
    pub fn with_va_range(va_base: u64, va_end: u64) -> Self {
        assert!(va_base.is_multiple_of(Self::GRANULE_BYTES), "VA base {va_base:#x} is not granule aligned");
        assert!(
            va_end.checked_sub(va_base).is_some_and(|len| len >= 2 * Self::GRANULE_BYTES),
            "VA range [{va_base:#x}, {va_end:#x}) holds no allocation"
        );
        Self { regions: BTreeMap::new(), cursor: va_base, next_id: 0, in_use_bytes: 0, va_base, va_end }
    }

    /// The range sim-chosen VAs lie in, as `(first, one past the last)`.
    #[must_use]
    pub fn va_range(&self) -> (u64, u64) {
        (self.va_base, self.va_end)
    }

    /// Enters `memory` as a live allocation of `kind` at `va` (its host address): device accesses
    /// to `[va, va + memory.len())` reach it. Identity and limits as for every allocation, but it
    /// takes nothing of [`Self::TOTAL_BYTES_MAX`] (the sim does not back it). Free it with
    /// [`SimMemory::free_kind`] (or [`SimMemory::free`] for a caller-owned kind); the last clone
    /// of the `Arc` goes with the region.
    ///
    /// # Errors
    /// [`AllocateError::Empty`], [`AllocateError::OutOfRange`] for a range that wraps or starts
    /// below [`Self::VA_MIN`], [`AllocateError::Overlaps`], [`AllocateError::TooMany`].
    pub fn map_external(
        &mut self,
        va: u64,
        memory: Arc<dyn ExternalMemory>,
        kind: RegionKind,
    ) -> Result<DeviceAllocation, AllocateError> {
        let size = memory.len();
        if size == 0 {
            return Err(AllocateError::Empty);
        }
        let Some(end) = va.checked_add(size).filter(|_| va >= Self::VA_MIN) else {
            return Err(AllocateError::OutOfRange { va, size, min: Self::VA_MIN, end: u64::MAX });
        };
        if let Some((existing_va, existing_size)) = self.overlapping(va, end) {
            return Err(AllocateError::Overlaps { va, size, existing_va, existing_size });
        }
        if self.regions.len() >= Self::ALLOCATIONS_MAX {
            return Err(AllocateError::TooMany { limit: Self::ALLOCATIONS_MAX });
        }
        let id = self.take_id()?;
        self.regions.insert(va, Region { id, kind, backing: Backing::External(memory), derived: DerivedForms::new() });
        Ok(DeviceAllocation { id, va, size })
    }

    /// Allocates `size` zeroed bytes at a sim-chosen VA aligned to [`Self::GRANULE_BYTES`].
    ///
    /// # Errors
    /// [`AllocateError`] for an empty request or when a limit is reached.
    pub fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.allocate_kind(size, Self::GRANULE_BYTES, RegionKind::Buffer)
    }

    /// Allocates `size` zeroed bytes at a sim-chosen VA aligned to `align` (a power of two, at
    /// least the granule), owned by `kind`.
    ///
    /// # Errors
    /// [`AllocateError`] for an empty request or when a limit is reached.
    ///
    /// # Panics
    /// When `align` is not a power of two (a programmer error).
    pub fn allocate_kind(
        &mut self,
        size: u64,
        align: u64,
        kind: RegionKind,
    ) -> Result<DeviceAllocation, AllocateError> {
        assert!(align.is_power_of_two(), "alignment {align} is not a power of two");
        let align = align.max(Self::GRANULE_BYTES);
        let reserved = self.admit(size)?;
        let va = self.find_free(reserved, align)?;
        // The guard granule after the allocation stays unmapped for good.
        self.cursor = va + reserved + Self::GRANULE_BYTES;
        self.insert(va, size, reserved, kind)
    }

    /// Allocates `size` zeroed bytes at the caller-given `va`.
    ///
    /// # Errors
    /// [`AllocateError`] for an empty request, a range outside
    /// `[`[`Self::VA_MIN`]`, `[`Self::VA_END`]`)`, a VA not aligned to
    /// [`Self::ALLOCATE_AT_ALIGN`], an overlap with a live allocation, or a reached limit.
    pub fn allocate_at(&mut self, va: u64, size: u64) -> Result<DeviceAllocation, AllocateError> {
        let out_of_range = AllocateError::OutOfRange { va, size, min: Self::VA_MIN, end: Self::VA_END };
        if size == 0 {
            return Err(AllocateError::Empty);
        }
        if va < Self::VA_MIN || va.checked_add(size).is_none_or(|end| end > Self::VA_END) {
            return Err(out_of_range);
        }
        if !va.is_multiple_of(Self::ALLOCATE_AT_ALIGN) {
            return Err(AllocateError::Misaligned { va, align: Self::ALLOCATE_AT_ALIGN });
        }
        if let Some((existing_va, existing_size)) = self.overlapping(va, va + size) {
            return Err(AllocateError::Overlaps { va, size, existing_va, existing_size });
        }
        let reserved = self.admit(size)?;
        self.insert(va, size, reserved, RegionKind::Buffer)
    }

    /// Frees a caller allocation.
    ///
    /// # Errors
    /// [`FreeError::NotLive`] when no live allocation has this id at this VA,
    /// [`FreeError::DeviceOwned`] for code, a ring or the device's kernarg pool.
    pub fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError> {
        let DeviceAllocation { id, va, .. } = allocation;
        match self.regions.get(&va) {
            Some(r) if r.id == id && r.kind.is_caller_owned() => {}
            Some(r) if r.id == id => return Err(FreeError::DeviceOwned { id, va }),
            _ => return Err(FreeError::NotLive { id, va }),
        }
        if let Some(region) = self.regions.remove(&va) {
            self.in_use_bytes -= region.budget();
        }
        Ok(())
    }

    /// Frees a device-owned allocation of `kind` (a queue's ring, an IB).
    ///
    /// # Errors
    /// [`FreeError::NotLive`] when no live allocation of `kind` has this id at this VA.
    pub fn free_kind(&mut self, allocation: DeviceAllocation, kind: RegionKind) -> Result<(), FreeError> {
        let DeviceAllocation { id, va, .. } = allocation;
        if !self.regions.get(&va).is_some_and(|r| r.id == id && r.kind == kind) {
            return Err(FreeError::NotLive { id, va });
        }
        if let Some(region) = self.regions.remove(&va) {
            self.in_use_bytes -= region.budget();
        }
        Ok(())
    }

    /// One little-endian store of `value` at `va`, which must lie in host-visible memory.
    ///
    /// # Errors
    /// [`MemoryFault`] when the four bytes are not inside one allocation, or
    /// [`FaultReason::NotHostVisible`] when that allocation is device memory.
    pub fn store_u32(&mut self, va: u64, value: u32) -> Result<(), MemoryFault> {
        let (base, at) = self.locate(va, 4)?;
        let region =
            self.regions.get_mut(&base).ok_or(MemoryFault { address: va, len: 4, reason: FaultReason::Unmapped })?;
        if !region.kind.is_host_visible() {
            return Err(MemoryFault { address: va, len: 4, reason: FaultReason::NotHostVisible });
        }
        region.write(at, &value.to_le_bytes());
        Ok(())
    }

    /// Frees everything; identities restart at 0. VAs used before stay unused.
    pub fn reset(&mut self) {
        self.regions.clear();
        self.next_id = 0;
        self.in_use_bytes = 0;
    }

    /// The live allocation containing `va` and the offset of `va` in it.
    #[must_use]
    pub fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        let (&base, region) = self.regions.range(..=va).next_back()?;
        let offset = va - base;
        (offset < region.size()).then_some((region.id, offset))
    }

    /// The live allocation containing all of `[va, va + len)` (`len > 0`), as
    /// `(id, offset, kind)`.
    #[must_use]
    pub fn resolve_range(&self, va: u64, len: u64) -> Option<(AllocationId, u64, RegionKind)> {
        let (&base, region) = self.regions.range(..=va).next_back()?;
        let offset = va - base;
        let end = offset.checked_add(len)?;
        (len > 0 && end <= region.size()).then_some((region.id, offset, region.kind))
    }

    /// Live allocations.
    #[must_use]
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether nothing is allocated.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Granule-rounded bytes of the live allocations.
    #[must_use]
    pub fn in_use_bytes(&self) -> u64 {
        self.in_use_bytes
    }

    /// Checks the count and byte limits for one more allocation of `size` bytes; returns the
    /// granule-rounded size.
    fn admit(&self, size: u64) -> Result<u64, AllocateError> {
        if size == 0 {
            return Err(AllocateError::Empty);
        }
        if size > Self::TOTAL_BYTES_MAX {
            return Err(AllocateError::TooLarge { size, limit: Self::TOTAL_BYTES_MAX });
        }
        if self.regions.len() >= Self::ALLOCATIONS_MAX {
            return Err(AllocateError::TooMany { limit: Self::ALLOCATIONS_MAX });
        }
        let reserved = round_up(size, Self::GRANULE_BYTES);
        if self.in_use_bytes + reserved > Self::TOTAL_BYTES_MAX {
            return Err(AllocateError::OutOfMemory {
                size: reserved,
                in_use: self.in_use_bytes,
                limit: Self::TOTAL_BYTES_MAX,
            });
        }
        Ok(reserved)
    }

    /// The lowest `align`-aligned VA at or above the cursor where `reserved` bytes plus a guard
    /// granule overlap no live allocation.
    fn find_free(&self, reserved: u64, align: u64) -> Result<u64, AllocateError> {
        let exhausted = AllocateError::AddressSpaceExhausted { size: reserved };
        let mut candidate = self.cursor;
        // Bounded: every retry moves past one live allocation.
        for _ in 0..=self.regions.len() {
            let va = candidate.checked_next_multiple_of(align).ok_or(exhausted)?;
            let end = va.checked_add(reserved + Self::GRANULE_BYTES).ok_or(exhausted)?;
            if end > self.va_end {
                return Err(exhausted);
            }
            match self.overlapping(va, end) {
                None => return Ok(va),
                Some((existing_va, existing_size)) => {
                    candidate = round_up(existing_va + existing_size, Self::GRANULE_BYTES) + Self::GRANULE_BYTES;
                }
            }
        }
        Err(exhausted)
    }

    /// The highest live allocation overlapping `[va, end)`, as `(va, size)`.
    fn overlapping(&self, va: u64, end: u64) -> Option<(u64, u64)> {
        let (&base, region) = self.regions.range(..end).next_back()?;
        (base + region.size() > va).then_some((base, region.size()))
    }

    fn insert(
        &mut self,
        va: u64,
        size: u64,
        reserved: u64,
        kind: RegionKind,
    ) -> Result<DeviceAllocation, AllocateError> {
        let too_large = AllocateError::TooLarge { size, limit: Self::TOTAL_BYTES_MAX };
        let len = usize::try_from(size).map_err(|_| too_large)?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len).map_err(|_| too_large)?;
        bytes.resize(len, 0);
        let id = self.take_id()?;
        self.regions.insert(va, Region { id, kind, backing: Backing::Owned(bytes), derived: DerivedForms::new() });
        self.in_use_bytes += reserved;
        Ok(DeviceAllocation { id, va, size })
    }

    /// The identity of the next allocation.
    fn take_id(&mut self) -> Result<AllocationId, AllocateError> {
        let id = AllocationId(self.next_id);
        self.next_id = self.next_id.checked_add(1).ok_or(AllocateError::TooMany { limit: Self::ALLOCATIONS_MAX })?;
        Ok(id)
    }

    /// The allocation holding all of `[va, va + len)`: its first VA and the offset of `va`.
    fn locate(&self, va: u64, len: usize) -> Result<(u64, usize), MemoryFault> {
        hal::memory::locate(&self.regions, Region::size, va, len)
    }

    /// Copies `out.len()` bytes starting at `address` into `out`: a host copy, or a read of the
    /// packet or command processor. An empty read succeeds anywhere.
    ///
    /// # Errors
    /// [`MemoryFault`] when the range is not inside one allocation; nothing is read then.
    pub fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryFault> {
        if out.is_empty() {
            return Ok(());
        }
        let (base, offset) = self.locate(address, out.len())?;
        self.read_located(base, offset, out);
        Ok(())
    }

    /// Copies `data` to the bytes starting at `address`: a host copy, or a write of the packet
    /// or command processor. An empty write succeeds anywhere.
    ///
    /// # Errors
    /// [`MemoryFault`] when the range is not inside one allocation; nothing is written then.
    pub fn write(&mut self, address: u64, data: &[u8]) -> Result<(), MemoryFault> {
        if data.is_empty() {
            return Ok(());
        }
        let (base, offset) = self.locate(address, data.len())?;
        self.write_located(base, offset, data);
        Ok(())
    }

    /// Reads `out.len()` bytes at `offset` of the region at `base` (located by the caller).
    fn read_located(&self, base: u64, offset: usize, out: &mut [u8]) {
        if let Some(region) = self.regions.get(&base) {
            region.read(offset, out);
        }
    }

    /// Writes `data` at `offset` of the region at `base` (located by the caller).
    fn write_located(&mut self, base: u64, offset: usize, data: &[u8]) {
        if let Some(region) = self.regions.get_mut(&base) {
            region.write(offset, data);
        }
    }
}

/// The address space as the CPU references see it: the same accesses as [`SimMemory::read`] and
/// [`SimMemory::write`], checked by the memory model's range check (`kernel_refs::memory::locate`,
/// the same check as `hal::memory::locate`) and reported as its fault.
impl DeviceMemory for SimMemory {
    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), model::MemoryFault> {
        if out.is_empty() {
            return Ok(());
        }
        let (base, offset) = model::locate(&self.regions, Region::size, address, out.len())?;
        self.read_located(base, offset, out);
        Ok(())
    }

    /// Memory the sim owns is lent in place; memory shared with a host
    /// ([`SimMemory::map_external`]) is not (the host may write it concurrently).
    fn view(&self, address: u64, len: usize) -> Option<&[u8]> {
        let (_, region, offset) = model::locate_entry(&self.regions, Region::size, address, len).ok()?;
        match &region.backing {
            Backing::Owned(bytes) => bytes.get(offset..offset.checked_add(len)?),
            Backing::External(_) => None,
        }
    }

    /// Forms of memory the sim owns are kept with it; memory shared with a host has none.
    fn derived(&self, address: u64, len: usize, key: u64, derive: &dyn Fn(&[u8]) -> Vec<u8>) -> Option<Arc<[u8]>> {
        let (_, region, offset) = model::locate_entry(&self.regions, Region::size, address, len).ok()?;
        match &region.backing {
            Backing::Owned(bytes) => region.derived.get_or_derive(bytes, offset, len, key, derive),
            Backing::External(_) => None,
        }
    }

    /// Row forms of memory the sim owns are kept with it; memory shared with a host has none.
    fn with_row_form(
        &self,
        address: u64,
        row_bytes: usize,
        rows: usize,
        key: u64,
        update: &kernel_refs::memory::RowUpdate<'_>,
        use_form: &mut dyn FnMut(&[f32]),
    ) -> bool {
        let Some(len) = row_bytes.checked_mul(rows) else { return false };
        let Ok((_, region, offset)) = model::locate_entry(&self.regions, Region::size, address, len) else {
            return false;
        };
        match &region.backing {
            Backing::Owned(bytes) => {
                region.derived.with_row_form(bytes, (offset, row_bytes, rows), key, update, use_form)
            }
            Backing::External(_) => false,
        }
    }

    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), model::MemoryFault> {
        if data.is_empty() {
            return Ok(());
        }
        let (base, offset) = model::locate(&self.regions, Region::size, address, data.len())?;
        self.write_located(base, offset, data);
        Ok(())
    }

    fn writable(&self, address: u64, len: usize) -> bool {
        len == 0 || model::locate(&self.regions, Region::size, address, len).is_ok()
    }
}

/// `value` rounded up to a multiple of the power of two `align`, saturating.
fn round_up(value: u64, align: u64) -> u64 {
    value.checked_next_multiple_of(align).unwrap_or(!(align - 1))
}

/// A byte length as `u64` (lossless on every supported host).
fn len_u64(bytes: &[u8]) -> u64 {
    len_u64_of(bytes.len())
}

/// A `usize` offset or length as `u64` (lossless on every supported host).
fn len_u64_of(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
