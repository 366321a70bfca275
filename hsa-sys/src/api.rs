//! The HSA function table and the loaded runtime.

use core::ffi::{CStr, c_char, c_void};
use std::path::PathBuf;

use dynload::{LoadError, fn_table};

use crate::ext::HsaExtFns;
use crate::{
    Agent, AgentInfo, AmdMemoryPool, AmdMemoryPoolInfo, CodeObjectReader, DefaultFloatRoundingMode, Executable,
    ExecutableSymbol, ExecutableSymbolInfo, HsaStatus, Isa, IsaInfo, LoadedCodeObject, Profile, Queue, Signal,
    SignalCondition, SignalValue, SystemInfo, WaitState,
};

/// Environment variable naming the one library to load instead of the default candidates.
pub const LIBRARY_ENV: &str = "REDLINE_HSA_LIBRARY";

/// The library names tried, in order, when [`LIBRARY_ENV`] is not set: the versioned soname the
/// runtime package installs, the development symlink, then the ROCm install prefix.
pub const DEFAULT_CANDIDATES: &[&str] = &[
    "libhsa-runtime64.so.1",
    "libhsa-runtime64.so",
    "/opt/rocm/lib/libhsa-runtime64.so.1",
    "/opt/rocm/lib/libhsa-runtime64.so",
];

/// Callback of `hsa_iterate_agents`.
pub type AgentCallback = unsafe extern "C" fn(agent: Agent, data: *mut c_void) -> HsaStatus;
/// Callback of `hsa_agent_iterate_isas`.
pub type IsaCallback = unsafe extern "C" fn(isa: Isa, data: *mut c_void) -> HsaStatus;
/// Callback of `hsa_amd_agent_iterate_memory_pools`.
pub type MemoryPoolCallback = unsafe extern "C" fn(memory_pool: AmdMemoryPool, data: *mut c_void) -> HsaStatus;
/// Error callback of `hsa_queue_create`.
pub type QueueErrorCallback = unsafe extern "C" fn(status: HsaStatus, source: *mut Queue, data: *mut c_void);

