//! The runtime reference (`hsa_init` / `hsa_shut_down`), discovery by iteration callbacks, and
//! the attributes of the system, agents, ISAs and memory pools, each read into the type its
//! header documents.

use core::ffi::{c_char, c_void};
use std::sync::Arc;

use hal::BackendError;
use hsa_sys::{
    Agent, AgentInfo, AmdAgentInfo, AmdMemoryPool, AmdMemoryPoolInfo, DeviceType, Hsa, HsaStatus, Isa, IsaInfo,
    RedlineInjection, SystemInfo,
};

use crate::discover::{AGENTS_MAX, ISA_NAME_BYTES_MAX, ISAS_MAX, POOLS_MAX, check, check_iteration};
use crate::identity::{AGENT_NAME_BYTES, AGENT_UUID_BYTES, BUILD_VERSION_BYTES_MAX};

/// The reference one successful `hsa_init` took, shared by everything made under it.
#[derive(Debug)]
struct Init {
    hsa: Arc<Hsa>,
}

impl Drop for Init {
    fn drop(&mut self) {
        // SAFETY: drops the reference `Runtime::init` took with a successful `hsa_init`, once (this
        // value is dropped once). Every runtime object of this module holds a clone of the
        // `Runtime` it was made under, so when the last clone goes none is left; the call does not
        // wait on the GPU.
        let _ = unsafe { (self.hsa.fns().hsa_shut_down)() };
    }
}

/// An initialised runtime: `hsa_init` succeeded and its reference is held until the last clone
/// is dropped. Every call of this module goes through one, so none is made before `hsa_init`.
#[derive(Clone, Debug)]
pub(crate) struct Runtime(Arc<Init>);

/// An agent attribute the header documents as a `uint32_t` (or a 4-byte C enum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AgentU32 {
    /// `HSA_AGENT_INFO_DEVICE` (`hsa_device_type_t`).
    Device,
    /// `HSA_AGENT_INFO_QUEUE_MIN_SIZE`.
    QueueMinSize,
    /// `HSA_AGENT_INFO_QUEUE_MAX_SIZE`.
    QueueMaxSize,
    /// `HSA_AMD_AGENT_INFO_CHIP_ID`.
    ChipId,
    /// `HSA_AMD_AGENT_INFO_DOMAIN`.
    Domain,
    /// `HSA_AMD_AGENT_INFO_BDFID`.
    Bdfid,
}

impl AgentU32 {
    fn attribute(self) -> AgentInfo {
        match self {
            AgentU32::Device => AgentInfo::DEVICE,
            AgentU32::QueueMinSize => AgentInfo::QUEUE_MIN_SIZE,
            AgentU32::QueueMaxSize => AgentInfo::QUEUE_MAX_SIZE,
            AgentU32::ChipId => AgentInfo(AmdAgentInfo::CHIP_ID.0),
            AgentU32::Domain => AgentInfo(AmdAgentInfo::DOMAIN.0),
            AgentU32::Bdfid => AgentInfo(AmdAgentInfo::BDFID.0),
        }
    }
}

/// An agent attribute the header documents as a character array of fixed size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AgentText {
    /// `HSA_AGENT_INFO_NAME`: 64 characters.
    Name,
    /// `HSA_AGENT_INFO_VENDOR_NAME`: 64 characters.
    VendorName,
    /// `HSA_AMD_AGENT_INFO_PRODUCT_NAME`: 64 characters.
    ProductName,
    /// `HSA_AMD_AGENT_INFO_UUID`: at most 21 characters including the NUL.
    Uuid,
}

impl AgentText {
    /// The attribute and the bytes the runtime writes for it.
    fn attribute(self) -> (AgentInfo, usize) {
        match self {
            AgentText::Name => (AgentInfo::NAME, AGENT_NAME_BYTES),
            AgentText::VendorName => (AgentInfo::VENDOR_NAME, AGENT_NAME_BYTES),
            AgentText::ProductName => (AgentInfo(AmdAgentInfo::PRODUCT_NAME.0), AGENT_NAME_BYTES),
            AgentText::Uuid => (AgentInfo(AmdAgentInfo::UUID.0), AGENT_UUID_BYTES),
        }
    }
}

