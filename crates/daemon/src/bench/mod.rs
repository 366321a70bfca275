//! `redline bench`: the route-proof A/B harness.
//!
//! Two arms run the same binary, model, prompt token stream, context, generation length, sampler
//! and settings: `hip` (ordinary launches) and `auto` (the retained route, `--transport pm4|aql`;
//! `--retained-backend shadow` validates with the shadow oracle first). A row is one generation
//! of `--tokens` decode tokens from the prompt, measured over the decode forwards only. Each arm
//! runs `--warmup` rows, then rows until its stationarity gate ([`engine::stationarity`]) passes
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

pub mod arm;
pub mod facts;
pub mod health;
pub mod identity;
pub mod plot;
pub mod promotion;
pub mod report;
pub mod run;
pub mod tape_record;
pub mod worker;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use engine::stationarity::GateSettings;

use crate::model_args::ModelDevice;

/// The prompt rows are generated from when `--prompt` is not given.
pub const DEFAULT_PROMPT: &str = "The history of the printing press begins in";

/// How the arms' timed rows alternate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Every `hip` row, then every `auto` row.
    Ab,
    /// hip, auto, auto, hip, ...
    Abba,
    /// hip, auto, hip, auto, ...
    Interleaved,
}

impl Order {
    /// The arm (0 = hip, 1 = auto) of each timed row, `runs` rows per arm.
    #[must_use]
    pub fn schedule(self, runs: usize) -> Vec<usize> {
        match self {
            Order::Ab => std::iter::repeat_n(0, runs).chain(std::iter::repeat_n(1, runs)).collect(),
            Order::Abba => (0..runs).flat_map(|i| if i % 2 == 0 { [0, 1] } else { [1, 0] }).collect(),
            Order::Interleaved => (0..runs).flat_map(|_| [0, 1]).collect(),
        }
    }
}

/// Where each arm's session lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Process {
    /// One process, one session per arm kept loaded.
    Resident,
    /// Each arm in a newly spawned `redline bench-worker` process.
    Fresh,
}

/// The bench's parameters (shared with `redline golden`).
#[derive(Clone, Debug, clap::Args)]
pub struct Params {
    /// The model and the device.
    #[command(flatten)]
    pub model: ModelDevice,
    /// The prompt text [default: a fixed built-in text].
    #[arg(long)]
    pub prompt: Option<String>,
    /// Decode tokens per row.
    #[arg(long, default_value_t = 16)]
    pub tokens: u32,
    /// KV-cache positions.
    #[arg(long, default_value_t = 256)]
    pub context: u32,
    /// The retained arm's transport: `pm4` or `aql`.
    #[arg(long, default_value = "pm4")]
    pub transport: String,
    /// The retained arm's backend: `auto`, or `shadow` (shadow-validated first).
    #[arg(long, default_value = "auto")]
    pub retained_backend: String,
    /// Sampler temperature (0 is greedy).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Sampler seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Warm-up rows per arm.
    #[arg(long, default_value_t = 2)]
    pub warmup: usize,
    /// Timed rows per arm.
    #[arg(long, default_value_t = 10)]
    pub runs: usize,
    /// How the arms' timed rows alternate.
    #[arg(long, value_enum, default_value = "ab")]
    pub order: Order,
    /// `resident` (one process) or `fresh` (a worker process per arm).
    #[arg(long, value_enum, default_value = "resident")]
    pub process: Process,
    /// Stationarity gate: rows per window.
    #[arg(long, default_value_t = 10)]
    pub gate_window: usize,
    /// Stationarity gate: largest |slope| per row, percent of the median.
    #[arg(long, default_value_t = 0.05)]
    pub gate_slope_pct: f64,
    /// Stationarity gate: largest (max-min)/median, percent.
    #[arg(long, default_value_t = 1.0)]
    pub gate_spread_pct: f64,
    /// Stationarity gate: largest median drift between consecutive windows, percent.
    #[arg(long, default_value_t = 0.5)]
    pub gate_drift_pct: f64,
    /// Stationarity gate: confirmation rows.
    #[arg(long, default_value_t = 10)]
    pub gate_confirm: usize,
    /// Stationarity gate: rows after which it gives up.
    #[arg(long, default_value_t = 120)]
    pub gate_rows_max: usize,
    /// The promotion rule, declared before the timed rows: comma-separated clauses that must all
    /// hold for the disposition `promote` (else `hold`). Clauses: `ratio>=X` or `ratio>X`
    /// (retained over ordinary median tok/s), `delta_tok_s>=X` or `delta_tok_s>X` (retained minus
    /// ordinary median tok/s), `gates=pass` (every validity gate passed), `health=pass` (both
    /// arms' decoded output is healthy). The default promotes a valid, healthy bench whose
    /// retained route is at least 10% faster.
    #[arg(long, default_value = promotion::DEFAULT_RULE, value_parser = promotion::parse_arg)]
    pub promotion_rule: promotion::PromotionRule,
    /// Testing only: arm a soft-device fault on the retained arm before its first timed row
    /// (`replay-timeout`, `queue-fault`).
    #[arg(long, hide = true, value_parser = parse_fault_name)]
    pub inject_fault: Option<String>,
}

