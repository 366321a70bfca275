//! The HSA backend: [`HsaDevice`] implements the HAL's [`Device`] over ROCr through `hsa-sys`,
//! with the meaning the HAL gives every method; [`hip`] is the HIP hand-off.
//!
//! # What it uses
//!
//! - **Agents.** `hsa_iterate_agents`, GPU agents in the runtime's order; the agent's first ISA
//!   (`hsa_agent_iterate_isas` + `hsa_isa_get_info_alt(NAME)`, `amdgcn-amd-amdhsa--gfx1100`) is
//!   mapped to a [`Target`]; any other ISA fails closed with [`HsaOpenError::UnsupportedIsa`].
//! - **Memory.** [`Device::allocate`]: the GPU agent's coarse-grained device-local pool, which
//!   the host never dereferences: [`Device::write`] and [`Device::read`] go through one
//!   fine-grained system-memory staging buffer of [`HsaDevice::STAGING_BYTES`] and
//!   `hsa_memory_copy`. [`Device::allocate_kernarg`]: the CPU agent's `KERNARG_INIT` pool;
//!   [`Device::allocate_ib`]: the CPU agent's fine-grained pool. Both are host memory the packet
//!   processor reads: copies are `memcpy`, [`Device::store_u32`] is one host store. One lookup
//!   checks every address range (see the `memory` module).
//! - **Code objects.** `hsa_code_object_reader_create_from_memory`, `hsa_executable_create_alt`,
//!   `hsa_executable_load_agent_code_object`, `hsa_executable_freeze`; each kernel's `name.kd`
//!   symbol gives `KERNEL_OBJECT` (the descriptor VA). The load base is the descriptor VA minus
//!   the descriptor's ELF address; `kernarg-abi`'s reading of the same bytes, at that base, fills
//!   the [`KernelTable`].
//! - **Ordinary launches.** Asynchronous and in order, like a HIP stream (see the `launch`
//!   module): a kernarg ring, one queue, one completion signal counting the launches in flight.
//!   [`Device::finish`] waits for them; [`Device::read`] and [`Device::write`] finish first. A
//!   fault of the launch queue (the runtime's error callback) is reported once by the next wait,
//!   launches are refused with it until then, and the next launch makes a fresh path.
//! - **Queues.** `hsa_queue_create` (single producer, at least the agent's minimum size) with an
//!   error callback that records the fault. Packets are published body first, header word last
//!   with a release store; the doorbell is `hsa_signal_store_screlease` of the queue's
//!   `doorbell_signal` with the last packet id, and [`Device::ring_doorbell`] returns exactly the
//!   packets it released.
//! - **Waits.** Every wait is bounded by wall clock (`hsa_signal_wait_scacquire` in slices of
//!   [`WAIT_SLICE`]); [`Device::wait_signal`] ends early when a caller's queue faulted, each
//!   fault reported by one wait. [`Drop`] destroys queues, signals and executables and frees
//!   memory without waiting on any signal.
//! - **Fault injection.** [`hal::FaultInjection`] works when the runtime is the soft HSA runtime
//!   (`soft-hsa`), which exports the Redline extension `redline_soft_hsa_inject`; a real ROCr
//!   lacks it and injection is [`BackendError::Unsupported`].
//! - **Identity.** [`HsaDevice::identity`]: the agent's name, vendor, product name, chip id, PCI
//!   domain and BDFID, UUID, and the runtime's specification version and build identifier, each
//!   attribute read on its own (`hsa_agent_get_info`, `hsa_system_get_info`).
//!
//! # Unsafe code
//! Only the `ffi` module has any: thin wrappers over the runtime calls, each one `unsafe` block
//! with its proof, over types that own what the calls need alive (the `hsa_init` reference,
//! signals, queues, executables, pool memory, HIP streams and modules). The rest of the crate
//! denies `unsafe` and reaches the runtimes through them.

#![deny(unsafe_code)]

mod code;
mod device;
mod discover;
// The crate's only unsafe: thin wrappers over the runtime calls, each one `unsafe` block with its
// proof (see the module's documentation).
#[allow(unsafe_code)]
mod ffi;
pub mod hip;
mod identity;
mod launch;
mod memory;
mod queue;

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;

