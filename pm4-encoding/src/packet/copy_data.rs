//! `COPY_DATA` (0x40): copy a register, memory dword(s), an immediate or a counter to a register
//! or memory. The usual use here: a 64-bit GPU timestamp written to memory.
//!
//! Body (reference §4 "COPY_DATA"), 5 dwords: dw0 `CONTROL`, dw1..2 source (address, register or
//! immediate), dw3..4 destination. Memory destinations are dword aligned for 32-bit copies and
//! qword aligned for 64-bit ones; a 64-bit memory source is qword aligned.

use crate::disasm::Visitor;
use crate::header::{HeaderFlags, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, NO_FLAGS, PacketError, check_aligned, join_u64, split_u64};

mod field {
    /// Body dwords.
    pub(super) const BODY_DWORDS: usize = 5;
    pub(super) const CONTROL: usize = 0;
    pub(super) const SRC_LO: usize = 1;
    pub(super) const SRC_HI: usize = 2;
    pub(super) const DST_LO: usize = 3;
    pub(super) const DST_HI: usize = 4;
    /// 32-bit memory destination: bits `[1:0]` of the low address dword must be zero.
    pub(super) const DWORD_ALIGN_MASK: u32 = 0b11;
    /// 64-bit memory source or destination: bits `[2:0]` must be zero.
    pub(super) const QWORD_ALIGN_MASK: u32 = 0b111;
}

crate::bitfield32! {
    /// `COPY_DATA` body dword 0.
    pub struct CopyDataControl {
        /// Source, raw ([`SrcSel`]).
        [3:0] src_sel_raw, with_src_sel_raw = "SRC_SEL";
        /// Destination, raw ([`DstSel`]).
        [11:8] dst_sel_raw, with_dst_sel_raw = "DST_SEL";
        /// Source cache policy.
        [14:13] src_cache_policy, with_src_cache_policy = "SRC_CACHE_POLICY";
        /// 0: 32 bits, 1: 64 bits (timestamps).
        [16] count_sel, with_count_sel = "COUNT_SEL";
        /// Wait for write confirmation.
        [20] wr_confirm, with_wr_confirm = "WR_CONFIRM";
        /// Destination cache policy.
        [26:25] dst_cache_policy, with_dst_cache_policy = "DST_CACHE_POLICY";
        /// Engine (Mesa: 1 = PFP).
        [31:30] engine_sel, with_engine_sel = "ENGINE_SEL";
    }
}

field_enum! {
    /// `COPY_DATA` `SRC_SEL`.
    pub enum SrcSel(u32) {
        /// A memory-mapped register.
        MemMappedReg = 0 => "MEM_MAPPED_REG",
        /// Memory (the obsolete TC_L2 path).
        Memory = 1 => "MEMORY",
        /// Memory through TC_L2.
        TcL2 = 2 => "TC_L2",
        /// GDS.
        Gds = 3 => "GDS",
        /// Performance counters.
        Perfcounters = 4 => "PERFCOUNTERS",
        /// The immediate in dw1..2.
        Immediate = 5 => "IMMEDIATE",
        /// Atomic return data.
        AtomicReturnData = 6 => "ATOMIC_RETURN_DATA",
        /// GDS atomic return data 0.
        GdsAtomicReturnData0 = 7 => "GDS_ATOMIC_RETURN_DATA_0",
        /// GDS atomic return data 1.
        GdsAtomicReturnData1 = 8 => "GDS_ATOMIC_RETURN_DATA_1",
        /// The GPU clock counter (timestamp).
        GpuClockCount = 9 => "GPU_CLOCK_COUNT",
        /// The system clock counter.
        SystemClockCount = 10 => "SYSTEM_CLOCK_COUNT",
    }
}

field_enum! {
    /// `COPY_DATA` `DST_SEL`.
    pub enum DstSel(u32) {
        /// A memory-mapped register.
        MemMappedReg = 0 => "MEM_MAPPED_REG",
        /// Memory through TC_L2.
        TcL2 = 2 => "TC_L2",
        /// GDS.
        Gds = 3 => "GDS",
        /// Performance counters.
        Perfcounters = 4 => "PERFCOUNTERS",
        /// Memory (Mesa `COPY_DATA_DST_MEM`; Linux calls 5 `TC_L2_OBSOLETE`).
        Memory = 5 => "MEMORY",
        /// A memory-mapped register (DC).
        MemMappedRegDc = 6 => "MEM_MAPPED_REG_DC",
    }
}

