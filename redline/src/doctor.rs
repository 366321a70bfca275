//! `redline doctor`: what this machine offers the GPU routes, and what `--device auto` picks.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use crate::select::{DeviceKind, select};
use anyhow::Result;
use pm4_encoding::Target;
use serde_json::{Value, json};

/// The kernel driver's compute node; ROCr needs it.
pub const KFD_PATH: &str = "/dev/kfd";

/// Check the ROCm runtimes, the kernel driver nodes and the GPU agents.
///
/// Reports: which runtime libraries were found (`libhsa-runtime64`: the file mapped;
/// `libamdhip64`: the file and `hipRuntimeGetVersion`), whether every symbol of their function
/// tables resolved (the missing ones listed), the status of `hsa_init` and `hipInit` by name and
/// value, the GPU agents with their ISA and whether the lowering supports it (gfx1030, gfx1100,
/// gfx1151, gfx1200, gfx1201; any other ISA is unsupported), the DRM render nodes, whether
/// /dev/kfd exists, and which device `--device auto` would choose and why.
///
/// The library paths can be overridden with REDLINE_HSA_LIBRARY and REDLINE_HIP_LIBRARY. Exit
/// code 0 whenever the report could be made, with or without a GPU; 2 when output fails.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `redline doctor`.
///
/// # Errors
/// Only when writing to stdout fails.
pub fn run(args: &Args) -> Result<ExitCode> {
    let report = report();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write_human(&mut out, &report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The report as JSON: `hsa`, `hip`, `kfd`, `drm`, `agents`, `device_auto`.
#[must_use]
pub fn report() -> Value {
    let (hsa, agents) = hsa_report();
    let selected = select(DeviceKind::Auto, None);
    let device_auto = match &selected {
        Ok(selected) => json!({ "kind": selected.kind().name(), "reason": selected.reason }),
        Err(error) => json!({ "kind": Value::Null, "reason": error.to_string() }),
    };
    drop(selected);
    json!({
        "hsa": hsa,
        "hip": hip_report(),
        "kfd": { "present": Path::new(KFD_PATH).exists() },
        "drm": drm_report(),
        "agents": agents,
        "device_auto": device_auto,
    })
}

fn hsa_report() -> (Value, Vec<Value>) {
    match hsa_sys::Hsa::load() {
        Ok(hsa) => {
            let hsa = std::sync::Arc::new(hsa);
            let probe = hsa_device::probe(&hsa);
            let agents = probe
                .agents
                .iter()
                .map(|agent| {
                    json!({
                        "index": agent.index,
                        "isa": agent.isa,
                        "target": agent.target.map(Target::name),
                        "supported": agent.target.is_some(),
                    })
                })
                .collect();
            let report = json!({
                "library": hsa.library_path().display().to_string(),
                "loaded": true,
                "missing_symbols": [],
                "init_status": { "name": probe.init_status.name(), "value": probe.init_status.0 },
                "error": probe.error.map(|e| e.to_string()),
            });
            (report, agents)
        }
        Err(error) => (load_failure(&error_library(&error), missing(&error), &error), Vec::new()),
    }
}

fn hip_report() -> Value {
    match hip_sys::Hip::load() {
        Ok(hip) => {
            let init = hip.init();
            json!({
                "library": hip.library_path().display().to_string(),
                "loaded": true,
                "missing_symbols": [],
                "init_status": { "name": init.name(), "value": init.0 },
                "runtime_version": hip.runtime_version().ok(),
                "error": Value::Null,
            })
        }
        Err(error) => {
            let (library, missing) = match &error {
                hip_sys::LoadError::MissingSymbols { library, missing } => {
                    (Some(library.display().to_string()), missing.clone())
                }
                hip_sys::LoadError::NotFound { .. } => (None, Vec::new()),
            };
            let mut value = load_failure(&library, missing, &error);
            value["runtime_version"] = Value::Null;
            value
        }
    }
}

fn error_library(error: &hsa_sys::LoadError) -> Option<String> {
    match error {
        hsa_sys::LoadError::MissingSymbols { library, .. } => Some(library.display().to_string()),
        hsa_sys::LoadError::NotFound { .. } => None,
    }
}

fn missing(error: &hsa_sys::LoadError) -> Vec<&'static str> {
    match error {
        hsa_sys::LoadError::MissingSymbols { missing, .. } => missing.clone(),
        hsa_sys::LoadError::NotFound { .. } => Vec::new(),
    }
}

fn load_failure(library: &Option<String>, missing: Vec<&'static str>, error: &dyn std::fmt::Display) -> Value {
    json!({
        "library": library,
        "loaded": false,
        "missing_symbols": missing,
        "init_status": Value::Null,
        "error": error.to_string(),
    })
}

fn drm_report() -> Value {
    match kmd_direct::discover() {
        Ok(nodes) => {
            let nodes: Vec<Value> = nodes
                .iter()
                .map(|node| {
                    json!({
                        "path": node.path.display().to_string(),
                        "driver": node.driver,
                        "vendor": node.vendor.map(|v| format!("{v:#06x}")),
                        "device_id": node.device_id.map(|v| format!("{v:#06x}")),
                        "amdgpu": node.is_amdgpu(),
                        "error": node.error.as_ref().map(ToString::to_string),
                    })
                })
                .collect();
            json!({ "render_nodes": nodes, "error": Value::Null })
        }
        Err(error) => json!({ "render_nodes": [], "error": error.to_string() }),
    }
}

fn write_human(out: &mut impl std::io::Write, report: &Value) -> std::io::Result<()> {
    for (key, title) in [("hsa", "HSA runtime"), ("hip", "HIP runtime")] {
        let lib = &report[key];
        writeln!(out, "{title}:")?;
        match lib["library"].as_str() {
            Some(path) => writeln!(out, "  library: {path}")?,
            None => writeln!(out, "  library: not found")?,
        }
        writeln!(out, "  loaded: {}", lib["loaded"])?;
        if let Some(missing) = lib["missing_symbols"].as_array().filter(|m| !m.is_empty()) {
            let names: Vec<&str> = missing.iter().filter_map(Value::as_str).collect();
            writeln!(out, "  missing symbols: {}", names.join(", "))?;
        }
        if let Some(version) = lib.get("runtime_version").and_then(Value::as_i64) {
            writeln!(out, "  runtime version: {version}")?;
        }
        let status = &lib["init_status"];
        if !status.is_null() {
            let call = if key == "hsa" { "hsa_init" } else { "hipInit" };
            let name = status["name"].as_str().unwrap_or("unknown");
            let value = status["value"].as_i64().unwrap_or_default();
            // hsa_status_t values are written in hex in hsa.h, hipError_t values in decimal.
            if key == "hsa" {
                writeln!(out, "  {call}: {name} ({value:#x})")?;
            } else {
                writeln!(out, "  {call}: {name} ({value})")?;
            }
        }
        if let Some(error) = lib["error"].as_str() {
            writeln!(out, "  error: {error}")?;
        }
    }
    writeln!(out, "/dev/kfd: {}", if report["kfd"]["present"] == true { "present" } else { "absent" })?;
    let nodes = report["drm"]["render_nodes"].as_array().map_or(&[][..], Vec::as_slice);
    writeln!(out, "render nodes: {}", nodes.len())?;
    for node in nodes {
        let driver = node["driver"].as_str().unwrap_or("unknown driver");
        writeln!(out, "  {} ({driver})", node["path"].as_str().unwrap_or("?"))?;
    }
    let agents = report["agents"].as_array().map_or(&[][..], Vec::as_slice);
    writeln!(out, "GPU agents: {}", agents.len())?;
    for agent in agents {
        let isa = agent["isa"].as_str().unwrap_or("no ISA");
        let verdict = if agent["supported"] == true { "supported" } else { "unsupported" };
        writeln!(out, "  agent {}: {isa}: {verdict}", agent["index"])?;
    }
    let supported: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
    writeln!(out, "supported targets: {}", supported.join(", "))?;
    let auto = &report["device_auto"];
    writeln!(
        out,
        "--device auto: {} ({})",
        auto["kind"].as_str().unwrap_or("none"),
        auto["reason"].as_str().unwrap_or("")
    )?;
    Ok(())
}
