//! Register map of the gfx10.3 family (gfx1030).
//!
//! Offsets: reference §2; fields: reference §3. Absent here, and deliberately not aliased:
//! `COMPUTE_STATIC_THREAD_MGMT_SE4..SE8`, `COMPUTE_DISPATCH_INTERLEAVE` and
//! `COMPUTE_PRESCALED_DIM_X/Y/Z`. `COMPUTE_RELAUNCH`, `COMPUTE_WAVE_RESTORE_ADDR_LO/HI` and
//! `COMPUTE_RELAUNCH2` sit at 0x2E2B..0x2E2E here, where gfx11 and gfx12 have SE4..SE7 (§9).

pub use super::common::{
    ComputeNumThreadZ, ComputePgmHi, ComputeReqCtrl, ComputeResourceLimits, ComputeStaticThreadMgmtSe0To3, ComputeVmid,
    ExceptionMask, FloatMode,
};

/// `GCR_CNTL` of a system-scope acquire (the entry of an IB, and with the write-back the terminal
/// one): `GL2_INV | GL2_WB | GLM_INV | GLM_WB | GL1_INV | GLV_INV | GLK_INV | GLI_INV(ALL)` =
/// 0x0000C3B1, Linux's `emit_mem_sync` full flush on gfx10/11/12 (reference §4 "ACQUIRE_MEM"
/// `example_linux_full_flush_gcr_cntl_derived`).
pub const SYSTEM_ACQUIRE_GCR: crate::packet::GcrCntl = crate::packet::GcrCntl::from_raw(0x0000_C3B1);

/// `GCR_CNTL` a consumer's acquire needs (reference §4 "GCR_CNTL (ACQUIRE_MEM dw6)"): `GLV_INV`
/// (vector L0, bit 8) and `GLK_INV` (scalar cache, bit 7), since a kernel reads buffers through
/// both, and `GL1_INV` (bit 9), because GL1 is a per-shader-array cache between L0 and GL2 on this
/// family. GL2 is the device's coherence point for a single device, so neither `GL2_INV` nor
/// `GL2_WB` is required between dispatches.
pub const CONSUMER_ACQUIRE_GCR: crate::packet::GcrCntl =
    crate::packet::GcrCntl::from_raw(0).with_glv_inv(1).with_glk_inv(1).with_gl1_inv(1);

/// Whether `DISPATCH_DIRECT`'s `DIM_*` count work-items (`USE_THREAD_DIMENSIONS` = 1) in this
/// project's recipe: no, work-groups (reference §4 "DISPATCH_DIRECT": `DIM_*` are thread groups
/// unless `DISPATCH_INITIATOR.USE_THREAD_DIMENSIONS` = 1). A project policy, not a hardware limit;
/// see [`crate::policy`].
pub const DISPATCH_DIMS_IN_WORK_ITEMS: bool = false;

/// Bytes per unit of `COMPUTE_PGM_RSRC2.LDS_SIZE` (reference §3 "Other register semantics", §9
/// "LDS_SIZE granularity": Mesa `lds_encode_granularity` = 512 bytes on GFX7+).
pub const LDS_ENCODE_GRANULE_BYTES: u32 = 512;
/// Granule the hardware allocates LDS in (reference §3 "Other register semantics", §9: Mesa
/// `lds_alloc_granularity` = 1024 bytes on GFX10.3+).
pub const LDS_ALLOC_GRANULE_BYTES: u32 = 1024;
/// Bytes per unit of `COMPUTE_TMPRING_SIZE.WAVESIZE`: 1024 (256 dwords) on gfx10.3 (reference §3
/// "Other register semantics").
pub const TMPRING_WAVESIZE_UNIT_BYTES: u32 = 1024;

