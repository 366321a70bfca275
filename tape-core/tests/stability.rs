//! Cross-position stability: two recordings of one decode step compared modulo their bindings.

mod recorder_fixture;

use kernarg_abi::layout::ArgValue;
use recorder_fixture::*;
use tape_core::binding::{Binding, BindingKind};
use tape_core::hash::{CanonicalEffect, CanonicalEffects, CanonicalPointer};
use tape_core::serial::{TapeData, validate};
use tape_core::stability::{DRIFTS_MAX, Drift, compare};
use tape_core::tape::{ExternalCount, Tape};
use tape_core::{Access, AllocationId, ArtifactId, Effects, Lds};

fn tape(data: TapeData) -> Tape {
    validate(data).unwrap()
}

/// The golden tape with fill's `n` (not block_sum's) following the position: only n and the
/// grid-independent words change between positions.
fn fill_bound_at(position: u32) -> Tape {
    let (f, a, b) = (fill(), axpy(), block_sum());
    let n = position + 1007;
    let args = [ArgValue::Pointer(ADDR_X), ArgValue::F32(1.5), ArgValue::U32(n)];
    let fill = launch(&f, &args, 1024, 0, vec![pointer(0, ALLOC_X, 0)], Effects::Known(vec![]));
    let data = TapeData {
        position,
        launches: vec![fill, axpy_launch(&a), block_sum_launch(&b, 1024)],
        external: vec![ExternalCount { name: "token_embedding".into(), count: 1 }],
        bindings: vec![Binding {
            name: "fill.n".into(),
            launch: 0,
            kind: BindingKind::KernargU32 { offset: 12, addend: 1007 },
        }],
    };
    tape(data)
}

#[test]
fn a_tape_is_stable_against_itself() {
    let t = golden_tape();
    let report = compare(&t, &t);
    assert!(report.is_stable(), "{report}");
    assert_eq!(report.to_string(), "stable");
}

#[test]
fn bound_words_may_follow_the_position() {
    let (a, b) = (fill_bound_at(17), fill_bound_at(18));
    assert_ne!(a.launches()[0].kernarg, b.launches()[0].kernarg);
    assert!(compare(&a, &b).is_stable(), "{}", compare(&a, &b));
    // Only one side needs the binding.
    let unbound = tape(TapeData { bindings: vec![], ..b.to_data() });
    assert!(compare(&a, &unbound).is_stable());
    assert!(compare(&unbound, &a).is_stable());
    // Without any binding the word drifts: bytes 12..14 of fill (1024 vs 1025 little-endian).
    let a_unbound = tape(TapeData { bindings: vec![], ..a.to_data() });
    let report = compare(&a_unbound, &unbound);
    assert_eq!(report.drifts(), &[Drift::Kernarg { launch: 0, start: 12, end: 13, a: vec![0x00], b: vec![0x01] }]);
}

#[test]
fn another_process_with_other_addresses_and_ids_is_stable() {
    let a = golden_tape();
    let mut data = a.to_data();
    map_allocations(&mut data, |AllocationId(id)| AllocationId(id + 1000));
    map_addresses(&mut data, |addr| addr + 0x1_0000_0000);
    let b = tape(data);
    assert!(compare(&a, &b).is_stable(), "{}", compare(&a, &b));
}

#[test]
fn a_grid_binding_does_not_cover_the_hidden_block_count() {
    // block_sum's n and grid follow the position; at 18, n = 1025 needs 17 work-groups, and the
    // hidden_block_count_x word (offset 24) the blob carries changes with the grid. No binding
    // owns it, so it is a drift, while n (bound) and the grid axis (bound) are not.
    let a = golden_tape();
    let b = recorded_at(18).with_bindings(golden_bindings()).unwrap();
    assert_eq!(b.launches()[2].geometry.grid_work_items, [17 * 64, 1, 1]);
    let report = compare(&a, &b);
    assert_eq!(
        report.drifts(),
        &[
            Drift::Effects {
                launch: 2,
                a: CanonicalEffects::Known(vec![
                    CanonicalEffect { ordinal: 2, offset_bytes: 64, len_bytes: 64, access: Access::Write },
                    CanonicalEffect { ordinal: 1, offset_bytes: 0, len_bytes: 4096, access: Access::Read },
                ]),
                b: CanonicalEffects::Known(vec![
                    CanonicalEffect { ordinal: 2, offset_bytes: 64, len_bytes: 68, access: Access::Write },
                    CanonicalEffect { ordinal: 1, offset_bytes: 0, len_bytes: 4100, access: Access::Read },
                ]),
            },
            Drift::Kernarg { launch: 2, start: 24, end: 25, a: vec![16], b: vec![17] },
        ]
    );
    assert!(!report.is_stable());
}

