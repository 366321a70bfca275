//! Redline's route above the device HAL, generic over [`hal::Device`]: nothing here names a
//! backend (`docs/ARCHITECTURE.md`, "Layers and crates").
//!
//! - [`funnel`]: the typed launch funnel (kernarg blob from the kernel's layout, one ordinary
//!   launch, recorded into the tape while a capture is open, with declared effects).
//! - [`workload`], [`examples`]: decode-like steps as launches, with the state surfaces the
//!   shadow oracle compares.
//! - [`replay`]: the replay controller and its route proof.
//! - [`shadow`]: the three-arm shadow oracle.
//! - [`admission`]: the admissions registry, the default predicate and the decision for a
//!   loaded model.
//! - [`stationarity`]: the bench's stationarity gate.
//! - [`bench`]: the route-proof A/B bench, its report and the promotion rule.
//! - [`golden`]: the sealed fixtures (`registry/fixtures.json`): reproduced, or sealed.
//! - [`model`]: the llama model adapter and the session that runs it.
//! - [`profile`]: the attribution-only dispatch profiler (`redline profile`).
//!
//! The lowering and prepared plans are the `lowering` crate, re-exported as [`lower`] and
//! [`plan`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod admission;
pub mod bench;
pub mod examples;
pub mod funnel;
pub mod golden;
pub mod model;
pub mod profile;
pub mod replay;
pub mod shadow;
pub mod stationarity;
pub mod workload;

pub use lowering::{lower, plan};
