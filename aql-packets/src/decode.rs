//! Decoding one 64-byte queue slot into a typed packet.
//!
//! [`decode`] never panics: every 64-byte pattern is either a packet or a [`DecodeError`]. The
//! decoder is strict (reserved fields must be zero), so every packet it accepts re-encodes to the
//! same bytes with [`AqlPacket::to_bytes`].

use core::mem::offset_of;

use pm4_encoding::packet::PacketError;
use pm4_encoding::{HeaderError as Pm4HeaderError, Opcode};

use crate::PACKET_SIZE;
use crate::agent_dispatch::{AgentDispatch, AgentDispatchPacket};
use crate::barrier::{Barrier, BarrierAndPacket, BarrierOrPacket};
use crate::header::{AmdFormat, Header, HeaderError, PacketControl, PacketType, SetupError, raw_packet_type};
use crate::kernel_dispatch::{KernelDispatch, KernelDispatchPacket};
use crate::ring::INVALID_HEADER_WORD;
use crate::vendor::{AmdBarrierValue, AmdBarrierValuePacket, AmdPm4Ib, AmdPm4IbPacket, AmdVendorHeader};

/// Why 64 bytes are not a valid AQL packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// [`decode_slice`] got a slice that is not one packet long.
    #[error("AQL packet is {found} bytes, expected {expected}")]
    Length {
        /// The slice length.
        found: usize,
        /// [`PACKET_SIZE`].
        expected: usize,
    },
    /// The 16-bit header is invalid.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// The kernel-dispatch `setup` field is invalid.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A packet struct's `parse` was called on a packet of another type.
    #[error("expected a {} packet, found {}", expected.name(), found.name())]
    WrongType {
        /// The type the struct describes.
        expected: PacketType,
        /// The type in the header.
        found: PacketType,
    },
    /// A vendor-specific packet whose AMD format this crate does not decode.
    #[error("AMD vendor packet format {format:?} is not supported")]
    UnsupportedAmdFormat {
        /// The format found.
        format: AmdFormat,
    },
    /// A vendor packet struct's `parse` was called on a packet of another AMD format.
    #[error("expected AMD vendor format {expected:?}, found {found:?}")]
    WrongAmdFormat {
        /// The format the struct describes.
        expected: AmdFormat,
        /// The format found.
        found: AmdFormat,
    },
    /// A reserved field is not zero.
    #[error("reserved field {field} at byte {offset} is {value:#x}, expected 0")]
    Reserved {
        /// The field name from the reference table.
        field: &'static str,
        /// Byte offset of the field (of the non-zero element, for arrays).
        offset: usize,
        /// The field's value.
        value: u64,
    },
    /// `ib_jump_cmd[0]` is not a valid PM4 type-3 header.
    #[error("ib_jump_cmd header {word:#010x}: {source}")]
    IbHeader {
        /// The header word.
        word: u32,
        /// What is wrong with it.
        source: Pm4HeaderError,
    },
    /// `ib_jump_cmd` holds another PM4 packet than `INDIRECT_BUFFER`.
    #[error("ib_jump_cmd holds {opcode}, expected INDIRECT_BUFFER")]
    IbOpcode {
        /// The opcode found.
        opcode: Opcode,
    },
    /// The `INDIRECT_BUFFER` header announces another body length than the packet has.
    #[error("ib_jump_cmd INDIRECT_BUFFER has COUNT {count}, expected {expected}")]
    IbCount {
        /// `COUNT` found.
        count: u16,
        /// `COUNT` of `INDIRECT_BUFFER`.
        expected: u16,
    },
    /// The `INDIRECT_BUFFER` body is invalid.
    #[error("ib_jump_cmd: {source}")]
    IbBody {
        /// What `INDIRECT_BUFFER` rejected.
        source: PacketError,
    },
    /// `dw_cnt_remain` of a PM4-IB packet is not 10.
    #[error("dw_cnt_remain is {found:#x}, expected {expected:#x}")]
    DwCntRemain {
        /// The value found.
        found: u32,
        /// [`crate::vendor::PM4_IB_DW_CNT_REMAIN`].
        expected: u32,
    },
    /// The barrier-value `cond` is not a signal condition.
    #[error("barrier-value cond {value} is not a signal condition")]
    SignalCondition {
        /// The raw `cond` field.
        value: u32,
    },
}

