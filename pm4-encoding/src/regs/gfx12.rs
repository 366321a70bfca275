//! Register map of the gfx12 family (gfx1200, gfx1201; GC 12.0).
//!
//! Offsets: reference §2; fields: reference §3. Everything of gfx11 at the same offsets, plus
//! `COMPUTE_STATIC_THREAD_MGMT_SE8` at 0x2E23 and `COMPUTE_PRESCALED_DIM_X/Y/Z` at 0x2E35..0x2E37
//! (§9). The reference's gfx12 offsets rest on Mesa's gfx12 register DB alone (§10).

pub use super::common::{
    ComputeNumThreadZ, ComputePgmHi, ComputeReqCtrl, ComputeResourceLimits, ComputeStaticThreadMgmtSe0To3,
    ComputeStaticThreadMgmtSe4, ComputeVmid, ExceptionMask, FloatMode,
};

/// `GCR_CNTL` of a system-scope acquire (the entry of an IB, and with the write-back the terminal
/// one): `GL2_INV | GL2_WB | GLM_INV | GLM_WB | GL1_INV | GLV_INV | GLK_INV | GLI_INV(ALL)` =
/// 0x0000C3B1, Linux's `emit_mem_sync` full flush on gfx10/11/12 (reference §4 "ACQUIRE_MEM"
/// `example_linux_full_flush_gcr_cntl_derived`).
pub const SYSTEM_ACQUIRE_GCR: crate::packet::GcrCntl = crate::packet::GcrCntl::from_raw(0x0000_C3B1);

/// `GCR_CNTL` a consumer's acquire needs (reference §4 "GCR_CNTL"): `GLV_INV` and `GLK_INV`, as on
/// gfx10.3/gfx11. `GL1_INV` is not required: Mesa stops setting GLM/GL1 bits on GFX12 and the
/// reference treats them as ignored-or-harmless there (§4, §10); GL2 is coherent for a single
/// device.
pub const CONSUMER_ACQUIRE_GCR: crate::packet::GcrCntl =
    crate::packet::GcrCntl::from_raw(0).with_glv_inv(1).with_glk_inv(1);

/// Whether `DISPATCH_DIRECT`'s `DIM_*` count work-items (`USE_THREAD_DIMENSIONS` = 1) in this
/// project's recipe: yes on gfx12 (reference §4 "DISPATCH_DIRECT", §9 `COMPUTE_PRESCALED_DIM`). A
/// project policy, not a hardware limit; see [`crate::policy`].
pub const DISPATCH_DIMS_IN_WORK_ITEMS: bool = true;

/// Bytes per unit of `COMPUTE_PGM_RSRC2.LDS_SIZE` (reference §3 "Other register semantics", §9
/// "LDS_SIZE granularity": Mesa `lds_encode_granularity` = 512 bytes on GFX7+; the LLVM 19 doc
/// says nothing for GFX12, Mesa's value is used).
pub const LDS_ENCODE_GRANULE_BYTES: u32 = 512;
/// Granule the hardware allocates LDS in (reference §3 "Other register semantics", §9: Mesa
/// `lds_alloc_granularity` = 1024 bytes on GFX10.3+).
pub const LDS_ALLOC_GRANULE_BYTES: u32 = 1024;
/// Bytes per unit of `COMPUTE_TMPRING_SIZE.WAVESIZE`: 256 (64 dwords) on gfx12 (reference §3
/// "Other register semantics").
pub const TMPRING_WAVESIZE_UNIT_BYTES: u32 = 256;

crate::bitfield32! {
    /// `COMPUTE_DISPATCH_INITIATOR` on gfx12 (reference §3): bit 12 `PING_PONG_EN`, bits 16..18
    /// and `TTRACE_QUEUE_ID` `[31:29]`.
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
        /// Ping-pong enable.
        [12] ping_pong_en, with_ping_pong_en = "PING_PONG_EN";
        /// Tunnel enable.
        [13] tunnel_enable, with_tunnel_enable = "TUNNEL_ENABLE";
        /// Restore.
        [14] restore, with_restore = "RESTORE";
        /// Wave32 dispatch.
        [15] cs_w32_en, with_cs_w32_en = "CS_W32_EN";
        /// Amplification shader enable.
        [16] amp_shader_en, with_amp_shader_en = "AMP_SHADER_EN";
        /// Disable dispatch preemption.
        [17] disable_disp_prempt_en, with_disable_disp_prempt_en = "DISABLE_DISP_PREMPT_EN";
        /// 2-D interleave enable (see [`ComputeDispatchInterleave`]).
        [18] interleave_2d_en, with_interleave_2d_en = "INTERLEAVE_2D_EN";
        /// Thread-trace queue id.
        [31:29] ttrace_queue_id, with_ttrace_queue_id = "TTRACE_QUEUE_ID";
    }
}

