//! Attaching bindings to a recorded tape: `Tape::with_bindings` is the only way, and it rejects
//! every binding that could not reproduce the recorded launch.

mod recorder_fixture;

use recorder_fixture::*;
use tape_core::binding::{Binding, BindingError, BindingKind};
use tape_core::tape::{BINDING_NAME_BYTES_MAX, BINDINGS_MAX, BindingCheckError, TapeError};

fn kernarg(name: &str, launch: u32, offset: u32, addend: i64) -> Binding {
    Binding { name: name.into(), launch, kind: BindingKind::KernargU32 { offset, addend } }
}

fn grid(name: &str, launch: u32, axis: u8, addend: i64, divisor: u32, max_workgroups: u32) -> Binding {
    Binding { name: name.into(), launch, kind: BindingKind::GridAxis { axis, addend, divisor, max_workgroups } }
}

fn attach(bindings: Vec<Binding>) -> Result<(), BindingCheckError> {
    match recorded_at(POSITION).with_bindings(bindings) {
        Ok(_) => Ok(()),
        Err(TapeError::Binding(e)) => Err(e),
        Err(other) => panic!("not a binding error: {other}"),
    }
}

#[test]
fn golden_bindings_attach_and_replace() {
    let tape = recorded_at(POSITION);
    let identity = tape.identity();
    let bound = tape.with_bindings(golden_bindings()).unwrap();
    assert_eq!(bound.bindings(), &golden_bindings()[..]);
    assert_eq!(bound.identity(), identity);
    // A second call replaces, it does not append.
    let one = vec![kernarg("fill.n", 0, 12, 1007)];
    let rebound = bound.with_bindings(one.clone()).unwrap();
    assert_eq!(rebound.bindings(), &one[..]);
    assert!(rebound.with_bindings(vec![]).unwrap().bindings().is_empty());
}

#[test]
fn the_bound_value_must_reproduce_the_recording() {
    // n = 1024 at position 17: addend 1007. Any other addend disagrees.
    assert_eq!(attach(vec![kernarg("n", 2, 16, 1007)]), Ok(()));
    assert_eq!(
        attach(vec![kernarg("n", 2, 16, 1008)]),
        Err(BindingCheckError::KernargDisagrees { name: "n".into(), position: 17, bound: 1025, recorded: 1024 })
    );
    assert_eq!(
        attach(vec![kernarg("n", 2, 16, -18)]),
        Err(BindingCheckError::Value {
            name: "n".into(),
            error: BindingError::OutOfRange { position: 17, addend: -18 },
        })
    );
    // The grid: 16 work-groups of 64.
    assert_eq!(attach(vec![grid("g", 2, 0, 1007, 64, 16)]), Ok(()));
    assert_eq!(
        attach(vec![grid("g", 2, 0, 1007 + 64, 64, 20)]),
        Err(BindingCheckError::GridDisagrees {
            name: "g".into(),
            position: 17,
            bound_work_items: 17 * 64,
            recorded_work_items: 1024,
        })
    );
}

#[test]
fn a_grid_that_is_not_whole_work_groups_cannot_be_bound() {
    // block_sum over 1000 elements at position 17 would have 16 groups; record a launch whose
    // grid is 1000 work-items, which no work-group count reproduces.
    let mut data = recorded_at(POSITION).into_data();
    data.launches[2].geometry.grid_work_items[0] = 1000;
    let tape = tape_core::serial::validate(data).unwrap();
    assert_eq!(
        tape.with_bindings(vec![grid("g", 2, 0, 1007, 64, 16)]),
        Err(TapeError::Binding(BindingCheckError::GridDisagrees {
            name: "g".into(),
            position: 17,
            bound_work_items: 1024,
            recorded_work_items: 1000,
        }))
    );
}

#[test]
fn the_owning_launch_must_exist() {
    assert_eq!(
        attach(vec![kernarg("n", 3, 16, 1007)]),
        Err(BindingCheckError::LaunchOutOfRange { name: "n".into(), launch: 3, launches: 3 })
    );
    assert_eq!(
        attach(vec![kernarg("n", u32::MAX, 16, 1007)]),
        Err(BindingCheckError::LaunchOutOfRange { name: "n".into(), launch: u32::MAX, launches: 3 })
    );
}

#[test]
fn names_are_unique_and_bounded() {
    assert_eq!(
        attach(vec![kernarg("n", 2, 16, 1007), kernarg("n", 0, 12, 1007)]),
        Err(BindingCheckError::DuplicateName { name: "n".into() })
    );
    assert_eq!(attach(vec![kernarg("", 2, 16, 1007)]), Err(BindingCheckError::NameEmpty { index: 0 }));
    let long = "x".repeat(BINDING_NAME_BYTES_MAX + 1);
    assert_eq!(
        attach(vec![kernarg("ok", 0, 12, 1007), kernarg(&long, 2, 16, 1007)]),
        Err(BindingCheckError::NameTooLong { index: 1, len: 129, limit: 128 })
    );
    assert_eq!(attach(vec![kernarg(&"x".repeat(BINDING_NAME_BYTES_MAX), 2, 16, 1007)]), Ok(()));
}

