//! The binary payload decoded by hand, field by field, so that an error names the field and the
//! byte offset where decoding stopped.
//!
//! The payload is the postcard encoding of a [`TapeData`] (what [`Tape::to_binary`] writes with
//! serde), and this decoder reads exactly what postcard's deserializer reads from it:
//! - `u8`: one byte;
//! - `u16`, `u32`, `u64`: LEB128 varints of at most 3, 5 and 10 bytes, the last byte holding only
//!   the bits the type has left (non-minimal encodings are accepted, as postcard accepts them);
//! - `i64`: the zig-zag varint of a `u64`;
//! - byte strings, strings and sequences: a `u64` varint length, then the bytes or the elements;
//!   strings are UTF-8;
//! - structs: their fields in declaration order, nothing between them; a newtype (an
//!   [`AllocationId`]) is its inner value;
//! - enums: the variant index as a `u32` varint, then the variant's fields.
//!
//! A few lists are refused as soon as their length is read, where [`validate`](super::validate)
//! would refuse them anyway: more launches, external names, bindings or effects than the tape's
//! limits allow, or more pointers than a launch's kernarg blob has 8-byte slots. Every list is
//! allocated at most in proportion to the bytes left, so no length prefix makes decoding
//! allocate more than the input justifies.
//!
//! [`Tape::to_binary`]: crate::tape::Tape::to_binary

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::binding::{Binding, BindingKind};
use crate::record::{Access, AllocationId, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};
use crate::recorder::{EFFECTS_PER_LAUNCH_MAX, EXTERNAL_NAMES_MAX};
use crate::tape::{BINDINGS_MAX, ExternalCount, TAPE_LAUNCHES_MAX};

use super::TapeData;

/// Bytes of a SHA-256 digest.
const DIGEST_BYTES: usize = 32;
/// Bytes of a pointer slot in the kernarg blob.
const POINTER_BYTES: usize = 8;

/// One step of a [`FieldPath`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    /// A struct field or an enum variant, named as in the JSON form.
    Field(&'static str),
    /// An element of a list.
    Index(usize),
}

/// Where in a tape a value sits, written as in the JSON form: `launches[3].kernarg`,
/// `bindings[0].kind.GridAxis.divisor`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Segment>);

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("the payload");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Field(name) if i == 0 => f.write_str(name)?,
                Segment::Field(name) => write!(f, ".{name}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// What is wrong at the place a [`DecodeError`] names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// A byte or a varint cut off by the end of the input.
    Truncated {
        /// What was being read (`"a u32 varint"`).
        item: &'static str,
        /// Bytes of the whole input.
        input_len: usize,
    },
    /// A length prefix whose bytes or elements would run past the end of the input.
    LengthPastEnd {
        /// The length read.
        len: u64,
        /// Bytes of the whole input.
        input_len: usize,
    },
    /// A varint longer than its type allows or with bits its type does not have.
    BadVarint {
        /// The type (`"u32"`).
        ty: &'static str,
    },
    /// A string that is not UTF-8.
    NotUtf8 {
        /// Byte offset of the first byte that is not UTF-8.
        bad_byte: usize,
    },
    /// An enum variant index the enum does not have.
    UnknownVariant {
        /// The index read.
        index: u32,
        /// The enum's variants, by index.
        variants: &'static [&'static str],
    },
    /// A digest of another length than 32 bytes.
    DigestLength {
        /// Its length.
        len: u64,
    },
    /// A list longer than the tape allows.
    TooMany {
        /// Its length.
        count: u64,
        /// The limit.
        limit: usize,
    },
    /// More pointers than the launch's kernarg blob has 8-byte slots.
    PointersPastKernarg {
        /// Pointers listed.
        count: u64,
        /// Blob length, bytes.
        kernarg_len: usize,
    },
}