crate::bitfield32! {
    /// `COMPUTE_DISPATCH_INITIATOR` on gfx10.3 (reference §3): no bits above 15.
    pub struct ComputeDispatchInitiator {
        /// Compute shader enable.
        [0] compute_shader_en, with_compute_shader_en = "COMPUTE_SHADER_EN";
        /// Partial work-groups enable (sizes in `NUM_THREAD_*.NUM_THREAD_PARTIAL`).
        [1] partial_tg_en, with_partial_tg_en = "PARTIAL_TG_EN";
        /// Start at work-group (0, 0, 0) instead of `COMPUTE_START_*`.
        [2] force_start_at_000, with_force_start_at_000 = "FORCE_START_AT_000";
        /// Ordered append enable.
        [3] ordered_append_enbl, with_ordered_append_enbl = "ORDERED_APPEND_ENBL";
        /// Ordered append mode.
        [4] ordered_append_mode, with_ordered_append_mode = "ORDERED_APPEND_MODE";
        /// Dimensions are in threads rather than work-groups.
        [5] use_thread_dimensions, with_use_thread_dimensions = "USE_THREAD_DIMENSIONS";
        /// Order mode.
        [6] order_mode, with_order_mode = "ORDER_MODE";
        /// Scalar L1 invalidate volatile.
        [10] scalar_l1_inv_vol, with_scalar_l1_inv_vol = "SCALAR_L1_INV_VOL";
        /// Vector L1 invalidate volatile.
        [11] vector_l1_inv_vol, with_vector_l1_inv_vol = "VECTOR_L1_INV_VOL";
        /// Reserved (gfx12: `PING_PONG_EN`).
        [12] reserved, with_reserved = "RESERVED";
        /// Tunnel enable.
        [13] tunnel_enable, with_tunnel_enable = "TUNNEL_ENABLE";
        /// Restore.
        [14] restore, with_restore = "RESTORE";
        /// Wave32 dispatch.
        [15] cs_w32_en, with_cs_w32_en = "CS_W32_EN";
    }
}

crate::bitfield32! {
    /// `COMPUTE_NUM_THREAD_X` on gfx10.3 (reference §3): a 16-bit work-group size.
    pub struct ComputeNumThreadX {
        /// Work-group size in X.
        [15:0] num_thread_full, with_num_thread_full = "NUM_THREAD_FULL";
        /// X size of the partial last work-group.
        [31:16] num_thread_partial, with_num_thread_partial = "NUM_THREAD_PARTIAL";
    }
}

crate::bitfield32! {
    /// `COMPUTE_NUM_THREAD_Y` on gfx10.3 (reference §3): a 16-bit work-group size.
    pub struct ComputeNumThreadY {
        /// Work-group size in Y.
        [15:0] num_thread_full, with_num_thread_full = "NUM_THREAD_FULL";
        /// Y size of the partial last work-group.
        [31:16] num_thread_partial, with_num_thread_partial = "NUM_THREAD_PARTIAL";
    }
}

crate::bitfield32! {
    /// `COMPUTE_PGM_RSRC1` on gfx10.3 (reference §3): bit 21 `DX10_CLAMP`, bit 23 `IEEE_MODE`.
    pub struct ComputePgmRsrc1 {
        /// Granulated VGPR count: wave64 `max(0, ceil(vgprs / 4) - 1)`, wave32 `/ 8`.
        [5:0] vgprs, with_vgprs = "VGPRS";
        /// Granulated SGPR count; 0 on GFX10+ (128 SGPRs are always allocated).
        [9:6] sgprs, with_sgprs = "SGPRS";
        /// Priority; 0 (the CP fills it).
        [11:10] priority, with_priority = "PRIORITY";
        /// Float round and denorm modes; see [`FloatMode`].
        [19:12] float_mode, with_float_mode = "FLOAT_MODE";
        /// Privileged; 0.
        [20] privileged, with_privileged = "PRIV";
        /// DX10 clamp.
        [21] dx10_clamp, with_dx10_clamp = "DX10_CLAMP";
        /// IEEE mode.
        [23] ieee_mode, with_ieee_mode = "IEEE_MODE";
        /// Bulky; 0.
        [24] bulky, with_bulky = "BULKY";
        /// FP16 overflow.
        [26] fp16_ovfl, with_fp16_ovfl = "FP16_OVFL";
        /// 0 CU mode, 1 WGP mode.
        [29] wgp_mode, with_wgp_mode = "WGP_MODE";
        /// Memory ordered.
        [30] mem_ordered, with_mem_ordered = "MEM_ORDERED";
        /// Forward progress.
        [31] fwd_progress, with_fwd_progress = "FWD_PROGRESS";
    }
}

