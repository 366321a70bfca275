//! `redline census`: a tape reconciled against an independent kernel trace of ordinary forwards
//! (capture completeness, gate 2): rocprofv3's `kernel_trace.csv` on a GPU, or the one the soft
//! device and the soft HSA runtime write when `REDLINE_KERNEL_TRACE` asks (`tape_core::census`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use infile::{EscapedPath, Limit, escape, escape_lines};
use tape_core::census::{Census, Verdict, census, trace};
use tape_core::show::load;

/// The largest kernel trace read: 1 GiB (a rocprofv3 row is about 200 bytes, so some five
/// million dispatches; the parser also stops at `tape_core::census::trace::TRACE_ROWS_MAX` rows).
pub const TRACE_FILE_LIMIT: Limit = Limit::new("kernel trace", infile::mib(1024));

/// Reconcile a tape with a kernel trace of ordinary forwards: capture completeness (gate 2).
///
/// The trace is rocprofv3's `kernel_trace.csv` (`rocprofv3 --kernel-trace --output-format csv --
/// redline generate --replay-backend hip ...` on a GPU), or the one the soft device and the soft
/// HSA runtime write for every kernel dispatch their packet processors run when the environment
/// variable REDLINE_KERNEL_TRACE names a file or a directory (`<pid>_kernel_trace.csv` in it, as
/// rocprofv3 names it). It is split into forwards before each dispatch of the tape's first kernel
/// (dispatches before the first are the preamble, reported and not reconciled); the first forward
/// ran at --first-position, each later one at the next position. At each position the tape's
/// launches (each grid binding evaluated there) must be the forward's dispatches plus the
/// launches the tape names as external, kernel by kernel (symbol, grid, work-group, LDS) and in
/// order: compute launches = retained dispatches + external launches.
///
/// The tape is a tape file (`tape show` reads the same; `redline lower --model ... --out DIR`
/// writes DIR/tape.json). A trace of `redline generate --prefill-chunk 1` holds one forward per
/// prompt token from position 0, each the decode step the tape records.
///
/// Exit codes: 0 every position reconciled; 1 gate 2 fails (the first launch that differs is
/// named) or a file is invalid (the trace's line, column and value; the tape's field); 2 usage or
/// I/O.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The tape file (JSON or binary).
    #[arg(long)]
    pub tape: PathBuf,
    /// The kernel trace (rocprofv3's kernel_trace.csv).
    #[arg(long)]
    pub trace: PathBuf,
    /// The position of the trace's first forward.
    #[arg(long, default_value_t = 0)]
    pub first_position: u32,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `redline census`.
///
/// # Errors
/// I/O errors (exit 2).
pub fn run(args: &Args) -> Result<ExitCode> {
    let tape_bytes = crate::tape::read(&args.tape)?;
    let tape = match load(&tape_bytes) {
        Ok(tape) => tape,
        Err(e) => return invalid(&args.tape, &e.to_string()),
    };
    let text = infile::read(&args.trace, TRACE_FILE_LIMIT)?;
    let Ok(text) = String::from_utf8(text) else {
        return invalid(&args.trace, "not UTF-8 text");
    };
    let rows = match trace::parse(&text) {
        Ok(rows) => rows,
        Err(e) => return invalid(&args.trace, &e.to_string()),
    };
    let result = match census(&tape, &rows, args.first_position) {
        Ok(result) => result,
        Err(e) => return invalid(&args.trace, &e.to_string()),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let mut doc = serde_json::to_value(&result)?;
        doc["reconciled"] = serde_json::json!(result.first_mismatch().is_none());
        doc["tape"] = serde_json::to_value(tape.identity())?;
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(escape_lines(&report(&result)).as_bytes())?;
    }
    match result.first_mismatch() {
        None => Ok(ExitCode::SUCCESS),
        Some(p) => {
            eprintln!(
                "redline: census: gate 2 (capture completeness) fails at position {}: {}",
                p.position,
                escape_lines(&verdict(&p.verdict))
            );
            Ok(ExitCode::from(1))
        }
    }
}

fn invalid(path: &std::path::Path, message: &str) -> Result<ExitCode> {
    eprintln!("redline: census: {}: {}", EscapedPath(path), escape_lines(message));
    Ok(ExitCode::from(1))
}

/// A verdict in words.
fn verdict(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Reconciled => "reconciled".to_owned(),
        Verdict::Differs { difference } => difference.to_string(),
        Verdict::ExternalMissing { missing } => {
            format!("{} external launch(es) of {} missing", missing.missing, escape(&missing.name))
        }
        Verdict::NotCertified { reason } => format!("not certified: {reason}"),
    }
}

/// The text report: the anchor and preamble, then one line per position.
fn report(result: &Census) -> String {
    let mut text = format!(
        "split before each dispatch of {}; {} dispatch(es) before the first are the preamble\n",
        result.anchor, result.preamble_launches
    );
    for p in &result.positions {
        text.push_str(&format!(
            "position {}: {} compute launches = {} retained + {} external: {}\n",
            p.position,
            p.compute_launches,
            p.retained_dispatches,
            p.external_launches,
            verdict(&p.verdict)
        ));
    }
    let certified = result.certified();
    let failed = result
        .positions
        .iter()
        .filter(|p| !p.reconciled() && !matches!(p.verdict, Verdict::NotCertified { .. }))
        .count();
    text.push_str(&format!(
        "{} position(s): {certified} certified, {} reconciled, {failed} not\n",
        result.positions.len(),
        certified - failed
    ));
    text
}
