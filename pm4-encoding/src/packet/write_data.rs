//! `WRITE_DATA` (0x37): write immediate dwords to memory or registers.
//!
//! Body (reference §4 "WRITE_DATA"): dw0 `CONTROL` (`DST_SEL`, `WR_ONE_ADDR`, `WR_CONFIRM`,
//! `CACHE_POLICY`, `ENGINE_SEL`), dw1..2 `DST_ADDR_LO/HI` (memory: dword aligned; register: dword
//! offset `[17:0]`), dw3.. the data (at least one dword).

use crate::disasm::Visitor;
use crate::family::Family;
use crate::header::{HeaderFlags, MAX_BODY_DWORDS, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, NO_FLAGS, PacketError, check_aligned, join_u64, split_u64};

mod field {
    pub(super) const CONTROL: usize = 0;
    pub(super) const DST_ADDR_LO: usize = 1;
    pub(super) const DST_ADDR_HI: usize = 2;
    pub(super) const DATA: usize = 3;
    /// Control, address and one data dword.
    pub(super) const MIN_BODY_DWORDS: usize = 4;
    /// Memory destinations: `DST_ADDR_LO` bits `[1:0]` must be zero.
    pub(super) const ADDRESS_ALIGN_MASK: u32 = 0b11;
    /// Register destinations: a dword offset in bits `[17:0]`.
    pub(super) const REG_MAX: u32 = (1 << 18) - 1;
}

/// Most data dwords one `WRITE_DATA` carries.
pub const MAX_DATA_DWORDS: usize = MAX_BODY_DWORDS - field::DATA;

crate::bitfield32! {
    /// `WRITE_DATA` body dword 0.
    pub struct WriteDataControl {
        /// Destination, raw ([`DstSel`]).
        [11:8] dst_sel_raw, with_dst_sel_raw = "DST_SEL";
        /// 1: write every dword to the same address (no increment).
        [16] wr_one_addr, with_wr_one_addr = "WR_ONE_ADDR";
        /// Wait for write confirmation.
        [20] wr_confirm, with_wr_confirm = "WR_CONFIRM";
        /// 0 LRU, 1 stream.
        [26:25] cache_policy, with_cache_policy = "CACHE_POLICY";
        /// 0 ME, 1 PFP, 2 CE.
        [31:30] engine_sel, with_engine_sel = "ENGINE_SEL";
    }
}

field_enum! {
    /// `WRITE_DATA` `DST_SEL`.
    pub enum DstSel(u32) {
        /// A memory-mapped register (`DST_ADDR_LO` = dword offset).
        MemMappedRegister = 0 => "MEMORY_MAPPED_REGISTER",
        /// Memory, synchronised through GRBM (deprecated).
        MemorySyncViaGrbm = 1 => "MEMORY_SYNC_VIA_GRBM",
        /// Memory through TC_L2.
        TcL2 = 2 => "TC_L2",
        /// GDS.
        Gds = 3 => "GDS",
        /// Memory (Mesa `V_370_MEM`).
        Memory = 5 => "MEMORY",
        /// A memory-mapped register of the ADC persistent state (newer Linux).
        MemMappedAdcPersistentState = 6 => "MEMORY_MAPPED_ADC_PERSISTENT_STATE",
    }
}

impl DstSel {
    /// Whether the destination is a memory address (which must be dword aligned).
    #[must_use]
    pub const fn is_memory(self) -> bool {
        matches!(self, DstSel::MemorySyncViaGrbm | DstSel::TcL2 | DstSel::Memory)
    }
}

impl WriteDataControl {
    /// `DST_SEL`.
    #[must_use]
    pub const fn dst_sel(self) -> DstSel {
        DstSel::from_raw(self.dst_sel_raw())
    }
}

/// A validated `WRITE_DATA` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriteData<'a> {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// dw0: destination and write options.
    pub control: WriteDataControl,
    /// dw1..2: destination address (memory, dword aligned) or register dword offset.
    pub dst_addr: u64,
    /// The data dwords; 1..=[`MAX_DATA_DWORDS`].
    pub data: &'a [u32],
}

