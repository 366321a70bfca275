//! `hsa_agent_dispatch_packet_t`: ask an agent to run an application-defined function.
//!
//! Layout: `reference/amd-reference.md` §5 "hsa_agent_dispatch_packet_t".

use core::mem::offset_of;

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::decode::DecodeError;
use crate::header::{Header, PacketControl, PacketType};

/// Number of 64-bit arguments an agent dispatch packet carries.
pub const AGENT_ARGS: usize = 4;

/// The 64-byte agent dispatch packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct AgentDispatchPacket {
    /// AQL header; `TYPE` = [`PacketType::AgentDispatch`].
    pub header: U16,
    /// Application-defined function code (`type` in HSA).
    pub r#type: U16,
    /// Reserved, 0.
    pub reserved0: U32,
    /// Where the function stores its result.
    pub return_address: U64,
    /// Function arguments.
    pub arg: [U64; AGENT_ARGS],
    /// Reserved, 0.
    pub reserved2: U64,
    /// Completion signal handle; 0 = none.
    pub completion_signal: U64,
}

// Reference §5 "hsa_agent_dispatch_packet_t".
assert_eq_size!(AgentDispatchPacket, [u8; 64]);
assert_eq_align!(AgentDispatchPacket, u8);
const_assert_eq!(offset_of!(AgentDispatchPacket, header), 0);
const_assert_eq!(offset_of!(AgentDispatchPacket, r#type), 2);
const_assert_eq!(offset_of!(AgentDispatchPacket, reserved0), 4);
const_assert_eq!(offset_of!(AgentDispatchPacket, return_address), 8);
const_assert_eq!(offset_of!(AgentDispatchPacket, arg), 16);
assert_eq_size!([U64; AGENT_ARGS], [u8; 32]);
const_assert_eq!(offset_of!(AgentDispatchPacket, reserved2), 48);
const_assert_eq!(offset_of!(AgentDispatchPacket, completion_signal), 56);

crate::packet_bytes!(AgentDispatchPacket);

/// The typed fields of an agent dispatch packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct AgentDispatch {
    /// Barrier bit and fence scopes.
    pub control: PacketControl,
    /// The packet's `type` field: the application-defined function code.
    pub function: u16,
    /// Where the function stores its result.
    pub return_address: u64,
    /// Function arguments.
    pub arg: [u64; AGENT_ARGS],
    /// Completion signal handle; 0 = none.
    pub completion_signal: u64,
}

impl AgentDispatchPacket {
    /// The packet for `dispatch`.
    #[must_use]
    pub fn new(dispatch: &AgentDispatch) -> Self {
        Self {
            header: U16::new(Header::new(PacketType::AgentDispatch, dispatch.control).encode()),
            r#type: U16::new(dispatch.function),
            reserved0: U32::ZERO,
            return_address: U64::new(dispatch.return_address),
            arg: dispatch.arg.map(U64::new),
            reserved2: U64::ZERO,
            completion_signal: U64::new(dispatch.completion_signal),
        }
    }

    /// Reads the typed fields.
    ///
    /// # Errors
    /// [`DecodeError`] for an invalid header, a header of another type, or a non-zero reserved
    /// field.
    pub fn parse(&self) -> Result<AgentDispatch, DecodeError> {
        let header = Header::decode(self.header.get())?;
        DecodeError::expect_type(header, PacketType::AgentDispatch)?;
        DecodeError::reserved("reserved0", offset_of!(Self, reserved0), self.reserved0.get().into())?;
        DecodeError::reserved("reserved2", offset_of!(Self, reserved2), self.reserved2.get())?;
        Ok(AgentDispatch {
            control: header.control,
            function: self.r#type.get(),
            return_address: self.return_address.get(),
            arg: self.arg.map(U64::get),
            completion_signal: self.completion_signal.get(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::FenceScope;

    fn dispatch() -> AgentDispatch {
        AgentDispatch {
            control: PacketControl { barrier: false, acquire: FenceScope::None, release: FenceScope::Agent },
            function: 0x1234,
            return_address: 0x1000,
            arg: [1, 2, 3, 4],
            completion_signal: 9,
        }
    }

    // By hand from the §5 offsets: header = 4 | 1<<11 = 0x0804.
    #[rustfmt::skip]
    const BYTES: [u8; 64] = [
        0x04, 0x08, 0x34, 0x12, 0x00, 0x00, 0x00, 0x00, // header, type, reserved0
        0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // return_address
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // arg[0]
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // arg[1]
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // arg[2]
        0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // arg[3]
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved2
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // completion_signal
    ];

    #[test]
    fn literal_bytes() {
        let p = AgentDispatchPacket::new(&dispatch());
        assert_eq!(p.as_array(), &BYTES);
        assert_eq!(p.header_word(), 0x1234_0804);
        assert_eq!(AgentDispatchPacket::from_array(&BYTES).parse(), Ok(dispatch()));
    }

    #[test]
    fn rejects_reserved() {
        let mut b = BYTES;
        b[48] = 1;
        assert_eq!(
            AgentDispatchPacket::from_array(&b).parse(),
            Err(DecodeError::Reserved { field: "reserved2", offset: 48, value: 1 })
        );
    }
}
