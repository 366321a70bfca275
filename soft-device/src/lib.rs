//! Redline's soft device: a CPU model of the parts of an AMD GPU that Redline drives, behind the
//! HAL's [`hal::Device`] trait, so that every route can be exercised and checked without a GPU.
//! See `docs/ARCHITECTURE.md` ("The soft device") for what it models and what it refuses.
//!
//! - [`SimDevice`]: the [`hal::Device`] implementation (and [`hal::FaultInjection`]).
//! - [`memory`]: the GPU virtual address space.
//! - [`loader`]: code objects placed at VAs, entered into the HAL's kernel table, and each
//!   kernel's CPU reference from `kernel-refs`' registry kept next to it ([`loader::SoftKernels`]).
//! - [`exec`]: one dispatch through a CPU reference, with its declared effects enforced.
//! - [`clock`]: the GPU clock PM4 timestamps read (host-monotonic, 100 MHz ticks).
//! - [`cp`]: the PM4 command processor that executes one indirect buffer per family.
//! - [`hazard`]: ordering and visibility between the dispatches of one IB.
//! - [`aql`]: AQL queues and their packet processor.
//! - [`signal`]: signals, as AQL packets name them.
//! - [`bundle`]: IB bundles, directories that describe one submission completely, and their
//!   runner.
//! - [`trace`]: the kernel trace (rocprofv3's `kernel_trace.csv`) its packet processor writes
//!   when `REDLINE_KERNEL_TRACE` asks for it.
//! - [`SoftFault`]: the failures only the soft device knows, inside the HAL's errors.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod aql;
pub mod bundle;
pub mod clock;
pub mod cp;
mod device;
pub mod exec;
mod fault;
pub mod hazard;
pub mod loader;
pub mod memory;
pub mod signal;
pub mod trace;

pub use device::SimDevice;

/// This crate's name, as records of a run name the soft device (`redline bench`'s report).
pub const CRATE_NAME: &str = env!("CARGO_PKG_NAME");
/// This crate's version.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");
pub use fault::{EffectViolation, SoftFault};
