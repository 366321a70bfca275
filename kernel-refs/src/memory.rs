//! The memory model: the device address space the CPU references read and write.
//!
//! [`DeviceMemory`] is the abstraction the soft device implements over its GPU virtual address
//! space; [`HostMemory`] is a plain implementation (allocations at chosen addresses) for tests
//! and tools. Values cross the boundary little-endian, as the GPU stores them, and `f32` values
//! keep their exact bits (NaN payloads included).
//!
//! A refused access is this model's [`MemoryFault`]. The device HAL has its own,
//! backend-neutral `hal::MemoryFault` for the accesses of its callers (copies, host stores); the
//! soft device reports those, and keeps this one for what its kernels' references do.

use std::collections::BTreeMap;
use std::sync::Arc;

mod forms;
pub use forms::{DerivedForms, FORM_SLACK, JOURNAL_WRITES, RowUpdate};

/// Why an access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultReason {
    /// No allocation contains the first byte of the access.
    #[error("no allocation contains the first byte")]
    Unmapped,
    /// The access starts inside an allocation and runs past its end.
    #[error("the access runs past the end of the allocation at {base:#x} of {size} bytes")]
    OutOfBounds {
        /// First byte of the allocation.
        base: u64,
        /// Size of the allocation in bytes.
        size: u64,
    },
    /// The last byte of the access would lie beyond the end of the 64-bit address space.
    #[error("the access wraps around the end of the address space")]
    AddressWraps,
}

/// A read or write the address space refused; nothing was transferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("memory fault on {len} bytes at {address:#x}: {reason}")]
pub struct MemoryFault {
    /// First byte of the access.
    pub address: u64,
    /// Length of the access in bytes.
    pub len: u64,
    /// Why it faulted.
    pub reason: FaultReason,
}

/// A device address space.
///
/// An access either transfers all its bytes or faults and transfers none. Implementations may
/// accept a zero-length access at any address; the CPU references never issue one.
pub trait DeviceMemory {
    /// Copies `out.len()` bytes starting at `address` into `out`.
    ///
    /// # Errors
    /// [`MemoryFault`] when any byte of the range is not readable.
    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryFault>;

