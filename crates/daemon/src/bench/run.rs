//! The bench's orchestration: set up both arms, warm up, settle, time, collect proofs.

use std::str::FromStr;

use crate::select::{DeviceKind, select_for_model};
use anyhow::{Context as _, Result, bail};
use engine::admission::AdmissionDecision;
use engine::model::{GenerateOptions, Session, tokenizer_from_gguf};
use engine::replay::{ConfigFlags, ReplayConfig};
use engine::stationarity::{Gate, GateStatus};
use hal::Device;
use pm4_encoding::Target;
use serde_json::Value;
use tokenizer::SamplerConfig;

use super::arm::{Arm, RowRecord, Worker};
use super::plot::{PlotArm, PlotData};
use super::{Params, Process, report};

/// Arm names, in schedule order.
pub const ARMS: [&str; 2] = ["hip", "auto"];

/// A row with its place in the run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PhaseRow {
    /// Row index within the arm.
    pub index: usize,
    /// `warmup`, `gate` or `timed`.
    pub phase: &'static str,
    /// The measurement.
    #[serde(flatten)]
    pub record: RowRecord,
}

/// One arm's run.
#[derive(Debug)]
pub struct ArmRun {
    /// `hip` or `auto`.
    pub name: &'static str,
    /// The controller configuration.
    pub config: ReplayConfig,
    /// Every row.
    pub rows: Vec<PhaseRow>,
    /// The gate's final status.
    pub gate: GateStatus,
    /// Index of the first gate row.
    pub gate_first_row: usize,
    /// Route proof after warm-up and gate.
    pub lifecycle_proof: Value,
    /// Route proof after the timed rows.
    pub timed_proof: Value,
    /// The session's admission decision.
    pub admission: AdmissionDecision,
}

/// What the bench set up before its first row.
#[derive(Debug)]
pub struct Setup {
    /// The model file.
    pub model_path: String,
    /// Its SHA-256.
    pub model_sha256: String,
    /// The prompt's token ids.
    pub prompt: Vec<u32>,
    /// Generation options per row.
    pub options: GenerateOptions,
    /// The architecture.
    pub target: Target,
    /// The device kind and why it was chosen.
    pub device: (String, String),
    /// The admission decision for this model and device.
    pub admission: AdmissionDecision,
}

/// A finished bench.
#[derive(Debug)]
pub struct Outcome {
    /// When it started, RFC 3339 UTC.
    pub utc: String,
    /// The JSON report.
    pub report: Value,
    /// The plot's data.
    pub plot: PlotData,
}

impl Outcome {
    /// The report's `valid`.
    #[must_use]
    pub fn valid(&self) -> bool {
        self.report["valid"] == Value::Bool(true)
    }
}

fn config(backend: &str, transport: &str) -> Result<ReplayConfig> {
    let flags =
        ConfigFlags { backend: Some(backend.to_owned()), transport: Some(transport.to_owned()), manual_capture: None };
    // The arms' settings are the flags', never the environment's: both arms must match.
    Ok(ReplayConfig::resolve(&flags, |_| None)?)
}

/// Checks the parameters that do not need the model.
///
/// # Errors
/// The first unusable parameter, named.
pub fn validate(params: &Params) -> Result<()> {
    params.gate().validate().context("stationarity gate")?;
    if params.tokens == 0 {
        bail!("--tokens 0: at least 1");
    }
    if params.runs == 0 {
        bail!("--runs 0: at least 1");
    }
    if !["auto", "shadow"].contains(&params.retained_backend.as_str()) {
        bail!("--retained-backend {:?}: accepted values: auto, shadow", params.retained_backend);
    }
    if !["pm4", "aql"].contains(&params.transport.as_str()) {
        bail!("--transport {:?}: accepted values: pm4, aql", params.transport);
    }
    if !(params.temperature.is_finite() && params.temperature >= 0.0) {
        bail!("--temperature {}: a finite value ≥ 0", params.temperature);
    }
    Ok(())
}

/// Runs the bench. The outer error is a usage or I/O error; the inner one a model or device
/// that could not run.
///
/// # Errors
/// As above.
pub fn execute(params: &Params) -> Result<Result<Outcome, String>> {
    validate(params)?;
    let utc = report::utc_now();
    let (setup, file) = match prepare(params)? {
        Ok(prepared) => prepared,
        Err(message) => return Ok(Err(message)),
    };
    eprintln!("bench: device {}", setup.device.1);
    let configs = [config("hip", &params.transport)?, config(&params.retained_backend, &params.transport)?];
    let mut arms = Vec::with_capacity(2);
    for (name, config) in ARMS.into_iter().zip(configs) {
        let arm = match start_arm(params, &setup, &file, &config) {
            Ok(arm) => arm,
            Err(error) => return Ok(Err(format!("{name} arm: {error:#}"))),
        };
        arms.push((name, config, arm));
    }
    let runs = run_arms(params, &setup, arms)?;
    let report = report::build(params, &setup, &utc, &runs);
    let plot = PlotData { arms: runs.iter().map(PlotArm::of).collect() };
    Ok(Ok(Outcome { utc, report, plot }))
}

