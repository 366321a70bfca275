//! The hex reader of `redline disasm` never panics, and what it accepts re-reads identically.
#![no_main]

use disasm::input::parse_hex;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(words) = parse_hex(text) {
        let printed: String = words.iter().map(|w| format!("{w:#010x}\n")).collect();
        assert_eq!(parse_hex(&printed).expect("printed words re-read"), words);
    }
});
