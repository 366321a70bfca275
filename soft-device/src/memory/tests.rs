use super::*;

const BASE: u64 = 0x7f00_0000_0000;

#[test]
fn sim_chosen_vas_are_aligned_guarded_and_high() {
    let mut m = SimMemory::new();
    let a = m.allocate(100).unwrap();
    let b = m.allocate(0x1000).unwrap();
    let c = m.allocate(0x1001).unwrap();
    assert_eq!((a.id, a.va, a.size), (AllocationId(0), BASE, 100));
    // 100 bytes take one granule, then one guard granule.
    assert_eq!((b.id, b.va), (AllocationId(1), BASE + 0x2000));
    assert_eq!((c.id, c.va), (AllocationId(2), BASE + 0x4000));
    let d = m.allocate(1).unwrap();
    // 0x1001 bytes take two granules, then the guard.
    assert_eq!(d.va, BASE + 0x7000);
    assert_eq!(m.in_use_bytes(), 0x1000 + 0x1000 + 0x2000 + 0x1000);
    assert_eq!(m.len(), 4);
}

#[test]
fn reads_back_writes_and_faults_outside() {
    let mut m = SimMemory::new();
    let a = m.allocate(16).unwrap();
    m.write(a.va + 4, &[1, 2, 3, 4]).unwrap();
    let mut out = [0xffu8; 8];
    m.read(a.va, &mut out).unwrap();
    assert_eq!(out, [0, 0, 0, 0, 1, 2, 3, 4]);
    let mut four = [0u8; 4];
    // Past the end of the allocation: out of bounds, nothing written.
    assert_eq!(
        m.write(a.va + 14, &four),
        Err(MemoryFault { address: a.va + 14, len: 4, reason: FaultReason::OutOfBounds { base: a.va, size: 16 } })
    );
    // Bytes 16.. of the granule are not allocated: unmapped even though the granule is reserved.
    assert_eq!(
        m.read(a.va + 16, &mut four),
        Err(MemoryFault { address: a.va + 16, len: 4, reason: FaultReason::Unmapped })
    );
    assert_eq!(m.read(0, &mut four).unwrap_err().reason, FaultReason::Unmapped);
    assert_eq!(m.read(u64::MAX - 1, &mut four).unwrap_err().reason, FaultReason::AddressWraps);
    m.read(a.va, &mut out).unwrap();
    assert_eq!(out, [0, 0, 0, 0, 1, 2, 3, 4]);
}

#[test]
fn accesses_never_span_two_allocations() {
    let mut m = SimMemory::new();
    let a = m.allocate_at(0x10_0000, 0x100).unwrap();
    let b = m.allocate_at(0x10_0100, 0x100).unwrap();
    assert_eq!(b.va, a.va + a.size);
    let mut eight = [0u8; 8];
    assert_eq!(
        m.read(0x10_00fc, &mut eight).unwrap_err().reason,
        FaultReason::OutOfBounds { base: 0x10_0000, size: 0x100 }
    );
    assert_eq!(m.resolve(0x10_00ff), Some((a.id, 0xff)));
    assert_eq!(m.resolve(0x10_0100), Some((b.id, 0)));
    assert_eq!(m.resolve(0x10_0200), None);
    assert_eq!(m.resolve_range(0x10_00fc, 4), Some((a.id, 0xfc, RegionKind::Buffer)));
    assert_eq!(m.resolve_range(0x10_00fc, 8), None);
    assert_eq!(m.resolve_range(0x10_0000, 0), None);
}

#[test]
fn freed_ranges_are_never_handed_out_again() {
    let mut m = SimMemory::new();
    let a = m.allocate(0x1000).unwrap();
    m.free(a).unwrap();
    let b = m.allocate(0x1000).unwrap();
    assert_ne!(b.va, a.va);
    assert_eq!(b.id, AllocationId(1));
    let mut one = [0u8; 1];
    assert_eq!(m.read(a.va, &mut one).unwrap_err().reason, FaultReason::Unmapped);
    assert_eq!(m.resolve(a.va), None);
    assert_eq!(m.free(a), Err(FreeError::NotLive { id: a.id, va: a.va }));
    // A forged allocation with the right VA and the wrong id is refused.
    let forged = DeviceAllocation { id: AllocationId(7), ..b };
    assert_eq!(m.free(forged), Err(FreeError::NotLive { id: AllocationId(7), va: b.va }));
    assert_eq!(m.in_use_bytes(), 0x1000);
}

#[test]
fn reset_restarts_identities_but_not_addresses() {
    let mut m = SimMemory::new();
    let a = m.allocate(8).unwrap();
    m.reset();
    assert!(m.is_empty());
    assert_eq!(m.in_use_bytes(), 0);
    let b = m.allocate(8).unwrap();
    assert_eq!(b.id, AllocationId(0));
    assert!(b.va > a.va);
    // The stale allocation has the same id but not the same VA.
    assert_eq!(m.free(a), Err(FreeError::NotLive { id: AllocationId(0), va: a.va }));
}