/// Resolves the model, tokenizes the prompt, selects the device and decides admission.
fn prepare(params: &Params) -> Result<Result<(Setup, gguf::Gguf), String>> {
    let kind = params.model.kind()?;
    let target = params.model.target()?;
    let resolved = params.model.resolve()?;
    let file = gguf::Gguf::open(&resolved.path).with_context(|| format!("reading {}", resolved.path.display()))?;
    let model_sha256 = crate::model_args::model_sha256(&resolved)?;
    let tokenizer = tokenizer_from_gguf(&file)?;
    let prompt = tokenizer.encode(params.prompt_text(), false);
    if prompt.is_empty() {
        bail!("--prompt: encodes to no tokens");
    }
    let needed = prompt.len() as u64 + u64::from(params.tokens) + 1;
    if needed > u64::from(params.context) {
        bail!("--context {}: {} prompt tokens + {} tokens + 1 do not fit", params.context, prompt.len(), params.tokens);
    }
    // The arms open their own devices; this one only says which device and why.
    let (kind_name, target, reason) = match select_for_model(kind, Some(target)) {
        Ok((device, reason)) => (device.kind().name().to_owned(), device.target(), reason),
        Err(error) => return Ok(Err(error.to_string())),
    };
    let registry = crate::admit::load(None)?;
    let admission = crate::admit::decide(&registry, &file, &model_sha256, target, &kind_name);
    let options = GenerateOptions {
        max_tokens: params.tokens + 1,
        sampler: SamplerConfig { temperature: params.temperature, top_k: 0, top_p: 1.0, seed: params.seed },
        stop: Vec::new(),
    };
    Ok(Ok((
        Setup {
            model_path: resolved.path.display().to_string(),
            model_sha256,
            prompt,
            options,
            target,
            device: (kind_name, reason),
            admission,
        },
        file,
    )))
}

fn start_arm(params: &Params, setup: &Setup, file: &gguf::Gguf, config: &ReplayConfig) -> Result<Arm> {
    match params.process {
        Process::Resident => {
            let (device, _) = select_for_model(DeviceKind::from_str(&setup.device.0)?, Some(setup.target))?;
            let session =
                Session::with_admission(device, file, params.context, config.clone(), setup.admission.clone())?;
            Ok(Arm::Resident(Box::new(session)))
        }
        Process::Fresh => Ok(Arm::Fresh(Worker::spawn(&super::worker::command_line(params, setup, config))?)),
    }
}

fn progress(name: &str, row: &PhaseRow, status: &str) {
    match (&row.record.tok_s, &row.record.error) {
        (_, Some(error)) => eprintln!("bench: {name} row {} ({}) failed: {error}", row.index, row.phase),
        (Some(tok_s), None) => eprintln!("bench: {name} row {} ({}) {tok_s:.2} tok/s {status}", row.index, row.phase),
        (None, None) => eprintln!("bench: {name} row {} ({}) no decode forwards {status}", row.index, row.phase),
    }
}

fn gate_text(status: &GateStatus) -> String {
    match status {
        GateStatus::Settling { detail } => format!("[gate settling: {detail}]"),
        GateStatus::Confirming { settled_start, settled_end } => {
            format!("[gate confirming window {settled_start}..{settled_end}]")
        }
        GateStatus::Passed { .. } => "[gate passed]".to_owned(),
        GateStatus::GaveUp { detail } => format!("[gate gave up: {detail}]"),
    }
}

fn run_arms(params: &Params, setup: &Setup, arms: Vec<(&'static str, ReplayConfig, Arm)>) -> Result<Vec<ArmRun>> {
    let mut sessions = Vec::new();
    let mut runs = Vec::new();
    for (name, config, mut arm) in arms {
        let mut rows = Vec::new();
        for index in 0..params.warmup {
            let row = PhaseRow { index, phase: "warmup", record: arm.row(&setup.prompt, &setup.options)? };
            progress(name, &row, "");
            rows.push(row);
        }
        let gate_first_row = rows.len();
        let mut gate = Gate::new(params.gate())?;
        while !gate.status().is_final() {
            let record = arm.row(&setup.prompt, &setup.options)?;
            // A failed row has no speed: the gate sees 0 and cannot settle on it.
            gate.push(record.tok_s.unwrap_or(0.0));
            let row = PhaseRow { index: rows.len(), phase: "gate", record };
            progress(name, &row, &gate_text(gate.status()));
            rows.push(row);
        }
        let lifecycle_proof = arm.proof()?;
        runs.push(ArmRun {
            name,
            config,
            rows,
            gate: gate.status().clone(),
            gate_first_row,
            lifecycle_proof,
            timed_proof: Value::Null,
            admission: setup.admission.clone(),
        });
        sessions.push(arm);
    }
    if let Some(fault) = &params.inject_fault {
        eprintln!("bench: injecting {fault} into the auto arm");
        sessions[1].inject(fault)?;
    }
    for which in super::Order::schedule(params.order, params.runs) {
        let record = sessions[which].row(&setup.prompt, &setup.options)?;
        let run = &mut runs[which];
        let row = PhaseRow { index: run.rows.len(), phase: "timed", record };
        progress(run.name, &row, "");
        run.rows.push(row);
    }
    for (run, arm) in runs.iter_mut().zip(&mut sessions) {
        run.timed_proof = arm.proof()?;
    }
    Ok(runs)
}
