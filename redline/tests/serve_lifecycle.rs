//! `redline serve` under load and over its lifetime: 32 concurrent clients each get their own
//! complete answer; a full queue answers 503 with Retry-After; a client that disconnects stops
//! its generation; SIGTERM finishes the requests in flight and queued, then exits 0.

mod serve_common;

use std::io::Read as _;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serve_common::{Server, eventually, read_until, send, send_with, stream_text, tiny_model};

fn long_stream(max_tokens: u32) -> Vec<u8> {
    json!({"prompt": "x", "max_tokens": max_tokens, "temperature": 0, "stream": true}).to_string().into_bytes()
}

/// Request `i` of the load test: completions or chat, whole or streamed, each with its own
/// prompt and seed.
fn load_request(i: usize) -> (&'static str, Value) {
    let common = json!({"max_tokens": 16, "temperature": 2.0, "seed": i});
    let mut body = common.clone();
    if i.is_multiple_of(2) {
        body["prompt"] = json!(format!("item {i} says"));
        ("/v1/completions", body)
    } else {
        body["messages"] = json!([{"role": "user", "content": format!("question {i}?")}]);
        ("/v1/chat/completions", body)
    }
}

fn answer(path: &str, response: &serve_common::Response, streamed: bool) -> String {
    assert_eq!(response.status, 200, "{path}: {}", response.text());
    if streamed {
        let events = response.events();
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"), "{path}: incomplete stream");
        return stream_text(&events);
    }
    let body = response.json();
    let choice = &body["choices"][0];
    choice["text"].as_str().or_else(|| choice["message"]["content"].as_str()).unwrap().to_owned()
}

#[test]
fn thirty_two_concurrent_clients_each_get_their_own_complete_answer() {
    let model = tiny_model("load", 256);
    let server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim", "--queue", "32"]);
    let barrier = Arc::new(Barrier::new(32));
    let addr = server.addr;
    let clients: Vec<_> = (0..32)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let (path, mut body) = load_request(i);
                let streamed = i % 4 < 2;
                body["stream"] = json!(streamed);
                barrier.wait();
                let response = serve_common::request(addr, "POST", path, body.to_string().as_bytes());
                answer(path, &response, streamed)
            })
        })
        .collect();
    let concurrent: Vec<String> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let distinct: std::collections::BTreeSet<&String> = concurrent.iter().collect();
    assert!(distinct.len() >= 16, "too few distinct answers to tell requests apart: {}", distinct.len());
    for (i, text) in concurrent.iter().enumerate() {
        let (path, body) = load_request(i);
        let alone = answer(path, &server.post(path, &body), false);
        assert_eq!(text, &alone, "request {i} under load differs from the same request alone");
    }
    let metrics = server.get("/metrics").text();
    assert!(metrics.contains("redline_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 32\n"), "{metrics}");
    assert!(
        metrics.contains("redline_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 32\n"),
        "{metrics}"
    );
}

