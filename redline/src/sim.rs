//! `redline sim run`: execute an IB bundle on the soft device and check its expected outputs.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;
use soft_device::bundle::{self, Bundle, RunError};

// The limits `sim run --help` states.
const _: () = assert!(
    bundle::MANIFEST_BYTES_MAX == 16 << 20
        && bundle::CODE_OBJECT_BYTES_MAX == 256 << 20
        && bundle::DEVICE_BYTES_MAX == 1020 << 20
);

/// Work with the soft device.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Run an IB bundle (a directory with manifest.json) on the soft device.
    ///
    /// Checks the whole bundle first: the manifest (format, arch, VAs, sizes, dtypes, patch-site
    /// rules and places, expected results) and every file against it (present, a regular file
    /// inside DIR even through symlinks, of its declared size). Then it loads the code objects,
    /// regions, IB and AQL packets at exactly the VAs the manifest gives, submits the packets,
    /// waits, and compares every `expected` region.
    ///
    /// Limits: manifest.json 16 MiB; a code object 256 MiB; the IB, the AQL file, a region's file
    /// and an expected file exactly their declared sizes; regions, IB and AQL ring together at
    /// most the soft device's memory budget (1020 MiB).
    ///
    /// Exit codes: 0 success; 1 an invalid bundle (manifest parse or validation error, a file of
    /// the wrong size or over its limit, a path leaving the bundle, a code object that does not
    /// load as described, a file the manifest names that the bundle lacks), a device fault
    /// (queue, command processor, hazard, visibility, effects) or an output mismatch, each
    /// named; 2 usage or I/O (DIR missing or not a directory, manifest.json missing, a file
    /// unreadable, a path that is not a regular file).
    Run {
        /// Print one JSON object instead of text; a failure's `error` is `io` (exit 2), `bundle`,
        /// `fault` or `mismatch` (exit 1).
        #[arg(long)]
        json: bool,
        /// The bundle directory.
        dir: PathBuf,
    },
}

/// Runs a `sim` subcommand.
///
/// # Errors
/// Only when writing to stdout fails.
pub fn run(command: &Command) -> Result<ExitCode> {
    let Command::Run { json, dir } = command;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = Bundle::open(dir).map_err(RunError::from).and_then(|b| b.run().map(|r| (b, r)));
    let (code, doc) = match &result {
        Ok((bundle, report)) => (
            0,
            json!({
                "ok": true,
                "arch": bundle.manifest.arch,
                "packets": report.packets,
                "pm4_packets": report.pm4_packets,
                "dispatches": report.dispatches.iter().map(|(k, o)| json!({"kernel": k, "ib_offset_dwords": o})).collect::<Vec<_>>(),
                "expected_checked": report.expected_checked,
                "signals": report.signals.iter().map(|(n, v)| json!({"region": n, "value": v})).collect::<Vec<_>>(),
            }),
        ),
        Err(e @ RunError::Bundle(_)) if e.is_io() => (2, json!({"ok": false, "error": "io", "message": e.to_string()})),
        Err(e @ RunError::Bundle(_)) => (1, json!({"ok": false, "error": "bundle", "message": e.to_string()})),
        Err(e @ RunError::Fault(_)) => (1, json!({"ok": false, "error": "fault", "message": e.to_string()})),
        Err(e @ RunError::Mismatch(_)) => (1, json!({"ok": false, "error": "mismatch", "message": e.to_string()})),
    };
    if *json {
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
    } else if let Ok((bundle, report)) = &result {
        writeln!(
            out,
            "{}: {} AQL packet(s), {} PM4 packet(s), {} dispatch(es); {} expected region(s) match",
            bundle.manifest.arch,
            report.packets,
            report.pm4_packets,
            report.dispatches.len(),
            report.expected_checked
        )?;
        for (kernel, offset) in &report.dispatches {
            // The kernel's name is the code object's, the bundle's input.
            writeln!(out, "  {} (IB dword {offset})", infile::escape(kernel))?;
        }
    }
    if let Err(e) = &result {
        eprintln!("redline: sim run: {}: {}", infile::EscapedPath(dir), infile::escape_lines(&e.to_string()));
    }
    out.flush()?;
    Ok(ExitCode::from(code))
}
