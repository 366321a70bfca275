//! The register maps of every family, declared once: one row per register, one column per family
//! (gfx10.3, gfx11, gfx12), each cell the register's absolute dword and typed word on that family, or
//! `-` where the family does not have it (never aliased). Offsets: reference §2, §9; fields:
//! reference §3 (the typed words live in the family modules, which re-export their column).
//!
//! The macro below generates, per family, a module with one `RegisterInfo` constant per present
//! cell and the family's table sorted by dword (a table out of the SH window or with a duplicate
//! dword does not compile).

register_columns! {
    // NAME = [gfx10_3], [gfx11], [gfx12];
    COMPUTE_DISPATCH_INITIATOR =
        [0x2E00: ComputeDispatchInitiator], [0x2E00: ComputeDispatchInitiator], [0x2E00: ComputeDispatchInitiator];
    COMPUTE_DIM_X = [0x2E01], [0x2E01], [0x2E01];
    COMPUTE_DIM_Y = [0x2E02], [0x2E02], [0x2E02];
    COMPUTE_DIM_Z = [0x2E03], [0x2E03], [0x2E03];
    COMPUTE_START_X = [0x2E04], [0x2E04], [0x2E04];
    COMPUTE_START_Y = [0x2E05], [0x2E05], [0x2E05];
    COMPUTE_START_Z = [0x2E06], [0x2E06], [0x2E06];
    COMPUTE_NUM_THREAD_X = [0x2E07: ComputeNumThreadX], [0x2E07: ComputeNumThreadX], [0x2E07: ComputeNumThreadX];
    COMPUTE_NUM_THREAD_Y = [0x2E08: ComputeNumThreadY], [0x2E08: ComputeNumThreadY], [0x2E08: ComputeNumThreadY];
    COMPUTE_NUM_THREAD_Z = [0x2E09: ComputeNumThreadZ], [0x2E09: ComputeNumThreadZ], [0x2E09: ComputeNumThreadZ];
    COMPUTE_PIPELINESTAT_ENABLE = [0x2E0A], [0x2E0A], [0x2E0A];
    COMPUTE_PERFCOUNT_ENABLE = [0x2E0B], [0x2E0B], [0x2E0B];
    /// Kernel entry address bits `[39:8]` (`entry_address >> 8`; reference §2 usage notes).
    COMPUTE_PGM_LO = [0x2E0C], [0x2E0C], [0x2E0C];
    /// Kernel entry address bits `[47:40]` in `DATA` (reference §2 usage notes).
    COMPUTE_PGM_HI = [0x2E0D: ComputePgmHi], [0x2E0D: ComputePgmHi], [0x2E0D: ComputePgmHi];
    COMPUTE_DISPATCH_PKT_ADDR_LO = [0x2E0E], [0x2E0E], [0x2E0E];
    COMPUTE_DISPATCH_PKT_ADDR_HI = [0x2E0F], [0x2E0F], [0x2E0F];
    /// Scratch base address bits `[39:8]` (`scratch_va >> 8`); Mesa writes the scratch base
    /// registers on gfx11 and later only (reference §2 usage notes).
    COMPUTE_DISPATCH_SCRATCH_BASE_LO = [0x2E10], [0x2E10], [0x2E10];
    /// Scratch base address bits `[47:40]` (`scratch_va >> 40`); Mesa writes them on gfx11 and
    /// later only (reference §2 usage notes).
    COMPUTE_DISPATCH_SCRATCH_BASE_HI = [0x2E11], [0x2E11], [0x2E11];
    COMPUTE_PGM_RSRC1 = [0x2E12: ComputePgmRsrc1], [0x2E12: ComputePgmRsrc1], [0x2E12: ComputePgmRsrc1];
    COMPUTE_PGM_RSRC2 = [0x2E13: ComputePgmRsrc2], [0x2E13: ComputePgmRsrc2], [0x2E13: ComputePgmRsrc2];
    COMPUTE_VMID = [0x2E14: ComputeVmid], [0x2E14: ComputeVmid], [0x2E14: ComputeVmid];
    COMPUTE_RESOURCE_LIMITS =
        [0x2E15: ComputeResourceLimits], [0x2E15: ComputeResourceLimits], [0x2E15: ComputeResourceLimits];
    COMPUTE_STATIC_THREAD_MGMT_SE0 =
        [0x2E16: ComputeStaticThreadMgmtSe0To3],
        [0x2E16: ComputeStaticThreadMgmtSe0To3],
        [0x2E16: ComputeStaticThreadMgmtSe0To3];
    COMPUTE_STATIC_THREAD_MGMT_SE1 =
        [0x2E17: ComputeStaticThreadMgmtSe0To3],
        [0x2E17: ComputeStaticThreadMgmtSe0To3],
        [0x2E17: ComputeStaticThreadMgmtSe0To3];
    COMPUTE_TMPRING_SIZE = [0x2E18: ComputeTmpringSize], [0x2E18: ComputeTmpringSize], [0x2E18: ComputeTmpringSize];
    COMPUTE_STATIC_THREAD_MGMT_SE2 =
        [0x2E19: ComputeStaticThreadMgmtSe0To3],
        [0x2E19: ComputeStaticThreadMgmtSe0To3],
        [0x2E19: ComputeStaticThreadMgmtSe0To3];
    COMPUTE_STATIC_THREAD_MGMT_SE3 =
        [0x2E1A: ComputeStaticThreadMgmtSe0To3],
        [0x2E1A: ComputeStaticThreadMgmtSe0To3],
        [0x2E1A: ComputeStaticThreadMgmtSe0To3];
    COMPUTE_RESTART_X = [0x2E1B], [0x2E1B], [0x2E1B];
    COMPUTE_RESTART_Y = [0x2E1C], [0x2E1C], [0x2E1C];
    COMPUTE_RESTART_Z = [0x2E1D], [0x2E1D], [0x2E1D];
    COMPUTE_THREAD_TRACE_ENABLE = [0x2E1E], [0x2E1E], [0x2E1E];
    COMPUTE_MISC_RESERVED = [0x2E1F], [0x2E1F], [0x2E1F];
    COMPUTE_DISPATCH_ID = [0x2E20], [0x2E20], [0x2E20];
    COMPUTE_THREADGROUP_ID = [0x2E21], [0x2E21], [0x2E21];
    COMPUTE_REQ_CTRL = [0x2E22: ComputeReqCtrl], [0x2E22: ComputeReqCtrl], [0x2E22: ComputeReqCtrl];
    /// gfx12 only (reference §9).
    COMPUTE_STATIC_THREAD_MGMT_SE8 = [-], [-], [0x2E23];
    COMPUTE_USER_ACCUM_0 = [0x2E24], [0x2E24], [0x2E24];
    COMPUTE_USER_ACCUM_1 = [0x2E25], [0x2E25], [0x2E25];
    COMPUTE_USER_ACCUM_2 = [0x2E26], [0x2E26], [0x2E26];
    COMPUTE_USER_ACCUM_3 = [0x2E27], [0x2E27], [0x2E27];
    COMPUTE_PGM_RSRC3 = [0x2E28: ComputePgmRsrc3], [0x2E28: ComputePgmRsrc3], [0x2E28: ComputePgmRsrc3];
    COMPUTE_DDID_INDEX = [0x2E29], [0x2E29], [0x2E29];
    COMPUTE_SHADER_CHKSUM = [0x2E2A], [0x2E2A], [0x2E2A];
    /// Not on gfx10.3, where 0x2E2B is `COMPUTE_RELAUNCH` (reference §9); SE5..SE7 likewise.
    COMPUTE_STATIC_THREAD_MGMT_SE4 =
        [-], [0x2E2B: ComputeStaticThreadMgmtSe4], [0x2E2B: ComputeStaticThreadMgmtSe4];
    COMPUTE_STATIC_THREAD_MGMT_SE5 = [-], [0x2E2C], [0x2E2C];
    COMPUTE_STATIC_THREAD_MGMT_SE6 = [-], [0x2E2D], [0x2E2D];
    COMPUTE_STATIC_THREAD_MGMT_SE7 = [-], [0x2E2E], [0x2E2E];
    /// Not on gfx10.3 (reference §9); must not be written there.
    COMPUTE_DISPATCH_INTERLEAVE = [-], [0x2E2F: ComputeDispatchInterleave], [0x2E2F: ComputeDispatchInterleave];
    /// 0x2E2B on gfx10.3, 0x2E30 on gfx11 and gfx12, where 0x2E2B holds
    /// `COMPUTE_STATIC_THREAD_MGMT_SE4` (reference §9); the next three likewise.
    COMPUTE_RELAUNCH = [0x2E2B], [0x2E30], [0x2E30];
    COMPUTE_WAVE_RESTORE_ADDR_LO = [0x2E2C], [0x2E31], [0x2E31];
    COMPUTE_WAVE_RESTORE_ADDR_HI = [0x2E2D], [0x2E32], [0x2E32];
    COMPUTE_RELAUNCH2 = [0x2E2E], [0x2E33], [0x2E33];
    /// gfx12 only, like `_Y` and `_Z` (reference §9).
    COMPUTE_PRESCALED_DIM_X = [-], [-], [0x2E35];
    COMPUTE_PRESCALED_DIM_Y = [-], [-], [0x2E36];
    COMPUTE_PRESCALED_DIM_Z = [-], [-], [0x2E37];
    /// First of the 16 user-data SGPR registers `COMPUTE_USER_DATA_0..15`.
    COMPUTE_USER_DATA_0 = [0x2E40], [0x2E40], [0x2E40];
    COMPUTE_USER_DATA_1 = [0x2E41], [0x2E41], [0x2E41];
    COMPUTE_USER_DATA_2 = [0x2E42], [0x2E42], [0x2E42];
    COMPUTE_USER_DATA_3 = [0x2E43], [0x2E43], [0x2E43];
    COMPUTE_USER_DATA_4 = [0x2E44], [0x2E44], [0x2E44];
    COMPUTE_USER_DATA_5 = [0x2E45], [0x2E45], [0x2E45];
    COMPUTE_USER_DATA_6 = [0x2E46], [0x2E46], [0x2E46];
    COMPUTE_USER_DATA_7 = [0x2E47], [0x2E47], [0x2E47];
    COMPUTE_USER_DATA_8 = [0x2E48], [0x2E48], [0x2E48];
    COMPUTE_USER_DATA_9 = [0x2E49], [0x2E49], [0x2E49];
    COMPUTE_USER_DATA_10 = [0x2E4A], [0x2E4A], [0x2E4A];
    COMPUTE_USER_DATA_11 = [0x2E4B], [0x2E4B], [0x2E4B];
    COMPUTE_USER_DATA_12 = [0x2E4C], [0x2E4C], [0x2E4C];
    COMPUTE_USER_DATA_13 = [0x2E4D], [0x2E4D], [0x2E4D];
    COMPUTE_USER_DATA_14 = [0x2E4E], [0x2E4E], [0x2E4E];
    COMPUTE_USER_DATA_15 = [0x2E4F], [0x2E4F], [0x2E4F];
    COMPUTE_DISPATCH_TUNNEL =
        [0x2E7D: ComputeDispatchTunnel], [0x2E7D: ComputeDispatchTunnel], [0x2E7D: ComputeDispatchTunnel];
    COMPUTE_DISPATCH_END = [0x2E7E], [0x2E7E], [0x2E7E];
    COMPUTE_NOWHERE = [0x2E7F], [0x2E7F], [0x2E7F];
}
