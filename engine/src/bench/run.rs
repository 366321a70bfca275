//! The bench's orchestration: set up both arms, warm up, settle, time, collect proofs.

use std::path::Path;
use std::str::FromStr as _;

use gguf::Gguf;
use hal::Device as _;
use pm4_encoding::Target;
use serde_json::Value;
use tokenizer::SamplerConfig;

use super::arm::{Arm, Worker};
use super::device::Devices;
use super::error::{BenchError, Unrunnable, chain};
use super::outcome::{ARMS, ArmRun, Destination, Outcome, PhaseRow, Setup};
use super::params::{Params, Process};
use super::plot::PlotData;
use super::{identity, report, time, worker};
use crate::admission::load as admissions;
use crate::admission::model::{Setting, decide};
use crate::model::{GenerateOptions, Session, tokenizer_from_gguf};
use crate::replay::{ConfigFlags, ReplayConfig};
use crate::stationarity::{Gate, GateStatus};

pub(crate) fn config(backend: &str, transport: &str) -> Result<ReplayConfig, BenchError> {
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
pub fn validate(params: &Params) -> Result<(), BenchError> {
    let usage = |message: String| Err(BenchError::Usage(message));
    params.gate().validate().map_err(BenchError::GateSettings)?;
    if params.tokens == 0 {
        return usage("--tokens 0: at least 1".to_owned());
    }
    if params.runs == 0 {
        return usage("--runs 0: at least 1".to_owned());
    }
    if !["auto", "shadow"].contains(&params.retained_backend.as_str()) {
        return usage(format!("--retained-backend {:?}: accepted values: auto, shadow", params.retained_backend));
    }
    if !["pm4", "aql"].contains(&params.transport.as_str()) {
        return usage(format!("--transport {:?}: accepted values: pm4, aql", params.transport));
    }
    if !(params.temperature.is_finite() && params.temperature >= 0.0) {
        return usage(format!("--temperature {}: a finite value ≥ 0", params.temperature));
    }
    Ok(())
}

/// Runs the bench on `devices` without a report file. The outer error is a usage or I/O error;
/// the inner one a model or device that could not run.
///
/// # Errors
/// As above.
pub fn execute<D: Devices>(params: &Params, devices: &D) -> Result<Result<Outcome, Unrunnable>, BenchError> {
    let utc = time::utc_now();
    execute_to(params, devices, Destination { utc: &utc, report: None, plot: None })
}

/// Runs the bench that started at `to.utc` and writes its declaration to `to.report` before the
/// first timed row (the caller writes the final report there). Errors as [`execute`].
///
/// # Errors
/// As [`execute`].
pub fn execute_to<D: Devices>(
    params: &Params,
    devices: &D,
    to: Destination<'_>,
) -> Result<Result<Outcome, Unrunnable>, BenchError> {
    validate(params)?;
    let utc = to.utc.to_owned();
    let (setup, file) = match prepare(params, devices)? {
        Ok(prepared) => prepared,
        Err(message) => return Ok(Err(message)),
    };
    eprintln!("bench: device {}", setup.device.1);
    let configs = [config("hip", &params.transport)?, config(&params.retained_backend, &params.transport)?];
    let mut arms = Vec::with_capacity(2);
    for (name, config) in ARMS.into_iter().zip(configs) {
        let arm = match start_arm(params, devices, &setup, &file, &config) {
            Ok(arm) => arm,
            Err(error) => return Ok(Err(Unrunnable(format!("{name} arm: {}", arm_failure(&error))))),
        };
        arms.push((name, config, arm));
    }
    let mut declaration = report::declaration(params, to);
    let runs = run_arms(params, &setup, arms, || declare(&mut declaration, to.report))?;
    let report = report::build(params, &setup, &report::Context { utc: &utc, to, declaration: &declaration }, &runs);
    let plot = PlotData { arms: runs.iter().map(ArmRun::plot).collect() };
    Ok(Ok(Outcome { utc, report, plot }))
}

/// Prints the predeclared promotion rule and writes it to the report file, before the first
/// timed row.
fn declare(declaration: &mut Value, report: Option<&Path>) -> Result<(), BenchError> {
    report::declare_now(declaration);
    eprintln!("bench: promotion rule (declared before the timed rows): {}", declaration["rule"].as_str().unwrap_or(""));
    if let Some(path) = report {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| BenchError::File {
                what: "creating",
                path: dir.to_owned(),
                source,
            })?;
        }
        let stub = serde_json::json!({"status": "running: timed rows not finished", "promotion": declaration});
        std::fs::write(path, serde_json::to_string_pretty(&stub)? + "\n").map_err(|source| BenchError::File {
            what: "writing",
            path: path.to_owned(),
            source,
        })?;
    }
    Ok(())
}

