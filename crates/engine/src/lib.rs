//! Redline's engine: the [`device::Device`] trait and its backends.
//!
//! - [`device`]: the trait the routes use, its request and result types and errors.
//! - [`lower`]: a recorded tape lowered into a PM4 IB per family or into AQL packets, verified
//!   against the tape, and its binding patch sites.
//! - [`plan`]: a tape prepared once on a device (retained kernargs, verified IB, queue, signal)
//!   and replayed per token with one AQL PM4-IB packet; stale plans are refused.
//! - [`bundle`]: IB bundles, directories that describe one submission completely.
//! - [`sim`]: the soft device, which executes everything on the CPU through the kernels' CPU
//!   references.
//!
//! `unsafe` is denied crate-wide and allowed only in the hardware backends ([`hsa`], [`hip`]),
//! where every block carries a `SAFETY:` proof.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod admission;
pub mod bundle;
pub mod device;
pub mod examples;
pub mod funnel;
#[allow(unsafe_code)]
pub mod hip;
#[allow(unsafe_code)]
pub mod hsa;
pub mod lower;
pub mod model;
pub mod plan;
pub mod replay;
pub mod select;
pub mod shadow;
pub mod sim;
pub mod stationarity;
pub mod workload;
