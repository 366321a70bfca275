//! `RELEASE_MEM` (0x49): at an end-of-pipe event, perform cache actions and write a value
//! (fence, timestamp) and/or raise an interrupt.
//!
//! Body (reference §4 "RELEASE_MEM"), 7 dwords: dw0 `EVENT_CNTL`, dw1 `DATA_CNTL`, dw2..3
//! `ADDRESS_LO/HI` (dword aligned for 32-bit data, qword aligned for 64-bit data), dw4..5
//! `DATA_LO/HI`, dw6 `INT_CTXID`.

use crate::disasm::Visitor;
use crate::header::{HeaderFlags, Type3Header};
use crate::opcode::Opcode;
use crate::packet::acquire_mem::{GcrSeq, Gl2Range};
use crate::packet::event_write::{EventType, event_type_of};
use crate::packet::{Emit, NO_FLAGS, PacketError, check_aligned, join_u64, split_u64};

mod field {
    /// Body dwords.
    pub(super) const BODY_DWORDS: usize = 7;
    pub(super) const EVENT_CNTL: usize = 0;
    pub(super) const DATA_CNTL: usize = 1;
    pub(super) const ADDRESS_LO: usize = 2;
    pub(super) const ADDRESS_HI: usize = 3;
    pub(super) const DATA_LO: usize = 4;
    pub(super) const DATA_HI: usize = 5;
    pub(super) const INT_CTXID: usize = 6;
    /// 32-bit data: `ADDRESS_LO` bits `[1:0]` must be zero.
    pub(super) const DWORD_ALIGN_MASK: u32 = 0b11;
    /// 64-bit data: `ADDRESS_LO` bits `[2:0]` must be zero.
    pub(super) const QWORD_ALIGN_MASK: u32 = 0b111;
}

crate::bitfield32! {
    /// `RELEASE_MEM` dw0 `EVENT_CNTL`: the event and the cache actions that follow it.
    pub struct EventCntl {
        /// The event, raw ([`EventType`]).
        [5:0] event_type_raw, with_event_type_raw = "EVENT_TYPE";
        /// Wait sync (gfx11, gfx12).
        [7] wait_sync, with_wait_sync = "WAIT_SYNC";
        /// 5 = end-of-pipe / timestamp events, 6 = shader done (`CS_DONE`, `PS_DONE`).
        [11:8] event_index, with_event_index = "EVENT_INDEX";
        /// Metadata cache write-back (Mesa omits it on gfx12).
        [12] gcr_glm_wb, with_gcr_glm_wb = "GCR_GLM_WB";
        /// Metadata cache invalidate (Mesa omits it on gfx12).
        [13] gcr_glm_inv, with_gcr_glm_inv = "GCR_GLM_INV";
        /// Vector L0 invalidate.
        [14] gcr_glv_inv, with_gcr_glv_inv = "GCR_GLV_INV";
        /// GL1 invalidate (Mesa omits it on gfx12).
        [15] gcr_gl1_inv, with_gcr_gl1_inv = "GCR_GL1_INV";
        /// GL2 unsequenced.
        [16] gcr_gl2_us, with_gcr_gl2_us = "GCR_GL2_US";
        /// GL2 range, raw ([`Gl2Range`]).
        [18:17] gcr_gl2_range_raw, with_gcr_gl2_range_raw = "GCR_GL2_RANGE";
        /// GL2 discard.
        [19] gcr_gl2_discard, with_gcr_gl2_discard = "GCR_GL2_DISCARD";
        /// GL2 invalidate.
        [20] gcr_gl2_inv, with_gcr_gl2_inv = "GCR_GL2_INV";
        /// GL2 write-back.
        [21] gcr_gl2_wb, with_gcr_gl2_wb = "GCR_GL2_WB";
        /// Cache action order, raw ([`GcrSeq`]; Linux sets FORWARD).
        [23:22] gcr_seq_raw, with_gcr_seq_raw = "GCR_SEQ";
        /// Scalar cache write-back (gfx11, gfx12).
        [24] gcr_glk_wb, with_gcr_glk_wb = "GCR_GLK_WB";
        /// Cache policy of the data write (Linux: 0 LRU, 1 stream, 2 noa, 3 bypass).
        [26:25] cache_policy, with_cache_policy = "CACHE_POLICY";
        /// Execute (Linux bit 28; Mesa's gfx11 table shows `[29:28]`, bit 29 is kept raw).
        [28] execute, with_execute = "EXECUTE";
        /// Scalar cache invalidate (gfx11, gfx12).
        [30] gcr_glk_inv, with_gcr_glk_inv = "GCR_GLK_INV";
        /// Pixel wait sync enable (gfx11, gfx12).
        [31] pws_enable, with_pws_enable = "PWS_ENABLE";
    }
}

