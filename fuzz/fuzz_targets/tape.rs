//! Any bytes as a stored tape, binary or JSON: a validated tape or a typed error, never a panic;
//! an accepted tape re-encodes to a tape with the same identity, and its dependencies derive.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tape_core::deps;
use tape_core::tape::Tape;

fn check(tape: &Tape) {
    let again = Tape::from_binary(&tape.to_binary()).expect("re-encoded tape loads");
    assert_eq!(again.identity(), tape.identity());
    let _ = deps::boundaries(tape.launches());
    let _ = deps::dependencies(tape.launches());
}

fuzz_target!(|data: &[u8]| {
    if let Ok(tape) = Tape::from_binary(data) {
        check(&tape);
    }
    if let Ok(tape) = serde_json::from_slice::<Tape>(data) {
        check(&tape);
    }
});
