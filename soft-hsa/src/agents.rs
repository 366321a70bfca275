//! The system the runtime presents: one CPU agent, one GPU agent per configured target (one by
//! default), their ISAs, and the answers of `hsa_system_get_info`, `hsa_agent_get_info` and
//! `hsa_isa_get_info_alt`.
//!
//! Every answer is the attribute's bytes, laid out as the header documents its type (`uint32_t`,
//! `bool`, `char[64]`, ...), for the C ABI layer to copy out. An attribute the runtime does not
//! answer is `HSA_STATUS_ERROR_INVALID_ARGUMENT`, never a silent zero.

#![forbid(unsafe_code)]

use hsa_sys::{
    AgentFeature, AgentInfo, AmdAgentInfo, DefaultFloatRoundingMode, DeviceType, Endianness, HsaStatus, IsaInfo,
    MachineModel, Profile, QueueType, SystemInfo,
};
use pm4_encoding::Target;

/// Environment variable choosing the GPU agent's target (a `gfxNNNN` of the target table), read by the `hsa_init` that starts the runtime. A comma-separated list
/// (`gfx1030,gfx1100,gfx1201`) presents one GPU agent per entry, in that order, as a machine
/// with several GPUs does.
pub const ISA_ENV: &str = "REDLINE_SOFT_HSA_ISA";
/// GPU agents at most.
pub const GPUS_MAX: usize = 8;
/// The target when [`ISA_ENV`] is unset or empty.
pub const DEFAULT_TARGET: Target = Target::Gfx1100;
/// Prefix of an ISA name before the processor.
pub const ISA_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// Handle of the CPU agent.
pub(crate) const CPU_AGENT: u64 = 0xa9e0_0001;
/// Handle of the first GPU agent; GPU agent `i` is `GPU_AGENT + i`.
pub(crate) const GPU_AGENT: u64 = 0xa9e0_0100;
/// Handle of the ISA of `Target::ALL[0]`; the ISA of `Target::ALL[i]` is `ISA_BASE + i`.
const ISA_BASE: u64 = 0x15a0_0001;

/// Rate of `HSA_SYSTEM_INFO_TIMESTAMP`, in Hz (10 ns ticks; the header allows 1-400 MHz): the
/// soft device's GPU clock's, which the command processors' timestamps read.
pub const TIMESTAMP_FREQUENCY_HZ: u64 = soft_device::clock::GpuClock::FREQUENCY_HZ;
/// Smallest AQL queue the GPU agent creates, in packets (as ROCr).
pub const QUEUE_SLOTS_MIN: u32 = 64;
/// Largest AQL queue the GPU agent creates, in packets (as ROCr).
pub const QUEUE_SLOTS_MAX: u32 = 1 << 17;
/// Queues of the GPU agent at most.
pub const QUEUES_MAX: u32 = 128;
/// Work-items per work-group at most.
pub(crate) const WORKGROUP_SIZE_MAX: u32 = 1024;
/// Work-items per wavefront (RDNA's default wave32).
pub(crate) const WAVEFRONT_SIZE: u32 = 32;
/// Bytes of a cache line (the RDNA L2 line).
pub(crate) const CACHELINE_BYTES: u32 = 128;
/// Bytes of `HSA_AGENT_INFO_NAME`, `VENDOR_NAME` and `HSA_AMD_AGENT_INFO_PRODUCT_NAME`.
pub(crate) const NAME_BYTES: usize = 64;
/// Bytes of `HSA_AMD_AGENT_INFO_UUID` ("a maximum of 21 chars including NUL").
pub(crate) const UUID_BYTES: usize = 21;
/// Bytes of the `EXTENSIONS` bit masks (`uint8_t[128]`).
pub(crate) const EXTENSION_MASK_BYTES: usize = 128;
/// `HSA_AMD_SYSTEM_INFO_BUILD_VERSION`.
pub(crate) const BUILD_VERSION: &std::ffi::CStr =
    match std::ffi::CStr::from_bytes_with_nul(concat!("soft-hsa ", env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(text) => text,
        Err(_) => panic!("the build version has one NUL, at its end"),
    };

/// Why [`targets_from_env`] refused a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TargetError {
    /// The value of [`ISA_ENV`].
    pub(crate) value: String,
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
        let value = &self.value;
        write!(f, "{ISA_ENV}={value} is not a list of 1 to {GPUS_MAX} of {} (comma-separated)", names.join(", "))
    }
}

