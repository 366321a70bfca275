//! `redline bench` end to end on the soft device: the tiny generated model gives a valid report
//! with both route proofs (resident and fresh processes), an injected replay fault makes it
//! invalid naming the gate, bad arguments fail with a message; the reference fixture gives a
//! valid report once; the built-in tiny gemma3 and Gemma 3 270M (`REDLINE_GEMMA3_GGUF`) give valid
//! reports with their own hyperparameters. Every report is checked against
//! `docs/bench-report.schema.json`.

mod common;
mod schema;

use common::{gemma_model, redline, reference_model};
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

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
    schema::assert_valid_report(report);
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
    let prompt = report["workload"]["prompt_tokens"].as_u64().unwrap();
    let every: Vec<u64> = (prompt..prompt + 6).collect();
    for row in &timed {
        // The 6 decode continuations replayed, each at its own position (prompt steps never do).
        assert_eq!(row["replay_positions"], serde_json::json!(every), "{row}");
        assert_eq!(row["decode_forwards"], 6);
    }
    assert_eq!(auto["tok_s_raw"].as_array().unwrap().len(), timed_rows);
    let (min, median, max) = (&auto["tok_s"]["min"], &auto["tok_s"]["median"], &auto["tok_s"]["max"]);
    assert!(min.as_f64().unwrap() <= median.as_f64().unwrap() && median.as_f64() <= max.as_f64());
    assert!(report["ratio_retained_over_ordinary_tok_s"].as_f64().unwrap() > 0.0);
    assert!(report["tape"]["dispatch_count"].as_u64().unwrap() > 0);
    assert_eq!(report["submission"]["transport"], transport);
    // Gate 2: the device's own trace of each recorded forward is the tape's launches.
    assert_census(report, transport);
    for name in ["stationarity.hip", "stationarity.auto", "route.auto.every_position", "route.auto.one_identity"] {
        assert_eq!(gate(report, name)["pass"], true, "{name}");
    }
}

/// A fact's value, asserting the fact's shape.
fn value<'a>(fact: &'a Value, what: &str) -> &'a Value {
    assert!(fact["why"].is_null() && !fact["value"].is_null(), "{what} is not known: {fact}");
    &fact["value"]
}

