//! Clang offload bundles: the container `clang --cuda-device-only` writes around per-target code
//! objects.
//!
//! Layout (clang's `ClangOffloadBundler.rst`, checked against `xxd` of a clang-19 bundle), all
//! integers little-endian u64:
//!
//! | bytes | field |
//! |---|---|
//! | 24 | magic `__CLANG_OFFLOAD_BUNDLE__` |
//! | 8 | number of entries |
//! | per entry: 8 | offset of the entry's code object from the start of the bundle |
//! | 8 | size of the code object |
//! | 8 | length of the entry id |
//! | id length | entry id, no terminator: `<kind>-<arch>-<vendor>-<os>-<env>[-<target id>]`, e.g. `hipv4-amdgcn-amd-amdhsa--gfx1100`, `host-x86_64-unknown-linux--` |
//!
//! Compressed bundles (magic `CCOB`) are recognised and reported as unsupported.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use pm4_encoding::Target;

use crate::text::{Short, ShortList};

/// Magic of an uncompressed bundle.
pub const BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
/// Magic of a compressed bundle (unsupported).
pub const COMPRESSED_BUNDLE_MAGIC: &[u8; 4] = b"CCOB";

/// Bytes of the fixed header: magic and entry count.
const HEADER_BYTES: usize = 32;
/// Smallest entry record: offset, size and id length.
const ENTRY_RECORD_MIN_BYTES: usize = 24;

/// One entry of a bundle, borrowed from the bundle bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleEntry<'a> {
    /// The entry id as stored: offload kind, triple and target id.
    pub triple: &'a str,
    /// The entry's code object (empty for the host entry of a device-only bundle).
    pub bytes: &'a [u8],
    /// Offset of `bytes` in the bundle.
    pub offset: u64,
}

impl<'a> BundleEntry<'a> {
    fn field(&self, index: usize) -> &'a str {
        self.triple.splitn(6, '-').nth(index).unwrap_or("")
    }

    /// The offload kind (`hipv4`, `hip`, `openmp`, `host`).
    #[must_use]
    pub fn offload_kind(&self) -> &'a str {
        self.field(0)
    }

    /// The architecture of the triple (`amdgcn`, `x86_64`).
    #[must_use]
    pub fn arch(&self) -> &'a str {
        self.field(1)
    }

    /// The target id after the triple (`gfx1100`, `gfx90a:sramecc-:xnack+`), if any.
    #[must_use]
    pub fn target_id(&self) -> Option<&'a str> {
        Some(self.field(5)).filter(|s| !s.is_empty())
    }

    /// The processor of the target id (`gfx1100`), if any.
    #[must_use]
    pub fn processor(&self) -> Option<&'a str> {
        self.target_id().and_then(|t| t.split(':').next())
    }

    /// Whether the entry is AMDGPU device code (not the host entry).
    #[must_use]
    pub fn is_device(&self) -> bool {
        self.offload_kind() != "host" && self.arch() == "amdgcn"
    }
}

/// Why a bundle could not be read or an entry selected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// The input does not start with either bundle magic.
    #[error("not a clang offload bundle (no __CLANG_OFFLOAD_BUNDLE__ magic)")]
    NotABundle,
    /// A compressed (`CCOB`) bundle.
    #[error("compressed offload bundles (CCOB) are not supported; unbundle with clang-offload-bundler first")]
    Compressed,
    /// A header field extends past the end of the input.
    #[error("bundle ends at byte {len}; the {field} at byte {offset} needs {needed} bytes")]
    Truncated {
        /// What was being read.
        field: &'static str,
        /// Offset of the field.
        offset: usize,
        /// Bytes the field needs.
        needed: u64,
        /// Input length.
        len: usize,
    },
    /// More entries than the input can describe.
    #[error("bundle claims {count} entries; {len} bytes hold at most {limit}")]
    TooManyEntries {
        /// The entry count in the header.
        count: u64,
        /// The most entry records that fit.
        limit: u64,
        /// Input length.
        len: usize,
    },
    /// An entry whose code object lies outside the input.
    #[error(
        "bundle entry {index} ({}) spans bytes {offset}..{offset}+{size}, past the {len}-byte input",
        Short(triple)
    )]
    EntryOutOfBounds {
        /// Entry index.
        index: usize,
        /// Entry id.
        triple: String,
        /// Entry offset.
        offset: u64,
        /// Entry size.
        size: u64,
        /// Input length.
        len: usize,
    },
    /// An entry id that is not UTF-8.
    #[error("bundle entry {index}: the id at byte {offset} is not UTF-8 from its byte {valid_up_to} on")]
    InvalidId {
        /// Entry index.
        index: usize,
        /// Offset of the id in the bundle.
        offset: usize,
        /// Length of the id's valid UTF-8 prefix.
        valid_up_to: usize,
    },
    /// No device entry for the requested target.
    #[error("bundle has no entry for {target}; device entries: {}", ShortList(available))]
    TargetNotFound {
        /// The target asked for.
        target: Target,
        /// Ids of the device entries present.
        available: Vec<String>,
    },
    /// Several device entries for the requested target (differing target features).
    #[error("bundle has several entries for {target}: {}", ShortList(triples))]
    AmbiguousTarget {
        /// The target asked for.
        target: Target,
        /// The matching entry ids.
        triples: Vec<String>,
    },
    /// The selected entry holds no bytes.
    #[error("bundle entry {} is empty", Short(triple))]
    EmptyEntry {
        /// Entry id.
        triple: String,
    },
}

