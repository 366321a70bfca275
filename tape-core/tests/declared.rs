//! Declared bindings: the recorder turns an owner's declarations into checked bindings of the
//! tape, and `calibrate_declared` confirms them against a second recording, keeps a declared
//! word bound while it is constant in both samples (a sliding window's first key below the
//! window), and refuses, by launch, kernel and offset, a word that moves without a declaration.

mod recorder_fixture;

use proptest::prelude::*;
use recorder_fixture::*;
use tape_core::binding::{Binding, BindingError, BindingKind, Rule};
use tape_core::calibrate::{CalibrationError as E, GridRule, Sample, calibrate, calibrate_declared};
use tape_core::recorder::{DeclaredArg, DeclaredProblem, RecordError, Recorder};
use tape_core::tape::{BindingCheckError, TapeError};
use tape_core::{ArtifactId, Effects, Geometry, LaunchRecord, Lds, PointerArg};

use kernarg_abi::layout::ArgValue;

/// Keys of the sliding window in the literal step below.
const WINDOW: u32 = 8;
const MAX: u32 = 4095;

fn words(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn record(symbol: &str, kernarg: Vec<u8>, grid: u32) -> LaunchRecord {
    LaunchRecord {
        artifact: ArtifactId { code_object_sha256: [3; 32], symbol: symbol.into() },
        kernarg,
        geometry: Geometry { grid_work_items: [grid, 1, 1], workgroup_work_items: [64, 1, 1] },
        lds: Lds { static_bytes: 0, dynamic_bytes: 0 },
        wave_size: 32,
        pointers: vec![],
        effects: Effects::Known(vec![]),
    }
}

/// A two-launch step at position `p`:
/// 0. `attention`: pointer at 0, `n = p + 1` at 8, the window's first key `max(0, p + 1 - 8)`
///    at 12, the constant 256 at 16;
/// 1. `block_sum`: grid `ceil((p + 1) / 64)` work-groups of 64, its hidden block count (the same
///    number) at 4, the constant 9 at 0.
fn step(p: u32) -> Vec<LaunchRecord> {
    let first_key = (p + 1).saturating_sub(WINDOW);
    let mut attention =
        record("attention", [&0x7f00_0000_1000u64.to_le_bytes()[..], &words(&[p + 1, first_key, 256])].concat(), 64);
    attention.pointers =
        vec![PointerArg { kernarg_offset: 0, allocation: tape_core::AllocationId(1), offset_bytes: 0 }];
    let groups = (p + 1).div_ceil(64);
    let block_sum = record("block_sum", words(&[9, groups]), groups * 64);
    vec![attention, block_sum]
}

const GRID: GridRule = GridRule { launch: 1, axis: 0, addend: 1, divisor: 64 };

fn n_binding() -> Binding {
    Binding { name: "attention.n".into(), launch: 0, kind: BindingKind::KernargU32 { offset: 8, addend: 1 } }
}

fn first_key_binding() -> Binding {
    let addend = 1 - i64::from(WINDOW);
    Binding {
        name: "attention.first_key".into(),
        launch: 0,
        kind: BindingKind::KernargU32Clamped { offset: 12, addend },
    }
}

fn run(p0: u32, p1: u32, declared: &[Binding]) -> Result<Vec<Binding>, E> {
    let (a, b) = (step(p0), step(p1));
    calibrate_declared(
        Sample { position: p0, launches: &a },
        Sample { position: p1, launches: &b },
        declared,
        &[GRID],
        MAX,
    )
}

#[test]
fn declared_words_are_bound_under_their_names_even_where_constant() {
    // Positions 2 and 5 lie below the window: the first key is 0 in both samples.
    let bindings = run(2, 5, &[first_key_binding(), n_binding()]).unwrap();
    let names: Vec<&str> = bindings.iter().map(|b| b.name.as_str()).collect();
    // The grid is one work-group at both positions: its hidden block count does not move here
    // (the kernarg ABI's bindings are added after calibration, as for inferred words).
    assert_eq!(names, ["attention.n", "attention.first_key", "launch1.grid.x"]);
    assert_eq!(bindings[1], first_key_binding());
    // Evaluated past the calibration window, the declared word moves as the window does.
    let first_key = bindings[1].kind;
    for (position, key) in [(2, 0), (7, 0), (8, 1), (9, 2), (700, 693), (MAX, MAX - 7)] {
        assert_eq!(first_key.value_at(position), Ok(key), "position {position}");
    }
    // Straddling the window's start (6 → 0, 12 → 5) confirms the same declaration.
    assert_eq!(run(6, 12, &[n_binding(), first_key_binding()]).unwrap()[..2], [n_binding(), first_key_binding()]);
}

#[test]
fn inference_alone_freezes_the_window_and_declarations_do_not() {
    // What `calibrate` (inference) makes of the same samples: the first key is constant, so it
    // is not bound at all, and a replay at position 700 would still pass 0.
    let (a, b) = (step(2), step(5));
    let inferred =
        calibrate(Sample { position: 2, launches: &a }, Sample { position: 5, launches: &b }, &[GRID], MAX).unwrap();
    assert!(inferred.iter().all(|b| b.kind.kernarg_offset() != Some(12)), "{inferred:?}");
    assert!(
        run(2, 5, &[n_binding(), first_key_binding()]).unwrap().iter().any(|b| b.kind.kernarg_offset() == Some(12))
    );
}

#[test]
fn a_moving_word_without_declaration_is_refused_by_name() {
    // `n` fits `position + 1`, which inference would bind; declared mode refuses it.
    assert_eq!(
        run(2, 5, &[first_key_binding()]),
        Err(E::Undeclared { launch: 0, kernel: "attention".into(), offset: 8, a: 3, b: 6, p0: 2, p1: 5 })
    );
    // The window's first key moves past the window: undeclared, it is refused too.
    let err = run(10, 12, &[n_binding()]).unwrap_err();
    assert_eq!(err, E::Undeclared { launch: 0, kernel: "attention".into(), offset: 12, a: 3, b: 5, p0: 10, p1: 12 });
    let text = err.to_string();
    assert!(
        text.contains("launch 0 (attention): kernarg word at 12 went 3 -> 5")
            && text.contains("no binding declares it"),
        "{text}"
    );
}

#[test]
fn the_hidden_grid_word_follows_its_axis_without_declaration() {
    let bindings = run(100, 200, &[n_binding(), first_key_binding()]).unwrap();
    assert_eq!(
        bindings[2],
        Binding {
            name: "launch1.kernarg@4.grid.x".into(),
            launch: 1,
            kind: BindingKind::KernargGridWorkgroups { offset: 4, axis: 0, addend: 1, divisor: 64, max_workgroups: 64 },
        }
    );
}

#[test]
fn a_declaration_that_disagrees_with_either_sample_is_refused() {
    let wrong_n = Binding { kind: BindingKind::KernargU32 { offset: 8, addend: 2 }, ..n_binding() };
    assert_eq!(
        run(2, 5, &[wrong_n, first_key_binding()]),
        Err(E::DeclarationDisagrees {
            launch: 0,
            name: "attention.n".into(),
            rule: "position + 2".into(),
            position: 2,
            bound: Some(4),
            recorded: 3,
        })
    );
    // A window of 9 instead of 8: agrees at 2 and 5 (both 0), disagrees at 12 (4, recorded 5).
    let wrong_window =
        Binding { kind: BindingKind::KernargU32Clamped { offset: 12, addend: -8 }, ..first_key_binding() };
    assert!(run(2, 5, &[n_binding(), wrong_window.clone()]).is_ok());
    assert_eq!(
        run(5, 12, &[n_binding(), wrong_window]),
        Err(E::DeclarationDisagrees {
            launch: 0,
            name: "attention.first_key".into(),
            rule: "max(0, position + -8)".into(),
            position: 12,
            bound: Some(4),
            recorded: 5,
        })
    );
    // A constant declared as a position word: `position + 254` gives 256 only at 2.
    let constant = Binding {
        name: "attention.head_dim".into(),
        launch: 0,
        kind: BindingKind::KernargU32 { offset: 16, addend: 254 },
    };
    assert!(matches!(
        run(2, 5, &[n_binding(), first_key_binding(), constant]),
        Err(E::DeclarationDisagrees { position: 5, bound: Some(259), recorded: 256, .. })
    ));
}

#[test]
fn declarations_calibration_cannot_take_are_refused() {
    let bad = |declared: Binding| match run(2, 5, &[declared]) {
        Err(E::BadDeclaration { name, problem }) => format!("{name}: {problem}"),
        other => panic!("{other:?}"),
    };
    let named = |kind| Binding { name: "d".into(), launch: 0, kind };
    assert!(
        bad(named(BindingKind::GridAxis { axis: 0, addend: 1, divisor: 64, max_workgroups: 64 }))
            .contains("grid rules")
    );
    assert!(bad(named(BindingKind::KernargU32 { offset: 10, addend: 1 })).contains("not on a 4-byte word"));
    assert!(
        bad(named(BindingKind::KernargU32 { offset: 20, addend: 1 })).contains("not a whole word of the 20-byte blob")
    );
    assert!(bad(named(BindingKind::KernargU32 { offset: 4, addend: 1 })).contains("lies in the pointer at 0"));
    assert!(bad(Binding { launch: 2, ..n_binding() }).contains("launch 2 does not exist"));
    let twice = run(2, 5, &[n_binding(), Binding { name: "again".into(), ..n_binding() }]);
    assert!(
        matches!(twice, Err(E::BadDeclaration { ref name, ref problem }) if name == "again" && problem.contains("attention.n")),
        "{twice:?}"
    );
}

#[test]
fn a_declaration_without_a_value_at_the_maximum_is_refused() {
    let (a, b) = (step(2), step(5));
    let huge = Binding { kind: BindingKind::KernargU32 { offset: 8, addend: 1 }, ..n_binding() };
    let err = calibrate_declared(
        Sample { position: 2, launches: &a },
        Sample { position: 5, launches: &b },
        &[huge, first_key_binding()],
        &[GRID],
        u32::MAX,
    );
    assert!(
        matches!(err, Err(E::UnreachableMaximum { launch: 0, error: BindingError::OutOfRange { .. }, .. })),
        "{err:?}"
    );
}

// The recorder side, on real kernels (the fixture's gfx1100 `fill`: `fill(float* y, float v, u32 n)`).

fn fill_at(n: u32) -> LaunchRecord {
    let f = fill();
    let args = [ArgValue::Pointer(ADDR_X), ArgValue::F32(1.5), ArgValue::U32(n)];
    let effects = Effects::Known(vec![effect(ALLOC_X, 0, 4 * 4096, tape_core::Access::Write)]);
    launch(&f, &args, 4096, 0, vec![pointer(0, ALLOC_X, 0)], effects)
}

fn record_declared(position: u32, n: u32, declared: &[DeclaredArg<'_>]) -> Result<tape_core::tape::Tape, RecordError> {
    let f = fill();
    let mut recorder = Recorder::new(4);
    recorder.begin(position).unwrap();
    recorder.record(fill_at(7), &f.layout).unwrap();
    recorder.record_declared(fill_at(n), &f.layout, declared)?;
    recorder.finish()
}

#[test]
fn the_recorder_makes_checked_bindings_of_declared_arguments() {
    let declared = [DeclaredArg { name: "fill.n", arg: 2, rule: Rule::Clamped { addend: -10 } }];
    let tape = record_declared(14, 4, &declared).unwrap();
    assert_eq!(
        tape.bindings(),
        [Binding {
            name: "fill.n".into(),
            launch: 1,
            kind: BindingKind::KernargU32Clamped { offset: 12, addend: -10 }
        }]
    );
    let offset = [DeclaredArg { name: "fill.n", arg: 2, rule: Rule::Offset { addend: 3 } }];
    assert_eq!(
        record_declared(1, 4, &offset).unwrap().bindings()[0].kind,
        BindingKind::KernargU32 { offset: 12, addend: 3 }
    );
    // Nothing declared: no bindings.
    assert!(record_declared(1, 4, &[]).unwrap().bindings().is_empty());
}

#[test]
fn the_recorder_refuses_a_declaration_that_is_not_what_it_says() {
    let problem = |declared: DeclaredArg<'_>, position: u32, n: u32| match record_declared(position, n, &[declared]) {
        Err(RecordError::Declared { index: 1, name, problem }) => {
            assert_eq!(name, "fill.n");
            problem
        }
        other => panic!("{other:?}"),
    };
    let d = |arg, rule| DeclaredArg { name: "fill.n", arg, rule };
    assert_eq!(
        problem(d(2, Rule::Clamped { addend: -10 }), 14, 5),
        DeclaredProblem::Disagrees { rule: Rule::Clamped { addend: -10 }, position: 14, bound: 4, passed: 5 }
    );
    assert_eq!(
        problem(d(3, Rule::Offset { addend: 0 }), 4, 4),
        DeclaredProblem::NoSuchArgument { arg: 3, explicit: 3 }
    );
    assert!(matches!(
        problem(d(0, Rule::Offset { addend: 0 }), 4, 4),
        DeclaredProblem::NotAWord { arg: 0, size: 8, .. }
    ));
    let grid = Rule::Grid {
        addend: 1,
        divisor: core::num::NonZeroU32::new(64).unwrap(),
        unit: tape_core::binding::DimUnit::Workgroups,
    };
    assert_eq!(problem(d(2, grid), 4, 4), DeclaredProblem::GridRule { rule: grid });
    assert_eq!(
        problem(d(2, Rule::Offset { addend: -5 }), 4, 4),
        DeclaredProblem::NoValue {
            rule: Rule::Offset { addend: -5 },
            position: 4,
            error: BindingError::OutOfRange { position: 4, addend: -5 }
        }
    );
    // The error poisons the capture and reads with the launch and the name.
    let text = record_declared(14, 5, &[d(2, Rule::Clamped { addend: -10 })]).unwrap_err().to_string();
    assert_eq!(
        text,
        "launch 1: declared binding \"fill.n\": rule `max(0, position + -10)` gives 4 at position 14, the launch passes 5"
    );
}

#[test]
fn two_declarations_of_one_name_are_refused_when_the_capture_closes() {
    let f = fill();
    let mut recorder = Recorder::new(4);
    recorder.begin(4).unwrap();
    let d = [DeclaredArg { name: "n", arg: 2, rule: Rule::Offset { addend: 0 } }];
    recorder.record_declared(fill_at(4), &f.layout, &d).unwrap();
    recorder.record_declared(fill_at(4), &f.layout, &d).unwrap();
    assert_eq!(
        recorder.finish().map(|_| ()),
        Err(RecordError::Tape(TapeError::Binding(BindingCheckError::DuplicateName { name: "n".into() })))
    );
}

proptest! {
    /// Random steps whose words follow random declared rules (offsets and clamps, constant in
    /// both samples or not) calibrate to exactly the declarations; dropping any declaration of a
    /// word that differs between the samples is refused naming that word.
    #[test]
    fn random_declared_steps_calibrate_to_their_declarations(
        rules in proptest::collection::vec((any::<bool>(), -3000i64..3000), 1..12),
        p0 in 0u32..2000,
        gap in 1u32..2000,
        drop in any::<proptest::sample::Index>(),
    ) {
        let p1 = p0 + gap;
        let kinds: Vec<BindingKind> = rules
            .iter()
            .enumerate()
            .map(|(i, &(clamped, addend))| {
                // Offsets need a value at both positions: shift the addend into range.
                let offset = 4 * u32::try_from(i).unwrap();
                if clamped { BindingKind::KernargU32Clamped { offset, addend } } else { BindingKind::KernargU32 { offset, addend: addend.max(-i64::from(p0)) } }
            })
            .collect();
        let at = |p: u32| -> Vec<LaunchRecord> {
            let values: Vec<u32> = kinds.iter().map(|k| k.value_at(p).unwrap()).collect();
            vec![record("k", words(&values), 64)]
        };
        let declared: Vec<Binding> =
            kinds.iter().enumerate().map(|(i, &kind)| Binding { name: format!("w{i}"), launch: 0, kind }).collect();
        let (a, b) = (at(p0), at(p1));
        let sample = |position, launches| Sample { position, launches };
        let got = calibrate_declared(sample(p0, &a), sample(p1, &b), &declared, &[], MAX + 10_000);
        prop_assert_eq!(got, Ok(declared.clone()));
        let i = drop.index(declared.len());
        let mut fewer = declared.clone();
        let gone = fewer.remove(i);
        let moves = gone.kind.value_at(p0) != gone.kind.value_at(p1);
        let got = calibrate_declared(sample(p0, &a), sample(p1, &b), &fewer, &[], MAX + 10_000);
        if moves {
            let offset = gone.kind.kernarg_offset().unwrap();
            prop_assert!(matches!(got, Err(E::Undeclared { offset: o, .. }) if o == offset), "{:?}", got);
        } else {
            prop_assert_eq!(got, Ok(fewer));
        }
    }
}
