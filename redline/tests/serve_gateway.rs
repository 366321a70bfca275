//! Three `redline serve` daemons behind an existing OpenAI gateway, `smg` (Shepherd Model
//! Gateway, from its pinned PyPI wheel in `tests/reference/requirements.txt`, found beside
//! `REDLINE_GGUF_PY`'s interpreter; under `CI=true` its absence is a failure), the recipe the
//! README's "Many daemons behind a gateway" section gives: 60 greedy requests through the
//! gateway all answer what a daemon answers directly, every daemon serves some, and every
//! response id is distinct; one daemon is killed after the first 30, the gateway's worker list
//! shows it unhealthy or gone, and every request after that still succeeds.

mod serve_common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serve_common::{Server, tiny_model};

/// The `smg` executable, or `None` (the test does nothing) outside CI.
fn smg() -> Option<PathBuf> {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let Ok(python) = std::env::var("REDLINE_GGUF_PY") else {
        assert!(!ci, "REDLINE_GGUF_PY is not set under CI=true (.ci/run sets it)");
        println!("REDLINE_GGUF_PY not set: did nothing");
        return None;
    };
    let smg = PathBuf::from(python).with_file_name("smg");
    if !smg.is_file() {
        assert!(
            !ci,
            "{} is missing under CI=true: pip install -r redline/tests/reference/requirements.txt",
            smg.display()
        );
        println!("{} missing: did nothing", smg.display());
        return None;
    }
    Some(smg)
}

/// The gateway process, killed when dropped.
struct Gateway {
    child: Child,
    url: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gateway {
    fn get(&self, path: &str) -> serve_common::Response {
        let addr = self.url.trim_start_matches("http://").parse().unwrap();
        serve_common::request(addr, "GET", path, b"")
    }

    fn post(&self, path: &str, body: &Value) -> serve_common::Response {
        let addr = self.url.trim_start_matches("http://").parse().unwrap();
        serve_common::request(addr, "POST", path, body.to_string().as_bytes())
    }

    /// The gateway's workers: (url, healthy).
    fn workers(&self) -> Vec<(String, bool)> {
        let listed = self.get("/workers");
        assert_eq!(listed.status, 200, "{}", listed.text());
        listed.json()["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["url"].as_str().unwrap().to_owned(), w["is_healthy"].as_bool().unwrap_or(false)))
            .collect()
    }
}

/// A free loopback port (bound, then released for the gateway).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "{what} within {timeout:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn three_daemons_behind_smg_serve_every_request_and_survive_one_killed() {
    let Some(smg) = smg() else { return };
    let model = tiny_model("gateway", 256);
    let id = "gateway";
    let mut daemons: Vec<Server> =
        (0..3).map(|_| Server::start(&["--model", model.to_str().unwrap(), "--device", "sim"])).collect();
    let urls: Vec<String> = daemons.iter().map(|d| format!("http://{}", d.addr)).collect();
    let port = free_port();
    let child = Command::new(&smg)
        .args(["launch", "--host", "127.0.0.1", "--port", &port.to_string(), "--policy", "round_robin"])
        .args(["--health-check-endpoint", "/health", "--health-check-interval-secs", "1"])
        .args(["--health-failure-threshold", "1", "--log-level", "warn", "--worker-urls"])
        .args(&urls)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let gateway = Gateway { child, url: format!("http://127.0.0.1:{port}") };
    wait_for("the gateway lists three healthy workers", Duration::from_secs(120), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() && gateway.get("/health").status == 200 && {
            let workers = gateway.workers();
            workers.len() == 3 && workers.iter().all(|(_, healthy)| *healthy)
        }
    });

    // What each request answers from a daemon directly (greedy: the same on every daemon).
    let request = |i: usize| json!({"model": id, "prompt": format!("request {i}"), "max_tokens": 3, "temperature": 0});
    let direct: Vec<String> = (0..60)
        .map(|i| {
            daemons[0].post("/v1/completions", &request(i)).json()["choices"][0]["text"].as_str().unwrap().to_owned()
        })
        .collect();
    let served_before: Vec<f64> = daemons.iter().map(|d| d.metric("redline_generations_total")).collect();
    let mut ids = BTreeSet::new();
    let mut through = |i: usize, gateway: &Gateway| {
        let answer = gateway.post("/v1/completions", &request(i));
        assert_eq!(answer.status, 200, "request {i}: {}", answer.text());
        let answer = answer.json();
        assert_eq!(answer["choices"][0]["text"].as_str(), Some(direct[i].as_str()), "request {i}: {answer}");
        assert!(ids.insert(answer["id"].as_str().unwrap().to_owned()), "request {i}: id {} twice", answer["id"]);
    };
    for i in 0..30 {
        through(i, &gateway);
    }
    for (d, before) in daemons.iter().zip(&served_before) {
        assert!(d.metric("redline_generations_total") > *before, "{} served none of the first 30", d.addr);
    }
    // One daemon dies; the gateway's health checks notice.
    let dead = daemons.remove(1);
    let dead_url = format!("http://{}", dead.addr);
    drop(dead);
    wait_for("the gateway marks the killed daemon unhealthy or drops it", Duration::from_secs(60), || {
        gateway.workers().iter().all(|(url, healthy)| url != &dead_url || !healthy)
    });
    let served_mid: Vec<f64> = daemons.iter().map(|d| d.metric("redline_generations_total")).collect();
    for i in 30..60 {
        through(i, &gateway);
    }
    for (d, before) in daemons.iter().zip(&served_mid) {
        assert!(d.metric("redline_generations_total") > *before, "{} served none after the kill", d.addr);
    }
    assert_eq!(ids.len(), 60);
}
