//! Tapes on disk and on the wire.
//!
//! A [`Tape`] serializes with serde as its plain data, [`TapeData`]. In human-readable formats
//! (JSON) digests and kernarg blobs are lower-case hex strings (upper case is accepted on input);
//! in binary formats they are byte strings. Deserializing a `Tape` never trusts its input: the
//! data is decoded into a `TapeData` and then passes [`validate`], the same checks recording and
//! [`Tape::with_bindings`] run. (The checks against kernarg layouts need the code objects; see
//! [`Tape::check_layouts`].)
//!
//! The binary form ([`Tape::to_binary`]) is [`TAPE_MAGIC`], [`TAPE_FORMAT_VERSION`] as `u16`
//! little-endian, then the postcard encoding of the `TapeData`, and nothing after it. It is
//! written with postcard and read back by a decoder of that exact layout ([`binary`] describes
//! it) that tracks the field and the byte offset it is at, so a [`DecodeError`] says where the
//! payload stops being a tape (`launches[3].kernarg: length 4096 at byte offset 812 runs past
//! the end of the tape (900 bytes)`). Decoding allocates at most in proportion to the input, and
//! no input makes it panic.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::binding::Binding;
use crate::record::{ArtifactId, Effects, Geometry, LaunchRecord, Lds, PointerArg};
use crate::tape::{ExternalCount, Tape, TapeError};

pub mod binary;

pub use binary::{DecodeError, DecodeErrorKind, FieldPath, Segment};

/// First bytes of every binary tape.
pub const TAPE_MAGIC: [u8; 6] = *b"RLTAPE";
/// The binary format version this crate writes and reads.
pub const TAPE_FORMAT_VERSION: u16 = 1;
/// Bytes before the postcard payload: magic and version.
pub const TAPE_HEADER_BYTES: usize = TAPE_MAGIC.len() + 2;

/// The plain, unchecked data of a tape: what a tape serializes as, and what [`validate`] turns
/// into a [`Tape`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapeData {
    /// The decode position the tape was recorded at.
    pub position: u32,
    /// The launches, in issue order.
    #[serde(with = "launches")]
    pub launches: Vec<LaunchRecord>,
    /// Launches kept outside the tape, by name.
    pub external: Vec<ExternalCount>,
    /// The dynamic bindings.
    pub bindings: Vec<Binding>,
}

/// Checks `raw` as recording and [`Tape::with_bindings`] do, and builds the tape.
///
/// # Errors
/// The first [`TapeError`] found.
pub fn validate(raw: TapeData) -> Result<Tape, TapeError> {
    Tape::from_parts(raw.position, raw.launches, raw.external, raw.bindings)
}

/// Why bytes are not a binary tape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SerialError {
    /// Shorter than the header.
    #[error("{len} bytes are shorter than the {header_bytes}-byte tape header")]
    TooShort {
        /// Input length.
        len: usize,
        /// [`TAPE_HEADER_BYTES`].
        header_bytes: usize,
    },
    /// Not [`TAPE_MAGIC`].
    #[error("magic {} is not {}", HexBytes(found), HexBytes(&TAPE_MAGIC))]
    Magic {
        /// The first 6 bytes.
        found: [u8; 6],
    },
    /// A format version other than [`TAPE_FORMAT_VERSION`].
    #[error("tape format version {found} is not supported (this build reads {supported})")]
    Version {
        /// The version in the header.
        found: u16,
        /// [`TAPE_FORMAT_VERSION`].
        supported: u16,
    },
    /// The payload is not an encoded [`TapeData`]; the error names the field and byte offset.
    #[error("{0}")]
    Decode(DecodeError),
    /// Bytes after the payload.
    #[error("{count} bytes after the tape payload, from byte offset {offset}")]
    TrailingBytes {
        /// How many.
        count: usize,
        /// Byte offset of the first of them.
        offset: usize,
    },
    /// The payload decodes but is not a valid tape.
    #[error("invalid tape: {0}")]
    Invalid(TapeError),
}

impl Tape {
    /// A copy of the tape's plain data.
    #[must_use]
    pub fn to_data(&self) -> TapeData {
        TapeData {
            position: self.position(),
            launches: self.launches().to_vec(),
            external: self.external().to_vec(),
            bindings: self.bindings().to_vec(),
        }
    }

