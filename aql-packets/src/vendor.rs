//! AMD vendor-specific packets (`TYPE` = [`PacketType::VendorSpecific`]): the vendor header, the
//! barrier-value packet and the PM4-IB packet.
//!
//! Layouts: `reference/amd-reference.md` §5 "amd_vendor_packet_header",
//! "hsa_amd_barrier_value_packet_t" and "amd_aql_pm4_ib_packet". Byte 2 of every vendor packet
//! is the AMD format ([`AmdFormat`]); byte 3 is reserved.

use core::mem::{offset_of, size_of};

use pm4_encoding::packet::{Emit, IndirectBuffer, PacketError};
use pm4_encoding::{Opcode, Type3Header};
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::decode::DecodeError;
use crate::header::{AmdFormat, FenceScope, Header, PacketControl, PacketType, SignalCondition};

/// `AMD_AQL_FORMAT_PM4_IB`: the AMD format of the PM4-IB packet.
pub const AMD_AQL_FORMAT_PM4_IB: u8 = 1;
/// `HSA_AMD_PACKET_TYPE_BARRIER_VALUE`: the AMD format of the barrier-value packet.
pub const HSA_AMD_PACKET_TYPE_BARRIER_VALUE: u8 = 2;

/// `dw_cnt_remain` of the PM4-IB packet: the dwords after that field (8 reserved + 2 for the
/// completion signal), as ROCr writes it (reference §5 "amd_aql_pm4_ib_packet").
pub const PM4_IB_DW_CNT_REMAIN: u32 = 0xA;

/// Dwords of the PM4 `INDIRECT_BUFFER` packet held in `ib_jump_cmd`.
pub const IB_JUMP_DWORDS: usize = 4;

/// `INDIRECT_BUFFER` `COUNT`: body dwords − 1 (reference §4 "INDIRECT_BUFFER", count 2).
const IB_JUMP_COUNT: u16 = 2;

const_assert_eq!(IndirectBuffer::BUFFER_LEN, IB_JUMP_DWORDS);

/// The first four bytes of an AMD vendor packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct AmdVendorHeader {
    /// AQL header; `TYPE` = [`PacketType::VendorSpecific`].
    pub header: U16,
    /// `AmdFormat` ([`AmdFormat`]).
    pub amd_format: u8,
    /// Reserved, 0.
    pub reserved: u8,
}

// Reference §5 "amd_vendor_packet_header".
assert_eq_size!(AmdVendorHeader, [u8; 4]);
assert_eq_align!(AmdVendorHeader, u8);
const_assert_eq!(offset_of!(AmdVendorHeader, header), 0);
const_assert_eq!(offset_of!(AmdVendorHeader, amd_format), 2);
const_assert_eq!(offset_of!(AmdVendorHeader, reserved), 3);

impl AmdVendorHeader {
    /// A vendor header of `format` with `control`.
    #[must_use]
    pub const fn new(control: PacketControl, format: AmdFormat) -> Self {
        Self {
            header: U16::new(Header::new(PacketType::VendorSpecific, control).encode()),
            amd_format: format.to_u8(),
            reserved: 0,
        }
    }

    /// Checks the header type, the format against `expected` and the reserved byte; returns the
    /// control bits.
    ///
    /// # Errors
    /// [`DecodeError`] for an invalid header, another packet type or format, or a non-zero
    /// reserved byte.
    pub fn parse(&self, expected: AmdFormat) -> Result<PacketControl, DecodeError> {
        let header = Header::decode(self.header.get())?;
        DecodeError::expect_type(header, PacketType::VendorSpecific)?;
        let found = AmdFormat::from_u8(self.amd_format);
        if found != expected {
            return Err(DecodeError::WrongAmdFormat { expected, found });
        }
        DecodeError::reserved("reserved", offset_of!(Self, reserved), self.reserved.into())?;
        Ok(header.control)
    }
}

/// The 64-byte `hsa_amd_barrier_value_packet_t`: waits until `(signal & mask) cond value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct AmdBarrierValuePacket {
    /// Vendor header; format [`AmdFormat::BarrierValue`].
    pub header: AmdVendorHeader,
    /// Reserved, 0.
    pub reserved0: U32,
    /// The signal handle whose value is compared.
    pub signal: U64,
    /// The value compared with.
    pub value: U64,
    /// Mask applied to the signal value before the comparison.
    pub mask: U64,
    /// `hsa_signal_condition32_t` ([`SignalCondition`]).
    pub cond: U32,
    /// Reserved, 0.
    pub reserved1: U32,
    /// Reserved, 0.
    pub reserved2: U64,
    /// Reserved, 0.
    pub reserved3: U64,
    /// Completion signal handle; 0 = none.
    pub completion_signal: U64,
}