/// The GPU targets [`ISA_ENV`]'s value names (`[DEFAULT_TARGET]` for none or empty).
///
/// # Errors
/// [`TargetError`] for anything but 1 to [`GPUS_MAX`] supported target names, comma-separated.
pub(crate) fn targets_from_env(value: Option<&str>) -> Result<Vec<Target>, TargetError> {
    let value = match value {
        None | Some("") => return Ok(vec![DEFAULT_TARGET]),
        Some(value) => value,
    };
    let refused = || TargetError { value: value.to_owned() };
    let targets: Vec<Target> =
        value.split(',').map(|name| name.trim().parse().map_err(|_| refused())).collect::<Result<_, _>>()?;
    if targets.len() > GPUS_MAX {
        return Err(refused());
    }
    Ok(targets)
}

/// `amdgcn-amd-amdhsa--gfxNNNN`.
pub(crate) fn isa_name(target: Target) -> String {
    format!("{ISA_PREFIX}{}", target.name())
}

/// A PCI device id of a product of each target (`HSA_AMD_AGENT_INFO_CHIP_ID`), from the target
/// table, so a program that prints or switches on it sees a real one.
fn chip_id(target: Target) -> u32 {
    u32::from(target.facts().pci_device_id)
}

/// An attribute's bytes.
pub(crate) type Answer = Result<Vec<u8>, HsaStatus>;

/// The agents of a started runtime: the CPU agent and the GPU agents of its targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Agents {
    // INVARIANT: 1 to GPUS_MAX targets.
    gpus: Vec<Target>,
}

impl Agents {
    /// The CPU agent and one GPU agent per target.
    pub(crate) fn new(gpus: Vec<Target>) -> Self {
        assert!((1..=GPUS_MAX).contains(&gpus.len()), "{} GPU agents", gpus.len());
        Self { gpus }
    }

    /// Every agent's handle in iteration order: the CPU agent first, as ROCr lists them.
    pub(crate) fn handles(&self) -> Vec<u64> {
        std::iter::once(CPU_AGENT).chain((0..self.gpus.len()).map(gpu_agent)).collect()
    }

    /// Whether `agent` is an agent of the runtime.
    pub(crate) fn contains(&self, agent: u64) -> bool {
        agent == CPU_AGENT || self.gpu(agent).is_some()
    }

    /// The index and target of GPU agent `agent`.
    pub(crate) fn gpu(&self, agent: u64) -> Option<(usize, Target)> {
        let index = usize::try_from(agent.checked_sub(GPU_AGENT)?).ok()?;
        self.gpus.get(index).map(|&target| (index, target))
    }

    /// GPU agents.
    pub(crate) fn gpu_count(&self) -> usize {
        self.gpus.len()
    }
}

/// The handle of GPU agent `index`.
pub(crate) fn gpu_agent(index: usize) -> u64 {
    GPU_AGENT + u64::try_from(index).unwrap_or(u64::MAX - GPU_AGENT)
}

/// The handle of `target`'s ISA.
pub(crate) fn isa_handle(target: Target) -> u64 {
    let index = Target::ALL.iter().position(|&t| t == target).unwrap_or(0);
    ISA_BASE + u64::try_from(index).unwrap_or(0)
}

/// The target of ISA `isa`.
fn isa_target(isa: u64) -> Option<Target> {
    let index = usize::try_from(isa.checked_sub(ISA_BASE)?).ok()?;
    Target::ALL.get(index).copied()
}

fn u16s(values: &[u16]) -> Answer {
    Ok(values.iter().flat_map(|v| v.to_ne_bytes()).collect())
}

fn u32s(values: &[u32]) -> Answer {
    Ok(values.iter().flat_map(|v| v.to_ne_bytes()).collect())
}

fn u64s(values: &[u64]) -> Answer {
    Ok(values.iter().flat_map(|v| v.to_ne_bytes()).collect())
}

fn bools(values: &[bool]) -> Answer {
    Ok(values.iter().map(|&v| u8::from(v)).collect())
}

/// `text` in a NUL-padded `char[len]` (truncated to leave the NUL).
fn chars(text: &str, len: usize) -> Answer {
    let mut out = vec![0u8; len];
    let n = text.len().min(len - 1);
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
    Ok(out)
}