    /// The binary form: magic, version, postcard payload.
    #[must_use]
    pub fn to_binary(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&TAPE_MAGIC);
        out.extend_from_slice(&TAPE_FORMAT_VERSION.to_le_bytes());
        // PANIC: postcard fails to serialize only sequences of unknown length and `collect_str`
        // in a format that is not human-readable; this encoding uses neither.
        postcard::to_extend(self, out).expect("INVARIANT: a tape always encodes")
    }

    /// Decodes and validates a binary tape.
    ///
    /// # Errors
    /// [`SerialError`] for a short input, a bad magic, an unsupported version, an undecodable
    /// payload (naming the field and byte offset), trailing bytes, or a payload that is not a
    /// valid tape.
    pub fn from_binary(bytes: &[u8]) -> Result<Tape, SerialError> {
        validate(TapeData::from_binary(bytes)?).map_err(SerialError::Invalid)
    }
}

impl TapeData {
    /// Decodes a binary tape into its plain data, without [`validate`] (for tools that show what
    /// is wrong with a tape); [`Tape::from_binary`] is this and `validate`.
    ///
    /// # Errors
    /// [`SerialError`] for a short input, a bad magic, an unsupported version, an undecodable
    /// payload (naming the field and byte offset) or trailing bytes.
    pub fn from_binary(bytes: &[u8]) -> Result<TapeData, SerialError> {
        let (Some(magic), Some(version)) = (bytes.get(..6), bytes.get(6..8)) else {
            return Err(SerialError::TooShort { len: bytes.len(), header_bytes: TAPE_HEADER_BYTES });
        };
        if magic != TAPE_MAGIC {
            let mut found = [0u8; 6];
            found.copy_from_slice(magic);
            return Err(SerialError::Magic { found });
        }
        let found = u16::from_le_bytes([version[0], version[1]]);
        if found != TAPE_FORMAT_VERSION {
            return Err(SerialError::Version { found, supported: TAPE_FORMAT_VERSION });
        }
        let (data, end) = binary::decode(bytes, TAPE_HEADER_BYTES).map_err(SerialError::Decode)?;
        if end < bytes.len() {
            return Err(SerialError::TrailingBytes { count: bytes.len() - end, offset: end });
        }
        Ok(data)
    }
}

/// The borrowed twin of [`TapeData`]; field names and order must stay identical.
#[derive(Serialize)]
#[serde(rename = "TapeData")]
struct TapeRef<'a> {
    position: u32,
    #[serde(serialize_with = "launches::serialize")]
    launches: &'a [LaunchRecord],
    external: &'a [ExternalCount],
    bindings: &'a [Binding],
}

impl Serialize for Tape {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        TapeRef {
            position: self.position(),
            launches: self.launches(),
            external: self.external(),
            bindings: self.bindings(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Tape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let data = TapeData::deserialize(deserializer)?;
        validate(data).map_err(D::Error::custom)
    }
}

/// Bytes shown as lower-case hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HexBytes<'a>(pub &'a [u8]);

impl fmt::Display for HexBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The value of one hex digit.
fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes a hex string of even length.
fn decode_hex<E: serde::de::Error>(s: &str) -> Result<Vec<u8>, E> {
    let digits = s.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(E::custom(format_args!("hex string of odd length {}", digits.len())));
    }
    digits
        .chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| match (hex_digit(pair[0]), hex_digit(pair[1])) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(E::custom(format_args!("non-hex digit in byte {i} of a hex string"))),
        })
        .collect()
}

/// A byte string: hex in human-readable formats, bytes otherwise.
struct BytesVisitor;

impl<'de> serde::de::Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a hex string or a byte string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        decode_hex(v)
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Self::Value, E> {
        Ok(v)
    }
}

/// Serde for a byte blob: lower-case hex in human-readable formats, a byte string otherwise.
pub(crate) mod hex_bytes {
    use alloc::vec::Vec;

    use serde::{Deserializer, Serializer};

    use super::{BytesVisitor, HexBytes};

    pub(crate) fn serialize<S: Serializer, T: AsRef<[u8]> + ?Sized>(bytes: &T, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() { s.collect_str(&HexBytes(bytes.as_ref())) } else { s.serialize_bytes(bytes.as_ref()) }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        if d.is_human_readable() { d.deserialize_str(BytesVisitor) } else { d.deserialize_bytes(BytesVisitor) }
    }
}

