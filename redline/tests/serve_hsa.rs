//! `redline serve --device hsa` on the HSA backend over the soft HSA runtime: the official OpenAI
//! Python client gets the reference model's answer ("Paris") on the retained route, and a fault
//! injected into the runtime's queue during a retained token fails that request, falls back to
//! ordinary launches for the next ones, and says why in `/redline/status`; log-probabilities,
//! penalties and logit bias give the soft device's answers to the number, ordinary and retained,
//! and the status history and running generation are there too.

mod common;

mod serve_common;

use std::ffi::OsStr;
use std::process::Command;

use common::reference_model;
use serde_json::json;
use serve_common::{Server, tiny_model};

/// A server on the soft HSA runtime (gfx1100).
fn server(args: &[&str]) -> Server {
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    let env = [("REDLINE_HSA_LIBRARY", library.as_os_str()), ("REDLINE_SOFT_HSA_ISA", OsStr::new("gfx1100"))];
    Server::start_with_env(&[&["--device", "hsa"], args].concat(), &env)
}

const ASK: &str = r#"
import sys, openai
client = openai.OpenAI(base_url=sys.argv[1], api_key="unused", max_retries=0, timeout=300)
answer = client.chat.completions.create(
    model=sys.argv[2], messages=[{"role": "user", "content": "What is the capital of France?"}],
    max_tokens=12, temperature=0)
print(answer.choices[0].message.content)
"#;

#[test]
fn the_openai_client_gets_paris_from_the_reference_model_on_the_hsa_backend() {
    let (Some(path), Some(python)) = (reference_model(), serve_common::python()) else { return };
    let server = server(&["--model", &path, "--replay-backend", "auto"]);
    let out = Command::new(&python)
        .args(["-c", ASK, &format!("http://{}/v1", server.addr), "SmolLM2-135M-Instruct.Q4_1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), server.stderr());
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("Paris"), "{answer}");
    let status = server.get("/redline/status").json();
    assert_eq!(status["device"]["kind"], "hsa", "{status}");
    assert_eq!(status["controller"]["state"], "ready", "{status}");
    assert!(status["observations"]["retained"].as_u64().unwrap() >= 4, "{status}");
    assert_eq!(status["observations"]["ordinary_launches_in_retained_forwards"], 0, "{status}");
}

#[test]
fn a_queue_fault_in_a_retained_token_fails_that_request_and_falls_back() {
    let model = tiny_model("hsa-fault", 256);
    let server =
        server(&["--model", model.to_str().unwrap(), "--replay-backend", "auto", "--inject-fault", "queue-fault"]);
    let request = json!({"model": "hsa-fault", "prompt": "the cat", "max_tokens": 24, "temperature": 0});
    let failed = server.post("/v1/completions", &request);
    assert!(failed.status >= 500, "{} {}", failed.status, failed.text());
    let status = server.get("/redline/status").json();
    assert_eq!(status["controller"]["state"], "fallback", "{status}");
    let reason = status["controller"]["fallback_reason"].as_str().unwrap_or_default();
    let sentence = "Replay failed; this forward errored; later forwards fall back.";
    assert!(reason.starts_with(&format!("{sentence} Detail: position ")), "{reason}");
    assert_eq!(status["controller"]["fallback"]["sentence"], sentence, "{status}");
    assert_eq!(status["controller"]["fallback"]["kind"], "replay_failed", "{status}");
    let retained = status["observations"]["retained"].as_u64().unwrap();
    assert_eq!(retained, 0, "the faulting token is not counted as retained: {status}");
    // Later forwards run ordinary launches: the request succeeds and nothing is retained.
    let again = server.post("/v1/completions", &request);
    assert_eq!(again.status, 200, "{}", again.text());
    let status = server.get("/redline/status").json();
    assert_eq!(status["controller"]["state"], "fallback", "{status}");
    assert_eq!(status["observations"]["retained"].as_u64().unwrap(), retained, "{status}");
    assert!(status["observations"]["ordinary"].as_u64().unwrap() > 0, "{status}");
}

#[test]
fn logprobs_penalties_and_the_history_are_the_soft_devices_on_the_hsa_backend() {
    let model = tiny_model("hsa-logprobs", 256);
    let model = model.to_str().unwrap();
    let hsa = server(&["--model", model, "--replay-backend", "auto"]);
    let sim = Server::start(&["--model", model, "--device", "sim", "--replay-backend", "auto"]);
    let requests = [
        ("/v1/completions", json!({"prompt": "the cat", "max_tokens": 12, "temperature": 0, "logprobs": 5})),
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 12, "temperature": 0,
                   "logprobs": true, "top_logprobs": 4, "frequency_penalty": 1.5, "logit_bias": {"7": 3}}),
        ),
    ];
    // Twice: the second time on the retained route on both.
    for round in 0..2 {
        for (path, request) in &requests {
            let (on_hsa, on_sim) = (hsa.post(path, request), sim.post(path, request));
            assert_eq!(on_hsa.status, 200, "{}", on_hsa.text());
            let (on_hsa, on_sim) = (on_hsa.json(), on_sim.json());
            assert!(on_hsa["choices"][0]["logprobs"].is_object(), "{on_hsa}");
            // The same logits on both backends: the same tokens and the same log-probabilities.
            assert_eq!(on_hsa["choices"], on_sim["choices"], "round {round} {path}");
            assert_eq!(on_hsa["usage"], on_sim["usage"], "round {round} {path}");
        }
    }
    let status = hsa.get("/redline/status").json();
    assert_eq!(status["device"]["kind"], "hsa", "{status}");
    let history = status["history"].as_array().unwrap();
    assert_eq!(history.len(), 4, "{status}");
    assert_eq!(history[3]["route"], "retained", "{status}");
    assert_eq!(status["generating"], serde_json::Value::Null, "{status}");
}
