//! Calibration: a literal step recorded at two positions is accepted with exactly its position
//! words and grid; every kind of mismatch is rejected with its own variant; and random steps with
//! random position words calibrate back to exactly the bindings they were generated from.

use proptest::prelude::*;
use tape_core::binding::{Binding, BindingError, BindingKind};
use tape_core::calibrate::{
    CalibrationError as E, GridRule, LAUNCHES_MAX, PointerValue, Sample, calibrate, grid_name, kernarg_name,
};
use tape_core::{Access, AllocationId, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};

const P0: u32 = 100;
const P1: u32 = 200;
const MAX: u32 = 1023;
const POINTER: u64 = 0x7f00_1234_5000;

fn artifact(symbol: &str) -> ArtifactId {
    ArtifactId { code_object_sha256: [7; 32], symbol: symbol.into() }
}

fn words(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn record(symbol: &str, kernarg: Vec<u8>, grid: [u32; 3], wg: [u16; 3]) -> LaunchRecord {
    LaunchRecord {
        artifact: artifact(symbol),
        kernarg,
        geometry: Geometry { grid_work_items: grid, workgroup_work_items: wg },
        lds: Lds { static_bytes: 256, dynamic_bytes: 0 },
        wave_size: 32,
        pointers: vec![],
        effects: Effects::Known(vec![]),
    }
}

fn pointer(kernarg_offset: u32, allocation: u32) -> PointerArg {
    PointerArg { kernarg_offset, allocation: AllocationId(allocation), offset_bytes: 0 }
}

/// A three-launch step at position `p`:
/// 0. attention-like: pointer at 0, constant 7 at 8, `p + 1` at 12, `p` at 16, constants after;
/// 1. grid on x follows `ceil((p + 1) / 64)` work-groups of 64;
/// 2. undeclared effects, nothing dynamic.
fn step(p: u32) -> Vec<LaunchRecord> {
    let mut attention = record("attn", [0u8; 0].to_vec(), [64, 4, 1], [64, 1, 1]);
    attention.kernarg = [&POINTER.to_le_bytes()[..], &words(&[7, p + 1, p, 0xdead_beef, 0, 0])].concat();
    attention.pointers = vec![pointer(0, 1)];
    attention.effects = Effects::Known(vec![Effect {
        allocation: AllocationId(1),
        offset_bytes: 0,
        len_bytes: 4096,
        access: Access::ReadWrite,
    }]);
    let grid = (p + 1).div_ceil(64) * 64;
    let softmax = record("softmax", words(&[3, 4]), [grid, 1, 1], [64, 1, 1]);
    let mut opaque = record("opaque", words(&[9]), [32, 1, 1], [32, 1, 1]);
    opaque.effects = Effects::Unknown;
    vec![attention, softmax, opaque]
}

const SOFTMAX_GRID: GridRule = GridRule { launch: 1, axis: 0, addend: 1, divisor: 64 };

fn run(a: &[LaunchRecord], b: &[LaunchRecord], rules: &[GridRule]) -> Result<Vec<Binding>, E> {
    calibrate(Sample { position: P0, launches: a }, Sample { position: P1, launches: b }, rules, MAX)
}

/// `step` at both positions, with `edit` applied to the second sample.
fn edited(edit: impl FnOnce(&mut Vec<LaunchRecord>)) -> Result<Vec<Binding>, E> {
    let mut b = step(P1);
    edit(&mut b);
    run(&step(P0), &b, &[SOFTMAX_GRID])
}

#[test]
fn accepts_exactly_the_position_words() {
    let expected = vec![
        Binding {
            name: "launch0.kernarg@12".into(),
            launch: 0,
            kind: BindingKind::KernargU32 { offset: 12, addend: 1 },
        },
        Binding {
            name: "launch0.kernarg@16".into(),
            launch: 0,
            kind: BindingKind::KernargU32 { offset: 16, addend: 0 },
        },
        Binding {
            name: "launch1.grid.x".into(),
            launch: 1,
            kind: BindingKind::GridAxis { axis: 0, addend: 1, divisor: 64, max_workgroups: 16 },
        },
    ];
    assert_eq!(run(&step(P0), &step(P1), &[SOFTMAX_GRID]), Ok(expected.clone()));
    // Duplicated candidates are one rule, not an ambiguity.
    assert_eq!(run(&step(P0), &step(P1), &[SOFTMAX_GRID, SOFTMAX_GRID]), Ok(expected));
    // The names are the documented scheme.
    assert_eq!(kernarg_name(0, 12), "launch0.kernarg@12");
    assert_eq!(
        (grid_name(1, 0), grid_name(2, 1), grid_name(3, 2)),
        ("launch1.grid.x".into(), "launch2.grid.y".into(), "launch3.grid.z".into())
    );
}

#[test]
fn a_claimed_grid_that_did_not_change_is_still_bound() {
    // ceil(101/64) = ceil(121/64) = 2: the samples agree, the rule explains both, so it binds.
    let a = step(P0);
    let b = step(120);
    let got =
        calibrate(Sample { position: P0, launches: &a }, Sample { position: 120, launches: &b }, &[SOFTMAX_GRID], MAX)
            .unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(got[2].kind, BindingKind::GridAxis { axis: 0, addend: 1, divisor: 64, max_workgroups: 16 });
}

#[test]
fn rejects_a_moved_pointer() {
    let got = edited(|b| b[0].pointers[0].allocation = AllocationId(2));
    let resolved = |allocation| PointerValue::Resolved { allocation: AllocationId(allocation), offset_bytes: 0 };
    assert_eq!(got, Err(E::MovedPointer { launch: 0, kernarg_offset: 0, a: resolved(1), b: resolved(2) }));

    let got = edited(|b| b[0].kernarg[5] ^= 0x10);
    let (a, b) = (PointerValue::Bytes(POINTER), PointerValue::Bytes(POINTER ^ (0x10 << 40)));
    assert_eq!(got, Err(E::MovedPointer { launch: 0, kernarg_offset: 0, a, b }));
}

#[test]
fn rejects_an_inconsistent_delta() {
    // The constant at 8 moves by 2, the position by 100.
    let got = edited(|b| b[0].kernarg[8] = 9);
    assert_eq!(got, Err(E::InconsistentDelta { launch: 0, offset: 8, a: 7, b: 9, p0: P0, p1: P1 }));
    // A position word that moves by the wrong amount.
    let got = edited(|b| b[0].kernarg[12..16].copy_from_slice(&(P1 + 2).to_le_bytes()));
    assert_eq!(got, Err(E::InconsistentDelta { launch: 0, offset: 12, a: P0 + 1, b: P1 + 2, p0: P0, p1: P1 }));
    // A position moving backwards.
    let (a, b) = (step(P0), step(P1));
    let got = calibrate(Sample { position: P0, launches: &b }, Sample { position: P1, launches: &a }, &[], MAX);
    assert_eq!(got, Err(E::InconsistentDelta { launch: 0, offset: 12, a: P1 + 1, b: P0 + 1, p0: P0, p1: P1 }));
}

#[test]
fn rejects_differing_immutable_bytes() {
    let tail = |b: &mut Vec<LaunchRecord>, last: u8| {
        b[2].kernarg.extend_from_slice(&[1, 2, last]);
    };
    let mut a = step(P0);
    tail(&mut a, 3);
    let mut b = step(P1);
    tail(&mut b, 4);
    assert_eq!(run(&a, &b, &[SOFTMAX_GRID]), Err(E::ImmutableBytesDiffer { launch: 2, range: 6..7 }));
    b[2].kernarg[6] = 3;
    assert_eq!(run(&a, &b, &[SOFTMAX_GRID]), Ok(run(&step(P0), &step(P1), &[SOFTMAX_GRID]).unwrap()));
}

#[test]
fn rejects_mismatched_launch_counts_and_artifacts() {
    let mut short = step(P1);
    short.pop();
    assert_eq!(run(&step(P0), &short, &[]), Err(E::LaunchCountDiffers { a: 3, b: 2 }));
    let got = edited(|b| b[1].artifact.symbol = "softmax_v2".into());
    assert_eq!(
        got,
        Err(E::ArtifactDiffers { launch: 1, a: Box::new(artifact("softmax")), b: Box::new(artifact("softmax_v2")) })
    );
    let got = edited(|b| b[2].artifact.code_object_sha256[0] = 0);
    assert!(matches!(got, Err(E::ArtifactDiffers { launch: 2, .. })), "{got:?}");
}

#[test]
fn rejects_an_unexplained_grid() {
    // No rule at all for an axis that changed.
    assert_eq!(
        run(&step(P0), &step(P1), &[]),
        Err(E::UnexplainedGrid { launch: 1, axis: 0, a: 2, b: 4, a_work_items: 128, b_work_items: 256 })
    );
    // Rules that do not reproduce both samples (ceil(100/32) = 4, not 2).
    let wrong = [GridRule { divisor: 32, ..SOFTMAX_GRID }, GridRule { axis: 1, ..SOFTMAX_GRID }];
    assert_eq!(
        run(&step(P0), &step(P1), &wrong),
        Err(E::UnexplainedGrid { launch: 1, axis: 0, a: 2, b: 4, a_work_items: 128, b_work_items: 256 })
    );
    // A rule claims an axis that stayed put at a value it does not give.
    let claimed = [SOFTMAX_GRID, GridRule { launch: 0, axis: 1, addend: 0, divisor: 1 }];
    assert_eq!(
        run(&step(P0), &step(P1), &claimed),
        Err(E::UnexplainedGrid { launch: 0, axis: 1, a: 4, b: 4, a_work_items: 4, b_work_items: 4 })
    );
}

#[test]
fn rejects_an_ambiguous_grid() {
    // ceil((p + 2) / 64) agrees with ceil((p + 1) / 64) at both 100 and 200.
    let other = GridRule { addend: 2, ..SOFTMAX_GRID };
    assert_eq!(
        run(&step(P0), &step(P1), &[SOFTMAX_GRID, other]),
        Err(E::AmbiguousGrid { launch: 1, axis: 0, first: SOFTMAX_GRID, second: other })
    );
}

#[test]
fn rejects_a_grid_that_is_not_whole_work_groups() {
    // The kernel launches exactly p + 1 work-items: the work-group count follows the rule, but
    // replay can only write whole work-groups.
    let with_exact = |p: u32| {
        let mut s = step(p);
        s[1].geometry.grid_work_items[0] = p + 1;
        s
    };
    assert_eq!(
        run(&with_exact(P0), &with_exact(P1), &[SOFTMAX_GRID]),
        Err(E::GridNotWholeWorkgroups { launch: 1, axis: 0, work_items: P0 + 1, workgroup: 64 })
    );
}

#[test]
fn rejects_every_other_shape_mismatch() {
    assert_eq!(edited(|b| b[1].wave_size = 64), Err(E::WaveSizeDiffers { launch: 1, a: 32, b: 64 }));
    let lds = Lds { static_bytes: 256, dynamic_bytes: 512 };
    assert_eq!(
        edited(|b| b[2].lds = lds),
        Err(E::LdsDiffers { launch: 2, a: Lds { static_bytes: 256, dynamic_bytes: 0 }, b: lds })
    );
    assert_eq!(
        edited(|b| b[1].geometry.workgroup_work_items = [64, 2, 1]),
        Err(E::WorkgroupSizeDiffers { launch: 1, a: [64, 1, 1], b: [64, 2, 1] })
    );
    assert_eq!(edited(|b| b[1].kernarg.push(0)), Err(E::KernargLengthDiffers { launch: 1, a: 8, b: 9 }));
    assert_eq!(edited(|b| b[0].pointers.clear()), Err(E::PointerCountDiffers { launch: 0, a: 1, b: 0 }));
    assert_eq!(
        edited(|b| b[0].pointers[0].kernarg_offset = 8),
        Err(E::PointerSlotDiffers { launch: 0, index: 0, a: 0, b: 8 })
    );
    assert_eq!(
        edited(|b| b[2].effects = Effects::Known(vec![])),
        Err(E::EffectCountDiffers { launch: 2, a: None, b: Some(0) })
    );
    let got = edited(|b| {
        if let Effects::Known(list) = &mut b[0].effects {
            list[0].len_bytes = 8192;
        }
    });
    assert!(
        matches!(got, Err(E::EffectDiffers { launch: 0, index: 0, a, b }) if a.len_bytes == 4096 && b.len_bytes == 8192)
    );
}

#[test]
fn rejects_malformed_records_and_arguments() {
    let (a, b) = (step(P0), step(P1));
    let sample = |position, launches| Sample { position, launches };
    assert_eq!(calibrate(sample(P1, &a), sample(P1, &b), &[], MAX), Err(E::PositionsNotIncreasing { p0: P1, p1: P1 }));
    assert_eq!(
        calibrate(sample(P0, &a), sample(P1, &b), &[], P1 - 1),
        Err(E::MaxPositionBelowSample { max_position: P1 - 1, p1: P1 })
    );
    let bad_axis = GridRule { axis: 3, ..SOFTMAX_GRID };
    assert_eq!(run(&a, &b, &[bad_axis]), Err(E::MalformedGridRule { rule: 0, axis: 3, divisor: 64 }));
    let bad_divisor = GridRule { divisor: 0, ..SOFTMAX_GRID };
    assert_eq!(run(&a, &b, &[SOFTMAX_GRID, bad_divisor]), Err(E::MalformedGridRule { rule: 1, axis: 0, divisor: 0 }));
    let far = GridRule { launch: 3, ..SOFTMAX_GRID };
    assert_eq!(run(&a, &b, &[far]), Err(E::GridRuleLaunchOutOfRange { rule: 0, launch: 3, launches: 3 }));

    let outside = |s: &mut Vec<LaunchRecord>| s[1].pointers = vec![pointer(4, 1)];
    let (mut a2, mut b2) = (a.clone(), b.clone());
    outside(&mut a2);
    outside(&mut b2);
    assert_eq!(
        run(&a2, &b2, &[SOFTMAX_GRID]),
        Err(E::PointerOutsideKernarg { launch: 1, kernarg_offset: 4, kernarg_len: 8 })
    );

    let many = vec![record("k", vec![], [1, 1, 1], [1, 1, 1]); LAUNCHES_MAX + 1];
    assert_eq!(
        calibrate(sample(P0, &many), sample(P1, &many), &[], MAX),
        Err(E::TooManyLaunches { launches: LAUNCHES_MAX + 1, limit: LAUNCHES_MAX })
    );
}

#[test]
fn rejects_a_binding_without_a_value_at_the_maximum() {
    // The word is p + 0xffff_0000: fine at 100 and 200, past u32 at 0x1_0000.
    let at = |p: u32| vec![record("k", words(&[p + 0xffff_0000]), [1, 1, 1], [1, 1, 1])];
    let got = calibrate(
        Sample { position: P0, launches: &at(P0) },
        Sample { position: P1, launches: &at(P1) },
        &[],
        0x1_0000,
    );
    let kind = BindingKind::KernargU32 { offset: 0, addend: 0xffff_0000 };
    let error = BindingError::OutOfRange { position: 0x1_0000, addend: 0xffff_0000 };
    assert_eq!(got, Err(E::UnreachableMaximum { launch: 0, kind, max_position: 0x1_0000, error }));
}

// ---- properties ------------------------------------------------------------------------------

/// One generated launch: kernarg words, which 8-byte pairs are pointers, which other words follow
/// the position (with their addend), and which grid axes follow it.
#[derive(Clone, Debug)]
struct Spec {
    words: Vec<u32>,
    pointer_pairs: Vec<bool>,
    position_words: Vec<Option<i64>>,
    grid: [Option<(i64, u32)>; 3],
    fixed_grid: [u32; 3],
    wg: [u16; 3],
    unknown: bool,
}

fn spec(p0: u32) -> impl Strategy<Value = Spec> {
    let addend = -i64::from(p0)..=1_000_000i64;
    (
        prop::collection::vec(any::<u32>(), 0..12),
        prop::collection::vec(any::<bool>(), 6),
        prop::collection::vec(prop::option::weighted(0.3, addend), 12),
        prop::array::uniform3(prop::option::weighted(0.3, (0i64..1000, 1u32..512))),
        prop::array::uniform3(0u32..1_000_000),
        prop::array::uniform3(1u16..=1024),
        any::<bool>(),
    )
        .prop_map(|(words, pointer_pairs, position_words, grid, fixed_grid, wg, unknown)| Spec {
            words,
            pointer_pairs,
            position_words,
            grid,
            fixed_grid,
            wg,
            unknown,
        })
}

impl Spec {
    fn is_pointer_word(&self, w: usize) -> bool {
        self.pointer_pairs[w / 2] && w / 2 * 2 + 1 < self.words.len()
    }

    fn position_addend(&self, w: usize) -> Option<i64> {
        if self.is_pointer_word(w) { None } else { self.position_words[w] }
    }

    fn at(&self, index: usize, p: u32) -> LaunchRecord {
        let words: Vec<u32> = (0..self.words.len())
            .map(|w| match self.position_addend(w) {
                Some(addend) => u32::try_from(i64::from(p) + addend).unwrap(),
                None => self.words[w],
            })
            .collect();
        let pointers = (0..self.words.len() / 2)
            .filter(|&k| self.is_pointer_word(2 * k))
            .map(|k| pointer(u32::try_from(8 * k).unwrap(), u32::try_from(k).unwrap()))
            .collect();
        let grid = std::array::from_fn(|x| match self.grid[x] {
            Some((addend, divisor)) => {
                grid_kind(x, addend, divisor, u32::MAX).value_at(p).unwrap() * u32::from(self.wg[x])
            }
            None => self.fixed_grid[x],
        });
        let mut r = record(&format!("k{index}"), words_to_bytes(&words), grid, self.wg);
        r.pointers = pointers;
        if self.unknown {
            r.effects = Effects::Unknown;
        }
        r
    }

    fn rules(&self, index: usize) -> Vec<GridRule> {
        (0u8..3)
            .filter_map(|axis| {
                self.grid[usize::from(axis)].map(|(addend, divisor)| GridRule { launch: index, axis, addend, divisor })
            })
            .collect()
    }

    fn bindings(&self, index: usize, max: u32) -> Vec<Binding> {
        let launch = u32::try_from(index).unwrap();
        let mut out: Vec<Binding> = (0..self.words.len())
            .filter_map(|w| {
                let addend = self.position_addend(w)?;
                let offset = u32::try_from(4 * w).unwrap();
                Some(Binding {
                    name: kernarg_name(index, offset),
                    launch,
                    kind: BindingKind::KernargU32 { offset, addend },
                })
            })
            .collect();
        for x in 0..3 {
            if let Some((addend, divisor)) = self.grid[x] {
                let max_workgroups = grid_kind(x, addend, divisor, u32::MAX).value_at(max).unwrap();
                let axis = u8::try_from(x).unwrap();
                out.push(Binding {
                    name: grid_name(index, axis),
                    launch,
                    kind: grid_kind(x, addend, divisor, max_workgroups),
                });
            }
        }
        out
    }
}

fn words_to_bytes(w: &[u32]) -> Vec<u8> {
    words(w)
}

fn grid_kind(x: usize, addend: i64, divisor: u32, max_workgroups: u32) -> BindingKind {
    BindingKind::GridAxis { axis: u8::try_from(x).unwrap(), addend, divisor, max_workgroups }
}

/// Positions `p0 < p1 <= max` and launch specs whose position words are valid up to `max`.
fn case() -> impl Strategy<Value = (u32, u32, u32, Vec<Spec>)> {
    (0u32..100_000, 1u32..100_000, 0u32..100_000).prop_flat_map(|(p0, delta, extra)| {
        let (p1, max) = (p0 + delta, p0 + delta + extra);
        (Just(p0), Just(p1), Just(max), prop::collection::vec(spec(p0), 0..6))
    })
}

/// Writes every kernarg binding's value at `p` into a copy of `blob`.
fn patch(blob: &[u8], bindings: &[Binding], launch: u32, p: u32) -> Vec<u8> {
    let mut out = blob.to_vec();
    for b in bindings.iter().filter(|b| b.launch == launch) {
        if let BindingKind::KernargU32 { offset, .. } = b.kind {
            let at = usize::try_from(offset).unwrap();
            out[at..at + 4].copy_from_slice(&b.kind.value_at(p).unwrap().to_le_bytes());
        }
    }
    out
}

proptest! {
    /// Generated pairs calibrate to exactly their bindings, and the bindings reproduce both
    /// samples from either one.
    #[test]
    fn recovers_the_generated_bindings((p0, p1, max, specs) in case()) {
        let a: Vec<_> = specs.iter().enumerate().map(|(i, s)| s.at(i, p0)).collect();
        let b: Vec<_> = specs.iter().enumerate().map(|(i, s)| s.at(i, p1)).collect();
        let rules: Vec<_> = specs.iter().enumerate().flat_map(|(i, s)| s.rules(i)).collect();
        let expected: Vec<_> = specs.iter().enumerate().flat_map(|(i, s)| s.bindings(i, max)).collect();
        let got = calibrate(Sample { position: p0, launches: &a }, Sample { position: p1, launches: &b }, &rules, max);
        prop_assert_eq!(got.as_ref(), Ok(&expected));
        for (i, (ra, rb)) in a.iter().zip(&b).enumerate() {
            let launch = u32::try_from(i).unwrap();
            prop_assert_eq!(&patch(&rb.kernarg, &expected, launch, p0), &ra.kernarg);
            prop_assert_eq!(&patch(&ra.kernarg, &expected, launch, p1), &rb.kernarg);
            for bind in expected.iter().filter(|bind| bind.launch == launch) {
                if let BindingKind::GridAxis { axis, .. } = bind.kind {
                    let x = usize::from(axis);
                    let wg = u32::from(ra.geometry.workgroup_work_items[x]);
                    prop_assert_eq!(bind.kind.value_at(p0).unwrap() * wg, ra.geometry.grid_work_items[x]);
                    prop_assert_eq!(bind.kind.value_at(p1).unwrap() * wg, rb.geometry.grid_work_items[x]);
                    prop_assert!(bind.kind.value_at(max).is_ok());
                }
            }
        }
    }

    /// Flipping bits of one kernarg byte of the second sample never calibrates to the generated
    /// bindings; inside a pointer slot it is a moved pointer.
    #[test]
    fn a_changed_byte_is_caught((p0, p1, max, specs) in case(), pick in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let a: Vec<_> = specs.iter().enumerate().map(|(i, s)| s.at(i, p0)).collect();
        let mut b: Vec<_> = specs.iter().enumerate().map(|(i, s)| s.at(i, p1)).collect();
        let rules: Vec<_> = specs.iter().enumerate().flat_map(|(i, s)| s.rules(i)).collect();
        let expected: Vec<_> = specs.iter().enumerate().flat_map(|(i, s)| s.bindings(i, max)).collect();
        let slots: Vec<(usize, usize)> =
            b.iter().enumerate().flat_map(|(i, r)| (0..r.kernarg.len()).map(move |byte| (i, byte))).collect();
        prop_assume!(!slots.is_empty());
        let (launch, byte) = *pick.get(&slots);
        b[launch].kernarg[byte] ^= flip;
        let got = calibrate(Sample { position: p0, launches: &a }, Sample { position: p1, launches: &b }, &rules, max);
        prop_assert_ne!(got.as_ref(), Ok(&expected));
        if specs[launch].is_pointer_word(byte / 4) {
            let moved = matches!(got, Err(E::MovedPointer { launch: l, .. }) if l == launch);
            prop_assert!(moved, "{:?}", got);
        }
    }

    /// Arbitrary small record pairs and rules: calibration answers, never panics.
    #[test]
    fn never_panics(
        a in prop::collection::vec(garbage(), 0..4),
        b in prop::collection::vec(garbage(), 0..4),
        rules in prop::collection::vec((0usize..5, 0u8..4, any::<i64>(), any::<u32>()), 0..4),
        p0 in any::<u32>(),
        p1 in any::<u32>(),
        max in any::<u32>(),
    ) {
        let rules: Vec<_> = rules.into_iter().map(|(launch, axis, addend, divisor)| GridRule { launch, axis, addend, divisor }).collect();
        let _ = calibrate(Sample { position: p0, launches: &a }, Sample { position: p1, launches: &b }, &rules, max);
        // The same records as both samples: only grid rules can fail them.
        let _ = calibrate(Sample { position: 0, launches: &a }, Sample { position: 1, launches: &a }, &rules, max);
    }
}

fn garbage() -> impl Strategy<Value = LaunchRecord> {
    (
        prop::collection::vec(0u8..4, 0..13),
        prop::collection::vec((0u32..16, 0u32..2, 0u64..2), 0..3),
        prop::array::uniform3(0u32..300),
        prop::array::uniform3(0u16..4),
        prop::sample::select(vec![32u8, 64]),
        any::<bool>(),
    )
        .prop_map(|(kernarg, pointers, grid, wg, wave_size, unknown)| {
            let mut r = record("g", kernarg, grid, wg);
            r.pointers = pointers
                .into_iter()
                .map(|(kernarg_offset, allocation, offset_bytes)| PointerArg {
                    kernarg_offset,
                    allocation: AllocationId(allocation),
                    offset_bytes,
                })
                .collect();
            r.wave_size = wave_size;
            if unknown {
                r.effects = Effects::Unknown;
            }
            r
        })
}