// Reference §5 "hsa_amd_barrier_value_packet_t".
assert_eq_size!(AmdBarrierValuePacket, [u8; 64]);
assert_eq_align!(AmdBarrierValuePacket, u8);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, header), 0);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, reserved0), 4);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, signal), 8);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, value), 16);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, mask), 24);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, cond), 32);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, reserved1), 36);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, reserved2), 40);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, reserved3), 48);
const_assert_eq!(offset_of!(AmdBarrierValuePacket, completion_signal), 56);

crate::packet_bytes!(AmdBarrierValuePacket);

/// The typed fields of a barrier-value packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AmdBarrierValue {
    /// Barrier bit and fence scopes.
    pub control: PacketControl,
    /// The signal handle whose value is compared.
    pub signal: u64,
    /// The value compared with (the bits of an `hsa_signal_value_t`).
    pub value: u64,
    /// Mask applied to the signal value first.
    pub mask: u64,
    /// The comparison.
    pub cond: SignalCondition,
    /// Completion signal handle; 0 = none.
    pub completion_signal: u64,
}

impl AmdBarrierValuePacket {
    /// The packet for `barrier`.
    #[must_use]
    pub fn new(barrier: &AmdBarrierValue) -> Self {
        Self {
            header: AmdVendorHeader::new(barrier.control, AmdFormat::BarrierValue),
            reserved0: U32::ZERO,
            signal: U64::new(barrier.signal),
            value: U64::new(barrier.value),
            mask: U64::new(barrier.mask),
            cond: U32::new(barrier.cond.to_u32()),
            reserved1: U32::ZERO,
            reserved2: U64::ZERO,
            reserved3: U64::ZERO,
            completion_signal: U64::new(barrier.completion_signal),
        }
    }

    /// Reads the typed fields.
    ///
    /// # Errors
    /// [`DecodeError`] for an invalid vendor header, an unknown condition or a non-zero reserved
    /// field.
    pub fn parse(&self) -> Result<AmdBarrierValue, DecodeError> {
        let control = self.header.parse(AmdFormat::BarrierValue)?;
        DecodeError::reserved("reserved0", offset_of!(Self, reserved0), self.reserved0.get().into())?;
        let Some(cond) = SignalCondition::from_u32(self.cond.get()) else {
            return Err(DecodeError::SignalCondition { value: self.cond.get() });
        };
        DecodeError::reserved("reserved1", offset_of!(Self, reserved1), self.reserved1.get().into())?;
        DecodeError::reserved("reserved2", offset_of!(Self, reserved2), self.reserved2.get())?;
        DecodeError::reserved("reserved3", offset_of!(Self, reserved3), self.reserved3.get())?;
        Ok(AmdBarrierValue {
            control,
            signal: self.signal.get(),
            value: self.value.get(),
            mask: self.mask.get(),
            cond,
            completion_signal: self.completion_signal.get(),
        })
    }
}

/// The 64-byte `amd_aql_pm4_ib` packet: the packet processor executes the PM4
/// `INDIRECT_BUFFER` packet in `ib_jump_cmd`, i.e. the command buffer it points to (gfx9+).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct AmdPm4IbPacket {
    /// AQL header; `TYPE` = [`PacketType::VendorSpecific`].
    pub header: U16,
    /// `AMD_AQL_FORMAT_PM4_IB` in the low byte, the high byte reserved.
    pub ven_hdr: U16,
    /// A complete PM4 `INDIRECT_BUFFER` packet (header, `IB_BASE_LO`, `IB_BASE_HI`, `CONTROL`).
    pub ib_jump_cmd: [U32; IB_JUMP_DWORDS],
    /// [`PM4_IB_DW_CNT_REMAIN`].
    pub dw_cnt_remain: U32,
    /// Reserved, 0.
    pub reserved: [U32; 8],
    /// Completion signal handle; 0 = none.
    pub completion_signal: U64,
}

