//! Handles, structs and macros of `hip_runtime_api.h` and `hip_version.h` (ROCm 5.2.3), with
//! compile-time layout asserts.

use core::ffi::{c_int, c_uint, c_void};
use core::marker::{PhantomData, PhantomPinned};

use dynload::struct_layout;

/// Declares one opaque C struct per entry, only ever used behind a pointer.
macro_rules! opaque {
    ($($(#[doc = $doc:literal])* $name:ident;)*) => {
        $(
            $(#[doc = $doc])*
            #[repr(C)]
            #[derive(Debug)]
            pub struct $name {
                _private: [u8; 0],
                // Not Send, Sync or Unpin: the runtime owns the object.
                _marker: PhantomData<(*mut u8, PhantomPinned)>,
            }
        )*
    };
}

opaque! {
    /// `struct ihipModule_t`.
    IhipModule;
    /// `struct ihipModuleSymbol_t`.
    IhipModuleSymbol;
    /// `struct ihipStream_t`.
    IhipStream;
}

/// `hipModule_t`: a loaded code object.
pub type HipModule = *mut IhipModule;
/// `hipFunction_t`: a kernel of a module.
pub type HipFunction = *mut IhipModuleSymbol;
/// `hipStream_t`: a stream; null is the default stream.
pub type HipStream = *mut IhipStream;
/// `hipDeviceptr_t`: a device address.
pub type HipDeviceptr = *mut c_void;

/// `HIP_LAUNCH_PARAM_BUFFER_POINTER`: in `extra` of `hipModuleLaunchKernel`, followed by a pointer
/// to the packed kernel arguments.
pub const HIP_LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = core::ptr::without_provenance_mut(0x01);
/// `HIP_LAUNCH_PARAM_BUFFER_SIZE`: in `extra`, followed by a pointer to the `size_t` byte size of
/// the packed arguments.
pub const HIP_LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = core::ptr::without_provenance_mut(0x02);
/// `HIP_LAUNCH_PARAM_END`: ends `extra`.
pub const HIP_LAUNCH_PARAM_END: *mut c_void = core::ptr::without_provenance_mut(0x03);

/// `HIP_VERSION_MAJOR` of the headers this crate was transcribed from.
pub const HEADER_VERSION_MAJOR: i32 = 5;
/// `HIP_VERSION_MINOR` of the headers this crate was transcribed from.
pub const HEADER_VERSION_MINOR: i32 = 2;
/// `HIP_VERSION_PATCH` of the headers this crate was transcribed from.
pub const HEADER_VERSION_PATCH: i32 = 21153;
/// `HIP_VERSION`: `major * 10_000_000 + minor * 100_000 + patch`, the encoding
/// `hipRuntimeGetVersion` also uses.
pub const HEADER_VERSION: i32 =
    HEADER_VERSION_MAJOR * 10_000_000 + HEADER_VERSION_MINOR * 100_000 + HEADER_VERSION_PATCH;

/// `hipDeviceArch_t`: feature flags, 17 one-bit `unsigned` bit-fields packed from bit 0 in
/// declaration order (the x86-64 System V rule), so one `u32`.
///
/// A plain `#[repr(transparent)]` word with mask constants, not a `bitflags` type: it is a field
/// the runtime fills inside `hipDeviceProp_t`, read as is, and each mask is cross-checked as a C
/// bit-field against the header.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DeviceArch(pub u32);

/// Declares the bit masks of [`DeviceArch`] and, per bit, a C expression that sets that bit-field
/// alone and reads the word back (a bit-field has no `offsetof`).
macro_rules! device_arch_bits {
    ($($konst:ident = $bit:literal, $field:ident;)*) => {
        impl DeviceArch {
            $(
                #[doc = concat!("Mask of the `", stringify!($field), "` bit-field.")]
                pub const $konst: u32 = 1 << $bit;
            )*
        }

        const DEVICE_ARCH_BITS: &[(&str, u32)] = &[$((
            concat!(
                "((union { hipDeviceArch_t arch; unsigned int bits; }){ .arch = { .",
                stringify!($field),
                " = 1 } }).bits"
            ),
            DeviceArch::$konst,
        )),*];
    };
}

device_arch_bits! {
    HAS_GLOBAL_INT32_ATOMICS = 0, hasGlobalInt32Atomics;
    HAS_GLOBAL_FLOAT_ATOMIC_EXCH = 1, hasGlobalFloatAtomicExch;
    HAS_SHARED_INT32_ATOMICS = 2, hasSharedInt32Atomics;
    HAS_SHARED_FLOAT_ATOMIC_EXCH = 3, hasSharedFloatAtomicExch;
    HAS_FLOAT_ATOMIC_ADD = 4, hasFloatAtomicAdd;
    HAS_GLOBAL_INT64_ATOMICS = 5, hasGlobalInt64Atomics;
    HAS_SHARED_INT64_ATOMICS = 6, hasSharedInt64Atomics;
    HAS_DOUBLES = 7, hasDoubles;
    HAS_WARP_VOTE = 8, hasWarpVote;
    HAS_WARP_BALLOT = 9, hasWarpBallot;
    HAS_WARP_SHUFFLE = 10, hasWarpShuffle;
    HAS_FUNNEL_SHIFT = 11, hasFunnelShift;
    HAS_THREAD_FENCE_SYSTEM = 12, hasThreadFenceSystem;
    HAS_SYNC_THREADS_EXT = 13, hasSyncThreadsExt;
    HAS_SURFACE_FUNCS = 14, hasSurfaceFuncs;
    HAS3D_GRID = 15, has3dGrid;
    HAS_DYNAMIC_PARALLELISM = 16, hasDynamicParallelism;
}

impl DeviceArch {
    /// Whether every bit of `mask` is set.
    #[must_use]
    pub fn has(self, mask: u32) -> bool {
        self.0 & mask == mask
    }
}

/// `hipDeviceProp_t` as ROCm 5.2.3 lays it out (792 bytes), filled by `hipGetDeviceProperties`.
///
/// This is the ROCm 5 layout. ROCm 6 changed the struct (its headers route
/// `hipGetDeviceProperties` to `hipGetDevicePropertiesR0600`), so pass this to the runtime only
/// when `hipRuntimeGetVersion` reports major version [`HEADER_VERSION_MAJOR`]. `char` arrays are
/// `u8` so they read as bytes without a cast.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DeviceProp {
    /// `name`: Device name.
    pub name: [u8; 256],
    /// `totalGlobalMem`: Size of global memory region (in bytes).
    pub total_global_mem: usize,
    /// `sharedMemPerBlock`: Size of shared memory region (in bytes).
    pub shared_mem_per_block: usize,
    /// `regsPerBlock`: Registers per block.
    pub regs_per_block: c_int,
    /// `warpSize`: Warp size.
    pub warp_size: c_int,
    /// `maxThreadsPerBlock`: Max work items per work group or workgroup max size.
    pub max_threads_per_block: c_int,
    /// `maxThreadsDim`: Max number of threads in each dimension (XYZ) of a block.
    pub max_threads_dim: [c_int; 3],
    /// `maxGridSize`: Max grid dimensions (XYZ).
    pub max_grid_size: [c_int; 3],
    /// `clockRate`: Max clock frequency of the multiProcessors in khz.
    pub clock_rate: c_int,
    /// `memoryClockRate`: Max global memory clock frequency in khz.
    pub memory_clock_rate: c_int,
    /// `memoryBusWidth`: Global memory bus width in bits.
    pub memory_bus_width: c_int,
    /// `totalConstMem`: Size of shared memory region (in bytes).
    pub total_const_mem: usize,
    /// `major`: Major compute capability. On HCC, this is an approximation and features may differ from CUDA CC. See
    /// the arch feature flags for portable ways to query feature caps.
    pub major: c_int,
    /// `minor`: Minor compute capability. On HCC, this is an approximation and features may differ from CUDA CC. See
    /// the arch feature flags for portable ways to query feature caps.
    pub minor: c_int,
    /// `multiProcessorCount`: Number of multi-processors (compute units).
    pub multi_processor_count: c_int,
    /// `l2CacheSize`: L2 cache size.
    pub l2_cache_size: c_int,
    /// `maxThreadsPerMultiProcessor`: Maximum resident threads per multi-processor.
    pub max_threads_per_multi_processor: c_int,
    /// `computeMode`: Compute mode.
    pub compute_mode: c_int,
    /// `clockInstructionRate`: Frequency in khz of the timer used by the device-side "clock*" instructions. New for
    /// HIP.
    pub clock_instruction_rate: c_int,
    /// `arch`: Architectural feature flags. New for HIP.
    pub arch: DeviceArch,
    /// `concurrentKernels`: Device can possibly execute multiple kernels concurrently.
    pub concurrent_kernels: c_int,
    /// `pciDomainID`: PCI Domain ID
    pub pci_domain_id: c_int,
    /// `pciBusID`: PCI Bus ID.
    pub pci_bus_id: c_int,
    /// `pciDeviceID`: PCI Device ID.
    pub pci_device_id: c_int,
    /// `maxSharedMemoryPerMultiProcessor`: Maximum Shared Memory Per Multiprocessor.
    pub max_shared_memory_per_multi_processor: usize,
    /// `isMultiGpuBoard`: 1 if device is on a multi-GPU board, 0 if not.
    pub is_multi_gpu_board: c_int,
    /// `canMapHostMemory`: Check whether HIP can map host memory
    pub can_map_host_memory: c_int,
    /// `gcnArch`: DEPRECATED: use gcnArchName instead
    pub gcn_arch: c_int,
    /// `gcnArchName`: AMD GCN Arch Name.
    pub gcn_arch_name: [u8; 256],
    /// `integrated`: APU vs dGPU
    pub integrated: c_int,
    /// `cooperativeLaunch`: HIP device supports cooperative launch
    pub cooperative_launch: c_int,
    /// `cooperativeMultiDeviceLaunch`: HIP device supports cooperative launch on multiple devices
    pub cooperative_multi_device_launch: c_int,
    /// `maxTexture1DLinear`: Maximum size for 1D textures bound to linear memory
    pub max_texture_1d_linear: c_int,
    /// `maxTexture1D`: Maximum number of elements in 1D images
    pub max_texture_1d: c_int,
    /// `maxTexture2D`: Maximum dimensions (width, height) of 2D images, in image elements
    pub max_texture_2d: [c_int; 2],
    /// `maxTexture3D`: Maximum dimensions (width, height, depth) of 3D images, in image elements
    pub max_texture_3d: [c_int; 3],
    /// `hdpMemFlushCntl`: Addres of HDP_MEM_COHERENCY_FLUSH_CNTL register
    pub hdp_mem_flush_cntl: *mut c_uint,
    /// `hdpRegFlushCntl`: Addres of HDP_REG_COHERENCY_FLUSH_CNTL register
    pub hdp_reg_flush_cntl: *mut c_uint,
    /// `memPitch`: Maximum pitch in bytes allowed by memory copies
    pub mem_pitch: usize,
    /// `textureAlignment`: Alignment requirement for textures
    pub texture_alignment: usize,
    /// `texturePitchAlignment`: Pitch alignment requirement for texture references bound to pitched memory
    pub texture_pitch_alignment: usize,
    /// `kernelExecTimeoutEnabled`: Run time limit for kernels executed on the device
    pub kernel_exec_timeout_enabled: c_int,
    /// `ECCEnabled`: Device has ECC support enabled
    pub ecc_enabled: c_int,
    /// `tccDriver`: 1:If device is Tesla device using TCC driver, else 0
    pub tcc_driver: c_int,
    /// `cooperativeMultiDeviceUnmatchedFunc`: HIP device supports cooperative launch on multiple devices with
    /// unmatched functions
    pub cooperative_multi_device_unmatched_func: c_int,
    /// `cooperativeMultiDeviceUnmatchedGridDim`: HIP device supports cooperative launch on multiple devices with
    /// unmatched grid dimensions
    pub cooperative_multi_device_unmatched_grid_dim: c_int,
    /// `cooperativeMultiDeviceUnmatchedBlockDim`: HIP device supports cooperative launch on multiple devices with
    /// unmatched block dimensions
    pub cooperative_multi_device_unmatched_block_dim: c_int,
    /// `cooperativeMultiDeviceUnmatchedSharedMem`: HIP device supports cooperative launch on multiple devices with
    /// unmatched shared memories
    pub cooperative_multi_device_unmatched_shared_mem: c_int,
    /// `isLargeBar`: 1: if it is a large PCI bar device, else 0
    pub is_large_bar: c_int,
    /// `asicRevision`: Revision of the GPU in this device
    pub asic_revision: c_int,
    /// `managedMemory`: Device supports allocating managed memory on this system
    pub managed_memory: c_int,
    /// `directManagedMemAccessFromHost`: Host can directly access managed memory on the device without migration
    pub direct_managed_mem_access_from_host: c_int,
    /// `concurrentManagedAccess`: Device can coherently access managed memory concurrently with the CPU
    pub concurrent_managed_access: c_int,
    /// `pageableMemoryAccess`: Device supports coherently accessing pageable memory without calling hipHostRegister
    /// on it
    pub pageable_memory_access: c_int,
    /// `pageableMemoryAccessUsesHostPageTables`: Device accesses pageable memory via the host's page tables
    pub pageable_memory_access_uses_host_page_tables: c_int,
}

impl DeviceProp {
    /// An all-zero value, for `hipGetDeviceProperties` to fill.
    #[must_use]
    pub fn zeroed() -> Self {
        // SAFETY: every field is an integer, an integer array, a raw pointer or `DeviceArch` (an
        // integer), for all of which all-zero bytes are a valid value.
        unsafe { core::mem::zeroed() }
    }

    /// `name` up to its NUL; `None` if it has none.
    #[must_use]
    pub fn name(&self) -> Option<&core::ffi::CStr> {
        core::ffi::CStr::from_bytes_until_nul(&self.name).ok()
    }

    /// `gcnArchName` (for example `gfx1100` or `gfx90a:sramecc+:xnack-`) up to its NUL; `None` if
    /// it has none.
    #[must_use]
    pub fn gcn_arch_name(&self) -> Option<&core::ffi::CStr> {
        core::ffi::CStr::from_bytes_until_nul(&self.gcn_arch_name).ok()
    }
}

/// Sizes, alignments, offsets and values of every item of this module.
pub(crate) fn struct_layout_entries(out: &mut Vec<crate::layout::LayoutEntry>) {
    use crate::layout::LayoutEntry;

    struct_layout!(out; DeviceProp = "hipDeviceProp_t", size 792, align 8 {
        name: "name" = 0,
        total_global_mem: "totalGlobalMem" = 256,
        shared_mem_per_block: "sharedMemPerBlock" = 264,
        regs_per_block: "regsPerBlock" = 272,
        warp_size: "warpSize" = 276,
        max_threads_per_block: "maxThreadsPerBlock" = 280,
        max_threads_dim: "maxThreadsDim" = 284,
        max_grid_size: "maxGridSize" = 296,
        clock_rate: "clockRate" = 308,
        memory_clock_rate: "memoryClockRate" = 312,
        memory_bus_width: "memoryBusWidth" = 316,
        total_const_mem: "totalConstMem" = 320,
        major: "major" = 328,
        minor: "minor" = 332,
        multi_processor_count: "multiProcessorCount" = 336,
        l2_cache_size: "l2CacheSize" = 340,
        max_threads_per_multi_processor: "maxThreadsPerMultiProcessor" = 344,
        compute_mode: "computeMode" = 348,
        clock_instruction_rate: "clockInstructionRate" = 352,
        arch: "arch" = 356,
        concurrent_kernels: "concurrentKernels" = 360,
        pci_domain_id: "pciDomainID" = 364,
        pci_bus_id: "pciBusID" = 368,
        pci_device_id: "pciDeviceID" = 372,
        max_shared_memory_per_multi_processor: "maxSharedMemoryPerMultiProcessor" = 376,
        is_multi_gpu_board: "isMultiGpuBoard" = 384,
        can_map_host_memory: "canMapHostMemory" = 388,
        gcn_arch: "gcnArch" = 392,
        gcn_arch_name: "gcnArchName" = 396,
        integrated: "integrated" = 652,
        cooperative_launch: "cooperativeLaunch" = 656,
        cooperative_multi_device_launch: "cooperativeMultiDeviceLaunch" = 660,
        max_texture_1d_linear: "maxTexture1DLinear" = 664,
        max_texture_1d: "maxTexture1D" = 668,
        max_texture_2d: "maxTexture2D" = 672,
        max_texture_3d: "maxTexture3D" = 680,
        hdp_mem_flush_cntl: "hdpMemFlushCntl" = 696,
        hdp_reg_flush_cntl: "hdpRegFlushCntl" = 704,
        mem_pitch: "memPitch" = 712,
        texture_alignment: "textureAlignment" = 720,
        texture_pitch_alignment: "texturePitchAlignment" = 728,
        kernel_exec_timeout_enabled: "kernelExecTimeoutEnabled" = 736,
        ecc_enabled: "ECCEnabled" = 740,
        tcc_driver: "tccDriver" = 744,
        cooperative_multi_device_unmatched_func: "cooperativeMultiDeviceUnmatchedFunc" = 748,
        cooperative_multi_device_unmatched_grid_dim: "cooperativeMultiDeviceUnmatchedGridDim" = 752,
        cooperative_multi_device_unmatched_block_dim: "cooperativeMultiDeviceUnmatchedBlockDim" = 756,
        cooperative_multi_device_unmatched_shared_mem: "cooperativeMultiDeviceUnmatchedSharedMem" = 760,
        is_large_bar: "isLargeBar" = 764,
        asic_revision: "asicRevision" = 768,
        managed_memory: "managedMemory" = 772,
        direct_managed_mem_access_from_host: "directManagedMemAccessFromHost" = 776,
        concurrent_managed_access: "concurrentManagedAccess" = 780,
        pageable_memory_access: "pageableMemoryAccess" = 784,
        pageable_memory_access_uses_host_page_tables: "pageableMemoryAccessUsesHostPageTables" = 788,
    });
    out.push(LayoutEntry::size("sizeof(hipDeviceArch_t)", size_of::<DeviceArch>()));
    out.push(LayoutEntry::size("_Alignof(hipDeviceArch_t)", align_of::<DeviceArch>()));
    for (c_expr, mask) in DEVICE_ARCH_BITS {
        out.push(LayoutEntry::value(c_expr, i128::from(*mask)));
    }
    out.push(LayoutEntry::size("sizeof(hipModule_t)", size_of::<HipModule>()));
    out.push(LayoutEntry::size("sizeof(hipFunction_t)", size_of::<HipFunction>()));
    out.push(LayoutEntry::size("sizeof(hipStream_t)", size_of::<HipStream>()));
    out.push(LayoutEntry::size("sizeof(hipDeviceptr_t)", size_of::<HipDeviceptr>()));
    out.push(LayoutEntry::size("(size_t)HIP_LAUNCH_PARAM_BUFFER_POINTER", HIP_LAUNCH_PARAM_BUFFER_POINTER.addr()));
    out.push(LayoutEntry::size("(size_t)HIP_LAUNCH_PARAM_BUFFER_SIZE", HIP_LAUNCH_PARAM_BUFFER_SIZE.addr()));
    out.push(LayoutEntry::size("(size_t)HIP_LAUNCH_PARAM_END", HIP_LAUNCH_PARAM_END.addr()));
    out.push(LayoutEntry::value("HIP_VERSION_MAJOR", i128::from(HEADER_VERSION_MAJOR)));
    out.push(LayoutEntry::value("HIP_VERSION_MINOR", i128::from(HEADER_VERSION_MINOR)));
    out.push(LayoutEntry::value("HIP_VERSION_PATCH", i128::from(HEADER_VERSION_PATCH)));
    out.push(LayoutEntry::value("HIP_VERSION", i128::from(HEADER_VERSION)));
}
