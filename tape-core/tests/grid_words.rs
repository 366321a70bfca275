//! Kernarg words that follow a grid axis (`BindingKind::KernargGridWorkgroups`, a code-object v5
//! `hidden_block_count_*`): calibrated from two real recordings of `fill` whose grid and `n`
//! follow the position, validated when attached, masked by the stability comparison and carried
//! through both serial forms.

mod recorder_fixture;

use kernarg_abi::layout::ArgValue;
use kernarg_abi::metadata::ValueKind;
use recorder_fixture::*;
use tape_core::binding::{Binding, BindingError, BindingKind};
use tape_core::calibrate::{CalibrationError, GridRule, Sample, calibrate, grid_name, kernarg_grid_name, kernarg_name};
use tape_core::recorder::Recorder;
use tape_core::serial::validate;
use tape_core::stability::{Drift, compare};
use tape_core::tape::{BindingCheckError as B, Tape, TapeError};
use tape_core::{Access, Effects};

/// Largest position the plan is prepared for; `n = position + 1` elements at most.
const MAX_POSITION: u32 = 1023;
const RULE: GridRule = GridRule { launch: 0, axis: 0, addend: 1, divisor: 64 };
/// `ceil((MAX_POSITION + 1) / 64)`.
const MAX_WORKGROUPS: u32 = 16;

/// Byte offset of `n` and of `hidden_block_count_x` in fill's kernarg layout.
fn offsets() -> (u32, u32) {
    let layout = fill().layout;
    let n = 12;
    let hidden = layout.offset_of(&ValueKind::HiddenBlockCountX).expect("fill is a code-object v5 kernel");
    assert!(layout.offset_of(&ValueKind::HiddenRemainderX).is_some());
    (n, hidden)
}

/// `fill(x, 1.5, n = position + 1)` over `ceil(n / 64)` whole work-groups of 64, recorded through
/// a `Recorder`; its effect is declared over the prepared maximum so it does not move.
fn record_fill(position: u32) -> Tape {
    let f = fill();
    let n = position + 1;
    let grid = n.div_ceil(64) * 64;
    let args = [ArgValue::Pointer(ADDR_X), ArgValue::F32(1.5), ArgValue::U32(n)];
    let effects = Effects::Known(vec![effect(ALLOC_X, 0, 4 * u64::from(MAX_POSITION + 1), Access::Write)]);
    let record = launch(&f, &args, grid, 0, vec![pointer(0, ALLOC_X, 0)], effects);
    let mut recorder = Recorder::new(4);
    recorder.begin(position).unwrap();
    recorder.record(record, &f.layout).unwrap();
    recorder.finish().unwrap()
}

fn word(tape: &Tape, offset: u32) -> u32 {
    let at = usize::try_from(offset).unwrap();
    u32::from_le_bytes(tape.launches()[0].kernarg[at..at + 4].try_into().unwrap())
}

fn calibrated(p0: u32, p1: u32) -> Result<Vec<Binding>, CalibrationError> {
    let (a, b) = (record_fill(p0), record_fill(p1));
    calibrate(
        Sample { position: p0, launches: a.launches() },
        Sample { position: p1, launches: b.launches() },
        &[RULE],
        MAX_POSITION,
    )
}

/// What calibration must produce for fill: n, the hidden block count and the grid.
fn expected() -> Vec<Binding> {
    let (n, hidden) = offsets();
    let grid = BindingKind::GridAxis { axis: 0, addend: 1, divisor: 64, max_workgroups: MAX_WORKGROUPS };
    vec![
        Binding { name: kernarg_name(0, n), launch: 0, kind: BindingKind::KernargU32 { offset: n, addend: 1 } },
        Binding {
            name: kernarg_grid_name(0, hidden, 0),
            launch: 0,
            kind: BindingKind::KernargGridWorkgroups {
                offset: hidden,
                axis: 0,
                addend: 1,
                divisor: 64,
                max_workgroups: MAX_WORKGROUPS,
            },
        },
        Binding { name: grid_name(0, 0), launch: 0, kind: grid },
    ]
}

#[test]
fn the_recordings_differ_in_n_the_block_count_and_the_grid() {
    let (n, hidden) = offsets();
    let (a, b) = (record_fill(100), record_fill(300));
    assert_eq!((word(&a, n), word(&b, n)), (101, 301));
    assert_eq!((word(&a, hidden), word(&b, hidden)), (2, 5));
    assert_eq!((a.launches()[0].geometry.grid_work_items[0], b.launches()[0].geometry.grid_work_items[0]), (128, 320));
}

