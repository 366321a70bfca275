//! Constants from `amdgpu_drm.h`, by group. Generated from the installed header's `#define`s with
//! plain values (a number or `(a << b)`); the `layout` test compiles each name against the header.

// Values are spelled as the header spells them (`1 << 0`, `0 << 5`).
#![allow(clippy::identity_op, clippy::erasing_op)]

use super::LayoutRow;

// Driver-private request numbers, relative to `DRM_COMMAND_BASE`.
abi_consts! { fn command_rows; "amdgpu_drm.h", u32;
    DRM_AMDGPU_GEM_CREATE = 0x00;
    DRM_AMDGPU_GEM_MMAP = 0x01;
    DRM_AMDGPU_CTX = 0x02;
    DRM_AMDGPU_BO_LIST = 0x03;
    DRM_AMDGPU_CS = 0x04;
    DRM_AMDGPU_INFO = 0x05;
    DRM_AMDGPU_GEM_METADATA = 0x06;
    DRM_AMDGPU_GEM_WAIT_IDLE = 0x07;
    DRM_AMDGPU_GEM_VA = 0x08;
    DRM_AMDGPU_WAIT_CS = 0x09;
    DRM_AMDGPU_GEM_OP = 0x10;
    DRM_AMDGPU_GEM_USERPTR = 0x11;
    DRM_AMDGPU_WAIT_FENCES = 0x12;
    DRM_AMDGPU_VM = 0x13;
    DRM_AMDGPU_FENCE_TO_HANDLE = 0x14;
    DRM_AMDGPU_SCHED = 0x15;
}

// Memory domains (`drm_amdgpu_gem_create_in::domains`).
abi_consts! { fn gem_domain_rows; "amdgpu_drm.h", u32;
    AMDGPU_GEM_DOMAIN_CPU = 0x1;
    AMDGPU_GEM_DOMAIN_GTT = 0x2;
    AMDGPU_GEM_DOMAIN_VRAM = 0x4;
    AMDGPU_GEM_DOMAIN_GDS = 0x8;
    AMDGPU_GEM_DOMAIN_GWS = 0x10;
    AMDGPU_GEM_DOMAIN_OA = 0x20;
}

// GEM create flags (`drm_amdgpu_gem_create_in::domain_flags`).
abi_consts! { fn gem_create_rows; "amdgpu_drm.h", u64;
    AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED = 1 << 0;
    AMDGPU_GEM_CREATE_NO_CPU_ACCESS = 1 << 1;
    AMDGPU_GEM_CREATE_CPU_GTT_USWC = 1 << 2;
    AMDGPU_GEM_CREATE_VRAM_CLEARED = 1 << 3;
    AMDGPU_GEM_CREATE_VRAM_CONTIGUOUS = 1 << 5;
    AMDGPU_GEM_CREATE_VM_ALWAYS_VALID = 1 << 6;
    AMDGPU_GEM_CREATE_EXPLICIT_SYNC = 1 << 7;
    AMDGPU_GEM_CREATE_CP_MQD_GFX9 = 1 << 8;
    AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE = 1 << 9;
    AMDGPU_GEM_CREATE_ENCRYPTED = 1 << 10;
    AMDGPU_GEM_CREATE_PREEMPTIBLE = 1 << 11;
}

// BO list operations.
abi_consts! { fn bo_list_rows; "amdgpu_drm.h", u32;
    AMDGPU_BO_LIST_OP_CREATE = 0;
    AMDGPU_BO_LIST_OP_DESTROY = 1;
    AMDGPU_BO_LIST_OP_UPDATE = 2;
}

// Context operations.
abi_consts! { fn ctx_op_rows; "amdgpu_drm.h", u32;
    AMDGPU_CTX_OP_ALLOC_CTX = 1;
    AMDGPU_CTX_OP_FREE_CTX = 2;
    AMDGPU_CTX_OP_QUERY_STATE = 3;
    AMDGPU_CTX_OP_QUERY_STATE2 = 4;
    AMDGPU_CTX_OP_GET_STABLE_PSTATE = 5;
    AMDGPU_CTX_OP_SET_STABLE_PSTATE = 6;
}

// Context priorities.
abi_consts! { fn ctx_priority_rows; "amdgpu_drm.h", i32;
    AMDGPU_CTX_PRIORITY_UNSET = -2048;
    AMDGPU_CTX_PRIORITY_VERY_LOW = -1023;
    AMDGPU_CTX_PRIORITY_LOW = -512;
    AMDGPU_CTX_PRIORITY_NORMAL = 0;
    AMDGPU_CTX_PRIORITY_HIGH = 512;
    AMDGPU_CTX_PRIORITY_VERY_HIGH = 1023;
}

