//! The sealed fixtures of `registry/fixtures.json` (`redline golden`): each reproduced by a
//! bench run and compared field by field, or one sealed from a run.

pub mod registry;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::admission::load::{EMBEDDED_FIXTURES, REGISTRY_LIMIT};
use crate::bench::{self, BenchError, Devices, Params};
use registry::{
    Fixture, FixtureBench, FixtureModel, FixtureSubmission, FixtureTape, Floors, Registry, RegistryError, Sealed,
    SealedPromotion,
};

/// Why fixtures could not be checked or sealed.
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    /// The registry file could not be read, or is over its limit.
    #[error(transparent)]
    Read(infile::ReadError),
    /// The registry is not a fixture registry: which one, and why.
    #[error("{what}")]
    Parse {
        /// The file, or "the embedded registry".
        what: String,
        /// Why.
        source: RegistryError,
    },
    /// `--id` names no fixture, the registry has none, or a sealing run lacks a value: the
    /// message.
    #[error("{0}")]
    Usage(String),
    /// The bench could not run (boxed: the error is large).
    #[error(transparent)]
    Bench(Box<BenchError>),
    /// The registry does not serialize.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Writing the registry file.
    #[error("writing {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl GoldenError {
    /// Whether the registry given is at fault (it does not parse, or its file is over the
    /// limit).
    #[must_use]
    pub fn is_invalid_input(&self) -> bool {
        match self {
            Self::Parse { .. } => true,
            Self::Read(error) => error.is_invalid_input(),
            Self::Usage(_) | Self::Bench(_) | Self::Json(_) | Self::Write { .. } => false,
        }
    }
}

impl From<BenchError> for GoldenError {
    fn from(error: BenchError) -> Self {
        Self::Bench(Box::new(error))
    }
}

/// The fixture registry to check: `path`, or the one built into the program.
///
/// # Errors
/// [`GoldenError::Read`], or [`GoldenError::Parse`] naming the file (or the embedded registry).
pub fn read_registry(path: Option<&Path>) -> Result<Registry, GoldenError> {
    let text = match path {
        Some(path) => infile::read_to_string(path, REGISTRY_LIMIT).map_err(GoldenError::Read)?,
        None => EMBEDDED_FIXTURES.to_owned(),
    };
    Registry::parse(&text).map_err(|source| GoldenError::Parse {
        what: path.map_or_else(|| "the embedded registry".to_owned(), |p| p.display().to_string()),
        source,
    })
}

/// The fixtures to check: the one `id` names, or every one.
///
/// # Errors
/// [`GoldenError::Usage`]: no such fixture, or none at all.
pub fn selected<'a>(registry: &'a Registry, id: Option<&str>) -> Result<Vec<&'a Fixture>, GoldenError> {
    let fixtures: Vec<&Fixture> = match id {
        Some(id) => vec![registry.get(id).ok_or_else(|| GoldenError::Usage(format!("--id {id}: no such fixture")))?],
        None => registry.fixtures.iter().collect(),
    };
    if fixtures.is_empty() {
        return Err(GoldenError::Usage("the registry has no fixtures".to_owned()));
    }
    Ok(fixtures)
}

/// Compares a sealed value with a measured one.
fn field(problems: &mut Vec<String>, name: &str, sealed: impl ToString, measured: &Value) {
    let sealed = sealed.to_string();
    let measured_text = measured.as_str().map_or_else(|| measured.to_string(), str::to_owned);
    if sealed != measured_text {
        problems.push(format!("{name}: sealed {sealed}, measured {measured_text}"));
    }
}