#[allow(unused_imports, reason = "named by doc links")]
use hal::Device;
use hal::{BackendError, DeviceStats, Injection, KernelTable, LaunchError, Lifetime, QueueHandle};
use hsa_sys::{Agent, Hsa, HsaStatus};
use pm4_encoding::Target;

pub use code::{CODE_OBJECT_BYTES_MAX, CODE_OBJECTS_MAX, LDS_BYTES_MAX};
pub use discover::{AGENTS_MAX, ISA_NAME_BYTES_MAX, ISA_PREFIX, ISAS_MAX, POOLS_MAX, runtime_status, target_of_isa};
pub use identity::{AGENT_NAME_BYTES, AGENT_UUID_BYTES, AgentIdentity, BUILD_VERSION_BYTES_MAX, pci_address};
pub use queue::WAIT_SLICE;

use discover::check;
use ffi::{Runtime, Signal, Staging};
use launch::LaunchPath;
use memory::Memory;
use queue::HsaQueue;

/// Why [`HsaDevice::open`] failed.
#[derive(Debug, thiserror::Error)]
pub enum HsaOpenError {
    /// A runtime call failed (`hsa_init` on a machine without `/dev/kfd`, ...).
    #[error(transparent)]
    Call(#[from] BackendError),
    /// There is no GPU agent with this index.
    #[error("no GPU agent {index}: the runtime reports {found} GPU agents")]
    NoGpuAgent {
        /// The index asked for.
        index: usize,
        /// GPU agents found.
        found: usize,
    },
    /// The agent reports no ISA.
    #[error("GPU agent {index} reports no ISA")]
    NoIsa {
        /// The agent index.
        index: usize,
    },
    /// The agent's ISA is not one of the supported targets (fail closed).
    #[error(
        "GPU agent {index} has ISA {isa}, which the lowering does not support (supported: {})",
        pm4_encoding::family::SupportedTargets
    )]
    UnsupportedIsa {
        /// The agent index.
        index: usize,
        /// The ISA name the runtime reported.
        isa: String,
    },
    /// A memory pool the device needs does not exist.
    #[error("no {0} memory pool")]
    NoPool(&'static str),
    /// No GPU agent has the ISA of the target asked for ([`HsaDevice::open_target`]).
    #[error("no GPU agent is a {target}: the runtime reports {isas:?}")]
    NoTarget {
        /// The target asked for.
        target: Target,
        /// The ISA names of the GPU agents, in the runtime's order.
        isas: Vec<String>,
    },
}

/// A queue of the caller's and what its doorbells released.
#[derive(Debug)]
struct UserQueue {
    queue: HsaQueue,
    /// The ring size the caller asked for (the runtime's may be larger).
    slots: u32,
    /// One past the last packet the previous doorbell released.
    released: u64,
    /// Whether a wait has reported the queue's fault.
    fault_reported: bool,
}

/// A GPU driven through the HSA runtime. See the crate documentation.
#[derive(Debug)]
pub struct HsaDevice {
    /// The `hsa_init` reference, released (`hsa_shut_down`) once the device and every runtime
    /// object it made are gone.
    runtime: Runtime,
    agent: Agent,
    target: Target,
    isa: String,
    pools: discover::Pools,
    timestamp_hz: u64,
    /// The GPU agent's smallest and largest queue.
    queue_slots: (u32, u32),
    // INVARIANT: `Some` until `drop`.
    staging: Option<Staging>,
    memory: Memory,
    code: code::Executables,
    kernels: KernelTable,
    queues: BTreeMap<QueueHandle, UserQueue>,
    /// GPU agents the runtime reported at open.
    gpus_visible: u32,
    next_queue: NonZeroU32,
    /// Caller signals by handle.
    signals: BTreeMap<u64, Signal>,
    launch: Option<LaunchPath>,
    /// The failure of an ordinary launch, until a wait reports it.
    launch_fault: Option<LaunchError>,
    /// Ordinary launches published since the last wait.
    unwaited: u64,
    stats: DeviceStats,
    lifetime: Lifetime,
    /// Injections armed and not fired, oldest first.
    injections: Vec<Injection>,
}

