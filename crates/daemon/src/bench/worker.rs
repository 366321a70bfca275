//! `redline bench-worker` (hidden): one bench arm in its own process, driven line by line by
//! `redline bench --process fresh` (protocol in [`super::arm`]).

use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;
use std::str::FromStr;

use crate::select::AnyDevice;
use crate::select::{DeviceKind, select_for_model};
use anyhow::{Context as _, Result, anyhow};
use engine::model::{GenerateOptions, Session};
use engine::replay::{ConfigFlags, ReplayConfig};
use hal::FaultInjection;
use pm4_encoding::Target;
use tokenizer::SamplerConfig;

use super::Params;
use super::arm::{parse_fault, run_row, tape_fact};
use super::run::Setup;

/// One bench arm in this process (used by `redline bench --process fresh`).
#[derive(Debug, clap::Args)]
pub struct Args {
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

/// The worker command line for an arm of `params` with `config`.
#[must_use]
pub fn command_line(params: &Params, setup: &Setup, config: &ReplayConfig) -> Vec<String> {
    let ids: Vec<String> = setup.prompt.iter().map(u32::to_string).collect();
    [
        "bench-worker",
        "--model",
        &setup.model_path,
        "--model-sha256",
        &setup.model_sha256,
        "--device",
        &setup.device.0,
        "--arch",
        setup.target.name(),
        "--context",
        &params.context.to_string(),
        "--backend",
        config.backend.name(),
        "--transport",
        &params.transport,
        "--prompt-ids",
        &ids.join(","),
        "--max-tokens",
        &setup.options.max_tokens.to_string(),
        "--temperature",
        &params.temperature.to_string(),
        "--seed",
        &params.seed.to_string(),
    ]
    .iter()
    .chain(config.validate_first.then_some(&"--validate-first"))
    .map(|s| (*s).to_owned())
    .collect()
}

fn emit(value: &serde_json::Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(value)?)?;
    out.flush()?;
    Ok(())
}

/// Runs `redline bench-worker`.
///
/// # Errors
/// Setup failures, also reported as a `worker_error` line.
pub fn run(args: &Args) -> Result<ExitCode> {
    let mut session = match start(args) {
        Ok(session) => session,
        Err(error) => {
            emit(&serde_json::json!({"worker_error": true, "error": format!("{error:#}")}))?;
            return Ok(ExitCode::from(1));
        }
    };
    emit(&serde_json::json!({"ready": true, "admission": session.admission()}))?;
    let options = GenerateOptions {
        max_tokens: args.max_tokens,
        sampler: SamplerConfig { temperature: args.temperature, top_k: 0, top_p: 1.0, seed: args.seed },
        stop: Vec::new(),
        logits: tokenizer::LogitsConfig::default(),
        top_logprobs: None,
    };
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let reply = match line.trim().split_once(' ').unwrap_or((line.trim(), "")) {
            ("row", "") => serde_json::to_value(run_row(&mut session, &args.prompt_ids, &options))?,
            ("proof", "") => serde_json::to_value(session.route_proof())?,
            ("tape", "") => tape_fact(&session),
            ("inject", fault) => match parse_fault(fault) {
                Ok(fault) => match session.device_mut().inject(fault) {
                    Ok(()) => serde_json::json!({"ok": true}),
                    Err(error) => serde_json::json!({"worker_error": true, "error": error.to_string()}),
                },
                Err(error) => serde_json::json!({"worker_error": true, "error": error}),
            },
            _ => serde_json::json!({"worker_error": true, "error": format!("unknown command {line:?}")}),
        };
        emit(&reply)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn start(args: &Args) -> Result<Session<AnyDevice>> {
    let kind = DeviceKind::from_str(&args.device).map_err(|e| anyhow!("--device: {e}"))?;
    let target = Target::from_str(&args.arch).map_err(|e| anyhow!("--arch: {e}"))?;
    let flags = ConfigFlags {
        backend: Some(args.backend.clone()),
        transport: Some(args.transport.clone()),
        manual_capture: None,
    };
    let config = ReplayConfig { validate_first: args.validate_first, ..ReplayConfig::resolve(&flags, |_| None)? };
    let file = gguf::Gguf::open(&args.model).with_context(|| format!("reading {}", args.model))?;
    let registry = crate::admit::load(None)?;
    let (device, _) = select_for_model(kind, Some(target))?;
    let setting =
        crate::admit::Setting { kind: device.kind().name(), context: args.context, transport: config.transport };
    let admission = crate::admit::decide(&registry, &file, &args.model_sha256, &device, setting);
    Ok(Session::with_admission(device, &file, args.context, config, admission)?)
}