fn_table! {
    /// Entry points of `libhsa-runtime64`, with the prototypes of `hsa.h` and `hsa_ext_amd.h`.
    ///
    /// The pointers are valid only while the [`Hsa`] that owns this table is alive; every call
    /// must meet the preconditions the header documents for that function.
    pub struct HsaFns {
        /// Initialises the runtime (reference counted).
        hsa_init = "hsa_init": unsafe extern "C" fn() -> HsaStatus;
        /// Drops one reference to the runtime; the last one shuts it down.
        hsa_shut_down = "hsa_shut_down": unsafe extern "C" fn() -> HsaStatus;
        /// Points `status_string` at the runtime's text for `status`.
        hsa_status_string = "hsa_status_string":
            unsafe extern "C" fn(status: HsaStatus, status_string: *mut *const c_char) -> HsaStatus;
        /// Reads a system attribute into `value`.
        hsa_system_get_info = "hsa_system_get_info":
            unsafe extern "C" fn(attribute: SystemInfo, value: *mut c_void) -> HsaStatus;
        /// Calls `callback` for every agent.
        hsa_iterate_agents = "hsa_iterate_agents":
            unsafe extern "C" fn(callback: Option<AgentCallback>, data: *mut c_void) -> HsaStatus;
        /// Reads an agent attribute into `value`.
        hsa_agent_get_info = "hsa_agent_get_info":
            unsafe extern "C" fn(agent: Agent, attribute: AgentInfo, value: *mut c_void) -> HsaStatus;
        /// Calls `callback` for every ISA of an agent.
        hsa_agent_iterate_isas = "hsa_agent_iterate_isas":
            unsafe extern "C" fn(agent: Agent, callback: Option<IsaCallback>, data: *mut c_void) -> HsaStatus;
        /// Reads an ISA attribute into `value`.
        hsa_isa_get_info_alt = "hsa_isa_get_info_alt":
            unsafe extern "C" fn(isa: Isa, attribute: IsaInfo, value: *mut c_void) -> HsaStatus;
        /// Calls `callback` for every memory pool of an agent.
        hsa_amd_agent_iterate_memory_pools = "hsa_amd_agent_iterate_memory_pools":
            unsafe extern "C" fn(agent: Agent, callback: Option<MemoryPoolCallback>, data: *mut c_void) -> HsaStatus;
        /// Reads a memory pool attribute into `value`.
        hsa_amd_memory_pool_get_info = "hsa_amd_memory_pool_get_info":
            unsafe extern "C" fn(memory_pool: AmdMemoryPool, attribute: AmdMemoryPoolInfo, value: *mut c_void)
                -> HsaStatus;
        /// Allocates `size` bytes from a memory pool; `flags` must be 0.
        hsa_amd_memory_pool_allocate = "hsa_amd_memory_pool_allocate":
            unsafe extern "C" fn(memory_pool: AmdMemoryPool, size: usize, flags: u32, ptr: *mut *mut c_void)
                -> HsaStatus;
        /// Frees a memory pool allocation.
        hsa_amd_memory_pool_free = "hsa_amd_memory_pool_free": unsafe extern "C" fn(ptr: *mut c_void) -> HsaStatus;
        /// Grants `agents` access to the allocation at `ptr`; `flags` must be null.
        hsa_amd_agents_allow_access = "hsa_amd_agents_allow_access":
            unsafe extern "C" fn(num_agents: u32, agents: *const Agent, flags: *const u32, ptr: *const c_void)
                -> HsaStatus;
        /// Copies `size` bytes between any two allocations the runtime knows.
        hsa_memory_copy = "hsa_memory_copy":
            unsafe extern "C" fn(dst: *mut c_void, src: *const c_void, size: usize) -> HsaStatus;
        /// Creates a code object reader over `size` bytes at `code_object`, which must outlive it.
        hsa_code_object_reader_create_from_memory = "hsa_code_object_reader_create_from_memory":
            unsafe extern "C" fn(code_object: *const c_void, size: usize, code_object_reader: *mut CodeObjectReader)
                -> HsaStatus;
        /// Destroys a code object reader.
        hsa_code_object_reader_destroy = "hsa_code_object_reader_destroy":
            unsafe extern "C" fn(code_object_reader: CodeObjectReader) -> HsaStatus;
        /// Creates an empty executable; `options` may be null.
        hsa_executable_create_alt = "hsa_executable_create_alt":
            unsafe extern "C" fn(
                profile: Profile,
                default_float_rounding_mode: DefaultFloatRoundingMode,
                options: *const c_char,
                executable: *mut Executable,
            ) -> HsaStatus;
        /// Loads a code object for an agent into an executable; `loaded_code_object` may be null.
        hsa_executable_load_agent_code_object = "hsa_executable_load_agent_code_object":
            unsafe extern "C" fn(
                executable: Executable,
                agent: Agent,
                code_object_reader: CodeObjectReader,
                options: *const c_char,
                loaded_code_object: *mut LoadedCodeObject,
            ) -> HsaStatus;
        /// Freezes an executable: no more loads, symbols become queryable.
        hsa_executable_freeze = "hsa_executable_freeze":
            unsafe extern "C" fn(executable: Executable, options: *const c_char) -> HsaStatus;
        /// Looks a symbol up by name (a kernel's is `name.kd`) for `agent`.
        hsa_executable_get_symbol_by_name = "hsa_executable_get_symbol_by_name":
            unsafe extern "C" fn(
                executable: Executable,
                symbol_name: *const c_char,
                agent: *const Agent,
                symbol: *mut ExecutableSymbol,
            ) -> HsaStatus;
        /// Reads a symbol attribute into `value`.
        hsa_executable_symbol_get_info = "hsa_executable_symbol_get_info":
            unsafe extern "C" fn(
                executable_symbol: ExecutableSymbol,
                attribute: ExecutableSymbolInfo,
                value: *mut c_void,
            ) -> HsaStatus;
        /// Destroys an executable.
        hsa_executable_destroy = "hsa_executable_destroy":
            unsafe extern "C" fn(executable: Executable) -> HsaStatus;
        /// Creates a user-mode queue of `size` packets; `type` is a [`QueueType`](crate::QueueType)
        /// value, `private_segment_size` and `group_segment_size` are `u32::MAX` for "unknown".
        hsa_queue_create = "hsa_queue_create":
            unsafe extern "C" fn(
                agent: Agent,
                size: u32,
                queue_type: u32,
                callback: Option<QueueErrorCallback>,
                data: *mut c_void,
                private_segment_size: u32,
                group_segment_size: u32,
                queue: *mut *mut Queue,
            ) -> HsaStatus;
        /// Destroys a queue.
        hsa_queue_destroy = "hsa_queue_destroy": unsafe extern "C" fn(queue: *mut Queue) -> HsaStatus;
        /// Stops a queue from processing further packets.
        hsa_queue_inactivate = "hsa_queue_inactivate": unsafe extern "C" fn(queue: *mut Queue) -> HsaStatus;
        /// Reads the write index, relaxed.
        hsa_queue_load_write_index_relaxed = "hsa_queue_load_write_index_relaxed":
            unsafe extern "C" fn(queue: *const Queue) -> u64;
        /// Adds to the write index with acquire-release ordering; returns the previous value.
        hsa_queue_add_write_index_scacq_screl = "hsa_queue_add_write_index_scacq_screl":
            unsafe extern "C" fn(queue: *const Queue, value: u64) -> u64;
        /// Reads the read index with acquire ordering.
        hsa_queue_load_read_index_scacquire = "hsa_queue_load_read_index_scacquire":
            unsafe extern "C" fn(queue: *const Queue) -> u64;
        /// Creates a signal; `consumers` may be null when `num_consumers` is 0.
        hsa_signal_create = "hsa_signal_create":
            unsafe extern "C" fn(
                initial_value: SignalValue,
                num_consumers: u32,
                consumers: *const Agent,
                signal: *mut Signal,
            ) -> HsaStatus;
        /// Destroys a signal.
        hsa_signal_destroy = "hsa_signal_destroy": unsafe extern "C" fn(signal: Signal) -> HsaStatus;
        /// Stores a signal value with release ordering.
        hsa_signal_store_screlease = "hsa_signal_store_screlease":
            unsafe extern "C" fn(signal: Signal, value: SignalValue);
        /// Stores a signal value, relaxed.
        hsa_signal_store_relaxed = "hsa_signal_store_relaxed": unsafe extern "C" fn(signal: Signal, value: SignalValue);
        /// Adds `value` to a signal value, relaxed.
        hsa_signal_add_relaxed = "hsa_signal_add_relaxed": unsafe extern "C" fn(signal: Signal, value: SignalValue);
        /// Subtracts `value` from a signal value, relaxed.
        hsa_signal_subtract_relaxed = "hsa_signal_subtract_relaxed":
            unsafe extern "C" fn(signal: Signal, value: SignalValue);
        /// Loads a signal value with acquire ordering.
        hsa_signal_load_scacquire = "hsa_signal_load_scacquire": unsafe extern "C" fn(signal: Signal) -> SignalValue;
        /// Waits until the signal meets `condition` against `compare_value` or `timeout_hint` (in
        /// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY` ticks) passes; returns the value observed last.
        hsa_signal_wait_scacquire = "hsa_signal_wait_scacquire":
            unsafe extern "C" fn(
                signal: Signal,
                condition: SignalCondition,
                compare_value: SignalValue,
                timeout_hint: u64,
                wait_state_hint: WaitState,
            ) -> SignalValue;
        /// Creates a signal with [`AmdSignalAttribute`](crate::AmdSignalAttribute) bits.
        hsa_amd_signal_create = "hsa_amd_signal_create":
            unsafe extern "C" fn(
                initial_value: SignalValue,
                num_consumers: u32,
                consumers: *const Agent,
                attributes: u64,
                signal: *mut Signal,
            ) -> HsaStatus;
    }
}

