//! `redline serve --api-key`: without the key, or with another, every `/v1/*`, `/metrics` and
//! `/redline/*` request is answered 401 with OpenAI's error object, for raw HTTP, curl and the
//! official OpenAI Python client; with it, 200. `/health` stays open. Keys also come from
//! `REDLINE_API_KEY` and `--api-key-file`; a server reachable from other machines without a key
//! warns at start.

mod serve_common;

use std::process::Command;

use serde_json::{Value, json};
use serve_common::{Server, tiny_model};

const KEY: &str = "sk-redline-test-0123456789";

/// `method path` with extra header lines, the whole response.
fn request(server: &Server, method: &str, path: &str, headers: &str, body: &[u8]) -> serve_common::Response {
    serve_common::request_with(server.addr, method, path, headers, body)
}

fn assert_unauthorized(response: &serve_common::Response, what: &str) {
    assert_eq!(response.status, 401, "{what}: {}", response.text());
    let body = response.json();
    assert_eq!(body["error"]["code"], "invalid_api_key", "{what}: {body}");
    assert_eq!(body["error"]["type"], "invalid_request_error", "{what}: {body}");
    assert_eq!(body["error"]["param"], Value::Null, "{what}: {body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {body}");
    assert_eq!(response.header("www-authenticate"), Some("Bearer"), "{what}");
}

#[test]
fn every_protected_endpoint_needs_the_key_and_health_does_not() {
    let model = tiny_model("auth", 256);
    let server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim", "--api-key", KEY]);
    let completion = json!({"prompt": "the cat", "max_tokens": 4, "temperature": 0}).to_string();
    let chat = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}).to_string();
    let protected: [(&str, &str, &[u8]); 6] = [
        ("POST", "/v1/completions", completion.as_bytes()),
        ("POST", "/v1/chat/completions", chat.as_bytes()),
        ("GET", "/v1/models", b""),
        ("GET", "/metrics", b""),
        ("GET", "/redline/status", b""),
        ("GET", "/v1/nothing", b""),
    ];
    let right = format!("Authorization: Bearer {KEY}\r\n");
    for (method, path, body) in protected {
        assert_unauthorized(&request(&server, method, path, "", body), &format!("{path} without a key"));
        let wrong = format!("Authorization: Bearer {KEY}x\r\n");
        assert_unauthorized(&request(&server, method, path, &wrong, body), &format!("{path} with a wrong key"));
        let basic = "Authorization: Basic dXNlcjpwYXNz\r\n";
        assert_unauthorized(&request(&server, method, path, basic, body), &format!("{path} with Basic"));
        let response = request(&server, method, path, &right, body);
        let expected = if path == "/v1/nothing" { 404 } else { 200 };
        assert_eq!(response.status, expected, "{path} with the key: {}", response.text());
    }
    // The scheme is case-insensitive, the key is not.
    let lower = format!("Authorization: bearer {KEY}\r\n");
    assert_eq!(request(&server, "GET", "/v1/models", &lower, b"").status, 200);
    let upper = format!("Authorization: Bearer {}\r\n", KEY.to_uppercase());
    assert_unauthorized(&request(&server, "GET", "/v1/models", &upper, b""), "an upper-cased key");
    // /health is open.
    assert_eq!(server.get("/health").status, 200);
    assert_eq!(server.get("/health").json(), json!({"status": "ok"}));
    // A body is not read for a request without the key: a gigabyte announced and none sent is
    // answered 401 at once.
    let refused = serve_common::answer(serve_common::send_head(server.addr, "POST", "/v1/completions", 1 << 30));
    assert_unauthorized(&refused, "an unsent gigabyte without a key");
    let metrics = request(&server, "GET", "/metrics", &right, b"").text();
    assert!(metrics.contains("redline_requests_total{endpoint=\"/v1/models\",status=\"401\"} 4\n"), "{metrics}");

    // curl, with and without the key.
    let url = format!("http://{}/v1/completions", server.addr);
    let curl = |extra: &[&str]| {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "120", "-w", "\n%{http_code}", "-H", "Content-Type: application/json"])
            .args(extra)
            .args(["-d", &completion, &url])
            .output()
            .expect("curl is installed");
        assert!(out.status.success(), "curl: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let (body, code) = text.rsplit_once('\n').unwrap();
        (code.to_owned(), serde_json::from_str::<Value>(body).unwrap())
    };
    let (code, body) = curl(&[]);
    assert_eq!((code.as_str(), &body["error"]["code"]), ("401", &json!("invalid_api_key")), "{body}");
    let (code, body) = curl(&["-H", "Authorization: Bearer nope"]);
    assert_eq!((code.as_str(), &body["error"]["code"]), ("401", &json!("invalid_api_key")), "{body}");
    let (code, body) = curl(&["-H", &format!("Authorization: Bearer {KEY}")]);
    assert_eq!(code, "200", "{body}");
    let text = body["choices"][0]["text"].as_str().unwrap().to_owned();

    // The official client, with api_key=.
    let Some(python) = serve_common::python() else { return };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/openai_auth.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(format!("http://{}/v1", server.addr))
        .arg("auth")
        .arg(KEY)
        .output()
        .unwrap();
    assert!(out.status.success(), "{python} {script}:\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for attempt in ["wrong", "none"] {
        let seen = &report[attempt];
        assert_eq!(seen["raised"], "AuthenticationError", "{attempt}: {report}");
        assert_eq!(seen["status"], 401, "{attempt}: {report}");
        assert_eq!(seen["code"], "invalid_api_key", "{attempt}: {report}");
        assert_eq!(seen["type"], "invalid_request_error", "{attempt}: {report}");
    }
    assert_eq!(report["right"]["raised"], Value::Null, "{report}");
    assert_eq!(report["right"]["text"], text.as_str(), "{report}");
    assert_eq!(report["right"]["models"], json!(["auth"]), "{report}");
}

