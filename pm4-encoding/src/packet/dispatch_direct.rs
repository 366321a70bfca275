//! `DISPATCH_DIRECT` (0x15): launch a compute grid.
//!
//! Body (reference §4 "DISPATCH_DIRECT"): dw0..2 `DIM_X`, `DIM_Y`, `DIM_Z` (thread groups, unless
//! `USE_THREAD_DIMENSIONS`), dw3 `DISPATCH_INITIATOR`, laid out like the
//! `COMPUTE_DISPATCH_INITIATOR` register (reference §3). Mesa sends it with `SHADER_TYPE` = 1.

use crate::bits::FieldDesc;
use crate::disasm::Visitor;
use crate::family::Family;
use crate::header::{HeaderFlags, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, PacketError};

mod field {
    /// Body dwords.
    pub(super) const BODY_DWORDS: usize = 4;
    pub(super) const DIM_X: usize = 0;
    pub(super) const DIM_Y: usize = 1;
    pub(super) const DIM_Z: usize = 2;
    pub(super) const DISPATCH_INITIATOR: usize = 3;
}

crate::bitfield32! {
    /// `COMPUTE_DISPATCH_INITIATOR`, as carried by the dispatch packets: the bits gfx10.3, gfx11
    /// and gfx12 share (reference §3). Family-only bits (bit 12, `AMP_SHADER_EN`,
    /// `INTERLEAVE_2D_EN`, ...) are kept in the raw word; [`DispatchInitiator::fields`] names them
    /// from the family's register map.
    pub struct DispatchInitiator {
        /// Enable the compute shader.
        [0] compute_shader_en, with_compute_shader_en = "COMPUTE_SHADER_EN";
        /// Allow partial thread groups.
        [1] partial_tg_en, with_partial_tg_en = "PARTIAL_TG_EN";
        /// Start at group (0, 0, 0) instead of `COMPUTE_START_*`.
        [2] force_start_at_000, with_force_start_at_000 = "FORCE_START_AT_000";
        /// Ordered append enable.
        [3] ordered_append_enbl, with_ordered_append_enbl = "ORDERED_APPEND_ENBL";
        /// Ordered append mode.
        [4] ordered_append_mode, with_ordered_append_mode = "ORDERED_APPEND_MODE";
        /// `DIM_*` count threads instead of thread groups.
        [5] use_thread_dimensions, with_use_thread_dimensions = "USE_THREAD_DIMENSIONS";
        /// Order mode.
        [6] order_mode, with_order_mode = "ORDER_MODE";
        /// Scalar L1 invalidate volatile.
        [10] scalar_l1_inv_vol, with_scalar_l1_inv_vol = "SCALAR_L1_INV_VOL";
        /// Vector L1 invalidate volatile.
        [11] vector_l1_inv_vol, with_vector_l1_inv_vol = "VECTOR_L1_INV_VOL";
        /// Tunnel enable.
        [13] tunnel_enable, with_tunnel_enable = "TUNNEL_ENABLE";
        /// Restore.
        [14] restore, with_restore = "RESTORE";
        /// Wave32 (0: wave64).
        [15] cs_w32_en, with_cs_w32_en = "CS_W32_EN";
    }
}

impl DispatchInitiator {
    /// What Mesa sends for a plain dispatch (reference §4 "DISPATCH_DIRECT" `typical_initiator`):
    /// `COMPUTE_SHADER_EN | FORCE_START_AT_000 | ORDER_MODE`, plus `CS_W32_EN` for wave32.
    #[must_use]
    #[inline(always)]
    pub const fn typical(wave32: bool) -> Self {
        let word = Self::from_raw(0).with_compute_shader_en(1).with_force_start_at_000(1).with_order_mode(1);
        word.with_cs_w32_en(if wave32 { 1 } else { 0 })
    }

    /// The field table to render the word with on `family`: the family map's
    /// `COMPUTE_DISPATCH_INITIATOR` fields when it has them, else the shared [`Self::FIELDS`].
    #[must_use]
    pub fn fields(family: Family) -> &'static [FieldDesc] {
        let fields = family.facts().compute.dispatch_initiator.fields;
        if fields.is_empty() { Self::FIELDS } else { fields }
    }
}

/// A validated `DISPATCH_DIRECT` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DispatchDirect {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// Thread groups (or threads) in X.
    pub dim_x: u32,
    /// Thread groups (or threads) in Y.
    pub dim_y: u32,
    /// Thread groups (or threads) in Z.
    pub dim_z: u32,
    /// The dispatch initiator.
    pub initiator: DispatchInitiator,
}

impl DispatchDirect {
    /// Total dwords of the packet, header included.
    pub const BUFFER_LEN: usize = 1 + field::BODY_DWORDS;

