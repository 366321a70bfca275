//! `redline serve` with several `--model`s on one device: A → B → A over HTTP gives each model
//! exactly the token ids a fresh `redline generate` of it gives (recovered from the chat
//! endpoint's per-token bytes: the tiny models' text is mostly U+FFFD, which many ids print as);
//! each switch resets the controller
//! (the route proof's `reconfiguration` counts it and names both models) and the retained route
//! is reached again with no stale-plan error; a request for the loaded model does not reload it;
//! an unknown id is a 404 naming the served ones; two models with one id are refused.

mod serve_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use serve_common::{Server, tiny_model_seeded};

const PROMPT: &str = "the cat";
const MAX_TOKENS: u32 = 16;

/// Two different tiny llamas, served as `swap-a` and `swap-b`. Random tiny llamas mostly repeat
/// one token; under greedy decoding of [`PROMPT`] as a chat message these two change token (seed
/// 8: 13 ×8, 199 ×8, within the retained positions; seed 7: 13 ×3, 59 ×13), so a stale KV cache,
/// position or plan would show.
fn two_models() -> (PathBuf, PathBuf) {
    (tiny_model_seeded("swap-a", 256, 8), tiny_model_seeded("swap-b", 256, 7))
}

/// A greedy answer: its token ids, text and finish reason.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    ids: Vec<u64>,
    text: String,
    finish_reason: String,
}

/// The ids of the tiny models' vocabulary by the bytes the server reports for each (every
/// tiny model has this vocabulary; the map is checked to be one to one, so a token's bytes name
/// its id).
fn ids_by_bytes() -> std::collections::HashMap<Vec<u8>, u64> {
    let (a, _) = two_models();
    let tokenizer = engine::model::tokenizer_from_gguf(&gguf::Gguf::open(&a).unwrap()).unwrap();
    let mut ids = std::collections::HashMap::new();
    for id in 0..u32::try_from(tokenizer.vocab_size()).unwrap() {
        let bytes = tokenizer.token_bytes(id, true).unwrap().to_vec();
        assert!(ids.insert(bytes, u64::from(id)).is_none(), "token {id}'s bytes name another token too");
    }
    ids
}

/// A fresh `redline generate --chat` process of `model`: its answer.
fn fresh(model: &Path) -> Answer {
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["generate", "--json", "--chat", "--model", model.to_str().unwrap(), "--device", "sim"])
        .args(["--prompt", PROMPT, "--max-tokens", &MAX_TOKENS.to_string(), "--temperature", "0"])
        .args(["--replay-backend", "auto"])
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    Answer {
        ids: report["tokens"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect(),
        text: report["text"].as_str().unwrap().to_owned(),
        finish_reason: report["finish_reason"].as_str().unwrap().to_owned(),
    }
}

/// A greedy chat completion of [`PROMPT`] as one user message from `model` (`None`: no `model`
/// field), its ids read back from each token's bytes.
fn complete(server: &Server, model: Option<&str>, vocabulary: &std::collections::HashMap<Vec<u8>, u64>) -> Answer {
    let mut request = json!({
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": MAX_TOKENS, "temperature": 0, "logprobs": true,
    });
    if let Some(model) = model {
        request["model"] = json!(model);
    }
    let response = server.post("/v1/chat/completions", &request);
    assert_eq!(response.status, 200, "{model:?}: {}", response.text());
    let body = response.json();
    assert_eq!(body["model"], model.unwrap_or("swap-a"), "{body}");
    let choice = &body["choices"][0];
    let ids: Vec<u64> = choice["logprobs"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|token| {
            let bytes: Vec<u8> =
                token["bytes"].as_array().unwrap().iter().map(|b| u8::try_from(b.as_u64().unwrap()).unwrap()).collect();
            *vocabulary.get(&bytes).unwrap_or_else(|| panic!("no token has the bytes {bytes:?}"))
        })
        .collect();
    assert_eq!(body["usage"]["completion_tokens"].as_u64(), Some(u64::try_from(ids.len()).unwrap()), "{body}");
    Answer {
        ids,
        text: choice["message"]["content"].as_str().unwrap().to_owned(),
        finish_reason: choice["finish_reason"].as_str().unwrap().to_owned(),
    }
}

