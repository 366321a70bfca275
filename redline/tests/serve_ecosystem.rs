//! `redline serve` beside the tools it is deployed with:
//! - `/health` is 503 with llama.cpp's body while a model loads (a switch to Gemma 3 270M, read
//!   and loaded again) and 200 once it is on the device;
//! - response ids are unique across two server processes;
//! - `/tokenize` and `/detokenize` give llama.cpp's ids and text for its own test vectors (Gemma 3
//!   270M's 326 strings, each with and without BOS and special-token parsing), the pieces when
//!   asked, behind the API key;
//! - the vLLM-named gauges move while two streams are open and come back to 0;
//! - the browser-facing rules: a foreign Host is 421, a `text/plain` body 415, an HTTP/1.1
//!   request without Host 400; `--allowed-host` names are answered.

mod common;
mod serve_common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serve_common::{Server, long_server, request_with, send_raw, tiny_model};

/// Samples of `series` (name and labels, exactly) in a `/metrics` text.
fn sample(text: &str, series: &str) -> f64 {
    let line = text.lines().find(|l| l.strip_prefix(series).is_some_and(|rest| rest.starts_with(' ')));
    line.unwrap_or_else(|| panic!("{series} missing:\n{text}")).rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn health_is_503_while_a_switched_to_model_loads_and_200_when_it_is_ready() {
    let Some(gemma) = common::gemma_model() else { return };
    let tiny = tiny_model("health-switch", 256);
    let server = Server::start(&["--model", tiny.to_str().unwrap(), "--model", &gemma, "--device", "sim"]);
    assert_eq!(server.get("/health").status, 200);
    let gemma_id = std::path::Path::new(&gemma).file_stem().unwrap().to_str().unwrap().to_owned();
    let addr = server.addr;
    let body = json!({"model": gemma_id, "prompt": "The capital of France is", "max_tokens": 2, "temperature": 0});
    let switch =
        std::thread::spawn(move || serve_common::request(addr, "POST", "/v1/completions", body.to_string().as_bytes()));
    // Reading the 253 MB file again and loading it takes long enough to be seen.
    let start = Instant::now();
    let loading = loop {
        let health = server.get("/health");
        if health.status == 503 {
            break health;
        }
        assert!(!switch.is_finished(), "the switch ended and /health never said 503: {}", server.stderr());
        assert!(start.elapsed() < Duration::from_secs(120), "{}", server.stderr());
    };
    assert_eq!(loading.header("retry-after"), Some("1"));
    let body = loading.json();
    assert_eq!(body["error"]["code"], 503, "{body}");
    assert_eq!(body["error"]["message"], "Loading model", "{body}");
    assert_eq!(body["error"]["type"], "unavailable_error", "{body}");
    assert_eq!(body["error"]["model"], gemma_id.as_str(), "{body}");
    let answer = switch.join().unwrap();
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(server.get("/health").json(), json!({"status": "ok"}));
}

#[test]
fn health_is_503_from_the_listening_line_until_the_first_model_is_loaded() {
    let Some(gemma) = common::gemma_model() else { return };
    let mut server = Server::listening(&["--model", &gemma, "--device", "sim"], &[]);
    // The device upload of 253 MB comes after the listening line.
    let first = server.get("/health");
    assert_eq!(first.status, 503, "{}", first.text());
    assert_eq!(first.json()["error"]["message"], "Loading model");
    server.wait_ready();
    assert!(server.stderr().contains("model loaded in"), "{}", server.stderr());
}

#[test]
fn response_ids_are_unique_across_server_processes() {
    let model = tiny_model("ids", 256);
    let args = ["--model", model.to_str().unwrap(), "--device", "sim"];
    let (a, b) = (Server::start(&args), Server::start(&args));
    let mut ids = BTreeSet::new();
    for server in [&a, &b, &a, &b] {
        for endpoint in ["/v1/completions", "/v1/chat/completions"] {
            let body = if endpoint.ends_with("chat/completions") {
                json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
            } else {
                json!({"prompt": "hi", "max_tokens": 1})
            };
            for _ in 0..5 {
                let response = server.post(endpoint, &body);
                assert_eq!(response.status, 200, "{}", response.text());
                let id = response.json()["id"].as_str().unwrap().to_owned();
                assert!(ids.insert(id.clone()), "{id} handed out twice");
            }
        }
    }
    assert_eq!(ids.len(), 40);
}

/// One of llama.cpp's tokenizer vectors for Gemma 3 270M (`tokenizer/tests/data/README.md`).
struct Vector {
    text: String,
    add_special: bool,
    parse_special: bool,
    ids: Vec<u64>,
    detokenized: Vec<u8>,
}

fn gemma_vectors() -> Vec<Vector> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tokenizer/tests/data/gemma3_expected.json");
    let json: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Vector {
            text: c["text"].as_str().unwrap().to_owned(),
            add_special: c["add_special"].as_bool().unwrap(),
            parse_special: c["parse_special"].as_bool().unwrap(),
            ids: c["ids"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap()).collect(),
            detokenized: match c.get("detokenized") {
                Some(Value::String(s)) => s.as_bytes().to_vec(),
                _ => c["detokenized_bytes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| u8::try_from(b.as_u64().unwrap()).unwrap())
                    .collect(),
            },
        })
        .collect()
}

