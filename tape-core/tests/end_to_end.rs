//! Record → calibrate → bind → compare, across the modules: two recordings of the same step at
//! different positions, whose only difference is a position word, calibrate to exactly that
//! binding; the bound tapes validate and compare as stable. A pair whose grid and effects follow
//! the position (block_sum over `position + 1007` elements) fails closed.

mod recorder_fixture;

use kernarg_abi::layout::ArgValue;
use recorder_fixture::{ADDR_X, ALLOC_X, N, effect, fill, launch, pointer, recorded_at};
use tape_core::binding::{Binding, BindingKind};
use tape_core::calibrate::{CalibrationError, Sample, calibrate};
use tape_core::recorder::Recorder;
use tape_core::tape::Tape;
use tape_core::{Access, Effects, stability};

/// `fill(x, 0.5, position + 1)` over a fixed grid of N work-items; the effect is declared over the
/// whole buffer (N floats), independent of the position.
fn record_fill(position: u32) -> Tape {
    let k = fill();
    let args = [ArgValue::Pointer(ADDR_X), ArgValue::F32(0.5), ArgValue::U32(position + 1)];
    let effects = Effects::Known(vec![effect(ALLOC_X, 0, 4 * u64::from(N), Access::Write)]);
    let record = launch(&k, &args, N, 0, vec![pointer(0, ALLOC_X, 0)], effects);
    let mut recorder = Recorder::new(4);
    recorder.begin(position).unwrap();
    recorder.record(record, &k.layout).unwrap();
    recorder.finish().unwrap()
}

#[test]
fn position_word_calibrates_binds_and_compares_stable() {
    let (a, b) = (record_fill(5), record_fill(9));
    let bindings = calibrate(
        Sample { position: a.position(), launches: a.launches() },
        Sample { position: b.position(), launches: b.launches() },
        &[],
        N - 1,
    )
    .expect("only the position word differs");
    // fill's `n` is explicit argument 2 at kernarg offset 12 (llvm-readelf-19 --notes).
    assert_eq!(
        bindings,
        vec![Binding {
            name: "launch0.kernarg@12".into(),
            launch: 0,
            kind: BindingKind::KernargU32 { offset: 12, addend: 1 }
        }]
    );
    let a = a.with_bindings(bindings.clone()).expect("calibrated bindings validate on the first tape");
    let b = b.with_bindings(bindings).expect("and on the second");
    let report = stability::compare(&a, &b);
    assert!(report.is_stable(), "{:?}", report.drifts());
    // The identity is of one recording: the bound word is hashed.
    assert_ne!(a.identity().sequence_hash, b.identity().sequence_hash);
}

#[test]
fn position_dependent_grid_and_effects_fail_closed() {
    let (a, b) = (recorded_at(17), recorded_at(200));
    let err = calibrate(
        Sample { position: a.position(), launches: a.launches() },
        Sample { position: b.position(), launches: b.launches() },
        &[],
        1000,
    )
    .unwrap_err();
    assert!(matches!(err, CalibrationError::EffectDiffers { launch: 2, .. }), "{err:?}");
}
