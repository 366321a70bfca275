//! Enums of `hsa.h` and `hsa_ext_amd.h` (ROCm 5.2.3), transcribed with their doc sentences.
//!
//! Every enumerator of each listed enum is here, deprecated ones included, so that a value the
//! runtime returns has a name.

use dynload::c_enums;

c_enums! {
    /// Status codes (`hsa_status_t`, with the additions of `hsa_ext_amd.h`).
    pub struct HsaStatus(u32) = "hsa_status_t" {
        SUCCESS = 0, "HSA_STATUS_SUCCESS",
            "The function has been executed successfully.";
        INFO_BREAK = 1, "HSA_STATUS_INFO_BREAK",
            "A traversal over a list of elements has been interrupted by the application before completing.";
        ERROR = 0x1000, "HSA_STATUS_ERROR",
            "A generic error has occurred.";
        ERROR_INVALID_ARGUMENT = 0x1001, "HSA_STATUS_ERROR_INVALID_ARGUMENT",
            "One of the actual arguments does not meet a precondition stated in the documentation of the \
             corresponding formal argument.";
        ERROR_INVALID_QUEUE_CREATION = 0x1002, "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION",
            "The requested queue creation is not valid.";
        ERROR_INVALID_ALLOCATION = 0x1003, "HSA_STATUS_ERROR_INVALID_ALLOCATION",
            "The requested allocation is not valid.";
        ERROR_INVALID_AGENT = 0x1004, "HSA_STATUS_ERROR_INVALID_AGENT",
            "The agent is invalid.";
        ERROR_INVALID_REGION = 0x1005, "HSA_STATUS_ERROR_INVALID_REGION",
            "The memory region is invalid.";
        ERROR_INVALID_SIGNAL = 0x1006, "HSA_STATUS_ERROR_INVALID_SIGNAL",
            "The signal is invalid.";
        ERROR_INVALID_QUEUE = 0x1007, "HSA_STATUS_ERROR_INVALID_QUEUE",
            "The queue is invalid.";
        ERROR_OUT_OF_RESOURCES = 0x1008, "HSA_STATUS_ERROR_OUT_OF_RESOURCES",
            "The HSA runtime failed to allocate the necessary resources. This error may also occur when the HSA \
             runtime needs to spawn threads or create internal OS-specific events.";
        ERROR_INVALID_PACKET_FORMAT = 0x1009, "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT",
            "The AQL packet is malformed.";
        ERROR_RESOURCE_FREE = 0x100a, "HSA_STATUS_ERROR_RESOURCE_FREE",
            "An error has been detected while releasing a resource.";
        ERROR_NOT_INITIALIZED = 0x100b, "HSA_STATUS_ERROR_NOT_INITIALIZED",
            "An API other than `hsa_init` has been invoked while the reference count of the HSA runtime is 0.";
        ERROR_REFCOUNT_OVERFLOW = 0x100c, "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW",
            "The maximum reference count for the object has been reached.";
        ERROR_INCOMPATIBLE_ARGUMENTS = 0x100d, "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS",
            "The arguments passed to a functions are not compatible.";
        ERROR_INVALID_INDEX = 0x100e, "HSA_STATUS_ERROR_INVALID_INDEX",
            "The index is invalid.";
        ERROR_INVALID_ISA = 0x100f, "HSA_STATUS_ERROR_INVALID_ISA",
            "The instruction set architecture is invalid.";
        ERROR_INVALID_ISA_NAME = 0x1017, "HSA_STATUS_ERROR_INVALID_ISA_NAME",
            "The instruction set architecture name is invalid.";
        ERROR_INVALID_CODE_OBJECT = 0x1010, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT",
            "The code object is invalid.";
        ERROR_INVALID_EXECUTABLE = 0x1011, "HSA_STATUS_ERROR_INVALID_EXECUTABLE",
            "The executable is invalid.";
        ERROR_FROZEN_EXECUTABLE = 0x1012, "HSA_STATUS_ERROR_FROZEN_EXECUTABLE",
            "The executable is frozen.";
        ERROR_INVALID_SYMBOL_NAME = 0x1013, "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME",
            "There is no symbol with the given name.";
        ERROR_VARIABLE_ALREADY_DEFINED = 0x1014, "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED",
            "The variable is already defined.";
        ERROR_VARIABLE_UNDEFINED = 0x1015, "HSA_STATUS_ERROR_VARIABLE_UNDEFINED",
            "The variable is undefined.";
        ERROR_EXCEPTION = 0x1016, "HSA_STATUS_ERROR_EXCEPTION",
            "An HSAIL operation resulted in a hardware exception.";
        ERROR_INVALID_CODE_SYMBOL = 0x1018, "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL",
            "The code object symbol is invalid.";
        ERROR_INVALID_EXECUTABLE_SYMBOL = 0x1019, "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL",
            "The executable symbol is invalid.";
        ERROR_INVALID_FILE = 0x1020, "HSA_STATUS_ERROR_INVALID_FILE",
            "The file descriptor is invalid.";
        ERROR_INVALID_CODE_OBJECT_READER = 0x1021, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER",
            "The code object reader is invalid.";
        ERROR_INVALID_CACHE = 0x1022, "HSA_STATUS_ERROR_INVALID_CACHE",
            "The cache is invalid.";
        ERROR_INVALID_WAVEFRONT = 0x1023, "HSA_STATUS_ERROR_INVALID_WAVEFRONT",
            "The wavefront is invalid.";
        ERROR_INVALID_SIGNAL_GROUP = 0x1024, "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP",
            "The signal group is invalid.";
        ERROR_INVALID_RUNTIME_STATE = 0x1025, "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE",
            "The HSA runtime is not in the configuration state.";
        ERROR_FATAL = 0x1026, "HSA_STATUS_ERROR_FATAL",
            "The queue received an error that may require process termination.";
        ERROR_INVALID_MEMORY_POOL = 40, "HSA_STATUS_ERROR_INVALID_MEMORY_POOL",
            "The memory pool is invalid.";
        ERROR_MEMORY_APERTURE_VIOLATION = 41, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
            "Agent accessed memory beyond the maximum legal address.";
        ERROR_ILLEGAL_INSTRUCTION = 42, "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION",
            "Agent executed an invalid shader instruction.";
        ERROR_MEMORY_FAULT = 43, "HSA_STATUS_ERROR_MEMORY_FAULT",
            "Agent attempted to access an inaccessible address. See hsa_amd_register_system_event_handler and \
             HSA_AMD_GPU_MEMORY_FAULT_EVENT for more information on illegal accesses.";
        CU_MASK_REDUCED = 44, "HSA_STATUS_CU_MASK_REDUCED",
            "The CU mask was successfully set but the mask attempted to enable a CU which was disabled for the \
             process. CUs disabled for the process remain disabled.";
    }
    /// System attributes (`hsa_system_info_t`).
    pub struct SystemInfo(u32) = "hsa_system_info_t" {
        VERSION_MAJOR = 0, "HSA_SYSTEM_INFO_VERSION_MAJOR",
            "Major version of the HSA runtime specification supported by the implementation. The type of this \
             attribute is uint16_t.";
        VERSION_MINOR = 1, "HSA_SYSTEM_INFO_VERSION_MINOR",
            "Minor version of the HSA runtime specification supported by the implementation. The type of this \
             attribute is uint16_t.";
        TIMESTAMP = 2, "HSA_SYSTEM_INFO_TIMESTAMP",
            "Current timestamp. The value of this attribute monotonically increases at a constant rate. The type of \
             this attribute is uint64_t.";
        TIMESTAMP_FREQUENCY = 3, "HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY",
            "Timestamp value increase rate, in Hz. The timestamp (clock) frequency is in the range 1-400MHz. The type \
             of this attribute is uint64_t.";
        SIGNAL_MAX_WAIT = 4, "HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT",
            "Maximum duration of a signal wait operation. Expressed as a count based on the timestamp frequency. The \
             type of this attribute is uint64_t.";
        ENDIANNESS = 5, "HSA_SYSTEM_INFO_ENDIANNESS",
            "Endianness of the system. The type of this attribute is `hsa_endianness_t`.";
        MACHINE_MODEL = 6, "HSA_SYSTEM_INFO_MACHINE_MODEL",
            "Machine model supported by the HSA runtime. The type of this attribute is `hsa_machine_model_t`.";
        EXTENSIONS = 7, "HSA_SYSTEM_INFO_EXTENSIONS",
            "Bit-mask indicating which extensions are supported by the implementation. An extension with an ID of `i` \
             is supported if the bit at position `i` is set. The type of this attribute is `uint8_t[128]`.";
        AMD_BUILD_VERSION = 0x200, "HSA_AMD_SYSTEM_INFO_BUILD_VERSION",
            "String containing the ROCr build identifier.";
        AMD_SVM_SUPPORTED = 0x201, "HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED",
            "Returns true if hsa_amd_svm_* APIs are supported by the driver. The type of this attribute is bool.";
        AMD_SVM_ACCESSIBLE_BY_DEFAULT = 0x202, "HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT",
            "Returns true if all Agents have access to system allocated memory (such as that allocated by mmap, \
             malloc, or new) by default. If false then system allocated memory may only be made SVM accessible to an \
             Agent by declaration of accessibility with hsa_amd_svm_set_attributes. The type of this attribute is \
             bool.";
    }
    /// Endianness (`hsa_endianness_t`), the value of [`SystemInfo::ENDIANNESS`].
    pub struct Endianness(u32) = "hsa_endianness_t" {
        LITTLE = 0, "HSA_ENDIANNESS_LITTLE",
            "The least significant byte is stored in the smallest address.";
        BIG = 1, "HSA_ENDIANNESS_BIG",
            "The most significant byte is stored in the smallest address.";
    }
    /// Machine model (`hsa_machine_model_t`), the value of [`SystemInfo::MACHINE_MODEL`].
    pub struct MachineModel(u32) = "hsa_machine_model_t" {
        SMALL = 0, "HSA_MACHINE_MODEL_SMALL",
            "Small machine model. Addresses use 32 bits.";
        LARGE = 1, "HSA_MACHINE_MODEL_LARGE",
            "Large machine model. Addresses use 64 bits.";
    }
    /// Profile (`hsa_profile_t`).
    pub struct Profile(u32) = "hsa_profile_t" {
        BASE = 0, "HSA_PROFILE_BASE",
            "Base profile.";
        FULL = 1, "HSA_PROFILE_FULL",
            "Full profile.";
    }
    /// Agent features (`hsa_agent_feature_t`), bits of [`AgentInfo::FEATURE`].
    pub struct AgentFeature(u32) = "hsa_agent_feature_t" {
        KERNEL_DISPATCH = 1, "HSA_AGENT_FEATURE_KERNEL_DISPATCH",
            "The agent supports AQL packets of kernel dispatch type. If this feature is enabled, the agent is also a \
             kernel agent.";
        AGENT_DISPATCH = 2, "HSA_AGENT_FEATURE_AGENT_DISPATCH",
            "The agent supports AQL packets of agent dispatch type.";
    }
    /// Hardware device type (`hsa_device_type_t`).
    pub struct DeviceType(u32) = "hsa_device_type_t" {
        CPU = 0, "HSA_DEVICE_TYPE_CPU",
            "CPU device.";
        GPU = 1, "HSA_DEVICE_TYPE_GPU",
            "GPU device.";
        DSP = 2, "HSA_DEVICE_TYPE_DSP",
            "DSP device.";
    }
    /// Default floating-point rounding mode (`hsa_default_float_rounding_mode_t`).
    pub struct DefaultFloatRoundingMode(u32) = "hsa_default_float_rounding_mode_t" {
        DEFAULT = 0, "HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT",
            "Use a default floating-point rounding mode specified elsewhere.";
        ZERO = 1, "HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO",
            "Operations that specify the default floating-point mode are rounded to zero by default.";
        NEAR = 2, "HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR",
            "Operations that specify the default floating-point mode are rounded to the nearest representable number \
             and that ties should be broken by selecting the value with an even least significant bit.";
    }
    /// Agent attributes (`hsa_agent_info_t`).
    pub struct AgentInfo(u32) = "hsa_agent_info_t" {
        NAME = 0, "HSA_AGENT_INFO_NAME",
            "Agent name.";
        VENDOR_NAME = 1, "HSA_AGENT_INFO_VENDOR_NAME",
            "Name of vendor.";
        FEATURE = 2, "HSA_AGENT_INFO_FEATURE",
            "Agent capability.";
        MACHINE_MODEL = 3, "HSA_AGENT_INFO_MACHINE_MODEL",
            "@deprecated Query HSA_ISA_INFO_MACHINE_MODELS for a given intruction set architecture supported by the agent instead.";
        PROFILE = 4, "HSA_AGENT_INFO_PROFILE",
            "@deprecated Query HSA_ISA_INFO_PROFILES for a given intruction set architecture supported by the agent instead.";
        DEFAULT_FLOAT_ROUNDING_MODE = 5, "HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE",
            "@deprecated Query HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES for a given intruction set architecture supported by the agent instead.";
        BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES = 23, "HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES",
            "@deprecated Query HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES for a given intruction set architecture supported by the agent instead.";
        FAST_F16_OPERATION = 24, "HSA_AGENT_INFO_FAST_F16_OPERATION",
            "@deprecated Query HSA_ISA_INFO_FAST_F16_OPERATION for a given intruction set architecture supported by the agent instead.";
        WAVEFRONT_SIZE = 6, "HSA_AGENT_INFO_WAVEFRONT_SIZE",
            "@deprecated Query HSA_WAVEFRONT_INFO_SIZE for a given wavefront and intruction set architecture supported by the agent instead.";
        WORKGROUP_MAX_DIM = 7, "HSA_AGENT_INFO_WORKGROUP_MAX_DIM",
            "@deprecated Query HSA_ISA_INFO_WORKGROUP_MAX_DIM for a given intruction set architecture supported by the agent instead.";
        WORKGROUP_MAX_SIZE = 8, "HSA_AGENT_INFO_WORKGROUP_MAX_SIZE",
            "@deprecated Query HSA_ISA_INFO_WORKGROUP_MAX_SIZE for a given intruction set architecture supported by the agent instead.";
        GRID_MAX_DIM = 9, "HSA_AGENT_INFO_GRID_MAX_DIM",
            "@deprecated Query HSA_ISA_INFO_GRID_MAX_DIM for a given intruction set architecture supported by the agent instead.";
        GRID_MAX_SIZE = 10, "HSA_AGENT_INFO_GRID_MAX_SIZE",
            "@deprecated Query HSA_ISA_INFO_GRID_MAX_SIZE for a given intruction set architecture supported by the agent instead.";
        FBARRIER_MAX_SIZE = 11, "HSA_AGENT_INFO_FBARRIER_MAX_SIZE",
            "@deprecated Query HSA_ISA_INFO_FBARRIER_MAX_SIZE for a given intruction set architecture supported by the agent instead.";
        QUEUES_MAX = 12, "HSA_AGENT_INFO_QUEUES_MAX",
            "@deprecated The maximum number of queues is not statically determined.";
        QUEUE_MIN_SIZE = 13, "HSA_AGENT_INFO_QUEUE_MIN_SIZE",
            "Minimum number of packets that a queue created in the agent can hold.";
        QUEUE_MAX_SIZE = 14, "HSA_AGENT_INFO_QUEUE_MAX_SIZE",
            "Maximum number of packets that a queue created in the agent can hold.";
        QUEUE_TYPE = 15, "HSA_AGENT_INFO_QUEUE_TYPE",
            "Type of a queue created in the agent.";
        NODE = 16, "HSA_AGENT_INFO_NODE",
            "@deprecated NUMA information is not exposed anywhere else in the API.";
        DEVICE = 17, "HSA_AGENT_INFO_DEVICE",
            "Type of hardware device associated with the agent.";
        CACHE_SIZE = 18, "HSA_AGENT_INFO_CACHE_SIZE",
            "@deprecated Query hsa_agent_iterate_caches to retrieve information about the caches present in a given agent.";
        ISA = 19, "HSA_AGENT_INFO_ISA",
            "@deprecated An agent may support multiple instruction set architectures.";
        EXTENSIONS = 20, "HSA_AGENT_INFO_EXTENSIONS",
            "Bit-mask indicating which extensions are supported by the agent.";
        VERSION_MAJOR = 21, "HSA_AGENT_INFO_VERSION_MAJOR",
            "Major version of the HSA runtime specification supported by the agent.";
        VERSION_MINOR = 22, "HSA_AGENT_INFO_VERSION_MINOR",
            "Minor version of the HSA runtime specification supported by the agent.";
    }
    /// AMD agent attributes (`hsa_amd_agent_info_t`), queried through `hsa_agent_get_info`.
    pub struct AmdAgentInfo(u32) = "hsa_amd_agent_info_t" {
        CHIP_ID = 0xa000, "HSA_AMD_AGENT_INFO_CHIP_ID",
            "Chip identifier. The type of this attribute is uint32_t.";
        CACHELINE_SIZE = 0xa001, "HSA_AMD_AGENT_INFO_CACHELINE_SIZE",
            "Size of a cacheline in bytes. The type of this attribute is uint32_t.";
        COMPUTE_UNIT_COUNT = 0xa002, "HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT",
            "The number of compute unit available in the agent. The type of this attribute is uint32_t.";
        MAX_CLOCK_FREQUENCY = 0xa003, "HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY",
            "The maximum clock frequency of the agent in MHz. The type of this attribute is uint32_t.";
        DRIVER_NODE_ID = 0xa004, "HSA_AMD_AGENT_INFO_DRIVER_NODE_ID",
            "Internal driver node identifier. The type of this attribute is uint32_t.";
        MAX_ADDRESS_WATCH_POINTS = 0xa005, "HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS",
            "Max number of watch points on memory address ranges to generate exception events when the watched \
             addresses are accessed. The type of this attribute is uint32_t.";
        BDFID = 0xa006, "HSA_AMD_AGENT_INFO_BDFID",
            "Agent BDF_ID, named LocationID in thunk. The type of this attribute is uint32_t.";
        MEMORY_WIDTH = 0xa007, "HSA_AMD_AGENT_INFO_MEMORY_WIDTH",
            "Memory Interface width, the return value type is uint32_t. This attribute is deprecated.";
        MEMORY_MAX_FREQUENCY = 0xa008, "HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY",
            "Max Memory Clock, the return value type is uint32_t.";
        PRODUCT_NAME = 0xa009, "HSA_AMD_AGENT_INFO_PRODUCT_NAME",
            "Board name of Agent - populated from MarketingName of Kfd Node The value is an Ascii string of 64 chars.";
        MAX_WAVES_PER_CU = 0xa00a, "HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU",
            "Maximum number of waves possible in a Compute Unit. The type of this attribute is uint32_t.";
        NUM_SIMDS_PER_CU = 0xa00b, "HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU",
            "Number of SIMD's per compute unit CU The type of this attribute is uint32_t.";
        NUM_SHADER_ENGINES = 0xa00c, "HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES",
            "Number of Shader Engines (SE) in Gpu The type of this attribute is uint32_t.";
        NUM_SHADER_ARRAYS_PER_SE = 0xa00d, "HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE",
            "Number of Shader Arrays Per Shader Engines in Gpu The type of this attribute is uint32_t.";
        HDP_FLUSH = 0xa00e, "HSA_AMD_AGENT_INFO_HDP_FLUSH",
            "Address of the HDP flush registers. Use of these registers does not conform to the HSA memory model and \
             should be treated with caution. The type of this attribute is hsa_amd_hdp_flush_t.";
        DOMAIN = 0xa00f, "HSA_AMD_AGENT_INFO_DOMAIN",
            "PCIe domain for the agent. Pairs with HSA_AMD_AGENT_INFO_BDFID to give the full physical location of the \
             Agent. The type of this attribute is uint32_t.";
        COOPERATIVE_QUEUES = 0xa010, "HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES",
            "Queries for support of cooperative queues. See `HSA_QUEUE_TYPE_COOPERATIVE`. The type of this attribute \
             is bool.";
        UUID = 0xa011, "HSA_AMD_AGENT_INFO_UUID",
            "Queries UUID of an agent. The value is an Ascii string with a maximum of 21 chars including NUL. The \
             string value consists of two parts: header and body. The header identifies device type (GPU, CPU, DSP) \
             while body encodes UUID as a 16 digit hex string Agents that do not support UUID will return the string \
             \"GPU-XX\" or \"CPU-XX\" or \"DSP-XX\" depending upon their device type `hsa_device_type_t`";
        ASIC_REVISION = 0xa012, "HSA_AMD_AGENT_INFO_ASIC_REVISION",
            "Queries for the ASIC revision of an agent. The value is an integer that increments for each revision. \
             This can be used by user-level software to change how it operates, depending on the hardware version. \
             This allows selective workarounds for hardware errata. The type of this attribute is uint32_t.";
        SVM_DIRECT_HOST_ACCESS = 0xa013, "HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS",
            "Queries whether or not the host can directly access SVM memory that is physically resident in the \
             agent's local memory. The type of this attribute is bool.";
        COOPERATIVE_COMPUTE_UNIT_COUNT = 0xa014, "HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT",
            "Some processors support more CUs than can reliably be used in a cooperative dispatch. This queries the \
             count of CUs which are fully enabled for cooperative dispatch. The type of this attribute is uint32_t.";
    }
    /// Wait condition operator (`hsa_signal_condition_t`).
    pub struct SignalCondition(u32) = "hsa_signal_condition_t" {
        EQ = 0, "HSA_SIGNAL_CONDITION_EQ",
            "The two operands are equal.";
        NE = 1, "HSA_SIGNAL_CONDITION_NE",
            "The two operands are not equal.";
        LT = 2, "HSA_SIGNAL_CONDITION_LT",
            "The first operand is less than the second operand.";
        GTE = 3, "HSA_SIGNAL_CONDITION_GTE",
            "The first operand is greater than or equal to the second operand.";
    }
    /// State of a waiting thread (`hsa_wait_state_t`).
    pub struct WaitState(u32) = "hsa_wait_state_t" {
        BLOCKED = 0, "HSA_WAIT_STATE_BLOCKED",
            "The application thread may be rescheduled while waiting on the signal.";
        ACTIVE = 1, "HSA_WAIT_STATE_ACTIVE",
            "The application thread stays active while waiting on a signal.";
    }
    /// Queue type (`hsa_queue_type_t`); `hsa_queue_create` takes it as `hsa_queue_type32_t`.
    pub struct QueueType(u32) = "hsa_queue_type_t" {
        MULTI = 0, "HSA_QUEUE_TYPE_MULTI",
            "Queue supports multiple producers. Use of multiproducer queue mechanics is required.";
        SINGLE = 1, "HSA_QUEUE_TYPE_SINGLE",
            "Queue only supports a single producer. In some scenarios, the application may want to limit the \
             submission of AQL packets to a single agent. Queues that support a single producer may be more efficient \
             than queues supporting multiple producers. Use of multiproducer queue mechanics is not supported.";
        COOPERATIVE = 2, "HSA_QUEUE_TYPE_COOPERATIVE",
            "Queue supports multiple producers and cooperative dispatches. Cooperative dispatches are able to use GWS \
             synchronization. Queues of this type may be limited in number. The runtime may return the same queue to \
             serve multiple `hsa_queue_create` calls when this type is given. Callers must inspect the returned queue \
             to discover queue size. Queues of this type are reference counted and require a matching number of \
             `hsa_queue_destroy` calls to release. Use of multiproducer queue mechanics is required. See \
             `HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES` to query agent support for this type.";
    }
    /// Queue features (`hsa_queue_feature_t`), bits of `hsa_queue_t::features`.
    pub struct QueueFeature(u32) = "hsa_queue_feature_t" {
        KERNEL_DISPATCH = 1, "HSA_QUEUE_FEATURE_KERNEL_DISPATCH",
            "Queue supports kernel dispatch packets.";
        AGENT_DISPATCH = 2, "HSA_QUEUE_FEATURE_AGENT_DISPATCH",
            "Queue supports agent dispatch packets.";
    }
    /// Instruction set architecture attributes (`hsa_isa_info_t`).
    pub struct IsaInfo(u32) = "hsa_isa_info_t" {
        NAME_LENGTH = 0, "HSA_ISA_INFO_NAME_LENGTH",
            "The length of the ISA name in bytes, not including the NUL terminator. The type of this attribute is \
             uint32_t.";
        NAME = 1, "HSA_ISA_INFO_NAME",
            "Human-readable description. The type of this attribute is character array with the length equal to the \
             value of `HSA_ISA_INFO_NAME_LENGTH` attribute.";
        CALL_CONVENTION_COUNT = 2, "HSA_ISA_INFO_CALL_CONVENTION_COUNT",
            "Deprecated. Number of call conventions supported by the instruction set architecture. Must be greater \
             than zero. The type of this attribute is uint32_t.";
        CALL_CONVENTION_INFO_WAVEFRONT_SIZE = 3, "HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE",
            "Deprecated. Number of work-items in a wavefront for a given call convention. Must be a power of 2 in the \
             range `[1,256]`. The type of this attribute is uint32_t.";
        CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT = 4,
            "HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT",
            "Deprecated. Number of wavefronts per compute unit for a given call convention. In practice, other \
             factors (for example, the amount of group memory used by a work-group) may further limit the number of \
             wavefronts per compute unit. The type of this attribute is uint32_t.";
        MACHINE_MODELS = 5, "HSA_ISA_INFO_MACHINE_MODELS",
            "Machine models supported by the instruction set architecture. The type of this attribute is a `bool[2]`. \
             If the ISA supports the small machine model, the element at index `HSA_MACHINE_MODEL_SMALL` is true. If \
             the ISA supports the large model, the element at index `HSA_MACHINE_MODEL_LARGE` is true.";
        PROFILES = 6, "HSA_ISA_INFO_PROFILES",
            "Profiles supported by the instruction set architecture. The type of this attribute is a `bool[2]`. If \
             the ISA supports the base profile, the element at index `HSA_PROFILE_BASE` is true. If the ISA supports \
             the full profile, the element at index `HSA_PROFILE_FULL` is true.";
        DEFAULT_FLOAT_ROUNDING_MODES = 7, "HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES",
            "Default floating-point rounding modes supported by the instruction set architecture. The type of this \
             attribute is a `bool[3]`. The value at a given index is true if the corresponding rounding mode in \
             `hsa_default_float_rounding_mode_t` is supported. At least one default mode has to be supported. If the \
             default mode is supported, then `HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES` must report \
             that both the zero and the near roundings modes are supported.";
        BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES = 8, "HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES",
            "Default floating-point rounding modes supported by the instruction set architecture in the Base profile. \
             The type of this attribute is a `bool[3]`. The value at a given index is true if the corresponding \
             rounding mode in `hsa_default_float_rounding_mode_t` is supported. The value at index \
             HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT must be false. At least one of the values at indexes \
             `HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO` or HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR must be true.";
        FAST_F16_OPERATION = 9, "HSA_ISA_INFO_FAST_F16_OPERATION",
            "Flag indicating that the f16 HSAIL operation is at least as fast as the f32 operation in the instruction \
             set architecture. The type of this attribute is bool.";
        WORKGROUP_MAX_DIM = 12, "HSA_ISA_INFO_WORKGROUP_MAX_DIM",
            "Maximum number of work-items of each dimension of a work-group. Each maximum must be greater than 0. No \
             maximum can exceed the value of `HSA_ISA_INFO_WORKGROUP_MAX_SIZE`. The type of this attribute is \
             `uint16_t[3]`.";
        WORKGROUP_MAX_SIZE = 13, "HSA_ISA_INFO_WORKGROUP_MAX_SIZE",
            "Maximum total number of work-items in a work-group. The type of this attribute is uint32_t.";
        GRID_MAX_DIM = 14, "HSA_ISA_INFO_GRID_MAX_DIM",
            "Maximum number of work-items of each dimension of a grid. Each maximum must be greater than 0, and must \
             not be smaller than the corresponding value in `HSA_ISA_INFO_WORKGROUP_MAX_DIM`. No maximum can exceed \
             the value of `HSA_ISA_INFO_GRID_MAX_SIZE`. The type of this attribute is `hsa_dim3_t`.";
        GRID_MAX_SIZE = 16, "HSA_ISA_INFO_GRID_MAX_SIZE",
            "Maximum total number of work-items in a grid. The type of this attribute is uint64_t.";
        FBARRIER_MAX_SIZE = 17, "HSA_ISA_INFO_FBARRIER_MAX_SIZE",
            "Maximum number of fbarriers per work-group. Must be at least 32. The type of this attribute is uint32_t.";
    }
    /// Symbol type (`hsa_symbol_kind_t`).
    pub struct SymbolKind(u32) = "hsa_symbol_kind_t" {
        VARIABLE = 0, "HSA_SYMBOL_KIND_VARIABLE",
            "Variable.";
        KERNEL = 1, "HSA_SYMBOL_KIND_KERNEL",
            "Kernel.";
        INDIRECT_FUNCTION = 2, "HSA_SYMBOL_KIND_INDIRECT_FUNCTION",
            "Indirect function.";
    }
    /// Linkage type of a symbol (`hsa_symbol_linkage_t`).
    pub struct SymbolLinkage(u32) = "hsa_symbol_linkage_t" {
        MODULE = 0, "HSA_SYMBOL_LINKAGE_MODULE",
            "Module linkage.";
        PROGRAM = 1, "HSA_SYMBOL_LINKAGE_PROGRAM",
            "Program linkage.";
    }
    /// Executable symbol attributes (`hsa_executable_symbol_info_t`).
    pub struct ExecutableSymbolInfo(u32) = "hsa_executable_symbol_info_t" {
        TYPE = 0, "HSA_EXECUTABLE_SYMBOL_INFO_TYPE",
            "The kind of the symbol. The type of this attribute is `hsa_symbol_kind_t`.";
        NAME_LENGTH = 1, "HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH",
            "The length of the symbol name in bytes, not including the NUL terminator. The type of this attribute is \
             uint32_t.";
        NAME = 2, "HSA_EXECUTABLE_SYMBOL_INFO_NAME",
            "The name of the symbol. The type of this attribute is character array with the length equal to the value \
             of `HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH` attribute.";
        MODULE_NAME_LENGTH = 3, "HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH",
            "Deprecated. The length of the module name in bytes (not including the NUL terminator) to which this \
             symbol belongs if this symbol has module linkage, otherwise 0 is returned. The type of this attribute is \
             uint32_t.";
        MODULE_NAME = 4, "HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME",
            "Deprecated. The module name to which this symbol belongs if this symbol has module linkage, otherwise an \
             empty string is returned. The type of this attribute is character array with the length equal to the \
             value of `HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH` attribute.";
        AGENT = 20, "HSA_EXECUTABLE_SYMBOL_INFO_AGENT",
            "Deprecated. Agent associated with this symbol. If the symbol is a variable, the value of this attribute \
             is only defined if `HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION` is `HSA_VARIABLE_ALLOCATION_AGENT`. \
             The type of this attribute is hsa_agent_t.";
        VARIABLE_ADDRESS = 21, "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS",
            "The address of the variable. The value of this attribute is undefined if the symbol is not a variable. \
             The type of this attribute is uint64_t. If executable's state is `HSA_EXECUTABLE_STATE_UNFROZEN`, then 0 \
             is returned.";
        LINKAGE = 5, "HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE",
            "The linkage kind of the symbol. The type of this attribute is `hsa_symbol_linkage_t`.";
        IS_DEFINITION = 17, "HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION",
            "Indicates whether the symbol corresponds to a definition. The type of this attribute is bool.";
        VARIABLE_ALLOCATION = 6, "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION",
            "Deprecated. The allocation kind of the variable. The value of this attribute is undefined if the symbol \
             is not a variable. The type of this attribute is `hsa_variable_allocation_t`.";
        VARIABLE_SEGMENT = 7, "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT",
            "Deprecated. The segment kind of the variable. The value of this attribute is undefined if the symbol is \
             not a variable. The type of this attribute is `hsa_variable_segment_t`.";
        VARIABLE_ALIGNMENT = 8, "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALIGNMENT",
            "Deprecated. Alignment of the symbol in memory. The value of this attribute is undefined if the symbol is \
             not a variable. The type of this attribute is uint32_t. The current alignment of the variable in memory \
             may be greater than the value specified in the source program variable declaration.";
        VARIABLE_SIZE = 9, "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE",
            "Deprecated. Size of the variable. The value of this attribute is undefined if the symbol is not a \
             variable. The type of this attribute is uint32_t. A value of 0 is returned if the variable is an \
             external variable and has an unknown dimension.";
        VARIABLE_IS_CONST = 10, "HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST",
            "Deprecated. Indicates whether the variable is constant. The value of this attribute is undefined if the \
             symbol is not a variable. The type of this attribute is bool.";
        KERNEL_OBJECT = 22, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT",
            "Kernel object handle, used in the kernel dispatch packet. The value of this attribute is undefined if \
             the symbol is not a kernel. The type of this attribute is uint64_t. If the state of the executable is \
             `HSA_EXECUTABLE_STATE_UNFROZEN`, then 0 is returned.";
        KERNEL_KERNARG_SEGMENT_SIZE = 11, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE",
            "Size of kernarg segment memory that is required to hold the values of the kernel arguments, in bytes. \
             Must be a multiple of 16. The value of this attribute is undefined if the symbol is not a kernel. The \
             type of this attribute is uint32_t.";
        KERNEL_KERNARG_SEGMENT_ALIGNMENT = 12, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT",
            "Alignment (in bytes) of the buffer used to pass arguments to the kernel, which is the maximum of 16 and \
             the maximum alignment of any of the kernel arguments. The value of this attribute is undefined if the \
             symbol is not a kernel. The type of this attribute is uint32_t.";
        KERNEL_GROUP_SEGMENT_SIZE = 13, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE",
            "Size of static group segment memory required by the kernel (per work-group), in bytes. The value of this \
             attribute is undefined if the symbol is not a kernel. The type of this attribute is uint32_t. The \
             reported amount does not include any dynamically allocated group segment memory that may be requested by \
             the application when a kernel is dispatched.";
        KERNEL_PRIVATE_SEGMENT_SIZE = 14, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE",
            "Size of static private, spill, and arg segment memory required by this kernel (per work-item), in bytes. \
             The value of this attribute is undefined if the symbol is not a kernel. The type of this attribute is \
             uint32_t. If the value of `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK` is true, the kernel may \
             use more private memory than the reported value, and the application must add the dynamic call stack \
             usage to @a private_segment_size when populating a kernel dispatch packet.";
        KERNEL_DYNAMIC_CALLSTACK = 15, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK",
            "Dynamic callstack flag. The value of this attribute is undefined if the symbol is not a kernel. The type \
             of this attribute is bool. If this flag is set (the value is true), the kernel uses a dynamically sized \
             call stack. This can happen if recursive calls, calls to indirect functions, or the HSAIL alloca \
             instruction are present in the kernel.";
        KERNEL_CALL_CONVENTION = 18, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION",
            "Deprecated. Call convention of the kernel. The value of this attribute is undefined if the symbol is not \
             a kernel. The type of this attribute is uint32_t.";
        INDIRECT_FUNCTION_OBJECT = 23, "HSA_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_OBJECT",
            "Indirect function object handle. The value of this attribute is undefined if the symbol is not an \
             indirect function, or the associated agent does not support the Full Profile. The type of this attribute \
             depends on the machine model: the type is uint32_t for small machine model, and uint64_t for large \
             model. If the state of the executable is `HSA_EXECUTABLE_STATE_UNFROZEN`, then 0 is returned.";
        INDIRECT_FUNCTION_CALL_CONVENTION = 16, "HSA_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_CALL_CONVENTION",
            "Deprecated. Call convention of the indirect function. The value of this attribute is undefined if the \
             symbol is not an indirect function, or the associated agent does not support the Full Profile. The type \
             of this attribute is uint32_t.";
    }
    /// Memory segments of a memory pool (`hsa_amd_segment_t`).
    pub struct AmdSegment(u32) = "hsa_amd_segment_t" {
        GLOBAL = 0, "HSA_AMD_SEGMENT_GLOBAL",
            "Global segment. Used to hold data that is shared by all agents.";
        READONLY = 1, "HSA_AMD_SEGMENT_READONLY",
            "Read-only segment. Used to hold data that remains constant during the execution of a kernel.";
        PRIVATE = 2, "HSA_AMD_SEGMENT_PRIVATE",
            "Private segment. Used to hold data that is local to a single work-item.";
        GROUP = 3, "HSA_AMD_SEGMENT_GROUP",
            "Group segment. Used to hold data that is shared by the work-items of a work-group.";
    }
    /// Memory pool attributes (`hsa_amd_memory_pool_info_t`).
    pub struct AmdMemoryPoolInfo(u32) = "hsa_amd_memory_pool_info_t" {
        SEGMENT = 0, "HSA_AMD_MEMORY_POOL_INFO_SEGMENT",
            "Segment where the memory pool resides. The type of this attribute is `hsa_amd_segment_t`.";
        GLOBAL_FLAGS = 1, "HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS",
            "Flag mask. The value of this attribute is undefined if the value of `HSA_AMD_MEMORY_POOL_INFO_SEGMENT` \
             is not `HSA_AMD_SEGMENT_GLOBAL`. The type of this attribute is uint32_t, a bit-field of \
             `hsa_amd_memory_pool_global_flag_t` values.";
        SIZE = 2, "HSA_AMD_MEMORY_POOL_INFO_SIZE",
            "Size of this pool, in bytes. The type of this attribute is size_t.";
        RUNTIME_ALLOC_ALLOWED = 5, "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED",
            "Indicates whether memory in this pool can be allocated using `hsa_amd_memory_pool_allocate`. The type of \
             this attribute is bool. The value of this flag is always false for memory pools in the group and private \
             segments.";
        RUNTIME_ALLOC_GRANULE = 6, "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE",
            "Allocation granularity of buffers allocated by `hsa_amd_memory_pool_allocate` in this memory pool. The \
             size of a buffer allocated in this pool is a multiple of the value of this attribute. The value of this \
             attribute is only defined if `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED` is true for this pool. The \
             type of this attribute is size_t.";
        RUNTIME_ALLOC_ALIGNMENT = 7, "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT",
            "Alignment of buffers allocated by `hsa_amd_memory_pool_allocate` in this pool. The value of this \
             attribute is only defined if `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED` is true for this pool, and \
             must be a power of 2. The type of this attribute is size_t.";
        ACCESSIBLE_BY_ALL = 15, "HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL",
            "This memory_pool can be made directly accessible by all the agents in the system \
             (`hsa_amd_agent_memory_pool_get_info` does not return `HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED` for any \
             agent). The type of this attribute is bool.";
        ALLOC_MAX_SIZE = 16, "HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE",
            "Maximum aggregate allocation size in bytes. The type of this attribute is size_t.";
    }
    /// Global-segment memory pool flags (`hsa_amd_memory_pool_global_flag_t`), bits of
    /// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`.
    pub struct AmdMemoryPoolGlobalFlag(u32) = "hsa_amd_memory_pool_global_flag_t" {
        KERNARG_INIT = 1, "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT",
            "The application can use allocations in the memory pool to store kernel arguments, and provide the values \
             for the kernarg segment of a kernel dispatch.";
        FINE_GRAINED = 2, "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED",
            "Updates to memory in this pool conform to HSA memory consistency model. If this flag is set, then \
             `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED` must not be set.";
        COARSE_GRAINED = 4, "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED",
            "Writes to memory in this pool can be performed by a single agent at a time.";
    }
    /// Signal attributes of `hsa_amd_signal_create` (`hsa_amd_signal_attribute_t`).
    pub struct AmdSignalAttribute(u32) = "hsa_amd_signal_attribute_t" {
        AMD_GPU_ONLY = 1, "HSA_AMD_SIGNAL_AMD_GPU_ONLY",
            "Signal will only be consumed by AMD GPUs. Limits signal consumption to AMD GPU agents only. Ignored if \
             `num_consumers` is not zero (all agents).";
        IPC = 2, "HSA_AMD_SIGNAL_IPC",
            "Signal may be used for interprocess communication. IPC signals can be read, written, and waited on from \
             any process. Profiling using an IPC enabled signal is only supported in a single process at a time. \
             Producing profiling data in one process and consuming it in another process is undefined.";
    }
}
