//! The amdgpu ioctl argument types, from `amdgpu_drm.h`.
//!
//! Unions keep the header's `in`/`out` members. Each union used as an ioctl argument has its
//! `in` member as large as the union (asserted below), so a union built from `in` has every
//! byte initialized and reading `out` after the call reads only bytes that were written.

use static_assertions::{assert_eq_size, const_assert_eq};

use super::{AbiType, LayoutRow, row};

/// `Debug` for a union: the active member is not known, so no member is printed.
macro_rules! union_debug {
    ($($name:ident),*) => {
        $(impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        })*
    };
}

// --- GEM create ---------------------------------------------------------------------------------

abi_type! {
    /// `struct drm_amdgpu_gem_create_in`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuGemCreateIn = "struct drm_amdgpu_gem_create_in", size = 32, align = 8 {
        /// The requested memory size.
        pub bo_size @ 0: u64,
        /// Physical start address alignment in bytes.
        pub alignment @ 8: u64,
        /// The requested memory domains (`AMDGPU_GEM_DOMAIN_*`).
        pub domains @ 16: u64,
        /// Allocation flags (`AMDGPU_GEM_CREATE_*`).
        pub domain_flags @ 24: u64,
    }
}

abi_type! {
    /// `struct drm_amdgpu_gem_create_out`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuGemCreateOut = "struct drm_amdgpu_gem_create_out", size = 8, align = 4 {
        /// The returned GEM object handle.
        pub handle @ 0: u32,
        /// Padding.
        pub _pad @ 4: u32,
    }
}

abi_type! {
    /// `union drm_amdgpu_gem_create`: the argument of `DRM_IOCTL_AMDGPU_GEM_CREATE`.
        pub union DrmAmdgpuGemCreate = "union drm_amdgpu_gem_create", size = 32, align = 8 {
        /// Request.
        pub r#in ("in") @ 0: DrmAmdgpuGemCreateIn,
        /// Reply.
        pub out @ 0: DrmAmdgpuGemCreateOut,
    }
}

// --- BO list ------------------------------------------------------------------------------------

abi_type! {
    /// `struct drm_amdgpu_bo_list_in`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuBoListIn = "struct drm_amdgpu_bo_list_in", size = 24, align = 8 {
        /// Type of operation (`AMDGPU_BO_LIST_OP_*`).
        pub operation @ 0: u32,
        /// Handle of the list, or 0 to create one.
        pub list_handle @ 4: u32,
        /// Number of BOs in the list.
        pub bo_number @ 8: u32,
        /// Size of each element describing a BO.
        pub bo_info_size @ 12: u32,
        /// Pointer to the array describing the BOs.
        pub bo_info_ptr @ 16: u64,
    }
}

abi_type! {
    /// `struct drm_amdgpu_bo_list_entry`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuBoListEntry = "struct drm_amdgpu_bo_list_entry", size = 8, align = 4 {
        /// Handle of the BO.
        pub bo_handle @ 0: u32,
        /// BO priority used during migration.
        pub bo_priority @ 4: u32,
    }
}

abi_type! {
    /// `struct drm_amdgpu_bo_list_out`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuBoListOut = "struct drm_amdgpu_bo_list_out", size = 8, align = 4 {
        /// Handle of the resource list.
        pub list_handle @ 0: u32,
        /// Padding.
        pub _pad @ 4: u32,
    }
}

abi_type! {
    /// `union drm_amdgpu_bo_list`: the argument of `DRM_IOCTL_AMDGPU_BO_LIST`.
        pub union DrmAmdgpuBoList = "union drm_amdgpu_bo_list", size = 24, align = 8 {
        /// Request.
        pub r#in ("in") @ 0: DrmAmdgpuBoListIn,
        /// Reply.
        pub out @ 0: DrmAmdgpuBoListOut,
    }
}

// --- Context ------------------------------------------------------------------------------------

abi_type! {
    /// `struct drm_amdgpu_ctx_in`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuCtxIn = "struct drm_amdgpu_ctx_in", size = 16, align = 4 {
        /// `AMDGPU_CTX_OP_*`.
        pub op @ 0: u32,
        /// Flags.
        pub flags @ 4: u32,
        /// Context id (for every operation but ALLOC).
        pub ctx_id @ 8: u32,
        /// `AMDGPU_CTX_PRIORITY_*`.
        pub priority @ 12: i32,
    }
}