#[test]
fn calibrates_grid_hidden_block_count_and_n() {
    let bindings = calibrated(100, 300).unwrap();
    assert_eq!(bindings, expected());
    assert_eq!(bindings[1].name, format!("launch0.kernarg@{}.grid.x", offsets().1));
    // The bindings attach to both recordings and reproduce every position up to the maximum.
    let a = record_fill(100).with_bindings(bindings.clone()).unwrap();
    let b = record_fill(300).with_bindings(bindings.clone()).unwrap();
    for p in [0, 63, 64, 500, MAX_POSITION] {
        let t = record_fill(p);
        assert_eq!(bindings[1].kind.value_at(p), Ok(word(&t, offsets().1)), "position {p}");
        assert!(t.with_bindings(bindings.clone()).is_ok(), "position {p}");
    }
    assert!(compare(&a, &b).is_stable(), "{}", compare(&a, &b));
}

#[test]
fn without_the_grid_rule_the_block_count_is_an_inconsistent_delta() {
    let (a, b) = (record_fill(100), record_fill(300));
    let err = calibrate(
        Sample { position: 100, launches: a.launches() },
        Sample { position: 300, launches: b.launches() },
        &[],
        MAX_POSITION,
    )
    .unwrap_err();
    let hidden = offsets().1;
    assert_eq!(err, CalibrationError::InconsistentDelta { launch: 0, offset: hidden, a: 2, b: 5, p0: 100, p1: 300 });
}

#[test]
fn a_word_that_follows_neither_is_still_an_inconsistent_delta() {
    let hidden = offsets().1;
    let (a, mut b) = (record_fill(100).into_data(), record_fill(300).into_data());
    // The block count at p1 off by one: neither position + addend nor the grid.
    let at = usize::try_from(hidden).unwrap();
    b.launches[0].kernarg[at..at + 4].copy_from_slice(&6u32.to_le_bytes());
    let err = calibrate(
        Sample { position: 100, launches: &a.launches },
        Sample { position: 300, launches: &b.launches },
        &[RULE],
        MAX_POSITION,
    )
    .unwrap_err();
    assert_eq!(err, CalibrationError::InconsistentDelta { launch: 0, offset: hidden, a: 2, b: 6, p0: 100, p1: 300 });
    // A grid rule rejected by rule 5 explains no word; the word's error comes first, as before.
    let wrong = GridRule { divisor: 32, ..RULE };
    let (a, b) = (record_fill(100), record_fill(300));
    let err = calibrate(
        Sample { position: 100, launches: a.launches() },
        Sample { position: 300, launches: b.launches() },
        &[wrong],
        MAX_POSITION,
    )
    .unwrap_err();
    assert_eq!(err, CalibrationError::InconsistentDelta { launch: 0, offset: hidden, a: 2, b: 5, p0: 100, p1: 300 });
}

#[test]
fn an_ambiguous_word_is_bound_to_the_position() {
    // From 63 to 64 the grid grows by one work-group, exactly as the position: the documented
    // choice is the position rule.
    let (_, hidden) = offsets();
    let bindings = calibrated(63, 64).unwrap();
    let kinds: Vec<_> = bindings.iter().map(|b| (b.name.clone(), b.kind)).collect();
    assert_eq!(kinds[1], (kernarg_name(0, hidden), BindingKind::KernargU32 { offset: hidden, addend: -62 }));
    assert_eq!(bindings.len(), 3);
    assert!(matches!(bindings[2].kind, BindingKind::GridAxis { .. }));
}

fn bind(kinds: &[(&str, BindingKind)]) -> Result<Tape, TapeError> {
    let bindings = kinds.iter().map(|&(name, kind)| Binding { name: name.into(), launch: 0, kind }).collect();
    record_fill(100).with_bindings(bindings)
}

fn word_kind(offset: u32) -> BindingKind {
    gw(offset, 0, 1, 64, MAX_WORKGROUPS)
}

fn gw(offset: u32, axis: u8, addend: i64, divisor: u32, max_workgroups: u32) -> BindingKind {
    BindingKind::KernargGridWorkgroups { offset, axis, addend, divisor, max_workgroups }
}

const GRID: BindingKind = BindingKind::GridAxis { axis: 0, addend: 1, divisor: 64, max_workgroups: MAX_WORKGROUPS };