crate::bitfield32! {
    /// `RELEASE_MEM` dw1 `DATA_CNTL`: where and what to write, and whether to interrupt.
    pub struct DataCntl {
        /// Destination, raw ([`DstSel`]).
        [17:16] dst_sel_raw, with_dst_sel_raw = "DST_SEL";
        /// Interrupt, raw ([`IntSel`]).
        [26:24] int_sel_raw, with_int_sel_raw = "INT_SEL";
        /// Data, raw ([`DataSel`]).
        [31:29] data_sel_raw, with_data_sel_raw = "DATA_SEL";
    }
}

field_enum! {
    /// `DATA_CNTL.DST_SEL`.
    pub enum DstSel(u32) {
        /// Memory through the memory controller.
        MemoryController = 0 => "MEMORY_CONTROLLER",
        /// Memory through TC_L2.
        TcL2 = 1 => "TC_L2",
        /// Queue write-pointer register.
        QueueWritePointerRegister = 2 => "QUEUE_WRITE_POINTER_REGISTER",
        /// Queue write-pointer poll mask bit.
        QueueWritePointerPollMaskBit = 3 => "QUEUE_WRITE_POINTER_POLL_MASK_BIT",
    }
}

field_enum! {
    /// `DATA_CNTL.INT_SEL`; 4..=6 are `INT_CTXID` variants the reference does not name.
    pub enum IntSel(u32) {
        /// No interrupt.
        NoInterrupt = 0 => "NONE",
        /// Interrupt only.
        InterruptOnly = 1 => "INTERRUPT_ONLY",
        /// Interrupt after the write is confirmed (Linux fences with an IRQ).
        InterruptAfterWriteConfirm = 2 => "INTERRUPT_AFTER_WRITE_CONFIRM",
        /// Send the data after the write is confirmed, no interrupt (what Mesa uses).
        SendDataAfterWriteConfirm = 3 => "SEND_DATA_AFTER_WRITE_CONFIRM",
    }
}

field_enum! {
    /// `DATA_CNTL.DATA_SEL`. 4 is named differently by different sources (reference §9) and is
    /// left `Unknown(4)`.
    pub enum DataSel(u32) {
        /// Write nothing.
        NoneDiscard = 0 => "NONE_DISCARD",
        /// The low 32 bits of `DATA`.
        Data32Low = 1 => "32_BIT_LOW",
        /// All 64 bits of `DATA`.
        Data64 = 2 => "64_BIT",
        /// The 64-bit GPU clock counter (timestamps).
        GpuClockCounter64 = 3 => "64_BIT_GPU_CLOCK_COUNTER",
        /// GDS.
        Gds = 5 => "GDS",
    }
}

impl DataSel {
    /// The `ADDRESS_LO` bits that must be zero for this data: dword alignment for 32-bit data,
    /// qword alignment for 64-bit data, none where the reference gives no size.
    #[must_use]
    pub const fn address_align_mask(self) -> u32 {
        match self {
            DataSel::Data32Low => field::DWORD_ALIGN_MASK,
            DataSel::Data64 | DataSel::GpuClockCounter64 => field::QWORD_ALIGN_MASK,
            DataSel::NoneDiscard | DataSel::Gds | DataSel::Unknown(_) => 0,
        }
    }
}

impl EventCntl {
    /// `EVENT_TYPE`.
    #[must_use]
    pub const fn event_type(self) -> EventType {
        event_type_of(self.event_type_raw())
    }

