//! Enums of `hip_runtime_api.h` (ROCm 5.2.3), transcribed with their doc comments.
//!
//! Every enumerator is here, deprecated aliases included. The header documents only some of them;
//! the others have an empty description.

use dynload::c_enums;

c_enums! {
    /// Error codes (`hipError_t`).
    pub struct HipError(i32) = "hipError_t" {
        SUCCESS = 0, "hipSuccess",
            "Successful completion.";
        ERROR_INVALID_VALUE = 1, "hipErrorInvalidValue",
            "One or more of the parameters passed to the API call is NULL or not in an acceptable range.";
        ERROR_OUT_OF_MEMORY = 2, "hipErrorOutOfMemory", "";
        ERROR_MEMORY_ALLOCATION = 2, "hipErrorMemoryAllocation",
            "Memory allocation error.";
        ERROR_NOT_INITIALIZED = 3, "hipErrorNotInitialized", "";
        ERROR_INITIALIZATION_ERROR = 3, "hipErrorInitializationError", "";
        ERROR_DEINITIALIZED = 4, "hipErrorDeinitialized", "";
        ERROR_PROFILER_DISABLED = 5, "hipErrorProfilerDisabled", "";
        ERROR_PROFILER_NOT_INITIALIZED = 6, "hipErrorProfilerNotInitialized", "";
        ERROR_PROFILER_ALREADY_STARTED = 7, "hipErrorProfilerAlreadyStarted", "";
        ERROR_PROFILER_ALREADY_STOPPED = 8, "hipErrorProfilerAlreadyStopped", "";
        ERROR_INVALID_CONFIGURATION = 9, "hipErrorInvalidConfiguration", "";
        ERROR_INVALID_PITCH_VALUE = 12, "hipErrorInvalidPitchValue", "";
        ERROR_INVALID_SYMBOL = 13, "hipErrorInvalidSymbol", "";
        ERROR_INVALID_DEVICE_POINTER = 17, "hipErrorInvalidDevicePointer",
            "Invalid Device Pointer";
        ERROR_INVALID_MEMCPY_DIRECTION = 21, "hipErrorInvalidMemcpyDirection",
            "Invalid memory copy direction";
        ERROR_INSUFFICIENT_DRIVER = 35, "hipErrorInsufficientDriver", "";
        ERROR_MISSING_CONFIGURATION = 52, "hipErrorMissingConfiguration", "";
        ERROR_PRIOR_LAUNCH_FAILURE = 53, "hipErrorPriorLaunchFailure", "";
        ERROR_INVALID_DEVICE_FUNCTION = 98, "hipErrorInvalidDeviceFunction", "";
        ERROR_NO_DEVICE = 100, "hipErrorNoDevice",
            "Call to hipGetDeviceCount returned 0 devices";
        ERROR_INVALID_DEVICE = 101, "hipErrorInvalidDevice",
            "DeviceID must be in range 0...#compute-devices.";
        ERROR_INVALID_IMAGE = 200, "hipErrorInvalidImage", "";
        ERROR_INVALID_CONTEXT = 201, "hipErrorInvalidContext",
            "Produced when input context is invalid.";
        ERROR_CONTEXT_ALREADY_CURRENT = 202, "hipErrorContextAlreadyCurrent", "";
        ERROR_MAP_FAILED = 205, "hipErrorMapFailed", "";
        ERROR_MAP_BUFFER_OBJECT_FAILED = 205, "hipErrorMapBufferObjectFailed",
            "Produced when the IPC memory attach failed from ROCr.";
        ERROR_UNMAP_FAILED = 206, "hipErrorUnmapFailed", "";
        ERROR_ARRAY_IS_MAPPED = 207, "hipErrorArrayIsMapped", "";
        ERROR_ALREADY_MAPPED = 208, "hipErrorAlreadyMapped", "";
        ERROR_NO_BINARY_FOR_GPU = 209, "hipErrorNoBinaryForGpu", "";
        ERROR_ALREADY_ACQUIRED = 210, "hipErrorAlreadyAcquired", "";
        ERROR_NOT_MAPPED = 211, "hipErrorNotMapped", "";
        ERROR_NOT_MAPPED_AS_ARRAY = 212, "hipErrorNotMappedAsArray", "";
        ERROR_NOT_MAPPED_AS_POINTER = 213, "hipErrorNotMappedAsPointer", "";
        ERROR_ECC_NOT_CORRECTABLE = 214, "hipErrorECCNotCorrectable", "";
        ERROR_UNSUPPORTED_LIMIT = 215, "hipErrorUnsupportedLimit", "";
        ERROR_CONTEXT_ALREADY_IN_USE = 216, "hipErrorContextAlreadyInUse", "";
        ERROR_PEER_ACCESS_UNSUPPORTED = 217, "hipErrorPeerAccessUnsupported", "";
        ERROR_INVALID_KERNEL_FILE = 218, "hipErrorInvalidKernelFile",
            "In CUDA DRV, it is CUDA_ERROR_INVALID_PTX";
        ERROR_INVALID_GRAPHICS_CONTEXT = 219, "hipErrorInvalidGraphicsContext", "";
        ERROR_INVALID_SOURCE = 300, "hipErrorInvalidSource", "";
        ERROR_FILE_NOT_FOUND = 301, "hipErrorFileNotFound", "";
        ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND = 302, "hipErrorSharedObjectSymbolNotFound", "";
        ERROR_SHARED_OBJECT_INIT_FAILED = 303, "hipErrorSharedObjectInitFailed", "";
        ERROR_OPERATING_SYSTEM = 304, "hipErrorOperatingSystem", "";
        ERROR_INVALID_HANDLE = 400, "hipErrorInvalidHandle", "";
        ERROR_INVALID_RESOURCE_HANDLE = 400, "hipErrorInvalidResourceHandle",
            "Resource handle (hipEvent_t or hipStream_t) invalid.";
        ERROR_ILLEGAL_STATE = 401, "hipErrorIllegalState",
            "Resource required is not in a valid state to perform operation.";
        ERROR_NOT_FOUND = 500, "hipErrorNotFound", "";
        ERROR_NOT_READY = 600, "hipErrorNotReady",
            "Indicates that asynchronous operations enqueued earlier are not ready. This is not actually an error, \
             but is used to distinguish from hipSuccess (which indicates completion). APIs that return this error \
             include hipEventQuery and hipStreamQuery.";
        ERROR_ILLEGAL_ADDRESS = 700, "hipErrorIllegalAddress", "";
        ERROR_LAUNCH_OUT_OF_RESOURCES = 701, "hipErrorLaunchOutOfResources",
            "Out of resources error.";
        ERROR_LAUNCH_TIME_OUT = 702, "hipErrorLaunchTimeOut", "";
        ERROR_PEER_ACCESS_ALREADY_ENABLED = 704, "hipErrorPeerAccessAlreadyEnabled",
            "Peer access was already enabled from the current device.";
        ERROR_PEER_ACCESS_NOT_ENABLED = 705, "hipErrorPeerAccessNotEnabled",
            "Peer access was never enabled from the current device.";
        ERROR_SET_ON_ACTIVE_PROCESS = 708, "hipErrorSetOnActiveProcess", "";
        ERROR_CONTEXT_IS_DESTROYED = 709, "hipErrorContextIsDestroyed", "";
        ERROR_ASSERT = 710, "hipErrorAssert",
            "Produced when the kernel calls assert.";
        ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712, "hipErrorHostMemoryAlreadyRegistered",
            "Produced when trying to lock a page-locked memory.";
        ERROR_HOST_MEMORY_NOT_REGISTERED = 713, "hipErrorHostMemoryNotRegistered",
            "Produced when trying to unlock a non-page-locked memory.";
        ERROR_LAUNCH_FAILURE = 719, "hipErrorLaunchFailure",
            "An exception occurred on the device while executing a kernel.";
        ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720, "hipErrorCooperativeLaunchTooLarge",
            "This error indicates that the number of blocks launched per grid for a kernel that was launched via \
             cooperative launch APIs exceeds the maximum number of allowed blocks for the current device";
        ERROR_NOT_SUPPORTED = 801, "hipErrorNotSupported",
            "Produced when the hip API is not supported/implemented";
        ERROR_STREAM_CAPTURE_UNSUPPORTED = 900, "hipErrorStreamCaptureUnsupported",
            "The operation is not permitted when the stream is capturing.";
        ERROR_STREAM_CAPTURE_INVALIDATED = 901, "hipErrorStreamCaptureInvalidated",
            "The current capture sequence on the stream has been invalidated due to a previous error.";
        ERROR_STREAM_CAPTURE_MERGE = 902, "hipErrorStreamCaptureMerge",
            "The operation would have resulted in a merge of two independent capture sequences.";
        ERROR_STREAM_CAPTURE_UNMATCHED = 903, "hipErrorStreamCaptureUnmatched",
            "The capture was not initiated in this stream.";
        ERROR_STREAM_CAPTURE_UNJOINED = 904, "hipErrorStreamCaptureUnjoined",
            "The capture sequence contains a fork that was not joined to the primary stream.";
        ERROR_STREAM_CAPTURE_ISOLATION = 905, "hipErrorStreamCaptureIsolation",
            "A dependency would have been created which crosses the capture sequence boundary. Only implicit \
             in-stream ordering dependencies are allowed to cross the boundary";
        ERROR_STREAM_CAPTURE_IMPLICIT = 906, "hipErrorStreamCaptureImplicit",
            "The operation would have resulted in a disallowed implicit dependency on a current capture sequence from \
             hipStreamLegacy.";
        ERROR_CAPTURED_EVENT = 907, "hipErrorCapturedEvent",
            "The operation is not permitted on an event which was last recorded in a capturing stream.";
        ERROR_STREAM_CAPTURE_WRONG_THREAD = 908, "hipErrorStreamCaptureWrongThread",
            "A stream capture sequence not initiated with the hipStreamCaptureModeRelaxed argument to \
             hipStreamBeginCapture was passed to hipStreamEndCapture in a different thread.";
        ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910, "hipErrorGraphExecUpdateFailure",
            "This error indicates that the graph update not performed because it included changes which violated \
             constraintsspecific to instantiated graph update.";
        ERROR_UNKNOWN = 999, "hipErrorUnknown",
            "Unknown error.";
        ERROR_RUNTIME_MEMORY = 1052, "hipErrorRuntimeMemory",
            "HSA runtime memory call returned error. Typically not seen in production systems.";
        ERROR_RUNTIME_OTHER = 1053, "hipErrorRuntimeOther",
            "HSA runtime call other than memory returned error. Typically not seen in production systems.";
        ERROR_TBD = 1054, "hipErrorTbd",
            "Marker that more error codes are needed.";
    }
    /// Device attributes of `hipDeviceGetAttribute` (`hipDeviceAttribute_t`).
    pub struct DeviceAttribute(i32) = "hipDeviceAttribute_t" {
        CUDA_COMPATIBLE_BEGIN = 0, "hipDeviceAttributeCudaCompatibleBegin", "";
        ECC_ENABLED = 0, "hipDeviceAttributeEccEnabled",
            "Whether ECC support is enabled.";
        ACCESS_POLICY_MAX_WINDOW_SIZE = 1, "hipDeviceAttributeAccessPolicyMaxWindowSize",
            "Cuda only. The maximum size of the window policy in bytes.";
        ASYNC_ENGINE_COUNT = 2, "hipDeviceAttributeAsyncEngineCount",
            "Cuda only. Asynchronous engines number.";
        CAN_MAP_HOST_MEMORY = 3, "hipDeviceAttributeCanMapHostMemory",
            "Whether host memory can be mapped into device address space";
        CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 4, "hipDeviceAttributeCanUseHostPointerForRegisteredMem",
            "Cuda only. Device can access host registered memory at the same virtual address as the CPU";
        CLOCK_RATE = 5, "hipDeviceAttributeClockRate",
            "Peak clock frequency in kilohertz.";
        COMPUTE_MODE = 6, "hipDeviceAttributeComputeMode",
            "Compute mode that device is currently in.";
        COMPUTE_PREEMPTION_SUPPORTED = 7, "hipDeviceAttributeComputePreemptionSupported",
            "Cuda only. Device supports Compute Preemption.";
        CONCURRENT_KERNELS = 8, "hipDeviceAttributeConcurrentKernels",
            "Device can possibly execute multiple kernels concurrently.";
        CONCURRENT_MANAGED_ACCESS = 9, "hipDeviceAttributeConcurrentManagedAccess",
            "Device can coherently access managed memory concurrently with the CPU";
        COOPERATIVE_LAUNCH = 10, "hipDeviceAttributeCooperativeLaunch",
            "Support cooperative launch";
        COOPERATIVE_MULTI_DEVICE_LAUNCH = 11, "hipDeviceAttributeCooperativeMultiDeviceLaunch",
            "Support cooperative launch on multiple devices";
        DEVICE_OVERLAP = 12, "hipDeviceAttributeDeviceOverlap",
            "Cuda only. Device can concurrently copy memory and execute a kernel. Deprecated. Use instead \
             asyncEngineCount.";
        DIRECT_MANAGED_MEM_ACCESS_FROM_HOST = 13, "hipDeviceAttributeDirectManagedMemAccessFromHost",
            "Host can directly access managed memory on the device without migration";
        GLOBAL_L1_CACHE_SUPPORTED = 14, "hipDeviceAttributeGlobalL1CacheSupported",
            "Cuda only. Device supports caching globals in L1";
        HOST_NATIVE_ATOMIC_SUPPORTED = 15, "hipDeviceAttributeHostNativeAtomicSupported",
            "Cuda only. Link between the device and the host supports native atomic operations";
        INTEGRATED = 16, "hipDeviceAttributeIntegrated",
            "Device is integrated GPU";
        IS_MULTI_GPU_BOARD = 17, "hipDeviceAttributeIsMultiGpuBoard",
            "Multiple GPU devices.";
        KERNEL_EXEC_TIMEOUT = 18, "hipDeviceAttributeKernelExecTimeout",
            "Run time limit for kernels executed on the device";
        L2_CACHE_SIZE = 19, "hipDeviceAttributeL2CacheSize",
            "Size of L2 cache in bytes. 0 if the device doesn't have L2 cache.";
        LOCAL_L1_CACHE_SUPPORTED = 20, "hipDeviceAttributeLocalL1CacheSupported",
            "caching locals in L1 is supported";
        LUID = 21, "hipDeviceAttributeLuid",
            "Cuda only. 8-byte locally unique identifier in 8 bytes. Undefined on TCC and non-Windows platforms";
        LUID_DEVICE_NODE_MASK = 22, "hipDeviceAttributeLuidDeviceNodeMask",
            "Cuda only. Luid device node mask. Undefined on TCC and non-Windows platforms";
        COMPUTE_CAPABILITY_MAJOR = 23, "hipDeviceAttributeComputeCapabilityMajor",
            "Major compute capability version number.";
        MANAGED_MEMORY = 24, "hipDeviceAttributeManagedMemory",
            "Device supports allocating managed memory on this system";
        MAX_BLOCKS_PER_MULTI_PROCESSOR = 25, "hipDeviceAttributeMaxBlocksPerMultiProcessor",
            "Cuda only. Max block size per multiprocessor";
        MAX_BLOCK_DIM_X = 26, "hipDeviceAttributeMaxBlockDimX",
            "Max block size in width.";
        MAX_BLOCK_DIM_Y = 27, "hipDeviceAttributeMaxBlockDimY",
            "Max block size in height.";
        MAX_BLOCK_DIM_Z = 28, "hipDeviceAttributeMaxBlockDimZ",
            "Max block size in depth.";
        MAX_GRID_DIM_X = 29, "hipDeviceAttributeMaxGridDimX",
            "Max grid size in width.";
        MAX_GRID_DIM_Y = 30, "hipDeviceAttributeMaxGridDimY",
            "Max grid size in height.";
        MAX_GRID_DIM_Z = 31, "hipDeviceAttributeMaxGridDimZ",
            "Max grid size in depth.";
        MAX_SURFACE1_D = 32, "hipDeviceAttributeMaxSurface1D",
            "Maximum size of 1D surface.";
        MAX_SURFACE1_D_LAYERED = 33, "hipDeviceAttributeMaxSurface1DLayered",
            "Cuda only. Maximum dimensions of 1D layered surface.";
        MAX_SURFACE2_D = 34, "hipDeviceAttributeMaxSurface2D",
            "Maximum dimension (width, height) of 2D surface.";
        MAX_SURFACE2_D_LAYERED = 35, "hipDeviceAttributeMaxSurface2DLayered",
            "Cuda only. Maximum dimensions of 2D layered surface.";
        MAX_SURFACE3_D = 36, "hipDeviceAttributeMaxSurface3D",
            "Maximum dimension (width, height, depth) of 3D surface.";
        MAX_SURFACE_CUBEMAP = 37, "hipDeviceAttributeMaxSurfaceCubemap",
            "Cuda only. Maximum dimensions of Cubemap surface.";
        MAX_SURFACE_CUBEMAP_LAYERED = 38, "hipDeviceAttributeMaxSurfaceCubemapLayered",
            "Cuda only. Maximum dimension of Cubemap layered surface.";
        MAX_TEXTURE1_D_WIDTH = 39, "hipDeviceAttributeMaxTexture1DWidth",
            "Maximum size of 1D texture.";
        MAX_TEXTURE1_D_LAYERED = 40, "hipDeviceAttributeMaxTexture1DLayered",
            "Cuda only. Maximum dimensions of 1D layered texture.";
        MAX_TEXTURE1_D_LINEAR = 41, "hipDeviceAttributeMaxTexture1DLinear",
            "Maximum number of elements allocatable in a 1D linear texture. Use \
             cudaDeviceGetTexture1DLinearMaxWidth() instead on Cuda.";
        MAX_TEXTURE1_D_MIPMAP = 42, "hipDeviceAttributeMaxTexture1DMipmap",
            "Cuda only. Maximum size of 1D mipmapped texture.";
        MAX_TEXTURE2_D_WIDTH = 43, "hipDeviceAttributeMaxTexture2DWidth",
            "Maximum dimension width of 2D texture.";
        MAX_TEXTURE2_D_HEIGHT = 44, "hipDeviceAttributeMaxTexture2DHeight",
            "Maximum dimension hight of 2D texture.";
        MAX_TEXTURE2_D_GATHER = 45, "hipDeviceAttributeMaxTexture2DGather",
            "Cuda only. Maximum dimensions of 2D texture if gather operations performed.";
        MAX_TEXTURE2_D_LAYERED = 46, "hipDeviceAttributeMaxTexture2DLayered",
            "Cuda only. Maximum dimensions of 2D layered texture.";
        MAX_TEXTURE2_D_LINEAR = 47, "hipDeviceAttributeMaxTexture2DLinear",
            "Cuda only. Maximum dimensions (width, height, pitch) of 2D textures bound to pitched memory.";
        MAX_TEXTURE2_D_MIPMAP = 48, "hipDeviceAttributeMaxTexture2DMipmap",
            "Cuda only. Maximum dimensions of 2D mipmapped texture.";
        MAX_TEXTURE3_D_WIDTH = 49, "hipDeviceAttributeMaxTexture3DWidth",
            "Maximum dimension width of 3D texture.";
        MAX_TEXTURE3_D_HEIGHT = 50, "hipDeviceAttributeMaxTexture3DHeight",
            "Maximum dimension height of 3D texture.";
        MAX_TEXTURE3_D_DEPTH = 51, "hipDeviceAttributeMaxTexture3DDepth",
            "Maximum dimension depth of 3D texture.";
        MAX_TEXTURE3_D_ALT = 52, "hipDeviceAttributeMaxTexture3DAlt",
            "Cuda only. Maximum dimensions of alternate 3D texture.";
        MAX_TEXTURE_CUBEMAP = 53, "hipDeviceAttributeMaxTextureCubemap",
            "Cuda only. Maximum dimensions of Cubemap texture";
        MAX_TEXTURE_CUBEMAP_LAYERED = 54, "hipDeviceAttributeMaxTextureCubemapLayered",
            "Cuda only. Maximum dimensions of Cubemap layered texture.";
        MAX_THREADS_DIM = 55, "hipDeviceAttributeMaxThreadsDim",
            "Maximum dimension of a block";
        MAX_THREADS_PER_BLOCK = 56, "hipDeviceAttributeMaxThreadsPerBlock",
            "Maximum number of threads per block.";
        MAX_THREADS_PER_MULTI_PROCESSOR = 57, "hipDeviceAttributeMaxThreadsPerMultiProcessor",
            "Maximum resident threads per multiprocessor.";
        MAX_PITCH = 58, "hipDeviceAttributeMaxPitch",
            "Maximum pitch in bytes allowed by memory copies";
        MEMORY_BUS_WIDTH = 59, "hipDeviceAttributeMemoryBusWidth",
            "Global memory bus width in bits.";
        MEMORY_CLOCK_RATE = 60, "hipDeviceAttributeMemoryClockRate",
            "Peak memory clock frequency in kilohertz.";
        COMPUTE_CAPABILITY_MINOR = 61, "hipDeviceAttributeComputeCapabilityMinor",
            "Minor compute capability version number.";
        MULTI_GPU_BOARD_GROUP_ID = 62, "hipDeviceAttributeMultiGpuBoardGroupID",
            "Cuda only. Unique ID of device group on the same multi-GPU board";
        MULTIPROCESSOR_COUNT = 63, "hipDeviceAttributeMultiprocessorCount",
            "Number of multiprocessors on the device.";
        NAME = 64, "hipDeviceAttributeName",
            "Device name.";
        PAGEABLE_MEMORY_ACCESS = 65, "hipDeviceAttributePageableMemoryAccess",
            "Device supports coherently accessing pageable memory without calling hipHostRegister on it";
        PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 66, "hipDeviceAttributePageableMemoryAccessUsesHostPageTables",
            "Device accesses pageable memory via the host's page tables";
        PCI_BUS_ID = 67, "hipDeviceAttributePciBusId",
            "PCI Bus ID.";
        PCI_DEVICE_ID = 68, "hipDeviceAttributePciDeviceId",
            "PCI Device ID.";
        PCI_DOMAIN_ID = 69, "hipDeviceAttributePciDomainID",
            "PCI Domain ID.";
        PERSISTING_L2_CACHE_MAX_SIZE = 70, "hipDeviceAttributePersistingL2CacheMaxSize",
            "Cuda11 only. Maximum l2 persisting lines capacity in bytes";
        MAX_REGISTERS_PER_BLOCK = 71, "hipDeviceAttributeMaxRegistersPerBlock",
            "32-bit registers available to a thread block. This number is shared by all thread blocks simultaneously \
             resident on a multiprocessor.";
        MAX_REGISTERS_PER_MULTIPROCESSOR = 72, "hipDeviceAttributeMaxRegistersPerMultiprocessor",
            "32-bit registers available per block.";
        RESERVED_SHARED_MEM_PER_BLOCK = 73, "hipDeviceAttributeReservedSharedMemPerBlock",
            "Cuda11 only. Shared memory reserved by CUDA driver per block.";
        MAX_SHARED_MEMORY_PER_BLOCK = 74, "hipDeviceAttributeMaxSharedMemoryPerBlock",
            "Maximum shared memory available per block in bytes.";
        SHARED_MEM_PER_BLOCK_OPTIN = 75, "hipDeviceAttributeSharedMemPerBlockOptin",
            "Cuda only. Maximum shared memory per block usable by special opt in.";
        SHARED_MEM_PER_MULTIPROCESSOR = 76, "hipDeviceAttributeSharedMemPerMultiprocessor",
            "Cuda only. Shared memory available per multiprocessor.";
        SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO = 77, "hipDeviceAttributeSingleToDoublePrecisionPerfRatio",
            "Cuda only. Performance ratio of single precision to double precision.";
        STREAM_PRIORITIES_SUPPORTED = 78, "hipDeviceAttributeStreamPrioritiesSupported",
            "Cuda only. Whether to support stream priorities.";
        SURFACE_ALIGNMENT = 79, "hipDeviceAttributeSurfaceAlignment",
            "Cuda only. Alignment requirement for surfaces";
        TCC_DRIVER = 80, "hipDeviceAttributeTccDriver",
            "Cuda only. Whether device is a Tesla device using TCC driver";
        TEXTURE_ALIGNMENT = 81, "hipDeviceAttributeTextureAlignment",
            "Alignment requirement for textures";
        TEXTURE_PITCH_ALIGNMENT = 82, "hipDeviceAttributeTexturePitchAlignment",
            "Pitch alignment requirement for 2D texture references bound to pitched memory;";
        TOTAL_CONSTANT_MEMORY = 83, "hipDeviceAttributeTotalConstantMemory",
            "Constant memory size in bytes.";
        TOTAL_GLOBAL_MEM = 84, "hipDeviceAttributeTotalGlobalMem",
            "Global memory available on devicice.";
        UNIFIED_ADDRESSING = 85, "hipDeviceAttributeUnifiedAddressing",
            "Cuda only. An unified address space shared with the host.";
        UUID = 86, "hipDeviceAttributeUuid",
            "Cuda only. Unique ID in 16 byte.";
        WARP_SIZE = 87, "hipDeviceAttributeWarpSize",
            "Warp size in threads.";
        MEMORY_POOLS_SUPPORTED = 88, "hipDeviceAttributeMemoryPoolsSupported",
            "Device supports HIP Stream Ordered Memory Allocator";
        CUDA_COMPATIBLE_END = 9999, "hipDeviceAttributeCudaCompatibleEnd", "";
        AMD_SPECIFIC_BEGIN = 10000, "hipDeviceAttributeAmdSpecificBegin", "";
        CLOCK_INSTRUCTION_RATE = 10000, "hipDeviceAttributeClockInstructionRate",
            "Frequency in khz of the timer used by the device-side \"clock*\"";
        ARCH = 10001, "hipDeviceAttributeArch",
            "Device architecture";
        MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 10002, "hipDeviceAttributeMaxSharedMemoryPerMultiprocessor",
            "Maximum Shared Memory PerMultiprocessor.";
        GCN_ARCH = 10003, "hipDeviceAttributeGcnArch",
            "Device gcn architecture";
        GCN_ARCH_NAME = 10004, "hipDeviceAttributeGcnArchName",
            "Device gcnArch name in 256 bytes";
        HDP_MEM_FLUSH_CNTL = 10005, "hipDeviceAttributeHdpMemFlushCntl",
            "Address of the HDP_MEM_COHERENCY_FLUSH_CNTL register";
        HDP_REG_FLUSH_CNTL = 10006, "hipDeviceAttributeHdpRegFlushCntl",
            "Address of the HDP_REG_COHERENCY_FLUSH_CNTL register";
        COOPERATIVE_MULTI_DEVICE_UNMATCHED_FUNC = 10007, "hipDeviceAttributeCooperativeMultiDeviceUnmatchedFunc",
            "Supports cooperative launch on multiple devices with unmatched functions";
        COOPERATIVE_MULTI_DEVICE_UNMATCHED_GRID_DIM = 10008, "hipDeviceAttributeCooperativeMultiDeviceUnmatchedGridDim",
            "Supports cooperative launch on multiple devices with unmatched grid dimensions";
        COOPERATIVE_MULTI_DEVICE_UNMATCHED_BLOCK_DIM = 10009,
            "hipDeviceAttributeCooperativeMultiDeviceUnmatchedBlockDim",
            "Supports cooperative launch on multiple devices with unmatched block dimensions";
        COOPERATIVE_MULTI_DEVICE_UNMATCHED_SHARED_MEM = 10010,
            "hipDeviceAttributeCooperativeMultiDeviceUnmatchedSharedMem",
            "Supports cooperative launch on multiple devices with unmatched shared memories";
        IS_LARGE_BAR = 10011, "hipDeviceAttributeIsLargeBar",
            "Whether it is LargeBar";
        ASIC_REVISION = 10012, "hipDeviceAttributeAsicRevision",
            "Revision of the GPU in this device";
        CAN_USE_STREAM_WAIT_VALUE = 10013, "hipDeviceAttributeCanUseStreamWaitValue",
            "'1' if Device supports hipStreamWaitValue32() and hipStreamWaitValue64(), '0' otherwise.";
        IMAGE_SUPPORT = 10014, "hipDeviceAttributeImageSupport",
            "'1' if Device supports image, '0' otherwise.";
        PHYSICAL_MULTI_PROCESSOR_COUNT = 10015, "hipDeviceAttributePhysicalMultiProcessorCount",
            "All available physical compute units for the device";
        FINE_GRAIN_SUPPORT = 10016, "hipDeviceAttributeFineGrainSupport",
            "'1' if Device supports fine grain, '0' otherwise";
        AMD_SPECIFIC_END = 19999, "hipDeviceAttributeAmdSpecificEnd", "";
        VENDOR_SPECIFIC_BEGIN = 20000, "hipDeviceAttributeVendorSpecificBegin", "";
    }
}