#[test]
fn a_full_queue_answers_503_with_retry_after_and_a_disconnect_frees_the_worker() {
    let server = serve_common::long_server("queue", &["--queue", "1"]);
    // A: generating (its first token has arrived).
    let mut a = send(server.addr, "POST", "/v1/completions", &long_stream(3000));
    read_until(&mut a, "\"text\"");
    // B: waiting in the queue of one.
    let addr = server.addr;
    let b = std::thread::spawn(move || {
        serve_common::request(addr, "POST", "/v1/completions", br#"{"prompt": "y", "max_tokens": 5, "temperature": 0}"#)
    });
    eventually(Duration::from_secs(30), "B is queued", || server.metric("redline_queue_depth") == 1.0);
    // C: no room.
    let c = server.post("/v1/completions", &json!({"prompt": "z", "max_tokens": 5}));
    assert_eq!(c.status, 503, "{}", c.text());
    assert_eq!(c.header("retry-after"), Some("1"));
    assert_eq!(c.json()["error"]["code"], "queue_full");
    assert_eq!(c.json()["error"]["type"], "server_error");
    // A's client goes: its generation stops and B is served long before A's 3000 tokens.
    let dropped = Instant::now();
    drop(a);
    let b = b.join().unwrap();
    assert_eq!(b.status, 200, "{}", b.text());
    assert_eq!(b.json()["usage"]["completion_tokens"], 5);
    assert!(dropped.elapsed() < Duration::from_secs(10), "B waited {:?}", dropped.elapsed());
    assert_eq!(server.metric("redline_requests_cancelled_total"), 1.0);
}

#[test]
fn a_disconnected_stream_stops_its_generation() {
    let server = serve_common::long_server("cancel", &[]);
    let mut stream = send(server.addr, "POST", "/v1/completions", &long_stream(3000));
    read_until(&mut stream, "\"text\"");
    drop(stream);
    eventually(Duration::from_secs(30), "the generation is cancelled", || {
        server.metric("redline_requests_cancelled_total") == 1.0
    });
    let generated = server.metric("redline_generated_tokens_total");
    assert!((1.0..300.0).contains(&generated), "{generated} tokens generated of 3000 asked for");
    let status = server.get("/redline/status").json();
    assert_eq!(status["generations"]["cancelled"], 1, "{status}");
    assert_eq!(status["generations"]["finished"], 0, "{status}");
    assert!(status["generations"]["last_cancelled_tokens"].as_u64().unwrap() < 300, "{status}");
    assert_eq!(server.metric("redline_generations_total"), 0.0);

    // A whole (non-streamed) answer's client going is noticed as well, on a keep-alive connection
    // (as clients hold them): the server reads it for the next request and sees it close.
    let body = br#"{"prompt": "x", "max_tokens": 3000, "temperature": 0}"#;
    let whole = send_with(server.addr, "POST", "/v1/completions", body, "keep-alive");
    eventually(Duration::from_secs(30), "the generation has started", || server.metric("redline_generating") == 1.0);
    drop(whole);
    eventually(Duration::from_secs(30), "the second generation is cancelled", || {
        server.metric("redline_requests_cancelled_total") == 2.0
    });
    assert!(server.metric("redline_generated_tokens_total") < generated + 1000.0);
    assert_eq!(server.metric("redline_generations_total"), 0.0);
    assert_eq!(server.metric("redline_generating"), 0.0);
}

#[test]
fn sigterm_finishes_the_requests_in_flight_and_queued_then_exits_0() {
    let mut server = serve_common::long_server("shutdown", &[]);
    let mut in_flight = send(server.addr, "POST", "/v1/completions", &long_stream(600));
    let mut seen = read_until(&mut in_flight, "\"text\"");
    let addr = server.addr;
    let queued = std::thread::spawn(move || {
        serve_common::request(
            addr,
            "POST",
            "/v1/chat/completions",
            br#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "temperature": 0}"#,
        )
    });
    eventually(Duration::from_secs(30), "the second request is queued", || server.metric("redline_queue_depth") == 1.0);
    server.terminate();
    // The listener closes: new connections are refused while the old ones are answered.
    eventually(Duration::from_secs(10), "new connections are refused", || std::net::TcpStream::connect(addr).is_err());
    let mut rest = Vec::new();
    in_flight.read_to_end(&mut rest).unwrap();
    seen.push_str(&String::from_utf8_lossy(&rest));
    let response = serve_common::parse(seen.as_bytes());
    let events = response.events();
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let last: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "length", "the stream ran to its end: {last}");
    let queued = queued.join().unwrap();
    assert_eq!(queued.status, 200, "{}", queued.text());
    assert_eq!(queued.json()["usage"]["completion_tokens"], 8);
    let status = server.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "stderr: {}", server.stderr());
    assert!(server.stderr().contains("SIGTERM"), "{}", server.stderr());
}

#[test]
fn sigint_when_idle_exits_0() {
    let model = tiny_model("sigint", 256);
    let mut server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim"]);
    assert_eq!(server.post("/v1/completions", &json!({"prompt": "x", "max_tokens": 2})).status, 200);
    server.signal(libc::SIGINT);
    let status = server.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "stderr: {}", server.stderr());
    assert!(server.stderr().contains("SIGINT"), "{}", server.stderr());
}
