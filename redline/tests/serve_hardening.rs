//! `redline serve` against clients that misbehave: 2,000 connections that send half a request
//! head are closed within the header timeout while `/health` keeps answering, and the server's
//! descriptors return to their idle count; connections over `--max-connections` are answered
//! 503 at once; a `Content-Length` over the limit is refused from the header; a body that does
//! not arrive in time is answered 408; a non-streamed request on a `Connection: close`
//! connection is cancelled when its client goes.

mod serve_common;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use serve_common::{Server, answer, eventually, parse, send, tiny_model};

/// Half a request head: the request line and part of a header, never the blank line.
const HALF_HEAD: &[u8] = b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Le";

/// Open descriptors of process `pid`.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(Iterator::count).unwrap_or(0)
}

/// Raises this process's open-file soft limit so it can hold `n` sockets.
fn fit(n: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_some_and(|current| current < n) {
        let raised = limit.maximum.map_or(n, |maximum| maximum.min(n));
        setrlimit(Resource::Nofile, Rlimit { current: Some(raised), maximum: limit.maximum }).unwrap();
        assert!(raised >= n, "the hard limit on open files ({raised}) is below the {n} this test needs");
    }
}

/// Watches sockets until each is closed by the server: for every one, how long after it was
/// opened that was seen (to within one 20 ms poll), or `None` when it was still open at
/// `open_at_most` after it was opened. Sockets arrive on `opened` while the poller runs.
fn watch_closes(
    opened: &std::sync::mpsc::Receiver<(TcpStream, Instant)>,
    open_at_most: Duration,
) -> Vec<Option<Duration>> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut pending: Vec<(usize, TcpStream, Instant)> = Vec::new();
    let mut closes: Vec<Option<Duration>> = Vec::new();
    let mut senders_gone = false;
    while !(senders_gone && pending.is_empty()) {
        loop {
            match opened.try_recv() {
                Ok((stream, at)) => {
                    stream.set_nonblocking(true).unwrap();
                    pending.push((closes.len(), stream, at));
                    closes.push(None);
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => break,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    senders_gone = true;
                    break;
                }
            }
        }
        let mut fds: Vec<PollFd<'_>> =
            pending.iter().map(|(_, stream, _)| PollFd::new(stream, PollFlags::IN | PollFlags::RDHUP)).collect();
        poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 20_000_000 })).unwrap();
        let ready: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
        drop(fds);
        let now = Instant::now();
        let mut buf = [0u8; 512];
        let mut position = 0;
        pending.retain_mut(|(index, stream, at)| {
            let was_ready = ready[position];
            position += 1;
            let elapsed = now - *at;
            if elapsed > open_at_most {
                return false;
            }
            if !was_ready {
                return true;
            }
            match stream.read(&mut buf) {
                Ok(0) => {
                    closes[*index] = Some(elapsed);
                    false
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => true,
                Ok(_) => true,
                // A reset is a close too.
                Err(_) => {
                    closes[*index] = Some(elapsed);
                    false
                }
            }
        });
    }
    closes
}

/// `GET /health` with its own deadline: the status, or `None` when it did not answer in time.
fn health(addr: SocketAddr, timeout: Duration) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    Some(parse(&raw).status)
}