abi_type! {
    /// The `alloc` member of `union drm_amdgpu_ctx_out`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuCtxOutAlloc = "__typeof__(((union drm_amdgpu_ctx_out *)0)->alloc)", size = 8, align = 4 {
        /// The new context's id.
        pub ctx_id @ 0: u32,
        /// Padding.
        pub _pad @ 4: u32,
    }
}

abi_type! {
    /// The `state` member of `union drm_amdgpu_ctx_out`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuCtxOutState = "__typeof__(((union drm_amdgpu_ctx_out *)0)->state)", size = 16, align = 8 {
        /// For future use, no flags defined so far.
        pub flags @ 0: u64,
        /// Number of resets caused by this context so far.
        pub hangs @ 8: u32,
        /// Reset status since the last call of the ioctl.
        pub reset_status @ 12: u32,
    }
}

abi_type! {
    /// The `pstate` member of `union drm_amdgpu_ctx_out`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuCtxOutPstate = "__typeof__(((union drm_amdgpu_ctx_out *)0)->pstate)", size = 8, align = 4 {
        /// Stable pstate flags.
        pub flags @ 0: u32,
        /// Padding.
        pub _pad @ 4: u32,
    }
}

abi_type! {
    /// `union drm_amdgpu_ctx_out`.
        pub union DrmAmdgpuCtxOut = "union drm_amdgpu_ctx_out", size = 16, align = 8 {
        /// Reply to ALLOC.
        pub alloc @ 0: DrmAmdgpuCtxOutAlloc,
        /// Reply to QUERY_STATE.
        pub state @ 0: DrmAmdgpuCtxOutState,
        /// Reply to the pstate operations.
        pub pstate @ 0: DrmAmdgpuCtxOutPstate,
    }
}

abi_type! {
    /// `union drm_amdgpu_ctx`: the argument of `DRM_IOCTL_AMDGPU_CTX`.
        pub union DrmAmdgpuCtx = "union drm_amdgpu_ctx", size = 16, align = 8 {
        /// Request.
        pub r#in ("in") @ 0: DrmAmdgpuCtxIn,
        /// Reply.
        pub out @ 0: DrmAmdgpuCtxOut,
    }
}

// --- GEM mmap, VA ---------------------------------------------------------------------------------

abi_type! {
    /// `struct drm_amdgpu_gem_mmap_in`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuGemMmapIn = "struct drm_amdgpu_gem_mmap_in", size = 8, align = 4 {
        /// The GEM object handle.
        pub handle @ 0: u32,
        /// Padding.
        pub _pad @ 4: u32,
    }
}

abi_type! {
    /// `struct drm_amdgpu_gem_mmap_out`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuGemMmapOut = "struct drm_amdgpu_gem_mmap_out", size = 8, align = 8 {
        /// The fake offset to pass to `mmap` of the device fd.
        pub addr_ptr @ 0: u64,
    }
}

abi_type! {
    /// `union drm_amdgpu_gem_mmap`: the argument of `DRM_IOCTL_AMDGPU_GEM_MMAP`.
        pub union DrmAmdgpuGemMmap = "union drm_amdgpu_gem_mmap", size = 8, align = 8 {
        /// Request.
        pub r#in ("in") @ 0: DrmAmdgpuGemMmapIn,
        /// Reply.
        pub out @ 0: DrmAmdgpuGemMmapOut,
    }
}

abi_type! {
    /// `struct drm_amdgpu_gem_va`: the argument of `DRM_IOCTL_AMDGPU_GEM_VA`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuGemVa = "struct drm_amdgpu_gem_va", size = 40, align = 8 {
        /// GEM object handle.
        pub handle @ 0: u32,
        /// Padding.
        pub _pad @ 4: u32,
        /// `AMDGPU_VA_OP_*`.
        pub operation @ 8: u32,
        /// `AMDGPU_VM_PAGE_*`, `AMDGPU_VM_MTYPE_*`, `AMDGPU_VM_DELAY_UPDATE`.
        pub flags @ 12: u32,
        /// GPU virtual address; must be correctly aligned.
        pub va_address @ 16: u64,
        /// Offset inside the BO; must be correctly aligned.
        pub offset_in_bo @ 24: u64,
        /// Mapping size; must be correctly aligned.
        pub map_size @ 32: u64,
    }
}