    /// Returns a copy with `EVENT_TYPE` = `value`.
    ///
    /// PANIC: asserts that an `Unknown` value fits in 6 bits.
    #[must_use]
    pub const fn with_event_type(self, value: EventType) -> Self {
        // Widening u8 -> u32 (`u32::from` is not callable in a const fn).
        self.with_event_type_raw(value.raw() as u32)
    }

    /// `GCR_GL2_RANGE`.
    #[must_use]
    pub const fn gcr_gl2_range(self) -> Gl2Range {
        Gl2Range::from_raw(self.gcr_gl2_range_raw())
    }

    /// Returns a copy with `GCR_GL2_RANGE` = `value`.
    ///
    /// PANIC: asserts that an `Unknown` value fits in 2 bits.
    #[must_use]
    pub const fn with_gcr_gl2_range(self, value: Gl2Range) -> Self {
        self.with_gcr_gl2_range_raw(value.raw())
    }

    /// `GCR_SEQ`.
    #[must_use]
    pub const fn gcr_seq(self) -> GcrSeq {
        GcrSeq::from_raw(self.gcr_seq_raw())
    }

    /// Returns a copy with `GCR_SEQ` = `value`.
    ///
    /// PANIC: asserts that an `Unknown` value fits in 2 bits.
    #[must_use]
    pub const fn with_gcr_seq(self, value: GcrSeq) -> Self {
        self.with_gcr_seq_raw(value.raw())
    }
}

impl DataCntl {
    /// A `DATA_CNTL` word.
    ///
    /// PANIC: asserts that `Unknown` values fit their fields.
    #[must_use]
    pub const fn new(dst_sel: DstSel, int_sel: IntSel, data_sel: DataSel) -> Self {
        Self::from_raw(0)
            .with_dst_sel_raw(dst_sel.raw())
            .with_int_sel_raw(int_sel.raw())
            .with_data_sel_raw(data_sel.raw())
    }

    /// `DST_SEL`.
    #[must_use]
    pub const fn dst_sel(self) -> DstSel {
        DstSel::from_raw(self.dst_sel_raw())
    }

    /// `INT_SEL`.
    #[must_use]
    pub const fn int_sel(self) -> IntSel {
        IntSel::from_raw(self.int_sel_raw())
    }

    /// `DATA_SEL`.
    #[must_use]
    pub const fn data_sel(self) -> DataSel {
        DataSel::from_raw(self.data_sel_raw())
    }
}

/// A validated `RELEASE_MEM` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReleaseMem {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// dw0: event and cache actions.
    pub event_cntl: EventCntl,
    /// dw1: destination, interrupt, data selection.
    pub data_cntl: DataCntl,
    /// dw2..3: destination address, aligned as [`DataSel::address_align_mask`] requires.
    pub address: u64,
    /// dw4..5: the value written for `DATA_SEL` 32/64-bit data.
    pub data: u64,
    /// dw6: interrupt context id (0; Linux puts the MES queue id here).
    pub int_ctxid: u32,
}

impl ReleaseMem {
    /// Total dwords of the packet, header included.
    pub const BUFFER_LEN: usize = 1 + field::BODY_DWORDS;

    /// A release with the given control words, writing `data` to `address`, `INT_CTXID` 0 and
    /// default header flags (what Linux fences emit).
    ///
    /// # Errors
    /// [`PacketError::FieldValue`] (`ADDRESS_LO`) when `address` is not aligned for the data size.
    pub const fn new(event_cntl: EventCntl, data_cntl: DataCntl, address: u64, data: u64) -> Result<Self, PacketError> {
        if let Err(e) = check_address(data_cntl, address) {
            return Err(e);
        }
        Ok(Self { flags: NO_FLAGS, event_cntl, data_cntl, address, data, int_ctxid: 0 })
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] unless the body is 7 dwords; [`PacketError::FieldValue`]
    /// (`ADDRESS_LO`) when the address is not aligned for the data size.
    pub fn parse(header: Type3Header, body: &[u32]) -> Result<Self, PacketError> {
        let &[event_cntl, data_cntl, address_lo, address_hi, data_lo, data_hi, int_ctxid] = body else {
            return Err(PacketError::BodyLength {
                opcode: Opcode::ReleaseMem,
                expected: field::BODY_DWORDS,
                found: body.len(),
            });
        };
        let data_cntl = DataCntl::from_raw(data_cntl);
        let address = join_u64(address_lo, address_hi);
        check_address(data_cntl, address)?;
        Ok(Self {
            flags: header.flags(),
            event_cntl: EventCntl::from_raw(event_cntl),
            data_cntl,
            address,
            data: join_u64(data_lo, data_hi),
            int_ctxid,
        })
    }