    /// Copies `data` to the bytes starting at `address`.
    ///
    /// # Errors
    /// [`MemoryFault`] when any byte of the range is not writable; nothing is written then.
    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), MemoryFault>;

    /// The `len` bytes at `address` in place, when the address space can lend them (memory it
    /// owns, inside one allocation, readable): a read with no copy. `None` says only that this
    /// access cannot be lent; the caller then reads with [`DeviceMemory::read`], which reports
    /// the fault if there is one. The provided method lends nothing.
    ///
    /// A view is one read access: an implementation that checks accesses (the soft device's
    /// effect guard) checks the whole range once, as it would for one `read` of it.
    fn view(&self, address: u64, len: usize) -> Option<&[u8]> {
        let _ = (address, len);
        None
    }

    /// Whether a [`DeviceMemory::write`] of the `len` bytes at `address` would succeed. A query,
    /// not an access: an implementation that checks accesses (the soft device's effect guard)
    /// records nothing for it. The provided method says `false`; callers then write as they
    /// would without asking.
    fn writable(&self, address: u64, len: usize) -> bool {
        let _ = (address, len);
        false
    }

    /// A form of the `len` bytes at `address` computed from them by `derive` (a weight matrix
    /// laid out for a CPU reference's vector path), kept by the address space with those bytes
    /// so that a kernel reading the same bytes at every dispatch derives it once. A kept form is
    /// forgotten when any byte of its allocation is written or the allocation is freed, so it
    /// always equals `derive` of the bytes as they are now. `key` names the derivation: callers
    /// must pass one key per `derive` function (and parameters it depends on).
    ///
    /// `None` when the address space keeps no forms (the provided method) or cannot lend the
    /// range ([`DeviceMemory::view`]); the caller then derives from a view, or reads. A form is
    /// one read access of the range, checked as a view is.
    fn derived(&self, address: u64, len: usize, key: u64, derive: &dyn Fn(&[u8]) -> Vec<u8>) -> Option<Arc<[u8]>> {
        let _ = (address, len, key, derive);
        None
    }

    /// Runs `use_form` on a form of the first `rows` rows of `row_bytes` bytes at `address` (a
    /// key cache laid out for a CPU reference's vector path), kept by the address space across
    /// the writes of its allocation, and returns `true`; `false` when the address space keeps no
    /// such forms (the provided method) or cannot lend the range: nothing ran, the caller reads.
    ///
    /// The form is `f32` values that `update` builds row by row: `update(form, rows, bytes)`
    /// brings `form` up to date for the rows `rows` (a range from the first row not yet derived,
    /// or written since it was, to `rows`), `bytes` being theirs; the form's values for the rows
    /// before it are those of their bytes as they are now. A write of any byte of a row makes the
    /// row and every later one derived again. What the form holds for rows past `rows` is
    /// unspecified. `key` names the derivation as [`DeviceMemory::derived`]'s does. The form is
    /// one read access of the range, checked as a view is.
    fn with_row_form(
        &self,
        address: u64,
        row_bytes: usize,
        rows: usize,
        key: u64,
        update: &RowUpdate<'_>,
        use_form: &mut dyn FnMut(&[f32]),
    ) -> bool {
        let _ = (address, row_bytes, rows, key, update, use_form);
        false
    }

    /// Reads `out.len()` little-endian `u32` values starting at `address` (one access).
    ///
    /// # Errors
    /// [`MemoryFault`] as for [`DeviceMemory::read`].
    fn read_u32s(&self, address: u64, out: &mut [u32]) -> Result<(), MemoryFault> {
        let len = size_of_val(out);
        let convert = |out: &mut [u32], bytes: &[u8]| {
            for (value, chunk) in out.iter_mut().zip(bytes.as_chunks::<4>().0) {
                *value = u32::from_le_bytes(*chunk);
            }
        };
        // A range the address space lends is converted in place: the same bytes as a read.
        if let Some(bytes) = self.view(address, len) {
            convert(out, bytes);
            return Ok(());
        }
        let mut bytes = vec![0u8; len];
        self.read(address, &mut bytes)?;
        convert(out, &bytes);
        Ok(())
    }

    /// Writes `data` as little-endian `u32` values starting at `address` (one access).
    ///
    /// # Errors
    /// [`MemoryFault`] as for [`DeviceMemory::write`].
    fn write_u32s(&mut self, address: u64, data: &[u32]) -> Result<(), MemoryFault> {
        if cfg!(target_endian = "little") {
            // The values' own bytes are their little-endian bytes.
            return self.write(address, zerocopy::IntoBytes::as_bytes(data));
        }
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write(address, &bytes)
    }

    /// Reads `out.len()` little-endian `f32` values starting at `address`, bit for bit.
    ///
    /// # Errors
    /// [`MemoryFault`] as for [`DeviceMemory::read`].
    fn read_f32s(&self, address: u64, out: &mut [f32]) -> Result<(), MemoryFault> {
        if let Some(bytes) = self.view(address, size_of_val(out)) {
            for (value, chunk) in out.iter_mut().zip(bytes.as_chunks::<4>().0) {
                *value = f32::from_le_bytes(*chunk);
            }
            return Ok(());
        }
        let mut bits = vec![0u32; out.len()];
        self.read_u32s(address, &mut bits)?;
        for (value, bits) in out.iter_mut().zip(bits) {
            *value = f32::from_bits(bits);
        }
        Ok(())
    }

    /// Writes `data` as little-endian `f32` values starting at `address`, bit for bit.
    ///
    /// # Errors
    /// [`MemoryFault`] as for [`DeviceMemory::write`].
    fn write_f32s(&mut self, address: u64, data: &[f32]) -> Result<(), MemoryFault> {
        if cfg!(target_endian = "little") {
            // The values' own bytes are their little-endian bits.
            return self.write(address, zerocopy::IntoBytes::as_bytes(data));
        }
        let bits: Vec<u32> = data.iter().map(|v| v.to_bits()).collect();
        self.write_u32s(address, &bits)
    }

    /// Reads one little-endian `u32`.
    ///
    /// # Errors
    /// [`MemoryFault`] as for [`DeviceMemory::read`].
    fn read_u32(&self, address: u64) -> Result<u32, MemoryFault> {
        let mut bytes = [0u8; 4];
        self.read(address, &mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    /// Reads one little-endian `f32`, bit for bit.
    ///
    /// # Errors
    /// [`MemoryFault`] as for [`DeviceMemory::read`].
    fn read_f32(&self, address: u64) -> Result<f32, MemoryFault> {
        self.read_u32(address).map(f32::from_bits)
    }
}

/// Why [`HostMemory::allocate`] refused an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocateError {
    /// Address 0 stays unmapped so that a null pointer always faults.
    #[error("an allocation cannot start at address 0")]
    NullAddress,
    /// Empty allocations would make two allocations share an address.
    #[error("an allocation at {base:#x} must have at least one byte")]
    Empty {
        /// Requested first byte.
        base: u64,
    },
    /// The allocation would end beyond the last byte of the address space.
    #[error("an allocation of {size} bytes at {base:#x} wraps around the end of the address space")]
    Wraps {
        /// Requested first byte.
        base: u64,
        /// Requested size in bytes.
        size: u64,
    },
    /// Larger than [`HostMemory::ALLOCATION_BYTES_MAX`] or than the host could provide.
    #[error("an allocation of {size} bytes at {base:#x} exceeds the limit of {limit} bytes or host memory")]
    TooLarge {
        /// Requested first byte.
        base: u64,
        /// Requested size in bytes.
        size: u64,
        /// [`HostMemory::ALLOCATION_BYTES_MAX`].
        limit: u64,
    },
    /// The range overlaps an existing allocation.
    #[error(
        "an allocation of {size} bytes at {base:#x} overlaps the allocation at {existing_base:#x} of {existing_size} bytes"
    )]
    Overlaps {
        /// Requested first byte.
        base: u64,
        /// Requested size in bytes.
        size: u64,
        /// First byte of the allocation it overlaps.
        existing_base: u64,
        /// Size of the allocation it overlaps.
        existing_size: u64,
    },
}

