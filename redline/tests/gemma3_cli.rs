//! `redline generate` with `gemma3` models, on the soft device and on the HSA backend over the
//! soft HSA runtime (`REDLINE_HSA_LIBRARY` pointed at the `libsoft_hsa.so` cargo built):
//! - the built-in `tiny-gemma3` (a sliding window of 8) by its alias: the retained route gives
//!   the ordinary route's token ids far past the window, on both backends;
//! - `--chat` on a model without a chat template is refused before anything loads, naming the
//!   model and saying to drop `--chat`;
//! - Gemma 3 270M (`REDLINE_GEMMA3_GGUF`; under `CI=true` its absence is a failure): admitted on
//!   the soft device, it continues a prompt as an established engine does on the same file and
//!   prints its prefill and decode speeds; a 600-token prompt (past the 512-position window) and
//!   64 new tokens give the same token ids on the retained route (the admitted default on the
//!   soft device, asked for on the HSA backend) as on the ordinary one (`--replay-backend hip`).

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::gemma_model;
use serde_json::Value;

/// A cache root of this test process's own, so the built-in alias is written there.
fn home() -> PathBuf {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("redline-gemma3-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .clone()
}

/// `redline generate ARGS` with the soft HSA runtime presenting `isa` and the route's
/// environment variables removed (the tests choose the route with flags).
fn run(args: &[&str], isa: &str) -> Output {
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    Command::new(env!("CARGO_BIN_EXE_redline"))
        .arg("generate")
        .args(args)
        .env("REDLINE_HOME", home())
        .env("REDLINE_HSA_LIBRARY", library)
        .env("REDLINE_SOFT_HSA_ISA", isa)
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .output()
        .unwrap()
}

/// `redline generate ARGS --json`, which must succeed.
fn generate(args: &[&str], isa: &str) -> Value {
    let out = run(&[args, &["--json"]].concat(), isa);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stderr}"))
}

fn ids(out: &Value) -> Vec<u64> {
    out["tokens"].as_array().unwrap_or_else(|| panic!("{out}")).iter().map(|t| t.as_u64().unwrap()).collect()
}