/// A fact's why, asserting that it has no value.
fn why<'a>(fact: &'a Value, what: &str) -> &'a str {
    assert!(fact["value"].is_null(), "{what} has a value: {fact}");
    fact["why"].as_str().unwrap_or_else(|| panic!("{what} has neither value nor why: {fact}"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The record fields every report carries, on either device (`out`: the `--out` path).
fn assert_record(report: &Value, model: &Path, out: &Path) {
    let source = &report["source"];
    for field in ["commit", "dirty", "branch"] {
        assert!(source[field]["value"].is_null() != source[field]["why"].is_null(), "source.{field}: {source}");
    }
    // The host, from the files the report names.
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if let Some(line) = cpuinfo.lines().find(|l| l.starts_with("model name")) {
        assert_eq!(value(&report["host"]["cpu_model"], "cpu_model"), line.split_once(':').unwrap().1.trim());
    }
    let governor = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    match governor {
        Ok(g) => assert_eq!(value(&report["clocks"]["cpu_governor"], "governor")["per_cpu"]["cpu0"], g.trim()),
        Err(_) => assert!(why(&report["clocks"]["cpu_governor"], "governor").contains("scaling_governor")),
    }
    why(&report["clocks"]["gpu"], "gpu clock");
    // The model, against the file itself.
    let m = &report["model"];
    assert_eq!(value(&m["bytes"], "bytes"), std::fs::metadata(model).unwrap().len());
    let file = gguf::Gguf::open(model).unwrap();
    let parameters: u64 = file.tensors().iter().map(|t| t.element_count()).sum();
    assert_eq!(value(&m["parameters"], "parameters"), parameters);
    assert_eq!(value(&m["architecture"], "architecture"), "llama");
    assert_eq!(value(&m["quantization"]["dominant_tensor_type"], "dominant"), "Q4_1");
    assert_eq!(value(&m["quantization"]["file_type"], "file_type")["llama_ftype"], "MOSTLY_Q4_1");
    // TinyLlamaConfig::default(): 2 layers, 2 KV heads of 64 / 4 = 16; --context 64.
    let kv = value(&report["kv_cache"], "kv_cache");
    assert_eq!(
        (&kv["layers"], &kv["positions"], &kv["kv_heads"], &kv["head_dim"]),
        (&json!(2), &json!(64), &json!(2), &json!(16))
    );
    assert_eq!((&kv["element"], &kv["surface_bytes"]), (&json!("f32"), &json!(2 * 64 * 2 * 16 * 4)));
    // The invocation and the prompt's bytes.
    let argv = report["invocation"]["argv"].as_array().unwrap();
    assert_eq!(argv[1], "bench");
    assert!(argv.contains(&json!(model.to_str().unwrap())), "{argv:?}");
    assert_eq!(value(&report["invocation"]["report_path"], "report_path"), out.to_str().unwrap());
    assert_eq!(report["workload"]["prompt_bytes_sha256"], sha256_hex(b"the cat"));
    // Every listed variable is shown; the tests remove the replay overrides.
    let listed = report["environment"]["listed"].as_array().unwrap();
    let backend = listed.iter().find(|v| v["name"] == "REDLINE_REPLAY_BACKEND").unwrap();
    assert_eq!((&backend["set"], &backend["value"]), (&json!(false), &Value::Null));
    // The topology: one device per arm, the retained arm's plan on one queue.
    assert_eq!(report["topology"]["gpus"], json!({"visible": 1, "used_per_device": 1}));
    let devices = report["topology"]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    assert!(why(&devices[0]["retained_queues"], "hip queues").contains("no retained plan"));
    assert_eq!(value(&devices[1]["retained_queues"], "auto queues")["queues"], report["submission"]["queues"]);
    // The retained tape: every launch in one geometry group, its artifacts the embedded objects.
    let tape = value(&report["retained_tape"], "retained_tape");
    assert_eq!(tape["identity"], report["tape"]);
    let launches = report["tape"]["dispatch_count"].as_u64().unwrap();
    let mut indices: Vec<u64> = tape["geometry"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["launch_indices"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap()))
        .collect();
    indices.sort_unstable();
    assert_eq!(indices, (0..launches).collect::<Vec<_>>());
    let artifacts = tape["artifacts"].as_array().unwrap();
    assert_eq!(artifacts.iter().map(|a| a["launches"].as_u64().unwrap()).sum::<u64>(), launches);
    let arch = report["device"]["arch"].as_str().unwrap();
    let llama = artifacts.iter().find(|a| a["kernels"].as_array().unwrap().iter().any(|k| k["symbol"] == "kv_store"));
    assert_eq!(value(&llama.unwrap()["path"], "path"), &format!("{arch}/llama.co"));
    let effects = &tape["effects"];
    assert_eq!(effects["known_launches"].as_u64().unwrap() + effects["unknown_launches"].as_u64().unwrap(), launches);
    assert!(!tape["bindings"].as_array().unwrap().is_empty(), "the position is bound: {tape}");
    // Correctness, ratios with their deltas, output health.
    assert_eq!(report["correctness"]["tolerance"], "bit-exact");
    assert_eq!(report["correctness"]["tokens_match"], true);
    let tok_s = value(&report["comparison"]["tok_s"], "tok_s");
    assert_eq!(tok_s["ratio"], report["ratio_retained_over_ordinary_tok_s"]);
    let delta = tok_s["retained_median"].as_f64().unwrap() - tok_s["ordinary_median"].as_f64().unwrap();
    // Within an ulp or two: serde_json's default float parsing is not always correctly rounded.
    let close = |x: f64| (x - delta).abs() <= 1e-12 * delta.abs().max(1.0);
    assert!(close(tok_s["delta_tok_s"].as_f64().unwrap()), "{tok_s} vs {delta}");
    assert_eq!(tok_s["delta_tok_s"], report["delta_retained_minus_ordinary_tok_s"]);
    value(&report["comparison"]["ms_per_token"], "ms_per_token");
    for arm in ["hip", "auto"] {
        let health = &report["output_health"]["arms"][arm];
        assert_eq!(health["rows_checked"], 3, "{arm}");
        assert_eq!(health["first_row"]["finish_reason"], "length", "{arm}");
        // The tiny model's random weights loop on one token: the check must call it a runaway.
        let failures = health["failures"].as_array().unwrap();
        assert!(
            !failures.is_empty() && failures.iter().all(|f| f.as_str().unwrap().contains("runaway repetition")),
            "{arm}: {health}"
        );
    }
    assert_eq!(report["output_health"]["pass"], false);
    assert!(report["promotion"]["declared_utc"].as_str().unwrap().ends_with('Z'));
}

/// The rule was printed before the first timed row, and its disposition after the last.
fn assert_declared_first(stderr: &str, rule: &str) {
    let declared = stderr.find(&format!("bench: promotion rule (declared before the timed rows): {rule}\n"));
    let first_timed = stderr.find("(timed)");
    assert!(declared.is_some() && declared < first_timed, "{stderr}");
    assert!(stderr.rfind("(timed)") < stderr.find("promotion: "), "{stderr}");
}

#[test]
fn the_hsa_backend_bench_is_valid_with_both_route_proofs() {
    let dir = temp_dir("hsa");
    let model = tiny_model(&dir);
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    let os = std::ffi::OsStr::new;
    let env = [
        ("REDLINE_HSA_LIBRARY", library.as_os_str()),
        ("REDLINE_SOFT_HSA_ISA", os("gfx1201")),
        ("REDLINE_NEW_THING", os("1")),
    ];
    // The fresh run takes a rule that any measured speeds satisfy: the promote path.
    for (process, rule) in [("resident", "ratio>=1.1,gates=pass,health=pass"), ("fresh", "delta_tok_s>-1000000")] {
        let extra = ["--device", "hsa", "--process", process, "--promotion-rule", rule];
        let (out, report, _) = bench_on(&dir, &model, "the cat", "6", "3", &extra, &env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{process}: {stderr}");
        assert_valid_proofs(&report, "pm4", 3);
        assert_eq!(report["device"]["kind"], "hsa", "{process}");
        assert_eq!(report["device"]["arch"], "gfx1201", "{process}: the agent's ISA decides the target");
        assert_record(&report, &model, &dir.join("report.json"));
        assert_declared_first(&stderr, rule);
        // The HSA runtime's own identity of the agent and of itself.
        let device = &report["device"];
        assert_eq!(value(&device["product"], "product"), "Redline soft GPU (gfx1201)");
        let agent = value(&device["agent"], "agent");
        assert_eq!(
            (value(&agent["name"], "name"), &agent["isa"]),
            (&json!("gfx1201"), &json!("amdgcn-amd-amdhsa--gfx1201"))
        );
        let runtime = value(&device["runtime"], "runtime");
        assert_eq!(runtime["library_path"], library.to_str().unwrap());
        assert_eq!(value(&runtime["library_sha256"], "library_sha256"), &sha256_hex(&std::fs::read(&library).unwrap()));
        assert!(value(&runtime["build_version"], "build").as_str().unwrap().starts_with("soft-hsa "), "{runtime}");
        assert_eq!((&runtime["software"], value(&runtime["spec_version"], "spec")), (&json!(true), &json!("1.1")));
        assert!(why(&device["pci"], "pci").contains("software HSA runtime"), "{device}");
        assert!(why(&device["driver"], "driver").contains("no kernel driver"), "{device}");
        assert_eq!(value(&report["topology"]["devices"][1]["agent_index"], "agent_index"), 0);
        let listed = report["environment"]["listed"].as_array().unwrap();
        let hsa = listed.iter().find(|v| v["name"] == "REDLINE_HSA_LIBRARY").unwrap();
        assert_eq!((&hsa["set"], &hsa["value"]), (&json!(true), &json!(library.to_str().unwrap())));
        assert_eq!(report["environment"]["other_set"], json!([{"name": "REDLINE_NEW_THING", "value": "1"}]));
        let promotion = &report["promotion"];
        assert_eq!((&promotion["rule"], &report["settings"]["promotion_rule"]), (&json!(rule), &json!(rule)));
        if process == "fresh" {
            assert_eq!(promotion["disposition"], "promote", "{promotion}");
            assert_eq!(promotion["verdicts"][0]["holds"], true);
        } else {
            assert_eq!(promotion["disposition"], "hold", "the tiny model's output is not healthy: {promotion}");
            assert!(promotion["reason"].as_str().unwrap().contains("health=pass: health fail"), "{promotion}");
        }
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
    assert_record(&report, &model, &dir.join("report.json"));
    assert_declared_first(&stderr, "ratio>=1.1,gates=pass,health=pass");
    // The soft device's own identity.
    let device = &report["device"];
    assert_eq!(value(&device["product"], "product"), "Redline soft device (SimDevice, gfx1100)");
    let runtime = value(&device["runtime"], "runtime");
    assert_eq!((&runtime["crate"], &runtime["arch"]), (&json!("soft-device"), &json!("gfx1100")));
    assert_eq!(runtime["version"], env!("CARGO_PKG_VERSION"), "the workspace version");
    for field in ["agent", "pci", "driver"] {
        why(&device[field], field);
    }
    assert_eq!(report["promotion"]["disposition"], "hold");
    assert!(why(&report["correctness"]["shadow"], "shadow").contains("--retained-backend shadow"));
    // The schema check rejects a report without a record field, or with one of the wrong type.
    let full = schema::bench_report_schema();
    let mut broken = report.clone();
    broken["device"].as_object_mut().unwrap().remove("driver");
    broken["model"]["bytes"] = json!({"value": "77152", "why": null});
    broken["clocks"]["gpu"] = json!({"value": null});
    broken["promotion"]["disposition"] = json!("maybe");
    let errors = schema::validate(&full, &broken);
    for expected in [
        "/device: required property \"driver\" is missing",
        "/model/bytes: matches none of oneOf",
        "/clocks/gpu: matches none of oneOf",
        "/promotion/disposition: \"maybe\" is not one of",
    ] {
        assert!(errors.iter().any(|e| e.starts_with(expected)), "{expected}: {errors:#?}");
    }
    assert_eq!(errors.len(), 4, "{errors:#?}");
    // The record.
    assert_eq!(report["device"]["kind"], "sim");
    assert_eq!(report["device"]["arch"], "gfx1100");
    assert_eq!(report["model"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(report["binary_sha256"].as_str().unwrap().len(), 64);
    assert!(report["source"]["commit"]["value"].is_string() || report["source"]["commit"]["why"].is_string());
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
    // The worker reports its captured tape.
    assert_eq!(value(&report["retained_tape"], "retained_tape")["identity"], report["tape"]);
}

#[test]
fn an_injected_replay_timeout_makes_the_bench_invalid_naming_the_gate() {
    let dir = temp_dir("fault");
    let model = tiny_model(&dir);
    for process in ["resident", "fresh"] {
        let (out, report, _) = bench(&dir, &model, &["--inject-fault", "replay-timeout", "--process", process]);
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(report["valid"], false, "{process}");
        schema::assert_valid_report(&report);
        let reasons: Vec<&str> =
            report["invalid_reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
        assert!(reasons.iter().any(|r| r.starts_with("route.auto.ready: timed state \"fallback\"")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.starts_with("route.auto.every_position")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.starts_with("rows.auto")), "{reasons:?}");
        assert_eq!(gate(&report, "route.auto.ready")["pass"], false);
        assert_eq!(gate(&report, "route.hip.no_retained")["pass"], true);
        let proof = &report["arms"]["auto"]["timed_route_proof"];
        assert!(proof["fallback_reason"].as_str().unwrap().starts_with("Replay failed"), "{proof}");
        assert_eq!(report["settings"]["inject_fault"], "replay-timeout");
    }
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let dir = temp_dir("bad");
    let model = tiny_model(&dir);
    let model = model.to_str().unwrap();
    let base = ["bench", "--model", model, "--device", "sim"];
    let cases: [(&[&str], &str); 14] = [
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
        (&["--promotion-rule", "ratio>=fast"], "clause 1 \"ratio>=fast\": \"fast\" is not a finite number"),
        (&["--promotion-rule", "gates=pass,speed>1"], "clause 2 \"speed>1\": unknown name \"speed\""),
        (&["--promotion-rule", ""], "the rule is empty"),
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

/// The report's census (gate 2): every recorded position of the retained arm reconciled with
/// the device's own trace, its compute launches the tape's dispatches.
fn assert_census(report: &Value, what: &str) {
    let census = &report["census"];
    assert!(census["trace"].as_str().unwrap().contains("packet processor"), "{what}: {census}");
    let positions = census["positions"].as_array().unwrap();
    assert_eq!(positions.len(), 3, "{what}: the three recorded warm-ups: {census}");
    for p in positions {
        assert_eq!(p["verdict"], "reconciled", "{what}: {p}");
        assert_eq!(p["compute_launches"], report["tape"]["dispatch_count"], "{what}: {p}");
        assert_eq!(p["retained_dispatches"], report["tape"]["dispatch_count"], "{what}: {p}");
        assert_eq!(p["external_launches"], report["tape"]["external_launches"], "{what}: {p}");
    }
    assert_eq!(gate(report, "census.auto")["pass"], true, "{what}");
}

#[test]
fn the_reference_model_bench_is_valid_on_both_backends_with_its_census() {
    let Some(path) = reference_model() else { return };
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    let os = std::ffi::OsStr::new;
    let hsa = [("REDLINE_HSA_LIBRARY", library.as_os_str()), ("REDLINE_SOFT_HSA_ISA", os("gfx1100"))];
    for (device, env) in [("sim", &[][..]), ("hsa", &hsa[..])] {
        let dir = temp_dir(&format!("fixture-{device}"));
        let (out, report, _) = bench_on(&dir, Path::new(&path), "Hi", "3", "2", &["--device", device], env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{device}: {stderr}");
        schema::assert_valid_report(&report);
        assert_eq!(report["valid"], true, "{device}: {}", report["invalid_reasons"]);
        // Admission rows are sealed on the soft device only (and admit when their fixture's
        // sealing run promoted the route); the bench's retained arm asks for its backend
        // explicitly either way.
        if device == "sim" {
            common::assert_admission_follows(&report["admission"], "smollm2-135m-gfx1100-sim");
        } else {
            assert_eq!(report["admission"]["admitted"], false, "{device}: {}", report["admission"]);
        }
        assert_eq!(report["arms"]["auto"]["timed_route_proof"]["state"], "ready", "{device}");
        assert_eq!(report["arms"]["hip"]["timed_route_proof"]["observations"]["retained"], 0, "{device}");
        assert_eq!(report["tape"]["dispatch_count"], 483, "{device}");
        assert_census(&report, device);
    }
}

#[test]
fn the_tiny_gemma3_bench_is_valid_with_both_route_proofs() {
    let dir = temp_dir("tiny-gemma3");
    let model = dir.join("tiny-gemma3.gguf");
    let config = gguf::TinyGemma3Config::default();
    gguf::write_tiny_gemma3(&model, &config).unwrap();
    let (out, report, _) = bench(&dir, &model, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_valid_proofs(&report, "pm4", 3);
    let hyper = value(&report["model"]["hyperparameters"], "hyperparameters");
    assert_eq!(value(&report["model"]["architecture"], "architecture"), "gemma3");
    assert_eq!((&hyper["layers"], &hyper["sliding_window"]), (&json!(config.n_layers), &json!(config.window)));
    // The 6 decode positions after the prompt run past the 8-key window of the sliding layers.
    assert!(report["workload"]["prompt_tokens"].as_u64().unwrap() + 6 > u64::from(config.window));
}

#[test]
fn the_gemma_model_bench_is_valid_decided_by_its_row_with_its_hyperparameters() {
    let Some(path) = gemma_model() else { return };
    let dir = temp_dir("gemma");
    let (out, report, _) = bench_with(&dir, Path::new(&path), "Hi", "3", "2", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    schema::assert_valid_report(&report);
    assert_eq!(report["valid"], true, "{}", report["invalid_reasons"]);
    common::assert_admission_follows(&report["admission"], "gemma-3-270m-gfx1100-sim");
    assert_eq!(report["arms"]["auto"]["timed_route_proof"]["state"], "ready");
    assert_eq!(report["arms"]["hip"]["timed_route_proof"]["observations"]["retained"], 0);
    let model = &report["model"];
    let hyper = value(&model["hyperparameters"], "hyperparameters");
    // Gemma 3 270M: 18 layers of 4 query heads and 1 KV head of 256, a window of 512.
    assert_eq!(
        (&hyper["layers"], &hyper["heads"], &hyper["kv_heads"], &hyper["head_dim"], &hyper["sliding_window"]),
        (&json!(18), &json!(4), &json!(1), &json!(256), &json!(512))
    );
    let file_type = value(&model["quantization"]["file_type"], "file_type");
    assert_eq!((&file_type["id"], &file_type["llama_ftype"]), (&json!(15), &json!("MOSTLY_Q4_K_M")));
    // K and V of 18 layers × 64 positions × 256 f32.
    let kv = value(&report["kv_cache"], "kv_cache");
    assert_eq!(kv["total_bytes"], 2 * 18 * 64 * 256 * 4, "{kv}");
}

#[test]
fn a_shadow_validated_retained_arm_records_the_shadow_result() {
    let dir = temp_dir("shadow");
    let model = tiny_model(&dir);
    let (out, report, _) = bench(&dir, &model, &["--retained-backend", "shadow"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_valid_proofs(&report, "pm4", 3);
    // The retained route, validated by the shadow oracle before it is ready.
    assert_eq!(report["settings"]["retained_backend"], "shadow");
    let config = &report["settings"]["arms"][1]["config"];
    assert_eq!((&config["backend"], &config["validate_first"]), (&json!("auto"), &json!(true)));
    // The oracle checked 8 positions (ReplayConfig's default) before Ready; the report keeps the last.
    assert_eq!(report["arms"]["auto"]["timed_route_proof"]["observations"]["shadow"], 8);
    assert!(report["shadow"]["positions"].as_array().is_some_and(|p| !p.is_empty()), "{}", report["shadow"]);
    assert_eq!(report["shadow"]["divergences"], serde_json::json!([]));
    assert_eq!(gate(&report, "shadow.auto")["pass"], true);
}