#[test]
fn a_binding_must_predict_the_other_recording() {
    let a = fill_bound_at(17);
    // b recorded n = 2000 at position 18, where the binding predicts 1025.
    let mut data = fill_bound_at(18).to_data();
    data.bindings.clear();
    data.launches[0].kernarg[12..16].copy_from_slice(&2000u32.to_le_bytes());
    let b = tape(data);
    let expected =
        Drift::BoundValue { launch: 0, name: "fill.n".into(), position: 18, predicted: Some(1025), recorded: 2000 };
    assert_eq!(compare(&a, &b).drifts(), std::slice::from_ref(&expected));
    assert_eq!(expected.to_string(), "launch 0: binding `fill.n` predicts 1025 at position 18, recorded 2000");
    // Seen from the other side, too.
    assert_eq!(
        compare(&b, &a).drifts(),
        &[Drift::BoundValue { launch: 0, name: "fill.n".into(), position: 18, predicted: Some(1025), recorded: 2000 }]
    );
    // A binding with no value at the other position: at 4000, n = 5007 needs 79 work-groups,
    // above the grid binding's maximum of 64.
    let golden = golden_tape();
    let far = recorded_at(4000);
    let expected = Drift::BoundValue {
        launch: 2,
        name: "block_sum.grid".into(),
        position: 4000,
        predicted: None,
        recorded: 79 * 64,
    };
    assert!(compare(&golden, &far).drifts().contains(&expected), "{}", compare(&golden, &far));
    assert_eq!(expected.to_string(), "launch 2: binding `block_sum.grid` has no value at position 4000, recorded 5056");
}

#[test]
fn grid_predictions_are_checked() {
    let a = golden_tape();
    // At 18 block_sum ran 17 groups per the binding; pretend it ran 20.
    let mut data = recorded_at(18).to_data();
    data.launches[2].geometry.grid_work_items[0] = 20 * 64;
    let b = tape(data);
    let report = compare(&a, &b);
    assert!(report.drifts().contains(&Drift::BoundValue {
        launch: 2,
        name: "block_sum.grid".into(),
        position: 18,
        predicted: Some(17 * 64),
        recorded: 20 * 64,
    }));
    assert!(!report.drifts().iter().any(|d| matches!(d, Drift::Grid { .. })), "the axis is owned");
}

/// Drifts after changing `b`'s golden data with `f`, bindings of both removed.
fn drifts(f: impl Fn(&mut TapeData)) -> Vec<Drift> {
    let mut base = golden_tape().to_data();
    base.bindings.clear();
    let mut changed = base.clone();
    f(&mut changed);
    compare(&tape(base), &tape(changed)).drifts().to_vec()
}

#[test]
fn every_immutable_field_drifts_alone() {
    let fill_id = ArtifactId { code_object_sha256: digest(FILL_SHA256), symbol: "fill".into() };
    assert_eq!(
        drifts(|d| d.launches[0].artifact.symbol = "fill2".into()),
        [Drift::Artifact {
            launch: 0,
            a: fill_id.clone(),
            b: ArtifactId { symbol: "fill2".into(), ..fill_id.clone() },
        }]
    );
    assert_eq!(
        drifts(|d| d.launches[1].geometry.grid_work_items[1] = 3),
        [Drift::Grid { launch: 1, axis: 1, a: 1, b: 3 }]
    );
    assert_eq!(
        drifts(|d| d.launches[1].geometry.workgroup_work_items = [32, 2, 1]),
        [Drift::Workgroup { launch: 1, a: [64, 1, 1], b: [32, 2, 1] }]
    );
    assert_eq!(
        drifts(|d| d.launches[2].lds.static_bytes = 128),
        [Drift::Lds {
            launch: 2,
            a: Lds { static_bytes: 0, dynamic_bytes: 256 },
            b: Lds { static_bytes: 128, dynamic_bytes: 256 },
        }]
    );
    assert_eq!(drifts(|d| d.launches[0].wave_size = 64), [Drift::WaveSize { launch: 0, a: 32, b: 64 }]);
    assert_eq!(
        drifts(|d| d.launches[1].pointers[0].offset_bytes = 256),
        [Drift::Pointers {
            launch: 1,
            a: vec![
                CanonicalPointer { kernarg_offset: 0, ordinal: 1, offset_bytes: 0 },
                CanonicalPointer { kernarg_offset: 8, ordinal: 0, offset_bytes: 0 },
            ],
            b: vec![
                CanonicalPointer { kernarg_offset: 0, ordinal: 1, offset_bytes: 256 },
                CanonicalPointer { kernarg_offset: 8, ordinal: 0, offset_bytes: 0 },
            ],
        }]
    );
    assert_eq!(
        drifts(|d| d.launches[0].effects = Effects::Unknown),
        [Drift::Effects {
            launch: 0,
            a: CanonicalEffects::Known(vec![CanonicalEffect {
                ordinal: 0,
                offset_bytes: 0,
                len_bytes: 4096,
                access: Access::Write,
            }]),
            b: CanonicalEffects::Unknown,
        }]
    );
    assert_eq!(
        drifts(|d| d.launches[1].kernarg.extend_from_slice(&[0; 8])),
        [Drift::KernargLength { launch: 1, a: 280, b: 288 }]
    );
    assert_eq!(drifts(|d| d.external[0].count = 2), [Drift::External { name: "token_embedding".into(), a: 1, b: 2 }]);
    assert_eq!(
        drifts(|d| d.external.push(ExternalCount { name: "sampler".into(), count: 1 })),
        [Drift::External { name: "sampler".into(), a: 0, b: 1 }]
    );
    assert_eq!(drifts(|d| d.external.clear()), [Drift::External { name: "token_embedding".into(), a: 1, b: 0 }]);
}

