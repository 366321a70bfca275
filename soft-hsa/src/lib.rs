//! A software implementation of part of the ROCr/HSA runtime (`libhsa-runtime64`) over
//! Redline's soft device. Built as `libsoft_hsa.so`, it exports the C ABI that `hsa-sys` binds —
//! the entry points of [`hsa_sys::HsaFns`] listed under "Entry points" below, with the names,
//! prototypes and struct layouts of the ROCm 5.2.3 headers — so that Redline's HSA backend, and an
//! HSA program that keeps to those entry points and to what "Departures from ROCr" leaves, runs
//! unchanged on a machine without a GPU. It is not a drop-in ROCr: see below.
//!
//! # Using it
//! Point the dynamic loader at it in place of ROCr (a directory on `LD_LIBRARY_PATH` with
//! `libhsa-runtime64.so.1` linked to `libsoft_hsa.so`), or, for Redline, set `REDLINE_HSA_LIBRARY`
//! to the file ([`hsa_sys::LIBRARY_ENV`]) or load it with `hsa_sys::Hsa::load_from`. Rust tests
//! find the file cargo built with [`built_library`] (a crate that lists `soft-hsa` as a dependency
//! makes cargo build it).
//!
//! - [`ISA_ENV`] (`REDLINE_SOFT_HSA_ISA`) chooses the GPU's target at the `hsa_init` that starts
//!   the runtime: any target of the target table (`pm4_encoding::family::TARGETS`; `gfx1100` is
//!   the default). A
//!   comma-separated list (`gfx1030,gfx1100,gfx1201`) presents one GPU agent per entry, as a
//!   machine with several GPUs does (up to [`GPUS_MAX`]). Anything else fails `hsa_init` with
//!   `HSA_STATUS_ERROR_INVALID_ISA_NAME`.
//! - [`LOG_ENV`] (`REDLINE_SOFT_HSA_LOG=1`) prints each queue fault, which the error callback's
//!   status alone does not describe.
//! - `REDLINE_KERNEL_TRACE` ([`soft_device::trace::KERNEL_TRACE_ENV`]) writes a kernel trace in
//!   rocprofv3's `kernel_trace.csv` format: to that file, or to `<pid>_kernel_trace.csv` in it when
//!   it is a directory. Each queue's packet processor writes one line per kernel-dispatch packet
//!   it ran, when it finished (`Agent N` is the agent's index in `hsa_iterate_agents` order,
//!   `Queue_Id` the queue's id); dispatches inside PM4 IBs are not traced. `docs/ARCHITECTURE.md`,
//!   "The census", says what every column holds.
//!
//! # What it presents
//! - A CPU agent and a GPU agent of each chosen target, with its ISA
//!   (`amdgcn-amd-amdhsa--gfxNNNN`), and the attributes `hsa_system_get_info`,
//!   `hsa_agent_get_info` and `hsa_isa_get_info_alt` document.
//! - Memory pools: each GPU's coarse-grained device-local pool, whose memory lies in the soft
//!   device's address space inside a range reserved with no access rights (reachable from the
//!   host only through `hsa_memory_copy`; a host dereference faults, as on a discrete GPU); the
//!   CPU's fine-grained system pool and kernarg pool, real host memory that the program uses
//!   directly and that kernels and packet processors use at the same addresses.
//! - User-mode AQL queues laid out as `amd_queue_t`, each with a packet-processor thread that
//!   polls its doorbell for a while after its last packet and then sleeps until a doorbell store
//!   wakes it. Kernel dispatches, barrier-AND/OR, the AMD barrier-value packet
//!   and the AMD PM4-IB packet run through the soft device's packet processor and PM4 command
//!   processor with all their checks (declared effects, hazards, descriptors, hidden arguments);
//!   a fault inactivates the queue and calls its error callback, as ROCr does. Ringing a doorbell
//!   returns at once.
//! - Signals shared by the program's threads and the processors, with waits that hold no lock; a
//!   store or add with no waiter asleep is an atomic and a fence, no system call.
//! - Code objects: readers, executables and kernel symbols, loaded by the soft device's loader.
//! - Redline's extension: [`abi::ext::redline_soft_hsa_inject`], injected faults for the HSA
//!   backend's `hal::FaultInjection`; [`abi::ext::redline_soft_hsa_kernel_trace`], the packet
//!   processors' kernel trace kept in memory for the census (`hal::Device::begin_kernel_trace`),
//!   as rocprofv3's `kernel_trace.csv` text.
//!
//! # Entry points
//! These 37 of ROCr's, every one of [`hsa_sys::HsaFns`], and Redline's extension; no other (a
//! program that needs another fails to resolve it when it loads the library, not at the call):
//! - runtime and system: `hsa_init`, `hsa_shut_down`, `hsa_status_string`,
//!   `hsa_system_get_info`, `hsa_iterate_agents`, `hsa_agent_get_info`,
//!   `hsa_agent_iterate_isas`, `hsa_isa_get_info_alt`;
//! - memory: `hsa_amd_agent_iterate_memory_pools`, `hsa_amd_memory_pool_get_info`,
//!   `hsa_amd_memory_pool_allocate`, `hsa_amd_memory_pool_free`, `hsa_amd_agents_allow_access`,
//!   `hsa_memory_copy`;
//! - code objects: `hsa_code_object_reader_create_from_memory`,
//!   `hsa_code_object_reader_destroy`, `hsa_executable_create_alt`,
//!   `hsa_executable_load_agent_code_object`, `hsa_executable_freeze`,
//!   `hsa_executable_get_symbol_by_name`, `hsa_executable_symbol_get_info`,
//!   `hsa_executable_destroy`;
//! - queues: `hsa_queue_create`, `hsa_queue_destroy`, `hsa_queue_inactivate`,
//!   `hsa_queue_load_read_index_scacquire`, `hsa_queue_load_write_index_relaxed`,
//!   `hsa_queue_add_write_index_scacq_screl`;
//! - signals: `hsa_signal_create`, `hsa_amd_signal_create`, `hsa_signal_destroy`,
//!   `hsa_signal_load_scacquire`, `hsa_signal_store_relaxed`, `hsa_signal_store_screlease`,
//!   `hsa_signal_add_relaxed`, `hsa_signal_subtract_relaxed`, `hsa_signal_wait_scacquire`;
//! - and Redline's own `redline_soft_hsa_inject` and `redline_soft_hsa_kernel_trace`
//!   ([`abi::ext`]).
//!
//! Each one answers only the attributes, flags and argument forms its documentation in [`abi`]
//! names; anything else is an error status, never a silent zero. (A unit test holds this list to
//! the table and the exports.)
//!
//! # Departures from ROCr
//! - **Kernels are CPU references.** A dispatch runs the `kernel-refs` reference registered for
//!   the code object's SHA-256 and the kernel's name; any other kernel faults its queue. No ISA is
//!   executed, scratch (the private segment) is not modelled (`hsa_queue_create`'s segment sizes
//!   are ignored), and variables and indirect functions of a code object are not symbols.
//! - **One address space for every GPU agent.** All GPU agents share one soft device: device
//!   memory of one GPU's pool is reachable by a dispatch on any GPU agent, and a kernel object is
//!   not checked to be dispatched on the agent it was loaded for. On ROCr a peer GPU reaches
//!   another's memory only after `hsa_amd_agents_allow_access`.
//! - **`hsa_amd_agents_allow_access` grants nothing.** It checks its arguments as ROCr does
//!   (agents of the runtime, a pointer inside a live pool allocation, null `flags`) and returns
//!   success, but records no grant and enforces none, because no access is ever refused here: the
//!   host pools (system and kernarg) answer `ACCESSIBLE_BY_ALL` true, and every GPU agent's
//!   dispatches reach the one shared address space. Enforcing it would take a per-agent view of
//!   memory that the soft device does not have (one dispatch does not know its agent, one
//!   allocation has no access list); a program that forgets the call for a peer GPU runs here
//!   and faults on ROCr.
//! - **Device memory is never host memory.** A device pool's allocations lie in a range reserved
//!   with no access rights: the host reaches them only through `hsa_memory_copy` (a dereference
//!   faults, as on a discrete GPU without a large BAR). Host pools hold at most [`HOST_BYTES_MAX`]
//!   bytes together.
//! - **Signal handles are table slots, not addresses.** A handle is a serial number and the index
//!   of its slot in a table of [`SIGNALS_MAX`] live signals, not the address of an
//!   `amd_signal_t`: a program that reads a signal's value through its handle, as ROCr's own
//!   packet processor does, breaks. IPC signals and `HSA_AMD_SIGNAL_AMD_GPU_ONLY` semantics are
//!   not modelled (every signal is shared by the host and every agent).
//! - **Queues are threads.** Each queue's packet processor is a thread of the runtime; packets of
//!   all queues run one at a time on the device, at CPU speed. There is no performance model,
//!   no agent dispatch packet and no interrupt: a waiter sleeps on the signal itself.
//! - **One runtime per process**, shared by every `hsa_init` (counted as ROCr counts them).
//!
//! # Unsafe code
//! All of it is in [`abi`]: the exported functions (which dereference the program's pointers and
//! call its callbacks) and the raw host memory the runtime hands out. Every other module is
//! `#![forbid(unsafe_code)]`.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod abi;
mod agents;
mod code;
mod pools;
mod queue;
mod runtime;
mod signals;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