fn parse_fault_name(s: &str) -> Result<String, String> {
    arm::parse_fault(s).map(|_| s.to_owned())
}

impl Params {
    /// The gate settings the flags give.
    #[must_use]
    pub fn gate(&self) -> GateSettings {
        GateSettings {
            window_rows: self.gate_window,
            slope_max_pct: self.gate_slope_pct,
            spread_max_pct: self.gate_spread_pct,
            drift_max_pct: self.gate_drift_pct,
            confirm_rows: self.gate_confirm,
            rows_max: self.gate_rows_max,
        }
    }

    /// The prompt text.
    #[must_use]
    pub fn prompt_text(&self) -> &str {
        self.prompt.as_deref().unwrap_or(DEFAULT_PROMPT)
    }
}

/// Run the route-proof A/B bench of the ordinary and the retained route.
///
/// A `hip` and an `auto` arm: warm-up, stationarity gate, timed rows; a JSON report and an SVG
/// plot of every row. Exit codes: 0 the bench is valid, 1 it is
/// not (the report names each failing gate) or the model could not run, 2 usage or I/O error.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bench parameters.
    #[command(flatten)]
    pub params: Params,
    /// The JSON report [default: target/redline-bench/YYYYMMDDTHHMMSSZ.json, the start time in UTC].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The SVG plot [default: beside the report, `.svg`].
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// Runs `redline bench`.
///
/// # Errors
/// Usage and I/O errors (exit 2).
pub fn run(args: &Args) -> Result<ExitCode> {
    let utc = report::utc_now();
    let out = match &args.out {
        Some(path) => path.clone(),
        None => PathBuf::from("target/redline-bench").join(format!("{}.json", report::utc_stamp(&utc))),
    };
    let plot = args.plot.clone().unwrap_or_else(|| out.with_extension("svg"));
    let to = run::Destination { utc: &utc, report: Some(&out), plot: Some(&plot) };
    let outcome = match run::execute_to(&args.params, to)? {
        Ok(outcome) => outcome,
        Err(message) => {
            eprintln!("redline: {message}");
            return Ok(ExitCode::from(1));
        }
    };
    for path in [&out, &plot] {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
    }
    std::fs::write(&out, serde_json::to_string_pretty(&outcome.report)? + "\n")
        .with_context(|| format!("writing {}", out.display()))?;
    std::fs::write(&plot, plot::svg(&outcome.plot)).with_context(|| format!("writing {}", plot.display()))?;
    eprintln!("report: {}\nplot: {}", out.display(), plot.display());
    report::print_summary(&outcome.report);
    Ok(if outcome.valid() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(test)]
mod tests {
    use super::Order;

    #[test]
    fn schedules_alternate_the_arms_as_named() {
        assert_eq!(Order::Ab.schedule(3), [0, 0, 0, 1, 1, 1]);
        assert_eq!(Order::Abba.schedule(4), [0, 1, 1, 0, 0, 1, 1, 0]);
        assert_eq!(Order::Interleaved.schedule(3), [0, 1, 0, 1, 0, 1]);
        for order in [Order::Ab, Order::Abba, Order::Interleaved] {
            let s = order.schedule(5);
            assert_eq!(s.iter().filter(|&&a| a == 1).count(), 5, "{order:?}");
        }
    }
}
