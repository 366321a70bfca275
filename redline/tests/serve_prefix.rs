//! Prompt-prefix reuse through `redline serve`: the second turn of a chat whose history is over
//! 400 tokens keeps the history's KV rows (`usage.prompt_tokens_details.cached_tokens` ≥ 400,
//! the metrics count them) and answers, with its log-probabilities, exactly what a server with
//! `--no-prefix-reuse` answers; a streamed answer reports the same usage. Nothing is kept across
//! a model switch. SmolLM2-135M (`REDLINE_SMOLLM2_GGUF`; under `CI=true` its absence is a
//! failure) runs the chat on its default route (retained where its fixture's sealing run
//! promoted it); the tiny models run the switch.

mod common;
mod serve_common;

use serde_json::{Value, json};
use serve_common::{Server, tiny_model, tiny_model_seeded};

/// A long system message: an operator's notes, about 450 tokens.
fn history() -> String {
    let note = "The lighthouse keeper logs the weather at dawn, noon and dusk, checks the lamp's \
                wick and lens, winds the clockwork that turns the light, and writes down every ship \
                that passes the point, with its flag, its course and the time it was seen. ";
    note.repeat(8)
}

/// A greedy chat answer's text, its tokens' log-probabilities and its usage.
fn chat(server: &Server, messages: &Value, stream: bool) -> (String, Vec<Value>, Value) {
    let body = json!({
        "messages": messages, "max_tokens": 12, "temperature": 0, "logprobs": true, "top_logprobs": 2,
        "stream": stream, "stream_options": if stream { json!({"include_usage": true}) } else { Value::Null },
    });
    let response = server.post("/v1/chat/completions", &body);
    assert_eq!(response.status, 200, "{}", response.text());
    if !stream {
        let answer = response.json();
        let choice = &answer["choices"][0];
        let logprobs = choice["logprobs"]["content"].as_array().unwrap().clone();
        return (choice["message"]["content"].as_str().unwrap().to_owned(), logprobs, answer["usage"].clone());
    }
    let (mut text, mut logprobs, mut usage) = (String::new(), Vec::new(), Value::Null);
    for event in response.events().iter().filter(|e| *e != "[DONE]") {
        let chunk: Value = serde_json::from_str(event).unwrap();
        if let Some(choice) = chunk["choices"].get(0) {
            text.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
            if let Some(content) = choice["logprobs"]["content"].as_array() {
                logprobs.extend(content.iter().cloned());
            }
        }
        if !chunk["usage"].is_null() {
            usage = chunk["usage"].clone();
        }
    }
    (text, logprobs, usage)
}

#[test]
fn a_chats_second_turn_prefills_only_its_new_tokens_and_answers_as_without_reuse() {
    let Some(model) = common::reference_model() else { return };
    let reusing = Server::start(&["--model", &model, "--device", "sim"]);
    let whole = Server::start(&["--model", &model, "--device", "sim", "--no-prefix-reuse"]);
    let mut messages = json!([
        {"role": "system", "content": history()},
        {"role": "user", "content": "What does the keeper do at dawn?"},
    ]);
    let (first, _, usage) = chat(&reusing, &messages, false);
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 400, "{usage}");
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0, "nothing is held before the first turn");
    messages.as_array_mut().unwrap().push(json!({"role": "assistant", "content": first}));
    messages.as_array_mut().unwrap().push(json!({"role": "user", "content": "And at dusk?"}));
    let first_turn = json!([messages[0], messages[1]]);
    for stream in [false, true] {
        if stream {
            // Hold the first turn again, as the chat's client would find it on a retry.
            assert_eq!(chat(&reusing, &first_turn, false).0, first);
        }
        let kept = chat(&reusing, &messages, stream);
        let cached = kept.2["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap();
        assert!(cached >= 400, "stream {stream}: {}", kept.2);
        assert!(cached < kept.2["prompt_tokens"].as_u64().unwrap(), "{}", kept.2);
        let full = chat(&whole, &messages, stream);
        assert_eq!(full.2["prompt_tokens_details"]["cached_tokens"], 0);
        assert_eq!((&kept.0, &kept.1), (&full.0, &full.1), "stream {stream}: the answer and its log-probabilities");
        assert_eq!(kept.2["prompt_tokens"], full.2["prompt_tokens"]);
    }
    let cached = reusing.metric("redline_prompt_tokens_cached_total");
    assert!(cached >= 800.0, "{cached}");
    let text = reusing.get("/metrics").text();
    let id = std::path::Path::new(&model).file_stem().unwrap().to_str().unwrap();
    let hits = format!("vllm:prefix_cache_hits_total{{model_name=\"{id}\"}} ");
    let hits: f64 = text.lines().find_map(|l| l.strip_prefix(&hits)).unwrap().parse().unwrap();
    assert_eq!(hits, cached, "{text}");
}

#[test]
fn a_model_switch_keeps_nothing() {
    let a = tiny_model("prefix-a", 256);
    let b = tiny_model_seeded("prefix-b", 256, 99);
    let server = Server::start(&["--model", a.to_str().unwrap(), "--model", b.to_str().unwrap(), "--device", "sim"]);
    let complete = |model: &str| {
        let body =
            json!({"model": model, "prompt": "the same prompt for both models", "max_tokens": 4, "temperature": 0});
        let answer = server.post("/v1/completions", &body);
        assert_eq!(answer.status, 200, "{}", answer.text());
        answer.json()["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap()
    };
    assert_eq!(complete("prefix-a"), 0);
    assert!(complete("prefix-a") > 0, "the same model keeps the prompt");
    assert_eq!(complete("prefix-b"), 0, "another model never sees the first one's rows");
    assert_eq!(complete("prefix-a"), 0, "nor does the first one after a switch back");
}