// --- Wait CS ------------------------------------------------------------------------------------

abi_type! {
    /// `struct drm_amdgpu_wait_cs_in`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuWaitCsIn = "struct drm_amdgpu_wait_cs_in", size = 32, align = 8 {
        /// Command submission handle (0: none, `!0`: the latest sequence number).
        pub handle @ 0: u64,
        /// Absolute timeout to wait (`CLOCK_MONOTONIC` nanoseconds).
        pub timeout @ 8: u64,
        /// `AMDGPU_HW_IP_*`.
        pub ip_type @ 16: u32,
        /// IP instance.
        pub ip_instance @ 20: u32,
        /// Ring.
        pub ring @ 24: u32,
        /// Context id.
        pub ctx_id @ 28: u32,
    }
}

abi_type! {
    /// `struct drm_amdgpu_wait_cs_out`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuWaitCsOut = "struct drm_amdgpu_wait_cs_out", size = 8, align = 8 {
        /// CS status: 0 completed, 1 still busy.
        pub status @ 0: u64,
    }
}

abi_type! {
    /// `union drm_amdgpu_wait_cs`: the argument of `DRM_IOCTL_AMDGPU_WAIT_CS`.
        pub union DrmAmdgpuWaitCs = "union drm_amdgpu_wait_cs", size = 32, align = 8 {
        /// Request.
        pub r#in ("in") @ 0: DrmAmdgpuWaitCsIn,
        /// Reply.
        pub out @ 0: DrmAmdgpuWaitCsOut,
    }
}

// --- CS -----------------------------------------------------------------------------------------

abi_type! {
    /// `struct drm_amdgpu_cs_chunk`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuCsChunk = "struct drm_amdgpu_cs_chunk", size = 16, align = 8 {
        /// `AMDGPU_CHUNK_ID_*`.
        pub chunk_id @ 0: u32,
        /// Length of the chunk data in dwords.
        pub length_dw @ 4: u32,
        /// User pointer to the chunk data.
        pub chunk_data @ 8: u64,
    }
}

abi_type! {
    /// `struct drm_amdgpu_cs_in`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuCsIn = "struct drm_amdgpu_cs_in", size = 24, align = 8 {
        /// Rendering context id.
        pub ctx_id @ 0: u32,
        /// Handle of the resource list associated with the CS.
        pub bo_list_handle @ 4: u32,
        /// Number of chunks.
        pub num_chunks @ 8: u32,
        /// Flags.
        pub flags @ 12: u32,
        /// User pointer to an array of `u64` user pointers to chunks.
        pub chunks @ 16: u64,
    }
}

abi_type! {
    /// `struct drm_amdgpu_cs_out`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuCsOut = "struct drm_amdgpu_cs_out", size = 8, align = 8 {
        /// The submission's sequence number, for `WAIT_CS`.
        pub handle @ 0: u64,
    }
}

abi_type! {
    /// `union drm_amdgpu_cs`: the argument of `DRM_IOCTL_AMDGPU_CS`.
        pub union DrmAmdgpuCs = "union drm_amdgpu_cs", size = 24, align = 8 {
        /// Request.
        pub r#in ("in") @ 0: DrmAmdgpuCsIn,
        /// Reply.
        pub out @ 0: DrmAmdgpuCsOut,
    }
}

abi_type! {
    /// `struct drm_amdgpu_cs_chunk_ib`: the data of an `AMDGPU_CHUNK_ID_IB` chunk.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuCsChunkIb = "struct drm_amdgpu_cs_chunk_ib", size = 32, align = 8 {
        /// Padding.
        pub _pad @ 0: u32,
        /// `AMDGPU_IB_FLAG_*`.
        pub flags @ 4: u32,
        /// GPU virtual address to begin IB execution.
        pub va_start @ 8: u64,
        /// Size of the submission in bytes.
        pub ib_bytes @ 16: u32,
        /// `AMDGPU_HW_IP_*` to submit to.
        pub ip_type @ 20: u32,
        /// Index of the IP of that type.
        pub ip_instance @ 24: u32,
        /// Ring index.
        pub ring @ 28: u32,
    }
}

