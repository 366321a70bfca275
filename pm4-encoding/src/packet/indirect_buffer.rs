//! `INDIRECT_BUFFER` (0x3F): execute another command buffer, or chain to it.
//!
//! Body (reference §4 "INDIRECT_BUFFER"): dw0 `IB_BASE_LO` (bits `[31:2]`, dword aligned),
//! dw1 `IB_BASE_HI`, dw2 `CONTROL` (`IB_SIZE` `[19:0]` dwords, `CHAIN` `[20]`, `VALID` `[23]`, ...).

use crate::disasm::Visitor;
use crate::header::{HeaderFlags, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, PacketError};

mod field {
    /// Body dwords.
    pub(super) const BODY_DWORDS: usize = 3;
    pub(super) const IB_BASE_LO: usize = 0;
    pub(super) const IB_BASE_HI: usize = 1;
    pub(super) const CONTROL: usize = 2;
    /// `IB_BASE_LO` bits `[1:0]` must be zero: the IB is dword aligned.
    pub(super) const BASE_LO_ALIGN_MASK: u32 = 0b11;
}

crate::bitfield32! {
    /// `INDIRECT_BUFFER` body dword 2.
    pub struct IbControl {
        /// Size of the IB in dwords.
        [19:0] ib_size, with_ib_size = "IB_SIZE";
        /// Chain to the IB instead of calling it.
        [20] chain, with_chain = "CHAIN";
        /// Pre-enable / offload polling.
        [21] pre_ena, with_pre_ena = "PRE_ENA";
        /// Inherit VMID (graphics queue, MES user queues).
        [22] inherit_vmid, with_inherit_vmid = "INHERIT_VMID";
        /// Set by Linux compute rings and ROCr.
        [23] valid, with_valid = "VALID";
        /// VMID.
        [27:24] vmid, with_vmid = "VMID";
        /// Cache policy / temporal hint.
        [29:28] cache_policy, with_cache_policy = "CACHE_POLICY";
        /// Inherit VMID from the MQD (compute, MES user queues) / PRE_RESUME (graphics).
        [30] inherit_vmid_mqd, with_inherit_vmid_mqd = "INHERIT_VMID_MQD";
        /// Privileged IB.
        [31] privileged, with_privileged = "PRIV";
    }
}

/// Largest `IB_SIZE` in dwords (20-bit field).
pub const MAX_IB_SIZE_DWORDS: u32 = (1 << 20) - 1;

/// A validated `INDIRECT_BUFFER` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndirectBuffer {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// GPU virtual address of the IB; dword aligned.
    pub address: u64,
    /// The control word (size, valid, chain, ...).
    pub control: IbControl,
}

impl IndirectBuffer {
    /// Total dwords of the packet, header included.
    pub const BUFFER_LEN: usize = 1 + field::BODY_DWORDS;

    /// A call of `size_dwords` dwords at `address`, with `VALID` set (as ROCr and Linux compute
    /// rings emit it) and default header flags.
    ///
    /// # Errors
    /// [`PacketError::FieldValue`] when `address` is not dword aligned or `size_dwords` does not
    /// fit `IB_SIZE`.
    pub const fn call(address: u64, size_dwords: u32) -> Result<Self, PacketError> {
        if address & 3 != 0 {
            // CAST: the two low bits only.
            #[allow(clippy::cast_possible_truncation)]
            return Err(PacketError::FieldValue {
                opcode: Opcode::IndirectBuffer,
                field: "IB_BASE_LO",
                value: (address & 3) as u32,
            });
        }
        if size_dwords > MAX_IB_SIZE_DWORDS {
            return Err(PacketError::FieldValue {
                opcode: Opcode::IndirectBuffer,
                field: "IB_SIZE",
                value: size_dwords,
            });
        }
        Ok(Self {
            flags: HeaderFlags { shader_type: crate::ShaderType::Graphics, predicate: false, reset_filter_cam: false },
            address,
            control: IbControl::from_raw(0).with_ib_size(size_dwords).with_valid(1),
        })
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] unless the body is 3 dwords; [`PacketError::FieldValue`] when
    /// `IB_BASE_LO` is not dword aligned.
    pub fn parse(header: Type3Header, body: &[u32]) -> Result<Self, PacketError> {
        let &[lo, hi, control] = body else {
            return Err(PacketError::BodyLength {
                opcode: Opcode::IndirectBuffer,
                expected: field::BODY_DWORDS,
                found: body.len(),
            });
        };
        if lo & field::BASE_LO_ALIGN_MASK != 0 {
            return Err(PacketError::FieldValue {
                opcode: Opcode::IndirectBuffer,
                field: "IB_BASE_LO",
                value: lo & field::BASE_LO_ALIGN_MASK,
            });
        }
        Ok(Self {
            flags: header.flags(),
            address: u64::from(lo) | (u64::from(hi) << 32),
            control: IbControl::from_raw(control),
        })
    }

    /// Reports the fields.
    pub fn visit(&self, v: &mut dyn Visitor) {
        v.field("IB_BASE", self.address);
        v.word("CONTROL", self.control.raw(), IbControl::FIELDS);
    }
}

impl Emit for IndirectBuffer {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        Self::BUFFER_LEN
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        let out: &mut [u32; Self::BUFFER_LEN] = out.try_into().expect("INDIRECT_BUFFER needs exactly 4 dwords");
        out[0] = Type3Header::with_flags(Opcode::IndirectBuffer, field::BODY_DWORDS, self.flags).encode();
        // CAST: split of a 64-bit address into its low and high dwords.
        #[allow(clippy::cast_possible_truncation)]
        {
            out[1 + field::IB_BASE_LO] = self.address as u32;
            out[1 + field::IB_BASE_HI] = (self.address >> 32) as u32;
        }
        out[1 + field::CONTROL] = self.control.raw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // What ROCr's PM4-IB packet carries for a 64-dword IB at 0x7f12_3456_7800 (reference §5
    // amd_aql_pm4_ib_packet: header 0xC0023F00, IB_SIZE | VALID).
    const WORDS: [u32; 4] = [0xC002_3F00, 0x3456_7800, 0x0000_7F12, 0x0080_0040];

    #[test]
    fn emits_literal_words() {
        let ib = IndirectBuffer::call(0x7F12_3456_7800, 64).unwrap();
        let mut out = [0; 4];
        ib.emit(&mut out);
        assert_eq!(out, WORDS);
    }

    #[test]
    fn parses_literal_words() {
        let header = Type3Header::decode(WORDS[0]).unwrap();
        let ib = IndirectBuffer::parse(header, &WORDS[1..]).unwrap();
        assert_eq!(ib.address, 0x7F12_3456_7800);
        assert_eq!(ib.control.ib_size(), 64);
        assert_eq!(ib.control.valid(), 1);
        assert_eq!(ib.control.chain(), 0);
    }

    #[test]
    fn rejects_misaligned_and_short() {
        let header = Type3Header::decode(WORDS[0]).unwrap();
        assert!(matches!(
            IndirectBuffer::parse(header, &[0x3456_7802, 0, 0]),
            Err(PacketError::FieldValue { field: "IB_BASE_LO", value: 2, .. })
        ));
        assert!(matches!(
            IndirectBuffer::parse(header, &[0, 0]),
            Err(PacketError::BodyLength { expected: 3, found: 2, .. })
        ));
        assert!(IndirectBuffer::call(0x1001, 4).is_err());
        assert!(IndirectBuffer::call(0x1000, MAX_IB_SIZE_DWORDS + 1).is_err());
    }
}
