//! A software implementation of the ROCr/HSA runtime (`libhsa-runtime64`) over Redline's soft
//! device. Built as `libsoft_hsa.so`, it exports the C ABI that `hsa-sys` binds — every entry
//! point of [`hsa_sys::HsaFns`], with the names, prototypes and struct layouts of the ROCm 5.2.3
//! headers — so that an HSA program, Redline's HSA backend among them, runs unchanged on a
//! machine without a GPU.
//!
//! # Using it
//! Any HSA program can use it, in CI or on a laptop: point the dynamic loader at it in place of
//! ROCr (a directory on `LD_LIBRARY_PATH` with `libhsa-runtime64.so.1` linked to
//! `libsoft_hsa.so`), or, for Redline, set `REDLINE_HSA_LIBRARY` to the file ([`hsa_sys::LIBRARY_ENV`])
//! or load it with `hsa_sys::Hsa::load_from`. Rust tests find the file cargo built with
//! [`built_library`] (a crate that lists `soft-hsa` as a dependency makes cargo build it).
//!
//! - [`ISA_ENV`] (`REDLINE_SOFT_HSA_ISA`) chooses the GPU's target at the `hsa_init` that starts
//!   the runtime: any target of the target table (`pm4_encoding::family::TARGETS`; `gfx1100` is
//!   the default). A
//!   comma-separated list (`gfx1030,gfx1100,gfx1201`) presents one GPU agent per entry, as a
//!   machine with several GPUs does (up to [`GPUS_MAX`]). Anything else fails `hsa_init` with
//!   `HSA_STATUS_ERROR_INVALID_ISA_NAME`.
//! - [`LOG_ENV`] (`REDLINE_SOFT_HSA_LOG=1`) prints each queue fault, which the error callback's
//!   status alone does not describe.
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
//! - Redline's extension, [`abi::ext::redline_soft_hsa_inject`]: injected faults for the HSA
//!   backend's `hal::FaultInjection`.
//!
//! # Limits
//! - It runs only the kernels the `kernel-refs` registry knows, through their CPU references; a
//!   dispatch of any other kernel faults its queue. Scratch memory, interrupts, IPC signals,
//!   variables in code objects and agent dispatch are not modelled (an error status).
//! - There is no performance model: packets run one at a time per queue, and one packet of any
//!   queue at a time on the device, at CPU speed.
//! - One process-wide runtime, its GPU agents sharing one soft device (one address space, one
//!   kernel table): a kernel object is not checked to be dispatched on the agent it was loaded
//!   for. An entry point outside `hsa-sys`'s table is not exported at all.
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