/// Zero-filled allocations at chosen, non-zero, non-overlapping addresses.
///
/// An access must lie inside one allocation: an access that runs from one allocation into the
/// next, even an adjacent one, faults (a kernel argument is one buffer).
#[derive(Clone, Debug, Default)]
pub struct HostMemory {
    /// Allocations by first byte.
    allocations: BTreeMap<u64, Allocation>,
}

/// One allocation of a [`HostMemory`].
#[derive(Clone, Debug)]
struct Allocation {
    bytes: Vec<u8>,
    derived: DerivedForms,
}

impl Allocation {
    fn size(&self) -> u64 {
        len_u64(&self.bytes)
    }
}

impl HostMemory {
    /// The largest single allocation, in bytes.
    pub const ALLOCATION_BYTES_MAX: u64 = 1 << 32;

    /// An address space with nothing mapped.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `size` zero bytes at `base`.
    ///
    /// # Errors
    /// [`AllocateError`] for address 0, an empty or oversized allocation, one that wraps around
    /// the address space or one that overlaps an existing allocation.
    pub fn allocate(&mut self, base: u64, size: u64) -> Result<(), AllocateError> {
        if base == 0 {
            return Err(AllocateError::NullAddress);
        }
        if size == 0 {
            return Err(AllocateError::Empty { base });
        }
        let end = base.checked_add(size).ok_or(AllocateError::Wraps { base, size })?;
        if let Some((&existing_base, existing)) = self.allocations.range(..end).next_back() {
            let existing_size = existing.size();
            if existing_base >= base || existing_base + existing_size > base {
                return Err(AllocateError::Overlaps { base, size, existing_base, existing_size });
            }
        }
        let too_large = AllocateError::TooLarge { base, size, limit: Self::ALLOCATION_BYTES_MAX };
        if size > Self::ALLOCATION_BYTES_MAX {
            return Err(too_large);
        }
        let len = usize::try_from(size).map_err(|_| too_large)?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len).map_err(|_| too_large)?;
        bytes.resize(len, 0);
        self.allocations.insert(base, Allocation { bytes, derived: DerivedForms::new() });
        Ok(())
    }

    /// The bytes of the allocation that starts at `base`.
    #[must_use]
    pub fn allocation(&self, base: u64) -> Option<&[u8]> {
        self.allocations.get(&base).map(|a| a.bytes.as_slice())
    }

    /// First byte and size of every allocation, in address order.
    pub fn allocations(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.allocations.iter().map(|(&base, a)| (base, a.size()))
    }

    /// The allocation holding all of `[address, address + len)` and the offset of `address` in it.
    fn locate(&self, address: u64, len: usize) -> Result<(u64, usize), MemoryFault> {
        locate(&self.allocations, Allocation::size, address, len)
    }
}

