//! Memory faults ([`MemoryFault`], [`FaultReason`]) and the range check of a device's allocation
//! table: which allocation holds an access, or the [`MemoryFault`] that says why none does. Every
//! backend's address space runs its accesses through it (the soft device's, the HSA backend's
//! allocation table), so a fault means the same on each.

use std::collections::BTreeMap;

/// Why a memory access faulted.
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
    /// A direct host store into memory the host reaches only through copies (device memory).
    #[error("the allocation is not host-visible")]
    NotHostVisible,
}

/// A device memory access (a copy, a host store, a packet or kernarg read by the packet
/// processor) that the device's address space refused; nothing was transferred.
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

/// The allocation of `allocations` (keyed by first address, sized by `size`, not overlapping)
/// holding all of `[address, address + len)`: its first address and the offset of `address` in
/// it.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_are_located_or_fault_with_their_reason() {
        let table: BTreeMap<u64, u64> = [(0x1000, 16), (0x1010, 8), (0x2000, 0x100)].into_iter().collect();
        let size = |s: &u64| *s;
        assert_eq!(locate(&table, size, 0x1000, 16), Ok((0x1000, 0)));
        assert_eq!(locate(&table, size, 0x1014, 4), Ok((0x1010, 4)));
        assert_eq!(locate_entry(&table, size, 0x20ff, 1), Ok((0x2000, &0x100, 0xff)));
        let fault = |address, len, reason| Err(MemoryFault { address, len, reason });
        assert_eq!(
            locate(&table, size, 0x100e, 4),
            fault(0x100e, 4, FaultReason::OutOfBounds { base: 0x1000, size: 16 })
        );
        assert_eq!(locate(&table, size, 0x1018, 1), fault(0x1018, 1, FaultReason::Unmapped));
        assert_eq!(locate(&table, size, 0xfff, 1), fault(0xfff, 1, FaultReason::Unmapped));
        assert_eq!(locate(&table, size, u64::MAX - 1, 4), fault(u64::MAX - 1, 4, FaultReason::AddressWraps));
    }
}
