//! `redline bench-worker` (hidden): one bench arm in its own process, driven line by line by
//! `redline bench --process fresh` (protocol in [`super::arm`]).

use std::io::{BufRead as _, Write as _};
use std::str::FromStr as _;

use hal::FaultInjection as _;
use pm4_encoding::Target;
use tokenizer::SamplerConfig;

use super::arm::{parse_fault, run_row, tape_fact};
use super::device::Devices;
use super::error::{BenchError, chain};
use super::outcome::Setup;
use super::params::Params;
use crate::admission::load as admissions;
use crate::admission::model::{Setting, decide};
use crate::model::{GenerateOptions, Session};
use crate::replay::{ConfigFlags, ReplayConfig};

/// One bench arm in this process (`redline bench-worker`, used by `redline bench --process
/// fresh`): what [`command_line`] writes.
#[derive(Debug, Clone)]
pub struct Args {
    /// The GGUF file.
    pub model: String,
    /// The SHA-256 of the snapshot the bench measured: the worker's own snapshot of the file
    /// must have it (the admission decision names it).
    pub model_sha256: String,
    /// `sim`.
    pub device: String,
    /// Architecture.
    pub arch: String,
    /// KV-cache positions.
    pub context: u32,
    /// `hip`, `auto` or `shadow`.
    pub backend: String,
    /// `pm4` or `aql`.
    pub transport: String,
    /// Validate the prepared plan with the shadow oracle before the route is ready.
    pub validate_first: bool,
    /// Prompt token ids, comma-separated.
    pub prompt_ids: Vec<u32>,
    /// New tokens per row (decode tokens + 1).
    pub max_tokens: u32,
    /// Sampler temperature.
    pub temperature: f32,
    /// Sampler seed.
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

fn emit(value: &serde_json::Value) -> Result<(), BenchError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(value)?)?;
    out.flush()?;
    Ok(())
}

/// How a worker ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEnd {
    /// Its input ended after it served every command.
    Served,
    /// Its arm could not start; a `worker_error` line said why.
    NotStarted,
}

/// Runs `redline bench-worker` on a device of `devices`: a ready line, then one answer per
/// command line of standard input until it ends.
///
/// # Errors
/// Writing to standard output or reading standard input.
pub fn run<D: Devices>(args: &Args, devices: &D) -> Result<WorkerEnd, BenchError> {
    let mut session = match start(args, devices) {
        Ok(session) => session,
        Err(error) => {
            emit(&serde_json::json!({"worker_error": true, "error": chain(&error)}))?;
            return Ok(WorkerEnd::NotStarted);
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
    Ok(WorkerEnd::Served)
}

/// Why a worker's arm could not start.
#[derive(Debug, thiserror::Error)]
enum StartError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Bench(Box<BenchError>),
    #[error(transparent)]
    Open(E),
}

impl<E: std::error::Error + 'static> From<BenchError> for StartError<E> {
    fn from(error: BenchError) -> Self {
        Self::Bench(Box::new(error))
    }
}

fn start<D: Devices>(args: &Args, devices: &D) -> Result<Session<D::Device>, StartError<D::Error>> {
    devices.check(&args.device).map_err(|e| BenchError::Usage(format!("--device: {e}")))?;
    let target = Target::from_str(&args.arch).map_err(|e| BenchError::Usage(format!("--arch: {e}")))?;
    let flags = ConfigFlags {
        backend: Some(args.backend.clone()),
        transport: Some(args.transport.clone()),
        manual_capture: None,
    };
    let config = ReplayConfig {
        validate_first: args.validate_first,
        ..ReplayConfig::resolve(&flags, |_| None).map_err(BenchError::from)?
    };
    let path = std::path::Path::new(&args.model);
    let file = gguf::Gguf::open(path).map_err(|source| BenchError::Read { path: path.into(), source })?;
    // The worker runs its own snapshot of the file: it must be the bytes the bench measured.
    let sha256 = file.sha256().unwrap_or_default();
    if sha256 != args.model_sha256 {
        let detail = format!("its SHA-256 is now {sha256}, not the {} the bench measured", args.model_sha256);
        let changed = infile::ReadError::Changed { path: path.to_owned(), detail };
        return Err(BenchError::Read { path: path.into(), source: changed.into() }.into());
    }
    let registry = admissions::load(None).map_err(BenchError::from)?;
    let (device, _) = devices.open(&args.device, target).map_err(StartError::Open)?;
    let setting = Setting { kind: devices.kind(&device), context: args.context, transport: config.transport };
    let admission = decide(&registry, &file, &args.model_sha256, &device, setting);
    Ok(Session::with_admission(device, &file, args.context, config, admission).map_err(BenchError::from)?)
}