// --- INFO ---------------------------------------------------------------------------------------

abi_type! {
    /// `struct drm_amdgpu_query_fw`: the `query_fw` member of `struct drm_amdgpu_info`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuQueryFw = "struct drm_amdgpu_query_fw", size = 16, align = 4 {
        /// `AMDGPU_INFO_FW_*`.
        pub fw_type @ 0: u32,
        /// Index of the IP if there are several of the same type.
        pub ip_instance @ 4: u32,
        /// Index of the engine (MEC, SDMA).
        pub index @ 8: u32,
        /// Padding.
        pub _pad @ 12: u32,
    }
}

abi_type! {
    /// The `mode_crtc` member of `struct drm_amdgpu_info`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuInfoModeCrtc = "__typeof__(((struct drm_amdgpu_info *)0)->mode_crtc)", size = 8, align = 4 {
        /// Mode object id.
        pub id @ 0: u32,
        /// Padding.
        pub _pad @ 4: u32,
    }
}

abi_type! {
    /// The `query_hw_ip` member of `struct drm_amdgpu_info`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuInfoQueryHwIp = "__typeof__(((struct drm_amdgpu_info *)0)->query_hw_ip)", size = 8, align = 4 {
        /// `AMDGPU_HW_IP_*`.
        pub type_ ("type") @ 0: u32,
        /// Index of the IP of that type.
        pub ip_instance @ 4: u32,
    }
}

abi_type! {
    /// The `read_mmr_reg` member of `struct drm_amdgpu_info`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuInfoReadMmrReg = "__typeof__(((struct drm_amdgpu_info *)0)->read_mmr_reg)", size = 16, align = 4 {
        /// Register dword offset.
        pub dword_offset @ 0: u32,
        /// Number of registers to read.
        pub count @ 4: u32,
        /// Instance selector.
        pub instance @ 8: u32,
        /// For future use.
        pub flags @ 12: u32,
    }
}

abi_type! {
    /// The `vbios_info` member of `struct drm_amdgpu_info`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuInfoVbiosInfo = "__typeof__(((struct drm_amdgpu_info *)0)->vbios_info)", size = 8, align = 4 {
        /// `AMDGPU_INFO_VBIOS_*` subquery.
        pub type_ ("type") @ 0: u32,
        /// Offset.
        pub offset @ 4: u32,
    }
}

abi_type! {
    /// The `sensor_info` member of `struct drm_amdgpu_info`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuInfoSensorInfo = "__typeof__(((struct drm_amdgpu_info *)0)->sensor_info)", size = 4, align = 4 {
        /// `AMDGPU_INFO_SENSOR_*` subquery.
        pub type_ ("type") @ 0: u32,
    }
}

abi_type! {
    /// The `video_cap` member of `struct drm_amdgpu_info`.
    #[derive(Debug, Default)]
        pub struct DrmAmdgpuInfoVideoCap = "__typeof__(((struct drm_amdgpu_info *)0)->video_cap)", size = 4, align = 4 {
        /// `AMDGPU_INFO_VIDEO_CAPS_*` subquery.
        pub type_ ("type") @ 0: u32,
    }
}

/// The anonymous union at the end of `struct drm_amdgpu_info`: the query's parameters.
#[repr(C)]
#[derive(Clone, Copy, zerocopy::FromBytes)]
pub union DrmAmdgpuInfoQuery {
    /// `AMDGPU_INFO_CRTC_FROM_ID`.
    pub mode_crtc: DrmAmdgpuInfoModeCrtc,
    /// `AMDGPU_INFO_HW_IP_INFO`, `AMDGPU_INFO_HW_IP_COUNT`.
    pub query_hw_ip: DrmAmdgpuInfoQueryHwIp,
    /// `AMDGPU_INFO_READ_MMR_REG`.
    pub read_mmr_reg: DrmAmdgpuInfoReadMmrReg,
    /// `AMDGPU_INFO_FW_VERSION`.
    pub query_fw: DrmAmdgpuQueryFw,
    /// `AMDGPU_INFO_VBIOS`.
    pub vbios_info: DrmAmdgpuInfoVbiosInfo,
    /// `AMDGPU_INFO_SENSOR`.
    pub sensor_info: DrmAmdgpuInfoSensorInfo,
    /// `AMDGPU_INFO_VIDEO_CAPS`.
    pub video_cap: DrmAmdgpuInfoVideoCap,
}