// GEM VA operations and mapping flags.
abi_consts! { fn va_rows; "amdgpu_drm.h", u32;
    AMDGPU_VA_OP_MAP = 1;
    AMDGPU_VA_OP_UNMAP = 2;
    AMDGPU_VA_OP_CLEAR = 3;
    AMDGPU_VA_OP_REPLACE = 4;
    AMDGPU_VM_DELAY_UPDATE = 1 << 0;
    AMDGPU_VM_PAGE_READABLE = 1 << 1;
    AMDGPU_VM_PAGE_WRITEABLE = 1 << 2;
    AMDGPU_VM_PAGE_EXECUTABLE = 1 << 3;
    AMDGPU_VM_PAGE_PRT = 1 << 4;
    AMDGPU_VM_MTYPE_MASK = 0xf << 5;
    AMDGPU_VM_MTYPE_DEFAULT = 0 << 5;
    AMDGPU_VM_MTYPE_NC = 1 << 5;
    AMDGPU_VM_MTYPE_WC = 2 << 5;
    AMDGPU_VM_MTYPE_CC = 3 << 5;
    AMDGPU_VM_MTYPE_UC = 4 << 5;
    AMDGPU_VM_MTYPE_RW = 5 << 5;
}

// Hardware IP types.
abi_consts! { fn hw_ip_rows; "amdgpu_drm.h", u32;
    AMDGPU_HW_IP_GFX = 0;
    AMDGPU_HW_IP_COMPUTE = 1;
    AMDGPU_HW_IP_DMA = 2;
    AMDGPU_HW_IP_UVD = 3;
    AMDGPU_HW_IP_VCE = 4;
    AMDGPU_HW_IP_UVD_ENC = 5;
    AMDGPU_HW_IP_VCN_DEC = 6;
    AMDGPU_HW_IP_VCN_ENC = 7;
    AMDGPU_HW_IP_VCN_JPEG = 8;
    AMDGPU_HW_IP_NUM = 9;
    AMDGPU_HW_IP_INSTANCE_MAX_COUNT = 1;
}

// CS chunk ids.
abi_consts! { fn chunk_rows; "amdgpu_drm.h", u32;
    AMDGPU_CHUNK_ID_IB = 0x01;
    AMDGPU_CHUNK_ID_FENCE = 0x02;
    AMDGPU_CHUNK_ID_DEPENDENCIES = 0x03;
    AMDGPU_CHUNK_ID_SYNCOBJ_IN = 0x04;
    AMDGPU_CHUNK_ID_SYNCOBJ_OUT = 0x05;
    AMDGPU_CHUNK_ID_BO_HANDLES = 0x06;
    AMDGPU_CHUNK_ID_SCHEDULED_DEPENDENCIES = 0x07;
    AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_WAIT = 0x08;
    AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_SIGNAL = 0x09;
}

// IB flags (`drm_amdgpu_cs_chunk_ib::flags`).
abi_consts! { fn ib_flag_rows; "amdgpu_drm.h", u32;
    AMDGPU_IB_FLAG_CE = 1 << 0;
    AMDGPU_IB_FLAG_PREAMBLE = 1 << 1;
    AMDGPU_IB_FLAG_PREEMPT = 1 << 2;
    AMDGPU_IB_FLAG_TC_WB_NOT_INVALIDATE = 1 << 3;
    AMDGPU_IB_FLAG_RESET_GDS_MAX_WAVE_ID = 1 << 4;
    AMDGPU_IB_FLAGS_SECURE = 1 << 5;
    AMDGPU_IB_FLAG_EMIT_MEM_SYNC = 1 << 6;
}

// Device flags (`drm_amdgpu_info_device::ids_flags`).
abi_consts! { fn ids_flag_rows; "amdgpu_drm.h", u64;
    AMDGPU_IDS_FLAGS_FUSION = 0x1;
    AMDGPU_IDS_FLAGS_PREEMPTION = 0x2;
    AMDGPU_IDS_FLAGS_TMZ = 0x4;
}