    /// Reports the fields.
    pub fn visit(&self, v: &mut dyn Visitor) {
        let (e, d) = (self.event_cntl, self.data_cntl);
        v.word("EVENT_CNTL", e.raw(), EventCntl::FIELDS);
        v.enum_field("EVENT_TYPE", u64::from(e.event_type_raw()), e.event_type().name());
        v.enum_field("GCR_GL2_RANGE", u64::from(e.gcr_gl2_range_raw()), e.gcr_gl2_range().name());
        v.enum_field("GCR_SEQ", u64::from(e.gcr_seq_raw()), e.gcr_seq().name());
        v.word("DATA_CNTL", d.raw(), DataCntl::FIELDS);
        v.enum_field("DST_SEL", u64::from(d.dst_sel_raw()), d.dst_sel().name());
        v.enum_field("INT_SEL", u64::from(d.int_sel_raw()), d.int_sel().name());
        v.enum_field("DATA_SEL", u64::from(d.data_sel_raw()), d.data_sel().name());
        v.field("ADDRESS", self.address);
        v.field("DATA", self.data);
        v.field("INT_CTXID", u64::from(self.int_ctxid));
    }
}

/// `FieldValue` when `address` is not aligned for the data `data_cntl` selects.
const fn check_address(data_cntl: DataCntl, address: u64) -> Result<(), PacketError> {
    check_aligned(Opcode::ReleaseMem, "ADDRESS_LO", address, data_cntl.data_sel().address_align_mask())
}

impl Emit for ReleaseMem {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        Self::BUFFER_LEN
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        let out: &mut [u32; Self::BUFFER_LEN] = out.try_into().expect("RELEASE_MEM needs exactly 8 dwords");
        let (address_lo, address_hi) = split_u64(self.address);
        let (data_lo, data_hi) = split_u64(self.data);
        out[0] = Type3Header::with_flags(Opcode::ReleaseMem, field::BODY_DWORDS, self.flags).encode();
        out[1 + field::EVENT_CNTL] = self.event_cntl.raw();
        out[1 + field::DATA_CNTL] = self.data_cntl.raw();
        out[1 + field::ADDRESS_LO] = address_lo;
        out[1 + field::ADDRESS_HI] = address_hi;
        out[1 + field::DATA_LO] = data_lo;
        out[1 + field::DATA_HI] = data_hi;
        out[1 + field::INT_CTXID] = self.int_ctxid;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_util::{Item, Recorder};

    /// The gfx12 Linux fence `EVENT_CNTL` (reference §4 "RELEASE_MEM" derived examples):
    /// GCR_SEQ | GL2_WB | CACHE_POLICY(3) | EVENT_TYPE(0x14) | EVENT_INDEX(5).
    fn gfx12_fence() -> EventCntl {
        EventCntl::default()
            .with_event_type(EventType::CacheFlushAndInvTsEvent)
            .with_event_index(5)
            .with_gcr_gl2_wb(1)
            .with_gcr_seq(GcrSeq::Forward)
            .with_cache_policy(3)
    }

    /// The gfx10.3 / gfx11 one adds GLM_INV | GLM_WB.
    fn gfx11_fence() -> EventCntl {
        gfx12_fence().with_gcr_glm_wb(1).with_gcr_glm_inv(1)
    }

    #[test]
    fn event_cntl_literals() {
        assert_eq!(gfx11_fence().raw(), 0x0660_3514);
        assert_eq!(gfx12_fence().raw(), 0x0660_0514);
        let e = EventCntl::from_raw(0x0660_3514);
        assert_eq!(e.event_type(), EventType::CacheFlushAndInvTsEvent);
        assert_eq!((e.event_index(), e.cache_policy(), e.gcr_seq()), (5, 3, GcrSeq::Forward));
        assert_eq!((e.gcr_glm_wb(), e.gcr_glm_inv(), e.gcr_gl2_wb(), e.gcr_gl2_inv()), (1, 1, 1, 0));
    }

