//! A small W3C WebDriver client for the page tests: chromedriver on a loopback port it picks
//! itself, one headless Chromium session with a fresh profile, commands as JSON over HTTP/1.1.
//! Dropping the [`Browser`] deletes the session and ends chromedriver.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::serve_common::{self, Response};

/// The key WebDriver names a found element by.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// WebDriver's code for the Enter key.
pub const ENTER: &str = "\u{E007}";
/// WebDriver's code for Shift: held until [`RELEASE`] or the end of the keys sent.
pub const SHIFT: &str = "\u{E008}";
/// WebDriver's code that releases held modifier keys.
pub const RELEASE: &str = "\u{E000}";

/// Debian's Chromium and chromedriver, or `None` (after saying so) outside CI when either is
/// missing.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
    let (chromium, driver) = (PathBuf::from("/usr/bin/chromium"), PathBuf::from("/usr/bin/chromedriver"));
    let missing: Vec<String> =
        [&chromium, &driver].iter().filter(|p| !p.is_file()).map(|p| p.display().to_string()).collect();
    if missing.is_empty() {
        return Some((chromium, driver));
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} missing under CI=true (apt-get install chromium chromium-driver)",
        missing.join(" and ")
    );
    println!("{} missing: did nothing", missing.join(" and "));
    None
}

/// A running chromedriver with one session.
pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    profile: PathBuf,
}

