//! Redline's GPU kernels.
//!
//! - `hip/`: HIP sources on a small self-written device header (`hip/device.h`, clang builtins
//!   only), compiled for gfx1030, gfx1100, gfx1151, gfx1200 and gfx1201.
//! - `objects/`: the built code objects, checked in with `objects/MANIFEST` (SHA-256 per file), so
//!   nothing at build or run time needs clang; [`artifacts`] embeds them.
//! - [`plan`] and [`compile`]: the build (`cargo run -p kernels --bin build-kernels`).

pub mod compile;
pub mod plan;

/// A checked-in code object, embedded in the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedArtifact {
    /// Path below `objects/`.
    pub path: &'static str,
    /// SHA-256 from the manifest, lower-case hex.
    pub sha256: &'static str,
    /// The file's bytes.
    pub bytes: &'static [u8],
}

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));
}

/// Every checked-in artifact, in manifest order.
#[must_use]
pub fn artifacts() -> &'static [EmbeddedArtifact] {
    embedded::ARTIFACTS
}

/// The artifact at `path` below `objects/`.
#[must_use]
pub fn artifact(path: &str) -> Option<&'static EmbeddedArtifact> {
    artifacts().iter().find(|a| a.path == path)
}
