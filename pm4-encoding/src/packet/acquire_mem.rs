//! `ACQUIRE_MEM` (0x58): cache invalidation and write-back before later work reads memory.
//!
//! Body (reference §4 "ACQUIRE_MEM"), the 8-dword form of gfx10, gfx10.3, gfx11 and gfx12 (GC 12.0):
//! dw0 `COHER_CNTL`, dw1 `COHER_SIZE`, dw2 `COHER_SIZE_HI`, dw3 `COHER_BASE_LO`, dw4
//! `COHER_BASE_HI`, dw5 `POLL_INTERVAL`, dw6 `GCR_CNTL` (reference §4 "GCR_CNTL"). The gfx11+ PWS
//! variant (graphics queues only) reuses dw0/dw5 bits; those are kept raw.

use crate::disasm::Visitor;
use crate::header::{HeaderFlags, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, NO_FLAGS, PacketError};

mod field {
    /// Body dwords.
    pub(super) const BODY_DWORDS: usize = 7;
    pub(super) const COHER_CNTL: usize = 0;
    pub(super) const COHER_SIZE: usize = 1;
    pub(super) const COHER_SIZE_HI: usize = 2;
    pub(super) const COHER_BASE_LO: usize = 3;
    pub(super) const COHER_BASE_HI: usize = 4;
    pub(super) const POLL_INTERVAL: usize = 5;
    pub(super) const GCR_CNTL: usize = 6;
    /// `COHER_SIZE` of a whole-range acquire.
    pub(super) const FULL_COHER_SIZE: u32 = 0xFFFF_FFFF;
    /// `COHER_SIZE_HI` of a whole-range acquire, as Linux writes it (newer Mesa: 0x01FFFFFF).
    pub(super) const FULL_COHER_SIZE_HI: u32 = 0x00FF_FFFF;
    /// The `POLL_INTERVAL` drivers use.
    pub(super) const DRIVER_POLL_INTERVAL: u32 = 0x0000_000A;
}

crate::bitfield32! {
    /// `GCR_CNTL` (ACQUIRE_MEM dw6): which caches to invalidate or write back, and in which order
    /// (reference §4 "GCR_CNTL"). Typed views of the enumerated fields: [`GcrCntl::gli_inv`],
    /// [`GcrCntl::gl1_range`], [`GcrCntl::gl2_range`], [`GcrCntl::seq`].
    pub struct GcrCntl {
        /// Instruction cache invalidate, raw ([`GliInv`]).
        [1:0] gli_inv_raw, with_gli_inv_raw = "GLI_INV";
        /// GL1 range, raw ([`Gl1Range`]).
        [3:2] gl1_range_raw, with_gl1_range_raw = "GL1_RANGE";
        /// Metadata cache write-back (Mesa: set `GLM_INV` too).
        [4] glm_wb, with_glm_wb = "GLM_WB";
        /// Metadata cache invalidate.
        [5] glm_inv, with_glm_inv = "GLM_INV";
        /// Scalar cache write-back.
        [6] glk_wb, with_glk_wb = "GLK_WB";
        /// Scalar cache (K$) invalidate.
        [7] glk_inv, with_glk_inv = "GLK_INV";
        /// Vector L0 invalidate.
        [8] glv_inv, with_glv_inv = "GLV_INV";
        /// GL1 invalidate.
        [9] gl1_inv, with_gl1_inv = "GL1_INV";
        /// GL2 unsequenced.
        [10] gl2_us, with_gl2_us = "GL2_US";
        /// GL2 range, raw ([`Gl2Range`]).
        [12:11] gl2_range_raw, with_gl2_range_raw = "GL2_RANGE";
        /// GL2 discard.
        [13] gl2_discard, with_gl2_discard = "GL2_DISCARD";
        /// GL2 invalidate.
        [14] gl2_inv, with_gl2_inv = "GL2_INV";
        /// GL2 write-back.
        [15] gl2_wb, with_gl2_wb = "GL2_WB";
        /// Sequencing of the actions, raw ([`GcrSeq`]).
        [17:16] seq_raw, with_seq_raw = "SEQ";
        /// The range is a physical address.
        [18] range_is_pa, with_range_is_pa = "RANGE_IS_PA";
    }
}

