//! `redline profile` end to end: the tiny model on the soft device and on the HSA backend over
//! the soft HSA runtime (`REDLINE_HSA_LIBRARY` pointed at the `libsoft_hsa.so` cargo built), and
//! SmolLM2-135M (`REDLINE_SMOLLM2_GGUF`) on both; bad input by the exit rule.

mod common;
// The bench's helpers of the module go unused here.
#[allow(dead_code)]
mod schema;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::reference_model;
use serde_json::Value;

/// The disclaimer's three claims, as every report states them.
const CLAIMS: [&str; 3] = [
    "instrumented copy of the certified tape, not the certified tape",
    "Each span includes the boundary packets before its dispatch",
    "This is not route proof and not kernel timing.",
];
/// Dwords of one COPY_DATA timestamp and of one added EVENT_WRITE CS_PARTIAL_FLUSH
/// (reference §4: a type-3 header plus 5 and 1 body dwords).
const TIMESTAMP_DWORDS: u64 = 6;
const WAIT_DWORDS: u64 = 2;

fn profile(device: &str, args: &[&str]) -> Output {
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    Command::new(env!("CARGO_BIN_EXE_redline"))
        .arg("profile")
        .args(["--device", device])
        .args(args)
        .env("REDLINE_HSA_LIBRARY", library)
        .env_remove("REDLINE_SOFT_HSA_ISA")
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .output()
        .unwrap()
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-profile-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tiny_model() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let path = dir("model").join("tiny.gguf");
        gguf::write_tiny_llama(&path, &gguf::TinyLlamaConfig::default()).unwrap();
        path
    })
    .clone()
}

fn profile_schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/profile-report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn hash_hex(v: &Value) -> String {
    v.as_str().unwrap().to_owned()
}

/// Runs the profiler with `--json`, `--svg` and `--out`, then again for its text; checks every
/// claim that does not depend on the model and returns the report.
fn checked_profile(device: &str, model: &str, tokens: u32, what: &str) -> Value {
    let out_dir = dir(&format!("{device}-{what}"));
    let (svg, json_file) = (out_dir.join("p.svg"), out_dir.join("p.json"));
    let tokens_arg = tokens.to_string();
    let args = [
        "--model",
        model,
        "--tokens",
        &tokens_arg,
        "--json",
        "--svg",
        svg.to_str().unwrap(),
        "--out",
        json_file.to_str().unwrap(),
    ];
    let out = profile(device, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} on {device}: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}: {stderr}"));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&json_file).unwrap()).unwrap();
    assert_eq!(written, report, "{what}: --out holds the report --json printed");
    let errors = schema::validate(&profile_schema(), &report);
    assert!(errors.is_empty(), "{what}: docs/profile-report.schema.json:\n{}", errors.join("\n"));
    assert_eq!(report["device"]["kind"], device);

    let p = &report["profile"];
    let certified = &p["certified"];
    let instrumented = &p["instrumented"];
    let dispatch_count = certified["tape"]["dispatch_count"].as_u64().unwrap();
    // Spans for every dispatch of the tape, one per token each.
    let dispatches = p["dispatches"].as_array().unwrap();
    assert_eq!(dispatches.len() as u64, dispatch_count, "{what}: a span entry per dispatch");
    for (k, d) in dispatches.iter().enumerate() {
        assert_eq!(d["index"].as_u64(), Some(k as u64));
        assert_eq!(d["span_ns"].as_array().unwrap().len() as u64, u64::from(tokens), "{what}: dispatch {k}");
        assert!(d["median_ns"].as_f64().unwrap() > 0.0, "{what}: dispatch {k} has a span of 0");
    }
    let per_kernel: u64 = p["kernels"].as_array().unwrap().iter().map(|k| k["dispatches"].as_u64().unwrap()).sum();
    assert_eq!(per_kernel, dispatch_count, "{what}: the kernels account for every dispatch");
    assert_eq!(p["positions"].as_array().unwrap().len() as u64, u64::from(tokens));
    // The instrumented body: the certified one plus a timestamp per dispatch and two more, and
    // a wait before each timestamp after a dispatch.
    assert_eq!(instrumented["dispatch_count"].as_u64(), Some(dispatch_count));
    assert_eq!(instrumented["timestamps"].as_u64(), Some(dispatch_count + 2));
    assert_eq!(instrumented["added_waits"].as_u64(), Some(dispatch_count));
    assert_eq!(
        instrumented["body_dwords"].as_u64().unwrap(),
        certified["body_dwords"].as_u64().unwrap()
            + (dispatch_count + 2) * TIMESTAMP_DWORDS
            + dispatch_count * WAIT_DWORDS,
        "{what}: instrumented dwords"
    );
    let (tape_hash, body_hash) =
        (hash_hex(&certified["tape"]["sequence_hash"]), hash_hex(&instrumented["sequence_hash"]));
    assert_ne!(tape_hash, body_hash, "{what}: the instrumented sequence hash is not the certified one");
    // The certified route: the plan it replays is the body measured against, and profiling
    // changed neither its tape nor its submission; it replays the next position itself with the
    // instrumented body's logits.
    let route = &p["route"];
    assert_eq!(route["submission_before"]["pm4_dwords"], certified["body_dwords"]);
    assert_eq!(route["tape_before"], certified["tape"]);
    assert_eq!(route["tape_after"], route["tape_before"], "{what}: the tape identity changed");
    assert_eq!(route["submission_after"], route["submission_before"], "{what}: the submission changed");
    assert_eq!(route["tape_unchanged"], true);
    assert_eq!(route["state_after"], "ready");
    assert_eq!(route["route_after"], "retained");
    assert_eq!(route["logits_match"], true, "{what}: the instrumented body computed other logits");
    // The spans' sum against the device time, per token.
    for t in p["tokens"].as_array().unwrap() {
        let (device_ns, sum) = (t["device_ns"].as_f64().unwrap(), t["span_sum_ns"].as_f64().unwrap());
        assert!(sum > 0.0 && sum <= device_ns, "{what}: span sum {sum} against device time {device_ns}");
        assert!((t["span_fraction"].as_f64().unwrap() - sum / device_ns).abs() < 1e-9);
    }
    // The disclaimer and both identities in the JSON, the SVG and the text.
    let disclaimer = p["disclaimer"].as_str().unwrap();
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.trim_end().ends_with("</svg>"));
    assert_eq!(svg_text.matches("<rect x=").count() as u64, dispatch_count, "{what}: a bar per dispatch");
    let text_out = profile(device, &["--model", model, "--tokens", "1"]);
    assert!(text_out.status.success(), "{}", String::from_utf8_lossy(&text_out.stderr));
    let text = String::from_utf8(text_out.stdout).unwrap();
    for claim in CLAIMS {
        assert!(disclaimer.contains(claim), "{what}: JSON disclaimer lacks {claim:?}");
        assert!(text.contains(claim), "{what}: text lacks {claim:?}");
        assert!(svg_text.contains(claim), "{what}: SVG lacks {claim:?}");
    }
    for identity in [tape_hash.as_str(), body_hash.as_str()] {
        assert!(svg_text.contains(identity), "{what}: SVG lacks {identity}");
    }
    for dwords in [&certified["body_dwords"], &instrumented["body_dwords"]] {
        assert!(svg_text.contains(&format!("{dwords} dwords")), "{what}: SVG lacks {dwords} dwords");
        assert!(text.contains(&format!("body {dwords} dwords")), "{what}: text lacks {dwords} dwords");
    }
    // The text run is another process: the same tape, hence the same identities.
    assert!(text.contains(&tape_hash) && text.contains(&body_hash), "{what}: text identities:\n{text}");
    report
}