impl DecodeError {
    /// `Ok` when `header` is of `expected` type.
    pub(crate) const fn expect_type(header: Header, expected: PacketType) -> Result<(), Self> {
        if header.packet_type as u8 == expected as u8 {
            Ok(())
        } else {
            Err(DecodeError::WrongType { expected, found: header.packet_type })
        }
    }

    /// `Ok` when the reserved field is zero.
    pub(crate) const fn reserved(field: &'static str, offset: usize, value: u64) -> Result<(), Self> {
        if value == 0 { Ok(()) } else { Err(DecodeError::Reserved { field, offset, value }) }
    }
}

/// A decoded queue slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AqlPacket {
    /// `TYPE` = `INVALID`: an empty slot. The rest of its bytes are stale and not inspected.
    Invalid,
    /// A kernel dispatch.
    KernelDispatch(KernelDispatch),
    /// A barrier-AND packet.
    BarrierAnd(Barrier),
    /// A barrier-OR packet.
    BarrierOr(Barrier),
    /// An agent dispatch.
    AgentDispatch(AgentDispatch),
    /// An AMD PM4-IB packet, with its decoded `INDIRECT_BUFFER`.
    AmdPm4Ib(AmdPm4Ib),
    /// An AMD barrier-value packet.
    AmdBarrierValue(AmdBarrierValue),
}

impl AqlPacket {
    /// The packet's `TYPE`.
    #[must_use]
    pub const fn packet_type(&self) -> PacketType {
        match self {
            AqlPacket::Invalid => PacketType::Invalid,
            AqlPacket::KernelDispatch(_) => PacketType::KernelDispatch,
            AqlPacket::BarrierAnd(_) => PacketType::BarrierAnd,
            AqlPacket::BarrierOr(_) => PacketType::BarrierOr,
            AqlPacket::AgentDispatch(_) => PacketType::AgentDispatch,
            AqlPacket::AmdPm4Ib(_) | AqlPacket::AmdBarrierValue(_) => PacketType::VendorSpecific,
        }
    }

    /// The AMD format of a vendor packet.
    #[must_use]
    pub const fn amd_format(&self) -> Option<AmdFormat> {
        match self {
            AqlPacket::AmdPm4Ib(_) => Some(AmdFormat::Pm4Ib),
            AqlPacket::AmdBarrierValue(_) => Some(AmdFormat::BarrierValue),
            _ => None,
        }
    }

    /// Barrier bit and fence scopes; `None` for an empty slot.
    #[must_use]
    pub const fn control(&self) -> Option<PacketControl> {
        Some(match self {
            AqlPacket::Invalid => return None,
            AqlPacket::KernelDispatch(p) => p.control,
            AqlPacket::BarrierAnd(p) | AqlPacket::BarrierOr(p) => p.control,
            AqlPacket::AgentDispatch(p) => p.control,
            AqlPacket::AmdPm4Ib(p) => p.control,
            AqlPacket::AmdBarrierValue(p) => p.control,
        })
    }

    /// The completion signal handle (0 = none); `None` for an empty slot.
    #[must_use]
    pub const fn completion_signal(&self) -> Option<u64> {
        Some(match self {
            AqlPacket::Invalid => return None,
            AqlPacket::KernelDispatch(p) => p.completion_signal,
            AqlPacket::BarrierAnd(p) | AqlPacket::BarrierOr(p) => p.completion_signal,
            AqlPacket::AgentDispatch(p) => p.completion_signal,
            AqlPacket::AmdPm4Ib(p) => p.completion_signal,
            AqlPacket::AmdBarrierValue(p) => p.completion_signal,
        })
    }

