//! The route-proof A/B bench (`redline bench`).
//!
//! Two arms run the same binary, model, prompt token stream, context, generation length, sampler
//! and settings: `hip` (ordinary launches) and `auto` (the retained route, `--transport pm4|aql`;
//! `--retained-backend shadow` validates with the shadow oracle first). A row is one generation
//! of `--tokens` decode tokens from the prompt, measured over the decode forwards only. Each arm
//! runs `--warmup` rows, then rows until its stationarity gate ([`crate::stationarity`]) passes
//! or gives up, then (both arms, in `--order`) `--runs` timed rows. The report records the
//! environment, the workload, every setting, per-arm results and route proofs, and a list of
//! gates; `valid` is true only when every gate passed. The `--promotion-rule` ([`promotion`]) is
//! printed and written to the report file before the first timed row; the report ends with the
//! disposition it gives (`promote` or `hold`, with the reason). `docs/bench-report.schema.json`
//! is the report's schema; `README.md` ("The bench report") describes its fields.
//!
//! Fault injection (hidden, for testing the gates): `--inject-fault replay-timeout` (the soft
//! device's `Hang`: the retained token's completion never arrives) or `--inject-fault
//! queue-fault` is armed on the retained arm just before its first timed row. The replay then
//! fails, the controller falls back for good, and the report must say `valid: false`.
//!
//! The bench is generic over the HAL: the caller opens and describes devices ([`Devices`]), so
//! that nothing here names a backend. Modules, from the bottom: [`promotion`], [`params`],
//! [`facts`], [`health`], [`device`], [`error`], [`time`], [`identity`], [`tape_record`],
//! [`plot`], [`arm`], [`outcome`], [`report`], [`worker`], [`run`]; each imports only modules
//! before it.

pub mod arm;
pub mod device;
pub mod error;
pub mod facts;
pub mod health;
pub mod identity;
pub mod outcome;
pub mod params;
pub mod plot;
pub mod promotion;
pub mod report;
pub mod run;
pub mod tape_record;
pub mod time;
pub mod worker;

pub use device::{DeviceRecord, Devices};
pub use error::{BenchError, Unrunnable};
pub use outcome::{Destination, Outcome};
pub use params::{DEFAULT_PROMPT, Order, Params, Process};
pub use run::{execute, execute_to, validate};
