//! `redline golden` end to end: every sealed fixture reproduces on the soft device with its
//! model (the reference model, `REDLINE_SMOLLM2_GGUF`, Gemma 3 270M, `REDLINE_GEMMA3_GGUF`, under
//! `CI=true` their absence is a failure; and the built-in `tiny-lfm2` and `tiny-qwen35`), a tampered registry row fails naming the fixture
//! and each tampered field, and malformed registries are refused. The registries in the
//! repository are checked against each other and the model catalogue.

mod common;

use common::{gemma_model, redline, reference_model};
use std::path::PathBuf;

use serde_json::Value;

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn registry() -> Value {
    serde_json::from_str(&std::fs::read_to_string(repo_file("registry/fixtures.json")).unwrap()).unwrap()
}

fn temp_file(name: &str, value: &Value) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}

/// The models of the sealed fixtures: each one's catalogue or built-in alias,
/// `general.architecture` and tensor types (read from the files with gguf-py).
const MODELS: [(&str, &str, &[&str]); 4] = [
    ("smollm2-135m", "llama", &["F32", "Q4_1", "Q8_0"]),
    ("gemma-3-270m", "gemma3", &["F32", "Q4_K", "Q5_0", "Q6_K", "Q8_0"]),
    ("tiny-lfm2", "lfm2", EVERY_TYPE),
    ("tiny-qwen35", "qwen35", EVERY_TYPE),
];

/// The tensor types of the built-in `tiny-lfm2` and `tiny-qwen35`: every type the kernels take.
const EVERY_TYPE: &[&str] =
    &["BF16", "F16", "F32", "Q2_K", "Q3_K", "Q4_0", "Q4_1", "Q4_K", "Q5_0", "Q5_1", "Q5_K", "Q6_K", "Q8_0"];

/// The SHA-256 of the model `alias` names: the catalogue's pinned digest, or a built-in model's
/// bytes hashed.
fn model_sha256(alias: &str) -> String {
    if let Some(entry) = model_files::lookup(alias) {
        return entry.gguf_sha256.to_owned();
    }
    let builtin = model_files::catalogue::builtin(alias).unwrap_or_else(|| panic!("no model {alias}"));
    model_files::digest::sha256_reader(&(builtin.bytes)()[..]).unwrap().0
}

