//! `redline profile`: the attribution-only dispatch profiler (`engine::profile`), rendered as
//! text, JSON and an SVG chart.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result};
use engine::profile::report::hex;
use engine::profile::svg::format_ns;
use engine::profile::{self, Instrument, Profile, Request};
use infile::{escape, escape_lines};
use serde_json::json;

use crate::model_args::{ModelDevice, SessionArgs};
use crate::select::select_for_model;

/// Attribute a retained token's device time to its dispatches (attribution only).
///
/// Loads the model on the device, lets the replay controller record, calibrate and prepare its
/// tape the ordinary way until it replays a token (the certified route), then runs an
/// instrumented copy of that tape for --tokens tokens: the same PM4 body with a GPU-clock
/// timestamp (COPY_DATA, GPU clock to memory, 64 bits) before its first dispatch and after every
/// dispatch, each after a wait for that dispatch unless --no-serialize. Span k is the timestamp
/// after dispatch k minus the one before it; the report gives every dispatch's span per token
/// with its kernel, the minimum and median, the kernels and dispatches that take longest, and
/// the spans' sum against the token's device time (first to last timestamp).
///
/// What it does not measure: the certified body itself (the instrumented one has more dwords
/// and another sequence hash; both identities are printed), a kernel alone (each span includes
/// the boundary packets before its dispatch: waits, cache acquires, register writes), or the
/// route (it is not route proof). Afterwards the controller replays the first profiled position
/// itself: its tape identity must be unchanged, its route retained and its logits the
/// instrumented body's, bit for bit.
///
/// On the soft device the clock is the host's monotonic clock in 10 ns ticks, read when the
/// command processor executes the timestamp; on the HSA backend it is the runtime's, at
/// HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY.
///
/// Exit codes: 0 profiled; 1 the model file is invalid, or the route or a token failed; 2 usage
/// or I/O (a --model that is no alias and no file, an unwritable --out or --svg).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model and the device.
    #[command(flatten)]
    pub model: ModelDevice,
    /// KV-cache positions [default: 1024, or the model's trained context when shorter].
    #[arg(long)]
    pub context: Option<u32>,
    /// Tokens the instrumented body runs (spans are reported per token, with min and median).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub tokens: u32,
    /// Take each timestamp after a dispatch without waiting for it: the spans then follow the
    /// command processor, not the dispatches.
    #[arg(long)]
    pub no_serialize: bool,
    /// Print the JSON report (docs/profile-report.schema.json) on standard output instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write an SVG chart (a bar per dispatch, the slowest named) to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// Runs `redline profile`.
///
/// # Errors
/// Usage and I/O errors (exit 2); an invalid model file (exit 1).
pub fn run(args: &Args) -> Result<ExitCode> {
    let kind = args.model.device.kind()?;
    let target = args.model.device.target()?;
    let session = SessionArgs { context: args.context, replay_backend: None, transport: None, admissions: None };
    let opened = session.open_model(&args.model.model)?;
    let path = opened.resolved.path.display().to_string();
    let (mut device, reason) = match select_for_model(kind, Some(target)) {
        Ok(selected) => selected,
        Err(error) => {
            eprintln!("redline: {}", escape_lines(&error.to_string()));
            return Ok(ExitCode::from(1));
        }
    };
    eprintln!("device: {}", escape_lines(&reason));
    let request = Request {
        context: opened.context,
        tokens: args.tokens,
        instrument: Instrument { serialize: !args.no_serialize },
        timeout: Duration::from_secs(600),
    };
    let measured = profile::run(&mut device, &opened.file, &request, &mut |stage| eprintln!("profile: {stage} ..."));
    let measured = match measured {
        Ok(measured) => measured,
        Err(error) => {
            eprintln!("redline: profile: {}: {}", escape(&path), escape_lines(&error.to_string()));
            return Ok(ExitCode::from(1));
        }
    };
    let profile = profile::build(&measured);
    let report = json!({
        "model": {"path": path, "sha256": opened.sha256},
        "device": {"kind": device.kind().name(), "arch": hal::Device::target(&device).name(), "selected": reason},
        "profile": profile,
    });
    let text = serde_json::to_string_pretty(&report)?;
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{text}\n")).with_context(|| format!("writing {}", out.display()))?;
    }
    if let Some(svg) = &args.svg {
        std::fs::write(svg, engine::profile::svg::render(&profile))
            .with_context(|| format!("writing {}", svg.display()))?;
    }
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    if args.json {
        writeln!(w, "{text}")?;
    } else {
        render_text(&mut w, &profile)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn render_text(w: &mut impl std::io::Write, p: &Profile) -> Result<()> {
    let c = &p.certified;
    let i = &p.instrumented;
    writeln!(w, "{}", p.disclaimer)?;
    writeln!(
        w,
        "certified tape:    {} dispatches, body {} dwords, sequence hash {}",
        c.tape.dispatch_count,
        c.body_dwords,
        hex(&c.tape.sequence_hash)
    )?;
    writeln!(
        w,
        "instrumented body: {} dispatches, body {} dwords, sequence hash {} ({} timestamps{})",
        i.dispatch_count,
        i.body_dwords,
        i.sequence_hash,
        i.timestamps,
        if i.serialized { ", each after a wait for its dispatch" } else { ", no waits added" }
    )?;
    writeln!(w, "positions {:?}, GPU clock {} Hz", p.positions, p.timestamp_frequency_hz)?;
    for t in &p.tokens {
        writeln!(
            w,
            "token at {}: device time {} (first to last timestamp), spans sum {} = {:.4} of it, tail {}",
            t.position,
            format_ns(t.device_ns),
            format_ns(t.span_sum_ns),
            t.span_fraction,
            format_ns(t.tail_ns)
        )?;
    }
    writeln!(w, "kernels by summed median span:")?;
    for k in p.kernels.iter().take(10) {
        writeln!(
            w,
            "  {:>12}  {:5.1}%  {:4} dispatches  {}",
            format_ns(k.median_ns_sum),
            100.0 * k.share,
            k.dispatches,
            escape(&k.kernel)
        )?;
    }
    writeln!(w, "slowest dispatches (median span):")?;
    for s in &p.slowest {
        writeln!(w, "  #{:<5} {:>12}  {}", s.index, format_ns(s.median_ns), escape(&s.kernel))?;
    }
    let r = &p.route;
    writeln!(
        w,
        "certified route after profiling: state {}, route {:?}, tape {}, logits {} the instrumented body's",
        r.state_after,
        r.route_after,
        if r.tape_unchanged { "unchanged" } else { "CHANGED" },
        if r.logits_match { "equal to" } else { "DIFFERENT from" }
    )?;
    Ok(())
}