/// A memory pool of a CPU agent: system memory, which a pool allocation maps into the process, so
/// the host may read and write it directly ([`super::HostBlock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SystemPool {
    // INVARIANT: a pool `hsa_amd_agent_iterate_memory_pools` reported for an agent whose
    // `HSA_AGENT_INFO_DEVICE` is `HSA_DEVICE_TYPE_CPU`.
    pool: AmdMemoryPool,
}

impl SystemPool {
    /// The pool handle.
    pub(crate) fn pool(self) -> AmdMemoryPool {
        self.pool
    }
}

/// Pushes one handle into the bounded `Vec<T>` behind `data`.
///
/// # Safety
/// `data` must point at a live, exclusively borrowed `Vec<T>` whose capacity is the bound.
unsafe fn push_bounded<T>(item: T, data: *mut c_void) -> HsaStatus {
    // SAFETY: the caller passes the `&mut Vec<T>` it handed to the iteration as `data`, and the
    // runtime calls back synchronously on the iterating thread while that borrow is live.
    let out = unsafe { &mut *data.cast::<Vec<T>>() };
    if out.len() == out.capacity() {
        return HsaStatus::INFO_BREAK;
    }
    out.push(item);
    HsaStatus::SUCCESS
}

/// # Safety
/// `data` must be as [`push_bounded`] requires, for `Vec<Agent>`.
unsafe extern "C" fn collect_agent(agent: Agent, data: *mut c_void) -> HsaStatus {
    // SAFETY: `Runtime::agents` hands a `&mut Vec<Agent>` with capacity AGENTS_MAX as `data`.
    unsafe { push_bounded(agent, data) }
}

/// # Safety
/// `data` must be as [`push_bounded`] requires, for `Vec<Isa>`.
unsafe extern "C" fn collect_isa(isa: Isa, data: *mut c_void) -> HsaStatus {
    // SAFETY: `Runtime::isas` hands a `&mut Vec<Isa>` with capacity ISAS_MAX as `data`.
    unsafe { push_bounded(isa, data) }
}

/// # Safety
/// `data` must be as [`push_bounded`] requires, for `Vec<AmdMemoryPool>`.
unsafe extern "C" fn collect_pool(pool: AmdMemoryPool, data: *mut c_void) -> HsaStatus {
    // SAFETY: `Runtime::pools` hands a `&mut Vec<AmdMemoryPool>` with capacity POOLS_MAX as `data`.
    unsafe { push_bounded(pool, data) }
}

impl Runtime {
    /// `hsa_init`; the reference it takes is dropped with the last clone of the result.
    ///
    /// # Errors
    /// The status of a failed `hsa_init` (no reference was taken then).
    pub(crate) fn init(hsa: Arc<Hsa>) -> Result<Self, HsaStatus> {
        let status = hsa.init();
        if status.is_success() { Ok(Self(Arc::new(Init { hsa }))) } else { Err(status) }
    }

    /// The loaded runtime library.
    pub(crate) fn hsa(&self) -> &Arc<Hsa> {
        &self.0.hsa
    }

    /// Every agent, in the runtime's order (at most [`AGENTS_MAX`]).
    pub(crate) fn agents(&self) -> Result<Vec<Agent>, BackendError> {
        let mut agents: Vec<Agent> = Vec::with_capacity(AGENTS_MAX);
        // SAFETY: the callback only pushes into `agents` (capacity AGENTS_MAX, as it requires),
        // which outlives the synchronous iteration.
        let status = unsafe { (self.hsa().fns().hsa_iterate_agents)(Some(collect_agent), (&raw mut agents).cast()) };
        check_iteration("hsa_iterate_agents", status)?;
        Ok(agents)
    }