/// Resolves the model, tokenizes the prompt, selects the device and decides admission.
fn prepare<D: Devices>(params: &Params, devices: &D) -> Result<Result<(Setup, Gguf), Unrunnable>, BenchError> {
    devices.check(&params.device).map_err(|e| BenchError::Usage(format!("--device: {e}")))?;
    let target = Target::from_str(&params.arch).map_err(|e| BenchError::Usage(format!("--arch: {e}")))?;
    let resolved = model_files::resolve_model(&params.model, true)
        .map_err(|source| BenchError::Model { model: params.model.clone(), source: Box::new(source) })?;
    let file =
        Gguf::open(&resolved.path).map_err(|source| BenchError::Read { path: resolved.path.clone().into(), source })?;
    // The digest of exactly the bytes parsed, which admission and the report name.
    let model_sha256 = crate::model::snapshot_digest(&resolved, &file)?;
    let tokenizer = tokenizer_from_gguf(&file)?;
    let prompt = tokenizer.encode_special(params.prompt_text(), true, false);
    if prompt.is_empty() {
        return Err(BenchError::Usage("--prompt: encodes to no tokens".to_owned()));
    }
    let needed = prompt.len() as u64 + u64::from(params.tokens) + 1;
    if needed > u64::from(params.context) {
        return Err(BenchError::Usage(format!(
            "--context {}: {} prompt tokens + {} tokens + 1 do not fit",
            params.context,
            prompt.len(),
            params.tokens
        )));
    }
    // The arms open their own devices; this one says which device and why, and is the one
    // admission reads (its architecture and topology).
    let registry = admissions::load(None)?;
    let transport = config("hip", &params.transport)?.transport;
    let (kind_name, target, reason, device_record, admission) = match devices.open(&params.device, target) {
        Ok((device, reason)) => {
            let kind = devices.kind(&device);
            let setting = Setting { kind, context: params.context, transport };
            let admission = decide(&registry, &file, &model_sha256, &device, setting);
            (kind.to_owned(), device.target(), reason, devices.describe(&device), admission)
        }
        Err(error) => return Ok(Err(Unrunnable(error.to_string()))),
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
            model_record: identity::model(&resolved.path, &file),
            kv_cache: identity::kv_cache(&file, params.context),
        },
        file,
    )))
}

/// Why an arm could not start: its device, its session or its worker process.
#[derive(Debug, thiserror::Error)]
enum StartError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Open(E),
    #[error(transparent)]
    Session(Box<crate::model::SessionError>),
    #[error(transparent)]
    Worker(#[from] super::error::WorkerError),
}

/// An arm's one-line failure: the error and its sources.
fn arm_failure<E: std::error::Error + 'static>(error: &StartError<E>) -> String {
    chain(error)
}

fn start_arm<D: Devices>(
    params: &Params,
    devices: &D,
    setup: &Setup,
    file: &Gguf,
    config: &ReplayConfig,
) -> Result<Arm<D::Device>, StartError<D::Error>> {
    match params.process {
        Process::Resident => {
            let (device, _) = devices.open(&setup.device.0, setup.target).map_err(StartError::Open)?;
            let session =
                Session::with_admission(device, file, params.context, config.clone(), setup.admission.clone())
                    .map_err(|e| StartError::Session(Box::new(e)))?;
            Ok(Arm::Resident(Box::new(session)))
        }
        Process::Fresh => Ok(Arm::Fresh(Worker::spawn(&worker::command_line(params, setup, config))?)),
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

fn run_arms<D: hal::Device + hal::FaultInjection>(
    params: &Params,
    setup: &Setup,
    arms: Vec<(&'static str, ReplayConfig, Arm<D>)>,
    declare: impl FnOnce() -> Result<(), BenchError>,
) -> Result<Vec<ArmRun>, BenchError> {
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
        let mut gate = Gate::new(params.gate()).map_err(BenchError::Gate)?;
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
    for which in params.order.schedule(params.runs) {
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