crate::bitfield32! {
    /// `COMPUTE_NUM_THREAD_X` on gfx12 (reference §3): a 13-bit work-group size and
    /// `INTERLEAVE_BITS_X` `[15:13]`.
    pub struct ComputeNumThreadX {
        /// Work-group size in X (at most 8191).
        [12:0] num_thread_full, with_num_thread_full = "NUM_THREAD_FULL";
        /// Interleave bits in X.
        [15:13] interleave_bits_x, with_interleave_bits_x = "INTERLEAVE_BITS_X";
        /// X size of the partial last work-group.
        [31:16] num_thread_partial, with_num_thread_partial = "NUM_THREAD_PARTIAL";
    }
}

crate::bitfield32! {
    /// `COMPUTE_NUM_THREAD_Y` on gfx12 (reference §3): a 13-bit work-group size and
    /// `INTERLEAVE_BITS_Y` `[15:13]`.
    pub struct ComputeNumThreadY {
        /// Work-group size in Y (at most 8191).
        [12:0] num_thread_full, with_num_thread_full = "NUM_THREAD_FULL";
        /// Interleave bits in Y.
        [15:13] interleave_bits_y, with_interleave_bits_y = "INTERLEAVE_BITS_Y";
        /// Y size of the partial last work-group.
        [31:16] num_thread_partial, with_num_thread_partial = "NUM_THREAD_PARTIAL";
    }
}

crate::bitfield32! {
    /// `COMPUTE_PGM_RSRC1` on gfx12 (reference §3): bits 21..23 and 25 differ from gfx10.3/gfx11
    /// (no `DX10_CLAMP` or `IEEE_MODE`).
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
        /// Work-group round-robin scheduling (the CP fills it).
        [21] wg_rr_en, with_wg_rr_en = "WG_RR_EN";
        /// Debug mode; 0.
        [22] debug_mode, with_debug_mode = "DEBUG_MODE";
        /// Disable perf; reserved, 0.
        [23] disable_perf, with_disable_perf = "DISABLE_PERF";
        /// Bulky; 0.
        [24] bulky, with_bulky = "BULKY";
        /// CDBG user; 0.
        [25] cdbg_user, with_cdbg_user = "CDBG_USER";
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
    /// `COMPUTE_PGM_RSRC2` on gfx12 (reference §3): bit 6 `DYNAMIC_VGPR`, bit 31 `WGP_TAKEOVER`
    /// (both reserved in LLVM 19; §9).
    pub struct ComputePgmRsrc2 {
        /// Private segment (scratch) enable.
        [0] scratch_en, with_scratch_en = "SCRATCH_EN";
        /// Number of user SGPRs.
        [5:1] user_sgpr, with_user_sgpr = "USER_SGPR";
        /// Dynamic VGPRs; 0 unless dynamic VGPRs are intended.
        [6] dynamic_vgpr, with_dynamic_vgpr = "DYNAMIC_VGPR";
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
        /// WGP takeover.
        [31] wgp_takeover, with_wgp_takeover = "WGP_TAKEOVER";
    }
}

crate::bitfield32! {
    /// `COMPUTE_PGM_RSRC3` on gfx12 (reference §3): 8-bit `INST_PREF_SIZE`, `GLG_EN`, no trap bits.
    pub struct ComputePgmRsrc3 {
        /// Listed by Mesa's gfx12 DB; reserved on GFX12 per LLVM (§9). Write 0.
        [3:0] shared_vgpr_cnt, with_shared_vgpr_cnt = "SHARED_VGPR_CNT";
        /// Instruction prefetch size, 0..=255 in 128-byte units.
        [11:4] inst_pref_size, with_inst_pref_size = "INST_PREF_SIZE";
        /// Group launch guarantee.
        [13] glg_en, with_glg_en = "GLG_EN";
        /// Image operations; 0 for compute outside a graphics pipeline.
        [31] image_op, with_image_op = "IMAGE_OP";
    }
}

