//! `redline generate` end to end on the soft device: the tiny generated model through the
//! retained route and the ordinary route gives the same tokens; the reference fixture
//! (`REDLINE_SMOLLM2_GGUF`) answers " Paris", as the f64 reference does; bad arguments fail
//! with a message and nothing else.

mod common;

use common::{redline, reference_model};
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// The tiny model, written once per test process: the tests run concurrently, and rewriting a
/// file another test's `redline` has memory-mapped would pull it from under that process.
fn tiny_model() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("redline-generate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tiny.gguf");
        gguf::write_tiny_llama(&path, &gguf::TinyLlamaConfig::default()).unwrap();
        path
    })
    .clone()
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn tiny_model_gives_the_same_tokens_on_the_retained_and_ordinary_routes() {
    let model = tiny_model();
    let model = model.to_str().unwrap();
    let common =
        ["generate", "--model", model, "--device", "sim", "--prompt", "the cat", "--max-tokens", "20", "--json"];
    for transport in ["pm4", "aql"] {
        let retained = json(&redline(&[&common[..], &["--replay-backend", "auto", "--transport", transport]].concat()));
        let ordinary = json(&redline(&[&common[..], &["--replay-backend", "hip"]].concat()));
        assert_eq!(retained["tokens"], ordinary["tokens"], "{transport}");
        assert_eq!(retained["text"], ordinary["text"], "{transport}");
        assert_eq!(retained["tokens"].as_array().unwrap().len(), 20);
        assert_eq!(retained["route"]["state"], "ready", "{transport}");
        assert_eq!(retained["route"]["transport"], transport);
        assert!(retained["route"]["observations"]["retained"].as_u64().unwrap() >= 15, "{}", retained["route"]);
        assert_eq!(retained["route"]["observations"]["ordinary_launches_in_retained_forwards"], 0);
        assert_eq!(ordinary["route"]["state"], "hip");
        assert_eq!(ordinary["route"]["observations"]["retained"], 0);
    }
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let model = tiny_model();
    let model = model.to_str().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["generate", "--model", model, "--device", "sim", "--prompt", "x", "--device", "gpu"], "--device"),
        (&["generate", "--model", "/nonexistent/model.gguf", "--device", "sim", "--prompt", "x"], "model"),
        (&["generate", "--model", model, "--device", "sim", "--prompt", "x", "--replay-backend", "fast"], "fast"),
        (&["generate", "--model", model, "--device", "sim", "--prompt", "x", "--temperature=-1"], "temperature"),
        (
            &["generate", "--model", model, "--device", "sim", "--prompt", "x", "--context", "100000"],
            "--context 100000 exceeds the model's trained context of 256 positions",
        ),
        (&["generate", "--model", model, "--device", "sim", "--prompt", "x", "--context", "0"], "--context 0"),
    ];
    for (args, needle) in cases {
        let out = redline(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty() || !String::from_utf8_lossy(&out.stdout).contains("tokens"), "{args:?}");
    }
}

#[test]
fn the_reference_model_answers_paris() {
    let Some(path) = reference_model() else { return };
    let out = json(&redline(&[
        "generate",
        "--model",
        &path,
        "--device",
        "sim",
        "--prompt",
        "The capital of France is",
        "--max-tokens",
        "6",
        "--json",
    ]));
    // The f64 reference's greedy continuation (redline/tests/data/smollm2_reference.json).
    assert_eq!(out["tokens"], serde_json::json!([7042, 30, 198, 198, 504, 2988]));
    assert!(out["text"].as_str().unwrap().starts_with(" Paris"));
    // The default route: retained where the fixture's sealing run promoted it.
    common::assert_admission_follows(&out["admission"], "smollm2-135m-gfx1100-sim");
    let state = if common::promoted("smollm2-135m-gfx1100-sim") { "ready" } else { "hip" };
    assert_eq!(out["route"]["state"], state);
}

