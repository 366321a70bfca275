//! Redline's GPU kernels.
//!
//! - `hip/`: HIP sources on a small self-written device header (`hip/device.h`, clang builtins
//!   only), compiled for every target of the target table (`pm4_encoding::family::TARGETS`).
//! - `objects/`: the built code objects, checked in with `objects/MANIFEST` (SHA-256 per file), so
//!   nothing at build or run time needs clang; [`artifacts`] embeds them.
//! - [`plan`] and [`compile`]: the build (`cargo run -p kernels --bin build-kernels`).
//!
//! CPU references, for the soft device that executes command streams without a GPU:
//! - [`memory`]: the [`memory::DeviceMemory`] address space the references run against, and
//!   [`memory::HostMemory`] for tests and tools.
//! - [`launch`]: a [`launch::Launch`] (kernarg bytes and geometry) and typed kernarg reads.
//! - [`signature`]: every kernel's explicit kernarg layout and the launch facts of its metadata.
//! - [`cpu`]: one reference per kernel, reproducing the kernel's `f32` arithmetic and order.
//! - [`effects`]: every kernel's buffer effects as data, resolved per launch.
//! - [`registry`]: `(code-object SHA-256, kernel name)` to reference, effects and arguments.

#![warn(missing_docs)]
// The one unsafe of the crate: calling the vector CPU references after the CPU features they
// are compiled for were detected at run time (`cpu::simd`, used by `cpu::quant` and
// `cpu::prefill`); nothing else may use it.
#![deny(unsafe_code)]

pub mod compile;
pub mod cpu;
pub mod effects;
pub mod launch;
pub mod memory;
pub mod plan;
pub mod registry;
pub mod signature;

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