    /// A dispatch of `dim_x` × `dim_y` × `dim_z`, with `SHADER_TYPE` = compute as Mesa sends it.
    /// Every combination of values is encodable, so this cannot fail.
    #[must_use]
    #[inline(always)]
    pub const fn new(dim_x: u32, dim_y: u32, dim_z: u32, initiator: DispatchInitiator) -> Self {
        Self { flags: HeaderFlags::COMPUTE, dim_x, dim_y, dim_z, initiator }
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] unless the body is 4 dwords.
    pub fn parse(header: Type3Header, body: &[u32]) -> Result<Self, PacketError> {
        let &[dim_x, dim_y, dim_z, initiator] = body else {
            return Err(PacketError::BodyLength {
                opcode: Opcode::DispatchDirect,
                expected: field::BODY_DWORDS,
                found: body.len(),
            });
        };
        Ok(Self { flags: header.flags(), dim_x, dim_y, dim_z, initiator: DispatchInitiator::from_raw(initiator) })
    }

    /// Reports the fields; the initiator's bits are named from `family`'s map.
    pub fn visit(&self, family: Family, v: &mut dyn Visitor) {
        v.field("DIM_X", u64::from(self.dim_x));
        v.field("DIM_Y", u64::from(self.dim_y));
        v.field("DIM_Z", u64::from(self.dim_z));
        v.word("DISPATCH_INITIATOR", self.initiator.raw(), DispatchInitiator::fields(family));
    }
}

impl Emit for DispatchDirect {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        Self::BUFFER_LEN
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        let out: &mut [u32; Self::BUFFER_LEN] = out.try_into().expect("DISPATCH_DIRECT needs exactly 5 dwords");
        out[0] = Type3Header::with_flags(Opcode::DispatchDirect, field::BODY_DWORDS, self.flags).encode();
        out[1 + field::DIM_X] = self.dim_x;
        out[1 + field::DIM_Y] = self.dim_y;
        out[1 + field::DIM_Z] = self.dim_z;
        out[1 + field::DISPATCH_INITIATOR] = self.initiator.raw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_util::{Item, Recorder};

    // Reference §4: DISPATCH_DIRECT compute header = 0xC0031502; typical wave32 initiator 0x8045.
    const WORDS: [u32; 5] = [0xC003_1502, 64, 2, 1, 0x0000_8045];

    #[test]
    fn typical_initiators() {
        assert_eq!(DispatchInitiator::typical(true).raw(), 0x8045);
        assert_eq!(DispatchInitiator::typical(false).raw(), 0x0045);
    }

    #[test]
    fn emits_literal_words() {
        let mut out = [0; 5];
        DispatchDirect::new(64, 2, 1, DispatchInitiator::typical(true)).emit(&mut out);
        assert_eq!(out, WORDS);
    }

    #[test]
    fn parses_literal_words() {
        let p = DispatchDirect::parse(Type3Header::decode(WORDS[0]).unwrap(), &WORDS[1..]).unwrap();
        assert_eq!((p.dim_x, p.dim_y, p.dim_z), (64, 2, 1));
        assert_eq!(p.flags, HeaderFlags::COMPUTE);
        assert_eq!(p.initiator.cs_w32_en(), 1);
        assert_eq!(p.initiator.order_mode(), 1);
        assert_eq!(p.initiator.partial_tg_en(), 0);
        // gfx12 INTERLEAVE_2D_EN [18] and TTRACE_QUEUE_ID [31:29] are not shared fields but survive.
        let p = DispatchDirect::parse(Type3Header::decode(WORDS[0]).unwrap(), &[1, 1, 1, 0xE004_0001]).unwrap();
        assert_eq!(p.initiator.unknown_bits(), 0xE004_0000);
        let mut out = [0; 5];
        p.emit(&mut out);
        assert_eq!(out, [0xC003_1502, 1, 1, 1, 0xE004_0001]);
    }

    #[test]
    fn rejects_wrong_length() {
        let header = Type3Header::decode(WORDS[0]).unwrap();
        assert_eq!(
            DispatchDirect::parse(header, &WORDS[1..4]),
            Err(PacketError::BodyLength { opcode: Opcode::DispatchDirect, expected: 4, found: 3 })
        );
        assert!(DispatchDirect::parse(header, &[0; 5]).is_err());
    }

    #[test]
    fn visit_reports_dims_and_initiator() {
        for family in Family::ALL {
            let mut rec = Recorder::default();
            DispatchDirect::new(64, 2, 1, DispatchInitiator::typical(true)).visit(family, &mut rec);
            assert_eq!(
                rec.items,
                [
                    Item::Field("DIM_X", 64),
                    Item::Field("DIM_Y", 2),
                    Item::Field("DIM_Z", 1),
                    Item::Word("DISPATCH_INITIATOR", 0x8045),
                ]
            );
            let table = rec.tables[0].1;
            assert!(table.iter().any(|f| f.name == "CS_W32_EN" && f.hi == 15 && f.lo == 15));
        }
    }
}