/// The retained route's proof on `out`: ready, replayed at consecutive positions running to the
/// last one, no ordinary launch in a retained forward.
fn assert_retained(out: &Value, last_position: u64, what: &str) {
    let route = &out["route"];
    assert_eq!(route["state"], "ready", "{what}: {route}");
    let positions: Vec<u64> = route["observations"]["replay_positions"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: {route}"))
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert!(positions.len() >= 4, "{what}: {positions:?}");
    assert!(positions.windows(2).all(|w| w[1] == w[0] + 1), "{what}: {positions:?}");
    assert_eq!(positions.last(), Some(&last_position), "{what}: {positions:?}");
    assert_eq!(route["observations"]["ordinary_launches_in_retained_forwards"], 0, "{what}");
}

/// The ordinary route's proof on `out`: no retained token.
fn assert_ordinary(out: &Value, what: &str) {
    let route = &out["route"];
    assert_eq!(route["observations"]["retained"], 0, "{what}: {route}");
    assert!(route["observations"]["replay_positions"].as_array().is_none_or(Vec::is_empty), "{what}: {route}");
}

/// The sealed fixture whose admission row certifies Gemma 3 270M on gfx1100.
const FIXTURE: &str = "gemma-3-270m-gfx1100-sim";

#[test]
fn the_built_in_tiny_gemma3_gives_the_ordinary_tokens_on_the_retained_route_past_its_window() {
    // BOS and the piece "The": the route records where the window's first key is still 0.
    let common = ["--model", "tiny-gemma3", "--prompt", "The", "--max-tokens", "40", "--temperature", "0"];
    for isa in ["gfx1030", "gfx1100", "gfx1201"] {
        let with = |extra: &[&str]| generate(&[&common[..], &["--arch", isa], extra].concat(), isa);
        let ordinary = with(&["--device", "sim", "--replay-backend", "hip"]);
        assert_ordinary(&ordinary, isa);
        let expected = ids(&ordinary);
        assert_eq!(expected.len(), 40, "{isa}: {ordinary}");
        assert!(expected.windows(2).any(|w| w[0] != w[1]), "{isa}: one repeated token proves little: {expected:?}");
        assert_eq!(ordinary["prompt_tokens"], 2, "{isa}");
        let last = 2 + 40 - 2;
        for (device, transport) in [("sim", "pm4"), ("hsa", "pm4"), ("hsa", "aql")] {
            let what = format!("{isa} {device} {transport}");
            let route = ["--device", device, "--replay-backend", "auto", "--transport", transport];
            let retained = with(&route);
            assert_eq!(ids(&retained), expected, "{what}");
            assert_eq!(retained["text"], ordinary["text"], "{what}");
            assert_retained(&retained, last, &what);
            let first = retained["route"]["observations"]["replay_positions"][0].as_u64().unwrap();
            assert!(first < 8, "{what}: recorded before the window's first key moves, replayed from {first}");
        }
        let hsa_ordinary = with(&["--device", "hsa", "--replay-backend", "hip"]);
        assert_eq!(ids(&hsa_ordinary), expected, "{isa}: the HSA backend's ordinary route");
        assert_ordinary(&hsa_ordinary, isa);
    }
}

#[test]
fn chat_on_a_model_without_a_chat_template_is_refused_naming_the_model() {
    let path = home().join("chatless.gguf");
    gguf::write_tiny_gemma3(&path, &gguf::TinyGemma3Config::default()).unwrap();
    let mut models = vec!["tiny-gemma3".to_owned(), path.display().to_string()];
    models.extend(gemma_model());
    for model in &models {
        for prompt in [&["--prompt", "Hello"][..], &[]] {
            let out = run(&[&["--model", model.as_str(), "--device", "sim", "--chat"][..], prompt].concat(), "gfx1100");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{model} {prompt:?}: a usage error: {stderr}");
            assert!(
                stderr.contains(&format!("--chat: the model {model}")) && stderr.contains("has no chat template"),
                "{model}: {stderr}"
            );
            assert!(stderr.contains("drop --chat"), "{model}: {stderr}");
            assert!(!stderr.contains("device:"), "refused before a device is opened: {stderr}");
            assert!(out.stdout.is_empty(), "{model}");
        }
    }
}

#[test]
fn gemma_3_270m_is_decided_by_its_row_continues_as_an_established_engine_and_prints_its_speeds() {
    let Some(model) = gemma_model() else { return };
    let args = ["--model", &model, "--device", "sim", "--prompt", "The capital of France is", "--max-tokens", "8"];
    let out = run(&args, "gfx1100");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // llama.cpp's greedy continuation on the same file starts " the capital of the country of
    // France."; eight tokens reach the full stop.
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), " the capital of the country of France.");
    let decision = stderr.lines().find_map(|l| l.strip_prefix("admission: ")).unwrap_or_else(|| panic!("{stderr}"));
    if common::promoted(FIXTURE) {
        assert!(decision.starts_with("admitted by row"), "{stderr}");
    } else {
        assert!(
            decision.contains(&format!("(fixture {FIXTURE}) does not arm the retained route by default")),
            "{stderr}"
        );
    }
    let summary = stderr.lines().find(|l| l.contains(" new tokens (")).unwrap_or_else(|| panic!("{stderr}"));
    let rate = |label: &str| -> f64 {
        let at = summary.find(label).unwrap_or_else(|| panic!("{label}: {summary}")) + label.len();
        summary[at..].split_whitespace().next().unwrap().parse().unwrap()
    };
    assert!(rate("prefill ") > 0.0 && rate("decode ") > 0.0, "{summary}");
    if common::promoted(FIXTURE) {
        assert!(summary.contains("state ready") || summary.contains("state recording"), "{summary}");
    }
}

/// Common English words: the prompt is drawn from them with a fixed generator.
const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "a",
    "to",
    "in",
    "is",
    "was",
    "that",
    "for",
    "it",
    "with",
    "as",
    "on",
    "by",
    "at",
    "from",
    "river",
    "mountain",
    "city",
    "king",
    "winter",
    "garden",
    "road",
    "ship",
    "letter",
    "music",
    "school",
    "market",
    "old",
    "long",
    "small",
    "green",
    "quiet",
    "early",
    "walked",
    "found",
    "built",
    "carried",
    "remembered",
    "people",
];

