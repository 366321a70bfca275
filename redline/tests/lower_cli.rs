//! `redline lower`: every built-in example on every architecture becomes a bundle that
//! `redline sim run` executes clean; tape files lower the same way; one decode step of the
//! built-in tiny llama and of the reference model (`REDLINE_SMOLLM2_GGUF`; under `CI=true` its
//! absence is a failure) becomes a bundle that runs clean and is that step (the token of the
//! position, the KV-cache row it writes, the logits it changes); bad input is refused with a
//! message naming what is wrong.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const ARCHES: [&str; 5] = ["gfx1030", "gfx1100", "gfx1151", "gfx1200", "gfx1201"];
const EXAMPLES: [&str; 3] = ["chain", "window", "wide"];

fn redline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline")).args(args).output().unwrap()
}

/// `redline` with its cache (where `--model tiny` is written) in `home`.
fn redline_in(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline")).args(args).env("REDLINE_HOME", home).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-lower-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sim_run(dir: &Path) -> Value {
    json(&redline(&["sim", "run", "--json", dir.to_str().unwrap()]))
}

#[test]
fn every_example_on_every_architecture_lowers_to_a_bundle_that_runs_clean() {
    for arch in ARCHES {
        for example in EXAMPLES {
            let dir = scratch(&format!("{example}-{arch}"));
            let lowered = json(&redline(&[
                "lower",
                "--example",
                example,
                "--arch",
                arch,
                "--out",
                dir.to_str().unwrap(),
                "--json",
            ]));
            assert_eq!(lowered["arch"], arch);
            let dispatches = lowered["tape"]["dispatch_count"].as_u64().unwrap();
            assert_eq!(lowered["check"]["dispatches"], dispatches, "{example} {arch}");
            let run = sim_run(&dir);
            assert_eq!(run["ok"], true, "{example} {arch}: {run}");
            assert_eq!(run["packets"], 1, "one AQL packet calls the IB");
            assert_eq!(run["dispatches"].as_array().unwrap().len() as u64, dispatches, "{example} {arch}");
            let manifest: Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
            assert!(!manifest["patch_sites"].as_array().unwrap().is_empty(), "{example} {arch}: a position binding");
            assert_eq!(run["expected_checked"], manifest["expected"].as_array().unwrap().len());
            if example == "window" {
                let kinds: Vec<&str> =
                    manifest["patch_sites"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
                assert!(kinds.contains(&"dispatch_dim"), "{arch}: the grid binding is a DIM patch site: {kinds:?}");
                assert!(kinds.contains(&"kernarg_u32"), "{arch}: {kinds:?}");
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

#[test]
fn the_written_tape_lowers_again_from_its_file_at_another_va_base() {
    let first = scratch("tape-source");
    json(&redline(&["lower", "--example", "chain", "--arch", "gfx1100", "--out", first.to_str().unwrap(), "--json"]));
    let tape = first.join("tape.json");
    let second = scratch("tape-relowered");
    let out = json(&redline(&[
        "lower",
        "--tape",
        tape.to_str().unwrap(),
        "--arch",
        "gfx1100",
        "--va-base",
        "0x600000000000",
        "--position",
        "7",
        "--out",
        second.to_str().unwrap(),
        "--json",
    ]));
    assert!(out["ib"]["va"].as_str().unwrap().starts_with("0x6000"), "{out}");
    assert_eq!(sim_run(&second)["ok"], true);
    // The patch site for fill(y).n holds position + 600 = 607 in the written kernargs.
    let manifest: Value = serde_json::from_slice(&std::fs::read(second.join("manifest.json")).unwrap()).unwrap();
    let site = &manifest["patch_sites"][0];
    assert_eq!(site["rule"], "position + 600");
    let va = u64::from_str_radix(site["va"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let region = manifest["regions"].as_array().unwrap().iter().find(|r| r["role"] == "kernargs").unwrap();
    let base = u64::from_str_radix(region["va"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let kernargs = std::fs::read(second.join(region["file"].as_str().unwrap())).unwrap();
    let at = usize::try_from(va - base).unwrap();
    assert_eq!(u32::from_le_bytes(kernargs[at..at + 4].try_into().unwrap()), 607);
    std::fs::remove_dir_all(&first).unwrap();
    std::fs::remove_dir_all(&second).unwrap();
}

#[test]
fn bad_input_is_refused_with_a_message_naming_it() {
    let dir = scratch("bad");
    let d = dir.to_str().unwrap();
    let out = redline(&["lower", "--example", "nope", "--arch", "gfx1100", "--out", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("chain, window, wide"));

    let out = redline(&["lower", "--example", "chain", "--arch", "gfx906", "--out", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gfx906"));

    let out = redline(&["lower", "--example", "chain", "--arch", "gfx1100", "--out", d, "--va-base", "zz"]);
    assert_eq!(out.status.code(), Some(2));

    // A tape recorded from gfx1100 code objects does not lower for gfx1201.
    let src = scratch("bad-src");
    json(&redline(&["lower", "--example", "chain", "--arch", "gfx1100", "--out", src.to_str().unwrap(), "--json"]));
    let tape = src.join("tape.json");
    let out = redline(&["lower", "--tape", tape.to_str().unwrap(), "--arch", "gfx1201", "--out", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not one of the built gfx1201 code objects"));
    assert!(!dir.exists(), "nothing written on failure");

    // A corrupted tape file is refused before anything is written.
    let mut bytes = std::fs::read(&tape).unwrap();
    bytes.truncate(bytes.len() / 2);
    let broken = src.join("broken.json");
    std::fs::write(&broken, bytes).unwrap();
    let out = redline(&["lower", "--tape", broken.to_str().unwrap(), "--arch", "gfx1100", "--out", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid JSON tape"));

    // An existing non-empty directory is never overwritten.
    let out = redline(&["lower", "--example", "chain", "--arch", "gfx1100", "--out", src.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));
    std::fs::remove_dir_all(&src).unwrap();

    let out = redline(&["lower", "--list-examples"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(EXAMPLES.iter().all(|e| text.contains(e)), "{text}");
}

/// The prompt's documented token at a position after 0: `(position * 7919) mod vocab`.
fn prompt_token(position: u32, vocab: u32) -> u32 {
    u32::try_from(u64::from(position) * 7919 % u64::from(vocab)).unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The initial and the expected bytes of the bundle region holding the model surface `name`,
/// and the offset of the surface's first used byte in them.
fn surface_bytes(dir: &Path, name: &str) -> (Vec<u8>, Vec<u8>, usize) {
    let model = read_json(&dir.join("model.json"));
    let manifest = read_json(&dir.join("manifest.json"));
    let surface = model["surfaces"].as_array().unwrap().iter().find(|s| s["surface"] == name).unwrap();
    let region = surface["region"].as_str().unwrap();
    let entry = manifest["regions"].as_array().unwrap().iter().find(|r| r["name"] == region).unwrap();
    let expected = manifest["expected"].as_array().unwrap().iter().find(|e| e["region"] == region).unwrap();
    let initial = std::fs::read(dir.join(entry["file"].as_str().unwrap())).unwrap();
    let after = std::fs::read(dir.join(expected["file"].as_str().unwrap())).unwrap();
    (initial, after, usize::try_from(surface["offset_bytes"].as_u64().unwrap()).unwrap())
}

/// The launches of one decode step of a model of `layers` layers of `architecture`.
fn step_launches(architecture: &str, layers: u32) -> u64 {
    match architecture {
        // The embedding row, 16 launches per layer, the final norm and the logits.
        "llama" => 3 + 16 * u64::from(layers),
        // The embedding row and its scale; per layer the norm, Q, K and V, the Q and K norms,
        // RoPE of Q, RoPE of K into the cache, V into the cache, attention, the output, its norm
        // and residual, the feed-forward norm, gate, up, GELU gating, down, its norm and
        // residual (20); the final norm and the logits.
        "gemma3" => 4 + 20 * u64::from(layers),
        other => panic!("no step of {other}"),
    }
}

/// Checks that the bundle in `dir` is the decode step at `position` of the GGUF at `model`
/// with a KV cache of `context` positions, and that `redline sim run` runs it clean.
fn assert_model_step_bundle(dir: &Path, model: &Path, position: u32, context: u32) {
    let file = gguf::Gguf::open(model).unwrap();
    let arch = file.str("general.architecture").unwrap().to_owned();
    let key = |k: &str| file.u32(&format!("{arch}.{k}")).unwrap();
    let layers = key("block_count");
    let kv_heads = key("attention.head_count_kv");
    // gemma3 states its head size; llama's is the embedding over the heads.
    let head_dim = if arch == "gemma3" {
        key("attention.key_length")
    } else {
        key("embedding_length") / key("attention.head_count")
    };
    let vocab = u32::try_from(file.tensor("token_embd.weight").unwrap().dims()[1]).unwrap();
    let tape = read_json(&dir.join("tape.json"));
    let launches = tape["launches"].as_array().unwrap().len() as u64;
    assert_eq!(launches, step_launches(&arch, layers), "the tape holds one decode step");

    let run = sim_run(dir);
    assert_eq!(run["ok"], true, "{run}");
    assert_eq!(run["packets"], 1, "one AQL packet calls the IB");
    assert_eq!(run["dispatches"].as_array().unwrap().len() as u64, launches);

    let described = read_json(&dir.join("model.json"));
    assert_eq!(described["architecture"], arch.as_str());
    assert_eq!(described["position"], position);
    assert_eq!(described["context"], context);
    assert_eq!(described["recorded_positions"], serde_json::json!([position - 3, position - 2, position - 1]));

    // The token region holds the prompt's token of the position (its host preparation ran).
    let (token, _, at) = surface_bytes(dir, "token");
    let token = u32::from_le_bytes(token[at..at + 4].try_into().unwrap());
    assert_eq!(token, prompt_token(position, vocab));

    // Each layer's K and V rows: positions before `position` are the prefix's and stay; the
    // step writes row `position`; the rows after it stay zero.
    let row_bytes = 4 * usize::try_from(kv_heads * head_dim).unwrap();
    let layer_bytes = row_bytes * usize::try_from(context).unwrap();
    let p = usize::try_from(position).unwrap();
    for name in ["k_cache", "v_cache"] {
        let (before, after, at) = surface_bytes(dir, name);
        for layer in 0..usize::try_from(layers).unwrap() {
            let row = |bytes: &[u8], pos: usize| {
                let start = at + layer * layer_bytes + pos * row_bytes;
                bytes[start..start + row_bytes].to_vec()
            };
            let zero = vec![0u8; row_bytes];
            assert_ne!(row(&before, p - 1), zero, "{name} layer {layer}: the prefix filled row {}", p - 1);
            assert_eq!(row(&before, p - 1), row(&after, p - 1), "{name} layer {layer}: row {} kept", p - 1);
            assert_eq!(row(&before, p), zero, "{name} layer {layer}: row {p} starts empty");
            assert_ne!(row(&after, p), zero, "{name} layer {layer}: the step writes row {p}");
            if p + 1 < usize::try_from(context).unwrap() {
                assert_eq!(row(&after, p + 1), zero, "{name} layer {layer}: row {} stays empty", p + 1);
            }
        }
    }

    // The logits change and are finite numbers.
    let (before, after, at) = surface_bytes(dir, "logits");
    let used = at..at + 4 * usize::try_from(vocab).unwrap();
    assert_ne!(before[used.clone()], after[used.clone()], "the step writes new logits");
    assert!(after[used].chunks_exact(4).all(|c| f32::from_le_bytes(c.try_into().unwrap()).is_finite()));
}

#[test]
fn a_tiny_llama_decode_step_lowers_to_a_bundle_that_runs_clean() {
    let home = scratch("tiny-home");
    for arch in ["gfx1100", "gfx1201"] {
        let dir = scratch(&format!("tiny-{arch}"));
        let d = dir.to_str().unwrap();
        let out =
            redline_in(&home, &["lower", "--model", "tiny", "--position", "5", "--arch", arch, "--out", d, "--json"]);
        let lowered = json(&out);
        assert_eq!(lowered["arch"], arch);
        assert_eq!(lowered["model"]["position"], 5);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("running the ordinary path at positions 0..=1"), "{stderr}");
        // `tiny` is the generated model, written into the cache on first use.
        let cached = home.join("models/tiny/tiny-llama.gguf");
        assert_eq!(std::fs::read(&cached).unwrap(), gguf::tiny_llama(&gguf::TinyLlamaConfig::default()));
        // The tiny model's trained context is 256, below the default of 1024.
        assert_model_step_bundle(&dir, &cached, 5, 256);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn a_tiny_gemma3_decode_step_past_its_window_lowers_to_a_bundle_that_runs_clean() {
    let home = scratch("tiny-gemma3-home");
    let dir = scratch("tiny-gemma3");
    let d = dir.to_str().unwrap();
    // Position 20: recorded at 17, 18 and 19, where every sliding layer's window (8 keys) starts
    // past key 0; the bundle is patched for the window starting at key 13.
    let args = ["lower", "--model", "tiny-gemma3", "--position", "20", "--arch", "gfx1100", "--out", d, "--json"];
    let lowered = json(&redline_in(&home, &args));
    assert_eq!(lowered["model"]["position"], 20);
    let cached = home.join("models/tiny-gemma3/tiny-gemma3.gguf");
    assert_eq!(std::fs::read(&cached).unwrap(), gguf::tiny_gemma3(&gguf::TinyGemma3Config::default()));
    // Its trained context is 2048; the default KV cache is 1024 positions.
    assert_model_step_bundle(&dir, &cached, 20, 1024);
    // The window's first key is bound on the sliding layers (all but layer 5 of 7) and patched
    // for position 20: max(0, 20 + 1 - 8) = 13; every layer attends over 21 keys.
    let manifest = read_json(&dir.join("manifest.json"));
    let regions = manifest["regions"].as_array().unwrap();
    let patched = |binding: &str| -> Option<(String, u32)> {
        let site = manifest["patch_sites"].as_array().unwrap().iter().find(|s| s["binding"] == binding)?;
        let va = u64::from_str_radix(site["va"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let region = regions.iter().find(|r| {
            let start = u64::from_str_radix(r["va"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
            (start..start + r["size"].as_u64().unwrap()).contains(&va) && r["file"].is_string()
        })?;
        let start = u64::from_str_radix(region["va"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let bytes = std::fs::read(dir.join(region["file"].as_str().unwrap())).unwrap();
        let at = usize::try_from(va - start).unwrap();
        Some((site["rule"].as_str().unwrap().to_owned(), u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())))
    };
    for layer in 0..7 {
        let first = patched(&format!("layer{layer}.attention.first"));
        let expected = (layer != 5).then(|| ("max(0, position + -7)".to_owned(), 13));
        assert_eq!(first, expected, "layer {layer}");
        assert_eq!(patched(&format!("layer{layer}.attention.n")), Some(("position + 1".to_owned(), 21)));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn the_gemma_model_decode_step_lowers_to_a_bundle_that_runs_clean() {
    let Some(model) = common::gemma_model() else { return };
    let dir = scratch("gemma-gfx1100");
    let d = dir.to_str().unwrap();
    let started = std::time::Instant::now();
    let out = redline(&["lower", "--model", &model, "--position", "40", "--arch", "gfx1100", "--out", d, "--json"]);
    let lowered = json(&out);
    println!("lowering Gemma 3 270M at position 40 took {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(lowered["check"]["dispatches"], 4 + 20 * 18, "Gemma 3 270M has 18 layers");
    // Its trained context is 32768; the default KV cache is 1024 positions.
    assert_model_step_bundle(&dir, Path::new(&model), 40, 1024);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_reference_model_decode_step_lowers_to_a_bundle_that_runs_clean() {
    let Some(model) = common::reference_model() else { return };
    let dir = scratch("smollm2-gfx1100");
    let d = dir.to_str().unwrap();
    let started = std::time::Instant::now();
    let out = redline(&["lower", "--model", &model, "--position", "40", "--arch", "gfx1100", "--out", d, "--json"]);
    let lowered = json(&out);
    println!("lowering SmolLM2 at position 40 took {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(lowered["check"]["dispatches"], 3 + 16 * 30, "SmolLM2-135M has 30 layers");
    // Its trained context is 8192; the default KV cache is 1024 positions.
    assert_model_step_bundle(&dir, Path::new(&model), 40, 1024);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_model_input_is_refused_with_a_message_naming_it() {
    let home = scratch("bad-model-home");
    let dir = scratch("bad-model");
    let d = dir.to_str().unwrap();
    let lower = |extra: &[&str]| {
        let out = redline_in(&home, &[&["lower", "--arch", "gfx1100", "--out", d][..], extra].concat());
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };

    // Usage (exit 2): --model with another source, without --position; --context without --model.
    for extra in [
        &["--model", "tiny", "--position", "5", "--example", "chain"][..],
        &["--model", "tiny", "--position", "5", "--tape", "t.json"][..],
    ] {
        let (code, stderr) = lower(extra);
        assert_eq!(code, Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains("cannot be used with"), "{extra:?}: {stderr}");
    }
    let (code, stderr) = lower(&["--model", "tiny"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--position"), "{stderr}");
    let (code, stderr) = lower(&["--example", "chain", "--context", "8"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--model"), "{stderr}");
    // An argument that is no alias and no file, as for generate, bench and pull.
    let (code, stderr) = lower(&["--model", "llama-70b", "--position", "5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("\"llama-70b\"") && stderr.contains("smollm2-135m, gemma-3-270m; built in: tiny, tiny-gemma3")
    );

    // The model cannot be lowered as asked (exit 1).
    let cases: [(&[&str], &[&str]); 5] = [
        (&["--model", "tiny", "--position", "256"], &["position 256", "context of 256 positions", "at most 256"]),
        (&["--model", "tiny", "--position", "64", "--context", "64"], &["position 64", "context of 64 positions"]),
        (&["--model", "tiny", "--position", "2"], &["position 2", "at least 3"]),
        (&["--model", "tiny", "--position", "5", "--context", "300"], &["--context 300", "1..=256"]),
        (
            &["--model", "tiny-gemma3", "--position", "5", "--context", "3000"],
            &["--context 3000", "1..=2048", "(gemma3.context_length)"],
        ),
    ];
    for (extra, needles) in cases {
        let (code, stderr) = lower(extra);
        assert_eq!(code, Some(1), "{extra:?}: {stderr}");
        assert!(needles.iter().all(|n| stderr.contains(n)), "{extra:?}: {stderr}");
    }
    let garbage = home.join("garbage.gguf");
    std::fs::write(&garbage, b"not a model at all").unwrap();
    let (code, stderr) = lower(&["--model", garbage.to_str().unwrap(), "--position", "5"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("garbage.gguf") && stderr.contains("bad magic"), "{stderr}");
    assert!(!dir.exists(), "nothing written on failure");
    std::fs::remove_dir_all(&home).unwrap();
}

/// The tiny `lfm2` and `qwen35` decode steps as bundles: `sim run` runs each clean (one AQL
/// packet, every dispatch of the tape, every expected region matching); `model.json` names each
/// state surface with its kind; and each state region holds the prefix's state at the start
/// (written by the positions before, so not zero) and the step's rewrite of it at the end (the
/// step changes it in place), while the guard bytes around it keep their pattern.
#[test]
fn state_model_decode_steps_lower_to_bundles_that_name_their_state() {
    let home = scratch("state-models-home");
    let cases: [(&str, &[(&str, &str)]); 2] = [
        ("tiny-lfm2", &[("conv_state", "convolution")]),
        ("tiny-qwen35", &[("conv_state", "convolution"), ("recurrent_state", "recurrent")]),
    ];
    for (model, states) in cases {
        let dir = scratch(model);
        let d = dir.to_str().unwrap();
        let args = ["lower", "--model", model, "--position", "6", "--context", "64", "--arch", "gfx1100", "--out", d];
        let lowered = json(&redline_in(&home, &[&args[..], &["--json"]].concat()));
        assert_eq!(lowered["model"]["position"], 6, "{model}");
        let run = sim_run(&dir);
        assert_eq!(run["ok"], true, "{model}: {run}");
        assert_eq!(run["packets"], 1, "{model}");
        let launches = read_json(&dir.join("tape.json"))["launches"].as_array().unwrap().len();
        assert_eq!(run["dispatches"].as_array().unwrap().len(), launches, "{model}");

        let described = read_json(&dir.join("model.json"));
        let named: Vec<(String, String)> = described["surfaces"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| !s["state"].is_null())
            .map(|s| (s["surface"].as_str().unwrap().to_owned(), s["state"].as_str().unwrap().to_owned()))
            .collect();
        let expected: Vec<(String, String)> = states.iter().map(|(s, k)| ((*s).to_owned(), (*k).to_owned())).collect();
        assert_eq!(named, expected, "{model}: the state surfaces and their kinds");
        for (name, _) in states {
            let surface = described["surfaces"].as_array().unwrap().iter().find(|s| s["surface"] == *name).unwrap();
            let bytes = usize::try_from(surface["bytes"].as_u64().unwrap()).unwrap();
            let (before, after, at) = surface_bytes(&dir, name);
            let (used_before, used_after) = (&before[at..at + bytes], &after[at..at + bytes]);
            assert!(used_before.iter().any(|&b| b != 0), "{model}: {name} holds the prefix's state");
            assert_ne!(used_before, used_after, "{model}: the step rewrites {name}");
            assert!(before[..at].iter().chain(&after[..at]).all(|&b| b == 0xA5), "{model}: {name}'s guard");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::remove_dir_all(&home).unwrap();
}
