//! `redline generate --device hsa` end to end on the HSA backend over the soft HSA runtime
//! (`REDLINE_HSA_LIBRARY` pointed at the `libsoft_hsa.so` cargo built): the same greedy tokens as
//! `--device sim`, the controller reaches `ready`, and the route proof shows observed replay
//! positions with one PM4-IB packet per token (or one dispatch per launch with `--transport aql`).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::reference_model;
use serde_json::Value;

/// `redline generate ... --json` with the soft HSA runtime presenting `isa`; the route's
/// environment variables removed (the tests choose the route with flags).
fn generate(args: &[&str], isa: &str) -> Value {
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .arg("generate")
        .args(args)
        .arg("--json")
        .env("REDLINE_HSA_LIBRARY", library)
        .env("REDLINE_SOFT_HSA_ISA", isa)
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stderr}"))
}

fn tiny_model() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("redline-generate-hsa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tiny.gguf");
        gguf::write_tiny_llama(&path, &gguf::TinyLlamaConfig::default()).unwrap();
        path
    })
    .clone()
}

/// The retained route's proof on `out`: ready, replayed at consecutive positions after the
/// warm-up, `packets` AQL packets per token, no ordinary launch in a retained forward.
fn assert_retained(out: &Value, transport: &str, packets: u64, what: &str) {
    let route = &out["route"];
    assert_eq!(route["state"], "ready", "{what}: {route}");
    assert_eq!(route["transport"], transport, "{what}");
    assert_eq!(route["submission"]["packets"], packets, "{what}: {route}");
    let positions: Vec<u64> = route["observations"]["replay_positions"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: {route}"))
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert!(positions.len() >= 4, "{what}: {positions:?}");
    assert!(positions.windows(2).all(|w| w[1] == w[0] + 1), "{what}: {positions:?}");
    assert_eq!(route["observations"]["ordinary_launches_in_retained_forwards"], 0, "{what}");
}

#[test]
fn tiny_model_decodes_on_the_hsa_backend_as_on_the_soft_device() {
    let model = tiny_model();
    let model = model.to_str().unwrap();
    for isa in ["gfx1030", "gfx1100", "gfx1201"] {
        let common = ["--model", model, "--prompt", "the cat", "--max-tokens", "16", "--arch", isa];
        let sim = generate(&[&common[..], &["--device", "sim", "--replay-backend", "hip"]].concat(), isa);
        for transport in ["pm4", "aql"] {
            let what = format!("{isa} {transport}");
            let hsa = generate(
                &[&common[..], &["--device", "hsa", "--replay-backend", "auto", "--transport", transport]].concat(),
                isa,
            );
            assert_eq!(hsa["tokens"], sim["tokens"], "{what}");
            let packets =
                if transport == "pm4" { 1 } else { hsa["route"]["submission"]["dispatches"].as_u64().unwrap() };
            assert_retained(&hsa, transport, packets, &what);
        }
    }
}

#[test]
fn the_reference_model_gives_the_soft_devices_tokens_on_the_hsa_backend() {
    let Some(path) = reference_model() else { return };
    let prompts = ["The capital of France is", "Once upon a time,", "The three primary colors are"];
    for prompt in prompts {
        let common = ["--model", path.as_str(), "--prompt", prompt, "--max-tokens", "16"];
        let sim = generate(&[&common[..], &["--device", "sim"]].concat(), "gfx1100");
        assert_eq!(sim["tokens"].as_array().unwrap().len(), 16, "{prompt}");
        for transport in ["pm4", "aql"] {
            let what = format!("{prompt:?} {transport}");
            let hsa = generate(
                &[&common[..], &["--device", "hsa", "--replay-backend", "auto", "--transport", transport]].concat(),
                "gfx1100",
            );
            assert_eq!(hsa["tokens"], sim["tokens"], "{what}");
            assert_eq!(hsa["text"], sim["text"], "{what}");
            let packets =
                if transport == "pm4" { 1 } else { hsa["route"]["submission"]["dispatches"].as_u64().unwrap() };
            assert_retained(&hsa, transport, packets, &what);
        }
    }
}