#[test]
fn bindings_are_bounded_in_number() {
    let many = vec![kernarg("n", 2, 16, 1007); BINDINGS_MAX + 1];
    assert_eq!(attach(many), Err(BindingCheckError::TooMany { count: 4097, limit: 4096 }));
}

#[test]
fn kernarg_words_lie_inside_the_blob_clear_of_pointers() {
    // block_sum: 280 bytes, pointers at 0 and 8.
    assert_eq!(
        attach(vec![kernarg("w", 2, 277, 0)]),
        Err(BindingCheckError::KernargOutside { name: "w".into(), offset: 277, kernarg_len: 280 })
    );
    assert_eq!(
        attach(vec![kernarg("w", 2, u32::MAX - 1, 0)]),
        Err(BindingCheckError::KernargOutside { name: "w".into(), offset: u32::MAX - 1, kernarg_len: 280 })
    );
    for (offset, pointer_offset) in [(0, 0), (4, 0), (5, 0), (8, 8), (12, 8), (13, 8)] {
        assert_eq!(
            attach(vec![kernarg("w", 2, offset, 0)]),
            Err(BindingCheckError::OverlapsPointer { name: "w".into(), offset, pointer_offset }),
            "offset {offset}"
        );
    }
    // The last 4 bytes (padding, 0) are fine: the word at position 17 is 0 with addend -17.
    assert_eq!(attach(vec![kernarg("w", 2, 276, -17)]), Ok(()));
}

#[test]
fn grid_bindings_are_well_formed() {
    assert_eq!(
        attach(vec![grid("g", 2, 3, 1007, 64, 64)]),
        Err(BindingCheckError::AxisOutOfRange { name: "g".into(), axis: 3 })
    );
    assert_eq!(attach(vec![grid("g", 2, 0, 1007, 0, 64)]), Err(BindingCheckError::ZeroDivisor { name: "g".into() }));
    assert_eq!(
        attach(vec![grid("g", 2, 0, 1007, 64, 15)]),
        Err(BindingCheckError::MaxBelowRecorded { name: "g".into(), max_workgroups: 15, recorded_workgroups: 16 })
    );
    // Axes 1 and 2 hold one work-group: position + addend in 1..=divisor.
    assert_eq!(attach(vec![grid("g1", 2, 1, -16, 1, 1), grid("g2", 2, 2, -10, 8, 4)]), Ok(()));
}

#[test]
fn two_bindings_may_not_bind_one_value() {
    assert_eq!(
        attach(vec![kernarg("a", 2, 16, 1007), kernarg("b", 2, 16, 1007)]),
        Err(BindingCheckError::Conflict { name: "b".into(), other: "a".into(), launch: 2 })
    );
    // Overlapping words: bytes 16..20 (n = 1024) and 18..22 (the high half of n and two bytes
    // of padding: 0, so addend -17 reproduces it).
    assert_eq!(
        attach(vec![kernarg("late", 2, 18, -17), kernarg("early", 2, 16, 1007)]),
        Err(BindingCheckError::Conflict { name: "late".into(), other: "early".into(), launch: 2 })
    );
    assert_eq!(attach(vec![kernarg("late", 2, 18, -17)]), Ok(()), "valid on its own");
    assert_eq!(
        attach(vec![grid("a", 2, 0, 1007, 64, 64), grid("b", 2, 0, 1007, 64, 64)]),
        Err(BindingCheckError::Conflict { name: "b".into(), other: "a".into(), launch: 2 })
    );
    // Adjacent words (n at 16..20, padding at 20..24), the same offset on another launch, and a
    // word next to a grid binding of the same launch: no conflict.
    assert_eq!(
        attach(vec![
            kernarg("n2", 2, 16, 1007),
            kernarg("pad", 2, 20, -17),
            kernarg("n0", 0, 12, 1007),
            kernarg("n1", 1, 20, 1007),
            grid("g", 2, 0, 1007, 64, 64),
        ]),
        Ok(())
    );
}

#[test]
fn binding_errors_name_the_binding_and_values() {
    let e = TapeError::Binding(BindingCheckError::KernargDisagrees {
        name: "n".into(),
        position: 17,
        bound: 1025,
        recorded: 1024,
    });
    assert_eq!(e.to_string(), "binding `n` gives 1025 at position 17, the recorded word is 1024");
}
