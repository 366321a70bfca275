//! Raw host memory of the runtime: the blocks it hands out as system memory (and uses for queue
//! descriptors and rings), and the reserved address range of device memory.
//!
//! A [`HostBlock`] is memory the C program dereferences directly while the packet processor
//! threads read and write it too. Every access this crate makes to one is a relaxed atomic of the
//! natural width (8 bytes where aligned, single bytes at the edges), bounds-checked against the
//! block, so the runtime's own threads never race each other; the program's plain accesses race
//! them exactly as they would race a GPU's, and the program orders them with signals as HSA
//! requires.

use core::ffi::c_void;
use core::ptr::NonNull;
use std::alloc::Layout;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};

use soft_device::memory::ExternalMemory;

/// Zeroed host memory owned by the runtime, at a fixed address until it drops.
#[derive(Debug)]
pub(crate) struct HostBlock {
    // INVARIANT: `layout.size()` bytes at `ptr`, allocated with `layout` by `alloc_zeroed`, live
    // until `drop`; accessed by this crate only through the atomics below.
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the block is plain memory with no thread affinity; every access this crate makes to it
// is atomic (see the module documentation), so sharing and sending it between threads is sound.
unsafe impl Send for HostBlock {}
// SAFETY: as above: `&HostBlock` only permits atomic accesses.
unsafe impl Sync for HostBlock {}

impl HostBlock {
    /// `len` zeroed bytes aligned to `align` (a power of two, at least 8); `None` when the
    /// allocator refuses or the layout is invalid.
    pub(crate) fn new(len: usize, align: usize) -> Option<Self> {
        assert!(align.is_power_of_two() && align >= 8, "alignment {align} must be a power of two >= 8");
        let layout = Layout::from_size_align(len.max(1), align).ok()?;
        // SAFETY: `layout` has a non-zero size (at least 1 byte).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).map(|ptr| Self { ptr, layout })
    }

    /// The first byte's address, as the C program sees it.
    pub(crate) fn addr(&self) -> u64 {
        // CAST: a usize address is at most 64 bits on every supported host.
        self.ptr.as_ptr().expose_provenance() as u64
    }

    /// The first byte, as the C program receives it.
    pub(crate) fn as_mut_ptr(&self) -> *mut c_void {
        self.ptr.as_ptr().cast()
    }

    /// Size in bytes.
    pub(crate) fn size(&self) -> usize {
        self.layout.size()
    }

