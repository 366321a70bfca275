//! `redline serve` over real HTTP on loopback with the tiny model: completions and chat
//! completions, whole and streamed (the streamed deltas add up to the whole text under greedy
//! decoding), the models, health, metrics and status endpoints, and `--device hsa` without a GPU.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{Server, stream_text, tiny_model};

/// The tiny model is in no admissions row: `--replay-backend auto` asks for the retained route
/// explicitly.
fn server() -> Server {
    let model = tiny_model("api", 256);
    Server::start(&["--model", model.to_str().unwrap(), "--device", "sim", "--replay-backend", "auto"])
}

/// Prompt tokens as the model's tokenizer counts them.
fn prompt_tokens(text: &str) -> u64 {
    let file = gguf::Gguf::open(tiny_model("count", 256)).unwrap();
    let tokenizer = engine::model::tokenizer_from_gguf(&file).unwrap();
    u64::try_from(tokenizer.encode(text, false).len()).unwrap()
}

#[test]
fn completions_whole_and_streamed_agree() {
    let server = server();
    let request = json!({"model": "api", "prompt": "the cat", "max_tokens": 12, "temperature": 0});
    let whole = server.post("/v1/completions", &request);
    assert_eq!(whole.status, 200, "{}", whole.text());
    let body = whole.json();
    assert_eq!(body["object"], "text_completion");
    assert_eq!(body["model"], "api");
    let choice = &body["choices"][0];
    let text = choice["text"].as_str().unwrap();
    assert!(!text.is_empty());
    let prompt = prompt_tokens("the cat");
    assert_eq!(body["usage"]["prompt_tokens"], prompt, "{body}");
    let completion = body["usage"]["completion_tokens"].as_u64().unwrap();
    assert!(completion <= 12);
    assert_eq!(choice["finish_reason"], if completion == 12 { "length" } else { "stop" });
    assert_eq!(body["usage"]["total_tokens"], prompt + completion);

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let response = server.post("/v1/completions", &streamed);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let events = response.events();
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    assert_eq!(stream_text(&events), text);
    let last: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], choice["finish_reason"]);
    assert!(
        events[..events.len() - 2]
            .iter()
            .all(|e| serde_json::from_str::<Value>(e).unwrap()["choices"][0]["finish_reason"].is_null())
    );
    assert_eq!(last["id"], serde_json::from_str::<Value>(&events[0]).unwrap()["id"], "one id per stream");
}

#[test]
fn chat_completions_whole_and_streamed_agree_and_stop_strings_end_the_text() {
    let server = server();
    let request = json!({
        "model": "api",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}],
        "max_tokens": 16,
        "temperature": 0,
    });
    let whole = server.post("/v1/chat/completions", &request);
    assert_eq!(whole.status, 200, "{}", whole.text());
    let body = whole.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    let text = body["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    assert!(text.chars().count() >= 4, "{body}");
    // ChatML: the template's markup makes the prompt far longer than the two messages.
    assert!(body["usage"]["prompt_tokens"].as_u64().unwrap() > 30, "{body}");

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let events = server.post("/v1/chat/completions", &streamed).events();
    let first: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(stream_text(&events), text);
    let usage: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(usage["choices"], json!([]));
    for count in ["prompt_tokens", "completion_tokens", "total_tokens"] {
        assert_eq!(usage["usage"][count], body["usage"][count], "{count}");
    }
    // The same prompt again: all of it but its last token is kept from the whole answer's.
    assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    let prompt = body["usage"]["prompt_tokens"].as_u64().unwrap();
    assert_eq!(usage["usage"]["prompt_tokens_details"]["cached_tokens"], prompt - 1);

    // A stop string taken from the middle of the greedy text cuts it there.
    let chars: Vec<char> = text.chars().collect();
    let stop: String = chars[2..4].iter().collect();
    let mut stopped = request.clone();
    stopped["stop"] = json!([stop]);
    let body = server.post("/v1/chat/completions", &stopped).json();
    let cut = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(cut, &text[..text.find(&stop).unwrap()], "{body}");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
}

#[test]
fn seeded_sampling_is_reproducible_and_differs_by_seed() {
    let server = server();
    let run = |seed: u64| {
        let request = json!({"prompt": "once", "max_tokens": 24, "temperature": 1.5, "seed": seed});
        server.post("/v1/completions", &request).json()["choices"][0]["text"].as_str().unwrap().to_owned()
    };
    assert_eq!(run(1), run(1));
    assert!((2..6).any(|seed| run(seed) != run(1)), "four other seeds all gave {:?}", run(1));
}

