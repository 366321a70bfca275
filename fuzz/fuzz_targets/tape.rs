//! Any bytes as a stored tape, binary or JSON: a validated tape or a typed error, never a panic;
//! an accepted tape re-encodes to a tape with the same identity, and its dependencies derive.
//! The unchecked binary decode agrees with the validated one, and the command-line loader (with
//! its JSON error locator) never panics either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tape_core::deps;
use tape_core::serial::TapeData;
use tape_core::tape::Tape;

fn check(tape: &Tape) {
    let again = Tape::from_binary(&tape.to_binary()).expect("re-encoded tape loads");
    assert_eq!(again.identity(), tape.identity());
    let _ = deps::boundaries(tape.launches());
    let _ = deps::dependencies(tape.launches());
}

fuzz_target!(|data: &[u8]| {
    let raw = TapeData::from_binary(data);
    match Tape::from_binary(data) {
        Ok(tape) => {
            assert_eq!(raw.as_ref().ok(), Some(&tape.to_data()), "the plain data is the tape's");
            check(&tape);
        }
        Err(_) => assert!(raw.is_err() || tape_core::serial::validate(raw.unwrap()).is_err()),
    }
    if let Ok(tape) = serde_json::from_slice::<Tape>(data) {
        check(&tape);
    }
    let _ = tape_core::show::load(data);
});