/// A loaded HSA runtime: the library, kept open for as long as this value lives, its function
/// table and the optional extension symbols it exports ([`HsaExtFns`]).
#[derive(Debug)]
pub struct Hsa {
    ext: HsaExtFns,
    // INVARIANT: declared after `ext`, so it is dropped after it: the optional pointers stay valid
    // for the life of `self`. A second handle of the library `runtime` opened (same object).
    _ext_library: Option<dynload::Library>,
    runtime: dynload::Runtime<HsaFns>,
}

dynload::runtime_loader!(Hsa, HsaFns, "hsa_init");

impl Hsa {
    /// Loads the first of `candidates` that `dlopen` opens (a bare name goes through the dynamic
    /// loader's search path, a path is opened as is). A candidate that opens but lacks symbols is
    /// an error; later candidates are not tried.
    ///
    /// # Errors
    ///
    /// As [`Hsa::load`].
    pub fn load_from(candidates: &[PathBuf]) -> Result<Self, LoadError> {
        // SAFETY: the candidates name the HSA runtime (or a library the caller chose in its
        // place); the prototypes of `HsaFns` are transcribed from the ROCm 5.2.3 headers, which
        // are ABI-stable across the 1.x sonames.
        let runtime = unsafe { dynload::Runtime::<HsaFns>::load_from(candidates) }?;
        let (ext, ext_library) = match dynload::open_first(&[runtime.opened_as().to_path_buf()]) {
            Ok((library, _)) => {
                // SAFETY: the library is the runtime just loaded (opened again by the name that
                // opened it); a runtime that exports the extension symbol is the soft HSA
                // runtime, which defines it with the prototype of `RedlineInjectFn`.
                let ext = unsafe { HsaExtFns::resolve(&library) };
                (ext, Some(library))
            }
            // The runtime is loaded; a second handle that fails only loses the extensions.
            Err(_) => (HsaExtFns::default(), None),
        };
        Ok(Self { ext, _ext_library: ext_library, runtime })
    }