    /// PANIC: an access outside the block is a programmer error of this crate.
    fn check(&self, offset: usize, len: usize, align: usize) {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.size()) && offset.is_multiple_of(align),
            "host block access of {len} bytes at offset {offset} (align {align}) outside {} bytes",
            self.size()
        );
    }

    fn byte(&self, offset: usize) -> &AtomicU8 {
        self.check(offset, 1, 1);
        // SAFETY: `offset` is inside the block (checked), which lives as long as `&self`; every
        // access to it from this crate is atomic.
        unsafe { AtomicU8::from_ptr(self.ptr.as_ptr().add(offset)) }
    }

    fn word32(&self, offset: usize) -> &AtomicU32 {
        self.check(offset, 4, 4);
        // SAFETY: 4 bytes inside the block at a 4-aligned offset of a block aligned to at least
        // 8 (checked); every access from this crate is atomic.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(offset).cast()) }
    }

    fn word64(&self, offset: usize) -> &AtomicU64 {
        self.check(offset, 8, 8);
        // SAFETY: 8 bytes inside the block at an 8-aligned offset of a block aligned to at least
        // 8 (checked); every access from this crate is atomic.
        unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(offset).cast()) }
    }

    /// One 32-bit load at a 4-aligned `offset`.
    pub(crate) fn load_u32(&self, offset: usize, order: Ordering) -> u32 {
        self.word32(offset).load(order)
    }

    /// One 32-bit store at a 4-aligned `offset`.
    pub(crate) fn store_u32(&self, offset: usize, value: u32, order: Ordering) {
        self.word32(offset).store(value, order);
    }

    /// One 64-bit load at an 8-aligned `offset`.
    pub(crate) fn load_u64(&self, offset: usize, order: Ordering) -> u64 {
        self.word64(offset).load(order)
    }

    /// One 64-bit store at an 8-aligned `offset`.
    pub(crate) fn store_u64(&self, offset: usize, value: u64, order: Ordering) {
        self.word64(offset).store(value, order);
    }

    /// Copies `out.len()` bytes at `offset` into `out` with relaxed atomic loads.
    pub(crate) fn read_bytes(&self, offset: usize, out: &mut [u8]) {
        self.check(offset, out.len(), 1);
        let mut done = 0;
        while done < out.len() {
            let at = offset + done;
            if at.is_multiple_of(8) && out.len() - done >= 8 {
                let word = self.word64(at).load(Ordering::Relaxed);
                out[done..done + 8].copy_from_slice(&word.to_le_bytes());
                done += 8;
            } else {
                out[done] = self.byte(at).load(Ordering::Relaxed);
                done += 1;
            }
        }
    }

    /// Copies `data` to `offset` with relaxed atomic stores.
    pub(crate) fn write_bytes(&self, offset: usize, data: &[u8]) {
        self.check(offset, data.len(), 1);
        let mut done = 0;
        while done < data.len() {
            let at = offset + done;
            if at.is_multiple_of(8) && data.len() - done >= 8 {
                let mut word = [0u8; 8];
                word.copy_from_slice(&data[done..done + 8]);
                self.word64(at).store(u64::from_le_bytes(word), Ordering::Relaxed);
                done += 8;
            } else {
                self.byte(at).store(data[done], Ordering::Relaxed);
                done += 1;
            }
        }
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        // SAFETY: INVARIANT of `ptr`: allocated with `layout`, freed once, here; nothing of this
        // crate refers to the block any more (its owners dropped their last reference).
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// A `usize` offset the sim hands over as `u64`.
fn offset_of_sim(offset: u64) -> usize {
    // PANIC: the sim only passes offsets inside the block, whose size is a usize.
    usize::try_from(offset).expect("offset inside a host block")
}

impl ExternalMemory for HostBlock {
    fn len(&self) -> u64 {
        // CAST: a usize size is at most 64 bits on every supported host.
        self.size() as u64
    }

    fn read(&self, offset: u64, out: &mut [u8]) {
        self.read_bytes(offset_of_sim(offset), out);
    }

    fn write(&self, offset: u64, data: &[u8]) {
        self.write_bytes(offset_of_sim(offset), data);
    }
}

/// A range of the process's address space reserved with no access rights: the VAs of device
/// memory. No host allocation can ever be placed inside it, and a host dereference of a device
/// pointer faults at once (as it would on a discrete GPU), instead of reading something else.
#[derive(Debug)]
pub(crate) struct VaReservation {
    // INVARIANT: `len` bytes at `base` mapped PROT_NONE by `new`, unmapped only by `drop`.
    base: NonNull<c_void>,
    len: usize,
}

// SAFETY: the range is never dereferenced; the value only carries its address and length.
unsafe impl Send for VaReservation {}
// SAFETY: as above.
unsafe impl Sync for VaReservation {}

impl VaReservation {
    /// Reserves `len` bytes; `None` when the kernel refuses.
    pub(crate) fn new(len: usize) -> Option<Self> {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
        // SAFETY: an anonymous mapping at an address the kernel chooses touches no existing
        // memory; PROT_NONE makes it inaccessible.
        let base = unsafe { libc::mmap(core::ptr::null_mut(), len, libc::PROT_NONE, flags, -1, 0) };
        if base == libc::MAP_FAILED {
            return None;
        }
        NonNull::new(base).map(|base| Self { base, len })
    }

    /// First address of the range.
    pub(crate) fn base(&self) -> u64 {
        // CAST: a usize address is at most 64 bits on every supported host.
        self.base.as_ptr().expose_provenance() as u64
    }

    /// One past the last address of the range.
    pub(crate) fn end(&self) -> u64 {
        // CAST: as above.
        self.base() + self.len as u64
    }
}

impl Drop for VaReservation {
    fn drop(&mut self) {
        // SAFETY: INVARIANT of `base`: the mapping `new` made, unmapped once; nothing can refer
        // to memory inside it (it was never accessible).
        let _ = unsafe { libc::munmap(self.base.as_ptr(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_zeroed_aligned_and_copy_across_word_edges() {
        let block = HostBlock::new(40, 64).unwrap();
        assert_eq!(block.addr() % 64, 0);
        let mut out = [1u8; 40];
        block.read_bytes(0, &mut out);
        assert_eq!(out, [0; 40]);
        let data: Vec<u8> = (1..=29).collect();
        block.write_bytes(3, &data);
        let mut back = vec![0u8; 29];
        block.read_bytes(3, &mut back);
        assert_eq!(back, data);
        assert_eq!(block.load_u32(4, Ordering::Relaxed), u32::from_le_bytes([2, 3, 4, 5]));
        block.store_u64(32, u64::MAX, Ordering::Release);
        assert_eq!(block.load_u64(32, Ordering::Acquire), u64::MAX);
    }

    #[test]
    #[should_panic(expected = "outside 8 bytes")]
    fn out_of_range_accesses_are_programmer_errors() {
        let block = HostBlock::new(8, 8).unwrap();
        block.read_bytes(4, &mut [0; 8]);
    }

    #[test]
    fn reservations_are_page_aligned_ranges() {
        let range = VaReservation::new(1 << 30).unwrap();
        assert_eq!(range.base() % 4096, 0);
        assert_eq!(range.end() - range.base(), 1 << 30);
    }
}