    /// A `uint32_t` attribute of `agent`.
    pub(crate) fn agent_u32(&self, agent: Agent, which: AgentU32) -> Result<u32, BackendError> {
        let mut value = 0u32;
        // SAFETY: every `AgentU32` names an attribute the header documents as 4 bytes (a
        // `uint32_t` or a C enum), which the runtime writes into `value`.
        let status =
            unsafe { (self.hsa().fns().hsa_agent_get_info)(agent, which.attribute(), (&raw mut value).cast()) };
        check("hsa_agent_get_info", status)?;
        Ok(value)
    }

    /// A character attribute of `agent`, up to its first NUL, trimmed.
    pub(crate) fn agent_text(&self, agent: Agent, which: AgentText) -> Result<String, BackendError> {
        let (attribute, len) = which.attribute();
        let mut bytes = [0u8; AGENT_NAME_BYTES];
        // SAFETY: the attribute is a character array of `len` bytes (the header sentence the
        // `AgentText` variant names), at most AGENT_NAME_BYTES, which `bytes` holds.
        let status = unsafe { (self.hsa().fns().hsa_agent_get_info)(agent, attribute, bytes.as_mut_ptr().cast()) };
        check("hsa_agent_get_info", status)?;
        let bytes = &bytes[..len];
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(len);
        Ok(String::from_utf8_lossy(&bytes[..end]).trim().to_owned())
    }

    /// The ISAs of `agent`, in the runtime's order (at most [`ISAS_MAX`]).
    pub(crate) fn isas(&self, agent: Agent) -> Result<Vec<Isa>, BackendError> {
        let mut isas: Vec<Isa> = Vec::with_capacity(ISAS_MAX);
        // SAFETY: the callback only pushes into `isas` (capacity ISAS_MAX, as it requires), which
        // outlives the synchronous iteration.
        let status =
            unsafe { (self.hsa().fns().hsa_agent_iterate_isas)(agent, Some(collect_isa), (&raw mut isas).cast()) };
        check_iteration("hsa_agent_iterate_isas", status)?;
        Ok(isas)
    }

    /// `HSA_ISA_INFO_NAME_LENGTH` of `isa`.
    fn isa_name_length(&self, isa: Isa) -> Result<u32, BackendError> {
        let mut len = 0u32;
        // SAFETY: NAME_LENGTH is a uint32_t (hsa.h), written into `len`.
        let status =
            unsafe { (self.hsa().fns().hsa_isa_get_info_alt)(isa, IsaInfo::NAME_LENGTH, (&raw mut len).cast()) };
        check("hsa_isa_get_info_alt", status)?;
        Ok(len)
    }

