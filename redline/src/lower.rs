//! `redline lower`: a tape (from a file, a built-in example or one decode step of a GGUF model)
//! validated, lowered into a PM4 IB for one architecture, and written as an IB bundle that
//! `redline sim run` executes.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use bundle_export::export::{self, DEFAULT_VA_BASE, ExportOptions, Exported};
use bundle_export::model::{self, LowerError};
use bundle_export::{Refused, example};
use engine::examples::EXAMPLES;
use infile::EscapedPath;
use pm4_encoding::Target;
use serde_json::json;
use tape_core::tape::Tape;

/// Lower a tape into an IB bundle for the soft device and for tools.
///
/// The tape is validated (ABI, artifacts, geometry, bindings, effects), lowered into one PM4
/// indirect buffer for the architecture (entry acquire, per-dispatch register writes and
/// DISPATCH_DIRECT, waits only where launches depend on each other, terminal wait and
/// write-back), checked against the tape by decoding it again, and written as a bundle: the code
/// objects, every memory region with its initial bytes, the retained kernargs, the IB patched
/// for one position, the AQL packet that calls it, the binding patch sites, and the expected
/// bytes of every region as the ordinary path (one dispatch per launch on the soft device)
/// produces them. The bundle is run once on a fresh soft device before the command succeeds.
///
/// With `--example NAME`, the tape is recorded from a built-in workload made of the `kernels`
/// crate's kernels at three positions and calibrated; the bundle starts from the workload's
/// state after those steps and is patched for the next position.
///
/// With `--model ALIAS|PATH --position P`, the bundle is one decode step of a GGUF model, a
/// `llama`, `gemma3`, `lfm2` or `qwen35` (an alias of `redline models`, pulled on first use;
/// `tiny`, `tiny-gemma3`, `tiny-lfm2` and `tiny-qwen35` are built in), its weights, KV cache,
/// convolution and recurrent state and every other state region included. On the soft device the model runs its ordinary
/// forwards at positions 0..P-3 with a fixed prompt (position 0: the BOS token; position p > 0:
/// token (p * 7919) mod vocab), is recorded at P-3, P-2 and P-1 (so P must be at least 3) and
/// takes the token of P; the bundle starts from that state, is patched for P, and its expected
/// bytes are checked against the model's own step at P. `DIR/model.json` says which region holds
/// which model surface (logits, k_cache, ...), with `"state": "convolution"` or `"recurrent"` on
/// the surfaces that carry a sequence's state from step to step. A 135M-parameter model makes a bundle of a few
/// hundred MB and takes about half a minute on the soft device (Gemma 3 270M, about 350 MB);
/// progress goes to stderr.
///
/// Exit codes: 0 bundle written and checked; 1 the tape, example or model cannot be lowered as
/// asked (the message says why: an unknown example, a file that is not a GGUF or of an
/// architecture this build does not run, one that changed while it was read, a position or
/// context the model does not have); 2 usage or I/O error (a --model that is no alias and no
/// file, a missing or unreadable file).
#[derive(Debug, clap::Args)]
#[command(after_help = examples_help())]
pub struct Args {
    /// A stored tape (JSON or the binary `RLTAPE` form): a regular file of at most 256 MiB
    /// (a larger one exits with 1 before it is read), decoded and validated as `redline tape
    /// show` does.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["example", "model"],
        required_unless_present_any = ["example", "model", "list_examples"]
    )]
    tape: Option<PathBuf>,
    /// A built-in example instead of a tape file (see --list-examples).
    #[arg(long, value_name = "NAME", conflicts_with = "model")]
    example: Option<String>,
    /// A GGUF model (`llama`, `gemma3`, `lfm2` or `qwen35`) instead of a tape: an alias
    /// (`redline models`; `tiny`, `tiny-gemma3`, `tiny-lfm2` and `tiny-qwen35` are built in) or a
    /// path to a `.gguf` file. Needs --position.
    #[arg(long, value_name = "ALIAS|PATH", requires = "position")]
    model: Option<String>,
    /// KV-cache positions of --model [default: 1024, or the model's trained context when
    /// shorter].
    #[arg(long, requires = "model")]
    context: Option<u32>,
    /// List the built-in examples and exit.
    #[arg(long)]
    list_examples: bool,
    /// Target architecture, a `gfxNNNN` of the target table (`redline doctor` lists them; any
    /// other is refused with the list).
    #[arg(long, value_name = "gfxNNNN", required_unless_present = "list_examples")]
    arch: Option<String>,
    /// Output directory for the bundle (created; must not exist or be empty).
    #[arg(long, value_name = "DIR", required_unless_present = "list_examples")]
    out: Option<PathBuf>,
    /// First VA of the bundle's own objects (code objects, kernargs, IB, signal), hex.
    #[arg(long, value_name = "HEX", value_parser = parse_hex)]
    va_base: Option<u64>,
    /// Position the bundle is patched for (default: the tape's recorded position; for an
    /// example, the position after the recorded ones; required with --model, at least 3 and
    /// below the context).
    #[arg(long)]
    position: Option<u32>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn examples_help() -> String {
    let mut s = String::from("Built-in examples:\n");
    for (name, about) in EXAMPLES {
        s.push_str(&format!("  {name:<8} {about}\n"));
    }
    s
}

fn parse_hex(s: &str) -> Result<u64, String> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    u64::from_str_radix(digits, 16).map_err(|e| format!("{s:?} is not a hex address: {e}"))
}

