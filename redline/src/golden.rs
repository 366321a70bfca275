//! `redline golden`: the flags and the lines it prints; checking and sealing fixtures is
//! `engine::golden`, run on the devices `select` opens.

use std::path::PathBuf;

use infile::{escape, escape_lines};
use std::process::ExitCode;

use anyhow::Result;
use engine::golden::{self, FloorFractions, Sealing};

use crate::bench::ParamsArgs;
use crate::select::Backends;

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
    /// When sealing: also write the sealing run's whole bench report (the schema of
    /// `docs/bench-report.schema.json`) to this file, the evidence the row and its promotion
    /// verdict come from (the registry keeps them under `registry/reports/`).
    #[arg(long, requires = "seal")]
    pub report: Option<PathBuf>,
    /// Bench parameters: `--model` (default: each fixture's own alias) and `--device` apply to
    /// checks too; the rest only to --seal.
    #[command(flatten)]
    pub params: ParamsArgs,
}

/// Runs `redline golden`.
///
/// # Errors
/// Usage and I/O errors (exit 2); a registry that does not parse (exit 1).
pub fn run(args: &Args) -> Result<ExitCode> {
    let params = args.params.to_params();
    if let Some(id) = &args.seal {
        let floors = FloorFractions { tok_s: args.floor_tok_s_fraction, ratio: args.floor_ratio_fraction };
        return Ok(
            match golden::seal(&params, id, args.registry.as_deref(), args.report.as_deref(), floors, &Backends)? {
                Sealing::Sealed { path, retained_tok_s, ratio, promotion } => {
                    eprintln!(
                        "golden: sealed {} into {} ({retained_tok_s:.2} tok/s, ratio {ratio:.3}; promotion rule {}: {}, {})",
                        escape(id),
                        infile::EscapedPath(&path),
                        escape(&promotion.rule),
                        promotion.disposition,
                        escape(&promotion.reason)
                    );
                    ExitCode::SUCCESS
                }
                Sealing::Invalid(reasons) => {
                    eprintln!(
                        "redline: sealing {}: the bench is invalid: {}",
                        escape(id),
                        escape_lines(&reasons.to_string())
                    );
                    ExitCode::from(1)
                }
            },
        );
    }
    let registry = golden::read_registry(args.registry.as_deref())?;
    let mut failed = 0;
    for fixture in golden::selected(&registry, args.id.as_deref())? {
        match golden::check(fixture, &params, &Backends)? {
            Ok(summary) => eprintln!("golden: {}: ok ({})", escape(&fixture.id), escape_lines(&summary.to_string())),
            Err(problems) => {
                failed += 1;
                for problem in problems {
                    eprintln!("golden: {}: FAIL {}", escape(&fixture.id), escape_lines(&problem.to_string()));
                }
            }
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