const INVALID: Answer = Err(HsaStatus::ERROR_INVALID_ARGUMENT);

/// `hsa_system_get_info`; `timestamp` is the current `HSA_SYSTEM_INFO_TIMESTAMP`, `build_version`
/// the address of [`BUILD_VERSION`] (the attribute is a `const char*`).
pub(crate) fn system_info(attribute: SystemInfo, timestamp: u64, build_version: u64) -> Answer {
    match attribute {
        SystemInfo::VERSION_MAJOR | SystemInfo::VERSION_MINOR => u16s(&[1]),
        SystemInfo::TIMESTAMP => u64s(&[timestamp]),
        SystemInfo::TIMESTAMP_FREQUENCY => u64s(&[TIMESTAMP_FREQUENCY_HZ]),
        SystemInfo::SIGNAL_MAX_WAIT => u64s(&[u64::MAX]),
        SystemInfo::ENDIANNESS => u32s(&[Endianness::LITTLE.0]),
        SystemInfo::MACHINE_MODEL => u32s(&[MachineModel::LARGE.0]),
        SystemInfo::EXTENSIONS => Ok(vec![0; EXTENSION_MASK_BYTES]),
        SystemInfo::AMD_BUILD_VERSION => u64s(&[build_version]),
        SystemInfo::AMD_SVM_SUPPORTED | SystemInfo::AMD_SVM_ACCESSIBLE_BY_DEFAULT => bools(&[false]),
        _ => INVALID,
    }
}

/// `hsa_agent_get_info` of `agent`.
pub(crate) fn agent_info(agents: &Agents, agent: u64, attribute: u32) -> Answer {
    let (gpu, index, target) = match agents.gpu(agent) {
        Some((index, target)) => (true, index, target),
        None if agent == CPU_AGENT => (false, 0, DEFAULT_TARGET),
        None => return Err(HsaStatus::ERROR_INVALID_AGENT),
    };
    if attribute >= AmdAgentInfo::CHIP_ID.0 {
        return amd_agent_info(gpu, index, AmdAgentInfo(attribute), target);
    }
    let (queue_min, queue_max, queues, wave, workgroup) = if gpu {
        (QUEUE_SLOTS_MIN, QUEUE_SLOTS_MAX, QUEUES_MAX, WAVEFRONT_SIZE, WORKGROUP_SIZE_MAX)
    } else {
        (0, 0, 0, 0, 0)
    };
    let workgroup_dim = u16::try_from(workgroup).unwrap_or(u16::MAX);
    match AgentInfo(attribute) {
        AgentInfo::NAME if gpu => chars(target.name(), NAME_BYTES),
        AgentInfo::NAME => chars("Redline soft CPU", NAME_BYTES),
        AgentInfo::VENDOR_NAME => chars(if gpu { "AMD" } else { "CPU" }, NAME_BYTES),
        AgentInfo::FEATURE if gpu => u32s(&[AgentFeature::KERNEL_DISPATCH.0]),
        AgentInfo::FEATURE => u32s(&[AgentFeature::AGENT_DISPATCH.0]),
        AgentInfo::MACHINE_MODEL => u32s(&[MachineModel::LARGE.0]),
        AgentInfo::PROFILE => u32s(&[Profile::BASE.0]),
        AgentInfo::DEFAULT_FLOAT_ROUNDING_MODE => u32s(&[DefaultFloatRoundingMode::NEAR.0]),
        AgentInfo::FAST_F16_OPERATION => bools(&[gpu]),
        AgentInfo::WAVEFRONT_SIZE => u32s(&[wave]),
        AgentInfo::WORKGROUP_MAX_DIM => u16s(&[workgroup_dim; 3]),
        AgentInfo::WORKGROUP_MAX_SIZE => u32s(&[workgroup]),
        AgentInfo::GRID_MAX_DIM => u32s(&[if gpu { u32::MAX } else { 0 }; 3]),
        AgentInfo::GRID_MAX_SIZE => u32s(&[if gpu { u32::MAX } else { 0 }]),
        AgentInfo::FBARRIER_MAX_SIZE => u32s(&[if gpu { 32 } else { 0 }]),
        AgentInfo::QUEUES_MAX => u32s(&[queues]),
        AgentInfo::QUEUE_MIN_SIZE => u32s(&[queue_min]),
        AgentInfo::QUEUE_MAX_SIZE => u32s(&[queue_max]),
        AgentInfo::QUEUE_TYPE => u32s(&[QueueType::MULTI.0]),
        AgentInfo::NODE => u32s(&[node(gpu, index)]),
        AgentInfo::DEVICE => u32s(&[if gpu { DeviceType::GPU.0 } else { DeviceType::CPU.0 }]),
        AgentInfo::CACHE_SIZE => u32s(&[0; 4]),
        AgentInfo::ISA if gpu => u64s(&[isa_handle(target)]),
        AgentInfo::ISA => u64s(&[0]),
        AgentInfo::EXTENSIONS => Ok(vec![0; EXTENSION_MASK_BYTES]),
        AgentInfo::VERSION_MAJOR | AgentInfo::VERSION_MINOR => u16s(&[1]),
        _ => INVALID,
    }
}

