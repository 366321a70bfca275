//! Shared by the `serve_*` tests: the tiny model, a `redline serve` child process on a free
//! loopback port, and a small HTTP/1.1 client over `std::net::TcpStream` (with chunked transfer
//! decoding and server-sent-event parsing).
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Reads and writes time out after this: a hung server fails the test instead of hanging it.
pub const IO_TIMEOUT: Duration = Duration::from_secs(120);

/// The tiny model with `context_length` positions at `<target tmp>/serve/<name>.gguf`.
/// Written to a unique file and renamed into place: a server of a concurrent test may be
/// reading (memory-mapping) the same path.
pub fn tiny_model(name: &str, context_length: u32) -> PathBuf {
    tiny_model_seeded(name, context_length, gguf::TinyLlamaConfig::default().seed)
}

/// [`tiny_model`] with the weights of `seed` (another seed is another model).
pub fn tiny_model_seeded(name: &str, context_length: u32, seed: u64) -> PathBuf {
    static WRITES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.gguf"));
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = dir.join(format!("{name}.{}.{n}.tmp", std::process::id()));
    let config = gguf::TinyLlamaConfig { context_length, seed, ..gguf::TinyLlamaConfig::default() };
    gguf::write_tiny_llama(&scratch, &config).unwrap();
    std::fs::rename(&scratch, &path).unwrap();
    path
}

/// `redline serve` of a tiny model with room for long generations (4096 positions, up to 4000
/// new tokens; each takes a few ms on the soft device), with `extra` arguments.
pub fn long_server(name: &str, extra: &[&str]) -> Server {
    let model = tiny_model(name, 4096);
    let args = [
        &["--model", model.to_str().unwrap(), "--device", "sim", "--context", "4096", "--max-tokens-limit", "4000"][..],
        extra,
    ]
    .concat();
    Server::start(&args)
}

/// A running `redline serve`.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `redline serve --port 0 ARGS` and waits for its `listening on` line and for its
    /// first model to load (`/health` 200).
    pub fn start(args: &[&str]) -> Server {
        Self::start_with_env(args, &[])
    }

    /// [`Server::start`] with `env` added to the server's environment.
    pub fn start_with_env(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Server {
        let mut server = Self::listening(args, env);
        server.wait_ready();
        server
    }

    /// Polls `/health` until it answers 200 (the first model is loaded); panics with the
    /// server's stderr if the server exits or takes more than [`IO_TIMEOUT`].
    pub fn wait_ready(&mut self) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("the server exited ({status}) before it was ready; stderr: {}", self.stderr());
            }
            let health = self.get("/health");
            if health.status == 200 {
                return;
            }
            assert_eq!(health.status, 503, "{}", health.text());
            assert!(start.elapsed() < IO_TIMEOUT, "not ready in {IO_TIMEOUT:?}; stderr: {}", self.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts `redline serve --port 0 ARGS` with `env` and returns once it listens (its first
    /// model may still be loading).
    pub fn listening(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
            .envs(env.iter().copied())
            .arg("serve")
            .args(["--port", "0"])
            .args(args)
            .env_remove("REDLINE_REPLAY_BACKEND")
            .env_remove("REDLINE_REPLAY_TRANSPORT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let Some(addr) = line.trim().strip_prefix("listening on http://") else {
            let _ = child.wait();
            let _ = reader.join();
            let stderr = stderr.lock().unwrap().clone();
            panic!("first stdout line {line:?}; stderr: {stderr}");
        };
        Server { addr: addr.parse().unwrap(), child, stderr }
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// `method path` with a JSON (or raw) body.
    pub fn request(&self, method: &str, path: &str, body: &[u8]) -> Response {
        request(self.addr, method, path, body)
    }

    /// POST a JSON value.
    pub fn post(&self, path: &str, body: &Value) -> Response {
        self.request("POST", path, body.to_string().as_bytes())
    }

    /// GET `path`.
    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, b"")
    }

    /// The value of metric `name` (a line `name value`, no labels).
    pub fn metric(&self, name: &str) -> f64 {
        let text = self.get("/metrics").text();
        let line = text
            .lines()
            .find(|l| l.split(' ').next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"));
        line.split(' ').nth(1).unwrap().parse().unwrap()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        self.signal(libc::SIGTERM);
    }

    /// Sends `signal`.
    pub fn signal(&self, signal: i32) {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) with a child's pid and a valid signal number has no memory effects.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits for the process to exit (at most `timeout`).
    pub fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < timeout, "the server did not exit in {timeout:?}; stderr: {}", self.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    /// The OpenAI error object's `param`, asserting the error shape.
    pub fn error_param(&self) -> Value {
        let body = self.json();
        let error = &body["error"];
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
        assert!(error["type"].is_string(), "{body}");
        assert!(error.get("code").is_some() && error.get("param").is_some(), "{body}");
        error["param"].clone()
    }

    /// The `data:` payloads of a server-sent-event body, `[DONE]` included as a string.
    pub fn events(&self) -> Vec<String> {
        sse_data(&self.text())
    }
}

/// The `data:` payloads in `text`.
pub fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(|event| event.strip_prefix("data: ").unwrap_or_else(|| panic!("not a data event: {event:?}")).to_owned())
        .collect()
}