/// The decode tape and the prepared submission of the reference model are the same in fresh
/// processes (they are calibrated from recordings at different positions, so also stable across
/// positions), on gfx1100 and gfx1201, and the retained text equals the ordinary text.
#[test]
fn the_reference_model_tape_is_stable_across_fresh_processes() {
    let Some(path) = reference_model() else { return };
    for arch in ["gfx1100", "gfx1201"] {
        let run = |backend: &str| {
            json(&redline(&[
                "generate",
                "--model",
                &path,
                "--device",
                "sim",
                "--arch",
                arch,
                "--prompt",
                "Once upon a time,",
                "--max-tokens",
                "8",
                "--replay-backend",
                backend,
                "--json",
            ]))
        };
        let (first, second, ordinary) = (run("auto"), run("auto"), run("hip"));
        for key in ["tape", "submission"] {
            assert!(first["route"][key].is_object(), "{arch}: {}", first["route"]);
            assert_eq!(first["route"][key], second["route"][key], "{arch}: {key}");
        }
        assert_eq!(first["tokens"], ordinary["tokens"], "{arch}");
        assert_eq!(first["route"]["state"], "ready");
        assert!(first["route"]["observations"]["retained"].as_u64().unwrap() >= 4, "{arch}");
    }
}

#[test]
fn chat_renders_the_template_and_converses_over_stdin() {
    use std::io::Write as _;
    let model = tiny_model();
    let model = model.to_str().unwrap();
    let one = json(&redline(&[
        "generate",
        "--model",
        model,
        "--device",
        "sim",
        "--chat",
        "--prompt",
        "hi",
        "--max-tokens",
        "4",
        "--json",
    ]));
    // ChatML with the default system message, the user turn and the generation prompt.
    assert!(one["prompt_tokens"].as_u64().unwrap() > 10, "{one}");
    assert_eq!(one["model"]["sha256"].as_str().unwrap().len(), 64);
    let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["generate", "--model", model, "--device", "sim", "--chat", "--max-tokens", "4"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\nand again\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("new tokens").count(), 2, "{stderr}");
}

/// Without an explicit backend, the admissions registry decides: the tiny model is not
/// certified, so the route stays ordinary and the reason is reported; an explicit request arms
/// it regardless; the reference model on gfx1100 is admitted by its sealed fixture's row when
/// that fixture's sealing run promoted the retained route, and refused with the recorded reason
/// when it did not.
#[test]
fn the_admission_registry_decides_the_default_route() {
    let model = tiny_model();
    let model = model.to_str().unwrap();
    let base = ["generate", "--model", model, "--device", "sim", "--prompt", "the cat", "--max-tokens", "8", "--json"];
    let default = json(&redline(&base));
    assert_eq!(default["admission"]["admitted"], false);
    let reason = default["admission"]["reason"].as_str().unwrap();
    assert!(reason.contains("is not certified for gfx1100 sim"), "{reason}");
    assert_eq!(default["route"]["state"], "hip");
    assert_eq!(default["route"]["observations"]["retained"], 0);
    let explicit = json(&redline(&[&base[..], &["--replay-backend", "auto"]].concat()));
    assert_eq!(explicit["route"]["state"], "ready");
    assert_eq!(explicit["tokens"], default["tokens"]);

    let Some(path) = reference_model() else { return };
    let reference = ["generate", "--model", &path, "--device", "sim", "--prompt", "Hi", "--max-tokens", "4", "--json"];
    let decided = json(&redline(&reference));
    common::assert_admission_follows(&decided["admission"], "smollm2-135m-gfx1100-sim");
    let state = if common::promoted("smollm2-135m-gfx1100-sim") { "ready" } else { "hip" };
    assert_eq!(decided["route"]["state"], state);
    // An override registry without a gfx1100 row fails closed to the ordinary path.
    let dir = std::env::temp_dir().join(format!("redline-generate-adm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let only_gfx1201 = dir.join("admissions.json");
    let mut registry: serde_json::Value = serde_json::from_str(include_str!("../../registry/admissions.json")).unwrap();
    registry["admissions"].as_array_mut().unwrap().retain(|row| row["arch"] == "gfx1201");
    std::fs::write(&only_gfx1201, registry.to_string()).unwrap();
    let refused = json(&redline(&[&reference[..], &["--admissions", only_gfx1201.to_str().unwrap()]].concat()));
    assert_eq!(refused["admission"]["admitted"], false);
    assert!(refused["admission"]["reason"].as_str().unwrap().contains("gfx1100 has no admission row"));
    assert_eq!(refused["route"]["state"], "hip");
}
