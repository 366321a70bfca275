//! A bounded cursor over MessagePack bytes, built on `rmp`'s low-level decode functions.
//!
//! `rmp` decodes one marker and its payload at a time; this cursor adds what hostile input needs:
//! the byte offset of every value for error messages, a check of every string, binary, array and
//! map length against the bytes that remain (so no loop or allocation is sized by a claimed
//! length), and a nesting limit for skipped values.

use rmp::Marker;
use rmp::decode::{self, Bytes, NumValueReadError, ValueReadError};

/// Why a value could not be read. The caller adds the field path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RawError {
    /// The input ends inside the value.
    Truncated,
    /// The value has another type.
    WrongType { found: &'static str },
    /// An integer outside the target type.
    OutOfRange { value: i128 },
    /// A length larger than the remaining input.
    TooLong { length: u32, remaining: usize },
    /// Arrays and maps nested deeper than the limit.
    TooDeep,
    /// A string that is not UTF-8.
    Utf8,
    /// The reserved marker `0xc1`.
    Reserved,
}

/// The MessagePack type family of a marker, for "expected X, found Y" messages.
pub(crate) fn marker_kind(marker: Marker) -> &'static str {
    match marker {
        Marker::Null => "nil",
        Marker::True | Marker::False => "bool",
        Marker::FixPos(_)
        | Marker::FixNeg(_)
        | Marker::U8
        | Marker::U16
        | Marker::U32
        | Marker::U64
        | Marker::I8
        | Marker::I16
        | Marker::I32
        | Marker::I64 => "integer",
        Marker::F32 | Marker::F64 => "float",
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => "string",
        Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => "binary",
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "array",
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "map",
        Marker::FixExt1
        | Marker::FixExt2
        | Marker::FixExt4
        | Marker::FixExt8
        | Marker::FixExt16
        | Marker::Ext8
        | Marker::Ext16
        | Marker::Ext32 => "extension",
        Marker::Reserved => "reserved marker",
    }
}

fn value_error<E>(e: ValueReadError<E>) -> RawError
where
    E: decode::RmpReadErr,
{
    match e {
        ValueReadError::InvalidMarkerRead(_) | ValueReadError::InvalidDataRead(_) => RawError::Truncated,
        ValueReadError::TypeMismatch(Marker::Reserved) => RawError::Reserved,
        ValueReadError::TypeMismatch(m) => RawError::WrongType { found: marker_kind(m) },
    }
}