/// Runs `redline lower`.
///
/// # Errors
/// Usage and I/O errors (exit 2).
pub fn run(args: &Args) -> Result<ExitCode> {
    if args.list_examples {
        print!("{}", examples_help());
        return Ok(ExitCode::SUCCESS);
    }
    let (Some(arch), Some(out)) = (&args.arch, &args.out) else {
        bail!("--arch and --out are required");
    };
    let target: Target = arch.parse().map_err(|e| anyhow::anyhow!("--arch {arch:?}: {e}"))?;
    if out.exists()
        && std::fs::read_dir(out).with_context(|| format!("cannot read {}", out.display()))?.next().is_some()
    {
        bail!("{} exists and is not empty; choose a new directory", out.display());
    }
    let va_base = args.va_base.unwrap_or(DEFAULT_VA_BASE);
    let source;
    let mut description = None;
    let result = if let Some(name) = &args.example {
        source = format!("example {name}");
        example::lower(name, target, va_base, args.position)
    } else if let Some(name) = &args.model {
        source = format!("model {name}");
        // PANIC: clap requires --position with --model.
        let position = args.position.expect("--position");
        let request = model::Request { model: name, context: args.context, position, target, va_base };
        let lowered = match model::lower(&request) {
            Ok(lowered) => lowered,
            // The file's own error, so that its kind decides the exit code.
            Err(LowerError::Read(error)) => return Err(error.into()),
            Err(error) => return Err(error.into()),
        };
        lowered.map(|lowered| {
            description = Some(lowered.description);
            (lowered.tape, lowered.exported)
        })
    } else {
        // PANIC: clap requires --tape when neither --example nor --list-examples is given.
        let file = args.tape.as_ref().expect("--tape");
        source = file.display().to_string();
        let bytes = crate::tape::read(file)?;
        tape_core::show::load(&bytes).map_err(Refused::of).and_then(|tape| {
            let position = args.position.unwrap_or(tape.position());
            let options = ExportOptions { target, position, va_base };
            export::export(&tape, options, &mut export::pattern).map(|e| (tape, e)).map_err(Refused::of)
        })
    };
    let (tape, exported) = match result {
        Ok(x) => x,
        Err(message) => {
            eprintln!("redline: lower: {}: {}", infile::escape(&source), infile::escape_lines(&message.to_string()));
            return Ok(ExitCode::from(1));
        }
    };
    export::write(out, &exported).with_context(|| format!("writing the bundle to {}", out.display()))?;
    let tape_json = serde_json::to_vec_pretty(&tape)?;
    std::fs::write(out.join("tape.json"), tape_json).with_context(|| format!("writing {}/tape.json", out.display()))?;
    if let Some(description) = &description {
        let path = out.join("model.json");
        std::fs::write(&path, serde_json::to_vec_pretty(description)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    report(args, target, &source, &tape, &exported, description.as_ref(), out)?;
    Ok(ExitCode::SUCCESS)
}

fn report(
    args: &Args,
    target: Target,
    source: &str,
    tape: &Tape,
    e: &Exported,
    model: Option<&serde_json::Value>,
    out: &std::path::Path,
) -> Result<()> {
    let identity = tape.identity();
    let m = &e.manifest;
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    if args.json {
        let doc = json!({
            "ok": true,
            "source": source,
            "arch": target.name(),
            "out": out.display().to_string(),
            "tape": identity,
            "bindings": tape.bindings().iter().map(|b| b.name.clone()).collect::<Vec<_>>(),
            "ib": {"va": format!("{:#x}", m.ib.va.0), "size_dwords": m.ib.size_dwords},
            "regions": m.regions.len(),
            "patch_sites": m.patch_sites,
            "expected": m.expected.len(),
            "check": {"dispatches": e.run.dispatches.len(), "pm4_packets": e.run.pm4_packets, "expected_checked": e.run.expected_checked},
            "model": model,
        });
        serde_json::to_writer_pretty(&mut w, &doc)?;
        writeln!(w)?;
        return Ok(());
    }
    writeln!(w, "lowered {} for {} into {}", infile::escape(source), target.name(), EscapedPath(out))?;
    writeln!(
        w,
        "  tape: {} launches, {} unique kernels, sequence hash {}",
        identity.dispatch_count,
        identity.unique_kernels,
        identity.sequence_hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )?;
    writeln!(w, "  IB: {} dwords at {:#x}, {} PM4 packets", m.ib.size_dwords, m.ib.va.0, e.run.pm4_packets)?;
    writeln!(w, "  regions: {} ({} expected results)", m.regions.len(), m.expected.len())?;
    for p in &m.patch_sites {
        writeln!(w, "  patch site {}: {:?} at {:#x} = {}", infile::escape(&p.binding), p.kind, p.va.0, p.rule)?;
    }
    writeln!(
        w,
        "  check run on a fresh soft device: {} dispatches, {} expected regions match",
        e.run.dispatches.len(),
        e.run.expected_checked
    )?;
    if let Some(m) = model {
        writeln!(
            w,
            "  model step at position {} (token {}, context {}); its expected bytes match the model's own step; \
             {}/model.json names the regions",
            m["position"],
            m["token"],
            m["context"],
            out.display()
        )?;
    }
    writeln!(w, "run it again with: redline sim run {}", EscapedPath(out))?;
    Ok(())
}