// INFO query ids, subquery ids and masks.
abi_consts! { fn info_rows; "amdgpu_drm.h", u32;
    AMDGPU_INFO_ACCEL_WORKING = 0x00;
    AMDGPU_INFO_CRTC_FROM_ID = 0x01;
    AMDGPU_INFO_HW_IP_INFO = 0x02;
    AMDGPU_INFO_HW_IP_COUNT = 0x03;
    AMDGPU_INFO_TIMESTAMP = 0x05;
    AMDGPU_INFO_FW_VERSION = 0x0e;
    AMDGPU_INFO_FW_VCE = 0x1;
    AMDGPU_INFO_FW_UVD = 0x2;
    AMDGPU_INFO_FW_GMC = 0x03;
    AMDGPU_INFO_FW_GFX_ME = 0x04;
    AMDGPU_INFO_FW_GFX_PFP = 0x05;
    AMDGPU_INFO_FW_GFX_CE = 0x06;
    AMDGPU_INFO_FW_GFX_RLC = 0x07;
    AMDGPU_INFO_FW_GFX_MEC = 0x08;
    AMDGPU_INFO_FW_SMC = 0x0a;
    AMDGPU_INFO_FW_SDMA = 0x0b;
    AMDGPU_INFO_FW_SOS = 0x0c;
    AMDGPU_INFO_FW_ASD = 0x0d;
    AMDGPU_INFO_FW_VCN = 0x0e;
    AMDGPU_INFO_FW_GFX_RLC_RESTORE_LIST_CNTL = 0x0f;
    AMDGPU_INFO_FW_GFX_RLC_RESTORE_LIST_GPM_MEM = 0x10;
    AMDGPU_INFO_FW_GFX_RLC_RESTORE_LIST_SRM_MEM = 0x11;
    AMDGPU_INFO_FW_DMCU = 0x12;
    AMDGPU_INFO_FW_TA = 0x13;
    AMDGPU_INFO_FW_DMCUB = 0x14;
    AMDGPU_INFO_FW_TOC = 0x15;
    AMDGPU_INFO_NUM_BYTES_MOVED = 0x0f;
    AMDGPU_INFO_VRAM_USAGE = 0x10;
    AMDGPU_INFO_GTT_USAGE = 0x11;
    AMDGPU_INFO_GDS_CONFIG = 0x13;
    AMDGPU_INFO_VRAM_GTT = 0x14;
    AMDGPU_INFO_READ_MMR_REG = 0x15;
    AMDGPU_INFO_DEV_INFO = 0x16;
    AMDGPU_INFO_VIS_VRAM_USAGE = 0x17;
    AMDGPU_INFO_NUM_EVICTIONS = 0x18;
    AMDGPU_INFO_MEMORY = 0x19;
    AMDGPU_INFO_VCE_CLOCK_TABLE = 0x1A;
    AMDGPU_INFO_VBIOS = 0x1B;
    AMDGPU_INFO_VBIOS_SIZE = 0x1;
    AMDGPU_INFO_VBIOS_IMAGE = 0x2;
    AMDGPU_INFO_VBIOS_INFO = 0x3;
    AMDGPU_INFO_NUM_HANDLES = 0x1C;
    AMDGPU_INFO_SENSOR = 0x1D;
    AMDGPU_INFO_SENSOR_GFX_SCLK = 0x1;
    AMDGPU_INFO_SENSOR_GFX_MCLK = 0x2;
    AMDGPU_INFO_SENSOR_GPU_TEMP = 0x3;
    AMDGPU_INFO_SENSOR_GPU_LOAD = 0x4;
    AMDGPU_INFO_SENSOR_GPU_AVG_POWER = 0x5;
    AMDGPU_INFO_SENSOR_VDDNB = 0x6;
    AMDGPU_INFO_SENSOR_VDDGFX = 0x7;
    AMDGPU_INFO_SENSOR_STABLE_PSTATE_GFX_SCLK = 0x8;
    AMDGPU_INFO_SENSOR_STABLE_PSTATE_GFX_MCLK = 0x9;
    AMDGPU_INFO_NUM_VRAM_CPU_PAGE_FAULTS = 0x1E;
    AMDGPU_INFO_VRAM_LOST_COUNTER = 0x1F;
    AMDGPU_INFO_RAS_ENABLED_FEATURES = 0x20;
    AMDGPU_INFO_RAS_ENABLED_UMC = 1 << 0;
    AMDGPU_INFO_RAS_ENABLED_SDMA = 1 << 1;
    AMDGPU_INFO_RAS_ENABLED_GFX = 1 << 2;
    AMDGPU_INFO_RAS_ENABLED_MMHUB = 1 << 3;
    AMDGPU_INFO_RAS_ENABLED_ATHUB = 1 << 4;
    AMDGPU_INFO_RAS_ENABLED_PCIE = 1 << 5;
    AMDGPU_INFO_RAS_ENABLED_HDP = 1 << 6;
    AMDGPU_INFO_RAS_ENABLED_XGMI = 1 << 7;
    AMDGPU_INFO_RAS_ENABLED_DF = 1 << 8;
    AMDGPU_INFO_RAS_ENABLED_SMN = 1 << 9;
    AMDGPU_INFO_RAS_ENABLED_SEM = 1 << 10;
    AMDGPU_INFO_RAS_ENABLED_MP0 = 1 << 11;
    AMDGPU_INFO_RAS_ENABLED_MP1 = 1 << 12;
    AMDGPU_INFO_RAS_ENABLED_FUSE = 1 << 13;
    AMDGPU_INFO_VIDEO_CAPS = 0x21;
    AMDGPU_INFO_VIDEO_CAPS_DECODE = 0;
    AMDGPU_INFO_VIDEO_CAPS_ENCODE = 1;
    AMDGPU_INFO_MMR_SE_INDEX_SHIFT = 0;
    AMDGPU_INFO_MMR_SE_INDEX_MASK = 0xff;
    AMDGPU_INFO_MMR_SH_INDEX_SHIFT = 8;
    AMDGPU_INFO_MMR_SH_INDEX_MASK = 0xff;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_MPEG2 = 0;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_MPEG4 = 1;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_VC1 = 2;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_MPEG4_AVC = 3;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_HEVC = 4;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_JPEG = 5;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_VP9 = 6;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_AV1 = 7;
    AMDGPU_INFO_VIDEO_CAPS_CODEC_IDX_COUNT = 8;
}