#[test]
fn models_health_metrics_and_status_describe_the_server() {
    let server = server();
    assert_eq!(server.get("/health").json()["status"], "ok");
    let models = server.get("/v1/models").json();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "api");
    let done = server.post("/v1/completions", &json!({"prompt": "abc", "max_tokens": 10, "temperature": 0}));
    assert_eq!(done.status, 200);
    let tokens = done.json()["usage"]["completion_tokens"].as_f64().unwrap();

    let metrics = server.get("/metrics");
    assert!(metrics.header("content-type").unwrap().starts_with("text/plain"));
    let text = metrics.text();
    assert!(text.contains("redline_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1\n"), "{text}");
    // The readiness check of `Server::start` and this test's.
    assert!(text.contains("redline_requests_total{endpoint=\"/health\",status=\"200\"} 2\n"), "{text}");
    assert_eq!(server.metric("redline_generated_tokens_total"), tokens);
    let prompt = prompt_tokens("abc");
    assert_eq!(server.metric("redline_prompt_tokens_total"), prompt as f64);
    assert!(server.metric("redline_decode_tokens_per_second") > 0.0);
    assert_eq!(server.metric("redline_queue_depth"), 0.0);
    // The prompt is one batched prefill forward (it is shorter than a pass of 128 tokens) and
    // every generated token but the last is one forward; after the recordings, the
    // continuations take the retained route.
    let route = |name: &str| {
        let line = format!("redline_replay_forwards_total{{route=\"{name}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&line))
            .unwrap_or_else(|| panic!("{line}: {text}"))
            .parse::<f64>()
            .unwrap()
    };
    let forwards = ["retained", "ordinary", "recorded", "shadow"].map(route);
    assert!(prompt < 128);
    assert_eq!(forwards.iter().sum::<f64>(), 1.0 + tokens - 1.0, "{text}");
    assert!(forwards[0] > 0.0, "{text}");
    assert!(forwards[1] >= 1.0, "the prefill is never retained: {text}");
    // One finished generation: its time to first token is in the histogram.
    assert_eq!(server.metric("redline_time_to_first_token_seconds_count"), 1.0, "{text}");
    assert!(server.metric("redline_time_to_first_token_seconds_sum") > 0.0, "{text}");
    assert!(text.contains("redline_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n"), "{text}");

    let status = server.get("/redline/status").json();
    assert_eq!(status["controller"]["state"], "ready", "{status}");
    assert!(status["controller"]["fallback_reason"].is_null());
    assert!(status["tape"].is_object() && status["submission"].is_object(), "{status}");
    assert_eq!(status["submission"]["transport"], "pm4");
    assert!(!status["observations"]["replay_positions"].as_array().unwrap().is_empty(), "{status}");
    assert_eq!(status["device"]["kind"], "sim");
    assert_eq!(status["device"]["arch"], "gfx1100");
    assert_eq!(status["model"]["sha256"].as_str().unwrap().len(), 64);
    assert!(status["model"]["path"].as_str().unwrap().ends_with("api.gguf"));
    // Not admitted (no row for this model), armed by the explicit request.
    assert_eq!(status["admission"]["admitted"], false, "{status}");
    assert!(status["admission"]["reason"].as_str().is_some_and(|r| !r.is_empty()));
}

#[test]
fn a_model_without_an_admission_row_is_served_on_ordinary_launches_and_says_why() {
    let model = tiny_model("unadmitted", 256);
    let server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim"]);
    // No `model`: the first (here the only) served model.
    let request = json!({"prompt": "abc", "max_tokens": 6, "temperature": 0});
    assert_eq!(server.post("/v1/completions", &request).status, 200);
    let status = server.get("/redline/status").json();
    assert_eq!(status["admission"]["admitted"], false, "{status}");
    assert!(status["admission"]["row"].is_null(), "{status}");
    let reason = status["admission"]["reason"].as_str().unwrap();
    assert!(reason.contains("is not certified for gfx1100 sim"), "{reason}");
    assert_eq!(status["controller"]["state"], "hip", "{status}");
    assert_eq!(status["observations"]["retained"], 0, "{status}");
    assert!(status["tape"].is_null(), "{status}");
}

#[test]
fn hsa_without_a_usable_gpu_fails_naming_the_call_and_suggesting_sim() {
    let model = tiny_model("hsa", 256);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["serve", "--port", "0", "--device", "hsa", "--model", model.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if std::path::Path::new("/dev/kfd").exists() {
        // A machine with a GPU node: the message still names what failed, or HSA serving is refused.
        assert!(!out.status.success(), "{stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The failing call and its status (hsa_init with Debian's ROCm libraries), or the library.
    assert!(stderr.contains("hsa_init returned") || stderr.contains("libhsa"), "{stderr}");
    assert!(stderr.contains("--device sim"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
}