pub use agents::{
    DEFAULT_TARGET, GPUS_MAX, ISA_ENV, ISA_PREFIX, QUEUE_SLOTS_MAX, QUEUE_SLOTS_MIN, QUEUES_MAX, TIMESTAMP_FREQUENCY_HZ,
};
pub use pools::HOST_BYTES_MAX;
pub use runtime::{LOG_ENV, VA_RESERVATION_BYTES};
pub use signals::SIGNALS_MAX;

/// File name of the runtime library cargo builds.
pub const LIBRARY_FILE_NAME: &str = "libsoft_hsa.so";

/// Locks `mutex`; a thread that panicked while holding it left consistent state (every critical
/// section of the runtime either completes or changes nothing), so poisoning is ignored.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why [`built_library`] found nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{LIBRARY_FILE_NAME} was not built next to {exe}; searched {}", searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
pub struct LibraryNotFound {
    /// The running executable.
    pub exe: PathBuf,
    /// The paths looked at.
    pub searched: Vec<PathBuf>,
}

/// The `libsoft_hsa.so` cargo built for the running executable's profile: a test binary lives in
/// `target/<profile>/deps/`, where cargo puts the cdylib of a (dev-)dependency, and
/// `cargo build -p soft-hsa` copies it one level up.
///
/// # Errors
/// [`LibraryNotFound`] with the paths searched.
pub fn built_library() -> Result<PathBuf, LibraryNotFound> {
    let exe = std::env::current_exe().unwrap_or_default();
    let searched = library_candidates(&exe);
    match searched.iter().find(|path| path.is_file()) {
        Some(found) => Ok(found.clone()),
        None => Err(LibraryNotFound { exe, searched }),
    }
}

/// Where [`built_library`] looks for an executable at `exe`: its directory, then the parent.
fn library_candidates(exe: &Path) -> Vec<PathBuf> {
    exe.ancestors().skip(1).take(2).map(|dir| dir.join(LIBRARY_FILE_NAME)).collect()
}

#[cfg(test)]
mod tests;
