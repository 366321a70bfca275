//! `redline bench` and `redline bench-worker`: the flags and the summary; the bench is
//! `engine::bench`, run on the devices `select` opens.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use engine::bench::promotion;
use engine::bench::{self, Destination, time};
use engine::stationarity::GateSettings;
use serde_json::Value;

use crate::model_args::ModelDevice;
use crate::select::Backends;

/// How the arms' timed rows alternate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Order {
    /// Every `hip` row, then every `auto` row.
    Ab,
    /// hip, auto, auto, hip, ...
    Abba,
    /// hip, auto, hip, auto, ...
    Interleaved,
}

/// Where each arm's session lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Process {
    /// One process, one session per arm kept loaded.
    Resident,
    /// Each arm in a newly spawned `redline bench-worker` process.
    Fresh,
}

impl From<Order> for bench::Order {
    fn from(order: Order) -> Self {
        match order {
            Order::Ab => Self::Ab,
            Order::Abba => Self::Abba,
            Order::Interleaved => Self::Interleaved,
        }
    }
}

impl From<Process> for bench::Process {
    fn from(process: Process) -> Self {
        match process {
            Process::Resident => Self::Resident,
            Process::Fresh => Self::Fresh,
        }
    }
}

/// The bench's parameters (shared with `redline golden`), as flags.
#[derive(Clone, Debug, clap::Args)]
pub struct ParamsArgs {
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
    bench::arm::parse_fault(s).map(|_| s.to_owned())
}

impl ParamsArgs {
    /// The parameters the flags give.
    #[must_use]
    pub fn to_params(&self) -> bench::Params {
        bench::Params {
            model: self.model.model.clone(),
            device: self.model.device.name.clone(),
            arch: self.model.device.arch.clone(),
            prompt: self.prompt.clone(),
            tokens: self.tokens,
            context: self.context,
            transport: self.transport.clone(),
            retained_backend: self.retained_backend.clone(),
            temperature: self.temperature,
            seed: self.seed,
            warmup: self.warmup,
            runs: self.runs,
            order: self.order.into(),
            process: self.process.into(),
            gate: GateSettings {
                window_rows: self.gate_window,
                slope_max_pct: self.gate_slope_pct,
                spread_max_pct: self.gate_spread_pct,
                drift_max_pct: self.gate_drift_pct,
                confirm_rows: self.gate_confirm,
                rows_max: self.gate_rows_max,
            },
            promotion_rule: self.promotion_rule.clone(),
            inject_fault: self.inject_fault.clone(),
        }
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
    pub params: ParamsArgs,
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
    let utc = time::utc_now();
    let out = match &args.out {
        Some(path) => path.clone(),
        None => PathBuf::from("target/redline-bench").join(format!("{}.json", time::utc_stamp(&utc))),
    };
    let plot = args.plot.clone().unwrap_or_else(|| out.with_extension("svg"));
    let to = Destination { utc: &utc, report: Some(&out), plot: Some(&plot) };
    let outcome = match bench::execute_to(&args.params.to_params(), &Backends, to)? {
        Ok(outcome) => outcome,
        Err(message) => {
            eprintln!("redline: {}", infile::escape_lines(&message.to_string()));
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
    std::fs::write(&plot, bench::plot::svg(&outcome.plot)).with_context(|| format!("writing {}", plot.display()))?;
    eprintln!("report: {}\nplot: {}", infile::EscapedPath(&out), infile::EscapedPath(&plot));
    print_summary(&outcome.report);
    Ok(if outcome.valid() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The summary lines on stderr.
fn print_summary(report: &Value) {
    for arm in ["hip", "auto"] {
        let t = &report["arms"][arm]["tok_s"];
        eprintln!("{arm}: tok/s min {} median {} max {}", t["min"], t["median"], t["max"]);
    }
    eprintln!(
        "ratio auto/hip: {} (delta {} tok/s)",
        report["ratio_retained_over_ordinary_tok_s"], report["delta_retained_minus_ordinary_tok_s"]
    );
    eprintln!("valid: {}", report["valid"]);
    for reason in report["invalid_reasons"].as_array().into_iter().flatten() {
        eprintln!("invalid: {}", infile::escape_lines(reason.as_str().unwrap_or_default()));
    }
    let promotion = &report["promotion"];
    eprintln!(
        "promotion: {} under {} ({})",
        promotion["disposition"].as_str().unwrap_or("?"),
        promotion["rule"].as_str().unwrap_or("?"),
        promotion["reason"].as_str().unwrap_or("?")
    );
}

/// One bench arm in this process (used by `redline bench --process fresh`).
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The GGUF file.
    #[arg(long)]
    pub model: String,
    /// Its SHA-256 (for the admission decision).
    #[arg(long)]
    pub model_sha256: String,
    /// `sim`.
    #[arg(long)]
    pub device: String,
    /// Architecture.
    #[arg(long)]
    pub arch: String,
    /// KV-cache positions.
    #[arg(long)]
    pub context: u32,
    /// `hip`, `auto` or `shadow`.
    #[arg(long)]
    pub backend: String,
    /// `pm4` or `aql`.
    #[arg(long)]
    pub transport: String,
    /// Validate the prepared plan with the shadow oracle before the route is ready.
    #[arg(long)]
    pub validate_first: bool,
    /// Prompt token ids, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub prompt_ids: Vec<u32>,
    /// New tokens per row (decode tokens + 1).
    #[arg(long)]
    pub max_tokens: u32,
    /// Sampler temperature.
    #[arg(long)]
    pub temperature: f32,
    /// Sampler seed.
    #[arg(long)]
    pub seed: u64,
}

impl WorkerArgs {
    fn to_args(&self) -> bench::worker::Args {
        bench::worker::Args {
            model: self.model.clone(),
            model_sha256: self.model_sha256.clone(),
            device: self.device.clone(),
            arch: self.arch.clone(),
            context: self.context,
            backend: self.backend.clone(),
            transport: self.transport.clone(),
            validate_first: self.validate_first,
            prompt_ids: self.prompt_ids.clone(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            seed: self.seed,
        }
    }
}

/// Runs `redline bench-worker`.
///
/// # Errors
/// Reading its commands or writing its answers; setup failures are a `worker_error` line and
/// exit 1.
pub fn worker(args: &WorkerArgs) -> Result<ExitCode> {
    Ok(match bench::worker::run(&args.to_args(), &Backends)? {
        bench::worker::WorkerEnd::Served => ExitCode::SUCCESS,
        bench::worker::WorkerEnd::NotStarted => ExitCode::from(1),
    })
}
