//! Bad requests to `redline serve` get a 4xx and OpenAI's error object naming the field, and the
//! server keeps serving: malformed JSON, wrong types, invalid values, over-limit `max_tokens`,
//! prompts and bodies, unknown routes and wrong methods.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{Server, tiny_model};

const CHAT: &str = "/v1/chat/completions";
const COMPLETIONS: &str = "/v1/completions";

fn server() -> Server {
    let model = tiny_model("errors", 256);
    Server::start(&[
        "--model",
        model.to_str().unwrap(),
        "--device",
        "sim",
        "--max-body-bytes",
        "4096",
        "--max-prompt-tokens",
        "64",
        "--max-tokens-limit",
        "100",
    ])
}

fn user(content: &str) -> Value {
    json!([{"role": "user", "content": content}])
}

#[test]
fn invalid_fields_are_400_naming_the_field() {
    let server = server();
    let cases: Vec<(&str, Value, &str)> = vec![
        (COMPLETIONS, json!({}), "prompt"),
        (COMPLETIONS, json!({"prompt": 5}), "prompt"),
        (COMPLETIONS, json!({"prompt": ["a", "b"]}), "prompt"),
        (COMPLETIONS, json!({"prompt": ""}), "prompt"),
        (COMPLETIONS, json!({"prompt": "x", "max_tokens": "ten"}), "max_tokens"),
        (COMPLETIONS, json!({"prompt": "x", "max_tokens": -1}), "max_tokens"),
        (COMPLETIONS, json!({"prompt": "x", "max_tokens": 101}), "max_tokens"),
        (COMPLETIONS, json!({"prompt": "x", "temperature": -0.1}), "temperature"),
        (COMPLETIONS, json!({"prompt": "x", "temperature": "hot"}), "temperature"),
        (COMPLETIONS, json!({"prompt": "x", "top_p": 0.0}), "top_p"),
        (COMPLETIONS, json!({"prompt": "x", "top_p": 1.5}), "top_p"),
        (COMPLETIONS, json!({"prompt": "x", "seed": "s"}), "seed"),
        (COMPLETIONS, json!({"prompt": "x", "stop": 7}), "stop"),
        (COMPLETIONS, json!({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]}), "stop"),
        (COMPLETIONS, json!({"prompt": "x", "n": 2}), "n"),
        (COMPLETIONS, json!({"prompt": "x", "stream": 1}), "stream"),
        (COMPLETIONS, json!({"prompt": "x", "model": 3}), "model"),
        (COMPLETIONS, json!({"prompt": "y".repeat(65)}), "prompt"),
        (CHAT, json!({}), "messages"),
        (CHAT, json!({"messages": []}), "messages"),
        (CHAT, json!({"messages": "hi"}), "messages"),
        (CHAT, json!({"messages": [5]}), "messages[0]"),
        (CHAT, json!({"messages": [{"role": "wizard", "content": "hi"}]}), "messages[0].role"),
        (CHAT, json!({"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}), "messages[1].role"),
        (CHAT, json!({"messages": [{"role": "user", "content": 4}]}), "messages[0].content"),
        (CHAT, json!({"messages": user("hi"), "max_tokens": 1000}), "max_tokens"),
        (CHAT, json!({"messages": user("hi"), "max_completion_tokens": 1000}), "max_completion_tokens"),
        (CHAT, json!({"messages": user("hi"), "temperature": -1}), "temperature"),
        (CHAT, json!({"messages": user(&"long ".repeat(20))}), "messages"),
    ];
    for (path, body, param) in cases {
        let response = server.post(path, &body);
        assert_eq!(response.status, 400, "{path} {body}: {}", response.text());
        assert_eq!(response.error_param(), param, "{path} {body}");
        assert_eq!(response.json()["error"]["type"], "invalid_request_error");
    }
    // The server is still serving.
    assert_eq!(server.post(COMPLETIONS, &json!({"prompt": "x", "max_tokens": 2})).status, 200);
}

#[test]
fn malformed_bodies_routes_and_methods_get_error_objects() {
    let server = server();
    for (path, body) in
        [(COMPLETIONS, &b"{\"prompt\": "[..]), (CHAT, b"not json"), (CHAT, b"[1, 2]"), (COMPLETIONS, b"")]
    {
        let response = server.request("POST", path, body);
        assert_eq!(response.status, 400, "{path} {body:?}");
        assert_eq!(response.error_param(), Value::Null);
        assert_eq!(response.json()["error"]["code"], "invalid_json");
    }
    let large = json!({"prompt": "z".repeat(5000)});
    let response = server.post(COMPLETIONS, &large);
    assert_eq!(response.status, 413, "{}", response.text());
    assert_eq!(response.json()["error"]["code"], "request_too_large");

    for (method, path) in [("GET", "/v2/completions"), ("POST", "/nothing"), ("GET", "/assets/none.js")] {
        let response = server.request(method, path, b"");
        assert_eq!(response.status, 404, "{method} {path}");
        assert_eq!(response.json()["error"]["code"], "not_found");
    }
    for (method, path) in [
        ("GET", COMPLETIONS),
        ("GET", CHAT),
        ("POST", "/v1/models"),
        ("DELETE", "/health"),
        ("POST", "/metrics"),
        ("PUT", "/redline/status"),
        ("POST", "/"),
    ] {
        let response = server.request(method, path, b"{}");
        assert_eq!(response.status, 405, "{method} {path}");
        assert_eq!(response.json()["error"]["code"], "method_not_allowed");
    }
    let metrics = server.get("/metrics").text();
    assert!(metrics.contains("redline_requests_total{endpoint=\"unmatched\",status=\"404\"} 3\n"), "{metrics}");
    assert!(metrics.contains("redline_requests_total{endpoint=\"/v1/completions\",status=\"413\"} 1\n"), "{metrics}");
    assert_eq!(server.post(COMPLETIONS, &json!({"prompt": "x", "max_tokens": 2})).status, 200);
}

#[test]
fn bad_command_lines_fail_with_a_message() {
    let model = tiny_model("errors-cli", 256);
    let model = model.to_str().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["--device", "gpu"], "--device"),
        (&["--model", "/nonexistent/model.gguf"], "model"),
        (&["--replay-backend", "fast"], "fast"),
        (&["--queue", "0"], "--queue"),
        (&["--max-tokens-limit", "256"], "--max-tokens-limit"),
        (&["--port", "70000"], "--port"),
    ];
    for (args, needle) in cases {
        serve_common::assert_usage_error(model, args, needle);
    }
}

#[test]
fn help_lists_the_endpoints_and_defaults() {
    let help = serve_common::help();
    for needle in [
        "/v1/completions",
        "/v1/chat/completions",
        "/v1/models",
        "/health",
        "/metrics",
        "/redline/status",
        "[default: 8080]",
        "[default: 127.0.0.1]",
        "[default: 16]",
        "[default: smollm2-135m]",
        "503",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}
