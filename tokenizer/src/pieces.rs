//! Storage for a vocabulary of a quarter million pieces: the strings in one buffer with end
//! offsets (two allocations instead of one per piece), and an open-addressing piece → id table
//! over that buffer (8 bytes a slot, half full: 4 MiB for Gemma 3, where a `HashMap<String, u32>`
//! takes 32 bytes a slot and one allocation per key; building it is the main cost of loading a
//! vocabulary, see the Gemma 3 reference test).
//!
//! The table's keys are the vocabulary's own pieces, fixed when the tokenizer is built; text being
//! encoded only looks keys up, so it cannot lengthen a probe sequence, and a keyed (SipHash) hash
//! buys nothing here while costing a good part of the encode time.

use std::hash::Hasher;

/// A multiply-rotate word hash (the construction of rustc's FxHasher) with a final avalanche
/// (MurmurHash3's `fmix64`), so that the low bits the table indexes with depend on every input bit.
#[derive(Debug, Default, Clone, Copy)]
struct PieceHasher {
    hash: u64,
}

/// FxHasher's odd multiplier (from the golden ratio).
const MULTIPLIER: u64 = 0x517c_c1b7_2722_0a95;

impl PieceHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for PieceHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut le = [0u8; 8];
            le.copy_from_slice(word);
            self.add(u64::from_le_bytes(le));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut le = [0u8; 8];
            le[..rest.len()].copy_from_slice(rest);
            // The length keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(le) ^ (u64::from(rest.len().to_le_bytes()[0]) << 56));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    fn finish(&self) -> u64 {
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// Byte strings stored back to back; piece `i` is `data[ends[i - 1]..ends[i]]`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pieces {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Pieces {
    pub(crate) fn with_capacity(pieces: usize, bytes: usize) -> Self {
        Self { data: Vec::with_capacity(bytes), ends: Vec::with_capacity(pieces) }
    }

    pub(crate) fn push(&mut self, piece: &[u8]) {
        self.data.extend_from_slice(piece);
        self.ends.push(self.data.len());
    }

    /// The bytes of all pieces together.
    pub(crate) fn total_len(&self) -> usize {
        self.data.len()
    }

    /// The length of the longest piece.
    pub(crate) fn max_len(&self) -> usize {
        let mut start = 0;
        let mut longest = 0;
        for &end in &self.ends {
            longest = longest.max(end - start);
            start = end;
        }
        longest
    }

    /// Piece `index`, or `None` past the end.
    pub(crate) fn get(&self, index: usize) -> Option<&[u8]> {
        let end = *self.ends.get(index)?;
        let start = match index.checked_sub(1) {
            Some(before) => self.ends[before],
            None => 0,
        };
        self.data.get(start..end)
    }

    /// Piece `index` as text (empty past the end, or if the piece is not UTF-8, which never
    /// happens for pieces pushed from `&str`).
    pub(crate) fn text(&self, index: usize) -> &str {
        self.get(index).and_then(|piece| std::str::from_utf8(piece).ok()).unwrap_or("")
    }
}

/// The hash of a piece.
fn hash(piece: &[u8]) -> u64 {
    let mut h = PieceHasher::default();
    h.write(piece);
    h.finish()
}

/// An empty slot (ids are below `u32::MAX`).
const EMPTY: u32 = u32::MAX;

/// One slot of the table: an id, and the high half of its piece's hash to skip most
/// comparisons with other pieces.
#[derive(Debug, Clone, Copy)]
struct Slot {
    id: u32,
    tag: u32,
}

/// Pieces by id, and ids by piece.
#[derive(Debug, Clone, Default)]
pub(crate) struct PieceIndex {
    pieces: Pieces,
    /// A power of two in length, at most half full; linear probing.
    slots: Vec<Slot>,
}

impl PieceIndex {
    /// An empty index with room for `pieces` pieces of `bytes` bytes in all.
    pub(crate) fn with_capacity(pieces: usize, bytes: usize) -> Self {
        let slots = pieces.saturating_mul(2).next_power_of_two().max(16);
        Self { pieces: Pieces::with_capacity(pieces, bytes), slots: vec![Slot { id: EMPTY, tag: 0 }; slots] }
    }

    /// Number of pieces.
    pub(crate) fn len(&self) -> usize {
        self.pieces.ends.len()
    }

