//! `hsa_barrier_and_packet_t` and `hsa_barrier_or_packet_t`: wait for dependency signals.
//!
//! Layout: `reference/amd-reference.md` §5 "hsa_barrier_and_packet_t"; the OR packet is
//! identical ("hsa_barrier_or_packet_t") and differs only in `TYPE` and meaning (any dependency
//! instead of all). They are distinct types so that one cannot be written where the other was
//! meant.

use core::mem::offset_of;

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::decode::DecodeError;
use crate::header::{Header, PacketControl, PacketType};

/// Number of dependency signals a barrier packet holds.
pub const DEP_SIGNALS: usize = 5;

macro_rules! barrier_packet {
    ($name:ident, $packet_type:expr) => {
        // Reference §5 "hsa_barrier_and_packet_t" / "hsa_barrier_or_packet_t".
        assert_eq_size!($name, [u8; 64]);
        assert_eq_align!($name, u8);
        const_assert_eq!(offset_of!($name, header), 0);
        const_assert_eq!(offset_of!($name, reserved0), 2);
        const_assert_eq!(offset_of!($name, reserved1), 4);
        const_assert_eq!(offset_of!($name, dep_signal), 8);
        assert_eq_size!([U64; DEP_SIGNALS], [u8; 40]);
        const_assert_eq!(offset_of!($name, reserved2), 48);
        const_assert_eq!(offset_of!($name, completion_signal), 56);

        crate::packet_bytes!($name);

        impl $name {
            /// The packet for `barrier`.
            #[must_use]
            pub fn new(barrier: &Barrier) -> Self {
                Self {
                    header: U16::new(Header::new($packet_type, barrier.control).encode()),
                    reserved0: U16::ZERO,
                    reserved1: U32::ZERO,
                    dep_signal: barrier.dep_signal.map(U64::new),
                    reserved2: U64::ZERO,
                    completion_signal: U64::new(barrier.completion_signal),
                }
            }

            /// Reads the typed fields.
            ///
            /// # Errors
            /// [`DecodeError`] for an invalid header, a header of another type, or a non-zero
            /// reserved field.
            pub fn parse(&self) -> Result<Barrier, DecodeError> {
                let header = Header::decode(self.header.get())?;
                DecodeError::expect_type(header, $packet_type)?;
                DecodeError::reserved("reserved0", offset_of!($name, reserved0), self.reserved0.get().into())?;
                DecodeError::reserved("reserved1", offset_of!($name, reserved1), self.reserved1.get().into())?;
                DecodeError::reserved("reserved2", offset_of!($name, reserved2), self.reserved2.get())?;
                Ok(Barrier {
                    control: header.control,
                    dep_signal: self.dep_signal.map(U64::get),
                    completion_signal: self.completion_signal.get(),
                })
            }
        }
    };
}

/// The 64-byte barrier-AND packet: waits until every dependency signal is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct BarrierAndPacket {
    /// AQL header; `TYPE` = [`PacketType::BarrierAnd`].
    pub header: U16,
    /// Reserved, 0.
    pub reserved0: U16,
    /// Reserved, 0.
    pub reserved1: U32,
    /// Dependency signal handles; 0 = unused.
    pub dep_signal: [U64; DEP_SIGNALS],
    /// Reserved, 0.
    pub reserved2: U64,
    /// Completion signal handle; 0 = none.
    pub completion_signal: U64,
}

barrier_packet!(BarrierAndPacket, PacketType::BarrierAnd);

/// The 64-byte barrier-OR packet: waits until any dependency signal is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct BarrierOrPacket {
    /// AQL header; `TYPE` = [`PacketType::BarrierOr`].
    pub header: U16,
    /// Reserved, 0.
    pub reserved0: U16,
    /// Reserved, 0.
    pub reserved1: U32,
    /// Dependency signal handles; 0 = unused.
    pub dep_signal: [U64; DEP_SIGNALS],
    /// Reserved, 0.
    pub reserved2: U64,
    /// Completion signal handle; 0 = none.
    pub completion_signal: U64,
}

barrier_packet!(BarrierOrPacket, PacketType::BarrierOr);

/// The typed fields of a barrier-AND or barrier-OR packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Barrier {
    /// Barrier bit and fence scopes.
    pub control: PacketControl,
    /// Dependency signal handles; 0 = unused slot.
    pub dep_signal: [u64; DEP_SIGNALS],
    /// Completion signal handle; 0 = none.
    pub completion_signal: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::FenceScope;

    fn barrier() -> Barrier {
        Barrier {
            control: PacketControl { barrier: true, acquire: FenceScope::Agent, release: FenceScope::System },
            dep_signal: [1, 2, 0, 0, 0x1122_3344_5566_7788],
            completion_signal: 0,
        }
    }

    // By hand from the §5 offsets: header = type | 1<<8 | 1<<9 | 2<<11 = 0x1300 | type.
    #[rustfmt::skip]
    const fn bytes(packet_type: u8) -> [u8; 64] {
        [
            packet_type, 0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // header, reserved0, reserved1
            0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // dep_signal[0]
            0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // dep_signal[1]
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // dep_signal[2]
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // dep_signal[3]
            0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,        // dep_signal[4]
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // reserved2
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // completion_signal
        ]
    }

    #[test]
    fn and_literal_bytes() {
        let p = BarrierAndPacket::new(&barrier());
        assert_eq!(p.as_array(), &bytes(3));
        assert_eq!(p.header_word(), 0x0000_1303);
        assert_eq!(BarrierAndPacket::from_array(&bytes(3)).parse(), Ok(barrier()));
    }

    #[test]
    fn or_literal_bytes() {
        let p = BarrierOrPacket::new(&barrier());
        assert_eq!(p.as_array(), &bytes(5));
        assert_eq!(BarrierOrPacket::from_array(&bytes(5)).parse(), Ok(barrier()));
    }

    #[test]
    fn rejects_wrong_type_and_reserved() {
        assert_eq!(
            BarrierOrPacket::from_array(&bytes(3)).parse(),
            Err(DecodeError::WrongType { expected: PacketType::BarrierOr, found: PacketType::BarrierAnd })
        );
        let mut b = bytes(3);
        b[7] = 0x01;
        assert_eq!(
            BarrierAndPacket::from_array(&b).parse(),
            Err(DecodeError::Reserved { field: "reserved1", offset: 4, value: 0x0100_0000 })
        );
        let mut b = bytes(5);
        b[3] = 0xFF;
        assert_eq!(
            BarrierOrPacket::from_array(&b).parse(),
            Err(DecodeError::Reserved { field: "reserved0", offset: 2, value: 0xFF00 })
        );
    }
}