#[test]
fn tokenize_and_detokenize_give_llama_cpps_ids_and_text_for_its_vectors() {
    let Some(gemma) = common::gemma_model() else { return };
    let server = Server::start(&["--model", &gemma, "--device", "sim", "--api-key", "k"]);
    let auth = "Authorization: Bearer k\r\n";
    let post = |path: &str, body: &Value| request_with(server.addr, "POST", path, auth, body.to_string().as_bytes());
    let vectors = gemma_vectors();
    assert!(vectors.len() >= 800, "{}", vectors.len());
    let strings: BTreeSet<&str> = vectors.iter().map(|v| v.text.as_str()).collect();
    assert!(strings.len() >= 200, "{}", strings.len());
    for v in &vectors {
        let body = json!({"content": v.text, "add_special": v.add_special, "parse_special": v.parse_special});
        let tokens = post("/tokenize", &body);
        assert_eq!(tokens.status, 200, "{}", tokens.text());
        let ids: Vec<u64> = tokens.json()["tokens"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap()).collect();
        assert_eq!(ids, v.ids, "{:?} add_special={} parse_special={}", v.text, v.add_special, v.parse_special);
        let text = post("/detokenize", &json!({"tokens": ids}));
        assert_eq!(text.status, 200, "{}", text.text());
        let content = text.json()["content"].as_str().unwrap().to_owned();
        // The server shows control tokens (llama.cpp's server does too); the vectors show them
        // exactly when the text was read with special-token parsing, and otherwise contain none
        // but BOS.
        if v.parse_special || !v.add_special {
            assert_eq!(content.as_bytes(), String::from_utf8_lossy(&v.detokenized).as_bytes(), "{:?}", v.text);
        } else {
            assert_eq!(content, format!("<bos>{}", String::from_utf8_lossy(&v.detokenized)), "{:?}", v.text);
        }
        if !v.add_special {
            // A round trip: SPM reads `▁` as a space.
            assert_eq!(content, v.text.replace('\u{2581}', " "), "round trip of {:?}", v.text);
        }
    }
    // The pieces: one per id, the text of each, bytes where a piece is not UTF-8 on its own.
    let pieces =
        post("/tokenize", &json!({"content": "Hi 😀<start_of_turn>", "add_special": true, "with_pieces": true}));
    let pieces = pieces.json()["tokens"].as_array().unwrap().clone();
    assert_eq!(pieces[0], json!({"id": 2, "piece": "<bos>"}));
    assert!(pieces.iter().any(|p| p["piece"] == "<start_of_turn>" && p["id"] == 105), "{pieces:?}");
    let mut bytes = Vec::new();
    for piece in &pieces {
        match &piece["piece"] {
            Value::String(s) => bytes.extend_from_slice(s.as_bytes()),
            Value::Array(b) => bytes.extend(b.iter().map(|b| u8::try_from(b.as_u64().unwrap()).unwrap())),
            other => panic!("{other}"),
        }
    }
    assert_eq!(String::from_utf8(bytes).unwrap(), "<bos>Hi 😀<start_of_turn>");
    // Errors name the field; the key is needed.
    let bad = post("/detokenize", &json!({"tokens": [2, 999_999_999]}));
    assert_eq!((bad.status, bad.error_param()), (400, json!("tokens[1]")), "{}", bad.text());
    let bad = post("/tokenize", &json!({"content": 5}));
    assert_eq!((bad.status, bad.error_param()), (400, json!("content")));
    let bad = post("/tokenize", &json!({"content": "a", "special": true}));
    assert_eq!((bad.status, bad.error_param()), (400, json!("special")));
    assert_eq!(server.post("/tokenize", &json!({"content": "a"})).status, 401);
    assert_eq!(server.post("/detokenize", &json!({"tokens": [2]})).status, 401);
}