/// Why a binary tape payload does not decode: the field, the byte offset (from the start of the
/// file, header included) of the value that stopped decoding, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The field being decoded.
    pub path: FieldPath,
    /// Byte offset of the offending value (for a length, of its prefix).
    pub offset: usize,
    /// What is wrong.
    pub kind: DecodeErrorKind,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (path, offset) = (&self.path, self.offset);
        match &self.kind {
            DecodeErrorKind::Truncated { item, input_len } => {
                write!(f, "{path}: {item} at byte offset {offset} runs past the end of the tape ({input_len} bytes)")
            }
            DecodeErrorKind::LengthPastEnd { len, input_len } => {
                write!(
                    f,
                    "{path}: length {len} at byte offset {offset} runs past the end of the tape ({input_len} bytes)"
                )
            }
            DecodeErrorKind::BadVarint { ty } => {
                write!(f, "{path}: the varint at byte offset {offset} is not a valid {ty}")
            }
            DecodeErrorKind::NotUtf8 { bad_byte } => {
                write!(f, "{path}: the string at byte offset {offset} is not UTF-8 (byte offset {bad_byte})")
            }
            DecodeErrorKind::UnknownVariant { index, variants } => {
                write!(f, "{path}: variant {index} at byte offset {offset} is none of ")?;
                for (i, name) in variants.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{i} ({name})")?;
                }
                Ok(())
            }
            DecodeErrorKind::DigestLength { len } => {
                write!(f, "{path}: digest of {len} bytes at byte offset {offset}, expected {DIGEST_BYTES}")
            }
            DecodeErrorKind::TooMany { count, limit } => {
                write!(f, "{path}: {count} entries at byte offset {offset} exceed the limit of {limit}")
            }
            DecodeErrorKind::PointersPastKernarg { count, kernarg_len } => write!(
                f,
                "{path}: {count} pointers at byte offset {offset} do not fit the {kernarg_len}-byte kernarg blob \
                 (at most {} 8-byte slots)",
                kernarg_len / POINTER_BYTES
            ),
        }
    }
}

impl core::error::Error for DecodeError {}

type Result<T> = core::result::Result<T, DecodeError>;

/// Decodes the [`TapeData`] starting at byte `start` of `bytes`; returns it and the offset of the
/// first byte after it.
///
/// # Errors
/// [`DecodeError`] naming the field and byte offset where the payload stops being a `TapeData`.
pub(crate) fn decode(bytes: &[u8], start: usize) -> Result<(TapeData, usize)> {
    let mut r = Reader { bytes, pos: start, path: Vec::new() };
    let data = r.tape_data()?;
    Ok((data, r.pos))
}

/// A cursor over the input that knows which field it is in.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: Vec<Segment>,
}

impl<'a> Reader<'a> {
    fn error(&self, offset: usize, kind: DecodeErrorKind) -> DecodeError {
        DecodeError { path: FieldPath(self.path.clone()), offset, kind }
    }

    /// Runs `f` inside field `name` (the path is left as it was on error, for the message).
    fn field<T>(&mut self, name: &'static str, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.path.push(Segment::Field(name));
        let value = f(self)?;
        self.path.pop();
        Ok(value)
    }

    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn u8(&mut self) -> Result<u8> {
        let byte = self.bytes.get(self.pos).copied().ok_or_else(|| {
            self.error(self.pos, DecodeErrorKind::Truncated { item: "a byte", input_len: self.bytes.len() })
        })?;
        self.pos += 1;
        Ok(byte)
    }