    /// The packet's 64 bytes. An empty slot encodes as [`INVALID_HEADER_WORD`] followed by zeros.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; PACKET_SIZE] {
        match self {
            AqlPacket::Invalid => {
                let mut bytes = [0; PACKET_SIZE];
                bytes[..4].copy_from_slice(&INVALID_HEADER_WORD.to_le_bytes());
                bytes
            }
            AqlPacket::KernelDispatch(p) => *p.emit().as_array(),
            AqlPacket::BarrierAnd(p) => *BarrierAndPacket::new(p).as_array(),
            AqlPacket::BarrierOr(p) => *BarrierOrPacket::new(p).as_array(),
            AqlPacket::AgentDispatch(p) => *AgentDispatchPacket::new(p).as_array(),
            AqlPacket::AmdPm4Ib(p) => *p.emit().as_array(),
            AqlPacket::AmdBarrierValue(p) => *AmdBarrierValuePacket::new(p).as_array(),
        }
    }
}

/// Decodes one queue slot.
///
/// A slot whose `TYPE` byte is `INVALID` decodes as [`AqlPacket::Invalid`] whatever its other
/// bytes hold. Otherwise the header is checked (reserved bits, type, fence scopes), then the
/// packet's own fields.
///
/// # Errors
/// [`DecodeError`] naming the first invalid field.
pub fn decode(bytes: &[u8; PACKET_SIZE]) -> Result<AqlPacket, DecodeError> {
    let raw_header = u16::from_le_bytes([bytes[0], bytes[1]]);
    if raw_packet_type(raw_header) == PacketType::Invalid.to_u8() {
        return Ok(AqlPacket::Invalid);
    }
    let header = Header::decode(raw_header)?;
    Ok(match header.packet_type {
        PacketType::Invalid => AqlPacket::Invalid,
        PacketType::KernelDispatch => AqlPacket::KernelDispatch(KernelDispatchPacket::from_array(bytes).parse()?),
        PacketType::BarrierAnd => AqlPacket::BarrierAnd(BarrierAndPacket::from_array(bytes).parse()?),
        PacketType::BarrierOr => AqlPacket::BarrierOr(BarrierOrPacket::from_array(bytes).parse()?),
        PacketType::AgentDispatch => AqlPacket::AgentDispatch(AgentDispatchPacket::from_array(bytes).parse()?),
        PacketType::VendorSpecific => decode_vendor(bytes)?,
    })
}

fn decode_vendor(bytes: &[u8; PACKET_SIZE]) -> Result<AqlPacket, DecodeError> {
    // PANIC: a constant index inside the 64-byte array.
    match AmdFormat::from_u8(bytes[offset_of!(AmdVendorHeader, amd_format)]) {
        AmdFormat::Pm4Ib => Ok(AqlPacket::AmdPm4Ib(AmdPm4IbPacket::from_array(bytes).parse()?)),
        AmdFormat::BarrierValue => Ok(AqlPacket::AmdBarrierValue(AmdBarrierValuePacket::from_array(bytes).parse()?)),
        format @ (AmdFormat::AieErt | AmdFormat::Unknown(_)) => Err(DecodeError::UnsupportedAmdFormat { format }),
    }
}