impl CopyDataControl {
    /// The timestamp recipe (reference §4 "COPY_DATA"): `SRC_SEL` GPU clock (9), `DST_SEL` memory
    /// (5), `COUNT_SEL` 64-bit, `WR_CONFIRM` = 0x00110509.
    pub const TIMESTAMP: Self = Self::from_raw(0)
        .with_src_sel_raw(SrcSel::GpuClockCount.raw())
        .with_dst_sel_raw(DstSel::Memory.raw())
        .with_count_sel(1)
        .with_wr_confirm(1);

    /// `SRC_SEL`.
    #[must_use]
    pub const fn src_sel(self) -> SrcSel {
        SrcSel::from_raw(self.src_sel_raw())
    }

    /// `DST_SEL`.
    #[must_use]
    pub const fn dst_sel(self) -> DstSel {
        DstSel::from_raw(self.dst_sel_raw())
    }
}

/// A validated `COPY_DATA` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CopyData {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// dw0: source, destination, size and cache options.
    pub control: CopyDataControl,
    /// dw1..2: source address, register or immediate.
    pub src: u64,
    /// dw3..4: destination address or register.
    pub dst: u64,
}

impl CopyData {
    /// Total dwords of the packet, header included.
    pub const BUFFER_LEN: usize = 1 + field::BODY_DWORDS;

    /// Writes the 64-bit GPU clock counter to `dst` ([`CopyDataControl::TIMESTAMP`]), default
    /// header flags.
    ///
    /// # Errors
    /// [`PacketError::FieldValue`] (`DST_ADDR_LO`) when `dst` is not qword aligned.
    pub const fn timestamp(dst: u64) -> Result<Self, PacketError> {
        Self::new(CopyDataControl::TIMESTAMP, 0, dst)
    }

    /// A `COPY_DATA` with the given control word, default header flags.
    ///
    /// # Errors
    /// [`PacketError::FieldValue`] when a memory source or destination is misaligned for the
    /// copy size (`SRC_ADDR_LO`, `DST_ADDR_LO`).
    pub const fn new(control: CopyDataControl, src: u64, dst: u64) -> Result<Self, PacketError> {
        match check_addresses(control, src, dst) {
            Ok(()) => Ok(Self { flags: NO_FLAGS, control, src, dst }),
            Err(e) => Err(e),
        }
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] unless the body is 5 dwords; [`PacketError::FieldValue`] when a
    /// memory source or destination is misaligned for the copy size.
    pub fn parse(header: Type3Header, body: &[u32]) -> Result<Self, PacketError> {
        let &[control, src_lo, src_hi, dst_lo, dst_hi] = body else {
            return Err(PacketError::BodyLength {
                opcode: Opcode::CopyData,
                expected: field::BODY_DWORDS,
                found: body.len(),
            });
        };
        let control = CopyDataControl::from_raw(control);
        let (src, dst) = (join_u64(src_lo, src_hi), join_u64(dst_lo, dst_hi));
        check_addresses(control, src, dst)?;
        Ok(Self { flags: header.flags(), control, src, dst })
    }

    /// Reports the fields.
    pub fn visit(&self, v: &mut dyn Visitor) {
        let c = self.control;
        v.word("CONTROL", c.raw(), CopyDataControl::FIELDS);
        v.enum_field("SRC_SEL", u64::from(c.src_sel_raw()), c.src_sel().name());
        v.enum_field("DST_SEL", u64::from(c.dst_sel_raw()), c.dst_sel().name());
        v.field("SRC", self.src);
        v.field("DST", self.dst);
    }
}

/// `FieldValue` when a memory destination is misaligned for the copy size, or a 64-bit memory
/// source is not qword aligned. The reference states no alignment for 32-bit memory sources.
const fn check_addresses(control: CopyDataControl, src: u64, dst: u64) -> Result<(), PacketError> {
    let wide = control.count_sel() == 1;
    let src_mask = match control.src_sel() {
        SrcSel::Memory | SrcSel::TcL2 if wide => field::QWORD_ALIGN_MASK,
        _ => 0,
    };
    if let Err(e) = check_aligned(Opcode::CopyData, "SRC_ADDR_LO", src, src_mask) {
        return Err(e);
    }
    let dst_mask = match control.dst_sel() {
        DstSel::TcL2 | DstSel::Memory if wide => field::QWORD_ALIGN_MASK,
        DstSel::TcL2 | DstSel::Memory => field::DWORD_ALIGN_MASK,
        _ => 0,
    };
    check_aligned(Opcode::CopyData, "DST_ADDR_LO", dst, dst_mask)
}