field_enum! {
    /// `GLI_INV`: instruction cache invalidation.
    pub enum GliInv(u32) {
        /// No invalidation.
        Nop = 0 => "NOP",
        /// The whole cache.
        All = 1 => "ALL",
        /// The range.
        Range = 2 => "RANGE",
        /// First and last lines of the range.
        FirstLast = 3 => "FIRST_LAST",
    }
}

field_enum! {
    /// `GL1_RANGE` (1 is reserved).
    pub enum Gl1Range(u32) {
        /// Whole cache.
        All = 0 => "ALL",
        /// The range.
        Range = 2 => "RANGE",
        /// First and last lines of the range.
        FirstLast = 3 => "FIRST_LAST",
    }
}

field_enum! {
    /// `GL2_RANGE` (also `GCR_GL2_RANGE` of RELEASE_MEM).
    pub enum Gl2Range(u32) {
        /// Whole cache.
        All = 0 => "ALL",
        /// Volatile lines.
        Vol = 1 => "VOL",
        /// The range.
        Range = 2 => "RANGE",
        /// First and last lines of the range.
        FirstLast = 3 => "FIRST_LAST",
    }
}

field_enum! {
    /// `SEQ`: the order of the cache actions (also `GCR_SEQ` of RELEASE_MEM).
    pub enum GcrSeq(u32) {
        /// All at once.
        Parallel = 0 => "PARALLEL",
        /// Inner caches first.
        Forward = 1 => "FORWARD",
        /// Outer caches first.
        Reverse = 2 => "REVERSE",
    }
}

impl GcrCntl {
    /// `GLI_INV`.
    #[must_use]
    pub const fn gli_inv(self) -> GliInv {
        GliInv::from_raw(self.gli_inv_raw())
    }

    /// Returns a copy with `GLI_INV` = `value`.
    ///
    /// PANIC: asserts that an `Unknown` value fits in 2 bits.
    #[must_use]
    pub const fn with_gli_inv(self, value: GliInv) -> Self {
        self.with_gli_inv_raw(value.raw())
    }

    /// `GL1_RANGE`.
    #[must_use]
    pub const fn gl1_range(self) -> Gl1Range {
        Gl1Range::from_raw(self.gl1_range_raw())
    }

    /// Returns a copy with `GL1_RANGE` = `value`.
    ///
    /// PANIC: asserts that an `Unknown` value fits in 2 bits.
    #[must_use]
    pub const fn with_gl1_range(self, value: Gl1Range) -> Self {
        self.with_gl1_range_raw(value.raw())
    }

    /// `GL2_RANGE`.
    #[must_use]
    pub const fn gl2_range(self) -> Gl2Range {
        Gl2Range::from_raw(self.gl2_range_raw())
    }

    /// Returns a copy with `GL2_RANGE` = `value`.
    ///
    /// PANIC: asserts that an `Unknown` value fits in 2 bits.
    #[must_use]
    pub const fn with_gl2_range(self, value: Gl2Range) -> Self {
        self.with_gl2_range_raw(value.raw())
    }

    /// `SEQ`.
    #[must_use]
    pub const fn seq(self) -> GcrSeq {
        GcrSeq::from_raw(self.seq_raw())
    }

    /// Returns a copy with `SEQ` = `value`.
    ///
    /// PANIC: asserts that an `Unknown` value fits in 2 bits.
    #[must_use]
    pub const fn with_seq(self, value: GcrSeq) -> Self {
        self.with_seq_raw(value.raw())
    }