/// Reruns one fixture on `devices` with the model and device of `base` (its own catalogue
/// alias when `base` names the default one): `Ok(summary)` or the problems, each naming the
/// field.
///
/// # Errors
/// [`BenchError`]: the bench could not run for a reason of this machine.
pub fn check<D: Devices>(
    fixture: &Fixture,
    base: &Params,
    devices: &D,
) -> Result<Result<String, Vec<String>>, BenchError> {
    // Without --model, each fixture runs its own catalogue alias.
    let model = if base.model == model_files::DEFAULT_ALIAS { &fixture.model.alias } else { &base.model };
    let params = fixture.bench.params(model, &base.device, &fixture.arch);
    let outcome = match bench::execute(&params, devices)? {
        Ok(outcome) => outcome,
        Err(message) => return Ok(Err(vec![format!("bench: {message}")])),
    };
    let r = &outcome.report;
    let mut problems = Vec::new();
    field(&mut problems, "model.sha256", &fixture.model.sha256, &r["model"]["sha256"]);
    field(&mut problems, "device_kind", &fixture.device_kind, &r["device"]["kind"]);
    let t = &fixture.tape;
    field(&mut problems, "tape.dispatch_count", t.dispatch_count, &r["tape"]["dispatch_count"]);
    field(&mut problems, "tape.unique_kernels", t.unique_kernels, &r["tape"]["unique_kernels"]);
    field(&mut problems, "tape.external_launches", t.external_launches, &r["tape"]["external_launches"]);
    field(&mut problems, "tape.sequence_hash", &t.sequence_hash, &r["tape"]["sequence_hash"]);
    let s = &fixture.submission;
    field(&mut problems, "submission.transport", &s.transport, &r["submission"]["transport"]);
    field(&mut problems, "submission.dispatches", s.dispatches, &r["submission"]["dispatches"]);
    field(&mut problems, "submission.packets", s.packets, &r["submission"]["packets"]);
    field(&mut problems, "submission.queues", s.queues, &r["submission"]["queues"]);
    field(&mut problems, "submission.phases", s.phases, &r["submission"]["phases"]);
    field(&mut problems, "submission.pm4_dwords", s.pm4_dwords, &r["submission"]["pm4_dwords"]);
    if !outcome.valid() {
        problems.push(format!("bench invalid: {}", r["invalid_reasons"]));
    }
    let tok_s = r["arms"]["auto"]["tok_s"]["median"].as_f64().unwrap_or(0.0);
    let ratio = r["ratio_retained_over_ordinary_tok_s"].as_f64().unwrap_or(0.0);
    if tok_s < fixture.floors.min_retained_tok_s {
        problems.push(format!(
            "floors.min_retained_tok_s: measured {tok_s:.3} < floor {}",
            fixture.floors.min_retained_tok_s
        ));
    }
    if ratio < fixture.floors.min_ratio {
        problems.push(format!("floors.min_ratio: measured {ratio:.3} < floor {}", fixture.floors.min_ratio));
    }
    let census = census_summary(&r["census"]);
    Ok(if problems.is_empty() {
        Ok(format!("auto {tok_s:.2} tok/s, ratio {ratio:.3}, {census}"))
    } else {
        Err(problems)
    })
}

/// The report's census (gate 2) in a line: each recorded position with its verdict and
/// `compute launches = retained + external`.
fn census_summary(census: &Value) -> String {
    let Some(positions) = census["positions"].as_array() else { return "no census".to_owned() };
    if positions.is_empty() {
        return format!("census: {}", census["trace"].as_str().unwrap_or("none"));
    }
    let shown: Vec<String> = positions
        .iter()
        .map(|p| {
            format!(
                "position {} {} ({} = {} + {})",
                p["position"],
                p["verdict"].as_str().unwrap_or("?"),
                p["compute_launches"],
                p["retained_dispatches"],
                p["external_launches"]
            )
        })
        .collect();
    format!("census: {}", shown.join(", "))
}

fn u(v: &Value, what: &str) -> Result<u64, GoldenError> {
    v.as_u64().ok_or_else(|| GoldenError::Usage(format!("the sealing run has no {what}")))
}

/// A value a sealing run must have, or the message naming it.
fn needed<T>(value: Option<T>, message: &str) -> Result<T, GoldenError> {
    value.ok_or_else(|| GoldenError::Usage(message.to_owned()))
}

/// How sealing ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Sealing {
    /// The fixture was written into the registry file.
    Sealed {
        /// The registry file.
        path: PathBuf,
        /// The measured median retained tok/s.
        retained_tok_s: f64,
        /// The measured ratio.
        ratio: f64,
        /// The declared promotion rule and its disposition.
        promotion: SealedPromotion,
    },
    /// The bench was invalid: the report's `invalid_reasons`.
    Invalid(Value),
}

/// The floors of a sealed fixture, as fractions of what the sealing run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloorFractions {
    /// The retained tok/s floor, a fraction of the measured median.
    pub tok_s: f64,
    /// The ratio floor, a fraction of the measured ratio.
    pub ratio: f64,
}

/// The alias of the catalogue model or the built-in model whose file has the SHA-256 `sha256`
/// (lower-case hex).
fn model_alias(sha256: &str) -> Option<&'static str> {
    if let Some(entry) = model_files::CATALOGUE.iter().find(|e| e.gguf_sha256 == sha256) {
        return Some(entry.alias);
    }
    model_files::catalogue::BUILTINS
        .iter()
        .find(|b| model_files::digest::hex(&<sha2::Sha256 as sha2::Digest>::digest((b.bytes)())) == sha256)
        .map(|b| b.alias)
}

