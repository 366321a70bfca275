//! Compiles a C program against the installed ROCm headers that prints every entry of
//! `hsa_sys::layout::layout_table()` and compares the output with the Rust values.
//!
//! Needs a C compiler (`$CC`, else `cc`) and the headers (Debian: `libhsa-runtime-dev`). Without
//! them the test fails under `CI=true` and is skipped, with the reason printed, otherwise.

use std::path::Path;

use dynload::c_check::{Headers, check};
use hsa_sys::layout::{LAYOUT_DEFINES, LAYOUT_HEADERS, layout_table};

/// Include directories besides the compiler's defaults (`/usr/include` on Debian).
const INCLUDE_DIRS: &[&str] = &["/opt/rocm/include"];

#[test]
fn every_transcribed_item_matches_the_c_headers() {
    let headers = Headers { includes: LAYOUT_HEADERS, defines: LAYOUT_DEFINES, include_dirs: INCLUDE_DIRS };
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hsa-sys-c-layout");
    let _ = check(&layout_table(), &headers, &scratch);
}