#[test]
fn caller_given_vas_are_checked() {
    let mut m = SimMemory::new();
    m.allocate_at(0x20_0000, 0x1000).unwrap();
    assert_eq!(
        m.allocate_at(0x20_0f00, 0x200),
        Err(AllocateError::Overlaps { va: 0x20_0f00, size: 0x200, existing_va: 0x20_0000, existing_size: 0x1000 })
    );
    assert_eq!(
        m.allocate_at(0x1f_ff00, 0x101),
        Err(AllocateError::Overlaps { va: 0x1f_ff00, size: 0x101, existing_va: 0x20_0000, existing_size: 0x1000 })
    );
    assert!(matches!(m.allocate_at(0x1f_0000, 0x2_0000), Err(AllocateError::Overlaps { .. })));
    assert_eq!(m.allocate_at(0x20_1010, 4), Err(AllocateError::Misaligned { va: 0x20_1010, align: 256 }));
    let range = |va, size| AllocateError::OutOfRange { va, size, min: 0x1_0000, end: 0x8000_0000_0000 };
    assert_eq!(m.allocate_at(0, 4), Err(range(0, 4)));
    assert_eq!(m.allocate_at(0xff00, 4), Err(range(0xff00, 4)));
    assert_eq!(m.allocate_at(0x7fff_ffff_ff00, 0x101), Err(range(0x7fff_ffff_ff00, 0x101)));
    assert_eq!(m.allocate_at(u64::MAX - 255, 0x1000), Err(range(u64::MAX - 255, 0x1000)));
    assert_eq!(m.allocate_at(0x30_0000, 0), Err(AllocateError::Empty));
    // Adjacent on both sides is fine.
    m.allocate_at(0x1f_ff00, 0x100).unwrap();
    m.allocate_at(0x20_1000, 0x100).unwrap();
}

#[test]
fn sim_chosen_vas_skip_caller_given_ones() {
    let mut m = SimMemory::new();
    let fixed = m.allocate_at(BASE + 0x1000, 0x3000).unwrap();
    let a = m.allocate(0x1000).unwrap();
    // [BASE, BASE + 0x2000) would touch the fixed allocation (guard included): skipped past it.
    assert_eq!(a.va, BASE + 0x5000);
    assert!(a.va >= fixed.va + fixed.size + SimMemory::GRANULE_BYTES);
}

#[test]
fn limits_are_enforced() {
    let mut m = SimMemory::new();
    assert_eq!(m.allocate(0), Err(AllocateError::Empty));
    assert_eq!(m.allocate(1 << 31), Err(AllocateError::TooLarge { size: 1 << 31, limit: 1 << 30 }));
    let half = m.allocate(1 << 29).unwrap();
    m.allocate((1 << 29) - 0x1000).unwrap();
    assert_eq!(
        m.allocate(0x1001),
        Err(AllocateError::OutOfMemory { size: 0x2000, in_use: (1 << 30) - 0x1000, limit: 1 << 30 })
    );
    m.allocate(1).unwrap();
    m.free(half).unwrap();
    m.allocate(1 << 29).unwrap();
}

#[test]
fn allocation_count_is_limited() {
    let mut m = SimMemory::new();
    for _ in 0..SimMemory::ALLOCATIONS_MAX {
        m.allocate(1).unwrap();
    }
    assert_eq!(m.allocate(1), Err(AllocateError::TooMany { limit: 16_384 }));
}

#[test]
fn device_owned_memory_cannot_be_freed() {
    let mut m = SimMemory::new();
    let code = m.allocate_kind(0x100, 0x1_0000, RegionKind::Code).unwrap();
    assert!(code.va.is_multiple_of(0x1_0000));
    assert_eq!(m.free(code), Err(FreeError::DeviceOwned { id: code.id, va: code.va }));
    assert_eq!(m.resolve_range(code.va, 0x100), Some((code.id, 0, RegionKind::Code)));
}

/// External memory for the tests: a byte vector behind a mutex.
#[derive(Debug)]
struct Shared(std::sync::Mutex<Vec<u8>>);

impl ExternalMemory for Shared {
    fn len(&self) -> u64 {
        len_u64(&self.0.lock().unwrap())
    }

    fn read(&self, offset: u64, out: &mut [u8]) {
        let at = usize::try_from(offset).unwrap();
        out.copy_from_slice(&self.0.lock().unwrap()[at..at + out.len()]);
    }

    fn write(&self, offset: u64, data: &[u8]) {
        let at = usize::try_from(offset).unwrap();
        self.0.lock().unwrap()[at..at + data.len()].copy_from_slice(data);
    }
}

