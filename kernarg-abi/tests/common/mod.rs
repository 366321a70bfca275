//! Shared helpers of the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// Path of a fixture in `tests/data`.
pub(crate) fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// The bytes of a fixture in `tests/data`.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(path(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// Every code-object fixture (ELF files).
pub(crate) const CODE_OBJECTS: [&str; 9] = [
    "kernels-gfx1030.co",
    "kernels-gfx1030-wave64.co",
    "kernels-gfx1100.co",
    "kernels-gfx1100-v4.co",
    "kernels-gfx1100-v6.co",
    "kernels-gfx1151.co",
    "kernels-gfx1200.co",
    "kernels-gfx1201.co",
    "add-gfx90a-xnack.co",
];

/// The bundle fixture.
pub(crate) const BUNDLE: &str = "add-gfx1100-gfx1201.bundle";