impl HsaDevice {
    /// Live allocations at most.
    pub const ALLOCATIONS_MAX: usize = Memory::ALLOCATIONS_MAX;
    /// Largest single allocation.
    pub const ALLOCATION_BYTES_MAX: u64 = 16 << 30;
    /// The host staging buffer used by [`Device::write`] and [`Device::read`] for device memory.
    pub const STAGING_BYTES: usize = Staging::BYTES;
    /// Kernarg bytes of one ordinary launch at most.
    pub const KERNARG_BYTES_MAX: usize = LaunchPath::KERNARG_BYTES_MAX;
    /// Bytes of the ordinary path's kernarg ring.
    pub const KERNARG_RING_BYTES: u64 = LaunchPath::KERNARG_RING_BYTES;
    /// Slots of the ordinary path's queue.
    pub const LAUNCH_QUEUE_SLOTS: u32 = LaunchPath::QUEUE_SLOTS;
    /// A wait for ordinary launches gives up when none completed for this long.
    pub const LAUNCH_STALL_TIMEOUT: std::time::Duration = LaunchPath::STALL_TIMEOUT;
    /// Caller queues at most.
    pub const QUEUES_MAX: usize = 64;
    /// Caller signals at most.
    pub const SIGNALS_MAX: usize = 1024;

    /// Initialises the runtime (`hsa_init`) and opens GPU agent `agent_index`.
    ///
    /// # Errors
    /// [`HsaOpenError::Call`] naming `hsa_init` and its status when the runtime cannot start (no
    /// `/dev/kfd`: `HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)`), or any later discovery call;
    /// [`HsaOpenError::NoGpuAgent`], [`HsaOpenError::UnsupportedIsa`], [`HsaOpenError::NoPool`].
    pub fn open(hsa: Arc<Hsa>, agent_index: usize) -> Result<Self, HsaOpenError> {
        // From here on `runtime` holds the `hsa_init` reference: every early return drops it.
        let runtime = Runtime::init(hsa)
            .map_err(|status| BackendError::Call { call: "hsa_init", status: runtime_status(status) })?;
        let gpus = discover::gpu_agents(&runtime)?;
        let agent = *gpus.get(agent_index).ok_or(HsaOpenError::NoGpuAgent { index: agent_index, found: gpus.len() })?;
        let gpus_visible = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
        let isa = discover::isa_names(&runtime, agent)?
            .into_iter()
            .next()
            .ok_or(HsaOpenError::NoIsa { index: agent_index })?;
        let target =
            target_of_isa(&isa).ok_or_else(|| HsaOpenError::UnsupportedIsa { index: agent_index, isa: isa.clone() })?;
        let (pools, _cpu_agent) = discover::pools(&runtime, agent).map_err(|e| match e {
            discover::PoolError::Call(call) => HsaOpenError::Call(call),
            discover::PoolError::Missing(which) => HsaOpenError::NoPool(which),
        })?;
        let queue_slots = discover::queue_sizes(&runtime, agent)?;
        let timestamp_hz = runtime.timestamp_frequency()?;
        let staging = Staging::new(&runtime, pools.fine, agent)?;
        Ok(Self {
            runtime,
            agent,
            gpus_visible,
            target,
            isa,
            pools,
            timestamp_hz,
            queue_slots,
            staging: Some(staging),
            memory: Memory::default(),
            code: code::Executables::default(),
            kernels: KernelTable::new(),
            queues: BTreeMap::new(),
            next_queue: NonZeroU32::MIN,
            signals: BTreeMap::new(),
            launch: None,
            launch_fault: None,
            unwaited: 0,
            stats: DeviceStats::default(),
            lifetime: Lifetime::default(),
            injections: Vec::new(),
        })
    }

    /// Opens the first GPU agent whose ISA is `target` (a machine, or the soft HSA runtime, may
    /// present several GPUs).
    ///
    /// # Errors
    /// [`HsaOpenError::NoTarget`] when no GPU agent is one; otherwise as [`HsaDevice::open`].
    pub fn open_target(hsa: Arc<Hsa>, target: Target) -> Result<Self, HsaOpenError> {
        let report = probe(&hsa);
        check("hsa_init", report.init_status)?;
        if let Some(error) = report.error {
            return Err(error.into());
        }
        match report.agents.iter().find(|agent| agent.target == Some(target)) {
            Some(agent) => Self::open(hsa, agent.index),
            None => {
                Err(HsaOpenError::NoTarget { target, isas: report.agents.into_iter().filter_map(|a| a.isa).collect() })
            }
        }
    }

