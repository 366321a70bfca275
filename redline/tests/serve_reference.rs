//! `redline serve` with the reference model (SmolLM2-135M-Instruct, `REDLINE_SMOLLM2_GGUF`;
//! required under CI=true): a greedy chat completion answers the capital of France with Paris,
//! through the model's own chat template, on the retained route.

mod common;
mod serve_common;

use common::reference_model;
use serde_json::json;
use serve_common::{Server, stream_text};

/// The sealed fixture whose admission row certifies the reference model on gfx1100.
const FIXTURE: &str = "smollm2-135m-gfx1100-sim";

#[test]
fn the_reference_model_answers_paris_over_chat_completions() {
    let Some(path) = reference_model() else { return };
    // The default route when the fixture's sealing run promoted it; armed explicitly otherwise.
    let server = Server::start(&[&["--model", &path, "--device", "sim"], common::arming(&[FIXTURE])].concat());
    let request = json!({
        "model": "SmolLM2-135M-Instruct.Q4_1",
        "messages": [{"role": "user", "content": "What is the capital of France?"}],
        "max_tokens": 12,
        "temperature": 0,
    });
    let response = server.post("/v1/chat/completions", &request);
    assert_eq!(response.status, 200, "{}", response.text());
    let body = response.json();
    let text = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(text.contains("Paris"), "{body}");
    assert_eq!(body["model"], "SmolLM2-135M-Instruct.Q4_1");

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["max_tokens"] = json!(6);
    let events = server.post("/v1/chat/completions", &streamed).events();
    let streamed_text = stream_text(&events);
    assert!(streamed_text.contains("Paris"), "{streamed_text:?}");
    assert!(text.starts_with(&streamed_text), "{streamed_text:?} is not the start of {text:?}");

    let status = server.get("/redline/status").json();
    assert_eq!(status["controller"]["state"], "ready", "{status}");
    // Decided by the registry's row for this model on gfx1100 and its fixture's promotion.
    common::assert_admission_follows(&status["admission"], FIXTURE);
    assert!(status["observations"]["retained"].as_u64().unwrap() >= 8, "{status}");
    assert_eq!(status["observations"]["ordinary_launches_in_retained_forwards"], 0);
}