/// The allocation of `allocations` (keyed by first address, sized by `size`, not overlapping)
/// holding all of `[address, address + len)`: its first address and the offset of `address` in
/// it. The range check of every [`DeviceMemory`] access (this crate's [`HostMemory`], the soft
/// device's address space); it is `hal::memory::locate`'s, with this model's fault.
///
/// # Errors
/// [`MemoryFault`]: [`FaultReason::AddressWraps`], [`FaultReason::Unmapped`] when no allocation
/// holds `address`, [`FaultReason::OutOfBounds`] when the range runs past its end.
pub fn locate<V>(
    allocations: &BTreeMap<u64, V>,
    size: impl Fn(&V) -> u64,
    address: u64,
    len: usize,
) -> Result<(u64, usize), MemoryFault> {
    locate_entry(allocations, size, address, len).map(|(base, _, offset)| (base, offset))
}

/// [`locate`], with the allocation found: its first address, the entry and the offset of
/// `address` in it, from one lookup.
///
/// # Errors
/// As [`locate`].
pub fn locate_entry<V>(
    allocations: &BTreeMap<u64, V>,
    size: impl Fn(&V) -> u64,
    address: u64,
    len: usize,
) -> Result<(u64, &V, usize), MemoryFault> {
    let len_bytes = u64::try_from(len).unwrap_or(u64::MAX);
    let fault = |reason| MemoryFault { address, len: len_bytes, reason };
    let end = address.checked_add(len_bytes).ok_or(fault(FaultReason::AddressWraps))?;
    let (&base, allocation) = allocations.range(..=address).next_back().ok_or(fault(FaultReason::Unmapped))?;
    let size = size(allocation);
    // INVARIANT: base <= address; base + size does not wrap (every address space checks that when
    // it allocates).
    let offset = address - base;
    if offset >= size {
        return Err(fault(FaultReason::Unmapped));
    }
    if end > base.saturating_add(size) {
        return Err(fault(FaultReason::OutOfBounds { base, size }));
    }
    // INVARIANT: offset < size, which is a host allocation's length or fits the host's memory.
    let offset = usize::try_from(offset).map_err(|_| fault(FaultReason::Unmapped))?;
    Ok((base, allocation, offset))
}

/// A byte length as `u64` (lossless on every supported host).
fn len_u64(bytes: &[u8]) -> u64 {
    u64::try_from(bytes.len()).unwrap_or(u64::MAX)
}

impl DeviceMemory for HostMemory {
    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryFault> {
        if out.is_empty() {
            return Ok(());
        }
        let (base, offset) = self.locate(address, out.len())?;
        if let Some(a) = self.allocations.get(&base) {
            out.copy_from_slice(&a.bytes[offset..offset + out.len()]);
        }
        Ok(())
    }

    fn view(&self, address: u64, len: usize) -> Option<&[u8]> {
        let (_, a, offset) = locate_entry(&self.allocations, Allocation::size, address, len).ok()?;
        a.bytes.get(offset..offset.checked_add(len)?)
    }

