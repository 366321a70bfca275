//! CPU reference implementations of Redline's GPU kernels (`kernels`), for the soft device that
//! executes command streams without a GPU. Only the soft device, and what is built over it (the
//! soft HSA runtime, tests, benches), depends on this crate: the device HAL, the lowering and the
//! route know nothing of it.
//!
//! - [`memory`]: the [`memory::DeviceMemory`] address space the references run against, and
//!   [`memory::HostMemory`] for tests and tools.
//! - [`launch`]: a [`launch::Launch`] (kernarg bytes and geometry) and typed kernarg reads.
//! - [`cpu`]: one reference per kernel, reproducing the kernel's `f32` arithmetic and order.
//! - [`effects`]: a kernel's declared effects (`kernels::effects`) resolved for one launch.
//! - [`registry`]: `(code-object SHA-256, kernel name)` to reference, effects and arguments.

#![warn(missing_docs)]
// The one unsafe of the crate: calling the vector CPU references after the CPU features they
// are compiled for were detected at run time (`cpu::simd`, used by `cpu::quant` and
// `cpu::prefill`); nothing else may use it.
#![deny(unsafe_code)]

pub mod cpu;
pub mod effects;
pub mod launch;
pub mod memory;
pub mod registry;