#[test]
fn aliasing_is_a_pointer_drift_even_with_equal_ids() {
    // In b, block_sum writes into x (ordinal 0) instead of a third allocation.
    let found = drifts(|d| {
        d.launches[2].pointers[0].allocation = ALLOC_X;
        let Effects::Known(e) = &mut d.launches[2].effects else { unreachable!() };
        e[0].allocation = ALLOC_X;
    });
    assert_eq!(found.len(), 2);
    assert!(matches!(&found[0], Drift::Pointers { launch: 2, a, b } if a[0].ordinal == 2 && b[0].ordinal == 0));
    assert!(matches!(&found[1], Drift::Effects { launch: 2, .. }));
}

#[test]
fn kernarg_drifts_are_maximal_byte_ranges_outside_pointers() {
    let found = drifts(|d| {
        let k = &mut d.launches[1].kernarg;
        k[16..20].copy_from_slice(&3.0f32.to_le_bytes()); // a: 2.0 -> 3.0
        k[0..8].copy_from_slice(&0xdead_beef_0000u64.to_le_bytes()); // an address: not compared
        k[100] = 7;
        k[101] = 8;
        k[279] = 1;
    });
    assert_eq!(
        found,
        [
            Drift::Kernarg { launch: 1, start: 18, end: 19, a: vec![0x00], b: vec![0x40] },
            Drift::Kernarg { launch: 1, start: 100, end: 102, a: vec![0, 0], b: vec![7, 8] },
            Drift::Kernarg { launch: 1, start: 279, end: 280, a: vec![0], b: vec![1] },
        ]
    );
    assert_eq!(found[1].to_string(), "launch 1: kernarg bytes 100..102 0000 vs 0708");
}

#[test]
fn a_changed_launch_count_compares_the_common_prefix() {
    let found = drifts(|d| {
        d.launches.pop();
        d.launches[0].wave_size = 64;
    });
    assert_eq!(found, [Drift::LaunchCount { a: 3, b: 2 }, Drift::WaveSize { launch: 0, a: 32, b: 64 }]);
    // A binding of a launch the other tape lacks predicts nothing.
    let a = golden_tape();
    let mut data = a.to_data();
    data.launches.pop();
    data.bindings.clear();
    assert_eq!(compare(&a, &tape(data)).drifts(), [Drift::LaunchCount { a: 3, b: 2 }]);
}

#[test]
fn reports_are_bounded() {
    let mut base = golden_tape().to_data();
    base.bindings.clear();
    let one = base.launches[0].clone();
    base.launches = vec![one; DRIFTS_MAX + 100];
    let mut changed = base.clone();
    for l in &mut changed.launches {
        l.kernarg[8] ^= 1;
    }
    let report = compare(&tape(base), &tape(changed));
    assert_eq!(report.drifts().len(), DRIFTS_MAX);
    assert_eq!(report.omitted(), 100);
    assert!(!report.is_stable());
    assert!(report.to_string().ends_with("... and 100 more\n"));
}