impl Browser {
    /// Starts `driver`, waits until it is ready and opens a headless `chromium` session.
    pub fn start(chromium: &Path, driver: &Path) -> Browser {
        let mut child = Command::new(driver)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", driver.display()));
        let port = match started_port(&mut child) {
            Ok(port) => port,
            Err(output) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{} did not start: {output}", driver.display());
            }
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let profile = std::env::temp_dir().join(format!("redline-chromium-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).unwrap();
        let mut browser = Browser { driver: child, addr, session: String::new(), profile };
        browser.wait_ready();
        browser.session = browser.new_session(chromium);
        browser
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            let status = exchange(self.addr, "GET", "/status", b"");
            if status.status == 200 && status.json()["value"]["ready"] == true {
                return;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "chromedriver not ready: {}", status.text());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn new_session(&self, chromium: &Path) -> String {
        let profile = format!("--user-data-dir={}", self.profile.display());
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &profile,
            "--window-size=1280,900",
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let value =
            self.command("POST", "/session", Some(&capabilities)).unwrap_or_else(|e| panic!("new session: {e}"));
        value["sessionId"].as_str().unwrap_or_else(|| panic!("no sessionId: {value}")).to_owned()
    }

    /// One WebDriver command: its `value`, or the error's `error: message`.
    fn command(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let response = exchange(self.addr, method, path, body.as_bytes());
        let mut document = response.json();
        let value = document["value"].take();
        if response.status == 200 {
            return Ok(value);
        }
        Err(format!("{method} {path}: {} {}: {}", response.status, value["error"], value["message"]))
    }

    /// A command of this session (`path` after `/session/{id}`), which must succeed.
    fn session(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        self.command(method, &format!("/session/{}{path}", self.session), body).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn navigate(&self, url: &str) {
        self.session("POST", "/url", Some(&json!({"url": url})));
    }

    pub fn title(&self) -> String {
        self.session("GET", "/title", None).as_str().unwrap_or_default().to_owned()
    }

    /// The first element matching `css`, if there is one.
    pub fn find(&self, css: &str) -> Option<String> {
        let path = format!("/session/{}/element", self.session);
        match self.command("POST", &path, Some(&json!({"using": "css selector", "value": css}))) {
            Ok(value) => Some(value[ELEMENT_KEY].as_str().unwrap_or_else(|| panic!("{value}")).to_owned()),
            Err(e) if e.contains("no such element") => None,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`Browser::find`], which must find it.
    pub fn element(&self, css: &str) -> String {
        self.find(css).unwrap_or_else(|| panic!("no element {css}"))
    }

    /// Types `text` into `element` (WebDriver key codes such as [`ENTER`] included).
    pub fn type_keys(&self, element: &str, text: &str) {
        self.session("POST", &format!("/element/{element}/value"), Some(&json!({"text": text})));
    }

    /// Empties an editable element.
    pub fn clear(&self, element: &str) {
        self.session("POST", &format!("/element/{element}/clear"), Some(&json!({})));
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page and returns its value.
    pub fn execute(&self, script: &str, args: &[Value]) -> Value {
        self.session("POST", "/execute/sync", Some(&json!({"script": script, "args": args})))
    }

    /// The viewport as PNG bytes.
    pub fn screenshot(&self) -> Vec<u8> {
        let encoded = self.session("GET", "/screenshot", None);
        base64_decode(encoded.as_str().unwrap_or_else(|| panic!("screenshot: {encoded}")))
    }

    /// Polls `probe` every 100 ms until it returns `Some`, for at most `timeout`.
    pub fn wait_for<T>(&self, timeout: Duration, what: &str, mut probe: impl FnMut(&Browser) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(found) = probe(self) {
                return found;
            }
            assert!(start.elapsed() < timeout, "not within {timeout:?}: {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.command("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// One request and its response, read to its `Content-Length`: chromedriver does not always
/// close a connection after its answer, whatever the request's `Connection` header says.
fn exchange(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("chromedriver at {addr}: {e}"));
    stream.set_read_timeout(Some(serve_common::IO_TIMEOUT)).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut reader = BufReader::new(stream);
    let mut raw = Vec::new();
    let mut length = 0;
    loop {
        let before = raw.len();
        let n = reader.read_until(b'\n', &mut raw).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert!(n > 0, "{method} {path}: the connection closed in the head: {}", String::from_utf8_lossy(&raw));
        let line = String::from_utf8_lossy(&raw[before..]).to_ascii_lowercase();
        if let Some(value) = line.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or_else(|_| panic!("{method} {path}: {line}"));
        }
        if line == "\r\n" {
            break;
        }
    }
    let start = raw.len();
    raw.resize(start + length, 0);
    reader.read_exact(&mut raw[start..]).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    serve_common::parse(&raw)
}

/// The port from chromedriver's `... started successfully on port N.` line; its output so far
/// if it ends first. Later output is drained so that the pipe never fills.
fn started_port(child: &mut Child) -> Result<u16, String> {
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err(seen);
        }
        seen.push_str(&line);
        if let Some(rest) = line.split("started successfully on port ").nth(1) {
            let port = rest.trim().trim_end_matches('.').parse().map_err(|_| seen.clone())?;
            std::thread::spawn(move || {
                let mut sink = Vec::new();
                let _ = stdout.read_to_end(&mut sink);
            });
            return Ok(port);
        }
    }
}

/// Standard base64 (RFC 4648, padded), as WebDriver encodes screenshots.
pub fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut bits, mut held) = (0u32, 0u32);
    for byte in text.bytes().filter(|b| !b.is_ascii_whitespace()) {
        if byte == b'=' {
            break;
        }
        let sextet = ALPHABET.iter().position(|&c| c == byte).unwrap_or_else(|| panic!("not base64: {byte:#x}"));
        // Only the bits not yet written out are kept (at most 12).
        bits = ((bits << 6) | u32::try_from(sextet).unwrap()) & 0xfff;
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push(u8::try_from((bits >> held) & 0xff).unwrap());
        }
    }
    out
}

#[test]
fn base64_decodes_rfc_4648_vectors() {
    for (encoded, decoded) in [
        ("", ""),
        ("Zg==", "f"),
        ("Zm8=", "fo"),
        ("Zm9v", "foo"),
        ("Zm9vYg==", "foob"),
        ("Zm9vYmE=", "fooba"),
        ("Zm9vYmFy", "foobar"),
    ] {
        assert_eq!(base64_decode(encoded), decoded.as_bytes(), "{encoded}");
    }
}