crate::bitfield32! {
    /// `COMPUTE_PGM_RSRC2` on gfx10.3 (reference §3): bit 6 `TRAP_PRESENT`, no bit 31.
    pub struct ComputePgmRsrc2 {
        /// Private segment (scratch) enable.
        [0] scratch_en, with_scratch_en = "SCRATCH_EN";
        /// Number of user SGPRs.
        [5:1] user_sgpr, with_user_sgpr = "USER_SGPR";
        /// Trap handler present (set by the CP).
        [6] trap_present, with_trap_present = "TRAP_PRESENT";
        /// Work-group id X in an SGPR.
        [7] tgid_x_en, with_tgid_x_en = "TGID_X_EN";
        /// Work-group id Y in an SGPR.
        [8] tgid_y_en, with_tgid_y_en = "TGID_Y_EN";
        /// Work-group id Z in an SGPR.
        [9] tgid_z_en, with_tgid_z_en = "TGID_Z_EN";
        /// Work-group info in an SGPR.
        [10] tg_size_en, with_tg_size_en = "TG_SIZE_EN";
        /// Work-item id VGPRs: 0 X, 1 XY, 2 XYZ.
        [12:11] tidig_comp_cnt, with_tidig_comp_cnt = "TIDIG_COMP_CNT";
        /// Exceptions 7..8 of [`ExceptionMask`].
        [14:13] excp_en_msb, with_excp_en_msb = "EXCP_EN_MSB";
        /// LDS size in [`LDS_ENCODE_GRANULE_BYTES`] granules; see [`super::lds_size_field`].
        [23:15] lds_size, with_lds_size = "LDS_SIZE";
        /// Exceptions 0..6 of [`ExceptionMask`].
        [30:24] excp_en, with_excp_en = "EXCP_EN";
    }
}

crate::bitfield32! {
    /// `COMPUTE_PGM_RSRC3` on gfx10.3 (reference §3): only `SHARED_VGPR_CNT`.
    pub struct ComputePgmRsrc3 {
        /// Shared VGPR count (wave64 only; 0 for wave32).
        [3:0] shared_vgpr_cnt, with_shared_vgpr_cnt = "SHARED_VGPR_CNT";
    }
}

crate::bitfield32! {
    /// `COMPUTE_TMPRING_SIZE` on gfx10.3 (reference §3): `WAVESIZE` is 13 bits of
    /// [`TMPRING_WAVESIZE_UNIT_BYTES`] units.
    pub struct ComputeTmpringSize {
        /// Number of waves with scratch.
        [11:0] waves, with_waves = "WAVES";
        /// Scratch per wave in [`TMPRING_WAVESIZE_UNIT_BYTES`] units; see
        /// [`super::tmpring_wavesize_field`].
        [24:12] wavesize, with_wavesize = "WAVESIZE";
    }
}

crate::bitfield32! {
    /// `COMPUTE_DISPATCH_TUNNEL` on gfx10.3 (reference §3).
    pub struct ComputeDispatchTunnel {
        /// Off delay.
        [9:0] off_delay, with_off_delay = "OFF_DELAY";
        /// Immediate.
        [10] immediate, with_immediate = "IMMEDIATE";
    }
}

pub use super::columns::gfx10_3::*;

/// Every register of this family, ordered by dword offset (its column of [`super::columns`]).
pub static REGISTERS: &[super::RegisterInfo] = TABLE;

use crate::bits::mask;
use crate::family::{DescriptorZeroBits, Family, FlatScratch, ZeroBits};