#[test]
fn validation_of_the_grid_word() {
    let (n, hidden) = offsets();
    let good = word_kind(hidden);
    assert!(bind(&[("w", good), ("g", GRID)]).is_ok());
    let err = |kinds: &[(&str, BindingKind)]| match bind(kinds) {
        Err(TapeError::Binding(e)) => e,
        other => panic!("{other:?}"),
    };
    // No grid binding, or one with other parameters.
    assert_eq!(err(&[("w", good)]), B::GridWordWithoutGrid { name: "w".into(), launch: 0, axis: 0 });
    for other in [
        BindingKind::GridAxis { axis: 0, addend: 1, divisor: 64, max_workgroups: MAX_WORKGROUPS + 1 },
        BindingKind::GridAxis { axis: 0, addend: 33, divisor: 128, max_workgroups: MAX_WORKGROUPS },
    ] {
        assert_eq!(err(&[("w", good), ("g", other)]), B::GridWordWithoutGrid { name: "w".into(), launch: 0, axis: 0 });
    }
    let on_y = gw(hidden, 1, 1, 64, MAX_WORKGROUPS);
    assert_eq!(err(&[("w", on_y), ("g", GRID)]), B::GridWordWithoutGrid { name: "w".into(), launch: 0, axis: 1 });
    // Malformed.
    let bad_axis = gw(hidden, 3, 1, 64, MAX_WORKGROUPS);
    assert_eq!(err(&[("w", bad_axis), ("g", GRID)]), B::AxisOutOfRange { name: "w".into(), axis: 3 });
    let zero = gw(hidden, 0, 1, 0, MAX_WORKGROUPS);
    assert_eq!(err(&[("w", zero), ("g", GRID)]), B::ZeroDivisor { name: "w".into() });
    // Like a kernarg word: inside the blob, clear of pointers, reproducing the recorded word.
    let len = record_fill(100).launches()[0].kernarg.len();
    assert_eq!(
        err(&[("w", word_kind(u32::try_from(len).unwrap() - 2)), ("g", GRID)]),
        B::KernargOutside { name: "w".into(), offset: u32::try_from(len).unwrap() - 2, kernarg_len: len }
    );
    assert_eq!(
        err(&[("w", word_kind(4)), ("g", GRID)]),
        B::OverlapsPointer { name: "w".into(), offset: 4, pointer_offset: 0 }
    );
    assert_eq!(
        err(&[("w", word_kind(n)), ("g", GRID)]),
        B::KernargDisagrees { name: "w".into(), position: 100, bound: 2, recorded: 101 }
    );
    let late = gw(hidden, 0, 200, 64, MAX_WORKGROUPS);
    let late_grid = BindingKind::GridAxis { axis: 0, addend: 200, divisor: 64, max_workgroups: MAX_WORKGROUPS };
    assert_eq!(
        err(&[("w", late), ("g", late_grid)]),
        B::KernargDisagrees { name: "w".into(), position: 100, bound: 5, recorded: 2 }
    );
    let low_max = gw(hidden, 0, 1, 64, 1);
    assert_eq!(
        err(&[("w", low_max), ("g", GRID)]),
        B::Value {
            name: "w".into(),
            error: BindingError::GridAboveMax { position: 100, workgroups: 2, max_workgroups: 1 }
        }
    );
    // Overlap with another kernarg binding of the launch.
    let n_at_hidden = BindingKind::KernargU32 { offset: hidden, addend: -98 };
    assert!(matches!(err(&[("w", good), ("g", GRID), ("n", n_at_hidden)]), B::Conflict { .. }));
}

#[test]
fn stability_masks_the_grid_word() {
    let bindings = calibrated(100, 300).unwrap();
    let a = record_fill(100).with_bindings(bindings.clone()).unwrap();
    let b = record_fill(300).with_bindings(bindings.clone()).unwrap();
    assert!(compare(&a, &b).is_stable());
    // Without the grid word's binding the block count drifts (2 → 5 in its low byte).
    let hidden = offsets().1;
    let partial: Vec<Binding> = bindings.iter().filter(|b| b.kind.kernarg_offset() != Some(hidden)).cloned().collect();
    let a = record_fill(100).with_bindings(partial.clone()).unwrap();
    let b = record_fill(300).with_bindings(partial).unwrap();
    assert_eq!(
        compare(&a, &b).drifts(),
        &[Drift::Kernarg { launch: 0, start: hidden, end: hidden + 1, a: vec![2], b: vec![5] }]
    );
    // A grid word that predicts the other tape wrongly is a bound-value drift.
    let mut skewed = bindings.clone();
    skewed[1].kind = gw(offsets().1, 0, 1, 64, 4);
    skewed[2].kind = BindingKind::GridAxis { axis: 0, addend: 1, divisor: 64, max_workgroups: 4 };
    let a = record_fill(100).with_bindings(skewed).unwrap();
    let b = record_fill(300).with_bindings(bindings.clone()).unwrap();
    let report = compare(&a, &b);
    assert!(
        report.drifts().iter().any(
            |d| matches!(d, Drift::BoundValue { name, predicted: None, recorded: 5, .. } if *name == bindings[1].name)
        ),
        "{report}"
    );
}

#[test]
fn the_grid_word_round_trips_through_json_and_binary() {
    let tape = record_fill(100).with_bindings(calibrated(100, 300).unwrap()).unwrap();
    let json = serde_json::to_string(&tape).unwrap();
    assert!(json.contains("KernargGridWorkgroups"), "{json}");
    let back: Tape = serde_json::from_str(&json).unwrap();
    assert_eq!(back, tape);
    let bin = tape.to_binary();
    assert_eq!(Tape::from_binary(&bin).unwrap(), tape);
    // A grid word whose grid binding is removed does not deserialize.
    let mut data = tape.to_data();
    data.bindings.retain(|b| !matches!(b.kind, BindingKind::GridAxis { .. }));
    assert!(matches!(validate(data), Err(TapeError::Binding(B::GridWordWithoutGrid { .. }))));
}