    /// Reports the enumerated fields with their names, after the whole word.
    pub(crate) fn visit(self, name: &'static str, v: &mut dyn Visitor) {
        v.word(name, self.raw(), Self::FIELDS);
        v.enum_field("GLI_INV", u64::from(self.gli_inv_raw()), self.gli_inv().name());
        v.enum_field("GL1_RANGE", u64::from(self.gl1_range_raw()), self.gl1_range().name());
        v.enum_field("GL2_RANGE", u64::from(self.gl2_range_raw()), self.gl2_range().name());
        v.enum_field("SEQ", u64::from(self.seq_raw()), self.seq().name());
    }
}

/// A validated `ACQUIRE_MEM` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AcquireMem {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// dw0 `COHER_CNTL`: legacy bits `[30:0]` (0 on gfx10+), `[31]` engine select.
    pub coher_cntl: u32,
    /// dw1 `COHER_SIZE`.
    pub coher_size: u32,
    /// dw2 `COHER_SIZE_HI`.
    pub coher_size_hi: u32,
    /// dw3 `COHER_BASE_LO`.
    pub coher_base_lo: u32,
    /// dw4 `COHER_BASE_HI`.
    pub coher_base_hi: u32,
    /// dw5 `POLL_INTERVAL` (`[15:0]`; gfx11+ PWS form: bit 31 `PWS_ENA`).
    pub poll_interval: u32,
    /// dw6 `GCR_CNTL`.
    pub gcr_cntl: GcrCntl,
}

impl AcquireMem {
    /// Total dwords of the packet, header included.
    pub const BUFFER_LEN: usize = 1 + field::BODY_DWORDS;

    /// The whole-range acquire drivers emit (Linux `emit_mem_sync`): `COHER_SIZE` 0xFFFFFFFF,
    /// `COHER_SIZE_HI` 0x00FFFFFF, base 0, `POLL_INTERVAL` 0xA, with the given cache actions.
    #[must_use]
    pub const fn full_range(gcr_cntl: GcrCntl) -> Self {
        Self {
            flags: NO_FLAGS,
            coher_cntl: 0,
            coher_size: field::FULL_COHER_SIZE,
            coher_size_hi: field::FULL_COHER_SIZE_HI,
            coher_base_lo: 0,
            coher_base_hi: 0,
            poll_interval: field::DRIVER_POLL_INTERVAL,
            gcr_cntl,
        }
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] unless the body is 7 dwords.
    pub fn parse(header: Type3Header, body: &[u32]) -> Result<Self, PacketError> {
        let &[coher_cntl, coher_size, coher_size_hi, coher_base_lo, coher_base_hi, poll_interval, gcr_cntl] = body
        else {
            return Err(PacketError::BodyLength {
                opcode: Opcode::AcquireMem,
                expected: field::BODY_DWORDS,
                found: body.len(),
            });
        };
        Ok(Self {
            flags: header.flags(),
            coher_cntl,
            coher_size,
            coher_size_hi,
            coher_base_lo,
            coher_base_hi,
            poll_interval,
            gcr_cntl: GcrCntl::from_raw(gcr_cntl),
        })
    }

    /// Reports the fields.
    pub fn visit(&self, v: &mut dyn Visitor) {
        v.field("COHER_CNTL", u64::from(self.coher_cntl));
        v.field("COHER_SIZE", u64::from(self.coher_size));
        v.field("COHER_SIZE_HI", u64::from(self.coher_size_hi));
        v.field("COHER_BASE_LO", u64::from(self.coher_base_lo));
        v.field("COHER_BASE_HI", u64::from(self.coher_base_hi));
        v.field("POLL_INTERVAL", u64::from(self.poll_interval));
        self.gcr_cntl.visit("GCR_CNTL", v);
    }
}

impl Emit for AcquireMem {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        Self::BUFFER_LEN
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        let out: &mut [u32; Self::BUFFER_LEN] = out.try_into().expect("ACQUIRE_MEM needs exactly 8 dwords");
        out[0] = Type3Header::with_flags(Opcode::AcquireMem, field::BODY_DWORDS, self.flags).encode();
        out[1 + field::COHER_CNTL] = self.coher_cntl;
        out[1 + field::COHER_SIZE] = self.coher_size;
        out[1 + field::COHER_SIZE_HI] = self.coher_size_hi;
        out[1 + field::COHER_BASE_LO] = self.coher_base_lo;
        out[1 + field::COHER_BASE_HI] = self.coher_base_hi;
        out[1 + field::POLL_INTERVAL] = self.poll_interval;
        out[1 + field::GCR_CNTL] = self.gcr_cntl.raw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_util::{Item, Recorder};

