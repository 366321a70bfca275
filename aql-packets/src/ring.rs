//! Ring arithmetic and the order in which a packet is written into its slot.
//!
//! See the crate documentation for why the header word goes last. The [`PacketSlot`] trait is the
//! seam: this crate decides the order (body, then one header-word release store), the
//! implementation (mapped queue memory in the daemon, a byte array in tests and simulators)
//! decides how each step reaches memory.

use static_assertions::{assert_eq_align, assert_eq_size, const_assert};
use zerocopy::little_endian::U32;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::PACKET_SIZE;
use crate::header::{Header, PacketControl, PacketType, header_word};

/// Bytes of the header word: the 16-bit header and the 16 bits after it.
pub const HEADER_WORD_SIZE: usize = 4;

/// Bytes of a packet after its header word.
pub const BODY_SIZE: usize = PACKET_SIZE - HEADER_WORD_SIZE;

/// The header word of an empty slot: `TYPE` = `INVALID`, everything else 0. A consumer resets a
/// slot to this before the slot is reused, so the packet processor does not run it again.
pub const INVALID_HEADER_WORD: u32 = header_word(Header::new(PacketType::Invalid, PacketControl::NONE).encode(), 0);

/// A packet split at the header word.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
struct SlotLayout {
    header_word: U32,
    body: [u8; BODY_SIZE],
}

assert_eq_size!(SlotLayout, [u8; PACKET_SIZE]);
assert_eq_align!(SlotLayout, u8);

/// Splits a packet into its body (bytes 4..64) and its header word (bytes 0..4 as a
/// little-endian `u32`: the header in bits `[15:0]`, `setup` or the AMD format in `[31:16]`).
#[must_use]
pub fn split_for_publish(packet: &[u8; PACKET_SIZE]) -> (&[u8; BODY_SIZE], u32) {
    let slot: &SlotLayout = zerocopy::transmute_ref!(packet);
    (&slot.body, slot.header_word.get())
}

/// A queue slot a packet can be published into.
///
/// [`publish`] calls [`PacketSlot::write_body`] once, then
/// [`PacketSlot::store_header_word_release`] once; implementations only have to make each step
/// reach memory the way its documentation says.
pub trait PacketSlot {
    /// Writes bytes 4..64 of the slot. Plain (non-atomic, unordered) stores are fine: nothing
    /// reads them before the header word says the packet is valid.
    fn write_body(&mut self, body: &[u8; BODY_SIZE]);

    /// Writes bytes 0..4 of the slot as ONE 32-bit atomic store with release ordering, so that
    /// every body byte is visible before a packet processor can see a valid `TYPE`. (ROCr also
    /// issues a store fence first when the ring is device memory written over PCIe.)
    fn store_header_word_release(&mut self, word: u32);
}

/// A slot in ordinary memory owned by the caller (tests, simulators, a ring snapshot): `&mut`
/// excludes every other observer, so plain stores satisfy the ordering.
impl PacketSlot for [u8; PACKET_SIZE] {
    fn write_body(&mut self, body: &[u8; BODY_SIZE]) {
        self[HEADER_WORD_SIZE..].copy_from_slice(body);
    }

    fn store_header_word_release(&mut self, word: u32) {
        self[..HEADER_WORD_SIZE].copy_from_slice(&word.to_le_bytes());
    }
}

/// Publishes `packet` into `slot`: first the body, then the header word in one release store.
pub fn publish<S: PacketSlot + ?Sized>(slot: &mut S, packet: &[u8; PACKET_SIZE]) {
    let (body, word) = split_for_publish(packet);
    slot.write_body(body);
    // ORDERING: the header word is stored last, with release ordering, in one 32-bit store: a
    // packet processor that sees a valid TYPE also sees the body written above, and it never
    // sees the new header with the old setup field (they share the word).
    slot.store_header_word_release(word);
}

/// Number of slots of an AQL ring: a power of two in 1..=2^31.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingSize {
    // INVARIANT: a power of two (so at least 1); u32 caps it at 2^31.
    slots: u32,
}

/// Why a slot count is not a ring size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RingSizeError {
    /// The count is 0 or not a power of two.
    #[error("a ring of {slots} slots: the size must be a power of two in 1..={max}")]
    NotPowerOfTwo {
        /// The count given.
        slots: u32,
        /// [`RingSize::MAX_SLOTS`].
        max: u32,
    },
}

// Slot indices (< 2^31) are returned as usize.
const_assert!(usize::BITS >= 32);

impl RingSize {
    /// The largest ring: 2^31 slots.
    pub const MAX_SLOTS: u32 = 1 << 31;