    /// A varint of at most `max_bytes` bytes whose last byte is at most `last_max`, as postcard
    /// reads one.
    fn varint(&mut self, ty: &'static str, item: &'static str, max_bytes: u32, last_max: u8) -> Result<u64> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..max_bytes {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(self.error(start, DecodeErrorKind::Truncated { item, input_len: self.bytes.len() }));
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7F) << (7 * i);
            if byte & 0x80 == 0 {
                if i == max_bytes - 1 && byte > last_max {
                    break;
                }
                return Ok(value);
            }
        }
        Err(self.error(start, DecodeErrorKind::BadVarint { ty }))
    }

    fn u16(&mut self) -> Result<u16> {
        let start = self.pos;
        let value = self.varint("u16", "a u16 varint", 3, 0b11)?;
        u16::try_from(value).map_err(|_| self.error(start, DecodeErrorKind::BadVarint { ty: "u16" }))
    }

    fn u32(&mut self) -> Result<u32> {
        let start = self.pos;
        let value = self.varint("u32", "a u32 varint", 5, 0b1111)?;
        u32::try_from(value).map_err(|_| self.error(start, DecodeErrorKind::BadVarint { ty: "u32" }))
    }

    fn u64(&mut self) -> Result<u64> {
        self.varint("u64", "a u64 varint", 10, 0b1)
    }

    fn i64(&mut self) -> Result<i64> {
        let start = self.pos;
        let zigzag = self.varint("i64", "an i64 varint", 10, 0b1)?;
        // Zig-zag: 0, -1, 1, -2, ... ; `zigzag >> 1` fits in i64.
        let magnitude =
            i64::try_from(zigzag >> 1).map_err(|_| self.error(start, DecodeErrorKind::BadVarint { ty: "i64" }))?;
        Ok(if zigzag & 1 == 0 { magnitude } else { !magnitude })
    }

    /// A length prefix (a `usize` varint: `u64` on the targets this crate builds for).
    fn length(&mut self) -> Result<(usize, u64)> {
        let start = self.pos;
        let len = self.varint("length", "a length varint", 10, 0b1)?;
        Ok((start, len))
    }

    /// `len` as a count that fits in the bytes left, or [`DecodeErrorKind::LengthPastEnd`].
    fn within_input(&self, start: usize, len: u64) -> Result<usize> {
        usize::try_from(len)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or_else(|| self.error(start, DecodeErrorKind::LengthPastEnd { len, input_len: self.bytes.len() }))
    }

    /// A length-prefixed byte string, borrowed from the input; returns its prefix's offset too.
    fn byte_string(&mut self) -> Result<(usize, &'a [u8])> {
        let (start, len) = self.length()?;
        let n = self.within_input(start, len)?;
        let bytes = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok((start, bytes))
    }

    fn string(&mut self) -> Result<String> {
        let (start, bytes) = self.byte_string()?;
        match core::str::from_utf8(bytes) {
            Ok(text) => Ok(String::from(text)),
            Err(e) => {
                let bad_byte = self.pos - bytes.len() + e.valid_up_to();
                Err(self.error(start, DecodeErrorKind::NotUtf8 { bad_byte }))
            }
        }
    }

    fn digest(&mut self) -> Result<[u8; DIGEST_BYTES]> {
        let (start, bytes) = self.byte_string()?;
        <[u8; DIGEST_BYTES]>::try_from(bytes).map_err(|_| {
            self.error(start, DecodeErrorKind::DigestLength { len: u64::try_from(bytes.len()).unwrap_or(u64::MAX) })
        })
    }

    /// An enum variant index below `variants.len()`.
    fn variant(&mut self, variants: &'static [&'static str]) -> Result<(u32, &'static str)> {
        let start = self.pos;
        let index = self.u32()?;
        match usize::try_from(index).ok().and_then(|i| variants.get(i)) {
            Some(&name) => Ok((index, name)),
            None => Err(self.error(start, DecodeErrorKind::UnknownVariant { index, variants })),
        }
    }

    /// A length-prefixed list of at most `limit` elements, each read by `element` inside its
    /// index; `too_many` builds the error for a longer list.
    fn list<T>(
        &mut self,
        limit: usize,
        too_many: impl FnOnce(u64) -> DecodeErrorKind,
        mut element: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let (start, len) = self.length()?;
        if usize::try_from(len).map_or(true, |n| n > limit) {
            return Err(self.error(start, too_many(len)));
        }
        // Every element takes at least one byte, so a list longer than the input cannot decode
        // (postcard reads such a list until the input ends; the outcome is the same).
        let count = self.within_input(start, len)?;
        let mut out = Vec::with_capacity(count);
        for index in 0..count {
            self.path.push(Segment::Index(index));
            out.push(element(self)?);
            self.path.pop();
        }
        Ok(out)
    }

    fn limited_list<T>(&mut self, limit: usize, element: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        self.list(limit, |count| DecodeErrorKind::TooMany { count, limit }, element)
    }

    fn tape_data(&mut self) -> Result<TapeData> {
        let position = self.field("position", Self::u32)?;
        let launches = self.field("launches", |r| r.limited_list(TAPE_LAUNCHES_MAX, Self::launch))?;
        let external = self.field("external", |r| r.limited_list(EXTERNAL_NAMES_MAX, Self::external))?;
        let bindings = self.field("bindings", |r| r.limited_list(BINDINGS_MAX, Self::binding))?;
        Ok(TapeData { position, launches, external, bindings })
    }

    fn launch(&mut self) -> Result<LaunchRecord> {
        let artifact = self.field("artifact", |r| {
            let code_object_sha256 = r.field("code_object_sha256", Self::digest)?;
            let symbol = r.field("symbol", Self::string)?;
            Ok(ArtifactId { code_object_sha256, symbol })
        })?;
        let kernarg = self.field("kernarg", |r| r.byte_string().map(|(_, bytes)| bytes.to_vec()))?;
        let geometry = self.field("geometry", |r| {
            let grid_work_items = r.field("grid_work_items", |r| r.array(Self::u32))?;
            let workgroup_work_items = r.field("workgroup_work_items", |r| r.array(Self::u16))?;
            Ok(Geometry { grid_work_items, workgroup_work_items })
        })?;
        let lds = self.field("lds", |r| {
            let static_bytes = r.field("static_bytes", Self::u32)?;
            let dynamic_bytes = r.field("dynamic_bytes", Self::u32)?;
            Ok(Lds { static_bytes, dynamic_bytes })
        })?;
        let wave_size = self.field("wave_size", Self::u8)?;
        let kernarg_len = kernarg.len();
        let pointers = self.field("pointers", |r| {
            let slots = kernarg_len / POINTER_BYTES;
            r.list(slots, |count| DecodeErrorKind::PointersPastKernarg { count, kernarg_len }, Self::pointer)
        })?;
        let effects = self.field("effects", Self::effects)?;
        Ok(LaunchRecord { artifact, kernarg, geometry, lds, wave_size, pointers, effects })
    }

    /// A fixed-length array: its elements, no length prefix.
    fn array<T: Copy + Default, const N: usize>(
        &mut self,
        mut element: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<[T; N]> {
        let mut out = [T::default(); N];
        for (index, slot) in out.iter_mut().enumerate() {
            self.path.push(Segment::Index(index));
            *slot = element(self)?;
            self.path.pop();
        }
        Ok(out)
    }

    fn pointer(&mut self) -> Result<PointerArg> {
        let kernarg_offset = self.field("kernarg_offset", Self::u32)?;
        let allocation = AllocationId(self.field("allocation", Self::u32)?);
        let offset_bytes = self.field("offset_bytes", Self::u64)?;
        Ok(PointerArg { kernarg_offset, allocation, offset_bytes })
    }

    fn effects(&mut self) -> Result<Effects> {
        match self.variant(&["Known", "Unknown"])? {
            (0, name) => {
                let list = self.field(name, |r| r.limited_list(EFFECTS_PER_LAUNCH_MAX, Self::effect))?;
                Ok(Effects::Known(list))
            }
            _ => Ok(Effects::Unknown),
        }
    }

    fn effect(&mut self) -> Result<Effect> {
        let allocation = AllocationId(self.field("allocation", Self::u32)?);
        let offset_bytes = self.field("offset_bytes", Self::u64)?;
        let len_bytes = self.field("len_bytes", Self::u64)?;
        let access = self.field("access", |r| {
            Ok(match r.variant(&["Read", "Write", "ReadWrite"])?.0 {
                0 => Access::Read,
                1 => Access::Write,
                _ => Access::ReadWrite,
            })
        })?;
        Ok(Effect { allocation, offset_bytes, len_bytes, access })
    }

    fn external(&mut self) -> Result<ExternalCount> {
        let name = self.field("name", Self::string)?;
        let count = self.field("count", Self::u32)?;
        Ok(ExternalCount { name, count })
    }

    fn binding(&mut self) -> Result<Binding> {
        let name = self.field("name", Self::string)?;
        let launch = self.field("launch", Self::u32)?;
        let kind = self.field("kind", Self::binding_kind)?;
        Ok(Binding { name, launch, kind })
    }

    fn binding_kind(&mut self) -> Result<BindingKind> {
        let (index, name) = self.variant(&["KernargU32", "GridAxis", "KernargGridWorkgroups", "KernargU32Clamped"])?;
        self.field(name, |r| {
            Ok(match index {
                0 => {
                    let offset = r.field("offset", Self::u32)?;
                    let addend = r.field("addend", Self::i64)?;
                    BindingKind::KernargU32 { offset, addend }
                }
                1 => {
                    let axis = r.field("axis", Self::u8)?;
                    let addend = r.field("addend", Self::i64)?;
                    let divisor = r.field("divisor", Self::u32)?;
                    let max_workgroups = r.field("max_workgroups", Self::u32)?;
                    BindingKind::GridAxis { axis, addend, divisor, max_workgroups }
                }
                2 => {
                    let offset = r.field("offset", Self::u32)?;
                    let axis = r.field("axis", Self::u8)?;
                    let addend = r.field("addend", Self::i64)?;
                    let divisor = r.field("divisor", Self::u32)?;
                    let max_workgroups = r.field("max_workgroups", Self::u32)?;
                    BindingKind::KernargGridWorkgroups { offset, axis, addend, divisor, max_workgroups }
                }
                _ => {
                    let offset = r.field("offset", Self::u32)?;
                    let addend = r.field("addend", Self::i64)?;
                    BindingKind::KernargU32Clamped { offset, addend }
                }
            })
        })
    }
}
