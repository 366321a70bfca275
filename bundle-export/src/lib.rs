//! IB bundles made from tapes: a tape lowered for one family and written as a directory that
//! describes one submission completely (the format is `soft_device::bundle`'s, which also runs
//! it), with the expected bytes of every region as the ordinary path produces them.
//!
//! - [`export`]: a tape into a bundle, checked by one run on a fresh soft device.
//! - [`example`]: a built-in example workload recorded on a soft device, as a bundle.
//! - [`model`]: one decode step of a GGUF llama, as a bundle.
//!
//! This crate stands above both the route (`lowering`, `engine`) and the soft device: a bundle
//! is the lowering's output laid out at the VAs the soft device is told to use, so it needs
//! both, and neither may depend on the other.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod example;
pub mod export;
pub mod model;

/// Why a tape, an example or a model cannot be lowered as asked: a fault of the input, not of
/// this machine (`redline lower` exits 1 with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Refused {
    /// The refusal an error's message makes.
    pub fn of(error: impl std::fmt::Display) -> Self {
        Self(error.to_string())
    }
}