    /// A ring of `slots` slots.
    ///
    /// # Errors
    /// [`RingSizeError::NotPowerOfTwo`] for 0 and for counts that are not powers of two.
    pub const fn new(slots: u32) -> Result<Self, RingSizeError> {
        if slots.is_power_of_two() {
            Ok(Self { slots })
        } else {
            Err(RingSizeError::NotPowerOfTwo { slots, max: Self::MAX_SLOTS })
        }
    }

    /// Number of slots.
    #[must_use]
    pub const fn slots(self) -> u32 {
        self.slots
    }

    /// Size of the ring in bytes.
    #[must_use]
    pub const fn byte_len(self) -> u64 {
        self.slots as u64 * PACKET_SIZE as u64
    }

    /// Index of the slot that packet `packet_id` occupies: `packet_id mod slots`.
    #[must_use]
    pub const fn slot_index(self, packet_id: u64) -> usize {
        // CAST: masked below 2^31, and usize has at least 32 bits (asserted above).
        #[allow(clippy::cast_possible_truncation)]
        let index = (packet_id & (self.slots as u64 - 1)) as usize;
        index
    }

    /// Byte offset of packet `packet_id`'s slot from the ring base.
    #[must_use]
    pub const fn slot_byte_offset(self, packet_id: u64) -> u64 {
        (packet_id & (self.slots as u64 - 1)) * PACKET_SIZE as u64
    }

    /// Whether a producer at `write_id` must wait: the slot it would write still holds a packet
    /// the consumer at `read_id` has not finished (`write_id - read_id >= slots`).
    #[must_use]
    pub const fn is_full(self, write_id: u64, read_id: u64) -> bool {
        write_id.wrapping_sub(read_id) >= self.slots as u64
    }
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use super::*;

    #[test]
    fn invalid_header_word_is_type_one() {
        assert_eq!(INVALID_HEADER_WORD, 0x0000_0001);
    }

    #[test]
    fn split_is_at_byte_four() {
        let mut packet = [0u8; PACKET_SIZE];
        for (i, b) in packet.iter_mut().enumerate() {
            *b = u8::try_from(i).unwrap();
        }
        let (body, word) = split_for_publish(&packet);
        assert_eq!(word, 0x0302_0100);
        assert_eq!(body[0], 4);
        assert_eq!(body[BODY_SIZE - 1], 63);
    }

    #[derive(Debug, PartialEq, Eq)]
    enum Write {
        Body(Vec<u8>),
        Header(u32),
    }

    #[derive(Default)]
    struct Recorder(Vec<Write>);

    impl PacketSlot for Recorder {
        fn write_body(&mut self, body: &[u8; BODY_SIZE]) {
            self.0.push(Write::Body(body.to_vec()));
        }
        fn store_header_word_release(&mut self, word: u32) {
            self.0.push(Write::Header(word));
        }
    }

    #[test]
    fn publish_writes_body_then_one_header_store() {
        let mut packet = [0xAB; PACKET_SIZE];
        packet[..4].copy_from_slice(&[0x02, 0x15, 0x03, 0x00]);
        let mut rec = Recorder::default();
        publish(&mut rec, &packet);
        assert_eq!(rec.0, [Write::Body([0xAB; BODY_SIZE].to_vec()), Write::Header(0x0003_1502)]);
    }

    #[test]
    fn publish_into_array() {
        let mut slot = [0u8; PACKET_SIZE];
        slot[..4].copy_from_slice(&INVALID_HEADER_WORD.to_le_bytes());
        let packet = [0x5A; PACKET_SIZE];
        publish(&mut slot, &packet);
        assert_eq!(slot, packet);
    }

    #[test]
    fn ring_literals() {
        let ring = RingSize::new(8).unwrap();
        assert_eq!(ring.slot_index(9), 1);
        assert_eq!(ring.slot_byte_offset(9), 64);
        assert_eq!(ring.slot_byte_offset(15), 7 * 64);
        assert_eq!(ring.byte_len(), 512);
        assert!(!ring.is_full(7, 0));
        assert!(ring.is_full(8, 0));
        assert!(!ring.is_full(2, u64::MAX - 2)); // ids wrapped: 5 in flight
        assert_eq!(RingSize::new(0), Err(RingSizeError::NotPowerOfTwo { slots: 0, max: 1 << 31 }));
        assert_eq!(RingSize::new(12), Err(RingSizeError::NotPowerOfTwo { slots: 12, max: 1 << 31 }));
        assert_eq!(RingSize::new(1 << 31).unwrap().slot_index(u64::MAX), (1 << 31) - 1);
        assert_eq!(RingSize::new(1).unwrap().slot_index(u64::MAX), 0);
    }
}
