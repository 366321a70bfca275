//! Register words whose field table is the same on every family that has the register, and the
//! named values of fields whose layout differs but whose values do not.
//!
//! Nothing here is used directly: each family module re-exports the words that exist on it, so a
//! caller always names a word through its family (`regs::gfx11::ComputeResourceLimits`). The
//! reference-table test checks every re-exported table against each family's entry in
//! `reference/amd-reference.json`, so a field that starts to differ on one family fails there and
//! moves into the family modules.

crate::bitfield32! {
    /// `COMPUTE_PGM_HI`: bits `[47:40]` of the kernel entry address (reference §2 usage notes: Mesa
    /// writes `entry_address >> 40` once in the preamble). Fields: reference §3.
    pub struct ComputePgmHi {
        /// Entry address bits `[47:40]`.
        [7:0] data, with_data = "DATA";
    }
}

crate::bitfield32! {
    /// `COMPUTE_VMID` (reference §3).
    pub struct ComputeVmid {
        /// The VMID.
        [3:0] data, with_data = "DATA";
    }
}

crate::bitfield32! {
    /// `COMPUTE_NUM_THREAD_Z` (reference §3): the work-group size in Z.
    pub struct ComputeNumThreadZ {
        /// Work-group size in Z.
        [15:0] num_thread_full, with_num_thread_full = "NUM_THREAD_FULL";
        /// Z size of the partial last work-group (with `DISPATCH_INITIATOR.PARTIAL_TG_EN`).
        [31:16] num_thread_partial, with_num_thread_partial = "NUM_THREAD_PARTIAL";
    }
}

crate::bitfield32! {
    /// `COMPUTE_RESOURCE_LIMITS` (reference §3).
    pub struct ComputeResourceLimits {
        /// Wave limit per shader array.
        [9:0] waves_per_sh, with_waves_per_sh = "WAVES_PER_SH";
        /// Work-group limit per CU.
        [15:12] tg_per_cu, with_tg_per_cu = "TG_PER_CU";
        /// Lock threshold.
        [21:16] lock_threshold, with_lock_threshold = "LOCK_THRESHOLD";
        /// SIMD destination control.
        [22] simd_dest_cntl, with_simd_dest_cntl = "SIMD_DEST_CNTL";
        /// Force SIMD distribution.
        [23] force_simd_dist, with_force_simd_dist = "FORCE_SIMD_DIST";
        /// CU group count.
        [26:24] cu_group_count, with_cu_group_count = "CU_GROUP_COUNT";
    }
}

crate::bitfield32! {
    /// `COMPUTE_REQ_CTRL` (reference §3).
    pub struct ComputeReqCtrl {
        /// Soft grouping enable.
        [0] soft_grouping_en, with_soft_grouping_en = "SOFT_GROUPING_EN";
        /// Number of requests per CU.
        [4:1] number_of_requests_per_cu, with_number_of_requests_per_cu = "NUMBER_OF_REQUESTS_PER_CU";
        /// Soft grouping allocation timeout.
        [8:5] soft_grouping_allocation_timeout, with_soft_grouping_allocation_timeout = "SOFT_GROUPING_ALLOCATION_TIMEOUT";
        /// Hard lock hysteresis.
        [9] hard_lock_hysteresis, with_hard_lock_hysteresis = "HARD_LOCK_HYSTERESIS";
        /// Hard lock low threshold.
        [14:10] hard_lock_low_threshold, with_hard_lock_low_threshold = "HARD_LOCK_LOW_THRESHOLD";
        /// Producer request lockout.
        [15] producer_request_lockout, with_producer_request_lockout = "PRODUCER_REQUEST_LOCKOUT";
        /// Global scanning enable.
        [16] global_scanning_en, with_global_scanning_en = "GLOBAL_SCANNING_EN";
        /// Allocation rate throttling threshold.
        [19:17] allocation_rate_throttling_threshold, with_allocation_rate_throttling_threshold = "ALLOCATION_RATE_THROTTLING_THRESHOLD";
        /// Dedicated preallocation buffer limit.
        [26:20] dedicated_preallocation_buffer_limit, with_dedicated_preallocation_buffer_limit = "DEDICATED_PREALLOCATION_BUFFER_LIMIT";
    }
}

crate::bitfield32! {
    /// `COMPUTE_STATIC_THREAD_MGMT_SE0` .. `SE3`: the CU enable mask of shader engines 0 to 3.
    ///
    /// Reference §3 "COMPUTE_STATIC_THREAD_MGMT_SE0..SE3": Mesa's gfx10.3/11/12 register DBs give
    /// no field breakdown (they call these `COMPUTE_DESTINATION_EN_SE0..3`); the layout is the
    /// gfx9 one Mesa's code still builds them with. On gfx12 Mesa treats the mask as 32 bits per
    /// SE rather than per SA. `0xFFFF_FFFF` enables every CU.
    pub struct ComputeStaticThreadMgmtSe0To3 {
        /// CU enable mask of shader array 0.
        [15:0] sh0_cu_en, with_sh0_cu_en = "SH0_CU_EN";
        /// CU enable mask of shader array 1.
        [31:16] sh1_cu_en, with_sh1_cu_en = "SH1_CU_EN";
    }
}