/// Whether `bytes` starts with a bundle magic (uncompressed or compressed).
#[must_use]
pub fn is_bundle(bytes: &[u8]) -> bool {
    bytes.starts_with(BUNDLE_MAGIC) || bytes.starts_with(COMPRESSED_BUNDLE_MAGIC)
}

/// Reads a little-endian u64 at `offset`.
fn read_u64(bytes: &[u8], offset: usize, field: &'static str) -> Result<u64, BundleError> {
    offset
        .checked_add(8)
        .and_then(|end| bytes.get(offset..end))
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .ok_or(BundleError::Truncated { field, offset, needed: 8, len: bytes.len() })
}

/// Every entry of a bundle, in stored order.
///
/// # Errors
/// [`BundleError`] for a missing magic, a compressed bundle, truncated headers, an entry count
/// the input cannot hold, an entry outside the input or an id that is not UTF-8.
pub fn entries(bytes: &[u8]) -> Result<Vec<BundleEntry<'_>>, BundleError> {
    if bytes.starts_with(COMPRESSED_BUNDLE_MAGIC) {
        return Err(BundleError::Compressed);
    }
    if !bytes.starts_with(BUNDLE_MAGIC) {
        return Err(BundleError::NotABundle);
    }
    let claimed = read_u64(bytes, BUNDLE_MAGIC.len(), "entry count")?;
    let limit = bytes.len().saturating_sub(HEADER_BYTES) / ENTRY_RECORD_MIN_BYTES;
    let count = usize::try_from(claimed).ok().filter(|&n| n <= limit).ok_or(BundleError::TooManyEntries {
        count: claimed,
        // CAST: usize to u64 is lossless.
        limit: limit as u64,
        len: bytes.len(),
    })?;
    let mut pos = HEADER_BYTES;
    let mut out = Vec::new();
    // Bounded: `count` records of at least 24 bytes each fit in the input (checked above).
    for index in 0..count {
        let offset = read_u64(bytes, pos, "entry offset")?;
        let size = read_u64(bytes, pos + 8, "entry size")?;
        let id_len = read_u64(bytes, pos + 16, "entry id length")?;
        pos += ENTRY_RECORD_MIN_BYTES;
        let id = usize::try_from(id_len)
            .ok()
            .and_then(|n| bytes.get(pos..pos.checked_add(n)?))
            .ok_or(BundleError::Truncated { field: "entry id", offset: pos, needed: id_len, len: bytes.len() })?;
        let triple = core::str::from_utf8(id).map_err(|e| BundleError::InvalidId {
            index,
            offset: pos,
            valid_up_to: e.valid_up_to(),
        })?;
        pos += id.len();
        let body = offset
            .checked_add(size)
            .and_then(|end| Some(usize::try_from(offset).ok()?..usize::try_from(end).ok()?))
            .and_then(|range| bytes.get(range))
            .ok_or_else(|| BundleError::EntryOutOfBounds {
                index,
                triple: triple.to_string(),
                offset,
                size,
                len: bytes.len(),
            })?;
        out.push(BundleEntry { triple, bytes: body, offset });
    }
    Ok(out)
}

/// The AMDGPU device entries of a bundle.
///
/// # Errors
/// As [`entries`].
pub fn device_entries(bytes: &[u8]) -> Result<Vec<BundleEntry<'_>>, BundleError> {
    Ok(entries(bytes)?.into_iter().filter(BundleEntry::is_device).collect())
}

/// The code object of the device entry whose target-id processor is `target`.
///
/// # Errors
/// [`BundleError::TargetNotFound`] when no device entry is for `target`,
/// [`BundleError::AmbiguousTarget`] when several are, [`BundleError::EmptyEntry`] when the entry
/// is empty, and the errors of [`entries`].
pub fn select(bytes: &[u8], target: Target) -> Result<&[u8], BundleError> {
    select_entry(bytes, target).map(|entry| entry.bytes)
}

