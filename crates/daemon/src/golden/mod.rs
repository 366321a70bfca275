//! `redline golden`: reproduce the sealed fixtures of `registry/fixtures.json`, or seal one.

pub mod registry;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::bench::{self, Params};
use crate::exit::InvalidInput as _;
use registry::{Fixture, FixtureBench, FixtureModel, FixtureSubmission, FixtureTape, Floors, Registry, Sealed};

/// Reproduce the sealed fixtures (registry/fixtures.json), or seal one.
///
/// Reruns the bench of every sealed fixture (or `--id`) and fails, naming the fixture and
/// field, on identity drift, a result under its floor or an invalid bench. With `--seal ID`,
/// runs the bench with the given parameters instead and writes the fixture row from that run.
/// Exit codes: 0 every fixture reproduced (or sealed), 1 a fixture failed, 2 usage or I/O error.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Check only this fixture.
    #[arg(long)]
    pub id: Option<String>,
    /// The fixture registry [default: the one built into the binary; for --seal,
    /// registry/fixtures.json].
    #[arg(long)]
    pub registry: Option<PathBuf>,
    /// Seal (write or replace) the fixture with this id from a run of the bench parameters.
    #[arg(long)]
    pub seal: Option<String>,
    /// When sealing: the retained tok/s floor as a fraction of the measured median.
    #[arg(long, default_value_t = 0.25)]
    pub floor_tok_s_fraction: f64,
    /// When sealing: the ratio floor as a fraction of the measured ratio.
    #[arg(long, default_value_t = 0.75)]
    pub floor_ratio_fraction: f64,
    /// Bench parameters: `--model` (default: each fixture's own alias) and `--device` apply to
    /// checks too; the rest only to --seal.
    #[command(flatten)]
    pub params: Params,
}

/// Runs `redline golden`.
///
/// # Errors
/// Usage and I/O errors (exit 2).
pub fn run(args: &Args) -> Result<ExitCode> {
    if let Some(id) = &args.seal {
        return seal(args, id);
    }
    let text = match &args.registry {
        Some(path) => infile::read_to_string(path, crate::admit::REGISTRY_LIMIT)?,
        None => crate::admit::EMBEDDED_FIXTURES.to_owned(),
    };
    let registry = Registry::parse(&text)
        .with_context(|| {
            args.registry.as_ref().map_or_else(|| "the embedded registry".to_owned(), |p| p.display().to_string())
        })
        .invalid()?;
    let fixtures: Vec<&Fixture> = match &args.id {
        Some(id) => vec![registry.get(id).with_context(|| format!("--id {id}: no such fixture"))?],
        None => registry.fixtures.iter().collect(),
    };
    if fixtures.is_empty() {
        bail!("the registry has no fixtures");
    }
    let mut failed = 0;
    for fixture in fixtures {
        match check(fixture, &args.params)? {
            Ok(summary) => eprintln!("golden: {}: ok ({summary})", fixture.id),
            Err(problems) => {
                failed += 1;
                for problem in problems {
                    eprintln!("golden: {}: FAIL {problem}", fixture.id);
                }
            }
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Compares a sealed value with a measured one.
fn field(problems: &mut Vec<String>, name: &str, sealed: impl ToString, measured: &Value) {
    let sealed = sealed.to_string();
    let measured_text = measured.as_str().map_or_else(|| measured.to_string(), str::to_owned);
    if sealed != measured_text {
        problems.push(format!("{name}: sealed {sealed}, measured {measured_text}"));
    }
}

/// Reruns one fixture: `Ok(summary)` or the problems, each naming the field.
fn check(fixture: &Fixture, base: &Params) -> Result<Result<String, Vec<String>>> {
    // Without --model, each fixture runs its own catalogue alias.
    let model = if base.model.model == model_files::DEFAULT_ALIAS { &fixture.model.alias } else { &base.model.model };
    let params = fixture.bench.params(model, &base.model.device.name, &fixture.arch);
    let outcome = match bench::run::execute(&params)? {
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
    Ok(if problems.is_empty() { Ok(format!("auto {tok_s:.2} tok/s, ratio {ratio:.3}")) } else { Err(problems) })
}

fn u(v: &Value, what: &str) -> Result<u64> {
    v.as_u64().with_context(|| format!("the sealing run has no {what}"))
}

/// Runs the bench with `args.params` and writes the fixture `id` into the registry file.
fn seal(args: &Args, id: &str) -> Result<ExitCode> {
    let path = args.registry.clone().unwrap_or_else(|| PathBuf::from("registry/fixtures.json"));
    let mut registry = read_or_empty(&path)?;
    let outcome = match bench::run::execute(&args.params)? {
        Ok(outcome) => outcome,
        Err(message) => bail!("sealing {id}: {message}"),
    };
    let r = &outcome.report;
    if !outcome.valid() {
        eprintln!("redline: sealing {id}: the bench is invalid: {}", r["invalid_reasons"]);
        return Ok(ExitCode::from(1));
    }
    let sha256 = r["model"]["sha256"].as_str().unwrap_or_default().to_owned();
    let alias = model_files::CATALOGUE
        .iter()
        .find(|e| e.gguf_sha256 == sha256)
        .with_context(|| format!("sealing {id}: the model (sha256 {sha256}) is not a catalogue model"))?
        .alias;
    let retained = r["arms"]["auto"]["tok_s"]["median"].as_f64().context("no retained median")?;
    let ordinary = r["arms"]["hip"]["tok_s"]["median"].as_f64().context("no ordinary median")?;
    let ratio = r["ratio_retained_over_ordinary_tok_s"].as_f64().context("no ratio")?;
    let (ft, fr) = (args.floor_tok_s_fraction, args.floor_ratio_fraction);
    let fixture = Fixture {
        id: id.to_owned(),
        model: FixtureModel { alias: alias.to_owned(), sha256 },
        arch: r["device"]["arch"].as_str().unwrap_or_default().to_owned(),
        device_kind: r["device"]["kind"].as_str().unwrap_or_default().to_owned(),
        bench: FixtureBench::of(&args.params),
        tape: FixtureTape {
            dispatch_count: u(&r["tape"]["dispatch_count"], "tape")?,
            unique_kernels: u(&r["tape"]["unique_kernels"], "tape")?,
            external_launches: u(&r["tape"]["external_launches"], "tape")?,
            sequence_hash: r["tape"]["sequence_hash"].as_str().context("no sequence hash")?.to_owned(),
        },
        submission: FixtureSubmission {
            transport: r["submission"]["transport"].as_str().context("no submission")?.to_owned(),
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
        },
    };
    match registry.fixtures.iter_mut().find(|f| f.id == id) {
        Some(row) => *row = fixture,
        None => registry.fixtures.push(fixture),
    }
    std::fs::write(&path, serde_json::to_string_pretty(&registry)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("golden: sealed {id} into {} ({retained:.2} tok/s, ratio {ratio:.3})", path.display());
    Ok(ExitCode::SUCCESS)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn read_or_empty(path: &Path) -> Result<Registry> {
    if !path.exists() {
        return Ok(Registry { about: String::new(), fixtures: Vec::new() });
    }
    let text = infile::read_to_string(path, crate::admit::REGISTRY_LIMIT)?;
    Registry::parse(&text).with_context(|| format!("{}", path.display())).invalid()
}
