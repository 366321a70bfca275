//! Redline's GPU kernels: what runs on the GPU and the facts about it, as data.
//!
//! - `hip/`: HIP sources on a small self-written device header (`hip/device.h`, clang builtins
//!   only), compiled for every target of the target table (`pm4_encoding::family::TARGETS`).
//!   `hip/ggml_formats.h` holds every ggml block format's element formulas once, for the
//!   kernels of module `ggml_quants` and for the host check of their CPU references.
//! - `objects/`: the built code objects, checked in with `objects/MANIFEST` (SHA-256 per file), so
//!   nothing at build or run time needs clang; [`artifacts`] embeds them.
//! - [`plan`] and [`compile`]: the build (`cargo run -p kernels --bin build-kernels`).
//! - [`signature`]: every kernel's explicit kernarg layout and the launch facts of its metadata.
//! - [`effects`]: every kernel's buffer effects as data (declarations); [`resolve`] evaluates
//!   them for one [`launch::Launch`] (the soft device does before it runs a kernel, the engine's
//!   funnel while it records).
//! - [`catalog`]: which kernels every module's code object defines, with their signatures and
//!   effects, and which checked-in code object holds which module.
//!
//! The CPU references that execute these kernels without a GPU, the memory model they run
//! against and the registry from `(code-object SHA-256, kernel name)` to a reference live in
//! `kernel-refs`, which only the soft device (and what is built over it) uses.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod catalog;
pub mod compile;
pub mod effects;
pub mod launch;
pub mod plan;
pub mod resolve;
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

/// A SHA-256 written as 64 hex digits (either case), as `objects/MANIFEST` and
/// [`EmbeddedArtifact::sha256`] write it.
#[must_use]
pub fn parse_sha256_hex(hex: &str) -> Option<[u8; 32]> {
    let (pairs, rest) = hex.as_bytes().as_chunks::<2>();
    if pairs.len() != 32 || !rest.is_empty() {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16);
    let mut out = [0u8; 32];
    for (byte, &[hi, lo]) in out.iter_mut().zip(pairs) {
        // CAST: two hex digits are at most 0xff.
        #[allow(clippy::cast_possible_truncation)]
        let value = (digit(hi)? * 16 + digit(lo)?) as u8;
        *byte = value;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digests_parse_exactly() {
        let hex = "00ff10A0".repeat(8);
        let parsed = parse_sha256_hex(&hex).unwrap();
        assert_eq!(&parsed[..4], &[0x00, 0xff, 0x10, 0xa0]);
        assert_eq!(parse_sha256_hex(&hex[1..]), None);
        assert_eq!(parse_sha256_hex(&format!("{}0", &hex)), None);
        assert_eq!(parse_sha256_hex(&hex.replace('A', "g")), None);
        assert_eq!(parse_sha256_hex(""), None);
    }

    #[test]
    fn every_embedded_digest_parses() {
        for artifact in artifacts() {
            assert!(parse_sha256_hex(artifact.sha256).is_some(), "{}", artifact.path);
        }
    }
}