/// A read position in a MessagePack document.
#[derive(Clone, Debug)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) const fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// Byte offset of the next value.
    pub(crate) const fn offset(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The marker of the next value, without consuming it.
    pub(crate) fn peek(&self) -> Result<Marker, RawError> {
        self.data.get(self.pos).map(|&b| Marker::from_u8(b)).ok_or(RawError::Truncated)
    }

    /// Runs one `rmp` decode function on the remaining bytes and advances past what it consumed.
    fn run<T, E>(&mut self, f: impl FnOnce(&mut Bytes<'a>) -> Result<T, E>) -> Result<T, E> {
        let mut bytes = Bytes::new(&self.data[self.pos..]);
        let result = f(&mut bytes);
        self.pos = self.data.len() - bytes.remaining_slice().len();
        result
    }

    /// Advances `len` bytes of payload, which must be present.
    fn advance(&mut self, len: u32) -> Result<(), RawError> {
        let remaining = self.remaining();
        match usize::try_from(len) {
            Ok(n) if n <= remaining => {
                self.pos += n;
                Ok(())
            }
            _ => Err(RawError::TooLong { length: len, remaining }),
        }
    }

    /// Checks that `count` elements of at least `min_bytes` each can still follow.
    fn check_count(&self, count: u32, min_bytes: usize) -> Result<(), RawError> {
        let remaining = self.remaining();
        match usize::try_from(count).ok().and_then(|n| n.checked_mul(min_bytes)) {
            Some(needed) if needed <= remaining => Ok(()),
            _ => Err(RawError::TooLong { length: count, remaining }),
        }
    }

    /// Reads a map header; the count is bounded by the remaining input (two bytes per entry).
    pub(crate) fn read_map_len(&mut self) -> Result<u32, RawError> {
        let len = self.run(decode::read_map_len).map_err(value_error)?;
        self.check_count(len, 2)?;
        Ok(len)
    }

    /// Reads an array header; the count is bounded by the remaining input (one byte per element).
    pub(crate) fn read_array_len(&mut self) -> Result<u32, RawError> {
        let len = self.run(decode::read_array_len).map_err(value_error)?;
        self.check_count(len, 1)?;
        Ok(len)
    }

    /// Reads a UTF-8 string, borrowed from the input.
    pub(crate) fn read_str(&mut self) -> Result<&'a str, RawError> {
        let len = self.run(decode::read_str_len).map_err(value_error)?;
        let start = self.pos;
        self.advance(len)?;
        core::str::from_utf8(&self.data[start..self.pos]).map_err(|_| RawError::Utf8)
    }

    /// Reads any integer as `i128` (every MessagePack integer fits).
    pub(crate) fn read_int(&mut self) -> Result<i128, RawError> {
        self.run(decode::read_int::<i128, _>).map_err(|e| match e {
            NumValueReadError::InvalidMarkerRead(_) | NumValueReadError::InvalidDataRead(_) => RawError::Truncated,
            NumValueReadError::TypeMismatch(Marker::Reserved) => RawError::Reserved,
            NumValueReadError::TypeMismatch(m) => RawError::WrongType { found: marker_kind(m) },
            // Unreachable for i128; kept total.
            NumValueReadError::OutOfRange => RawError::OutOfRange { value: 0 },
        })
    }

    /// Reads an integer into `T`.
    pub(crate) fn read_uint<T: TryFrom<i128>>(&mut self) -> Result<T, RawError> {
        let value = self.read_int()?;
        T::try_from(value).map_err(|_| RawError::OutOfRange { value })
    }

    /// Reads a boolean.
    pub(crate) fn read_bool(&mut self) -> Result<bool, RawError> {
        self.run(decode::read_bool).map_err(value_error)
    }

    /// Skips one value of any type, nested at most `depth_left` arrays/maps deep.
    pub(crate) fn skip(&mut self, depth_left: usize) -> Result<(), RawError> {
        let marker = self.peek()?;
        match marker {
            Marker::Null | Marker::True | Marker::False | Marker::FixPos(_) | Marker::FixNeg(_) => {
                self.pos += 1;
                Ok(())
            }
            Marker::U8
            | Marker::U16
            | Marker::U32
            | Marker::U64
            | Marker::I8
            | Marker::I16
            | Marker::I32
            | Marker::I64 => self.read_int().map(drop),
            Marker::F32 => self.run(decode::read_f32).map(drop).map_err(value_error),
            Marker::F64 => self.run(decode::read_f64).map(drop).map_err(value_error),
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let len = self.run(decode::read_str_len).map_err(value_error)?;
                self.advance(len)
            }
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                let len = self.run(decode::read_bin_len).map_err(value_error)?;
                self.advance(len)
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                let meta = self.run(decode::read_ext_meta).map_err(value_error)?;
                self.advance(meta.size)
            }
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                let depth_left = depth_left.checked_sub(1).ok_or(RawError::TooDeep)?;
                let len = self.read_array_len()?;
                // Bounded: `len` is at most the remaining byte count and each element consumes one.
                for _ in 0..len {
                    self.skip(depth_left)?;
                }
                Ok(())
            }
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => {
                let depth_left = depth_left.checked_sub(1).ok_or(RawError::TooDeep)?;
                let len = self.read_map_len()?;
                // Bounded as for arrays, two values per entry.
                for _ in 0..len {
                    self.skip(depth_left)?;
                    self.skip(depth_left)?;
                }
                Ok(())
            }
            Marker::Reserved => Err(RawError::Reserved),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_every_family_and_counts_offsets() {
        // nil, true, fixint 5, u16 0x0102, i8 -3, f32, f64, str "ab", bin [1], fixext1, [1, [2]], {"k": 3}
        let doc: &[u8] = &[
            0xc0, 0xc3, 0x05, 0xcd, 0x01, 0x02, 0xd0, 0xfd, 0xca, 0, 0, 0, 0, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xa2, b'a',
            b'b', 0xc4, 0x01, 0x01, 0xd4, 0x01, 0x00, 0x92, 0x01, 0x91, 0x02, 0x81, 0xa1, b'k', 0x03,
        ];
        let mut c = Cursor::new(doc);
        let mut offsets = alloc::vec::Vec::new();
        while c.remaining() > 0 {
            offsets.push(c.offset());
            c.skip(4).unwrap();
        }
        assert_eq!(offsets, [0, 1, 2, 3, 6, 8, 13, 22, 25, 28, 31, 35]);
    }

    #[test]
    fn lengths_are_bounded_by_the_input() {
        // array32 claiming 0xFFFFFFFF elements with 1 byte left.
        let mut c = Cursor::new(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x00]);
        assert_eq!(c.read_array_len(), Err(RawError::TooLong { length: u32::MAX, remaining: 1 }));
        // map16 of 2 entries needs at least 4 bytes; 3 remain.
        let mut c = Cursor::new(&[0xde, 0x00, 0x02, 0x01, 0x02, 0x03]);
        assert_eq!(c.read_map_len(), Err(RawError::TooLong { length: 2, remaining: 3 }));
        // str8 of 5 bytes with 2 present.
        let mut c = Cursor::new(&[0xd9, 0x05, b'a', b'b']);
        assert_eq!(c.read_str(), Err(RawError::TooLong { length: 5, remaining: 2 }));
        // ext32 with a huge size.
        let mut c = Cursor::new(&[0xc9, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(c.skip(4), Err(RawError::TooLong { length: u32::MAX, remaining: 0 }));
    }

    #[test]
    fn depth_limit_and_bad_markers() {
        let nested = [0x91u8; 10];
        assert_eq!(Cursor::new(&nested).skip(5), Err(RawError::TooDeep));
        assert_eq!(Cursor::new(&[0xc1]).skip(5), Err(RawError::Reserved));
        assert_eq!(Cursor::new(&[]).skip(5), Err(RawError::Truncated));
        assert_eq!(Cursor::new(&[0xcd, 0x01]).read_int(), Err(RawError::Truncated));
        assert_eq!(Cursor::new(&[0xa1, 0xff]).read_str(), Err(RawError::Utf8));
        assert_eq!(Cursor::new(&[0xc3]).read_int(), Err(RawError::WrongType { found: "bool" }));
        assert_eq!(Cursor::new(&[0xff]).read_uint::<u32>(), Err(RawError::OutOfRange { value: -1 }));
        assert_eq!(
            Cursor::new(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).read_uint::<u64>(),
            Ok(u64::MAX)
        );
    }
}