#[test]
fn external_regions_share_their_bytes_and_take_no_budget() {
    let mut m = SimMemory::with_va_range(0x10_0000_0000, 0x10_0001_0000);
    assert_eq!(m.va_range(), (0x10_0000_0000, 0x10_0001_0000));
    let shared = Arc::new(Shared(std::sync::Mutex::new(vec![0; 64])));
    let host = m.map_external(0x5555_0000, shared.clone(), RegionKind::HostVisible).unwrap();
    assert_eq!((host.id, host.va, host.size), (AllocationId(0), 0x5555_0000, 64));
    assert_eq!(m.in_use_bytes(), 0);
    m.write(host.va + 8, &[9, 8, 7]).unwrap();
    assert_eq!(shared.0.lock().unwrap()[8..11], [9, 8, 7]);
    shared.0.lock().unwrap()[0] = 42;
    assert_eq!(m.read_u32(host.va).unwrap(), 42);
    m.store_u32(host.va + 60, 0x0102_0304).unwrap();
    assert_eq!(shared.0.lock().unwrap()[60..64], [4, 3, 2, 1]);
    assert!(matches!(
        m.map_external(0x5555_0020, shared.clone(), RegionKind::HostVisible),
        Err(AllocateError::Overlaps { existing_va: 0x5555_0000, existing_size: 64, .. })
    ));
    // Sim-chosen VAs stay inside the configured range, and the range runs out.
    let a = m.allocate(0x1000).unwrap();
    assert_eq!(a.va, 0x10_0000_0000);
    assert!(matches!(m.allocate(0x10000), Err(AllocateError::AddressSpaceExhausted { .. })));
    m.free_kind(host, RegionKind::HostVisible).unwrap();
    assert_eq!(Arc::strong_count(&shared), 1, "the region's clone goes with it");
    assert!(m.read_u32(host.va).is_err());
}

#[test]
fn derived_forms_follow_every_write_and_go_with_their_region() {
    let mut m = SimMemory::new();
    let a = m.allocate_kind(16, SimMemory::GRANULE_BYTES, RegionKind::HostVisible).unwrap();
    let other = m.allocate(16).unwrap();
    m.write(a.va, &[1, 2, 3, 4]).unwrap();
    let calls = std::cell::Cell::new(0);
    let sum = |bytes: &[u8]| {
        calls.set(calls.get() + 1);
        vec![bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b))]
    };
    assert_eq!(m.derived(a.va, 4, 1, &sum).as_deref(), Some(&[10][..]));
    assert_eq!(m.derived(a.va, 4, 1, &sum).as_deref(), Some(&[10][..]));
    assert_eq!(calls.get(), 1, "kept");
    // Another allocation's write keeps it; a copy into it or a host store forgets it.
    m.write(other.va, &[7]).unwrap();
    assert_eq!(m.derived(a.va, 4, 1, &sum).as_deref(), Some(&[10][..]));
    assert_eq!(calls.get(), 1);
    m.write(a.va + 15, &[0]).unwrap();
    m.write(a.va, &[5]).unwrap();
    assert_eq!(m.derived(a.va, 4, 1, &sum).as_deref(), Some(&[14][..]));
    m.store_u32(a.va, 0x0101_0101).unwrap();
    assert_eq!(m.derived(a.va, 4, 1, &sum).as_deref(), Some(&[4][..]));
    assert_eq!(calls.get(), 3);
    // A range a read refuses is not derived; freed memory has no forms.
    assert_eq!(m.derived(a.va + 12, 8, 1, &sum), None);
    m.free_kind(a, RegionKind::HostVisible).unwrap();
    assert_eq!(m.derived(a.va, 4, 1, &sum), None);
    // Memory shared with a host (which may write it behind the sim's back) keeps none.
    let shared = Arc::new(Shared(std::sync::Mutex::new(vec![0; 64])));
    let host = m.map_external(0x5555_0000, shared, RegionKind::HostVisible).unwrap();
    assert_eq!(m.derived(host.va, 4, 1, &sum), None);
    assert_eq!(calls.get(), 3);
}

#[test]
fn the_address_space_and_the_memory_model_report_the_same_faults() {
    let mut m = SimMemory::new();
    let a = m.allocate(16).unwrap();
    let b = m.allocate(0x1000).unwrap();
    let accesses = [
        (a.va, 16),
        (a.va + 14, 4),
        (a.va + 16, 4),
        (b.va - 1, 2),
        (b.va + 0xfff, 1),
        (b.va + 0xfff, 2),
        (0, 4),
        (u64::MAX - 1, 4),
        (u64::MAX, 0),
    ];
    for (address, len) in accesses {
        let mut hal_out = vec![0u8; len];
        let mut model_out = vec![0u8; len];
        let ours = m.read(address, &mut hal_out);
        let model = DeviceMemory::read(&m, address, &mut model_out);
        let as_hal = model.map_err(|f| MemoryFault {
            address: f.address,
            len: f.len,
            reason: match f.reason {
                model::FaultReason::Unmapped => FaultReason::Unmapped,
                model::FaultReason::OutOfBounds { base, size } => FaultReason::OutOfBounds { base, size },
                model::FaultReason::AddressWraps => FaultReason::AddressWraps,
            },
        });
        assert_eq!(ours, as_hal, "{len} bytes at {address:#x}");
        assert_eq!(m.writable(address, len), ours.is_ok(), "{len} bytes at {address:#x}");
    }
}