/// The NUMA node of an agent: 0 for the CPU, 1 + index for GPU `index`.
fn node(gpu: bool, index: usize) -> u32 {
    if gpu { u32::try_from(index + 1).unwrap_or(u32::MAX) } else { 0 }
}

/// The `hsa_amd_agent_info_t` attributes.
fn amd_agent_info(gpu: bool, index: usize, attribute: AmdAgentInfo, target: Target) -> Answer {
    match attribute {
        AmdAgentInfo::CHIP_ID => u32s(&[if gpu { chip_id(target) } else { 0 }]),
        AmdAgentInfo::CACHELINE_SIZE => u32s(&[CACHELINE_BYTES]),
        // One compute unit: the soft device runs one dispatch at a time.
        AmdAgentInfo::COMPUTE_UNIT_COUNT | AmdAgentInfo::NUM_SHADER_ENGINES => u32s(&[1]),
        AmdAgentInfo::NUM_SHADER_ARRAYS_PER_SE => u32s(&[u32::from(gpu)]),
        AmdAgentInfo::MAX_CLOCK_FREQUENCY => u32s(&[1]),
        AmdAgentInfo::DRIVER_NODE_ID => u32s(&[node(gpu, index)]),
        AmdAgentInfo::MAX_WAVES_PER_CU => u32s(&[if gpu { 32 } else { 0 }]),
        AmdAgentInfo::NUM_SIMDS_PER_CU => u32s(&[if gpu { 2 } else { 0 }]),
        AmdAgentInfo::BDFID | AmdAgentInfo::DOMAIN | AmdAgentInfo::ASIC_REVISION => u32s(&[0]),
        AmdAgentInfo::PRODUCT_NAME if gpu => chars(&format!("Redline soft GPU ({})", target.name()), NAME_BYTES),
        AmdAgentInfo::PRODUCT_NAME => chars("Redline soft CPU", NAME_BYTES),
        // The header's answer for agents without a UUID.
        AmdAgentInfo::UUID => chars(if gpu { "GPU-XX" } else { "CPU-XX" }, UUID_BYTES),
        AmdAgentInfo::COOPERATIVE_QUEUES | AmdAgentInfo::SVM_DIRECT_HOST_ACCESS => bools(&[false]),
        _ => INVALID,
    }
}