/// Runs the bench with `params` on `devices` and writes the fixture `id` into the registry file
/// (`registry`, default `registry/fixtures.json`), replacing a fixture of that id; with
/// `report`, the run's bench report (valid or not) to that file as well.
///
/// # Errors
/// [`GoldenError`]: the registry file, a bench that could not run, a run without a value a row
/// needs, a model neither in the catalogue nor built in.
pub fn seal<D: Devices>(
    params: &Params,
    id: &str,
    registry: Option<&Path>,
    report: Option<&Path>,
    floors: FloorFractions,
    devices: &D,
) -> Result<Sealing, GoldenError> {
    let path = registry.map_or_else(|| PathBuf::from("registry/fixtures.json"), Path::to_path_buf);
    let mut registry = read_or_empty(&path)?;
    let outcome = match bench::execute(params, devices)? {
        Ok(outcome) => outcome,
        Err(message) => return Err(GoldenError::Usage(format!("sealing {id}: {message}"))),
    };
    let r = &outcome.report;
    if let Some(file) = report {
        std::fs::write(file, serde_json::to_string_pretty(r)? + "\n")
            .map_err(|source| GoldenError::Write { path: file.to_path_buf(), source })?;
    }
    if !outcome.valid() {
        return Ok(Sealing::Invalid(r["invalid_reasons"].clone()));
    }
    let sha256 = r["model"]["sha256"].as_str().unwrap_or_default().to_owned();
    let alias = model_alias(&sha256).ok_or_else(|| {
        GoldenError::Usage(format!(
            "sealing {id}: the model (sha256 {sha256}) is neither a catalogue nor a built-in model"
        ))
    })?;
    let retained = needed(r["arms"]["auto"]["tok_s"]["median"].as_f64(), "no retained median")?;
    let ordinary = needed(r["arms"]["hip"]["tok_s"]["median"].as_f64(), "no ordinary median")?;
    let ratio = needed(r["ratio_retained_over_ordinary_tok_s"].as_f64(), "no ratio")?;
    let promotion = &r["promotion"];
    let promotion = SealedPromotion {
        rule: needed(promotion["rule"].as_str(), "no promotion rule")?.to_owned(),
        disposition: needed(promotion["disposition"].as_str(), "no promotion disposition")?.to_owned(),
        reason: needed(promotion["reason"].as_str(), "no promotion reason")?.to_owned(),
    };
    let (ft, fr) = (floors.tok_s, floors.ratio);
    let fixture = Fixture {
        id: id.to_owned(),
        model: FixtureModel { alias: alias.to_owned(), sha256 },
        arch: r["device"]["arch"].as_str().unwrap_or_default().to_owned(),
        device_kind: r["device"]["kind"].as_str().unwrap_or_default().to_owned(),
        bench: FixtureBench::of(params),
        tape: FixtureTape {
            dispatch_count: u(&r["tape"]["dispatch_count"], "tape")?,
            unique_kernels: u(&r["tape"]["unique_kernels"], "tape")?,
            external_launches: u(&r["tape"]["external_launches"], "tape")?,
            sequence_hash: needed(r["tape"]["sequence_hash"].as_str(), "no sequence hash")?.to_owned(),
        },
        submission: FixtureSubmission {
            transport: needed(r["submission"]["transport"].as_str(), "no submission")?.to_owned(),
            dispatches: u(&r["submission"]["dispatches"], "submission")?,
            packets: u(&r["submission"]["packets"], "submission")?,
            queues: u(&r["submission"]["queues"], "submission")?,
            phases: u(&r["submission"]["phases"], "submission")?,
            pm4_dwords: u(&r["submission"]["pm4_dwords"], "submission")?,
        },
        floors: Floors {
            min_retained_tok_s: round3(retained * ft),
            min_ratio: round3(ratio * fr),
            note: format!(
                "sealed at {retained:.3} tok/s retained, ratio {ratio:.3}; floors are {ft} x the tok/s and {fr} x the \
                 ratio so that a loaded shared 2-core CI machine passes while a collapse in speed fails; a lost \
                 retained route fails the bench's route gates (see registry/README.md)"
            ),
        },
        sealed: Sealed {
            utc: outcome.utc.clone(),
            commit: r["source"]["commit"]["value"].as_str().unwrap_or("unknown").to_owned(),
            retained_tok_s: round3(retained),
            ordinary_tok_s: round3(ordinary),
            ratio: round3(ratio),
            promotion: Some(promotion.clone()),
        },
    };
    match registry.fixtures.iter_mut().find(|f| f.id == id) {
        Some(row) => *row = fixture,
        None => registry.fixtures.push(fixture),
    }
    std::fs::write(&path, serde_json::to_string_pretty(&registry)? + "\n")
        .map_err(|source| GoldenError::Write { path: path.clone(), source })?;
    Ok(Sealing::Sealed { path, retained_tok_s: retained, ratio, promotion })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn read_or_empty(path: &Path) -> Result<Registry, GoldenError> {
    if !path.exists() {
        return Ok(Registry { about: String::new(), fixtures: Vec::new() });
    }
    let text = infile::read_to_string(path, REGISTRY_LIMIT).map_err(GoldenError::Read)?;
    Registry::parse(&text).map_err(|source| GoldenError::Parse { what: path.display().to_string(), source })
}