// Reference §5 "amd_aql_pm4_ib_packet".
assert_eq_size!(AmdPm4IbPacket, [u8; 64]);
assert_eq_align!(AmdPm4IbPacket, u8);
const_assert_eq!(offset_of!(AmdPm4IbPacket, header), 0);
const_assert_eq!(offset_of!(AmdPm4IbPacket, ven_hdr), 2);
const_assert_eq!(offset_of!(AmdPm4IbPacket, ib_jump_cmd), 4);
assert_eq_size!([U32; IB_JUMP_DWORDS], [u8; 16]);
const_assert_eq!(offset_of!(AmdPm4IbPacket, dw_cnt_remain), 20);
const_assert_eq!(offset_of!(AmdPm4IbPacket, reserved), 24);
assert_eq_size!([U32; 8], [u8; 32]);
const_assert_eq!(offset_of!(AmdPm4IbPacket, completion_signal), 56);
// `dw_cnt_remain` counts the dwords after it.
const_assert_eq!(
    (size_of::<AmdPm4IbPacket>() - offset_of!(AmdPm4IbPacket, reserved)) / 4,
    PM4_IB_DW_CNT_REMAIN as usize
);

crate::packet_bytes!(AmdPm4IbPacket);

/// The typed fields of a PM4-IB packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AmdPm4Ib {
    /// Barrier bit and fence scopes.
    pub control: PacketControl,
    /// The `INDIRECT_BUFFER` packet in `ib_jump_cmd`.
    pub ib: IndirectBuffer,
    /// Completion signal handle; 0 = none.
    pub completion_signal: u64,
}

/// Why a PM4-IB packet cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AmdPm4IbError {
    /// The indirect buffer's address or size does not fit `INDIRECT_BUFFER`.
    #[error("indirect buffer: {source}")]
    IndirectBuffer {
        /// What `INDIRECT_BUFFER` rejected.
        source: PacketError,
    },
}

impl AmdPm4IbPacket {
    /// A packet that calls the `ib_size_dwords`-dword command buffer at `ib_address`, as ROCr's
    /// `ExecutePM4` builds it: barrier bit clear, the given fence scopes, `INDIRECT_BUFFER` with
    /// `VALID` set and `SHADER_TYPE` 0.
    ///
    /// # Errors
    /// [`AmdPm4IbError::IndirectBuffer`] when `ib_address` is not dword aligned or
    /// `ib_size_dwords` does not fit `IB_SIZE`.
    pub fn new(
        ib_address: u64,
        ib_size_dwords: u32,
        acquire: FenceScope,
        release: FenceScope,
        completion_signal: u64,
    ) -> Result<Self, AmdPm4IbError> {
        let ib = IndirectBuffer::call(ib_address, ib_size_dwords)
            .map_err(|source| AmdPm4IbError::IndirectBuffer { source })?;
        let control = PacketControl { barrier: false, acquire, release };
        Ok(AmdPm4Ib { control, ib, completion_signal }.emit())
    }

    /// Reads the typed fields and decodes `ib_jump_cmd`.
    ///
    /// # Errors
    /// [`DecodeError`] for an invalid vendor header, an `ib_jump_cmd` that is not a PM4
    /// `INDIRECT_BUFFER` packet, a `dw_cnt_remain` other than 10, or a non-zero reserved field.
    pub fn parse(&self) -> Result<AmdPm4Ib, DecodeError> {
        let vendor = AmdVendorHeader {
            header: self.header,
            amd_format: self.ven_hdr.to_bytes()[0],
            reserved: self.ven_hdr.to_bytes()[1],
        };
        let control = vendor.parse(AmdFormat::Pm4Ib)?;
        let ib = parse_ib_jump(self.ib_jump_cmd.map(U32::get))?;
        let dw_cnt_remain = self.dw_cnt_remain.get();
        if dw_cnt_remain != PM4_IB_DW_CNT_REMAIN {
            return Err(DecodeError::DwCntRemain { found: dw_cnt_remain, expected: PM4_IB_DW_CNT_REMAIN });
        }
        for (i, word) in self.reserved.iter().enumerate() {
            DecodeError::reserved("reserved", offset_of!(Self, reserved) + 4 * i, word.get().into())?;
        }
        Ok(AmdPm4Ib { control, ib, completion_signal: self.completion_signal.get() })
    }
}

