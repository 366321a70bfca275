//! The bench's orchestration: set up both arms, warm up, settle, time, collect proofs.

use std::path::Path;
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
    /// The captured tape's fact after the timed rows ([`super::tape_record::fact`]).
    pub tape: Value,
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
    /// The device's facts.
    pub device_record: super::identity::DeviceRecord,
    /// The model's facts beyond path and digest.
    pub model_record: serde_json::Map<String, Value>,
    /// The KV cache's layout fact.
    pub kv_cache: Value,
}

/// Where the report goes and when the bench started.
#[derive(Clone, Copy, Debug)]
pub struct Destination<'a> {
    /// The start, RFC 3339 UTC.
    pub utc: &'a str,
    /// The report file, which holds the predeclared promotion rule before the first timed row
    /// and the full report at the end (`None`: no file, as for `redline golden`).
    pub report: Option<&'a Path>,
    /// The plot file.
    pub plot: Option<&'a Path>,
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
    // The engine's `shadow` backend is a diagnostic that never routes a forward through its plan;
    // the bench's shadow arm is the retained route validated by the shadow oracle first.
    let validate_first = backend == "shadow";
    let backend = if validate_first { "auto" } else { backend };
    let flags =
        ConfigFlags { backend: Some(backend.to_owned()), transport: Some(transport.to_owned()), manual_capture: None };
    // The arms' settings are the flags', never the environment's: both arms must match.
    Ok(ReplayConfig { validate_first, ..ReplayConfig::resolve(&flags, |_| None)? })
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

/// Runs the bench without a report file. The outer error is a usage or I/O error; the inner
/// one a model or device that could not run.
///
/// # Errors
/// As above.
pub fn execute(params: &Params) -> Result<Result<Outcome, String>> {
    let utc = report::utc_now();
    execute_to(params, Destination { utc: &utc, report: None, plot: None })
}

/// Runs the bench that started at `to.utc` and writes its declaration to `to.report` before the
/// first timed row (the caller writes the final report there). Errors as [`execute`].
///
/// # Errors
/// As [`execute`].
pub fn execute_to(params: &Params, to: Destination<'_>) -> Result<Result<Outcome, String>> {
    validate(params)?;
    let utc = to.utc.to_owned();
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
    let mut declaration = report::declaration(params, to);
    let runs = run_arms(params, &setup, arms, || declare(&mut declaration, to.report))?;
    let report = report::build(params, &setup, &report::Context { utc: &utc, to, declaration: &declaration }, &runs);
    let plot = PlotData { arms: runs.iter().map(PlotArm::of).collect() };
    Ok(Ok(Outcome { utc, report, plot }))
}

/// Prints the predeclared promotion rule and writes it to the report file, before the first
/// timed row.
fn declare(declaration: &mut Value, report: Option<&Path>) -> Result<()> {
    report::declare_now(declaration);
    eprintln!("bench: promotion rule (declared before the timed rows): {}", declaration["rule"].as_str().unwrap_or(""));
    if let Some(path) = report {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let stub = serde_json::json!({"status": "running: timed rows not finished", "promotion": declaration});
        std::fs::write(path, serde_json::to_string_pretty(&stub)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
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
    // The arms open their own devices; this one says which device and why, and is the one
    // admission reads (its architecture and topology).
    let registry = crate::admit::load(None)?;
    let transport = config("hip", &params.transport)?.transport;
    let (kind_name, target, reason, device_record, admission) = match select_for_model(kind, Some(target)) {
        Ok((device, reason)) => {
            let setting = crate::admit::Setting { kind: device.kind().name(), context: params.context, transport };
            let admission = crate::admit::decide(&registry, &file, &model_sha256, &device, setting);
            (device.kind().name().to_owned(), device.target(), reason, super::identity::device(&device), admission)
        }
        Err(error) => return Ok(Err(error.to_string())),
    };
    let options = GenerateOptions {
        max_tokens: params.tokens + 1,
        sampler: SamplerConfig { temperature: params.temperature, top_k: 0, top_p: 1.0, seed: params.seed },
        stop: Vec::new(),
        logits: tokenizer::LogitsConfig::default(),
        top_logprobs: None,
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
            device_record,
            model_record: super::identity::model(&resolved.path, &file),
            kv_cache: super::identity::kv_cache(&file, params.context),
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

fn run_arms(
    params: &Params,
    setup: &Setup,
    arms: Vec<(&'static str, ReplayConfig, Arm)>,
    declare: impl FnOnce() -> Result<()>,
) -> Result<Vec<ArmRun>> {
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
            tape: Value::Null,
            admission: setup.admission.clone(),
        });
        sessions.push(arm);
    }
    if let Some(fault) = &params.inject_fault {
        eprintln!("bench: injecting {fault} into the auto arm");
        sessions[1].inject(fault)?;
    }
    declare()?;
    for which in super::Order::schedule(params.order, params.runs) {
        let record = sessions[which].row(&setup.prompt, &setup.options)?;
        let run = &mut runs[which];
        let row = PhaseRow { index: run.rows.len(), phase: "timed", record };
        progress(run.name, &row, "");
        run.rows.push(row);
    }
    for (run, arm) in runs.iter_mut().zip(&mut sessions) {
        run.timed_proof = arm.proof()?;
        run.tape = arm.tape()?;
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::declare;
    use serde_json::json;

    #[test]
    fn the_declaration_is_stamped_and_written_before_the_timed_rows() {
        let dir = std::env::temp_dir().join(format!("redline-declare-{}", std::process::id()));
        let path = dir.join("nested/report.json");
        let mut declaration = json!({"rule": "gates=pass", "declared_utc": null});
        declare(&mut declaration, Some(&path)).unwrap();
        assert!(declaration["declared_utc"].as_str().unwrap().ends_with('Z'), "{declaration}");
        let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(written["promotion"], declaration);
        assert!(written["status"].as_str().unwrap().starts_with("running"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