#[test]
fn keys_come_from_the_environment_and_from_files() {
    let model = tiny_model("auth-sources", 256);
    let model = model.to_str().unwrap();
    let env_key = std::ffi::OsString::from("sk-from-the-environment");
    let server = Server::start_with_env(&["--model", model, "--device", "sim"], &[("REDLINE_API_KEY", &env_key)]);
    assert_unauthorized(&server.get("/v1/models"), "no key, REDLINE_API_KEY set");
    let header = "Authorization: Bearer sk-from-the-environment\r\n";
    assert_eq!(request(&server, "GET", "/v1/models", header, b"").status, 200);
    drop(server);

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-auth");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keys");
    std::fs::write(&file, "# one key a line\nsk-alice\n\n  sk-bob  \n").unwrap();
    let server = Server::start(&["--model", model, "--device", "sim", "--api-key-file", file.to_str().unwrap()]);
    for key in ["sk-alice", "sk-bob"] {
        let header = format!("Authorization: Bearer {key}\r\n");
        assert_eq!(request(&server, "GET", "/redline/status", &header, b"").status, 200, "{key}");
    }
    assert_unauthorized(
        &request(&server, "GET", "/redline/status", "Authorization: Bearer # one key a line\r\n", b""),
        "a comment line",
    );
    drop(server);

    // Bad key sources are usage errors naming what is wrong.
    std::fs::write(&file, "# nothing here\n").unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["--api-key", ""], "must not be empty"),
        (&["--api-key", "two words"], "visible ASCII"),
        (&["--api-key-file", file.to_str().unwrap()], "no key in the file"),
    ];
    for (args, needle) in cases {
        serve_common::assert_usage_error(model, args, needle);
    }
}

#[test]
fn a_server_other_machines_can_reach_warns_when_it_has_no_key() {
    let model = tiny_model("auth-warning", 256);
    let model = model.to_str().unwrap();
    let warning = "without an API key";
    let open = Server::start(&["--model", model, "--device", "sim", "--host", "0.0.0.0"]);
    serve_common::eventually(std::time::Duration::from_secs(10), "the warning", || open.stderr().contains(warning));
    drop(open);
    let keyed = Server::start(&["--model", model, "--device", "sim", "--host", "0.0.0.0", "--api-key", KEY]);
    let local = Server::start(&["--model", model, "--device", "sim"]);
    // Both have printed their serving line, which follows the warning.
    for server in [&keyed, &local] {
        serve_common::eventually(std::time::Duration::from_secs(10), "the serving line", || {
            server.stderr().contains("serving ")
        });
        assert!(!server.stderr().contains(warning), "{}", server.stderr());
    }
}
