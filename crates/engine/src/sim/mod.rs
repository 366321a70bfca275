//! The soft device: a CPU model of the parts of an AMD GPU that Redline drives, so that every
//! route can be exercised and checked without a GPU (see `DESIGN.md` §5).
//!
//! - [`SimDevice`]: the [`crate::device::Device`] implementation.
//! - [`memory`]: the GPU virtual address space.
//! - [`loader`]: code objects placed at VAs, and the kernel table.
//! - [`exec`]: one dispatch through a CPU reference, with its declared effects enforced.
//! - [`cp`]: the PM4 command processor that executes one indirect buffer per family.
//! - [`hazard`]: ordering and visibility between the dispatches of one IB.
//! - [`ib_builder`]: hand-built PM4 for tests and IB bundles.
//! - [`aql`]: AQL queues and their packet processor.
//! - [`signal`]: signals, as AQL packets name them.

pub mod aql;
pub mod cp;
mod device;
pub mod exec;
pub mod hazard;
pub mod ib_builder;
pub mod loader;
pub mod memory;
pub mod signal;

pub use device::{Injection, SimDevice};