/// Serde for a SHA-256 digest: 64 lower-case hex digits in human-readable formats, a 32-byte
/// byte string otherwise.
pub(crate) mod hex32 {
    use serde::de::Error as _;
    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        super::hex_bytes::serialize(bytes, s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let bytes = super::hex_bytes::deserialize(d)?;
        <[u8; 32]>::try_from(bytes.as_slice())
            .map_err(|_| D::Error::custom(format_args!("digest of {} bytes, expected 32", bytes.len())))
    }
}

/// The launches of a [`TapeData`], with hex digests and blobs in human-readable formats.
mod launches {
    use alloc::vec::Vec;

    use serde::{Deserialize, Deserializer, Serializer};

    use super::{ArtifactOwned, ArtifactRef, LaunchOwned, LaunchRecord, LaunchRef};

    pub(super) fn serialize<S: Serializer>(launches: &[LaunchRecord], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(launches.iter().map(|l| LaunchRef {
            artifact: ArtifactRef { code_object_sha256: l.artifact.code_object_sha256, symbol: &l.artifact.symbol },
            kernarg: &l.kernarg,
            geometry: &l.geometry,
            lds: &l.lds,
            wave_size: l.wave_size,
            pointers: &l.pointers,
            effects: &l.effects,
        }))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<LaunchRecord>, D::Error> {
        let owned = Vec::<LaunchOwned>::deserialize(d)?;
        Ok(owned
            .into_iter()
            .map(|l| {
                let ArtifactOwned { code_object_sha256, symbol } = l.artifact;
                LaunchRecord {
                    artifact: super::ArtifactId { code_object_sha256, symbol },
                    kernarg: l.kernarg,
                    geometry: l.geometry,
                    lds: l.lds,
                    wave_size: l.wave_size,
                    pointers: l.pointers,
                    effects: l.effects,
                }
            })
            .collect())
    }
}

/// A [`LaunchRecord`] borrowed for serialization; fields as [`LaunchOwned`].
#[derive(Serialize)]
#[serde(rename = "LaunchRecord")]
struct LaunchRef<'a> {
    artifact: ArtifactRef<'a>,
    #[serde(serialize_with = "hex_bytes::serialize")]
    kernarg: &'a [u8],
    geometry: &'a Geometry,
    lds: &'a Lds,
    wave_size: u8,
    pointers: &'a [PointerArg],
    effects: &'a Effects,
}

/// An [`ArtifactId`] borrowed for serialization.
#[derive(Serialize)]
#[serde(rename = "ArtifactId")]
struct ArtifactRef<'a> {
    #[serde(serialize_with = "hex32::serialize")]
    code_object_sha256: [u8; 32],
    symbol: &'a str,
}

/// A [`LaunchRecord`] as decoded, before any check.
#[derive(Deserialize)]
#[serde(rename = "LaunchRecord", deny_unknown_fields)]
struct LaunchOwned {
    artifact: ArtifactOwned,
    #[serde(deserialize_with = "hex_bytes::deserialize")]
    kernarg: Vec<u8>,
    geometry: Geometry,
    lds: Lds,
    wave_size: u8,
    pointers: Vec<PointerArg>,
    effects: Effects,
}

/// An [`ArtifactId`] as decoded.
#[derive(Deserialize)]
#[serde(rename = "ArtifactId", deny_unknown_fields)]
struct ArtifactOwned {
    #[serde(deserialize_with = "hex32::deserialize")]
    code_object_sha256: [u8; 32],
    symbol: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let bytes = [0x00, 0x0f, 0xa5, 0xff];
        assert_eq!(alloc::format!("{}", HexBytes(&bytes)), "000fa5ff");
        let back: Result<Vec<u8>, serde::de::value::Error> = decode_hex("000FA5ff");
        assert_eq!(back.unwrap(), bytes);
        assert!(decode_hex::<serde::de::value::Error>("abc").is_err());
        assert!(decode_hex::<serde::de::value::Error>("zz").is_err());
        assert!(decode_hex::<serde::de::value::Error>("").unwrap().is_empty());
    }
}