/// The span sum over the device time: every token's, at least `floor`.
fn assert_fraction(report: &Value, floor: f64, what: &str) {
    let min = report["profile"]["span_fraction"]["min"].as_f64().unwrap();
    assert!(min >= floor && min <= 1.0, "{what}: spans sum to {min} of the device time, below {floor}");
}

#[test]
fn tiny_model_on_the_soft_device() {
    let model = tiny_model();
    let report = checked_profile("sim", model.to_str().unwrap(), 3, "tiny");
    // Serialized, only the entry acquire's sibling packets and the terminal wait fall outside.
    assert_fraction(&report, 0.9, "tiny on sim");
    assert_eq!(report["profile"]["timestamp_frequency_hz"], 100_000_000);
}

#[test]
fn tiny_model_on_the_hsa_backend() {
    let model = tiny_model();
    let report = checked_profile("hsa", model.to_str().unwrap(), 3, "tiny");
    assert_fraction(&report, 0.9, "tiny on hsa");
    // The soft HSA runtime's HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY.
    assert_eq!(report["profile"]["timestamp_frequency_hz"], 100_000_000);
}

#[test]
fn reference_model_on_both_backends() {
    let Some(model) = reference_model() else { return };
    for device in ["sim", "hsa"] {
        let report = checked_profile(device, &model, 2, "smollm2");
        assert_fraction(&report, 0.95, &format!("SmolLM2 on {device}"));
    }
}

#[test]
fn without_serialize_no_wait_is_added() {
    let model = tiny_model();
    let out = profile("sim", &["--model", model.to_str().unwrap(), "--tokens", "1", "--no-serialize", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &report["profile"];
    let n = p["certified"]["tape"]["dispatch_count"].as_u64().unwrap();
    assert_eq!(p["instrumented"]["added_waits"], 0);
    assert_eq!(p["instrumented"]["serialized"], false);
    assert_eq!(
        p["instrumented"]["body_dwords"].as_u64().unwrap(),
        p["certified"]["body_dwords"].as_u64().unwrap() + (n + 2) * TIMESTAMP_DWORDS
    );
    assert_eq!(p["route"]["logits_match"], true);
}

#[test]
fn bad_input_follows_the_exit_rule() {
    let missing = dir("bad").join("no-such-model.gguf");
    let out = profile("sim", &["--model", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "missing model: {}", String::from_utf8_lossy(&out.stderr));
    let not_gguf = dir("bad").join("not.gguf");
    std::fs::write(&not_gguf, b"this is not a GGUF file at all, just text long enough").unwrap();
    let out = profile("sim", &["--model", not_gguf.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "invalid model: {}", String::from_utf8_lossy(&out.stderr));
    let model = tiny_model();
    let out = profile("sim", &["--model", model.to_str().unwrap(), "--tokens", "0"]);
    assert_eq!(out.status.code(), Some(2), "--tokens 0: {}", String::from_utf8_lossy(&out.stderr));
}
