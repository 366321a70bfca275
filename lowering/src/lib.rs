//! Redline's lowering, generic over the HAL's [`hal::Device`]:
//!
//! - [`lower`]: a recorded tape lowered into a PM4 IB per family or into AQL packets, verified
//!   against the tape by decoding it, and its binding patch sites.
//! - [`ib_builder`]: the PM4 encoder of the lowering (the per-dispatch shape, from kernel
//!   descriptors); also what tests and IB bundles hand-build IBs with.
//! - [`plan`]: a tape prepared once on a device (retained kernargs, verified IB, queue, signal)
//!   and replayed per token with one AQL PM4-IB packet; stale plans are refused.
//! - [`profile`]: the attribution-only profiler's body: a lowered tape with GPU-clock timestamps
//!   between its dispatches, prepared and run on a device beside the certified plan.
//!
//! Per-family facts (cache-invalidation bits, dimension semantics, register maps) come from
//! `pm4-encoding`'s family modules; nothing here compares target names or names a backend.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ib_builder;
pub mod lower;
pub mod plan;
pub mod profile;
