//! Any text as a kernel trace (rocprofv3's `kernel_trace.csv`): rows or a located error, never a
//! panic; accepted rows written back read back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tape_core::census::trace::{header_line, parse};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = core::str::from_utf8(data) else { return };
    let Ok(rows) = parse(text) else { return };
    let mut again = header_line();
    for row in &rows {
        row.write_line(&mut again);
    }
    assert_eq!(parse(&again).expect("written rows read back"), rows);
});