#[test]
fn two_thousand_half_sent_requests_are_closed_within_the_header_timeout() {
    const CONNECTIONS: usize = 2000;
    const HEADER_TIMEOUT: Duration = Duration::from_secs(2);
    fit(CONNECTIONS as u64 + 256);
    let model = tiny_model("hardening-flood", 256);
    let server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim", "--header-timeout", "2"]);
    let pid = server.child.id();
    assert_eq!(health(server.addr, Duration::from_secs(5)), Some(200));
    eventually(Duration::from_secs(5), "the idle descriptor count to settle", || {
        let first = descriptors(pid);
        std::thread::sleep(Duration::from_millis(200));
        first == descriptors(pid)
    });
    let idle = descriptors(pid);

    // /health is asked every 100 ms from before the first half-sent request until the last
    // one is closed; every answer must be a 200 within a second.
    let stop = Arc::new(AtomicBool::new(false));
    let prober = {
        let (stop, addr) = (Arc::clone(&stop), server.addr);
        std::thread::spawn(move || {
            let mut answers = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let asked = Instant::now();
                answers.push((health(addr, Duration::from_secs(1)), asked.elapsed()));
                std::thread::sleep(Duration::from_millis(100));
            }
            answers
        })
    };
    let slack = Duration::from_millis(1500);
    let (opened, arrivals) = std::sync::mpsc::channel();
    let watcher = std::thread::spawn(move || watch_closes(&arrivals, HEADER_TIMEOUT + slack));
    let mut peak = 0;
    for i in 0..CONNECTIONS {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.write_all(HALF_HEAD).unwrap();
        opened.send((stream, Instant::now())).unwrap();
        if i % 100 == 99 {
            peak = peak.max(descriptors(pid));
        }
    }
    drop(opened);
    let closes = watcher.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let answers = prober.join().unwrap();
    assert!(peak >= idle + 100, "the server held {peak} descriptors at most, {idle} idle: few connections were open");
    let mut latest = Duration::ZERO;
    for (i, close) in closes.iter().enumerate() {
        let close = close.unwrap_or_else(|| {
            panic!("connection {i} was still open {:?} after it sent half a head", HEADER_TIMEOUT + slack)
        });
        assert!(close >= HEADER_TIMEOUT - Duration::from_millis(50), "connection {i} closed after only {close:?}");
        latest = latest.max(close);
    }
    assert!(answers.len() >= 10, "only {} /health probes ran", answers.len());
    for (i, (status, took)) in answers.iter().enumerate() {
        assert_eq!(*status, Some(200), "/health probe {i} of {} (took {took:?})", answers.len());
    }
    eventually(Duration::from_secs(10), "the server's descriptors to return to their idle count", || {
        descriptors(pid) <= idle
    });
    println!(
        "{CONNECTIONS} half-sent requests: all closed at most {latest:?} after they opened (header timeout \
         {HEADER_TIMEOUT:?}); {} /health probes all 200; descriptors idle {idle}, peak {peak}, after {}",
        answers.len(),
        descriptors(pid)
    );
    // Still serving.
    assert_eq!(server.post("/v1/completions", &json!({"prompt": "x", "max_tokens": 2})).status, 200);
}

#[test]
fn connections_over_the_limit_are_answered_503_at_once() {
    let model = tiny_model("hardening-limit", 256);
    let server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim", "--max-connections", "8"]);
    let pid = server.child.id();
    assert_eq!(health(server.addr, Duration::from_secs(5)), Some(200));
    eventually(Duration::from_secs(5), "the idle descriptor count to settle", || {
        let first = descriptors(pid);
        std::thread::sleep(Duration::from_millis(200));
        first == descriptors(pid)
    });
    let idle = descriptors(pid);
    let held: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut stream = TcpStream::connect(server.addr).unwrap();
            stream.write_all(HALF_HEAD).unwrap();
            stream
        })
        .collect();
    // The listener has accepted the eight (each is a descriptor of the server's) before the
    // ninth arrives.
    eventually(Duration::from_secs(10), "the server to accept the eight connections", || descriptors(pid) >= idle + 8);
    let started = Instant::now();
    let response = answer(send(server.addr, "GET", "/health", b""));
    let took = started.elapsed();
    assert_eq!(response.status, 503, "{}", response.text());
    assert_eq!(response.json()["error"]["code"], "too_many_connections");
    assert!(response.json()["error"]["message"].as_str().unwrap().contains("--max-connections"));
    assert_eq!(response.header("retry-after"), Some("1"));
    assert!(took < Duration::from_secs(1), "the refusal took {took:?}");
    drop(held);
    eventually(Duration::from_secs(5), "a connection slot to free up", || {
        health(server.addr, Duration::from_secs(1)) == Some(200)
    });
}