/// A deterministic English-like text of exactly `tokens` tokens in `model`'s tokenizer (BOS
/// included, as `generate` encodes a prompt): words from a fixed generator, a full stop every
/// eleventh word, then " the" until the count is reached.
fn prompt_of(model: &str, tokens: usize) -> String {
    let file = gguf::Gguf::open(std::path::Path::new(model)).unwrap();
    let tokenizer = engine::model::tokenizer_from_gguf(&file).unwrap();
    let count = |text: &str| tokenizer.encode_special(text, true, false).len();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut words = Vec::new();
    for i in 0..tokens {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let word = WORDS[usize::try_from(state >> 33).unwrap() % WORDS.len()];
        words.push(if i % 11 == 10 { format!("{word}.") } else { word.to_owned() });
    }
    // The longest prefix of whole words within the count, by bisection.
    let (mut fits, mut over) = (1, words.len() + 1);
    while over - fits > 1 {
        let mid = usize::midpoint(fits, over);
        if count(&words[..mid].join(" ")) <= tokens { fits = mid } else { over = mid }
    }
    let mut text = words[..fits].join(" ");
    while count(&text) < tokens {
        text.push_str(" the");
    }
    assert_eq!(count(&text), tokens, "{text}");
    text
}

#[test]
fn gemma_3_270m_gives_the_ordinary_tokens_on_the_retained_route_after_a_600_token_prompt() {
    let Some(model) = gemma_model() else { return };
    let started = std::time::Instant::now();
    let prompt = prompt_of(&model, 600);
    println!("the prompt: {:.1} s", started.elapsed().as_secs_f64());
    let common = ["--model", &model, "--prompt", &prompt, "--max-tokens", "64", "--temperature", "0"];
    let with = |extra: &[&str]| {
        let started = std::time::Instant::now();
        let out = generate(&[&common[..], extra].concat(), "gfx1100");
        let (prefill, decode) = (&out["prefill_tokens_per_second"], &out["tokens_per_second"]);
        println!("{extra:?}: prefill {prefill} tok/s, decode {decode} tok/s, {:.1} s", started.elapsed().as_secs_f64());
        out
    };
    let ordinary = with(&["--device", "sim", "--replay-backend", "hip"]);
    assert_eq!(ordinary["prompt_tokens"], 600, "{}", ordinary["prompt_tokens"]);
    assert_ordinary(&ordinary, "sim hip");
    let expected = ids(&ordinary);
    assert_eq!(expected.len(), 64, "no end of text before 64 tokens: {ordinary}");
    assert!(expected.windows(2).any(|w| w[0] != w[1]), "{expected:?}");
    // The last token is sampled from the logits of position 662 and never run through the model.
    let last = 600 + 64 - 2;

    // The soft device: the default when the fixture's sealing run promoted the retained route,
    // the route asked for when it did not.
    let retained = with(&[&["--device", "sim"], common::arming(&[FIXTURE])].concat());
    common::assert_admission_follows(&retained["admission"], FIXTURE);
    assert_eq!(ids(&retained), expected, "sim: the retained route's ids");
    assert_retained(&retained, last, "sim");
    for speed in ["tokens_per_second", "prefill_tokens_per_second"] {
        assert!(retained[speed].as_f64().unwrap() > 0.0, "{speed}: {retained}");
    }

    // The HSA backend: no row admits it, so the route is asked for.
    let hsa_ordinary = with(&["--device", "hsa", "--replay-backend", "hip"]);
    assert_ordinary(&hsa_ordinary, "hsa hip");
    assert_eq!(ids(&hsa_ordinary), expected, "hsa: the ordinary route's ids");
    let hsa = with(&["--device", "hsa", "--replay-backend", "auto"]);
    assert_eq!(ids(&hsa), expected, "hsa: the retained route's ids");
    assert_retained(&hsa, last, "hsa");
}