#[test]
fn every_sealed_fixture_reproduces() {
    let (Some(smollm2), Some(gemma)) = (reference_model(), gemma_model()) else { return };
    for fixture in registry()["fixtures"].as_array().unwrap() {
        let id = fixture["id"].as_str().unwrap();
        let model = match fixture["model"]["alias"].as_str().unwrap() {
            "smollm2-135m" => smollm2.as_str(),
            "gemma-3-270m" => gemma.as_str(),
            builtin @ ("tiny-lfm2" | "tiny-qwen35") => builtin,
            other => panic!("{id}: no test model for {other}"),
        };
        let out = redline(&["golden", "--id", id, "--model", model, "--device", "sim"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{id}: {stderr}");
        assert!(stderr.contains(&format!("golden: {id}: ok")), "{id}: {stderr}");
        // Gate 2: the three recorded warm-ups reconciled, each with its counts.
        let dispatches = &fixture["tape"]["dispatch_count"];
        let reconciled = format!(" reconciled ({dispatches} = {dispatches} + 0)");
        assert_eq!(stderr.matches(&reconciled).count(), 3, "{id}: {reconciled}: {stderr}");
    }
}

#[test]
fn a_tampered_row_fails_naming_the_fixture_and_each_field() {
    let Some(model) = reference_model() else { return };
    let mut reg = registry();
    let fixture = &mut reg["fixtures"][1];
    let id = fixture["id"].as_str().unwrap().to_owned();
    fixture["tape"]["sequence_hash"] = Value::from("00".repeat(32));
    fixture["submission"]["dispatches"] = Value::from(fixture["submission"]["dispatches"].as_u64().unwrap() + 1);
    fixture["floors"]["min_retained_tok_s"] = Value::from(1.0e6);
    let path = temp_file("tampered.json", &reg);
    let out =
        redline(&["golden", "--id", &id, "--registry", path.to_str().unwrap(), "--model", &model, "--device", "sim"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for field in ["tape.sequence_hash", "submission.dispatches", "floors.min_retained_tok_s"] {
        assert!(stderr.contains(&format!("golden: {id}: FAIL {field}")), "{field}: {stderr}");
    }
    assert!(!stderr.contains("tape.dispatch_count"), "an untampered field passes: {stderr}");
}

#[test]
fn malformed_registries_and_unknown_ids_are_refused() {
    let reg = registry();
    let mut unknown_field = reg.clone();
    unknown_field["fixtures"][0]["colour"] = Value::from("red");
    let mut empty_id = reg.clone();
    empty_id["fixtures"][0]["id"] = Value::from("");
    let mut duplicate = reg.clone();
    duplicate["fixtures"][1]["id"] = reg["fixtures"][0]["id"].clone();
    let mut bad_gate = reg.clone();
    bad_gate["fixtures"][0]["bench"]["gate"]["window_rows"] = Value::from(1);
    let cases = [
        (unknown_field, "colour"),
        (empty_id, "field id: empty"),
        (duplicate, "field id: duplicate"),
        (bad_gate, "bench.gate"),
    ];
    for (i, (value, needle)) in cases.into_iter().enumerate() {
        let path = temp_file(&format!("bad{i}.json"), &value);
        let out = redline(&["golden", "--registry", path.to_str().unwrap(), "--device", "sim"]);
        assert_eq!(out.status.code(), Some(1), "an invalid registry is invalid input: {needle}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    let out = redline(&["golden", "--id", "no-such-fixture", "--device", "sim"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-fixture"));
}

#[test]
fn the_registries_hold_one_sealed_fixture_per_architecture_and_model_with_its_admission() {
    let fixtures = registry();
    let admissions: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_file("registry/admissions.json")).unwrap()).unwrap();
    // One per target of the target table and model.
    let archs = pm4_encoding::Target::ALL.map(pm4_encoding::Target::name);
    let fixtures = fixtures["fixtures"].as_array().unwrap();
    let admissions = admissions["admissions"].as_array().unwrap();
    // The engine's KV-cache layout scheme (it does not depend on the sizes), the same for every
    // architecture (lfm2's and qwen35's caches hold their attention layers only).
    let scheme = |bytes: Vec<u8>| {
        let file = gguf::Gguf::parse(bytes).unwrap();
        engine::model::language::ModelParams::from_gguf(&file).unwrap().kv_cache_layout(1).scheme()
    };
    let kv_layout = scheme(gguf::tiny_llama(&gguf::TinyLlamaConfig::default()));
    assert_eq!(kv_layout, "f32:layer,position,kv_head,head_dim");
    assert_eq!(scheme(gguf::tiny_gemma3(&gguf::TinyGemma3Config::default())), kv_layout);
    assert_eq!(scheme(gguf::tiny_lfm2(&gguf::TinyLfm2Config::default())), kv_layout);
    assert_eq!(scheme(gguf::tiny_qwen35(&gguf::TinyQwen35Config::default())), kv_layout);
    assert_eq!(fixtures.len(), archs.len() * MODELS.len());
    assert_eq!(admissions.len(), archs.len() * MODELS.len());
    for (alias, architecture, tensor_types) in MODELS {
        for arch in archs {
            check_fixture_and_admission(fixtures, admissions, (alias, architecture, tensor_types), arch, &kv_layout);
        }
    }
    // The binary parses the embedded admissions against the embedded fixtures: a generate run
    // with a registry naming an unknown fixture is refused naming the row and field.
    let mut bad = serde_json::json!({"admissions": admissions});
    bad["admissions"][2]["fixture"] = Value::from("smollm2-135m-gfx9000-sim");
    let path = temp_file("bad-admissions.json", &bad);
    let out = redline(&["generate", "--admissions", path.to_str().unwrap(), "--model", "x.gguf", "--prompt", "x"]);
    assert_eq!(out.status.code(), Some(1), "an invalid registry is invalid input");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("admissions row 2") && stderr.contains("fixture"), "{stderr}");
}

/// The fixture of `model` on `arch` and the admission row it is the evidence of.
fn check_fixture_and_admission(
    fixtures: &[Value],
    admissions: &[Value],
    (alias, architecture, tensor_types): (&str, &str, &[&str]),
    arch: &str,
    kv_layout: &str,
) {
    let id = format!("{alias}-{arch}-sim");
    let fixture = fixtures.iter().find(|f| f["id"] == id.as_str()).unwrap_or_else(|| panic!("no fixture {id}"));
    assert_eq!(fixture["arch"], arch);
    assert_eq!(fixture["model"]["alias"], alias);
    assert_eq!(fixture["device_kind"], "sim");
    // The pinned digest of the catalogue's model (model-files/src/catalogue.rs), or the built-in
    // model's.
    let sha = model_sha256(alias);
    let sha = sha.as_str();
    assert_eq!(fixture["model"]["sha256"], sha);
    assert!(fixture["tape"]["dispatch_count"].as_u64().unwrap() > 0);
    assert!(
        fixture["floors"]["min_retained_tok_s"].as_f64().unwrap()
            < fixture["sealed"]["retained_tok_s"].as_f64().unwrap()
    );
    assert!(fixture["floors"]["min_ratio"].as_f64().unwrap() < fixture["sealed"]["ratio"].as_f64().unwrap());
    let row = admissions.iter().find(|r| r["fixture"] == id.as_str()).unwrap_or_else(|| panic!("no row for {id}"));
    assert_eq!(row["arch"], arch);
    assert_eq!(row["model_sha256"], sha);
    assert_eq!(row["device_kind"], "sim");
    assert_eq!(row["model_format"]["container"], "gguf");
    assert_eq!(row["model_format"]["architecture"], architecture);
    assert_eq!(row["model_format"]["tensor_types"], serde_json::json!(tensor_types), "{id}");
    // The row claims no more than its evidence ran: its context, transport and KV layout.
    assert_eq!(row["max_context"], fixture["bench"]["context"], "{id}");
    assert_eq!(row["transport"], fixture["bench"]["transport"], "{id}");
    assert_eq!(row["kv_layout"].as_str(), Some(kv_layout), "{id}");
    // Sealed by the campaign registry/README.md documents: its rule demands a retained route at
    // least as fast as the ordinary one, and the sealing run's bench report, kept beside the
    // registry, holds the declaration, the measured ratio and the disposition the row records.
    let promotion = &fixture["sealed"]["promotion"];
    assert_eq!(promotion["rule"], "ratio>=1,gates=pass,health=pass", "{id}");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_file(&format!("registry/reports/{id}.json")))
            .unwrap_or_else(|e| panic!("{id}: its sealing report: {e}")),
    )
    .unwrap();
    assert_eq!(report["promotion"]["rule"], promotion["rule"], "{id}");
    assert_eq!(report["promotion"]["disposition"], promotion["disposition"], "{id}");
    assert_eq!(report["promotion"]["reason"], promotion["reason"], "{id}");
    assert_eq!(report["tape"]["sequence_hash"], fixture["tape"]["sequence_hash"], "{id}");
    let ratio = report["ratio_retained_over_ordinary_tok_s"].as_f64().unwrap();
    assert_eq!((ratio * 1000.0).round() / 1000.0, fixture["sealed"]["ratio"].as_f64().unwrap(), "{id}");
    if promotion["disposition"] == "promote" {
        assert!(ratio >= 1.0 && report["valid"] == true, "{id}: promoted at ratio {ratio}");
    } else {
        assert_eq!(promotion["disposition"], "hold", "{id}");
    }
    if ratio < 1.0 {
        assert_eq!(promotion["disposition"], "hold", "{id}: ratio {ratio}");
    }
}

#[test]
fn registries_that_are_not_regular_files_are_io_errors() {
    let golden: &[&str] = &["golden", "--registry", "/dev/zero", "--device", "sim"];
    let generate: &[&str] = &["generate", "--admissions", "/dev/zero", "--model", "x.gguf", "--prompt", "x"];
    for args in [golden, generate] {
        let out = redline(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("/dev/zero is a character device, not a regular file"), "{args:?}: {stderr}");
    }
}
