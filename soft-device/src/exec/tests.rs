use kernel_refs::memory::HostMemory;

use super::*;

const Y: u64 = 0x1_0000;
const X: u64 = 0x2_0000;
const N: u32 = 6;

/// An `axpy` kernarg segment (offsets from `llvm-readelf --notes`: y 0, x 8, a 16, n 20,
/// hidden_group_size_x 36; 24 explicit bytes, then 256 hidden).
fn axpy_kernarg(a: f32, workgroup: u16) -> Vec<u8> {
    let mut k = vec![0u8; 280];
    k[0..8].copy_from_slice(&Y.to_le_bytes());
    k[8..16].copy_from_slice(&X.to_le_bytes());
    k[16..20].copy_from_slice(&a.to_le_bytes());
    k[20..24].copy_from_slice(&N.to_le_bytes());
    k[36..38].copy_from_slice(&workgroup.to_le_bytes());
    k
}

fn memory() -> HostMemory {
    let mut m = HostMemory::new();
    m.allocate(Y, 64).unwrap();
    m.allocate(X, 64).unwrap();
    m.write_f32s(Y, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    m.write_f32s(X, &[0.5, 0.25, -1.0, 8.0, 0.0, 2.0]).unwrap();
    m
}

fn effect(arg_index: usize, address: u64, access: Access) -> ResolvedEffect {
    ResolvedEffect { arg_index, address, bytes: 4 * u64::from(N), access }
}

fn run(
    m: &mut HostMemory,
    effects: &[ResolvedEffect],
) -> (Result<(), kernel_refs::cpu::KernelError>, Option<EffectViolation>) {
    let kernarg = axpy_kernarg(2.0, 4);
    let launch = Launch { kernarg: &kernarg, grid_size: [8, 1, 1], workgroup_size: [4, 1, 1], dynamic_lds_bytes: 0 };
    let mut guard = EffectGuard::new(m, "axpy", effects);
    let result = kernel_refs::cpu::axpy(&launch, &mut guard);
    (result, guard.into_violation())
}

#[test]
fn declared_effects_let_the_reference_run() {
    let mut m = memory();
    let (result, violation) = run(&mut m, &[effect(0, Y, Access::ReadWrite), effect(1, X, Access::Read)]);
    assert_eq!((result, violation), (Ok(()), None));
    let mut y = [0f32; 6];
    m.read_f32s(Y, &mut y).unwrap();
    // y = a * x + y with a = 2, computed here in f64 (exact for these values).
    // CAST: rounding the f64 result to f32 is the point; these values are exact in f32.
    #[allow(clippy::cast_possible_truncation)]
    let expected: Vec<f32> = [(1.0, 0.5), (2.0, 0.25), (3.0, -1.0), (4.0, 8.0), (5.0, 0.0), (6.0, 2.0)]
        .iter()
        .map(|&(y, x): &(f64, f64)| (2.0 * x + y) as f32)
        .collect();
    assert_eq!(y.to_vec(), expected);
}

#[test]
fn a_missing_read_range_is_a_violation_naming_kernel_range_and_access() {
    let mut m = memory();
    // The declaration forgets that axpy reads x.
    let (result, violation) = run(&mut m, &[effect(0, Y, Access::ReadWrite)]);
    let fault = model::MemoryFault { address: X, len: 16, reason: model::FaultReason::Unmapped };
    assert_eq!(result, Err(kernel_refs::cpu::KernelError::Memory { arg: "x", fault }));
    // The first work-group reads 4 elements of x at once.
    assert_eq!(violation, Some(EffectViolation { kernel: "axpy".into(), va: X, len: 16, access: Access::Read }));
    // Nothing was stored: the first work-group faulted before its stores.
    let mut y = [0f32; 6];
    m.read_f32s(Y, &mut y).unwrap();
    assert_eq!(y, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn a_write_to_a_read_only_range_is_a_violation() {
    let mut m = memory();
    let (result, violation) = run(&mut m, &[effect(0, Y, Access::Read), effect(1, X, Access::Read)]);
    assert!(result.is_err());
    assert_eq!(violation, Some(EffectViolation { kernel: "axpy".into(), va: Y, len: 16, access: Access::Write }));
}

#[test]
fn a_range_that_is_too_short_is_a_violation() {
    let mut m = memory();
    // Declared for 5 elements, but the second work-group reads elements 4 and 5.
    let short = |arg_index, address, access| ResolvedEffect { arg_index, address, bytes: 20, access };
    let (result, violation) = run(&mut m, &[short(0, Y, Access::ReadWrite), short(1, X, Access::Read)]);
    assert!(result.is_err());
    // The reference loads x before y.
    assert_eq!(violation, Some(EffectViolation { kernel: "axpy".into(), va: X + 16, len: 8, access: Access::Read }));
    // The first work-group's stores stand, as on a GPU.
    let mut y = [0f32; 6];
    m.read_f32s(Y, &mut y).unwrap();
    assert_eq!(y, [2.0, 2.5, 1.0, 20.0, 5.0, 6.0]);
}

#[test]
fn an_access_must_fit_one_declared_range() {
    let mut m = memory();
    let halves = [
        ResolvedEffect { arg_index: 0, address: X, bytes: 8, access: Access::Read },
        ResolvedEffect { arg_index: 0, address: X + 8, bytes: 8, access: Access::Read },
    ];
    let guard = EffectGuard::new(&mut m, "k", &halves);
    let mut eight = [0u8; 8];
    assert!(guard.read(X, &mut eight).is_ok());
    assert!(guard.read(X + 8, &mut eight).is_ok());
    assert!(guard.read(X + 4, &mut eight).is_err());
    assert_eq!(guard.violation().map(|v| (v.va, v.len)), Some((X + 4, 8)));
    // The first violation is kept.
    assert!(guard.read(X + 12, &mut eight).is_err());
    assert_eq!(guard.violation().map(|v| v.va), Some(X + 4));
}

#[test]
fn writable_says_yes_only_inside_one_writable_range_and_records_nothing() {
    let mut m = memory();
    let effects = [
        ResolvedEffect { arg_index: 0, address: X, bytes: 8, access: Access::Read },
        ResolvedEffect { arg_index: 1, address: Y, bytes: 8, access: Access::Write },
    ];
    let guard = EffectGuard::new(&mut m, "k", &effects);
    assert!(guard.writable(Y, 8) && guard.writable(Y + 4, 4) && guard.writable(X, 0));
    // Past the writable range, or only readable: no, and nothing recorded (the caller's write
    // records the fault).
    for (address, len) in [(Y + 4, 8), (X, 4), (Y, usize::MAX)] {
        assert!(!guard.writable(address, len), "{address:#x} + {len}");
    }
    assert_eq!(guard.violation(), None);
}

#[test]
fn views_and_derived_forms_are_lent_only_inside_one_readable_range() {
    let mut m = memory();
    let effects = [
        ResolvedEffect { arg_index: 0, address: X, bytes: 8, access: Access::Read },
        ResolvedEffect { arg_index: 1, address: Y, bytes: 8, access: Access::Write },
    ];
    let guard = EffectGuard::new(&mut m, "k", &effects);
    let copy = |bytes: &[u8]| bytes.to_vec();
    assert_eq!(guard.view(X, 8).map(<[u8]>::len), Some(8));
    assert_eq!(guard.derived(X + 4, 4, 1, &copy).map(|f| f.len()), Some(4));
    // Past the readable range, or only writable: neither lent nor recorded (the caller's read
    // records the fault).
    for (address, len) in [(X + 4, 8), (Y, 4)] {
        assert_eq!(guard.view(address, len), None);
        assert_eq!(guard.derived(address, len, 1, &copy), None);
    }
    assert_eq!(guard.violation(), None);
}
