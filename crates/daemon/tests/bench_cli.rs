//! `redline bench` end to end on the soft device: the tiny generated model gives a valid report
//! with both route proofs (resident and fresh processes), an injected replay fault makes it
//! invalid naming the gate, bad arguments fail with a message; the reference fixture gives a
//! valid report once.

mod common;

use common::{redline, reference_model};
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-bench-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tiny_model(dir: &Path) -> PathBuf {
    let path = dir.join("tiny.gguf");
    gguf::write_tiny_llama(&path, &gguf::TinyLlamaConfig::default()).unwrap();
    path
}

/// Gate limits wide enough that millisecond rows on a shared machine settle in 2 windows + 3.
const LOOSE_GATE: [&str; 12] = [
    "--gate-window",
    "3",
    "--gate-confirm",
    "3",
    "--gate-slope-pct",
    "1000",
    "--gate-spread-pct",
    "1000",
    "--gate-drift-pct",
    "1000",
    "--gate-rows-max",
    "9",
];

fn bench(dir: &Path, model: &Path, extra: &[&str]) -> (Output, Value, String) {
    bench_with(dir, model, "the cat", "6", "3", extra)
}

fn bench_with(
    dir: &Path,
    model: &Path,
    prompt: &str,
    tokens: &str,
    runs: &str,
    extra: &[&str],
) -> (Output, Value, String) {
    bench_on(dir, model, prompt, tokens, runs, &[&["--device", "sim"], extra].concat(), &[])
}

/// `redline bench` with `extra` (the device among them) and `env` added to its environment.
fn bench_on(
    dir: &Path,
    model: &Path,
    prompt: &str,
    tokens: &str,
    runs: &str,
    extra: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> (Output, Value, String) {
    let out = dir.join("report.json");
    let plot = dir.join("plot.svg");
    let common = [
        "bench",
        "--model",
        model.to_str().unwrap(),
        "--prompt",
        prompt,
        "--tokens",
        tokens,
        "--context",
        "64",
        "--warmup",
        "1",
        "--runs",
        runs,
        "--out",
        out.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ];
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_redline"))
        .args([&common[..], &LOOSE_GATE[..], extra].concat())
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let report = std::fs::read_to_string(&out).map_or(Value::Null, |t| serde_json::from_str(&t).unwrap());
    let svg = std::fs::read_to_string(&plot).unwrap_or_default();
    (output, report, svg)
}

fn gate<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["gates"].as_array().unwrap().iter().find(|g| g["name"] == name).unwrap_or_else(|| panic!("no gate {name}"))
}

fn assert_valid_proofs(report: &Value, transport: &str, timed_rows: usize) {
    assert_eq!(report["valid"], true, "{}", report["invalid_reasons"]);
    assert_eq!(report["invalid_reasons"], serde_json::json!([]));
    let auto = &report["arms"]["auto"];
    let hip = &report["arms"]["hip"];
    for proof in [&auto["lifecycle_route_proof"], &auto["timed_route_proof"]] {
        assert_eq!(proof["state"], "ready");
        assert_eq!(proof["transport"], transport);
        assert!(proof["fallback_reason"].is_null());
    }
    assert_eq!(hip["timed_route_proof"]["state"], "hip");
    assert_eq!(hip["timed_route_proof"]["observations"]["retained"], 0);
    let timed: Vec<&Value> = auto["rows"].as_array().unwrap().iter().filter(|r| r["phase"] == "timed").collect();
    assert_eq!(timed.len(), timed_rows);
    let last_prompt = report["workload"]["prompt_tokens"].as_u64().unwrap() - 1;
    let every: Vec<u64> = (last_prompt..=last_prompt + 6).collect();
    for row in &timed {
        // The last prompt token and the 6 decode forwards replayed, each at its own position.
        assert_eq!(row["replay_positions"], serde_json::json!(every), "{row}");
        assert_eq!(row["decode_forwards"], 6);
    }
    assert_eq!(auto["tok_s_raw"].as_array().unwrap().len(), timed_rows);
    let (min, median, max) = (&auto["tok_s"]["min"], &auto["tok_s"]["median"], &auto["tok_s"]["max"]);
    assert!(min.as_f64().unwrap() <= median.as_f64().unwrap() && median.as_f64() <= max.as_f64());
    assert!(report["ratio_retained_over_ordinary_tok_s"].as_f64().unwrap() > 0.0);
    assert!(report["tape"]["dispatch_count"].as_u64().unwrap() > 0);
    assert_eq!(report["submission"]["transport"], transport);
    for name in ["stationarity.hip", "stationarity.auto", "route.auto.every_position", "route.auto.one_identity"] {
        assert_eq!(gate(report, name)["pass"], true, "{name}");
    }
}

#[test]
fn the_hsa_backend_bench_is_valid_with_both_route_proofs() {
    let dir = temp_dir("hsa");
    let model = tiny_model(&dir);
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    let env = [("REDLINE_HSA_LIBRARY", library.as_os_str()), ("REDLINE_SOFT_HSA_ISA", std::ffi::OsStr::new("gfx1201"))];
    for process in ["resident", "fresh"] {
        let extra = ["--device", "hsa", "--process", process];
        let (out, report, _) = bench_on(&dir, &model, "the cat", "6", "3", &extra, &env);
        assert!(out.status.success(), "{process}: {}", String::from_utf8_lossy(&out.stderr));
        assert_valid_proofs(&report, "pm4", 3);
        assert_eq!(report["device"]["kind"], "hsa", "{process}");
        assert_eq!(report["device"]["arch"], "gfx1201", "{process}: the agent's ISA decides the target");
    }
}