    #[test]
    fn data_cntl_literals() {
        let d32 = DataCntl::new(DstSel::MemoryController, IntSel::NoInterrupt, DataSel::Data32Low);
        assert_eq!(d32.raw(), 0x2000_0000);
        let d64 = DataCntl::new(DstSel::MemoryController, IntSel::NoInterrupt, DataSel::Data64);
        assert_eq!(d64.raw(), 0x4000_0000);
        let irq = DataCntl::new(DstSel::MemoryController, IntSel::InterruptAfterWriteConfirm, DataSel::Data32Low);
        assert_eq!(irq.raw(), 0x2200_0000);
        assert_eq!(DataCntl::from_raw(0x8000_0000).data_sel(), DataSel::Unknown(4));
        assert_eq!(DataCntl::from_raw(0x0001_0000).dst_sel(), DstSel::TcL2);
        assert_eq!(DataCntl::from_raw(0x0300_0000).int_sel(), IntSel::SendDataAfterWriteConfirm);
    }

    // A gfx11 32-bit fence of 0x1234 at 0x1_0000_1004 (dword aligned only): header 0xC0064900.
    const WORDS: [u32; 8] =
        [0xC006_4900, 0x0660_3514, 0x2000_0000, 0x0000_1004, 0x0000_0001, 0x0000_1234, 0x0000_0000, 0x0000_0000];

    #[test]
    fn literal_words() {
        let d32 = DataCntl::new(DstSel::MemoryController, IntSel::NoInterrupt, DataSel::Data32Low);
        let p = ReleaseMem::new(gfx11_fence(), d32, 0x1_0000_1004, 0x1234).unwrap();
        let mut out = [0; 8];
        p.emit(&mut out);
        assert_eq!(out, WORDS);
        assert_eq!(ReleaseMem::parse(Type3Header::decode(WORDS[0]).unwrap(), &WORDS[1..]), Ok(p));
        let mut rec = Recorder::default();
        p.visit(&mut rec);
        assert!(rec.items.contains(&Item::Enum("EVENT_TYPE", 0x14, Some("CACHE_FLUSH_AND_INV_TS_EVENT"))));
        assert!(rec.items.contains(&Item::Enum("DATA_SEL", 1, Some("32_BIT_LOW"))));
        assert!(rec.items.contains(&Item::Field("ADDRESS", 0x1_0000_1004)));
    }

    #[test]
    fn alignment_and_length() {
        let header = Type3Header::decode(WORDS[0]).unwrap();
        // 64-bit data at a dword-aligned address.
        let mut body = [0; 7];
        body.copy_from_slice(&WORDS[1..]);
        body[1] = 0x4000_0000;
        assert_eq!(
            ReleaseMem::parse(header, &body),
            Err(PacketError::FieldValue { opcode: Opcode::ReleaseMem, field: "ADDRESS_LO", value: 4 })
        );
        // 32-bit data at a byte address.
        body[1] = 0x2000_0000;
        body[2] = 0x1006;
        assert_eq!(
            ReleaseMem::parse(header, &body),
            Err(PacketError::FieldValue { opcode: Opcode::ReleaseMem, field: "ADDRESS_LO", value: 2 })
        );
        // No data: the address is not checked.
        body[1] = 0x0000_0000;
        assert!(ReleaseMem::parse(header, &body).is_ok());
        let d64 = DataCntl::new(DstSel::MemoryController, IntSel::NoInterrupt, DataSel::GpuClockCounter64);
        assert!(ReleaseMem::new(gfx12_fence(), d64, 0x1004, 0).is_err());
        assert!(ReleaseMem::new(gfx12_fence(), d64, 0x1008, 0).is_ok());
        assert_eq!(
            ReleaseMem::parse(header, &WORDS[1..7]),
            Err(PacketError::BodyLength { opcode: Opcode::ReleaseMem, expected: 7, found: 6 })
        );
    }
}
