//! `redline doctor` on this machine and with the runtime libraries pointed nowhere.
//!
//! Checks that need the installed ROCm runtimes skip with a printed reason when they do not load,
//! except under `CI=true`, where that is a failure.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn redline() -> Command {
    Command::new(env!("CARGO_BIN_EXE_redline"))
}

fn doctor_json(command: &mut Command) -> Value {
    let output = command.args(["doctor", "--json"]).output().expect("redline runs");
    assert!(output.status.success(), "exit {:?}: {}", output.status, String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("doctor --json prints one JSON object")
}

/// Whether both runtimes load here; panics under CI=true when they do not.
fn runtimes_load() -> bool {
    let problems: Vec<String> = [
        hsa_sys::Hsa::load().err().map(|e| format!("HSA: {e}")),
        hip_sys::Hip::load().err().map(|e| format!("HIP: {e}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if problems.is_empty() {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and the runtimes do not load: {problems:?}");
    eprintln!("skipped: {problems:?}");
    false
}

#[test]
fn doctor_json_reports_the_installed_runtimes() {
    if !runtimes_load() {
        return;
    }
    let report = doctor_json(&mut redline());
    let hsa = &report["hsa"];
    assert_eq!(hsa["loaded"], true);
    assert_eq!(hsa["missing_symbols"], serde_json::json!([]));
    assert!(hsa["library"].as_str().is_some_and(|p| p.contains("libhsa-runtime64")), "{hsa}");
    let hip = &report["hip"];
    assert_eq!(hip["loaded"], true);
    assert_eq!(hip["missing_symbols"], serde_json::json!([]));
    assert!(hip["runtime_version"].as_i64().is_some(), "{hip}");
    assert_eq!(report["kfd"]["present"], Path::new("/dev/kfd").exists());
    assert!(report["drm"]["render_nodes"].is_array());
    if Path::new("/dev/kfd").exists() {
        return;
    }
    assert_eq!(hsa["init_status"]["value"], 0x1008);
    assert_eq!(hsa["init_status"]["name"], "HSA_STATUS_ERROR_OUT_OF_RESOURCES");
    assert_eq!(hip["init_status"]["value"], 101);
    assert_eq!(hip["init_status"]["name"], "hipErrorInvalidDevice");
    assert_eq!(report["agents"], serde_json::json!([]));
    assert_eq!(report["device_auto"]["kind"], "sim");
    let reason = report["device_auto"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)"), "{reason}");
}

#[test]
fn doctor_reports_missing_libraries_and_falls_back_to_the_soft_device() {
    let report = doctor_json(
        redline()
            .env("REDLINE_HSA_LIBRARY", "/nonexistent/libhsa-runtime64.so.1")
            .env("REDLINE_HIP_LIBRARY", "/nonexistent/libamdhip64.so.5"),
    );
    for (key, path) in [("hsa", "/nonexistent/libhsa-runtime64.so.1"), ("hip", "/nonexistent/libamdhip64.so.5")] {
        let lib = &report[key];
        assert_eq!(lib["loaded"], false, "{lib}");
        assert_eq!(lib["library"], Value::Null, "{lib}");
        assert_eq!(lib["init_status"], Value::Null, "{lib}");
        assert!(lib["error"].as_str().is_some_and(|e| e.contains(path)), "{lib}");
    }
    assert_eq!(report["agents"], serde_json::json!([]));
    assert_eq!(report["device_auto"]["kind"], "sim");
    let reason = report["device_auto"]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("soft device") && reason.contains("did not load"), "{reason}");
}

#[test]
fn doctor_human_output_names_each_check() {
    let output = redline().arg("doctor").output().expect("redline runs");
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for needle in ["HSA runtime:", "HIP runtime:", "/dev/kfd:", "render nodes:", "GPU agents:", "--device auto:"] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

#[test]
fn doctor_help_explains_what_it_checks() {
    let output = redline().args(["doctor", "--help"]).output().expect("redline runs");
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for needle in ["hsa_init", "hipInit", "/dev/kfd", "render nodes", "--device auto", "gfx1201", "REDLINE_HSA_LIBRARY"]
    {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

#[test]
fn doctor_reports_the_soft_runtimes_gpu_agent_and_isa() {
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    for target in ["gfx1030", "gfx1100", "gfx1201"] {
        let report = doctor_json(
            redline().env("REDLINE_HSA_LIBRARY", &library).env("REDLINE_SOFT_HSA_ISA", target).env("CI", "false"),
        );
        let hsa = &report["hsa"];
        assert_eq!(hsa["loaded"], true, "{target}: {hsa}");
        assert_eq!(hsa["init_status"]["value"], 0, "{target}: {hsa}");
        let agents = report["agents"].as_array().unwrap_or_else(|| panic!("{target}: {report}"));
        assert_eq!(agents.len(), 1, "{target}: {report}");
        assert_eq!(agents[0]["isa"], format!("amdgcn-amd-amdhsa--{target}"), "{target}");
        assert_eq!(agents[0]["target"], target, "{target}");
        assert_eq!(report["device_auto"]["kind"], "hsa", "{target}: {report}");
    }
}