#[test]
fn tiny_model_bench_is_valid_with_both_route_proofs() {
    let dir = temp_dir("valid");
    let model = tiny_model(&dir);
    let (out, report, svg) = bench(&dir, &model, &["--order", "interleaved"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_valid_proofs(&report, "pm4", 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bench: auto row 0 (warmup)") && stderr.contains("[gate passed]"), "{stderr}");
    // The record.
    assert_eq!(report["device"]["kind"], "sim");
    assert_eq!(report["device"]["arch"], "gfx1100");
    assert_eq!(report["model"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(report["binary_sha256"].as_str().unwrap().len(), 64);
    assert!(report["source"]["commit"].is_string());
    assert!(report["workload"]["prompt_tokens"].as_u64().unwrap() >= 2);
    assert_eq!(report["workload"]["prompt_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(report["settings"]["gate"]["window_rows"], 3);
    assert_eq!(report["settings"]["order"], "interleaved");
    assert_eq!(report["admission"]["admitted"], false, "the tiny model is not certified");
    assert!(report["utc"].as_str().unwrap().ends_with('Z'));
    // Every row of both arms is in the plot: 1 warm-up + 9 gate + 3 timed each.
    for arm in ["hip", "auto"] {
        assert_eq!(report["arms"][arm]["rows"].as_array().unwrap().len(), 13);
        assert_eq!(svg.matches(&format!("class=\"timed\" data-arm=\"{arm}\"")).count(), 3);
        assert_eq!(svg.matches(&format!("class=\"gate\" data-arm=\"{arm}\"")).count(), 9);
        assert_eq!(svg.matches(&format!("class=\"warmup\" data-arm=\"{arm}\"")).count(), 1);
        assert_eq!(svg.matches(&format!("class=\"settled\" data-arm=\"{arm}\"")).count(), 1);
    }
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn fresh_worker_processes_give_a_valid_bench() {
    let dir = temp_dir("fresh");
    let model = tiny_model(&dir);
    let (out, report, _) = bench(&dir, &model, &["--process", "fresh", "--order", "abba", "--transport", "aql"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_valid_proofs(&report, "aql", 3);
    assert_eq!(report["settings"]["process"], "fresh");
}

#[test]
fn an_injected_replay_timeout_makes_the_bench_invalid_naming_the_gate() {
    let dir = temp_dir("fault");
    let model = tiny_model(&dir);
    for process in ["resident", "fresh"] {
        let (out, report, _) = bench(&dir, &model, &["--inject-fault", "replay-timeout", "--process", process]);
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(report["valid"], false, "{process}");
        let reasons: Vec<&str> =
            report["invalid_reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
        assert!(reasons.iter().any(|r| r.starts_with("route.auto.ready: timed state \"fallback\"")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.starts_with("route.auto.every_position")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.starts_with("rows.auto")), "{reasons:?}");
        assert_eq!(gate(&report, "route.auto.ready")["pass"], false);
        assert_eq!(gate(&report, "route.hip.no_retained")["pass"], true);
        let proof = &report["arms"]["auto"]["timed_route_proof"];
        assert!(proof["fallback_reason"].as_str().unwrap().contains("replay failed"), "{proof}");
        assert_eq!(report["settings"]["inject_fault"], "replay-timeout");
    }
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let dir = temp_dir("bad");
    let model = tiny_model(&dir);
    let model = model.to_str().unwrap();
    let base = ["bench", "--model", model, "--device", "sim"];
    let cases: [(&[&str], &str); 11] = [
        (&["--device", "gpu"], "--device"),
        (&["--arch", "gfx9000"], "--arch"),
        (&["--tokens", "0"], "--tokens"),
        (&["--runs", "0"], "--runs"),
        (&["--order", "ba"], "--order"),
        (&["--process", "forked"], "--process"),
        (&["--gate-window", "1"], "window_rows"),
        (&["--gate-rows-max", "5"], "rows_max"),
        (&["--transport", "dma"], "--transport"),
        (&["--inject-fault", "meteor"], "replay-timeout"),
        (&["--context", "4", "--tokens", "8"], "--context"),
    ];
    for (extra, needle) in cases {
        let out = redline(&[&base[..], extra].concat());
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
    }
    let out = redline(&["bench", "--model", "/nonexistent/m.gguf", "--device", "sim"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--model"));
}

#[test]
fn the_reference_model_bench_is_valid() {
    let Some(path) = reference_model() else { return };
    let dir = temp_dir("fixture");
    let (out, report, _) = bench_with(&dir, Path::new(&path), "Hi", "3", "2", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(report["valid"], true, "{}", report["invalid_reasons"]);
    assert_eq!(report["admission"]["admitted"], true, "{}", report["admission"]);
    assert_eq!(report["arms"]["auto"]["timed_route_proof"]["state"], "ready");
    assert_eq!(report["arms"]["hip"]["timed_route_proof"]["observations"]["retained"], 0);
}

#[test]
fn a_shadow_validated_retained_arm_records_the_shadow_result() {
    let dir = temp_dir("shadow");
    let model = tiny_model(&dir);
    let (out, report, _) = bench(&dir, &model, &["--retained-backend", "shadow"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_valid_proofs(&report, "pm4", 3);
    assert_eq!(report["settings"]["arms"][1]["config"]["backend"], "shadow");
    // The oracle checked 8 positions (ReplayConfig's default) before Ready; the report keeps the last.
    assert_eq!(report["arms"]["auto"]["timed_route_proof"]["observations"]["shadow"], 8);
    assert!(report["shadow"]["positions"].as_array().is_some_and(|p| !p.is_empty()), "{}", report["shadow"]);
    assert_eq!(report["shadow"]["divergences"], serde_json::json!([]));
    assert_eq!(gate(&report, "shadow.auto")["pass"], true);
}
