//! Real clients against `redline serve`: the official OpenAI Python client (pinned in
//! `tests/reference/requirements.txt`, found through `REDLINE_GGUF_PY`'s interpreter) for whole
//! and streamed chat, a completion and an invalid request; and `curl` for a completion and a
//! server-sent-event stream. Their answers must equal the raw HTTP answers.

mod serve_common;

use std::process::Command;

use serde_json::{Value, json};
use serve_common::{Server, sse_data, stream_text, tiny_model};

fn server() -> Server {
    let model = tiny_model("clients", 256);
    Server::start(&["--model", model.to_str().unwrap(), "--device", "sim"])
}

/// The Python interpreter with the pinned packages, or `None` outside CI when it is not set.
fn python() -> Option<String> {
    match std::env::var("REDLINE_GGUF_PY") {
        Ok(python) => Some(python),
        Err(_) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "REDLINE_GGUF_PY is not set under CI=true");
            println!("REDLINE_GGUF_PY not set: did nothing");
            None
        }
    }
}

#[test]
fn the_openai_python_client_gets_the_raw_http_answers() {
    let Some(python) = python() else { return };
    let server = server();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/openai_client.py");
    let out =
        Command::new(&python).arg(script).arg(format!("http://{}/v1", server.addr)).arg("clients").output().unwrap();
    assert!(
        out.status.success(),
        "{python} {script} failed (pip install -r crates/daemon/tests/reference/requirements.txt?):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pinned = include_str!("reference/requirements.txt").lines().find_map(|l| l.strip_prefix("openai==")).unwrap();
    assert_eq!(report["version"], pinned.trim(), "the client is not the pinned one");
    assert_eq!(report["models"], json!(["clients"]));

    let raw = server
        .post("/v1/chat/completions", &json!({"model": "clients", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 16, "temperature": 0}))
        .json();
    let text = raw["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(!text.is_empty());
    assert_eq!(report["chat"]["text"], text, "{report}");
    assert_eq!(report["chat"]["role"], "assistant");
    assert_eq!(report["chat"]["finish_reason"], raw["choices"][0]["finish_reason"]);
    assert_eq!(report["chat"]["prompt_tokens"], raw["usage"]["prompt_tokens"]);
    assert_eq!(report["chat"]["completion_tokens"], raw["usage"]["completion_tokens"]);
    assert!(report["chat"]["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(report["stream"]["text"], text, "{report}");
    assert_eq!(report["stream"]["finish_reason"], raw["choices"][0]["finish_reason"]);
    assert_eq!(report["stream"]["roles"], json!(["assistant"]));

    let raw = server.post("/v1/completions", &json!({"prompt": "the cat", "max_tokens": 8, "temperature": 0})).json();
    assert_eq!(report["completion"]["text"], raw["choices"][0]["text"], "{report}");
    assert_eq!(report["completion"]["completion_tokens"], raw["usage"]["completion_tokens"]);

    assert_eq!(
        report["invalid"],
        json!({"raised": "BadRequestError", "status": 400, "param": "temperature"}),
        "{report}"
    );
}

fn curl(args: &[&str]) -> String {
    let out = Command::new("curl").args(["-sS", "--max-time", "120"]).args(args).output().expect("curl is installed");
    assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn curl_gets_a_completion_and_an_event_stream() {
    let server = server();
    let url = |path: &str| format!("http://{}{path}", server.addr);
    let request = json!({"prompt": "the dog", "max_tokens": 10, "temperature": 0}).to_string();
    let whole: Value = serde_json::from_str(&curl(&[
        "--fail-with-body",
        "-H",
        "Content-Type: application/json",
        "-d",
        &request,
        &url("/v1/completions"),
    ]))
    .unwrap();
    let text = whole["choices"][0]["text"].as_str().unwrap();
    assert!(!text.is_empty());
    assert!(whole["usage"]["completion_tokens"].as_u64().unwrap() <= 10, "{whole}");

    let chat = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "temperature": 0});
    let mut streamed = chat.clone();
    streamed["stream"] = json!(true);
    let events = sse_data(&curl(&["-N", "-d", &streamed.to_string(), &url("/v1/chat/completions")]));
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let expected = server.post("/v1/chat/completions", &chat).json();
    assert_eq!(stream_text(&events), expected["choices"][0]["message"]["content"].as_str().unwrap());

    // The curl completion is the raw HTTP one.
    let raw = server.post("/v1/completions", &serde_json::from_str(&request).unwrap()).json();
    assert_eq!(raw["choices"][0]["text"], text);
    // curl sees the error object and the status of a bad request.
    let bad = curl(&["-w", "\n%{http_code}", "-d", r#"{"prompt": "x", "top_p": 2}"#, &url("/v1/completions")]);
    let (body, code) = bad.rsplit_once('\n').unwrap();
    assert_eq!(code, "400");
    assert_eq!(serde_json::from_str::<Value>(body).unwrap()["error"]["param"], "top_p");
}
