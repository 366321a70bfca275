//! Any text as an IB bundle's patch-site rule (tape-core's binding rule, whose text form bundles
//! carry): a rule or a typed error, never a panic; a parsed rule prints in a form that parses back
//! to it, and evaluates without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tape_core::binding::Rule;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(rule) = text.parse::<Rule>() else { return };
    assert_eq!(rule.to_string().parse::<Rule>(), Ok(rule));
    for position in [0, 1, 4095, u32::MAX] {
        let _ = rule.value_at(position);
        let _ = rule.value_within(position, 4096);
    }
});