/// The device entry whose target-id processor is `target` (as [`select`], with the entry's id
/// and offset).
///
/// # Errors
/// As [`select`].
pub fn select_entry(bytes: &[u8], target: Target) -> Result<BundleEntry<'_>, BundleError> {
    let devices = device_entries(bytes)?;
    let matching: Vec<&BundleEntry<'_>> = devices.iter().filter(|e| e.processor() == Some(target.name())).collect();
    match matching.as_slice() {
        [] => Err(BundleError::TargetNotFound {
            target,
            available: devices.iter().map(|e| e.triple.to_string()).collect(),
        }),
        [one] if one.bytes.is_empty() => Err(BundleError::EmptyEntry { triple: one.triple.to_string() }),
        [one] => Ok(**one),
        many => {
            Err(BundleError::AmbiguousTarget { target, triples: many.iter().map(|e| e.triple.to_string()).collect() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// Builds a bundle from (id, body) pairs, bodies laid out after the header.
    fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let header_len: usize = HEADER_BYTES + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
        let mut out = BUNDLE_MAGIC.to_vec();
        out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        let mut body_offset = header_len;
        for (id, body) in entries {
            out.extend_from_slice(&(body_offset as u64).to_le_bytes());
            out.extend_from_slice(&(body.len() as u64).to_le_bytes());
            out.extend_from_slice(&(id.len() as u64).to_le_bytes());
            out.extend_from_slice(id.as_bytes());
            body_offset += body.len();
        }
        for (_, body) in entries {
            out.extend_from_slice(body);
        }
        out
    }

    #[test]
    fn header_literal_from_clang19() {
        // First 0x38 bytes of `xxd add-gfx1100-gfx1201.bundle`: magic, count 3, host entry at 0x1000
        // size 0 with a 27-byte id.
        let mut bytes = vec![0u8; 0x53];
        bytes[..24].copy_from_slice(BUNDLE_MAGIC);
        bytes[24] = 3;
        bytes[0x21] = 0x10; // offset 0x1000
        bytes[0x30] = 0x1b; // id length 27
        bytes[0x38..0x53].copy_from_slice(b"host-x86_64-unknown-linux--");
        // 0x53 bytes hold at most (0x53 - 32) / 24 = 2 entry records.
        assert!(matches!(entries(&bytes), Err(BundleError::TooManyEntries { count: 3, limit: 2, .. })));
        bytes[24] = 1;
        // The (empty) host code object is at 0x1000, past the end.
        assert!(matches!(entries(&bytes), Err(BundleError::EntryOutOfBounds { offset: 0x1000, size: 0, .. })));
        bytes.resize(0x1000, 0);
        let e = entries(&bytes).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].triple, "host-x86_64-unknown-linux--");
        assert_eq!((e[0].offset, e[0].bytes.len()), (0x1000, 0));
        assert!(!e[0].is_device());
        assert_eq!(e[0].target_id(), None);
    }

    #[test]
    fn select_by_processor() {
        let b = bundle(&[
            ("host-x86_64-unknown-linux--", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", b"AAAA"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1201", b"BB"),
        ]);
        assert!(is_bundle(&b));
        assert_eq!(select(&b, Target::Gfx1100), Ok(&b"AAAA"[..]));
        assert_eq!(select(&b, Target::Gfx1201), Ok(&b"BB"[..]));
        assert_eq!(
            select(&b, Target::Gfx1030),
            Err(BundleError::TargetNotFound {
                target: Target::Gfx1030,
                available: vec![
                    "hipv4-amdgcn-amd-amdhsa--gfx1100".to_string(),
                    "hipv4-amdgcn-amd-amdhsa--gfx1201".to_string()
                ],
            })
        );
        let e = device_entries(&b).unwrap();
        assert_eq!((e[0].offload_kind(), e[0].arch(), e[0].processor()), ("hipv4", "amdgcn", Some("gfx1100")));
    }

    #[test]
    fn target_features_and_ambiguity() {
        let b = bundle(&[
            ("hipv4-amdgcn-amd-amdhsa--gfx1030:xnack-", b"A"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030:xnack+", b"B"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", b""),
        ]);
        assert!(matches!(select(&b, Target::Gfx1030), Err(BundleError::AmbiguousTarget { .. })));
        assert!(matches!(select(&b, Target::Gfx1100), Err(BundleError::EmptyEntry { .. })));
        assert_eq!(device_entries(&b).unwrap()[0].target_id(), Some("gfx1030:xnack-"));
    }

    #[test]
    fn hostile_headers() {
        assert_eq!(entries(b"CCOB\x01\x00"), Err(BundleError::Compressed));
        assert!(is_bundle(b"CCOB"));
        assert_eq!(entries(b"\x7fELF"), Err(BundleError::NotABundle));
        assert!(matches!(entries(BUNDLE_MAGIC), Err(BundleError::Truncated { field: "entry count", .. })));
        let mut b = BUNDLE_MAGIC.to_vec();
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(entries(&b), Err(BundleError::TooManyEntries { count: u64::MAX, limit: 0, .. })));
        // Entry whose offset + size overflows, and one whose id length is huge.
        let mut b = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1100", b"X")]);
        b[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(entries(&b), Err(BundleError::EntryOutOfBounds { index: 0, .. })));
        let mut b = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1100", b"X")]);
        b[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(entries(&b), Err(BundleError::Truncated { field: "entry id", needed: u64::MAX, .. })));
        let mut b = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1100", b"X")]);
        b[56] = 0xff;
        assert_eq!(entries(&b), Err(BundleError::InvalidId { index: 0, offset: 56, valid_up_to: 0 }));
        b[56] = b'h';
        b[60] = 0xc3;
        assert_eq!(entries(&b), Err(BundleError::InvalidId { index: 0, offset: 56, valid_up_to: 4 }));
    }
}