crate::bitfield32! {
    /// `COMPUTE_STATIC_THREAD_MGMT_SE4` (gfx11 and later; reference §3). The reference gives no
    /// field table for SE5..SE8, so those are whole-word registers in the maps.
    pub struct ComputeStaticThreadMgmtSe4 {
        /// CU enable mask of shader array 0.
        [15:0] sa0_cu_en, with_sa0_cu_en = "SA0_CU_EN";
        /// CU enable mask of shader array 1.
        [31:16] sa1_cu_en, with_sa1_cu_en = "SA1_CU_EN";
    }
}

/// Named values of `COMPUTE_PGM_RSRC1.FLOAT_MODE` (reference §3, same on every family). They are
/// sub-fields of the 8-bit mode, so they combine with [`FloatMode::union`]; the LLVM view of the
/// same bits is round mode 32 `[13:12]`, round mode 16/64 `[15:14]`, denorm mode 32 `[17:16]` and
/// denorm mode 16/64 `[19:18]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FloatMode(u32);

impl FloatMode {
    /// `FP_32_ROUND_TOWARDS_ZERO`.
    pub const FP_32_ROUND_TOWARDS_ZERO: Self = Self(3);
    /// `FP_16_64_ROUND_TOWARDS_ZERO`.
    pub const FP_16_64_ROUND_TOWARDS_ZERO: Self = Self(12);
    /// `FP_32_DENORMS`: keep fp32 denormals.
    pub const FP_32_DENORMS: Self = Self(48);
    /// `FP_16_64_DENORMS`: keep fp16/fp64 denormals.
    pub const FP_16_64_DENORMS: Self = Self(192);

    /// Every named value with its reference name.
    pub const NAMED: &'static [(&'static str, Self)] = &[
        ("FP_32_ROUND_TOWARDS_ZERO", Self::FP_32_ROUND_TOWARDS_ZERO),
        ("FP_16_64_ROUND_TOWARDS_ZERO", Self::FP_16_64_ROUND_TOWARDS_ZERO),
        ("FP_32_DENORMS", Self::FP_32_DENORMS),
        ("FP_16_64_DENORMS", Self::FP_16_64_DENORMS),
    ];

    /// Wraps a raw `FLOAT_MODE` field value (as read from a word).
    ///
    /// PANIC: asserts that `raw` fits the 8-bit field.
    #[must_use]
    pub const fn from_raw(raw: u32) -> Self {
        assert!(raw <= 0xFF, "FLOAT_MODE is 8 bits wide");
        Self(raw)
    }

    /// Both modes' bits.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The value for `COMPUTE_PGM_RSRC1.FLOAT_MODE`.
    #[must_use]
    pub const fn raw(self) -> u32 {
        self.0
    }
}

/// A set of shader exceptions, as the named values of `COMPUTE_PGM_RSRC2.EXCP_EN` (reference §3,
/// same on every family).
///
/// The reference's value list is a 9-bit mask: `ADDRESS_WATCH` (128) and `MEMORY_VIOLATION` (256)
/// do not fit the 7-bit `EXCP_EN` `[30:24]` and land in `EXCP_EN_MSB` `[14:13]` instead, which the
/// LLVM view of RSRC2 confirms (bit 13 address watch, bit 14 memory). [`Self::excp_en`] and
/// [`Self::excp_en_msb`] split the mask into the two fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ExceptionMask(u32);

impl ExceptionMask {
    /// `INVALID`.
    pub const INVALID: Self = Self(1);
    /// `INPUT_DENORMAL`.
    pub const INPUT_DENORMAL: Self = Self(2);
    /// `DIVIDE_BY_ZERO`.
    pub const DIVIDE_BY_ZERO: Self = Self(4);
    /// `OVERFLOW`.
    pub const OVERFLOW: Self = Self(8);
    /// `UNDERFLOW`.
    pub const UNDERFLOW: Self = Self(16);
    /// `INEXACT`.
    pub const INEXACT: Self = Self(32);
    /// `INT_DIVIDE_BY_ZERO`.
    pub const INT_DIVIDE_BY_ZERO: Self = Self(64);
    /// `ADDRESS_WATCH` (goes to `EXCP_EN_MSB` bit 0).
    pub const ADDRESS_WATCH: Self = Self(128);
    /// `MEMORY_VIOLATION` (goes to `EXCP_EN_MSB` bit 1).
    pub const MEMORY_VIOLATION: Self = Self(256);