/// Opens a connection and writes `bytes` as they are.
pub fn send_raw(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    // A server may answer (413, 401) before reading a large body and close: a failed write is
    // fine.
    let _ = stream.write_all(bytes);
    stream
}

/// Opens a connection and writes one request head with `headers` (whole lines, each ending in
/// `\r\n`) and a body of `length` bytes announced, then `body` (which may be shorter, or empty
/// to announce a body that never comes).
pub fn send_head_and(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    length: usize,
    body: &[u8],
) -> TcpStream {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{headers}Content-Length: {length}\r\n\r\n"
    );
    send_raw(addr, &[head.as_bytes(), body].concat())
}

/// Opens a connection and writes one request (`Connection: close`).
pub fn send(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> TcpStream {
    send_with(addr, method, path, body, "close")
}

/// Opens a connection and writes one request with the `Connection` header `connection`.
pub fn send_with(addr: SocketAddr, method: &str, path: &str, body: &[u8], connection: &str) -> TcpStream {
    send_head_and(addr, method, path, &format!("Connection: {connection}\r\n"), body.len(), body)
}

/// Opens a connection and writes only a request head announcing a body of `length` bytes
/// (`Connection: close`); the body is never sent.
pub fn send_head(addr: SocketAddr, method: &str, path: &str, length: usize) -> TcpStream {
    send_head_and(addr, method, path, "Connection: close\r\n", length, b"")
}

/// Reads the server's whole answer on `stream` (until it closes) and parses it.
pub fn answer(mut stream: TcpStream) -> Response {
    let mut raw = Vec::new();
    if let Err(error) = stream.read_to_end(&mut raw) {
        // A reset after a complete response (the server closed with unread body bytes) is fine.
        assert!(!raw.is_empty(), "no answer: {error}");
    }
    parse(&raw)
}

/// One request, the whole response.
pub fn request(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> Response {
    answer(send(addr, method, path, body))
}

/// One request with `headers` (whole lines, each ending in `\r\n`), the whole response.
pub fn request_with(addr: SocketAddr, method: &str, path: &str, headers: &str, body: &[u8]) -> Response {
    answer(send_head_and(addr, method, path, &format!("{headers}Connection: close\r\n"), body.len(), body))
}

/// Parses a raw HTTP/1.1 response (Content-Length, chunked, or to the end).
pub fn parse(raw: &[u8]) -> Response {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head: {:?}", String::from_utf8_lossy(raw)));
    let head = std::str::from_utf8(&raw[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_vec() };
    Response { status, headers, body }
}

/// Decodes a chunked body (complete).
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").expect("chunk size line");
        let size_text = std::str::from_utf8(&rest[..line_end]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        rest = &rest[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// The concatenated text of a stream's chunks (`choices[0].text` or `.delta.content`).
pub fn stream_text(events: &[String]) -> String {
    let mut text = String::new();
    for data in events.iter().filter(|d| d.as_str() != "[DONE]") {
        let chunk: Value = serde_json::from_str(data).unwrap();
        let choice = &chunk["choices"][0];
        if let Some(piece) = choice["text"].as_str().or_else(|| choice["delta"]["content"].as_str()) {
            text.push_str(piece);
        }
    }
    text
}

/// Reads from `stream` until the bytes read contain `needle` (or panics at end of stream).
pub fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains(needle) {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "end of stream before {needle:?}: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// Polls `condition` every 20 ms for at most `timeout`.
pub fn eventually(timeout: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < timeout, "not within {timeout:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `redline serve --port 0 --device sim --model MODEL ARGS` exits 2 before listening, its
/// message containing `needle`.
pub fn assert_usage_error(model: &str, args: &[&str], needle: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["serve", "--port", "0", "--device", "sim", "--model", model])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

/// `redline serve --help`.
pub fn help() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_redline")).args(["serve", "--help"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The Python interpreter with the pinned packages (`REDLINE_GGUF_PY`), or `None` outside CI
/// when it is not set (saying so); under `CI=true` its absence fails the test.
pub fn python() -> Option<String> {
    match std::env::var("REDLINE_GGUF_PY") {
        Ok(python) => Some(python),
        Err(_) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "REDLINE_GGUF_PY is not set under CI=true");
            println!("REDLINE_GGUF_PY not set: the Python client checks did nothing");
            None
        }
    }
}