    fn derived(&self, address: u64, len: usize, key: u64, derive: &dyn Fn(&[u8]) -> Vec<u8>) -> Option<Arc<[u8]>> {
        let (_, a, offset) = locate_entry(&self.allocations, Allocation::size, address, len).ok()?;
        a.derived.get_or_derive(&a.bytes, offset, len, key, derive)
    }

    fn with_row_form(
        &self,
        address: u64,
        row_bytes: usize,
        rows: usize,
        key: u64,
        update: &RowUpdate<'_>,
        use_form: &mut dyn FnMut(&[f32]),
    ) -> bool {
        let Some(len) = row_bytes.checked_mul(rows) else { return false };
        let Ok((_, a, offset)) = locate_entry(&self.allocations, Allocation::size, address, len) else { return false };
        a.derived.with_row_form(&a.bytes, (offset, row_bytes, rows), key, update, use_form)
    }

    fn writable(&self, address: u64, len: usize) -> bool {
        len == 0 || self.locate(address, len).is_ok()
    }

    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), MemoryFault> {
        if data.is_empty() {
            return Ok(());
        }
        let (base, offset) = self.locate(address, data.len())?;
        if let Some(a) = self.allocations.get_mut(&base) {
            a.derived.written(offset, data.len());
            a.bytes[offset..offset + data.len()].copy_from_slice(data);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Range;

    use super::*;

    fn memory() -> HostMemory {
        let mut m = HostMemory::new();
        m.allocate(0x1000, 16).unwrap();
        m.allocate(0x1010, 8).unwrap();
        m
    }

    #[test]
    fn reads_back_what_was_written() {
        let mut m = memory();
        m.write_f32s(0x1004, &[1.5, -0.0, f32::from_bits(0x7fa0_0001)]).unwrap();
        let mut out = [0f32; 3];
        m.read_f32s(0x1004, &mut out).unwrap();
        assert_eq!(out.map(f32::to_bits), [0x3fc0_0000, 0x8000_0000, 0x7fa0_0001]);
        assert_eq!(&m.allocation(0x1000).unwrap()[4..8], &[0, 0, 0xc0, 0x3f]);
        assert_eq!(m.read_u32(0x1010).unwrap(), 0);
    }

    #[test]
    fn writable_is_what_a_write_would_do() {
        let mut m = memory();
        let cases =
            [(0x1000u64, 16usize), (0x100c, 4), (0x1010, 8), (0x100e, 4), (0x0ffc, 4), (0x1018, 1), (0x1004, 0)];
        for (address, len) in cases {
            let expected = m.clone().write(address, &vec![0; len]).is_ok();
            assert_eq!(m.writable(address, len), expected, "{address:#x} + {len}");
        }
        // Only a query: nothing was written.
        m.write(0x1000, &[7; 16]).unwrap();
        assert!(m.writable(0x1000, 16));
        assert_eq!(m.allocation(0x1000).unwrap(), &[7; 16]);
    }

    #[test]
    fn faults_name_address_length_and_reason() {
        let mut m = memory();
        let mut four = [0u8; 4];
        assert_eq!(
            m.read(0x0ffc, &mut four),
            Err(MemoryFault { address: 0x0ffc, len: 4, reason: FaultReason::Unmapped })
        );
        assert_eq!(
            m.write(0x100e, &four),
            Err(MemoryFault { address: 0x100e, len: 4, reason: FaultReason::OutOfBounds { base: 0x1000, size: 16 } })
        );
        assert_eq!(m.read(0x1018, &mut four).unwrap_err().reason, FaultReason::Unmapped);
        assert_eq!(m.read(u64::MAX - 1, &mut four).unwrap_err().reason, FaultReason::AddressWraps);
        // The failed write left the allocation untouched.
        assert!(m.allocation(0x1000).unwrap().iter().all(|&b| b == 0));
        assert_eq!(m.read(0, &mut []), Ok(()));
    }

    #[test]
    fn views_lend_exactly_what_a_read_would_give() {
        let mut m = memory();
        m.write(0x1003, &[1, 2, 3]).unwrap();
        assert_eq!(m.view(0x1002, 4), Some(&[0, 1, 2, 3][..]));
        assert_eq!(m.view(0x1000, 16).map(<[u8]>::len), Some(16));
        // Whatever a read refuses, a view does not lend.
        for (address, len) in [(0x0ffc, 4), (0x100e, 4), (0x1018, 4), (u64::MAX - 1, 4), (0x1000, 17)] {
            assert!(m.read(address, &mut vec![0; len]).is_err());
            assert_eq!(m.view(address, len), None, "{address:#x} + {len}");
        }
    }

    #[test]
    fn derived_forms_are_derived_once_and_forgotten_when_their_allocation_is_written() {
        let mut m = memory();
        m.write(0x1000, &[1, 2, 3, 4]).unwrap();
        let calls = std::cell::Cell::new(0);
        let reverse = |bytes: &[u8]| {
            calls.set(calls.get() + 1);
            bytes.iter().rev().copied().collect::<Vec<u8>>()
        };
        assert_eq!(m.derived(0x1001, 3, 7, &reverse).as_deref(), Some(&[4, 3, 2][..]));
        assert_eq!(m.derived(0x1001, 3, 7, &reverse).as_deref(), Some(&[4, 3, 2][..]));
        assert_eq!(calls.get(), 1, "kept after the first derivation");
        // Another key or another range is another form.
        assert_eq!(m.derived(0x1001, 3, 8, &reverse).as_deref(), Some(&[4, 3, 2][..]));
        assert_eq!(m.derived(0x1000, 3, 7, &reverse).as_deref(), Some(&[3, 2, 1][..]));
        assert_eq!(calls.get(), 3);
        // A write anywhere in the allocation forgets its forms; another allocation's does not.
        m.write(0x1010, &[9]).unwrap();
        assert_eq!(m.derived(0x1001, 3, 7, &reverse).as_deref(), Some(&[4, 3, 2][..]));
        assert_eq!(calls.get(), 3);
        m.write(0x100f, &[9]).unwrap();
        m.write(0x1002, &[5]).unwrap();
        assert_eq!(m.derived(0x1001, 3, 7, &reverse).as_deref(), Some(&[4, 5, 2][..]));
        assert_eq!(calls.get(), 4);
        // What a view refuses is not derived.
        for (address, len) in [(0x0ffc, 4), (0x100e, 4), (0x1018, 4), (u64::MAX - 1, 4), (0x1000, 17)] {
            assert_eq!(m.derived(address, len, 7, &reverse), None, "{address:#x} + {len}");
        }
        assert_eq!(calls.get(), 4);
    }

    #[test]
    fn derived_forms_take_at_most_their_allocations_size() {
        let forms = DerivedForms::new();
        let allocation = [0u8; 8];
        let copy = |bytes: &[u8]| bytes.to_vec();
        for offset in 0..4 {
            forms.get_or_derive(&allocation, offset, 3, 1, &copy).unwrap();
        }
        // The third form of three bytes would pass the eight of the allocation: it was kept in
        // place of the first two, and the fourth beside it.
        assert_eq!(forms.len(), 2);
        assert_eq!(forms.get_or_derive(&allocation, 6, 3, 1, &copy), None, "past the allocation");
        assert!(forms.clone().is_empty(), "a clone keeps none");
        assert_eq!(format!("{forms:?}"), "DerivedForms { forms: 2, bytes: 6 }");
    }

    #[test]
    fn a_form_padded_within_the_slack_counts_as_its_range() {
        // A whole-allocation matrix laid out with FORM_SLACK bytes of padding (the 16-row Q4_1
        // layout) is kept and derived once; one byte more than the slack is not kept.
        let forms = DerivedForms::new();
        let allocation = [7u8; 256];
        let calls = std::cell::Cell::new(0);
        let padded = |extra: usize| {
            let calls = &calls;
            move |bytes: &[u8]| {
                calls.set(calls.get() + 1);
                let mut v = bytes.to_vec();
                v.resize(bytes.len() + extra, 0);
                v
            }
        };
        for _ in 0..3 {
            let form = forms.get_or_derive(&allocation, 0, 256, 1, &padded(FORM_SLACK)).unwrap();
            assert_eq!(form.len(), 256 + FORM_SLACK);
        }
        assert_eq!(calls.get(), 1, "kept after the first derivation");
        for _ in 0..2 {
            forms.get_or_derive(&allocation, 0, 256, 2, &padded(FORM_SLACK + 1)).unwrap();
        }
        assert_eq!(calls.get(), 3, "a form past the slack is derived every time");
    }

    #[test]
    fn allocations_are_checked() {
        let mut m = memory();
        assert_eq!(m.allocate(0, 4), Err(AllocateError::NullAddress));
        assert_eq!(m.allocate(0x2000, 0), Err(AllocateError::Empty { base: 0x2000 }));
        assert_eq!(m.allocate(u64::MAX, 2), Err(AllocateError::Wraps { base: u64::MAX, size: 2 }));
        assert!(matches!(m.allocate(0x0ff0, 0x11), Err(AllocateError::Overlaps { existing_base: 0x1000, .. })));
        assert!(matches!(m.allocate(0x1017, 1), Err(AllocateError::Overlaps { existing_base: 0x1010, .. })));
        assert!(matches!(m.allocate(0x0800, 0x1000), Err(AllocateError::Overlaps { .. })));
        assert!(matches!(m.allocate(0x1_0000, 1 << 40), Err(AllocateError::TooLarge { .. })));
        m.allocate(0x0ff0, 0x10).unwrap();
        m.allocate(0x1018, 1).unwrap();
        assert_eq!(m.allocations().collect::<Vec<_>>(), [(0x0ff0, 16), (0x1000, 16), (0x1010, 8), (0x1018, 1)]);
    }

    /// A row form of `row_bytes`-byte rows whose value for row `r` is the sum of its bytes; the
    /// rows it was asked to derive are recorded.
    struct Sums {
        row_bytes: usize,
        derived: std::cell::RefCell<Vec<Range<usize>>>,
    }

    impl Sums {
        fn update(&self, form: &mut Vec<f32>, rows: Range<usize>, bytes: &[u8]) {
            self.derived.borrow_mut().push(rows.clone());
            if form.len() < rows.end {
                form.resize(rows.end, 0.0);
            }
            for (r, row) in rows.zip(bytes.chunks_exact(self.row_bytes)) {
                form[r] = row.iter().map(|&b| f32::from(b)).sum();
            }
        }

        /// The form of the first `rows` rows at `address`, brought up to date.
        fn form(&self, memory: &HostMemory, address: u64, rows: usize) -> Vec<f32> {
            let mut got = Vec::new();
            let update = |f: &mut Vec<f32>, r: Range<usize>, b: &[u8]| self.update(f, r, b);
            assert!(memory.with_row_form(address, self.row_bytes, rows, 7, &update, &mut |f| got = f[..rows].to_vec()));
            got
        }

        /// What the form holds for the bytes as they are now.
        fn fresh(&self, memory: &HostMemory, address: u64, rows: usize) -> Vec<f32> {
            let mut bytes = vec![0; rows * self.row_bytes];
            memory.read(address, &mut bytes).unwrap();
            bytes.chunks_exact(self.row_bytes).map(|row| row.iter().map(|&b| f32::from(b)).sum()).collect()
        }
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn a_row_form_derives_again_only_from_the_first_row_written() {
        let mut m = HostMemory::new();
        m.allocate(0x1000, 64 * 8).unwrap();
        let sums = Sums { row_bytes: 8, derived: Default::default() };
        let derived = |expected: &[Range<usize>]| {
            assert_eq!(sums.derived.borrow().as_slice(), expected);
            sums.derived.borrow_mut().clear();
        };
        // A cache at row 2 of the allocation.
        let at = 0x1000 + 16;
        assert_eq!(sums.form(&m, at, 10), sums.fresh(&m, at, 10));
        derived(&[0..10]);
        // A decode step: the next row written, the form asked for one more.
        m.write(at + 10 * 8, &[3; 8]).unwrap();
        assert_eq!(sums.form(&m, at, 11), sums.fresh(&m, at, 11));
        derived(&[10..11]);
        // Fewer rows, no write: nothing derived.
        assert_eq!(sums.form(&m, at, 4), sums.fresh(&m, at, 4));
        derived(&[]);
        // One byte of row 3 (the last byte of the row), and bytes outside the form's rows.
        m.write(at + 3 * 8 + 7, &[9]).unwrap();
        m.write(0x1000, &[1; 16]).unwrap();
        m.write(at + 40 * 8, &[1; 8]).unwrap();
        assert_eq!(sums.form(&m, at, 11), sums.fresh(&m, at, 11));
        derived(&[3..11]);
        // A write across the form's first row from before it.
        m.write(at - 4, &[5; 8]).unwrap();
        assert_eq!(sums.form(&m, at, 11), sums.fresh(&m, at, 11));
        derived(&[0..11]);
        // More writes than the journal holds: derived whole.
        for i in 0..=JOURNAL_WRITES {
            m.write(0x1000 + 63 * 8, &[u8::try_from(i % 256).unwrap()]).unwrap();
        }
        assert_eq!(sums.form(&m, at, 11), sums.fresh(&m, at, 11));
        derived(&[0..11]);
        // A clone keeps no forms.
        let copy = m.clone();
        assert_eq!(sums.form(&copy, at, 2), sums.fresh(&copy, at, 2));
        derived(&[0..2]);
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn row_forms_are_refused_past_their_allocation_and_not_kept_past_the_budget() {
        let mut m = HostMemory::new();
        m.allocate(0x1000, 64).unwrap();
        let sums = Sums { row_bytes: 8, derived: Default::default() };
        let update = |f: &mut Vec<f32>, r: Range<usize>, b: &[u8]| sums.update(f, r, b);
        for (address, rows) in [(0x1000, 9), (0x1008, 8), (0x0ff8, 1), (0x1000, 0)] {
            assert!(!m.with_row_form(address, 8, rows, 7, &update, &mut |_| panic!("used")), "{address:#x} {rows}");
        }
        assert!(!m.with_row_form(0x1000, usize::MAX, 2, 7, &update, &mut |_| panic!("used")));
        // Two forms of all 8 rows hold twice the allocation's bytes: the second is used, then
        // forgotten, and derived whole each time.
        for key in [1, 2, 2] {
            assert!(m.with_row_form(0x1000, 8, 8, key, &update, &mut |f| assert_eq!(f.len(), 8)));
        }
        assert_eq!(sums.derived.borrow().as_slice(), [0..8, 0..8, 0..8]);
    }

    proptest::proptest! {
        #[test]
        fn row_forms_follow_any_writes(
            ops in proptest::collection::vec((0usize..4, 0usize..96, 1usize..20, proptest::num::u8::ANY), 1..60),
        ) {
            let mut m = HostMemory::new();
            m.allocate(0x1000, 96).unwrap();
            let (a, b) = (Sums { row_bytes: 8, derived: Default::default() }, Sums { row_bytes: 5, derived: Default::default() });
            for (op, at, n, byte) in ops {
                match op {
                    0 | 1 => {
                        let len = n.min(96 - at).max(1);
                        let at = at.min(95);
                        m.write(0x1000 + at as u64, &vec![byte; len.min(96 - at)]).unwrap();
                    }
                    2 => {
                        let rows = n.min(12);
                        proptest::prop_assert_eq!(a.form(&m, 0x1000, rows), a.fresh(&m, 0x1000, rows));
                    }
                    _ => {
                        let rows = n.min(16);
                        proptest::prop_assert_eq!(b.form(&m, 0x1010, rows), b.fresh(&m, 0x1010, rows));
                    }
                }
            }
        }
    }
}