/// Decodes one queue slot from a slice, the entry point for fuzzing and for bytes read from a
/// file.
///
/// # Errors
/// [`DecodeError::Length`] unless `bytes` is exactly [`PACKET_SIZE`] long; otherwise as
/// [`decode`].
pub fn decode_slice(bytes: &[u8]) -> Result<AqlPacket, DecodeError> {
    let bytes: &[u8; PACKET_SIZE] =
        bytes.try_into().map_err(|_| DecodeError::Length { found: bytes.len(), expected: PACKET_SIZE })?;
    decode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{Dimensions, FenceScope};

    #[test]
    fn empty_slot() {
        let mut bytes = [0xFF; PACKET_SIZE];
        bytes[0] = 0x01;
        assert_eq!(decode(&bytes), Ok(AqlPacket::Invalid));
        let bytes = AqlPacket::Invalid.to_bytes();
        assert_eq!(&bytes[..4], &[0x01, 0x00, 0x00, 0x00]);
        assert_eq!(decode(&bytes), Ok(AqlPacket::Invalid));
    }

    #[test]
    fn dispatches_on_type() {
        // Kernel dispatch: header 0x0002 (no barrier, no fences), setup 1, sizes 1, kernel object 0x40.
        let mut bytes = [0u8; PACKET_SIZE];
        bytes[..12].copy_from_slice(&[0x02, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00]);
        bytes[12..24].copy_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
        bytes[32] = 0x40;
        let AqlPacket::KernelDispatch(d) = decode(&bytes).unwrap() else { panic!("not a kernel dispatch") };
        assert_eq!(d.dimensions, Dimensions::One);
        assert_eq!(d.kernel_object, 0x40);
        assert_eq!(d.control, PacketControl::NONE);

        // Barrier-OR, all zero but the type: header 0x0005.
        let mut bytes = [0u8; PACKET_SIZE];
        bytes[0] = 0x05;
        assert_eq!(decode(&bytes), Ok(AqlPacket::BarrierOr(Barrier::default())));
        bytes[0] = 0x03;
        assert_eq!(decode(&bytes), Ok(AqlPacket::BarrierAnd(Barrier::default())));
        bytes[0] = 0x04;
        assert_eq!(decode(&bytes), Ok(AqlPacket::AgentDispatch(AgentDispatch::default())));
    }

    #[test]
    fn errors() {
        let mut bytes = [0u8; PACKET_SIZE];
        bytes[0] = 0x06;
        assert_eq!(decode(&bytes), Err(HeaderError::UnknownPacketType { packet_type: 6 }.into()));
        bytes[0] = 0x02; // kernel dispatch with setup 0
        assert_eq!(decode(&bytes), Err(SetupError::InvalidDimensions { dimensions: 0 }.into()));
        bytes[0] = 0x00; // vendor packet, format 0
        assert_eq!(decode(&bytes), Err(DecodeError::UnsupportedAmdFormat { format: AmdFormat::Unknown(0) }));
        bytes[2] = 0x03;
        assert_eq!(decode(&bytes), Err(DecodeError::UnsupportedAmdFormat { format: AmdFormat::AieErt }));
        bytes[2] = 0x01; // PM4-IB with a zero ib_jump_cmd: type-0 PM4 header
        assert!(matches!(decode(&bytes), Err(DecodeError::IbHeader { word: 0, .. })));
        bytes[1] = 0x06; // acquire scope 3 (bits 9 and 10)
        assert_eq!(
            decode(&bytes),
            Err(HeaderError::InvalidFenceScope { field: "SCACQUIRE_FENCE_SCOPE", value: 3 }.into())
        );
        assert_eq!(decode_slice(&[0; 63]), Err(DecodeError::Length { found: 63, expected: 64 }));
        assert_eq!(decode_slice(&[0; 65]), Err(DecodeError::Length { found: 65, expected: 64 }));
    }

    #[test]
    fn accessors() {
        let p = AqlPacket::AmdPm4Ib(
            AmdPm4IbPacket::new(0x1000, 8, FenceScope::Agent, FenceScope::System, 7).unwrap().parse().unwrap(),
        );
        assert_eq!(p.packet_type(), PacketType::VendorSpecific);
        assert_eq!(p.amd_format(), Some(AmdFormat::Pm4Ib));
        assert_eq!(p.completion_signal(), Some(7));
        assert_eq!(p.control().map(|c| c.release), Some(FenceScope::System));
        assert_eq!(AqlPacket::Invalid.control(), None);
        assert_eq!(decode(&p.to_bytes()), Ok(p));
    }
}
