//! `redline serve` across architectures whose layers carry sequence state: a tiny llama, the
//! tiny `lfm2` (convolution state) and the tiny `qwen35` (convolution and recurrent state),
//! served by one daemon on the soft device with the retained route asked for. Every request, in
//! the order llama → lfm2 → lfm2 → qwen35 → qwen35 → llama → lfm2, gets exactly the answer a fresh
//! daemon serving only that model gives the same request as its first: the same tokens and the same
//! log-probability of each, bit for bit (the completions' `logprobs`). A state left over from the
//! previous request of the same model (no reset when a request starts) or from another model (a
//! swap that kept anything) would change the log-probabilities of the next answer.

mod serve_common;

use std::path::PathBuf;

use serde_json::{Value, json};
use serve_common::{Server, tiny_model_seeded};

const MAX_TOKENS: u32 = 12;
const PROMPTS: [&str; 2] = ["the cat sat on", "a dog ran"];

/// The three models as files named after their served ids.
fn models() -> [(&'static str, PathBuf); 3] {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-state");
    std::fs::create_dir_all(&dir).unwrap();
    let lfm2 = dir.join("state-lfm2.gguf");
    gguf::write_tiny_lfm2(&lfm2, &gguf::TinyLfm2Config { context_length: 256, ..gguf::TinyLfm2Config::default() })
        .unwrap();
    let qwen35 = dir.join("state-qwen35.gguf");
    gguf::write_tiny_qwen35(
        &qwen35,
        &gguf::TinyQwen35Config { context_length: 256, ..gguf::TinyQwen35Config::default() },
    )
    .unwrap();
    [("state-llama", tiny_model_seeded("state-llama", 256, 3)), ("state-lfm2", lfm2), ("state-qwen35", qwen35)]
}

/// A greedy completion of `prompt` by `model`: its tokens and their log-probabilities, as JSON.
fn complete(server: &Server, model: &str, prompt: &str) -> Value {
    let request = json!({"model": model, "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0, "logprobs": 0});
    let response = server.post("/v1/completions", &request);
    assert_eq!(response.status, 200, "{model}: {}", response.text());
    let body = response.json();
    assert_eq!(body["model"], model, "{body}");
    let logprobs = &body["choices"][0]["logprobs"];
    assert!(logprobs["tokens"].as_array().is_some_and(|t| !t.is_empty()), "{body}");
    json!({"tokens": logprobs["tokens"], "token_logprobs": logprobs["token_logprobs"]})
}

fn server_of(paths: &[&PathBuf]) -> Server {
    let mut args = vec!["--device", "sim", "--replay-backend", "auto", "--context", "256"];
    for path in paths {
        args.extend(["--model", path.to_str().unwrap()]);
    }
    Server::start(&args)
}

#[test]
fn every_answer_across_state_models_is_a_fresh_daemons() {
    let models = models();
    let mut fresh = std::collections::HashMap::new();
    // A fresh daemon per model and prompt: its only request starts from a freshly loaded model.
    for (id, path) in &models {
        for prompt in PROMPTS {
            fresh.insert((*id, prompt), complete(&server_of(&[path]), id, prompt));
        }
    }
    for (id, _) in &models {
        assert_ne!(fresh[&(*id, PROMPTS[0])], fresh[&(*id, PROMPTS[1])], "{id}: the two prompts must differ");
    }
    let server = server_of(&models.iter().map(|(_, p)| p).collect::<Vec<_>>());
    let order = [
        ("state-llama", PROMPTS[0]),
        ("state-lfm2", PROMPTS[0]),
        ("state-lfm2", PROMPTS[1]),
        ("state-qwen35", PROMPTS[0]),
        ("state-qwen35", PROMPTS[1]),
        ("state-llama", PROMPTS[1]),
        ("state-lfm2", PROMPTS[1]),
    ];
    for (i, (id, prompt)) in order.into_iter().enumerate() {
        let answer = complete(&server, id, prompt);
        assert_eq!(answer, fresh[&(id, prompt)], "request {i}: {id} {prompt:?}");
    }
    let status = server.get("/redline/status").json();
    assert_eq!(status["switches"], 4, "{status}");
    assert_eq!(status["model"]["id"], "state-lfm2", "{status}");
    assert!(status["controller"]["fallback_reason"].is_null(), "{status}");
}