/// `hsa_isa_get_info_alt` of a GPU ISA.
pub(crate) fn isa_info(isa: u64, attribute: IsaInfo) -> Answer {
    let target = isa_target(isa).ok_or(HsaStatus::ERROR_INVALID_ISA)?;
    let name = isa_name(target);
    match attribute {
        IsaInfo::NAME_LENGTH => u32s(&[u32::try_from(name.len()).unwrap_or(u32::MAX)]),
        // Exactly NAME_LENGTH bytes: a caller's buffer of that length is enough.
        IsaInfo::NAME => Ok(name.into_bytes()),
        // Indexed by hsa_machine_model_t / hsa_profile_t.
        IsaInfo::MACHINE_MODELS => bools(&[false, true]),
        IsaInfo::PROFILES => bools(&[true, false]),
        // Indexed by hsa_default_float_rounding_mode_t (DEFAULT, ZERO, NEAR).
        IsaInfo::DEFAULT_FLOAT_ROUNDING_MODES => bools(&[false, false, true]),
        IsaInfo::BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => bools(&[false, true, true]),
        IsaInfo::FAST_F16_OPERATION => bools(&[true]),
        IsaInfo::WORKGROUP_MAX_DIM => u16s(&[u16::try_from(WORKGROUP_SIZE_MAX).unwrap_or(u16::MAX); 3]),
        IsaInfo::WORKGROUP_MAX_SIZE => u32s(&[WORKGROUP_SIZE_MAX]),
        IsaInfo::GRID_MAX_DIM => u32s(&[u32::MAX; 3]),
        IsaInfo::GRID_MAX_SIZE => u64s(&[u64::from(u32::MAX)]),
        IsaInfo::FBARRIER_MAX_SIZE => u32s(&[32]),
        _ => INVALID,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_chooses_supported_targets_only() {
        assert_eq!(targets_from_env(None), Ok(vec![Target::Gfx1100]));
        assert_eq!(targets_from_env(Some("")), Ok(vec![Target::Gfx1100]));
        assert_eq!(targets_from_env(Some("gfx1201")), Ok(vec![Target::Gfx1201]));
        let three = targets_from_env(Some("gfx1030, gfx1100,gfx1201"));
        assert_eq!(three, Ok(vec![Target::Gfx1030, Target::Gfx1100, Target::Gfx1201]));
        let error = targets_from_env(Some("gfx90a")).unwrap_err();
        let names = pm4_encoding::family::SupportedTargets;
        let expected = format!("REDLINE_SOFT_HSA_ISA=gfx90a is not a list of 1 to 8 of {names} (comma-separated)");
        assert_eq!(error.to_string(), expected);
        assert!(targets_from_env(Some("gfx1100,")).is_err());
        assert!(targets_from_env(Some(&["gfx1100"; 9].join(","))).is_err());
    }

    #[test]
    fn agents_answer_in_the_header_types() {
        let agents = Agents::new(vec![Target::Gfx1030, Target::Gfx1201]);
        assert_eq!(agents.handles(), [CPU_AGENT, GPU_AGENT, GPU_AGENT + 1]);
        let device = agent_info(&agents, GPU_AGENT, AgentInfo::DEVICE.0).unwrap();
        assert_eq!(device, DeviceType::GPU.0.to_ne_bytes());
        let name = agent_info(&agents, GPU_AGENT, AgentInfo::NAME.0).unwrap();
        assert_eq!((name.len(), &name[..8]), (64, &b"gfx1030\0"[..]));
        let name = agent_info(&agents, GPU_AGENT + 1, AgentInfo::NAME.0).unwrap();
        assert_eq!(&name[..8], b"gfx1201\0");
        let isa = agent_info(&agents, GPU_AGENT + 1, AgentInfo::ISA.0).unwrap();
        assert_eq!(isa, isa_handle(Target::Gfx1201).to_ne_bytes());
        assert_eq!(agent_info(&agents, CPU_AGENT, AgentInfo::DEVICE.0).unwrap(), 0u32.to_ne_bytes());
        assert_eq!(agent_info(&agents, GPU_AGENT + 2, AgentInfo::DEVICE.0), Err(HsaStatus::ERROR_INVALID_AGENT));
        assert_eq!(agent_info(&agents, GPU_AGENT, 0x7fff), INVALID);
        let uuid = agent_info(&agents, GPU_AGENT, AmdAgentInfo::UUID.0).unwrap();
        assert_eq!(&uuid[..7], b"GPU-XX\0");
    }

    #[test]
    fn isas_are_named_for_their_target() {
        let isa = isa_handle(Target::Gfx1201);
        assert_eq!(isa_info(isa, IsaInfo::NAME_LENGTH).unwrap(), 26u32.to_ne_bytes());
        assert_eq!(isa_info(isa, IsaInfo::NAME).unwrap(), b"amdgcn-amd-amdhsa--gfx1201");
        assert_eq!(isa_info(1, IsaInfo::NAME), Err(HsaStatus::ERROR_INVALID_ISA));
        assert_eq!(isa_info(isa, IsaInfo::CALL_CONVENTION_COUNT), INVALID);
    }

    #[test]
    fn system_attributes() {
        assert_eq!(system_info(SystemInfo::TIMESTAMP_FREQUENCY, 0, 0).unwrap(), 100_000_000u64.to_ne_bytes());
        assert_eq!(system_info(SystemInfo::TIMESTAMP, 77, 0).unwrap(), 77u64.to_ne_bytes());
        assert_eq!(system_info(SystemInfo(0x7777), 0, 0), INVALID);
    }
}