static_assertions::assert_impl_all!(DrmAmdgpuInfoQuery: core::fmt::Debug);
const_assert_eq!(size_of::<DrmAmdgpuInfoQuery>(), 16);
const_assert_eq!(align_of::<DrmAmdgpuInfoQuery>(), 4);

impl DrmAmdgpuInfoQuery {
    /// All 16 bytes zero (through the largest member).
    #[must_use]
    pub fn zeroed() -> Self {
        Self { read_mmr_reg: DrmAmdgpuInfoReadMmrReg::default() }
    }
}

impl AbiType for DrmAmdgpuInfoQuery {
    /// The union has no C name: its size is what follows its first member in the enclosing
    /// struct, and its members' offsets are taken relative to that first member.
    fn layout_rows(rows: &mut Vec<LayoutRow>) {
        const BASE: &str = "offsetof(struct drm_amdgpu_info, mode_crtc)";
        rows.push(row(format!("sizeof(struct drm_amdgpu_info) - {BASE}"), size_of::<Self>()));
        let members = [
            ("mode_crtc", core::mem::offset_of!(Self, mode_crtc)),
            ("query_hw_ip", core::mem::offset_of!(Self, query_hw_ip)),
            ("read_mmr_reg", core::mem::offset_of!(Self, read_mmr_reg)),
            ("query_fw", core::mem::offset_of!(Self, query_fw)),
            ("vbios_info", core::mem::offset_of!(Self, vbios_info)),
            ("sensor_info", core::mem::offset_of!(Self, sensor_info)),
            ("video_cap", core::mem::offset_of!(Self, video_cap)),
        ];
        for (member, offset) in members {
            rows.push(row(format!("offsetof(struct drm_amdgpu_info, {member}) - {BASE}"), offset));
        }
    }
}

abi_type! {
    /// `struct drm_amdgpu_info`: the argument of `DRM_IOCTL_AMDGPU_INFO`.
    #[derive(Debug)]
        pub struct DrmAmdgpuInfo = "struct drm_amdgpu_info", size = 32, align = 8 {
        /// User pointer where the reply is stored.
        pub return_pointer @ 0: u64,
        /// Size of the reply buffer; like `snprintf`'s size, the kernel writes at most this many
        /// bytes.
        pub return_size @ 8: u32,
        /// `AMDGPU_INFO_*`.
        pub query @ 12: u32,
        /// The query's parameters: an anonymous union in C, checked through its largest member.
        pub params ("read_mmr_reg") @ 16: DrmAmdgpuInfoQuery,
    }
}

abi_type! {
    /// `struct drm_amdgpu_info_firmware`: the reply to `AMDGPU_INFO_FW_VERSION`.
    #[derive(Debug, Default, PartialEq, Eq)]
        pub struct DrmAmdgpuInfoFirmware = "struct drm_amdgpu_info_firmware", size = 8, align = 4 {
        /// Firmware version.
        pub ver @ 0: u32,
        /// Firmware feature version.
        pub feature @ 4: u32,
    }
}

abi_type! {
    /// `struct drm_amdgpu_info_hw_ip`: the reply to `AMDGPU_INFO_HW_IP_INFO`.
    #[derive(Debug, Default, PartialEq, Eq)]
        pub struct DrmAmdgpuInfoHwIp = "struct drm_amdgpu_info_hw_ip", size = 32, align = 8 {
        /// Major version of the IP.
        pub hw_ip_version_major @ 0: u32,
        /// Minor version of the IP.
        pub hw_ip_version_minor @ 4: u32,
        /// Capabilities.
        pub capabilities_flags @ 8: u64,
        /// Command buffer start address alignment.
        pub ib_start_alignment @ 16: u32,
        /// Command buffer size alignment.
        pub ib_size_alignment @ 20: u32,
        /// Bitmask of available rings (bit 0: ring 0).
        pub available_rings @ 24: u32,
        /// Padding.
        pub _pad @ 28: u32,
    }
}