    /// Linux `emit_mem_sync` (reference §4 "ACQUIRE_MEM"): GL2_INV | GL2_WB | GLM_INV | GLM_WB |
    /// GL1_INV | GLV_INV | GLK_INV | GLI_INV(ALL) = 0x0000C3B1.
    fn linux_mem_sync() -> GcrCntl {
        GcrCntl::default()
            .with_gl2_inv(1)
            .with_gl2_wb(1)
            .with_glm_inv(1)
            .with_glm_wb(1)
            .with_gl1_inv(1)
            .with_glv_inv(1)
            .with_glk_inv(1)
            .with_gli_inv(GliInv::All)
    }

    // Header 0xC0065800 (reference §4 "Header"), then the whole-range body.
    const WORDS: [u32; 8] =
        [0xC006_5800, 0x0000_0000, 0xFFFF_FFFF, 0x00FF_FFFF, 0x0000_0000, 0x0000_0000, 0x0000_000A, 0x0000_C3B1];

    #[test]
    fn gcr_cntl_literal() {
        assert_eq!(linux_mem_sync().raw(), 0x0000_C3B1);
        let g = GcrCntl::from_raw(0x0000_C3B1);
        assert_eq!(g.gli_inv(), GliInv::All);
        assert_eq!(g.seq(), GcrSeq::Parallel);
        assert_eq!((g.glk_wb(), g.gl2_us(), g.gl2_discard(), g.range_is_pa()), (0, 0, 0, 0));
        // SEQ = REVERSE [17:16], GL2_RANGE = VOL [12:11], GL1_RANGE = FIRST_LAST [3:2].
        let g = GcrCntl::default()
            .with_seq(GcrSeq::Reverse)
            .with_gl2_range(Gl2Range::Vol)
            .with_gl1_range(Gl1Range::FirstLast);
        assert_eq!(g.raw(), 0x0002_080C);
        assert_eq!(GcrCntl::from_raw(0x0003_0000).seq(), GcrSeq::Unknown(3));
        assert_eq!(GcrCntl::from_raw(0x0000_0004).gl1_range(), Gl1Range::Unknown(1));
    }

    #[test]
    fn emits_literal_words() {
        let mut out = [0; 8];
        AcquireMem::full_range(linux_mem_sync()).emit(&mut out);
        assert_eq!(out, WORDS);
    }

    #[test]
    fn parses_literal_words() {
        let p = AcquireMem::parse(Type3Header::decode(WORDS[0]).unwrap(), &WORDS[1..]).unwrap();
        assert_eq!(p, AcquireMem::full_range(linux_mem_sync()));
        assert_eq!(p.coher_size_hi, 0x00FF_FFFF);
        assert_eq!(p.poll_interval, 0xA);
        assert_eq!(p.gcr_cntl.gl2_wb(), 1);
        assert_eq!(
            AcquireMem::parse(Type3Header::decode(WORDS[0]).unwrap(), &WORDS[1..7]),
            Err(PacketError::BodyLength { opcode: Opcode::AcquireMem, expected: 7, found: 6 })
        );
    }

    #[test]
    fn visit_names_enumerated_fields() {
        let mut rec = Recorder::default();
        AcquireMem::full_range(linux_mem_sync()).visit(&mut rec);
        assert_eq!(rec.items[5], Item::Field("POLL_INTERVAL", 0xA));
        assert_eq!(rec.items[6], Item::Word("GCR_CNTL", 0xC3B1));
        assert_eq!(rec.items[7], Item::Enum("GLI_INV", 1, Some("ALL")));
        assert_eq!(rec.items[10], Item::Enum("SEQ", 0, Some("PARALLEL")));
    }
}
