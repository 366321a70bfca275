//! The crate's only `unsafe`: thin wrappers over the runtime calls of `hsa-sys` and `hip-sys`,
//! and the few host accesses to memory the runtime hands out. Every wrapper is one `unsafe` block
//! whose `SAFETY:` comment proves the call's preconditions from the wrapper's own arguments and
//! the invariants of the types defined here; the rest of the crate denies `unsafe` and reaches the
//! runtimes only through these functions.
//!
//! # What the types carry
//! - [`Runtime`]: a reference `hsa_init` took, dropped (`hsa_shut_down`) with its last clone.
//!   Every HSA object below holds a clone, so the runtime outlives everything made under it.
//! - Runtime objects a call needs alive are owned values, released only by a consuming function
//!   ([`Signal::destroy`], [`Queue::destroy`], [`Executable::destroy`], [`HostBlock::free`],
//!   [`DeviceBlock::free`]) or, for HIP's streams and modules, when dropped: safe code cannot
//!   name one after releasing it. A HIP kernel names its module, and is launched only with it.
//! - The host touches runtime memory only through a [`HostBlock`] (memory of a pool a CPU agent
//!   owns, [`SystemPool`], which is system memory mapped into the process), with bounds-checked
//!   accesses, and through a [`Queue`]'s ring slots. Device memory is reached only by the runtime
//!   (`hsa_memory_copy`) at a [`DeviceRange`] that lies inside a live [`DeviceBlock`] or a live
//!   [`Executable`]'s image.
//!
//! # What no type here carries
//! The device side. A packet that names memory, a signal or a queue after the caller released it
//! makes the device (the GPU, or the soft HSA runtime's packet processor) read or write what is no
//! longer there, and host stores into bytes a packet in flight reads race with the device, as
//! they would for a GPU program. The HAL's contract says what a caller may release or write while
//! packets are in flight (and the ordinary launch path reuses kernarg bytes only after the
//! launches that read them completed); the host itself never touches a released object again.
//! What HIP is given as a device address is HIP's to validate.

mod code;
pub(crate) mod hip;
mod memory;
mod queue;
mod runtime;

pub(crate) use code::Executable;
pub(crate) use memory::{DeviceBlock, DeviceRange, HostBlock, Staging};
pub(crate) use queue::{Queue, QueueFull, Signal};
pub(crate) use runtime::{AgentText, AgentU32, Runtime, SystemPool};