crate::bitfield32! {
    /// `COMPUTE_TMPRING_SIZE` on gfx12 (reference §3): `WAVESIZE` is 18 bits of
    /// [`TMPRING_WAVESIZE_UNIT_BYTES`] units.
    pub struct ComputeTmpringSize {
        /// Number of waves with scratch.
        [11:0] waves, with_waves = "WAVES";
        /// Scratch per wave in [`TMPRING_WAVESIZE_UNIT_BYTES`] units; see
        /// [`super::tmpring_wavesize_field`].
        [29:12] wavesize, with_wavesize = "WAVESIZE";
    }
}

crate::bitfield32! {
    /// `COMPUTE_DISPATCH_TUNNEL` on gfx12 (reference §3): a 13-bit `OFF_DELAY`, no `IMMEDIATE`.
    pub struct ComputeDispatchTunnel {
        /// Off delay.
        [12:0] off_delay, with_off_delay = "OFF_DELAY";
    }
}

crate::bitfield32! {
    /// `COMPUTE_DISPATCH_INTERLEAVE` on gfx12 (reference §3, §9): a 1-D interleave and a 2-D size.
    pub struct ComputeDispatchInterleave {
        /// 1-D interleave in threads per SE: 0, 64, 128, 256 or 512 (Mesa default 256).
        [9:0] interleave_1d, with_interleave_1d = "INTERLEAVE_1D";
        /// 2-D interleave size in X (with `DISPATCH_INITIATOR.INTERLEAVE_2D_EN`).
        [19:16] interleave_2d_x_size, with_interleave_2d_x_size = "INTERLEAVE_2D_X_SIZE";
        /// 2-D interleave size in Y.
        [27:24] interleave_2d_y_size, with_interleave_2d_y_size = "INTERLEAVE_2D_Y_SIZE";
    }
}

pub use super::columns::gfx12::*;

/// Every register of this family, ordered by dword offset (its column of [`super::columns`]).
pub static REGISTERS: &[super::RegisterInfo] = TABLE;

use crate::bits::mask;
use crate::family::{DescriptorZeroBits, Family, FlatScratch, ZeroBits};

