//! Walking a dword stream into typed packets.
//!
//! The decoder never panics and always terminates: every item either consumes at least one dword
//! or is an error, and the first error ends the stream (the iterator is fused).

use crate::header::{Header, HeaderError};
use crate::opcode::Opcode;
use crate::packet::{self, Packet, PacketError};

/// One packet and where it sits in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// Dword offset of the header in the stream.
    pub offset: usize,
    /// The whole packet, header included.
    pub words: &'a [u32],
    /// The typed packet.
    pub packet: Packet<'a>,
}

/// Why decoding stopped. Every variant names the dword offset of the packet header it concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The header word itself is malformed.
    #[error("dword {offset}: bad header {word:#010x}: {source}")]
    Header {
        /// Offset of the header.
        offset: usize,
        /// The header word.
        word: u32,
        /// What is wrong with it.
        source: HeaderError,
    },
    /// The header announces more body dwords than the stream holds.
    #[error("dword {offset}: header {word:#010x} announces {body_dwords} body dwords, only {available} remain")]
    CountPastEnd {
        /// Offset of the header.
        offset: usize,
        /// The header word.
        word: u32,
        /// Body dwords announced.
        body_dwords: usize,
        /// Dwords left after the header.
        available: usize,
    },
    /// A type-1 header: obsolete, with no layout in the sources this crate follows.
    #[error("dword {offset}: type-1 packet header {word:#010x} is not supported")]
    Type1 {
        /// Offset of the header.
        offset: usize,
        /// The header word.
        word: u32,
    },
    /// The body does not fit its opcode's layout.
    #[error("dword {offset}: {source}")]
    Packet {
        /// Offset of the header.
        offset: usize,
        /// The opcode.
        opcode: Opcode,
        /// What is wrong.
        source: PacketError,
    },
}

impl DecodeError {
    /// Dword offset at which decoding stopped.
    #[must_use]
    pub fn offset(&self) -> usize {
        match *self {
            DecodeError::Header { offset, .. }
            | DecodeError::CountPastEnd { offset, .. }
            | DecodeError::Type1 { offset, .. }
            | DecodeError::Packet { offset, .. } => offset,
        }
    }
}

/// Iterator over the packets of a stream.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    words: &'a [u32],
    pos: usize,
    stopped: bool,
}

impl<'a> Decoder<'a> {
    /// A decoder at the start of `words`.
    #[must_use]
    pub fn new(words: &'a [u32]) -> Self {
        Self { words, pos: 0, stopped: false }
    }

    /// Dword offset of the next packet.
    #[must_use]
    pub fn position(&self) -> usize {
        self.pos
    }

    fn step(&mut self) -> Result<Decoded<'a>, DecodeError> {
        let offset = self.pos;
        let word = self.words[offset];
        let rest = &self.words[offset + 1..];
        let header = Header::decode(word).map_err(|source| DecodeError::Header { offset, word, source })?;
        let body_dwords = match header {
            Header::Type0 { count, .. } => usize::from(count) + 1,
            Header::Type1 => return Err(DecodeError::Type1 { offset, word }),
            Header::Type2 => 0,
            Header::Type3(h) => h.body_dwords(),
        };
        let Some(body) = rest.get(..body_dwords) else {
            return Err(DecodeError::CountPastEnd { offset, word, body_dwords, available: rest.len() });
        };
        let packet = match header {
            Header::Type0 { base_reg, .. } => Packet::Type0 { base_reg, values: body },
            Header::Type3(h) => {
                packet::parse(h, body).map_err(|source| DecodeError::Packet { offset, opcode: h.opcode, source })?
            }
            Header::Type1 | Header::Type2 => Packet::Type2,
        };
        let end = offset + 1 + body_dwords;
        self.pos = end;
        Ok(Decoded { offset, words: &self.words[offset..end], packet })
    }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<Decoded<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped || self.pos >= self.words.len() {
            return None;
        }
        let item = self.step();
        if item.is_err() {
            self.stopped = true;
        }
        Some(item)
    }
}

impl core::iter::FusedIterator for Decoder<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn walks_filler_type0_and_type3() {
        let words = [0x8000_0000, 0x0001_2E40, 1, 2, 0xFFFF_1000, 0xC000_1000, 0xAA];
        let items: Vec<_> = Decoder::new(&words).collect();
        assert_eq!(items.len(), 4);
        assert_eq!(items[0].unwrap().packet, Packet::Type2);
        assert_eq!(items[1].unwrap().packet, Packet::Type0 { base_reg: 0x2E40, values: &[1, 2] });
        assert_eq!(items[2].unwrap().offset, 4);
        assert_eq!(items[2].unwrap().words.len(), 1);
        assert_eq!(items[3].unwrap().offset, 5);
        assert_eq!(items[3].unwrap().words, &[0xC000_1000, 0xAA]);
    }

    #[test]
    fn count_past_end_stops() {
        let words = [0xC003_1502, 1, 1];
        let mut d = Decoder::new(&words);
        assert_eq!(
            d.next(),
            Some(Err(DecodeError::CountPastEnd { offset: 0, word: 0xC003_1502, body_dwords: 4, available: 2 }))
        );
        assert_eq!(d.next(), None);
    }

    #[test]
    fn type1_is_an_error() {
        let err = Decoder::new(&[0x4000_0000]).next().unwrap().unwrap_err();
        assert_eq!(err.offset(), 0);
        assert!(matches!(err, DecodeError::Type1 { .. }));
    }
}