    /// Every named value with its reference name.
    pub const NAMED: &'static [(&'static str, Self)] = &[
        ("INVALID", Self::INVALID),
        ("INPUT_DENORMAL", Self::INPUT_DENORMAL),
        ("DIVIDE_BY_ZERO", Self::DIVIDE_BY_ZERO),
        ("OVERFLOW", Self::OVERFLOW),
        ("UNDERFLOW", Self::UNDERFLOW),
        ("INEXACT", Self::INEXACT),
        ("INT_DIVIDE_BY_ZERO", Self::INT_DIVIDE_BY_ZERO),
        ("ADDRESS_WATCH", Self::ADDRESS_WATCH),
        ("MEMORY_VIOLATION", Self::MEMORY_VIOLATION),
    ];

    /// Width of `EXCP_EN` `[30:24]`; the mask bits above it go to `EXCP_EN_MSB`.
    const EXCP_EN_BITS: u32 = 7;

    /// No exception.
    pub const NONE: Self = Self(0);

    /// Both sets.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The 9-bit mask.
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The mask read back from a word's `EXCP_EN` and `EXCP_EN_MSB` fields.
    ///
    /// PANIC: asserts that the values fit their 7-bit and 2-bit fields.
    #[must_use]
    pub const fn from_fields(excp_en: u32, excp_en_msb: u32) -> Self {
        assert!(excp_en < 1 << Self::EXCP_EN_BITS && excp_en_msb <= 0b11, "EXCP_EN is 7 bits, EXCP_EN_MSB 2 bits");
        Self(excp_en | (excp_en_msb << Self::EXCP_EN_BITS))
    }

    /// The value for `COMPUTE_PGM_RSRC2.EXCP_EN` (mask bits 0..=6).
    #[must_use]
    pub const fn excp_en(self) -> u32 {
        self.bits() & ((1 << Self::EXCP_EN_BITS) - 1)
    }

    /// The value for `COMPUTE_PGM_RSRC2.EXCP_EN_MSB` (mask bits 7..=8).
    #[must_use]
    pub const fn excp_en_msb(self) -> u32 {
        (self.bits() >> Self::EXCP_EN_BITS) & 0b11
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_words_from_literal_values() {
        // RESOURCE_LIMITS WAVES_PER_SH=0x3FF [9:0], TG_PER_CU=1 [15:12], CU_GROUP_COUNT=7 [26:24].
        let w = ComputeResourceLimits::default().with_waves_per_sh(0x3FF).with_tg_per_cu(1).with_cu_group_count(7);
        assert_eq!(w.raw(), 0x0700_13FF);
        // PGM_HI DATA [7:0] = entry address bits 47:40.
        assert_eq!(ComputePgmHi::default().with_data(0x7F).raw(), 0x0000_007F);
        // SE0..3: all CUs of both shader arrays.
        let se = ComputeStaticThreadMgmtSe0To3::default().with_sh0_cu_en(0xFFFF).with_sh1_cu_en(0xFFFF);
        assert_eq!(se.raw(), 0xFFFF_FFFF);
        assert_eq!(ComputeStaticThreadMgmtSe4::from_raw(0x00FF_0F00).sa1_cu_en(), 0x00FF);
        // REQ_CTRL DEDICATED_PREALLOCATION_BUFFER_LIMIT [26:20] all ones.
        assert_eq!(ComputeReqCtrl::default().with_dedicated_preallocation_buffer_limit(0x7F).raw(), 0x07F0_0000);
        assert_eq!(ComputeNumThreadZ::from_raw(0x0001_0040).num_thread_partial(), 1);
    }

    #[test]
    fn exception_mask_splits_into_excp_en_and_msb() {
        let m = ExceptionMask::INVALID.union(ExceptionMask::INT_DIVIDE_BY_ZERO).union(ExceptionMask::MEMORY_VIOLATION);
        assert_eq!(m.bits(), 0x141);
        assert_eq!(m.excp_en(), 0x41);
        assert_eq!(m.excp_en_msb(), 0b10);
        assert_eq!(ExceptionMask::ADDRESS_WATCH.excp_en(), 0);
        assert_eq!(ExceptionMask::ADDRESS_WATCH.excp_en_msb(), 0b01);
        assert_eq!(ExceptionMask::from_fields(0x41, 0b10), m);
    }

    #[test]
    fn float_mode_values_combine() {
        let m = FloatMode::FP_32_DENORMS.union(FloatMode::FP_16_64_DENORMS);
        assert_eq!(m.raw(), 0xF0);
    }
}