// Architected flat scratch and architected SGPRs (reference §6): `ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER`
// must be 0.
family_facts! {
    family: Family::Gfx12,
    name: "gfx12",
    flat_scratch: FlatScratch::Architected,
    queue_owned: [
        COMPUTE_TMPRING_SIZE, COMPUTE_STATIC_THREAD_MGMT_SE0, COMPUTE_STATIC_THREAD_MGMT_SE1, COMPUTE_STATIC_THREAD_MGMT_SE2,
        COMPUTE_STATIC_THREAD_MGMT_SE3, COMPUTE_STATIC_THREAD_MGMT_SE8, COMPUTE_STATIC_THREAD_MGMT_SE4,
        COMPUTE_STATIC_THREAD_MGMT_SE5, COMPUTE_STATIC_THREAD_MGMT_SE6, COMPUTE_STATIC_THREAD_MGMT_SE7,
    ],
    // Reference §3 KD view, gfx12 rows; §9 for RSRC2 bits 6 and 31 (reserved in LLVM 19). RSRC1
    // bits 21 and 23 and RSRC2 bits 6 and 31 mean something else than on gfx10.3/gfx11.
    descriptor_zero_bits: DescriptorZeroBits {
        rsrc1: &[
            ZeroBits { names: "WG_RR_EN", mask: mask(21, 21) },
            ZeroBits { names: "DISABLE_PERF", mask: mask(23, 23) },
        ],
        rsrc2: &[
            ZeroBits { names: "ENABLE_DYNAMIC_VGPR", mask: mask(6, 6) },
            ZeroBits { names: "WGP_TAKEOVER", mask: mask(31, 31) },
        ],
        rsrc3: &[
            // INST_PREF_SIZE [11:4] and GLG_EN [13] are the descriptor's to set.
            ZeroBits { names: "RESERVED0", mask: mask(3, 0) },
            ZeroBits { names: "RESERVED", mask: mask(12, 12) },
            ZeroBits { names: "undefined", mask: mask(30, 14) },
            ZeroBits { names: "IMAGE_OP", mask: mask(31, 31) },
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
        // DYNAMIC_VGPR [6] and WGP_TAKEOVER [31] are named on gfx12.
        let w = ComputePgmRsrc2::default().with_dynamic_vgpr(1).with_wgp_takeover(1);
        assert_eq!(w.raw(), 0x8000_0040);
        assert_eq!(w.unknown_bits(), 0);
    }

    #[test]
    fn rsrc1_literal_word() {
        // VGPRS=7, WG_RR_EN [21], DEBUG_MODE [22], DISABLE_PERF [23], CDBG_USER [25], FWD_PROGRESS [31].
        let w = ComputePgmRsrc1::default()
            .with_vgprs(7)
            .with_wg_rr_en(1)
            .with_debug_mode(1)
            .with_disable_perf(1)
            .with_cdbg_user(1)
            .with_fwd_progress(1);
        assert_eq!(w.raw(), 0x82E0_0007);
    }

    #[test]
    fn rsrc3_literal_word() {
        // INST_PREF_SIZE=255 at [11:4], GLG_EN [13].
        assert_eq!(ComputePgmRsrc3::default().with_inst_pref_size(255).with_glg_en(1).raw(), 0x0000_2FF0);
    }

    #[test]
    fn dispatch_initiator_literal_word() {
        // COMPUTE_SHADER_EN [0], PING_PONG_EN [12], INTERLEAVE_2D_EN [18], TTRACE_QUEUE_ID=7 [31:29].
        let w = ComputeDispatchInitiator::default()
            .with_compute_shader_en(1)
            .with_ping_pong_en(1)
            .with_interleave_2d_en(1)
            .with_ttrace_queue_id(7);
        assert_eq!(w.raw(), 0xE004_1001);
    }

    #[test]
    fn num_thread_x_full_is_13_bits() {
        // NUM_THREAD_FULL [12:0], INTERLEAVE_BITS_X [15:13], NUM_THREAD_PARTIAL [31:16].
        let w = ComputeNumThreadX::default()
            .with_num_thread_full(8191)
            .with_interleave_bits_x(1)
            .with_num_thread_partial(3);
        assert_eq!(w.raw(), 0x0003_3FFF);
        assert_eq!(ComputeNumThreadY::from_raw(0x0000_E000).interleave_bits_y(), 7);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn num_thread_x_full_rejects_8192() {
        let _ = ComputeNumThreadX::default().with_num_thread_full(8192);
    }

    #[test]
    fn tmpring_wavesize_is_18_bits() {
        let w = ComputeTmpringSize::default().with_waves(0xFFF).with_wavesize(0x3_FFFF);
        assert_eq!(w.raw(), 0x3FFF_FFFF);
        assert_eq!(FACTS.tmpring_wavesize_max_bytes, 0x3_FFFF * 256);
    }

    #[test]
    fn tunnel_and_interleave_literal_words() {
        assert_eq!(ComputeDispatchTunnel::default().with_off_delay(0x1FFF).raw(), 0x0000_1FFF);
        // INTERLEAVE_1D=256 [9:0], INTERLEAVE_2D_X_SIZE=3 [19:16], INTERLEAVE_2D_Y_SIZE=2 [27:24].
        let w = ComputeDispatchInterleave::default()
            .with_interleave_1d(256)
            .with_interleave_2d_x_size(3)
            .with_interleave_2d_y_size(2);
        assert_eq!(w.raw(), 0x0203_0100);
    }

    #[test]
    fn gfx12_only_registers() {
        assert_eq!(COMPUTE_STATIC_THREAD_MGMT_SE8.dword, 0x2E23);
        assert_eq!(COMPUTE_PRESCALED_DIM_X.dword, 0x2E35);
        assert_eq!(COMPUTE_PRESCALED_DIM_Z.dword, 0x2E37);
        assert_eq!(COMPUTE_RELAUNCH.dword, 0x2E30);
    }
}