// Absolute flat scratch: a descriptor may ask for the private-segment buffer (reference §6).
family_facts! {
    family: Family::Gfx10_3,
    name: "gfx10_3",
    flat_scratch: FlatScratch::Absolute,
    queue_owned: [
        COMPUTE_TMPRING_SIZE, COMPUTE_STATIC_THREAD_MGMT_SE0, COMPUTE_STATIC_THREAD_MGMT_SE1, COMPUTE_STATIC_THREAD_MGMT_SE2,
        COMPUTE_STATIC_THREAD_MGMT_SE3,
    ],
    // Reference §3 KD view, gfx10_3 rows.
    descriptor_zero_bits: DescriptorZeroBits {
        rsrc1: &[],
        rsrc2: &[
            ZeroBits { names: "ENABLE_TRAP_HANDLER", mask: mask(6, 6) },
            ZeroBits { names: "RESERVED0", mask: mask(31, 31) },
        ],
        rsrc3: &[
            // Only SHARED_VGPR_COUNT [3:0] is defined.
            ZeroBits { names: "RESERVED1", mask: mask(11, 4) },
            ZeroBits { names: "RESERVED", mask: mask(12, 12) },
            ZeroBits { names: "undefined", mask: mask(31, 13) },
        ],
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsrc2_literal_word() {
        // USER_SGPR=2 at [5:1] -> 0x4, TGID_X_EN at [7] -> 0x80, LDS_SIZE=3 at [23:15] -> 0x1_8000.
        let w = ComputePgmRsrc2::default().with_user_sgpr(2).with_tgid_x_en(1).with_lds_size(3);
        assert_eq!(w.raw(), 0x0001_8084);
        // TRAP_PRESENT [6] is a named bit here; bit 31 is not.
        assert_eq!(ComputePgmRsrc2::from_raw(0x8000_0040).trap_present(), 1);
        assert_eq!(ComputePgmRsrc2::from_raw(0x8000_0040).unknown_bits(), 0x8000_0000);
    }

    #[test]
    fn rsrc1_literal_word() {
        // VGPRS=3, FLOAT_MODE=0xF0 at [19:12], DX10_CLAMP [21], IEEE_MODE [23], WGP_MODE [29], MEM_ORDERED [30].
        let w = ComputePgmRsrc1::default()
            .with_vgprs(3)
            .with_float_mode(FloatMode::FP_32_DENORMS.union(FloatMode::FP_16_64_DENORMS).raw())
            .with_dx10_clamp(1)
            .with_ieee_mode(1)
            .with_wgp_mode(1)
            .with_mem_ordered(1);
        assert_eq!(w.raw(), 0x60AF_0003);
    }

    #[test]
    fn dispatch_initiator_literal_word() {
        // COMPUTE_SHADER_EN [0], FORCE_START_AT_000 [2], CS_W32_EN [15].
        let w =
            ComputeDispatchInitiator::default().with_compute_shader_en(1).with_force_start_at_000(1).with_cs_w32_en(1);
        assert_eq!(w.raw(), 0x0000_8005);
        // Bits 16.. are not named on gfx10.3.
        assert_eq!(ComputeDispatchInitiator::from_raw(0x0003_0000).unknown_bits(), 0x0003_0000);
    }

    #[test]
    fn num_thread_x_is_16_bits() {
        assert_eq!(ComputeNumThreadX::default().with_num_thread_full(0xFFFF).raw(), 0x0000_FFFF);
        assert_eq!(ComputeNumThreadX::default().with_num_thread_full(64).with_num_thread_partial(7).raw(), 0x0007_0040);
    }

    #[test]
    fn tmpring_wavesize_is_13_bits() {
        // WAVES=0x100 [11:0], WAVESIZE=0x1FFF [24:12].
        let w = ComputeTmpringSize::default().with_waves(0x100).with_wavesize(0x1FFF);
        assert_eq!(w.raw(), 0x01FF_F100);
        assert_eq!(FACTS.tmpring_wavesize_max_bytes, 0x1FFF * 1024);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn tmpring_wavesize_rejects_14_bits() {
        let _ = ComputeTmpringSize::default().with_wavesize(0x2000);
    }

    #[test]
    fn moved_registers_sit_where_gfx11_has_se4_to_se7() {
        assert_eq!(COMPUTE_RELAUNCH.dword, 0x2E2B);
        assert_eq!(COMPUTE_RELAUNCH2.dword, 0x2E2E);
        assert!(!REGISTERS.iter().any(|r| r.name.starts_with("COMPUTE_STATIC_THREAD_MGMT_SE4")));
        assert!(!REGISTERS.iter().any(|r| r.dword == 0x2E2F));
    }
}