#[test]
fn an_oversized_content_length_is_refused_from_the_header_and_a_slow_body_times_out() {
    let model = tiny_model("hardening-body", 256);
    let server = Server::start(&[
        "--model",
        model.to_str().unwrap(),
        "--device",
        "sim",
        "--max-body-bytes",
        "4096",
        "--body-timeout",
        "1",
    ]);
    // A gigabyte announced, nothing sent.
    let started = Instant::now();
    let response = answer(serve_common::send_head(server.addr, "POST", "/v1/completions", 1_073_741_824));
    let took = started.elapsed();
    assert_eq!(response.status, 413, "{}", response.text());
    assert_eq!(response.json()["error"]["code"], "request_too_large");
    assert!(response.json()["error"]["message"].as_str().unwrap().contains("1073741824"));
    assert!(took < Duration::from_secs(1), "413 after {took:?}");

    // A chunked body with no length announced is cut at the limit.
    let chunk = "a".repeat(3000);
    let request = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{len:x}\r\n{chunk}\r\n{len:x}\r\n{chunk}\r\n0\r\n\r\n",
        len = chunk.len()
    );
    let response = answer(serve_common::send_raw(server.addr, request.as_bytes()));
    assert_eq!(response.status, 413, "{}", response.text());

    // Half the announced body, then silence: 408 after --body-timeout.
    let started = Instant::now();
    let half = b"{\"prompt\": \"x\",";
    let response = answer(serve_common::send_head_and(server.addr, "POST", "/v1/completions", "", 40, half));
    let took = started.elapsed();
    assert_eq!(response.status, 408, "{}", response.text());
    assert_eq!(response.json()["error"]["code"], "request_timeout");
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(3), "408 after {took:?}");
    assert_eq!(server.post("/v1/completions", &json!({"prompt": "x", "max_tokens": 2})).status, 200);
}

/// Sends a whole `max_tokens` 4000 completion on a `Connection: close` connection, followed by
/// `trailing` bytes, waits until it generates, closes the connection, and checks that the
/// generation stops early and the request counts as 499.
fn cancelled_when_closed(server: &Server, trailing: &[u8], nth: f64) {
    let body = json!({"prompt": "x", "max_tokens": 4000, "temperature": 0}).to_string();
    // `send` asks for `Connection: close`.
    let mut stream = send(server.addr, "POST", "/v1/completions", body.as_bytes());
    stream.write_all(trailing).unwrap();
    eventually(Duration::from_secs(30), "the generation to start", || server.metric("redline_generating") == 1.0);
    drop(stream);
    eventually(Duration::from_secs(10), "the generation to be cancelled", || {
        server.metric("redline_requests_cancelled_total") == nth && server.metric("redline_generating") == 0.0
    });
    let status = server.get("/redline/status").json();
    let generated = status["generations"]["last_cancelled_tokens"].as_u64().unwrap();
    assert!(generated < 4000, "the generation ran to its end: {status}");
    assert_eq!(status["generations"]["finished"], 0, "{status}");
    let metrics = server.get("/metrics").text();
    let counted = format!("redline_requests_total{{endpoint=\"/v1/completions\",status=\"499\"}} {nth}\n");
    assert!(metrics.contains(&counted), "{metrics}");
}

#[test]
fn a_whole_request_on_a_closing_connection_is_cancelled_when_its_client_goes() {
    let server = serve_common::long_server("hardening-cancel", &[]);
    cancelled_when_closed(&server, b"", 1.0);
    // Bytes after the request (which HTTP/1.1 would read as the next request, and which the
    // server never reads on a closing connection) leave the close to be seen on the socket.
    cancelled_when_closed(&server, b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n", 2.0);
}

#[test]
fn help_names_the_limits_and_bad_limits_are_usage_errors() {
    let help = serve_common::help();
    for needle in [
        "--max-connections",
        "[default: 4096]",
        "--header-timeout",
        "[default: 10]",
        "--body-timeout",
        "[default: 30]",
        "--api-key",
        "--api-key-file",
        "REDLINE_API_KEY",
        "Authorization: Bearer KEY",
        "408",
        "413",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
    let model = tiny_model("hardening-cli", 256);
    let cases: [(&[&str], &str); 5] = [
        (&["--header-timeout", "0"], "--header-timeout"),
        (&["--header-timeout", "soon"], "not a number of seconds"),
        (&["--body-timeout", "7200"], "outside (0, 3600]"),
        (&["--max-connections", "0"], "--max-connections"),
        (&["--api-key-file", "/nonexistent/keys"], "/nonexistent/keys"),
    ];
    for (args, needle) in cases {
        serve_common::assert_usage_error(model.to_str().unwrap(), args, needle);
    }
}