    /// The optional extension symbols the runtime exports (none for a real ROCr). Their pointers
    /// are valid only while `self` is alive.
    #[must_use]
    pub fn extensions(&self) -> &HsaExtFns {
        &self.ext
    }

    /// `hsa_init`: takes one reference to the runtime. On a machine without a usable `/dev/kfd`
    /// it fails (ROCm 5.2.3 returns `HSA_STATUS_ERROR_OUT_OF_RESOURCES`).
    #[must_use]
    pub fn init(&self) -> HsaStatus {
        // SAFETY: `hsa_init` takes no arguments and is callable at any time from any thread; the
        // pointer is valid while `self` lives.
        unsafe { (self.fns().hsa_init)() }
    }

    /// `hsa_status_string`: the runtime's own text for `status`.
    ///
    /// # Errors
    ///
    /// The status the runtime returns when it has no text (for example
    /// `HSA_STATUS_ERROR_INVALID_ARGUMENT` for an unknown code).
    pub fn status_string(&self, status: HsaStatus) -> Result<&CStr, HsaStatus> {
        let mut text: *const c_char = core::ptr::null();
        // SAFETY: `text` is a valid out-pointer for the duration of the call; the pointer in the
        // table is valid while `self` lives.
        let result = unsafe { (self.fns().hsa_status_string)(status, &mut text) };
        if result != HsaStatus::SUCCESS {
            return Err(result);
        }
        if text.is_null() {
            return Err(HsaStatus::ERROR);
        }
        // SAFETY: on success the runtime points `text` at a NUL-terminated string with static
        // storage inside the library, which stays loaded as long as `self` (the returned borrow
        // is tied to `self`).
        Ok(unsafe { CStr::from_ptr(text) })
    }
}