impl<'a> WriteData<'a> {
    /// Writes `data` to consecutive dwords at `address` (`DST_SEL` memory), waiting for write
    /// confirmation so the data has landed before the next packet runs; default header flags.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] when `data` is empty or longer than [`MAX_DATA_DWORDS`];
    /// [`PacketError::FieldValue`] (`DST_ADDR_LO`) when `address` is not dword aligned.
    pub fn memory(address: u64, data: &'a [u32]) -> Result<Self, PacketError> {
        let control = WriteDataControl::from_raw(0).with_dst_sel_raw(DstSel::Memory.raw()).with_wr_confirm(1);
        Self::new(control, address, data)
    }

    /// Writes `data` to consecutive registers from absolute dword `dword` (`DST_SEL` register).
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] when `data` is empty or too long; [`PacketError::FieldValue`]
    /// (`DST_ADDR_LO`) when `dword` does not fit 18 bits.
    pub fn register(dword: u32, data: &'a [u32]) -> Result<Self, PacketError> {
        if dword > field::REG_MAX {
            return Err(PacketError::FieldValue { opcode: Opcode::WriteData, field: "DST_ADDR_LO", value: dword });
        }
        Self::new(WriteDataControl::from_raw(0), u64::from(dword), data)
    }

    /// A `WRITE_DATA` with the given control word, default header flags.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] when `data` is empty or too long; [`PacketError::FieldValue`]
    /// (`DST_ADDR_LO`) when a memory destination is not dword aligned.
    pub fn new(control: WriteDataControl, dst_addr: u64, data: &'a [u32]) -> Result<Self, PacketError> {
        check_body_len(field::DATA + data.len())?;
        check_address(control, dst_addr)?;
        Ok(Self { flags: NO_FLAGS, control, dst_addr, data })
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] when the body has no data dword or more dwords than a packet
    /// holds; [`PacketError::FieldValue`] when a memory destination is not dword aligned.
    pub fn parse(header: Type3Header, body: &'a [u32]) -> Result<Self, PacketError> {
        check_body_len(body.len())?;
        let control = WriteDataControl::from_raw(body[field::CONTROL]);
        let dst_addr = join_u64(body[field::DST_ADDR_LO], body[field::DST_ADDR_HI]);
        check_address(control, dst_addr)?;
        Ok(Self { flags: header.flags(), control, dst_addr, data: &body[field::DATA..] })
    }

    /// Reports the fields. Register writes are reported per register, named from `family`'s map.
    pub fn visit(&self, family: Family, v: &mut dyn Visitor) {
        let c = self.control;
        v.word("CONTROL", c.raw(), WriteDataControl::FIELDS);
        v.enum_field("DST_SEL", u64::from(c.dst_sel_raw()), c.dst_sel().name());
        v.field("DST_ADDR", self.dst_addr);
        if matches!(c.dst_sel(), DstSel::MemMappedRegister) {
            let first = split_u64(self.dst_addr).0;
            let step = u32::from(c.wr_one_addr() == 0);
            let mut dword = first;
            for &value in self.data {
                v.register(dword, value, crate::regs::lookup(family, dword));
                dword = dword.wrapping_add(step);
            }
        } else {
            v.payload("DATA", self.data);
        }
    }
}

/// `BodyLength` unless the body holds control, address and 1..=MAX_DATA_DWORDS data dwords.
fn check_body_len(body_dwords: usize) -> Result<(), PacketError> {
    let expected = if body_dwords < field::MIN_BODY_DWORDS {
        field::MIN_BODY_DWORDS
    } else if body_dwords > MAX_BODY_DWORDS {
        MAX_BODY_DWORDS
    } else {
        return Ok(());
    };
    Err(PacketError::BodyLength { opcode: Opcode::WriteData, expected, found: body_dwords })
}

/// `FieldValue` when a memory destination is not dword aligned.
fn check_address(control: WriteDataControl, dst_addr: u64) -> Result<(), PacketError> {
    if control.dst_sel().is_memory() {
        check_aligned(Opcode::WriteData, "DST_ADDR_LO", dst_addr, field::ADDRESS_ALIGN_MASK)
    } else {
        Ok(())
    }
}

