//! The ROCr/HSA runtime (`libhsa-runtime64`), loaded at run time: a checked function table and
//! the types and constants of the public headers.
//!
//! Built to the public ABI of the ROCm 5.2.3 headers (`hsa.h`, `hsa_ext_amd.h`,
//! `amd_hsa_queue.h`); nothing is linked at build time and there is no build script.
//!
//! # Loading
//!
//! [`Hsa::load`] opens the library with `dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)` (the
//! runtime is never unmapped: its threads and exit handlers outlive any handle) and resolves
//! every symbol of [`HsaFns`] at once. A missing symbol is a [`LoadError::MissingSymbols`] listing
//! all of them, never a panic or a null pointer on a first call. The library is searched for as:
//!
//! 1. the path in the environment variable `REDLINE_HSA_LIBRARY` ([`LIBRARY_ENV`]) when it is set
//!    and not empty, and then nothing else;
//! 2. otherwise [`DEFAULT_CANDIDATES`] in order: `libhsa-runtime64.so.1`, `libhsa-runtime64.so`
//!    (both through the dynamic loader's search path), `/opt/rocm/lib/libhsa-runtime64.so.1`,
//!    `/opt/rocm/lib/libhsa-runtime64.so`.
//!
//! The first candidate that opens is used. When none opens, [`LoadError::NotFound`] lists every
//! candidate with its `dlopen` error. [`Hsa::load_with_env`] and [`Hsa::load_from`] take the
//! override or the candidates as arguments, for callers that must not read the environment.
//! [`Hsa::library_path`] reports the file that was mapped. The runtime version needs an
//! initialised runtime (`hsa_system_get_info` with [`SystemInfo::VERSION_MAJOR`]), so it is not
//! queried at load. Optional extension symbols (the soft HSA runtime's fault injection,
//! [`HsaExtFns`]) are looked up too; their absence is not an error.
//!
//! # Types
//!
//! - [`HsaStatus`] and the other enums ([`AgentInfo`], [`QueueType`], [`AmdMemoryPoolInfo`], ...)
//!   are transparent newtypes with one associated constant per enumerator of the header, a
//!   `name()` giving the C name and a `description()` giving the header's doc sentence. A value
//!   the crate does not know stays representable.
//!   The bit sets among them ([`AgentFeature`], [`QueueFeature`], [`AmdMemoryPoolGlobalFlag`],
//!   [`AmdSignalAttribute`]) are also `bitflags` flag types ([`bitflags::Flags`], over the same
//!   header-checked constants): `contains`, `iter_names`, `from_bits` on the runtime's raw word.
//! - Handles ([`Agent`], [`Signal`], [`Executable`], ...) and the structs [`Queue`]
//!   (`hsa_queue_t`) and [`AmdQueue`] (`amd_queue_t`) are `#[repr(C)]` with compile-time asserts
//!   of size, alignment and every field offset (x86-64).
//!
//! `tests/c_layout.rs` compiles a C program against the installed headers that prints every
//! size, offset and constant of `layout::layout_table` and compares them with the Rust values.
//!
//! # Safety
//!
//! The entry points are `unsafe extern "C"` function pointers: each call must meet the
//! preconditions the header documents. [`Hsa::init`] and [`Hsa::status_string`] are safe
//! wrappers where no precondition is left to the caller.

mod api;
mod consts;
mod ext;
mod flags;
#[doc(hidden)]
pub mod layout;
mod status;
mod types;

pub use api::{
    AgentCallback, DEFAULT_CANDIDATES, Hsa, HsaFns, IsaCallback, LIBRARY_ENV, MemoryPoolCallback, QueueErrorCallback,
};
pub use bitflags::Flags;
pub use consts::*;
pub use dynload::{LoadError, OpenAttempt};
pub use ext::{
    HsaExtFns, REDLINE_SOFT_HSA_INJECT, REDLINE_SOFT_HSA_KERNEL_TRACE, RedlineInjectFn, RedlineInjection,
    RedlineKernelTraceFn, RedlineTraceOperation,
};
pub use types::*;