    /// The name of `isa` (`amdgcn-amd-amdhsa--gfx1100`), at most [`ISA_NAME_BYTES_MAX`] bytes.
    pub(crate) fn isa_name(&self, isa: Isa) -> Result<String, BackendError> {
        let len = self.isa_name_length(isa)?;
        if len > ISA_NAME_BYTES_MAX {
            return Err(BackendError::Limit {
                what: "ISA name bytes",
                requested: u64::from(len),
                limit: u64::from(ISA_NAME_BYTES_MAX),
            });
        }
        // One spare byte: ROCr writes a NUL after the name.
        let mut name = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX) + 1];
        // SAFETY: `HSA_ISA_INFO_NAME` writes `NAME_LENGTH` bytes (plus at most a NUL), which `name`
        // holds.
        let status = unsafe { (self.hsa().fns().hsa_isa_get_info_alt)(isa, IsaInfo::NAME, name.as_mut_ptr().cast()) };
        check("hsa_isa_get_info_alt", status)?;
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        name.truncate(end);
        Ok(String::from_utf8_lossy(&name).into_owned())
    }

    /// The memory pools of `agent`, in the runtime's order (at most [`POOLS_MAX`]).
    pub(crate) fn pools(&self, agent: Agent) -> Result<Vec<AmdMemoryPool>, BackendError> {
        let mut pools: Vec<AmdMemoryPool> = Vec::with_capacity(POOLS_MAX);
        // SAFETY: the callback only pushes into `pools` (capacity POOLS_MAX, as it requires), which
        // outlives the synchronous iteration.
        let status = unsafe {
            (self.hsa().fns().hsa_amd_agent_iterate_memory_pools)(agent, Some(collect_pool), (&raw mut pools).cast())
        };
        check_iteration("hsa_amd_agent_iterate_memory_pools", status)?;
        Ok(pools)
    }

    /// The pools of `agent` when it is a CPU agent (system memory, [`SystemPool`]); none for any
    /// other agent.
    pub(crate) fn system_pools(&self, agent: Agent) -> Result<Vec<SystemPool>, BackendError> {
        if DeviceType(self.agent_u32(agent, AgentU32::Device)?) != DeviceType::CPU {
            return Ok(Vec::new());
        }
        Ok(self.pools(agent)?.into_iter().map(|pool| SystemPool { pool }).collect())
    }

    /// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT` (`hsa_amd_segment_t`) of `pool`.
    pub(crate) fn pool_segment(&self, pool: AmdMemoryPool) -> Result<u32, BackendError> {
        let mut value = 0u32;
        // SAFETY: SEGMENT is a `hsa_amd_segment_t`, a 4-byte C enum (hsa_ext_amd.h; hsa-sys'
        // layout table), written into `value`.
        let status = unsafe {
            (self.hsa().fns().hsa_amd_memory_pool_get_info)(pool, AmdMemoryPoolInfo::SEGMENT, (&raw mut value).cast())
        };
        check("hsa_amd_memory_pool_get_info", status)?;
        Ok(value)
    }

    /// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS` (a `uint32_t` of flag bits) of `pool`.
    pub(crate) fn pool_global_flags(&self, pool: AmdMemoryPool) -> Result<u32, BackendError> {
        let mut value = 0u32;
        // SAFETY: GLOBAL_FLAGS is a uint32_t (hsa_ext_amd.h), written into `value`.
        let status = unsafe {
            (self.hsa().fns().hsa_amd_memory_pool_get_info)(
                pool,
                AmdMemoryPoolInfo::GLOBAL_FLAGS,
                (&raw mut value).cast(),
            )
        };
        check("hsa_amd_memory_pool_get_info", status)?;
        Ok(value)
    }

    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED` (a C `bool`) of `pool`.
    pub(crate) fn pool_alloc_allowed(&self, pool: AmdMemoryPool) -> Result<bool, BackendError> {
        // A byte, not a Rust `bool`: any value the runtime writes is a valid `u8`.
        let mut value = 0u8;
        // SAFETY: RUNTIME_ALLOC_ALLOWED is a `bool` (hsa_ext_amd.h), one byte, written into `value`.
        let status = unsafe {
            (self.hsa().fns().hsa_amd_memory_pool_get_info)(
                pool,
                AmdMemoryPoolInfo::RUNTIME_ALLOC_ALLOWED,
                (&raw mut value).cast(),
            )
        };
        check("hsa_amd_memory_pool_get_info", status)?;
        Ok(value != 0)
    }

    /// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`.
    pub(crate) fn timestamp_frequency(&self) -> Result<u64, BackendError> {
        let mut hz = 0u64;
        // SAFETY: TIMESTAMP_FREQUENCY is a uint64_t (hsa.h), written into `hz`.
        let status =
            unsafe { (self.hsa().fns().hsa_system_get_info)(SystemInfo::TIMESTAMP_FREQUENCY, (&raw mut hz).cast()) };
        check("hsa_system_get_info", status)?;
        Ok(hz)
    }

    /// `HSA_SYSTEM_INFO_VERSION_MAJOR` (`minor` false) or `_MINOR` (`minor` true).
    pub(crate) fn spec_version_part(&self, minor: bool) -> Result<u16, BackendError> {
        let attribute = if minor { SystemInfo::VERSION_MINOR } else { SystemInfo::VERSION_MAJOR };
        let mut value = 0u16;
        // SAFETY: VERSION_MAJOR and VERSION_MINOR are uint16_t (hsa.h), written into `value`.
        let status = unsafe { (self.hsa().fns().hsa_system_get_info)(attribute, (&raw mut value).cast::<c_void>()) };
        check("hsa_system_get_info", status)?;
        Ok(value)
    }

    /// `HSA_AMD_SYSTEM_INFO_BUILD_VERSION`, at most [`BUILD_VERSION_BYTES_MAX`] bytes of it.
    pub(crate) fn build_version(&self) -> Result<String, BackendError> {
        let text = self.build_version_ptr()?;
        if text.is_null() {
            return Ok(String::new());
        }
        let mut bytes = Vec::new();
        while bytes.len() < BUILD_VERSION_BYTES_MAX {
            // SAFETY: the runtime returned a NUL-terminated string that lives as long as the
            // runtime (ROCr: a string literal; soft-hsa: a `static` CStr), and `self` holds the
            // runtime; reading stops at its NUL, so every byte read is inside it.
            let byte = unsafe { text.add(bytes.len()).cast::<u8>().read() };
            if byte == 0 {
                break;
            }
            bytes.push(byte);
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The `const char*` of `HSA_AMD_SYSTEM_INFO_BUILD_VERSION`.
    fn build_version_ptr(&self) -> Result<*const c_char, BackendError> {
        let mut text: *const c_char = core::ptr::null();
        // SAFETY: HSA_AMD_SYSTEM_INFO_BUILD_VERSION is a `const char*` (hsa_ext_amd.h), written into
        // `text`.
        let status = unsafe {
            (self.hsa().fns().hsa_system_get_info)(SystemInfo::AMD_BUILD_VERSION, (&raw mut text).cast::<c_void>())
        };
        check("hsa_system_get_info", status)?;
        Ok(text)
    }

    /// Arms a fault through the soft HSA runtime's extension `redline_soft_hsa_inject`; `None`
    /// when the runtime does not export it (a real ROCr).
    pub(crate) fn inject(&self, kind: RedlineInjection, object: u64) -> Option<HsaStatus> {
        let inject = self.hsa().extensions().redline_soft_hsa_inject?;
        // SAFETY: the soft HSA runtime's extension, resolved with its prototype (two integers, no
        // pointers); it only compares `object` with its tables.
        Some(unsafe { inject(kind.0, object) })
    }

    /// Starts the soft HSA runtime's in-memory kernel trace; `false` when the runtime does not
    /// export `redline_soft_hsa_kernel_trace` (every real ROCr).
    pub(crate) fn begin_kernel_trace(&self) -> bool {
        let Some(trace) = self.hsa().extensions().redline_soft_hsa_kernel_trace else { return false };
        // SAFETY: the soft HSA runtime's extension, resolved with its prototype; BEGIN reads no
        // buffer, so a null one with capacity 0 is valid.
        unsafe { trace(hsa_sys::RedlineTraceOperation::BEGIN.0, std::ptr::null_mut(), 0) };
        true
    }

    /// The soft HSA runtime's kept kernel trace as CSV text, which it stops keeping; `None`
    /// when the runtime has no such extension or keeps no trace.
    pub(crate) fn take_kernel_trace(&self) -> Option<Vec<u8>> {
        let trace = self.hsa().extensions().redline_soft_hsa_kernel_trace?;
        let take = hsa_sys::RedlineTraceOperation::TAKE.0;
        // SAFETY: as above; capacity 0 writes nothing.
        let mut needed = unsafe { trace(take, std::ptr::null_mut(), 0) };
        // The runtime's packet processors are idle (the caller waited for every launch), so the
        // text does not grow between the calls; a second try covers a caller that did not.
        for _ in 0..2 {
            if needed == usize::MAX {
                return None;
            }
            let mut buffer = vec![0u8; needed];
            // SAFETY: `buffer` holds `needed` bytes, the capacity passed.
            let written = unsafe { trace(take, buffer.as_mut_ptr(), buffer.len()) };
            if written <= buffer.len() {
                buffer.truncate(written);
                return Some(buffer);
            }
            needed = written;
        }
        None
    }
}