// Video memory types.
abi_consts! { fn vram_type_rows; "amdgpu_drm.h", u32;
    AMDGPU_VRAM_TYPE_UNKNOWN = 0;
    AMDGPU_VRAM_TYPE_GDDR1 = 1;
    AMDGPU_VRAM_TYPE_DDR2 = 2;
    AMDGPU_VRAM_TYPE_GDDR3 = 3;
    AMDGPU_VRAM_TYPE_GDDR4 = 4;
    AMDGPU_VRAM_TYPE_GDDR5 = 5;
    AMDGPU_VRAM_TYPE_HBM = 6;
    AMDGPU_VRAM_TYPE_DDR3 = 7;
    AMDGPU_VRAM_TYPE_DDR4 = 8;
    AMDGPU_VRAM_TYPE_GDDR6 = 9;
    AMDGPU_VRAM_TYPE_DDR5 = 10;
}

// GPU families (`drm_amdgpu_info_device::family`).
abi_consts! { fn family_rows; "amdgpu_drm.h", u32;
    AMDGPU_FAMILY_UNKNOWN = 0;
    /// Hainan, Oland, Verde, Pitcairn, Tahiti.
    AMDGPU_FAMILY_SI = 110;
    /// Bonaire, Hawaii.
    AMDGPU_FAMILY_CI = 120;
    /// Kaveri, Kabini, Mullins.
    AMDGPU_FAMILY_KV = 125;
    /// Iceland, Tonga.
    AMDGPU_FAMILY_VI = 130;
    /// Carrizo, Stoney.
    AMDGPU_FAMILY_CZ = 135;
    /// Vega10.
    AMDGPU_FAMILY_AI = 141;
    /// Raven.
    AMDGPU_FAMILY_RV = 142;
    /// Navi10.
    AMDGPU_FAMILY_NV = 143;
    /// Van Gogh.
    AMDGPU_FAMILY_VGH = 144;
    /// Yellow Carp.
    AMDGPU_FAMILY_YC = 146;
}

/// `AMDGPU_GEM_DOMAIN_MASK`: every memory domain.
pub const AMDGPU_GEM_DOMAIN_MASK: u32 = AMDGPU_GEM_DOMAIN_CPU
    | AMDGPU_GEM_DOMAIN_GTT
    | AMDGPU_GEM_DOMAIN_VRAM
    | AMDGPU_GEM_DOMAIN_GDS
    | AMDGPU_GEM_DOMAIN_GWS
    | AMDGPU_GEM_DOMAIN_OA;

pub(super) fn layout_rows(rows: &mut Vec<LayoutRow>) {
    command_rows(rows);
    gem_domain_rows(rows);
    gem_create_rows(rows);
    bo_list_rows(rows);
    ctx_op_rows(rows);
    ctx_priority_rows(rows);
    va_rows(rows);
    hw_ip_rows(rows);
    chunk_rows(rows);
    ib_flag_rows(rows);
    ids_flag_rows(rows);
    info_rows(rows);
    vram_type_rows(rows);
    family_rows(rows);
    rows.push(("AMDGPU_GEM_DOMAIN_MASK".to_owned(), i128::from(AMDGPU_GEM_DOMAIN_MASK)));
}