abi_type! {
    /// `struct drm_amdgpu_info_device`: the reply to `AMDGPU_INFO_DEV_INFO`, as in the installed
    /// header. Newer kernels append fields; the kernel writes at most `return_size` bytes, so this
    /// prefix is what an older and a newer kernel agree on.
    #[derive(Debug, Default, PartialEq, Eq)]
        pub struct DrmAmdgpuInfoDevice = "struct drm_amdgpu_info_device", size = 368, align = 8 {
        /// PCI device id.
        pub device_id @ 0: u32,
        /// Internal chip revision (A0, A1, ...).
        pub chip_rev @ 4: u32,
        /// External revision.
        pub external_rev @ 8: u32,
        /// Revision id in PCI config space.
        pub pci_rev @ 12: u32,
        /// `AMDGPU_FAMILY_*`.
        pub family @ 16: u32,
        /// Number of shader engines.
        pub num_shader_engines @ 20: u32,
        /// Shader arrays per engine.
        pub num_shader_arrays_per_engine @ 24: u32,
        /// GPU counter frequency in kHz.
        pub gpu_counter_freq @ 28: u32,
        /// Maximum engine clock.
        pub max_engine_clock @ 32: u64,
        /// Maximum memory clock.
        pub max_memory_clock @ 40: u64,
        /// Active compute units.
        pub cu_active_number @ 48: u32,
        /// Invalid per the header: do not use.
        pub cu_ao_mask @ 52: u32,
        /// Compute-unit bitmap per shader engine and array.
        pub cu_bitmap @ 56: [[u32; 4]; 4],
        /// Render backend pipe mask.
        pub enabled_rb_pipes_mask @ 120: u32,
        /// Number of render backend pipes.
        pub num_rb_pipes @ 124: u32,
        /// Number of hardware GFX contexts.
        pub num_hw_gfx_contexts @ 128: u32,
        /// Padding.
        pub _pad @ 132: u32,
        /// `AMDGPU_IDS_FLAGS_*`.
        pub ids_flags @ 136: u64,
        /// Starting virtual address for user-mode drivers.
        pub virtual_address_offset @ 144: u64,
        /// The maximum virtual address.
        pub virtual_address_max @ 152: u64,
        /// Required alignment of virtual addresses.
        pub virtual_address_alignment @ 160: u32,
        /// Page table entry fragment size.
        pub pte_fragment_size @ 164: u32,
        /// GART page size.
        pub gart_page_size @ 168: u32,
        /// Constant engine RAM size.
        pub ce_ram_size @ 172: u32,
        /// `AMDGPU_VRAM_TYPE_*`.
        pub vram_type @ 176: u32,
        /// Video memory bit width.
        pub vram_bit_width @ 180: u32,
        /// VCE harvesting instance.
        pub vce_harvest_config @ 184: u32,
        /// GFX double off-chip LDS buffers.
        pub gc_double_offchip_lds_buf @ 188: u32,
        /// NGG primitive buffer.
        pub prim_buf_gpu_addr @ 192: u64,
        /// NGG position buffer.
        pub pos_buf_gpu_addr @ 200: u64,
        /// NGG control sideband.
        pub cntl_sb_buf_gpu_addr @ 208: u64,
        /// NGG parameter cache.
        pub param_buf_gpu_addr @ 216: u64,
        /// NGG primitive buffer size.
        pub prim_buf_size @ 224: u32,
        /// NGG position buffer size.
        pub pos_buf_size @ 228: u32,
        /// NGG control sideband size.
        pub cntl_sb_buf_size @ 232: u32,
        /// NGG parameter cache size.
        pub param_buf_size @ 236: u32,
        /// Wavefront size.
        pub wave_front_size @ 240: u32,
        /// Shader-visible VGPRs.
        pub num_shader_visible_vgprs @ 244: u32,
        /// Compute units per shader array.
        pub num_cu_per_sh @ 248: u32,
        /// Number of TCC blocks.
        pub num_tcc_blocks @ 252: u32,
        /// GS VGT table depth.
        pub gs_vgt_table_depth @ 256: u32,
        /// GS primitive buffer depth.
        pub gs_prim_buffer_depth @ 260: u32,
        /// Maximum GS waves per VGT.
        pub max_gs_waves_per_vgt @ 264: u32,
        /// Padding.
        pub _pad1 @ 268: u32,
        /// Always-on compute-unit bitmap.
        pub cu_ao_bitmap @ 272: [[u32; 4]; 4],
        /// Starting high virtual address for user-mode drivers.
        pub high_va_offset @ 336: u64,
        /// The maximum high virtual address.
        pub high_va_max @ 344: u64,
        /// gfx10 `PA_SC_TILE_STEERING_OVERRIDE`.
        pub pa_sc_tile_steering_override @ 352: u32,
        /// Disabled TCCs.
        pub tcc_disabled_mask @ 360: u64,
    }
}