impl Emit for CopyData {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        Self::BUFFER_LEN
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        let out: &mut [u32; Self::BUFFER_LEN] = out.try_into().expect("COPY_DATA needs exactly 6 dwords");
        let (src_lo, src_hi) = split_u64(self.src);
        let (dst_lo, dst_hi) = split_u64(self.dst);
        out[0] = Type3Header::with_flags(Opcode::CopyData, field::BODY_DWORDS, self.flags).encode();
        out[1 + field::CONTROL] = self.control.raw();
        out[1 + field::SRC_LO] = src_lo;
        out[1 + field::SRC_HI] = src_hi;
        out[1 + field::DST_LO] = dst_lo;
        out[1 + field::DST_HI] = dst_hi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_util::{Item, Recorder};

    fn parse_words(words: &[u32]) -> Result<CopyData, PacketError> {
        CopyData::parse(Type3Header::decode(words[0]).unwrap(), &words[1..])
    }

    // Header COUNT 4 = 0xC0044000; timestamp control 0x00110509 (reference §4 "COPY_DATA").
    const TIMESTAMP: [u32; 6] = [0xC004_4000, 0x0011_0509, 0, 0, 0x0000_1008, 0x0000_7F00];

    #[test]
    fn timestamp_literal() {
        assert_eq!(CopyDataControl::TIMESTAMP.raw(), 0x0011_0509);
        let p = CopyData::timestamp(0x7F00_0000_1008).unwrap();
        let mut out = [0; 6];
        p.emit(&mut out);
        assert_eq!(out, TIMESTAMP);
        let parsed = parse_words(&TIMESTAMP).unwrap();
        assert_eq!(parsed, p);
        assert_eq!(parsed.control.src_sel(), SrcSel::GpuClockCount);
        assert_eq!(parsed.control.dst_sel(), DstSel::Memory);
        assert_eq!(parsed.dst, 0x7F00_0000_1008);
        let mut rec = Recorder::default();
        p.visit(&mut rec);
        assert_eq!(rec.items[1], Item::Enum("SRC_SEL", 9, Some("GPU_CLOCK_COUNT")));
        assert_eq!(rec.items[2], Item::Enum("DST_SEL", 5, Some("MEMORY")));
    }

    // A register (SRC_SEL 0) copied to memory as 32 bits (DST_SEL 5): dword alignment suffices.
    #[test]
    fn register_to_memory() {
        const WORDS: [u32; 6] = [0xC004_4000, 0x0000_0500, 0x0000_2E40, 0, 0x0000_1004, 0];
        let control = CopyDataControl::from_raw(0).with_dst_sel_raw(DstSel::Memory.raw());
        let p = CopyData::new(control, 0x2E40, 0x1004).unwrap();
        let mut out = [0; 6];
        p.emit(&mut out);
        assert_eq!(out, WORDS);
        assert_eq!(parse_words(&WORDS), Ok(p));
    }

    #[test]
    fn malformed() {
        let mut words = TIMESTAMP;
        words[4] = 0x0000_1004;
        assert_eq!(
            parse_words(&words),
            Err(PacketError::FieldValue { opcode: Opcode::CopyData, field: "DST_ADDR_LO", value: 4 })
        );
        // 64-bit memory source (SRC_SEL 2, COUNT_SEL 1) at a dword-aligned address.
        let control = CopyDataControl::from_raw(0x0001_0502);
        assert_eq!(
            CopyData::new(control, 0x1004, 0x2000),
            Err(PacketError::FieldValue { opcode: Opcode::CopyData, field: "SRC_ADDR_LO", value: 4 })
        );
        assert!(CopyData::new(control, 0x1008, 0x2000).is_ok());
        // Register destination: no alignment rule.
        assert!(CopyData::new(CopyDataControl::from_raw(0x0001_0009), 0, 0x2E41).is_ok());
        assert!(CopyData::timestamp(0x1001).is_err());
        assert_eq!(
            parse_words(&TIMESTAMP[..5]),
            Err(PacketError::BodyLength { opcode: Opcode::CopyData, expected: 5, found: 4 })
        );
        assert_eq!(CopyDataControl::from_raw(0xB).src_sel(), SrcSel::Unknown(11));
        assert_eq!(CopyDataControl::from_raw(0x100).dst_sel(), DstSel::Unknown(1));
    }
}
