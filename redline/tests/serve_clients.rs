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

#[test]
fn the_openai_python_client_gets_the_raw_http_answers() {
    let Some(python) = serve_common::python() else { return };
    let server = server();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/openai_client.py");
    let out =
        Command::new(&python).arg(script).arg(format!("http://{}/v1", server.addr)).arg("clients").output().unwrap();
    assert!(
        out.status.success(),
        "{python} {script} failed (pip install -r redline/tests/reference/requirements.txt?):\n{}",
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
    let json = "Content-Type: application/json";
    let events = sse_data(&curl(&["-N", "-H", json, "-d", &streamed.to_string(), &url("/v1/chat/completions")]));
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let expected = server.post("/v1/chat/completions", &chat).json();
    assert_eq!(stream_text(&events), expected["choices"][0]["message"]["content"].as_str().unwrap());

    // The curl completion is the raw HTTP one.
    let raw = server.post("/v1/completions", &serde_json::from_str(&request).unwrap()).json();
    assert_eq!(raw["choices"][0]["text"], text);
    // curl sees the error object and the status of a bad request.
    let bad =
        curl(&["-w", "\n%{http_code}", "-H", json, "-d", r#"{"prompt": "x", "top_p": 2}"#, &url("/v1/completions")]);
    let (body, code) = bad.rsplit_once('\n').unwrap();
    assert_eq!(code, "400");
    assert_eq!(serde_json::from_str::<Value>(body).unwrap()["error"]["param"], "top_p");
}

/// Asserts one endpoint's log-probability entries (whole or streamed) as the client parsed them:
/// one per generated token, each at most 0, its alternatives sorted with the generated (greedy)
/// token first. Returns the entries' `(token, logprob)`.
fn check_entries(report: &Value, what: &str, alternatives: usize) -> Vec<(String, f64)> {
    let part = &report[what];
    let entries = part["entries"].as_array().unwrap_or_else(|| panic!("{what}: {report}"));
    assert_eq!(json!(entries.len()), part["completion_tokens"], "{what}: one entry per generated token");
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let (token, logprob) = (entry["token"].as_str().unwrap(), entry["logprob"].as_f64().unwrap());
        assert!(logprob <= 0.0, "{what} {i}: {entry}");
        // Chat lists the alternatives; the legacy shape maps their texts to log-probabilities.
        let top: Vec<(String, f64)> = match &entry["top"] {
            Value::Array(top) => {
                assert_eq!(top.len(), alternatives, "{what} {i}: {entry}");
                assert_eq!(top[0][2], entry["bytes"], "{what} {i}: {entry}");
                assert_eq!(
                    String::from_utf8_lossy(&serde_json::from_value::<Vec<u8>>(entry["bytes"].clone()).unwrap()),
                    token
                );
                top.iter().map(|t| (t[0].as_str().unwrap().to_owned(), t[1].as_f64().unwrap())).collect()
            }
            Value::Object(top) => {
                assert!(top.len() <= alternatives + 1, "{what} {i}: {entry}");
                let mut top: Vec<(String, f64)> = top.iter().map(|(t, l)| (t.clone(), l.as_f64().unwrap())).collect();
                top.sort_by(|a, b| b.1.total_cmp(&a.1));
                top
            }
            other => panic!("{what} {i}: top {other}"),
        };
        assert!(top.windows(2).all(|w| w[0].1 >= w[1].1), "{what} {i}: not sorted: {entry}");
        assert!(top.iter().all(|&(_, l)| l <= 0.0), "{what} {i}: {entry}");
        // Temperature 0: the generated token is the greedy one, the most likely.
        assert_eq!((top[0].0.as_str(), top[0].1), (token, logprob), "{what} {i}: {entry}");
        out.push((token.to_owned(), logprob));
    }
    out
}

#[test]
fn the_openai_python_client_gets_logprobs_with_the_greedy_token_on_top() {
    let Some(python) = serve_common::python() else { return };
    let server = server();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/openai_client.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(format!("http://{}/v1", server.addr))
        .arg("clients")
        .arg("logprobs")
        .output()
        .unwrap();
    assert!(out.status.success(), "{python} {script} logprobs failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();

    let chat = check_entries(&report, "chat", 3);
    assert_eq!(check_entries(&report, "chat_stream", 3), chat, "whole and streamed chat logprobs differ");
    assert_eq!(report["chat_stream"]["text"], report["chat"]["text"]);
    // Asking for logprobs changes nothing generated: the raw answer without them is the same.
    let raw = server
        .post(
            "/v1/chat/completions",
            &json!({"messages": [{"role": "user", "content": "hello there"}], "max_tokens": 16, "temperature": 0}),
        )
        .json();
    assert_eq!(report["chat"]["text"], raw["choices"][0]["message"]["content"]);
    assert_eq!(report["chat"]["finish_reason"], "length", "{report}");
    // Every token's text is shown: the tokens' bytes are the content's.
    let bytes: Vec<u8> = report["chat"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| serde_json::from_value::<Vec<u8>>(e["bytes"].clone()).unwrap())
        .collect();
    assert_eq!(bytes, report["chat"]["text"].as_str().unwrap().as_bytes());

    let completion = check_entries(&report, "completion", 3);
    assert_eq!(
        check_entries(&report, "completion_stream", 3),
        completion,
        "whole and streamed completion logprobs differ"
    );
    assert_eq!(report["completion_stream"]["text"], report["completion"]["text"]);
    let offsets: Vec<&Value> =
        report["completion"]["entries"].as_array().unwrap().iter().map(|e| &e["offset"]).collect();
    let streamed: Vec<&Value> =
        report["completion_stream"]["entries"].as_array().unwrap().iter().map(|e| &e["offset"]).collect();
    assert_eq!(offsets, streamed);
    let raw = server.post("/v1/completions", &json!({"prompt": "the cat", "max_tokens": 8, "temperature": 0})).json();
    assert_eq!(report["completion"]["text"], raw["choices"][0]["text"]);
}