impl Emit for WriteData<'_> {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        1 + field::DATA + self.data.len()
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch, or a hand-emptied `data`,
        // is a programmer error. The header asserts the body fits COUNT.
        assert_eq!(out.len(), self.buffer_len(), "WRITE_DATA output slice must match the packet length");
        assert!(!self.data.is_empty(), "WRITE_DATA needs at least one data dword");
        let (lo, hi) = split_u64(self.dst_addr);
        out[0] = Type3Header::with_flags(Opcode::WriteData, field::DATA + self.data.len(), self.flags).encode();
        out[1 + field::CONTROL] = self.control.raw();
        out[1 + field::DST_ADDR_LO] = lo;
        out[1 + field::DST_ADDR_HI] = hi;
        super::copy_dwords(&mut out[1 + field::DATA..], self.data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_util::{Item, Recorder};
    use std::vec;

    fn parse_words(words: &[u32]) -> Result<WriteData<'_>, PacketError> {
        WriteData::parse(Type3Header::decode(words[0]).unwrap(), &words[1..])
    }

    // One data dword: COUNT = N + 2 = 3 -> 0xC0033700; DST_SEL 5 (0x500) | WR_CONFIRM (1 << 20).
    const MEMORY: [u32; 5] = [0xC003_3700, 0x0010_0500, 0x1234_5678, 0x0000_7F00, 0xCAFE_F00D];

    #[test]
    fn memory_literal() {
        let p = WriteData::memory(0x7F00_1234_5678, &MEMORY[4..]).unwrap();
        let mut out = [0; 5];
        p.emit(&mut out);
        assert_eq!(out, MEMORY);
        let parsed = parse_words(&MEMORY).unwrap();
        assert_eq!(parsed, p);
        assert_eq!(parsed.control.dst_sel(), DstSel::Memory);
        assert_eq!(parsed.control.wr_confirm(), 1);
        assert_eq!(parsed.data, &[0xCAFE_F00D]);
    }

    // Two registers from COMPUTE_USER_DATA_0 (0x2E40), DST_SEL 0: COUNT 4 = 0xC0043700.
    #[test]
    fn register_literal_and_visit() {
        const WORDS: [u32; 6] = [0xC004_3700, 0x0000_0000, 0x0000_2E40, 0, 1, 2];
        let p = WriteData::register(0x2E40, &WORDS[4..]).unwrap();
        let mut out = [0; 6];
        p.emit(&mut out);
        assert_eq!(out, WORDS);
        assert_eq!(parse_words(&WORDS), Ok(p));
        let mut rec = Recorder::default();
        p.visit(Family::Gfx10_3, &mut rec);
        assert_eq!(rec.items[3..], [Item::Register(0x2E40, 1), Item::Register(0x2E41, 2)]);
        // WR_ONE_ADDR: both values go to the same register.
        let mut one = p;
        one.control = one.control.with_wr_one_addr(1);
        let mut rec = Recorder::default();
        one.visit(Family::Gfx10_3, &mut rec);
        assert_eq!(rec.items[3..], [Item::Register(0x2E40, 1), Item::Register(0x2E40, 2)]);
    }

    #[test]
    fn malformed() {
        assert_eq!(
            parse_words(&MEMORY[..4]),
            Err(PacketError::BodyLength { opcode: Opcode::WriteData, expected: 4, found: 3 })
        );
        let mut words = MEMORY;
        words[2] = 0x1234_567A;
        assert_eq!(
            parse_words(&words),
            Err(PacketError::FieldValue { opcode: Opcode::WriteData, field: "DST_ADDR_LO", value: 2 })
        );
        assert!(WriteData::memory(0x1001, &[0]).is_err());
        assert!(WriteData::memory(0x1000, &[]).is_err());
        assert!(WriteData::register(0x4_0000, &[0]).is_err());
        let too_long = vec![0; MAX_DATA_DWORDS + 1];
        assert_eq!(
            WriteData::memory(0x1000, &too_long),
            Err(PacketError::BodyLength { opcode: Opcode::WriteData, expected: MAX_BODY_DWORDS, found: 0x4001 })
        );
        assert!(WriteData::memory(0x1000, &too_long[1..]).is_ok());
    }
}