    /// Adds `piece` with the next id and returns that id, or the id it already has (nothing added).
    /// The caller keeps the count below `u32::MAX`.
    pub(crate) fn push(&mut self, piece: &str) -> Result<u32, u32> {
        if (self.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let h = hash(piece.as_bytes());
        let slot = match self.find(piece.as_bytes(), h) {
            Ok(existing) => return Err(existing),
            Err(slot) => slot,
        };
        // CAST: the caller keeps the count below u32::MAX.
        let id = u32::try_from(self.len()).unwrap_or(EMPTY);
        self.pieces.push(piece.as_bytes());
        self.slots[slot] = Slot { id, tag: tag(h) };
        Ok(id)
    }

    /// The id of `piece`, if it is one.
    pub(crate) fn id(&self, piece: &str) -> Option<u32> {
        self.find(piece.as_bytes(), hash(piece.as_bytes())).ok()
    }

    /// Piece `index`, or `None` past the end.
    pub(crate) fn get(&self, index: usize) -> Option<&[u8]> {
        self.pieces.get(index)
    }

    /// Piece `index` as text (empty past the end).
    pub(crate) fn text(&self, index: usize) -> &str {
        self.pieces.text(index)
    }

    /// The bytes of all pieces together.
    pub(crate) fn total_len(&self) -> usize {
        self.pieces.total_len()
    }

    /// The length of the longest piece.
    pub(crate) fn max_len(&self) -> usize {
        self.pieces.max_len()
    }

    /// The id of `piece` (hash `h`), or the empty slot where it would go.
    fn find(&self, piece: &[u8], h: u64) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        // CAST: the low bits index the table; truncation is the point.
        let mut at = usize::try_from(h & u64::from(u32::MAX)).unwrap_or(0) & mask;
        let tag = tag(h);
        loop {
            let slot = self.slots[at];
            if slot.id == EMPTY {
                return Err(at);
            }
            if slot.tag == tag && self.pieces.get(index_of(slot.id)) == Some(piece) {
                return Ok(slot.id);
            }
            at = (at + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(16);
        self.slots = vec![Slot { id: EMPTY, tag: 0 }; size];
        let mask = size - 1;
        for index in 0..self.len() {
            let h = hash(self.pieces.get(index).unwrap_or_default());
            let mut at = usize::try_from(h & u64::from(u32::MAX)).unwrap_or(0) & mask;
            while self.slots[at].id != EMPTY {
                at = (at + 1) & mask;
            }
            // CAST: index < len, below u32::MAX.
            self.slots[at] = Slot { id: u32::try_from(index).unwrap_or(EMPTY), tag: tag(h) };
        }
    }
}

fn tag(h: u64) -> u32 {
    // CAST: the high half of the hash; truncation is the point.
    u32::try_from(h >> 32).unwrap_or(0)
}

fn index_of(id: u32) -> usize {
    usize::try_from(id).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_round_trip() {
        let mut p = Pieces::default();
        for piece in ["a", "", "▁b", "<0x0A>"] {
            p.push(piece.as_bytes());
        }
        assert_eq!(p.get(0), Some(&b"a"[..]));
        assert_eq!(p.get(1), Some(&b""[..]));
        assert_eq!(p.text(2), "▁b");
        assert_eq!(p.text(3), "<0x0A>");
        assert_eq!(p.get(4), None);
    }

    #[test]
    fn hash_separates_lengths_and_tails() {
        let hashes: Vec<u64> =
            ["", "a", "a\0", "ab", "abcdefgh", "abcdefgh\0", "abcdefghi"].iter().map(|s| hash(s.as_bytes())).collect();
        let mut unique = hashes.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), hashes.len());
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;

    #[test]
    fn ids_and_duplicates() {
        // Start small so that pushing grows the table several times.
        let mut index = PieceIndex::with_capacity(0, 0);
        let words: Vec<String> = (0..1000).map(|i| format!("w{i}")).collect();
        for (i, w) in words.iter().enumerate() {
            assert_eq!(index.push(w), Ok(u32::try_from(i).unwrap()));
        }
        assert_eq!(index.push("w17"), Err(17));
        assert_eq!(index.len(), 1000);
        for (i, w) in words.iter().enumerate() {
            assert_eq!(index.id(w), Some(u32::try_from(i).unwrap()));
            assert_eq!(index.text(i), w);
        }
        assert_eq!(index.id("w1000"), None);
        assert_eq!(index.id(""), None);
    }
}
