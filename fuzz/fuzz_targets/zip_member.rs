//! Any bytes as a wheel: `redline pull`'s zip reader finds member "m" and extracts it, or says
//! why not; it never panics, and never writes more than the directory declares.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use model_files::zip::{extract, find_member};

fuzz_target!(|data: &[u8]| {
    let mut reader = Cursor::new(data);
    let Ok(member) = find_member(&mut reader, "m") else { return };
    let mut out = Vec::new();
    let result = extract(&mut reader, &member, &mut out, &mut |_| {});
    assert!(u64::try_from(out.len()).unwrap() <= member.uncompressed_size);
    if let Ok(n) = result {
        assert_eq!(n, member.uncompressed_size);
    }
});