fn parse_ib_jump(words: [u32; IB_JUMP_DWORDS]) -> Result<IndirectBuffer, DecodeError> {
    let [word, body @ ..] = words;
    let header = Type3Header::decode(word).map_err(|source| DecodeError::IbHeader { word, source })?;
    if header.opcode != Opcode::IndirectBuffer {
        return Err(DecodeError::IbOpcode { opcode: header.opcode });
    }
    if header.count != IB_JUMP_COUNT {
        return Err(DecodeError::IbCount { count: header.count, expected: IB_JUMP_COUNT });
    }
    IndirectBuffer::parse(header, &body).map_err(|source| DecodeError::IbBody { source })
}

impl AmdPm4Ib {
    /// The packet. `ib` is emitted as is; an `ib` that `INDIRECT_BUFFER` would reject (a
    /// misaligned address) is written but does not decode back.
    #[must_use]
    pub fn emit(&self) -> AmdPm4IbPacket {
        let mut ib_jump_cmd = [0u32; IB_JUMP_DWORDS];
        // PANIC: `IndirectBuffer::BUFFER_LEN == IB_JUMP_DWORDS` is asserted at compile time.
        self.ib.emit(&mut ib_jump_cmd);
        let vendor = AmdVendorHeader::new(self.control, AmdFormat::Pm4Ib);
        AmdPm4IbPacket {
            header: vendor.header,
            ven_hdr: U16::from_bytes([vendor.amd_format, vendor.reserved]),
            ib_jump_cmd: ib_jump_cmd.map(U32::new),
            dw_cnt_remain: U32::new(PM4_IB_DW_CNT_REMAIN),
            reserved: [U32::ZERO; 8],
            completion_signal: U64::new(self.completion_signal),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pm4_encoding::HeaderError as Pm4HeaderError;

    // The PM4-IB packet for a 64-dword IB at 0x7F12_3456_7800, system scopes, signal 0x1234.
    // ib_jump_cmd from reference §4/§5: header PACKET3(0x3F, count 2) = 0xC0023F00,
    // IB_BASE_LO 0x34567800, IB_BASE_HI 0x7F12, CONTROL = 64 | VALID (1 << 23) = 0x00800040.
    // Header: type 0 | 2<<9 | 2<<11 = 0x1400.
    #[rustfmt::skip]
    const PM4_IB: [u8; 64] = [
        0x00, 0x14, 0x01, 0x00,                         // header, ven_hdr
        0x00, 0x3F, 0x02, 0xC0, 0x00, 0x78, 0x56, 0x34, // ib_jump_cmd[0..2]
        0x12, 0x7F, 0x00, 0x00, 0x40, 0x00, 0x80, 0x00, // ib_jump_cmd[2..4]
        0x0A, 0x00, 0x00, 0x00,                         // dw_cnt_remain
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x34, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // completion_signal
    ];

    fn pm4_ib() -> AmdPm4IbPacket {
        AmdPm4IbPacket::new(0x7F12_3456_7800, 64, FenceScope::System, FenceScope::System, 0x1234).unwrap()
    }

    #[test]
    fn pm4_ib_literal_bytes() {
        let p = pm4_ib();
        assert_eq!(p.ib_jump_cmd.map(U32::get), [0xC002_3F00, 0x3456_7800, 0x0000_7F12, 0x0080_0040]);
        assert_eq!(&p.as_array()[20..24], &[0x0A, 0, 0, 0]);
        assert_eq!(p.as_array(), &PM4_IB);
        assert_eq!(p.header_word(), 0x0001_1400);
    }

    #[test]
    fn pm4_ib_parses() {
        let ib = AmdPm4IbPacket::from_array(&PM4_IB).parse().unwrap();
        assert_eq!(
            ib.control,
            PacketControl { barrier: false, acquire: FenceScope::System, release: FenceScope::System }
        );
        assert_eq!(ib.ib.address, 0x7F12_3456_7800);
        assert_eq!(ib.ib.control.ib_size(), 64);
        assert_eq!(ib.ib.control.valid(), 1);
        assert_eq!(ib.completion_signal, 0x1234);
    }

    #[test]
    fn pm4_ib_rejects() {
        let parse = |patch: &dyn Fn(&mut [u8; 64])| {
            let mut b = PM4_IB;
            patch(&mut b);
            AmdPm4IbPacket::from_array(&b).parse()
        };
        assert_eq!(parse(&|b| b[20] = 0x0B), Err(DecodeError::DwCntRemain { found: 0xB, expected: 0xA }));
        // Opcode 0x3F -> 0x10 (NOP).
        assert_eq!(parse(&|b| b[5] = 0x10), Err(DecodeError::IbOpcode { opcode: Opcode::Nop }));
        // COUNT 2 -> 3.
        assert_eq!(parse(&|b| b[6] = 0x03), Err(DecodeError::IbCount { count: 3, expected: 2 }));
        // Type 3 -> type 2.
        assert_eq!(
            parse(&|b| b[7] = 0x80),
            Err(DecodeError::IbHeader { word: 0x8002_3F00, source: Pm4HeaderError::NotType3 { found: 2 } })
        );
        // IB_BASE_LO not dword aligned.
        assert!(matches!(
            parse(&|b| b[8] = 0x02),
            Err(DecodeError::IbBody { source: PacketError::FieldValue { field: "IB_BASE_LO", value: 2, .. } })
        ));
        assert_eq!(parse(&|b| b[3] = 0x01), Err(DecodeError::Reserved { field: "reserved", offset: 3, value: 1 }));
        assert_eq!(
            parse(&|b| b[2] = 0x02),
            Err(DecodeError::WrongAmdFormat { expected: AmdFormat::Pm4Ib, found: AmdFormat::BarrierValue })
        );
        assert_eq!(parse(&|b| b[52] = 0x01), Err(DecodeError::Reserved { field: "reserved", offset: 52, value: 1 }));
    }

    #[test]
    fn pm4_ib_constructor_errors() {
        assert!(matches!(
            AmdPm4IbPacket::new(0x1002, 4, FenceScope::None, FenceScope::None, 0),
            Err(AmdPm4IbError::IndirectBuffer { source: PacketError::FieldValue { field: "IB_BASE_LO", .. } })
        ));
        assert!(matches!(
            AmdPm4IbPacket::new(0x1000, 1 << 20, FenceScope::None, FenceScope::None, 0),
            Err(AmdPm4IbError::IndirectBuffer { source: PacketError::FieldValue { field: "IB_SIZE", .. } })
        ));
    }

    fn barrier_value() -> AmdBarrierValue {
        AmdBarrierValue {
            control: PacketControl::SYSTEM_BARRIER,
            signal: 0x7F00_0000_0040,
            value: 5,
            mask: u64::MAX,
            cond: SignalCondition::Gte,
            completion_signal: 0,
        }
    }

    // By hand from §5: header = 0 | 1<<8 | 2<<9 | 2<<11 = 0x1500, AmdFormat 2.
    #[rustfmt::skip]
    const BARRIER_VALUE: [u8; 64] = [
        0x00, 0x15, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, // vendor header, reserved0
        0x40, 0x00, 0x00, 0x00, 0x00, 0x7F, 0x00, 0x00, // signal
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // value
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // mask
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // cond, reserved1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved2
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved3
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // completion_signal
    ];

    #[test]
    fn barrier_value_literal_bytes() {
        let p = AmdBarrierValuePacket::new(&barrier_value());
        assert_eq!(p.as_array(), &BARRIER_VALUE);
        assert_eq!(p.header_word(), 0x0002_1500);
        assert_eq!(AmdBarrierValuePacket::from_array(&BARRIER_VALUE).parse(), Ok(barrier_value()));
    }

    #[test]
    fn barrier_value_rejects() {
        let mut b = BARRIER_VALUE;
        b[32] = 4;
        assert_eq!(AmdBarrierValuePacket::from_array(&b).parse(), Err(DecodeError::SignalCondition { value: 4 }));
        let mut b = BARRIER_VALUE;
        b[40] = 1;
        assert_eq!(
            AmdBarrierValuePacket::from_array(&b).parse(),
            Err(DecodeError::Reserved { field: "reserved2", offset: 40, value: 1 })
        );
        let mut b = BARRIER_VALUE;
        b[0] = 0x02;
        assert_eq!(
            AmdBarrierValuePacket::from_array(&b).parse(),
            Err(DecodeError::WrongType { expected: PacketType::VendorSpecific, found: PacketType::KernelDispatch })
        );
    }
}