/// Asserts the status after a request for `loaded`: that model is loaded, `switches` switches
/// have been made, and the retained route is in use with no fallback.
fn assert_loaded(server: &Server, loaded: &str, switches: u64) -> Value {
    let status = server.get("/redline/status").json();
    assert_eq!(status["model"]["id"], loaded, "{status}");
    assert_eq!(status["switches"], switches, "{status}");
    let flags: Vec<(&str, bool)> = status["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["loaded"].as_bool().unwrap()))
        .collect();
    assert_eq!(flags, [("swap-a", loaded == "swap-a"), ("swap-b", loaded == "swap-b")], "{status}");
    let controller = &status["controller"];
    assert!(controller["fallback_reason"].is_null(), "no stale-plan error: {status}");
    assert_eq!(controller["state"], "ready", "{status}");
    assert!(status["observations"]["retained"].as_u64().unwrap() > 0, "{status}");
    assert!(status["admission"]["reason"].as_str().is_some_and(|r| !r.is_empty()), "{status}");
    status
}

/// Asserts the controller's reconfiguration record after switch `count` from `from` to `to`.
fn assert_reconfigured(status: &Value, count: u64, from: &str, to: &str) {
    let reconfiguration = &status["controller"]["reconfiguration"];
    assert_eq!(reconfiguration["count"], count, "{status}");
    assert_eq!(reconfiguration["sentence"], "Model reconfiguration invalidated the old plan.");
    let detail = reconfiguration["detail"].as_str().unwrap();
    let expected = format!("model switch {from} -> {to}; old plan: the pm4 plan of ");
    assert!(detail.starts_with(&expected), "{detail}");
    assert!(detail.ends_with("(released)"), "{detail}");
}

#[test]
fn a_to_b_to_a_gives_each_model_its_fresh_tokens_and_the_status_shows_each_reset() {
    let (a, b) = two_models();
    let vocabulary = ids_by_bytes();
    let (fresh_a, fresh_b) = (fresh(&a), fresh(&b));
    assert_ne!(fresh_a.ids, fresh_b.ids, "the two models must differ for the test to mean anything");
    for ids in [&fresh_a.ids, &fresh_b.ids] {
        assert!(ids.windows(2).any(|w| w[0] != w[1]), "a model that repeats one token proves little: {ids:?}");
    }
    let complete = |server: &Server, model: Option<&str>| complete(server, model, &vocabulary);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let server = Server::start(&["--model", a, "--model", b, "--device", "sim", "--replay-backend", "auto"]);

    let status = server.get("/redline/status").json();
    assert_eq!((&status["model"]["id"], &status["switches"]), (&json!("swap-a"), &json!(0)), "{status}");
    assert!(status["controller"]["reconfiguration"].is_null(), "the first load is no switch: {status}");

    // A, loaded at startup; a second request for it neither reloads it nor loses its plan.
    assert_eq!(complete(&server, Some("swap-a")), fresh_a);
    assert_loaded(&server, "swap-a", 0);
    assert_eq!(complete(&server, Some("swap-a")), fresh_a);
    let status = assert_loaded(&server, "swap-a", 0);
    assert!(status["controller"]["reconfiguration"].is_null(), "{status}");

    // → B: the old plan is released and the controller reaches the retained route again.
    assert_eq!(complete(&server, Some("swap-b")), fresh_b);
    assert_reconfigured(&assert_loaded(&server, "swap-b", 1), 1, "swap-a", "swap-b");
    assert_eq!(complete(&server, Some("swap-b")), fresh_b);
    assert_reconfigured(&assert_loaded(&server, "swap-b", 1), 1, "swap-a", "swap-b");

    // → A, by leaving `model` out (the first served model).
    assert_eq!(complete(&server, None), fresh_a);
    assert_reconfigured(&assert_loaded(&server, "swap-a", 2), 2, "swap-b", "swap-a");
    assert_eq!(complete(&server, Some("swap-a")), fresh_a);
    assert_reconfigured(&assert_loaded(&server, "swap-a", 2), 2, "swap-b", "swap-a");
    assert_eq!(server.metric("redline_model_switches_total"), 2.0);
}

#[test]
fn an_unknown_model_is_a_404_naming_the_served_ids_and_v1_models_lists_every_model() {
    let (a, b) = two_models();
    let server = Server::start(&["--model", a.to_str().unwrap(), "--model", b.to_str().unwrap(), "--device", "sim"]);
    let listed = server.get("/v1/models").json();
    let ids: Vec<&str> = listed["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["swap-a", "swap-b"], "{listed}");
    assert!(listed["data"].as_array().unwrap().iter().all(|m| m["object"] == "model"), "{listed}");

    let completion = json!({"model": "gpt-4o", "prompt": PROMPT, "max_tokens": 2});
    let chat = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2});
    for (path, body) in [("/v1/completions", completion), ("/v1/chat/completions", chat)] {
        let response = server.post(path, &body);
        assert_eq!(response.status, 404, "{path}: {}", response.text());
        let error = &response.json()["error"];
        assert_eq!(
            (&error["type"], &error["param"], &error["code"]),
            (&json!("invalid_request_error"), &json!("model"), &json!("model_not_found")),
            "{error}"
        );
        assert_eq!(
            error["message"], "the model 'gpt-4o' is not served here; the served models are: swap-a, swap-b",
            "{error}"
        );
    }
    // Chat with the second model switches to it; nothing was switched for the 404s.
    assert_eq!(server.get("/redline/status").json()["switches"], 0);
    let chat = json!({"model": "swap-b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4});
    let response = server.post("/v1/chat/completions", &chat);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["model"], "swap-b");
    let status = server.get("/redline/status").json();
    assert_eq!((&status["model"]["id"], &status["switches"]), (&json!("swap-b"), &json!(1)), "{status}");
    assert!(status["models"][1]["path"].as_str().unwrap().ends_with("swap-b.gguf"), "{status}");
    assert_eq!(status["models"][1]["sha256"].as_str().unwrap().len(), 64, "{status}");
    assert!(server.stderr().contains("model switch swap-a -> swap-b"), "{}", server.stderr());
}

#[test]
fn two_models_with_one_id_are_refused_at_startup_naming_it() {
    let (a, _) = two_models();
    let other = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve").join("other");
    std::fs::create_dir_all(&other).unwrap();
    let copy = other.join("swap-a.gguf");
    std::fs::copy(&a, &copy).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["serve", "--port", "0", "--device", "sim"])
        .args(["--model", a.to_str().unwrap(), "--model", copy.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("are both served as 'swap-a'"), "{stderr}");
    assert!(stderr.contains(copy.to_str().unwrap()), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn help_explains_several_models() {
    let out = Command::new(env!("CARGO_BIN_EXE_redline")).args(["serve", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in
        ["Repeat to serve several models", "repeat --model", "model_not_found", "without \"model\" gets the first"]
    {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}
