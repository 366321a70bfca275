//! The HIP runtime (`libamdhip64`), loaded at run time: a checked function table and the types
//! and constants of the public headers.
//!
//! Built to the public ABI of the ROCm 5.2.3 headers (`hip_runtime_api.h`, `hip_version.h`, for
//! `__HIP_PLATFORM_AMD__`); nothing is linked at build time and there is no build script.
//!
//! # Loading
//!
//! [`Hip::load`] opens the library with `dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)` (the
//! runtime is never unmapped: its threads and exit handlers outlive any handle) and resolves
//! every symbol of [`HipFns`] at once. A missing symbol is a [`LoadError::MissingSymbols`] listing
//! all of them, never a panic or a null pointer on a first call. The library is searched for as:
//!
//! 1. the path in the environment variable `REDLINE_HIP_LIBRARY` ([`LIBRARY_ENV`]) when it is set
//!    and not empty, and then nothing else;
//! 2. otherwise [`DEFAULT_CANDIDATES`] in order: `libamdhip64.so.5`, `libamdhip64.so`,
//!    `libamdhip64.so.6` (through the dynamic loader's search path), then
//!    `/opt/rocm/lib/libamdhip64.so.5`, `/opt/rocm/lib/libamdhip64.so`,
//!    `/opt/rocm/lib/libamdhip64.so.6`.
//!
//! The first candidate that opens is used. When none opens, [`LoadError::NotFound`] lists every
//! candidate with its `dlopen` error. [`Hip::load_with_env`] and [`Hip::load_from`] take the
//! override or the candidates as arguments, for callers that must not read the environment.
//! [`Hip::library_path`] reports the file that was mapped; [`Hip::runtime_version`] and
//! [`Hip::driver_version`] report the versions (they answer without a GPU, but are not called at
//! load).
//!
//! # Types
//!
//! - [`HipError`] and [`DeviceAttribute`] are transparent newtypes with one associated constant
//!   per enumerator of the header (aliases included), a `name()` giving the C name and a
//!   `description()` giving the header's comment where it has one. A value the crate does not
//!   know stays representable.
//! - [`DeviceProp`] (`hipDeviceProp_t`, ROCm 5 layout) is `#[repr(C)]` with compile-time asserts
//!   of size, alignment and every field offset (x86-64); [`DeviceArch`] gives the masks of the
//!   `hipDeviceArch_t` bit-fields.
//! - [`HipModule`], [`HipFunction`], [`HipStream`] and [`HipDeviceptr`] are raw pointers to opaque
//!   types; [`HIP_LAUNCH_PARAM_BUFFER_POINTER`], [`HIP_LAUNCH_PARAM_BUFFER_SIZE`] and
//!   [`HIP_LAUNCH_PARAM_END`] are the `extra` markers of `hipModuleLaunchKernel`.
//!
//! `tests/c_layout.rs` compiles a C program against the installed headers that prints every
//! size, offset and constant of `layout::layout_table` and compares them with the Rust values.
//!
//! # Safety
//!
//! The entry points are `unsafe extern "C"` function pointers: each call must meet the
//! preconditions the header documents. [`Hip::init`], the version and device-count getters and
//! the error-text lookups are safe wrappers where no precondition is left to the caller.

mod api;
mod consts;
#[doc(hidden)]
pub mod layout;
mod status;
mod types;

pub use api::{DEFAULT_CANDIDATES, Hip, HipFns, LIBRARY_ENV};
pub use consts::*;
pub use dynload::{LoadError, OpenAttempt};
pub use types::*;
