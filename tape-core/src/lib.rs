//! The pure model of a captured decode step.
//!
//! A [`Recorder`](recorder::Recorder) copies every launch of one ordinary decode step into an
//! owned [`LaunchRecord`]; a finished [`Tape`](tape::Tape) is immutable and has an identity
//! (dispatch count, unique kernels, ordered sequence hash — see [`hash`]). From the tape's
//! resource effects, [`deps`] derives what every launch must wait for; [`binding`] and
//! [`calibrate`] name the few kernarg words and grid sizes that change with the decode position;
//! [`stability`] compares tapes; [`serial`] stores them; `show` (feature `show`) reports them to
//! people.
//!
//! Everything that decides whether a plan is valid is decided here, from data, never from kernel
//! names. The crate is `no_std` + `alloc` and free of `unsafe`.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod binding;
pub mod calibrate;
pub mod census;
pub mod coverage;
pub mod deps;
pub mod hash;
pub mod record;
pub mod recorder;
pub mod serial;
#[cfg(feature = "show")]
pub mod show;
pub mod stability;
pub mod tape;

pub use record::{Access, AllocationId, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};