    /// The ISA name the runtime reported for the agent.
    #[must_use]
    pub fn isa(&self) -> &str {
        &self.isa
    }

    /// The runtime.
    #[must_use]
    pub fn runtime(&self) -> &Arc<Hsa> {
        self.runtime.hsa()
    }

    /// What the runtime reports about the agent and itself (names, PCI location, versions).
    #[must_use]
    pub fn identity(&self) -> AgentIdentity {
        identity::query(&self.runtime, self.agent)
    }

    /// Records an ordinary-path failure for the next wait and drops the path (a fresh one is made
    /// at the next launch).
    fn fail_launch_path(&mut self, error: LaunchError) {
        self.launch_fault.get_or_insert(error);
        if let Some(path) = self.launch.take() {
            self.stats.waits += path.waits();
            path.destroy();
        }
    }

    /// Destroys every runtime object and frees every allocation; never waits on a signal. Queues
    /// go first, so no queue is left that could use a signal, an executable or memory freed after.
    fn release_all(&mut self) {
        if let Some(path) = self.launch.take() {
            self.stats.waits += path.waits();
            path.destroy();
        }
        for (_, mut user) in std::mem::take(&mut self.queues) {
            user.queue.inactivate();
            user.queue.destroy();
        }
        for (_, signal) in std::mem::take(&mut self.signals) {
            let _ = signal.destroy();
        }
        self.code.destroy_all();
        self.kernels.reset();
        for allocation in self.memory.take_all() {
            let _ = allocation.backing.free();
        }
    }
}

impl Drop for HsaDevice {
    /// Releases every runtime object; the `hsa_init` reference goes with the last of them (the
    /// device's own `runtime` field, dropped after this).
    fn drop(&mut self) {
        self.release_all();
        if let Some(staging) = self.staging.take() {
            let _ = staging.free();
        }
    }
}

/// The staging buffer of a device (`Some` until drop).
fn staging(staging: &mut Option<Staging>) -> &mut Staging {
    // PANIC: INVARIANT of `HsaDevice::staging`.
    staging.as_mut().expect("the staging buffer lives until drop")
}

/// One GPU agent as [`probe`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentProbe {
    /// Index among the GPU agents (the `agent_index` of [`HsaDevice::open`]).
    pub index: usize,
    /// The agent's first ISA name, if it reports one.
    pub isa: Option<String>,
    /// The supported target that ISA denotes; `None` when the lowering does not support it.
    pub target: Option<Target>,
}

/// What [`probe`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The status of `hsa_init`.
    pub init_status: HsaStatus,
    /// The GPU agents (empty when `hsa_init` failed).
    pub agents: Vec<AgentProbe>,
    /// A discovery call that failed after a successful `hsa_init`.
    pub error: Option<BackendError>,
}

/// Initialises the runtime, lists the GPU agents and their targets, and shuts the runtime down
/// again (for diagnostics: `redline doctor`).
#[must_use]
pub fn probe(hsa: &Arc<Hsa>) -> Probe {
    let runtime = match Runtime::init(Arc::clone(hsa)) {
        Ok(runtime) => runtime,
        Err(init_status) => return Probe { init_status, agents: Vec::new(), error: None },
    };
    let mut agents = Vec::new();
    let mut error = None;
    match discover::gpu_agents(&runtime) {
        Ok(gpus) => {
            for (index, agent) in gpus.into_iter().enumerate() {
                match discover::isa_names(&runtime, agent) {
                    Ok(names) => {
                        let isa = names.into_iter().next();
                        let target = isa.as_deref().and_then(target_of_isa);
                        agents.push(AgentProbe { index, isa, target });
                    }
                    Err(e) => error = Some(e),
                }
            }
        }
        Err(e) => error = Some(e),
    }
    // Dropping `runtime` releases the reference `hsa_init` took (discovery creates no runtime
    // objects).
    drop(runtime);
    Probe { init_status: HsaStatus::SUCCESS, agents, error }
}