union_debug!(
    DrmAmdgpuGemCreate,
    DrmAmdgpuBoList,
    DrmAmdgpuCtxOut,
    DrmAmdgpuCtx,
    DrmAmdgpuGemMmap,
    DrmAmdgpuWaitCs,
    DrmAmdgpuCs,
    DrmAmdgpuInfoQuery
);

// INVARIANT: every union used as an ioctl argument is exactly as large as its `in` member, so a
// union built from `in` has no uninitialized bytes for the kernel or a later `out` read to see.
assert_eq_size!(DrmAmdgpuGemCreate, DrmAmdgpuGemCreateIn);
assert_eq_size!(DrmAmdgpuBoList, DrmAmdgpuBoListIn);
assert_eq_size!(DrmAmdgpuCtx, DrmAmdgpuCtxIn);
assert_eq_size!(DrmAmdgpuGemMmap, DrmAmdgpuGemMmapIn);
assert_eq_size!(DrmAmdgpuWaitCs, DrmAmdgpuWaitCsIn);
assert_eq_size!(DrmAmdgpuCs, DrmAmdgpuCsIn);

pub(super) fn layout_rows(rows: &mut Vec<LayoutRow>) {
    DrmAmdgpuGemCreateIn::layout_rows(rows);
    DrmAmdgpuGemCreateOut::layout_rows(rows);
    DrmAmdgpuGemCreate::layout_rows(rows);
    DrmAmdgpuBoListIn::layout_rows(rows);
    DrmAmdgpuBoListEntry::layout_rows(rows);
    DrmAmdgpuBoListOut::layout_rows(rows);
    DrmAmdgpuBoList::layout_rows(rows);
    DrmAmdgpuCtxIn::layout_rows(rows);
    DrmAmdgpuCtxOutAlloc::layout_rows(rows);
    DrmAmdgpuCtxOutState::layout_rows(rows);
    DrmAmdgpuCtxOutPstate::layout_rows(rows);
    DrmAmdgpuCtxOut::layout_rows(rows);
    DrmAmdgpuCtx::layout_rows(rows);
    DrmAmdgpuGemMmapIn::layout_rows(rows);
    DrmAmdgpuGemMmapOut::layout_rows(rows);
    DrmAmdgpuGemMmap::layout_rows(rows);
    DrmAmdgpuGemVa::layout_rows(rows);
    DrmAmdgpuWaitCsIn::layout_rows(rows);
    DrmAmdgpuWaitCsOut::layout_rows(rows);
    DrmAmdgpuWaitCs::layout_rows(rows);
    DrmAmdgpuCsChunk::layout_rows(rows);
    DrmAmdgpuCsIn::layout_rows(rows);
    DrmAmdgpuCsOut::layout_rows(rows);
    DrmAmdgpuCs::layout_rows(rows);
    DrmAmdgpuCsChunkIb::layout_rows(rows);
    DrmAmdgpuQueryFw::layout_rows(rows);
    DrmAmdgpuInfoModeCrtc::layout_rows(rows);
    DrmAmdgpuInfoQueryHwIp::layout_rows(rows);
    DrmAmdgpuInfoReadMmrReg::layout_rows(rows);
    DrmAmdgpuInfoVbiosInfo::layout_rows(rows);
    DrmAmdgpuInfoSensorInfo::layout_rows(rows);
    DrmAmdgpuInfoVideoCap::layout_rows(rows);
    DrmAmdgpuInfoQuery::layout_rows(rows);
    DrmAmdgpuInfo::layout_rows(rows);
    DrmAmdgpuInfoFirmware::layout_rows(rows);
    DrmAmdgpuInfoHwIp::layout_rows(rows);
    DrmAmdgpuInfoDevice::layout_rows(rows);
}