#[test]
fn the_vllm_gauges_move_while_two_streams_are_open_and_return_to_zero() {
    let server = long_server("gauges", &[]);
    let id = "gauges";
    let stream = json!({"prompt": "a", "max_tokens": 3000, "stream": true, "temperature": 0}).to_string();
    let open: Vec<_> =
        (0..2).map(|_| serve_common::send(server.addr, "POST", "/v1/completions", stream.as_bytes())).collect();
    let running = format!("vllm:num_requests_running{{model_name=\"{id}\"}}");
    let waiting = format!("vllm:num_requests_waiting{{model_name=\"{id}\"}}");
    let usage = format!("vllm:kv_cache_usage_perc{{model_name=\"{id}\"}}");
    let start = Instant::now();
    let text = loop {
        let text = server.get("/metrics").text();
        // One generates (generations run one at a time); the other waits in the queue.
        if sample(&text, &running) == 1.0 && sample(&text, &waiting) == 1.0 {
            break text;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{text}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(sample(&text, &usage) > 0.0, "{text}");
    drop(open);
    let start = Instant::now();
    loop {
        let text = server.get("/metrics").text();
        if sample(&text, &running) == 0.0 && sample(&text, &waiting) == 0.0 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let done = server.post("/v1/completions", &json!({"prompt": "a", "max_tokens": 4, "temperature": 0}));
    assert_eq!(done.status, 200);
    let text = server.get("/metrics").text();
    assert_eq!(
        sample(&text, &format!("vllm:request_success_total{{model_name=\"{id}\",finished_reason=\"length\"}}")),
        1.0
    );
    // The first stream's, the last request's, and the second stream's if it started before its
    // client went.
    let firsts = sample(&text, &format!("vllm:time_to_first_token_seconds_count{{model_name=\"{id}\"}}"));
    assert!((2.0..=3.0).contains(&firsts), "{text}");
    assert_eq!(sample(&text, &format!("vllm:e2e_request_latency_seconds_count{{model_name=\"{id}\"}}")), 1.0);
    assert!(sample(&text, &format!("vllm:inter_token_latency_seconds_count{{model_name=\"{id}\"}}")) >= 3.0);
    assert!(sample(&text, &format!("vllm:generation_tokens_total{{model_name=\"{id}\"}}")) >= 4.0);
}

#[test]
fn browser_facing_requests_are_refused_by_host_content_type_and_a_missing_host() {
    let model = tiny_model("browser", 256);
    let server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim", "--allowed-host", "chat.lan"]);
    let addr = server.addr;
    let port = addr.port();
    let raw = |head: &str, body: &str| {
        serve_common::answer(send_raw(
            addr,
            format!("{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).as_bytes(),
        ))
    };
    // DNS rebinding: a page on attacker.example reaches the loopback port under its own name.
    let rebound = raw(&format!("GET /redline/status HTTP/1.1\r\nHost: attacker.example:{port}\r\n"), "");
    assert_eq!(rebound.status, 421, "{}", rebound.text());
    assert_eq!(rebound.json()["error"]["code"], "host_not_allowed");
    assert!(rebound.text().contains("attacker.example") && rebound.text().contains("--allowed-host"));
    let body = json!({"prompt": "x", "max_tokens": 1}).to_string();
    let rebound =
        raw("POST /v1/completions HTTP/1.1\r\nHost: attacker.example\r\nContent-Type: application/json\r\n", &body);
    assert_eq!(rebound.status, 421);
    for host in
        [format!("localhost:{port}"), format!("127.0.0.1:{port}"), "chat.lan".to_owned(), "CHAT.LAN:443".to_owned()]
    {
        assert_eq!(raw(&format!("GET /health HTTP/1.1\r\nHost: {host}\r\n"), "").status, 200, "{host}");
    }
    // A cross-site form or text post runs nothing.
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"] {
        let head = format!("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n");
        let refused = raw(&head, &body);
        assert_eq!(refused.status, 415, "{content_type}: {}", refused.text());
        assert_eq!(refused.json()["error"]["code"], "unsupported_media_type");
    }
    let untyped = raw("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n", &body);
    assert_eq!(untyped.status, 415, "{}", untyped.text());
    assert_eq!(
        raw("POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n", "{\"content\":\"a\"}").status,
        415
    );
    let typed = raw(
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json; charset=utf-8\r\n",
        &body,
    );
    assert_eq!(typed.status, 200, "{}", typed.text());
    // HTTP/1.1 requires Host; HTTP/1.0 does not.
    let hostless = raw("GET /health HTTP/1.1\r\n", "");
    assert_eq!(hostless.status, 400, "{}", hostless.text());
    assert_eq!(hostless.json()["error"]["code"], "missing_host");
    assert_eq!(raw("GET /health HTTP/1.0\r\n", "").status, 200);
    assert_eq!(server.metric("redline_generations_total"), 1.0, "only the JSON request generated");
}
