//! `redline serve` with a `gemma3` model beside a `llama` one, on the soft device:
//! - `/v1/completions` to a gemma3 model answers; `/v1/chat/completions` to it (a base model, no
//!   chat template) is the 400 `no_chat_template`, naming the model; the official OpenAI Python
//!   client gets the same completion and the same error;
//! - switching A → B → A → B between a llama and a gemma3 keeps every answer the one a fresh
//!   `redline generate` process gives for the same request: the same text and, token by token,
//!   the text of the fresh process's token ids (the completion's logprobs name each generated
//!   token), with each model's log-probabilities the same bits on every visit. The tiny built-in
//!   models always run; SmolLM2-135M and Gemma 3 270M (`REDLINE_SMOLLM2_GGUF`,
//!   `REDLINE_GEMMA3_GGUF`; under `CI=true` their absence is a failure) run on the retained
//!   route, their admitted default when their fixtures' sealing runs promoted it.

mod common;
mod serve_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use serve_common::{Server, tiny_model_seeded};

/// The tiny gemma3 at `<target tmp>/serve/<name>.gguf`.
fn tiny_gemma3(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.gguf"));
    let scratch = dir.join(format!("{name}.{}.tmp", std::process::id()));
    gguf::write_tiny_gemma3(&scratch, &gguf::TinyGemma3Config::default()).unwrap();
    std::fs::rename(&scratch, &path).unwrap();
    path
}

/// A greedy answer: its text, each generated token's text, each one's log-probability, and
/// why it ended.
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    text: String,
    tokens: Vec<String>,
    logprobs: Vec<f64>,
    finish_reason: String,
}

/// A fresh `redline generate` process of `model` for `prompt` on the route `route` adds: its
/// text, finish reason and token ids; the ids named as the server names a generated token (its
/// bytes, decoded lossily on their own).
fn fresh(model: &Path, prompt: &str, max_tokens: u32, route: &[&str]) -> (Answer, Vec<u32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["generate", "--json", "--model", model.to_str().unwrap(), "--device", "sim", "--prompt", prompt])
        .args(["--max-tokens", &max_tokens.to_string(), "--temperature", "0"])
        .args(route)
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<u32> =
        report["tokens"].as_array().unwrap().iter().map(|t| u32::try_from(t.as_u64().unwrap()).unwrap()).collect();
    let file = gguf::Gguf::open(model).unwrap();
    let tokenizer = engine::model::tokenizer_from_gguf(&file).unwrap();
    let tokens =
        ids.iter().map(|&id| String::from_utf8_lossy(tokenizer.token_bytes(id, true).unwrap()).into_owned()).collect();
    let answer = Answer {
        text: report["text"].as_str().unwrap().to_owned(),
        tokens,
        logprobs: Vec::new(),
        finish_reason: report["finish_reason"].as_str().unwrap().to_owned(),
    };
    (answer, ids)
}

/// A greedy completion of `prompt` from the served model `model`, with each token's
/// log-probability.
fn complete(server: &Server, model: &str, prompt: &str, max_tokens: u32) -> Answer {
    let request = json!({"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "logprobs": 1});
    let response = server.post("/v1/completions", &request);
    assert_eq!(response.status, 200, "{model}: {}", response.text());
    let body = response.json();
    assert_eq!(body["model"], model, "{body}");
    let logprobs = &body["choices"][0]["logprobs"];
    let tokens: Vec<String> =
        logprobs["tokens"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect();
    assert_eq!(body["usage"]["completion_tokens"], tokens.len(), "{body}");
    Answer {
        text: body["choices"][0]["text"].as_str().unwrap().to_owned(),
        tokens,
        logprobs: logprobs["token_logprobs"].as_array().unwrap().iter().map(|l| l.as_f64().unwrap()).collect(),
        finish_reason: body["choices"][0]["finish_reason"].as_str().unwrap().to_owned(),
    }
}

/// Asserts a chat request to `model` is the 400 `no_chat_template` naming it.
fn assert_no_chat_template(server: &Server, model: &str) {
    let chat = json!({"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4});
    let response = server.post("/v1/chat/completions", &chat);
    assert_eq!(response.status, 400, "{}", response.text());
    let error = &response.json()["error"];
    assert_eq!((&error["type"], &error["code"]), (&json!("invalid_request_error"), &json!("no_chat_template")));
    assert_eq!(
        error["message"],
        format!("the model '{model}' has no recognised chat template: use /v1/completions"),
        "{error}"
    );
}

/// Asserts the status after a request for `loaded`: that model is loaded after `switches`
/// switches, on the retained route with no fallback; the last switch's record names `from`.
fn assert_loaded(server: &Server, loaded: &str, switches: u64, from: Option<&str>) -> Value {
    let status = server.get("/redline/status").json();
    assert_eq!((&status["model"]["id"], &status["switches"]), (&json!(loaded), &json!(switches)), "{status}");
    let controller = &status["controller"];
    assert!(controller["fallback_reason"].is_null(), "{status}");
    assert_eq!(controller["state"], "ready", "{status}");
    if let Some(from) = from {
        let detail = controller["reconfiguration"]["detail"].as_str().unwrap_or_else(|| panic!("{status}"));
        assert!(detail.starts_with(&format!("model switch {from} -> {loaded}; old plan: ")), "{detail}");
    }
    status
}

/// Serves `a` (first) and `b` with `route`, and asks A, B, A, B for greedy completions of
/// `prompt`: each answer is the fresh process's, and each model's log-probabilities are the
/// same on both visits.
fn switch_a_b_a_b(a: &Path, b: &Path, prompt: &str, max_tokens: u32, route: &[&str]) -> [Value; 2] {
    let (fresh_a, ids_a) = fresh(a, prompt, max_tokens, route);
    let (fresh_b, ids_b) = fresh(b, prompt, max_tokens, route);
    for (ids, model) in [(&ids_a, a), (&ids_b, b)] {
        assert_eq!(ids.len(), usize::try_from(max_tokens).unwrap(), "{}: no early stop", model.display());
        assert!(ids.windows(2).any(|w| w[0] != w[1]), "{}: one repeated token proves little: {ids:?}", model.display());
    }
    let server = Server::start(
        &[&["--model", a.to_str().unwrap(), "--model", b.to_str().unwrap(), "--device", "sim"], route].concat(),
    );
    let listed = server.get("/v1/models").json();
    let ids: Vec<String> =
        listed["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect();
    let [id_a, id_b] = [&ids[0], &ids[1]];
    let same = |answer: &Answer, fresh: &Answer, what: &str| {
        assert_eq!(
            (&answer.text, &answer.tokens, &answer.finish_reason),
            (&fresh.text, &fresh.tokens, &fresh.finish_reason),
            "{what}"
        );
    };

    let first_a = complete(&server, id_a, prompt, max_tokens);
    same(&first_a, &fresh_a, "A");
    let status_a = assert_loaded(&server, id_a, 0, None);
    let first_b = complete(&server, id_b, prompt, max_tokens);
    same(&first_b, &fresh_b, "A -> B");
    let status_b = assert_loaded(&server, id_b, 1, Some(id_a));
    let again_a = complete(&server, id_a, prompt, max_tokens);
    assert_eq!(again_a, first_a, "A -> B -> A");
    assert_loaded(&server, id_a, 2, Some(id_b));
    let again_b = complete(&server, id_b, prompt, max_tokens);
    assert_eq!(again_b, first_b, "A -> B -> A -> B");
    assert_loaded(&server, id_b, 3, Some(id_a));
    assert_eq!(server.metric("redline_model_switches_total"), 3.0);
    [status_a, status_b]
}

#[test]
fn a_tiny_llama_and_the_tiny_gemma3_switch_each_answering_as_a_fresh_process() {
    // Seed 3's tiny llama changes token within the retained positions (as serve_models.rs's
    // swap-a), and so does the tiny gemma3 on this prompt.
    let (a, b) = (tiny_model_seeded("switch-llama", 256, 3), tiny_gemma3("switch-gemma3"));
    let [status_a, status_b] = switch_a_b_a_b(&a, &b, "the cat", 24, &["--replay-backend", "auto"]);
    assert_eq!(status_a["model"]["id"], "switch-llama");
    assert_eq!(status_b["model"]["id"], "switch-gemma3");
}

#[test]
fn smollm2_and_gemma_switch_each_answering_as_a_fresh_process_on_the_retained_route() {
    let (Some(smollm2), Some(gemma)) = (common::reference_model(), common::gemma_model()) else { return };
    let prompt = "The capital of France is";
    // The admitted default when both fixtures' sealing runs promoted the retained route, the
    // route asked for otherwise; each model's admission follows its own fixture.
    let fixtures = ["smollm2-135m-gfx1100-sim", "gemma-3-270m-gfx1100-sim"];
    let route = common::arming(&fixtures);
    let [status_a, status_b] = switch_a_b_a_b(Path::new(&smollm2), Path::new(&gemma), prompt, 12, route);
    for (status, fixture) in [status_a, status_b].iter().zip(fixtures) {
        common::assert_admission_follows(&status["admission"], fixture);
    }
}

#[test]
fn the_tiny_gemma3_completes_and_its_chat_is_a_400_no_chat_template() {
    let model = tiny_gemma3("chatless-gemma3");
    let server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim"]);
    let answer = complete(&server, "chatless-gemma3", "the cat", 8);
    let (fresh, _) = fresh(&model, "the cat", 8, &[]);
    assert_eq!((&answer.text, &answer.tokens), (&fresh.text, &fresh.tokens));
    assert_no_chat_template(&server, "chatless-gemma3");
    assert!(
        server.stderr().contains("warning: the model 'chatless-gemma3' has no chat template (tokenizer.chat_template)"),
        "{}",
        server.stderr()
    );
}

#[test]
fn the_openai_python_client_gets_a_gemma_completion_and_the_chat_error() {
    let (Some(python), Some(gemma)) = (serve_common::python(), common::gemma_model()) else { return };
    let server = Server::start(&["--model", &gemma, "--device", "sim"]);
    let id = server.get("/v1/models").json()["data"][0]["id"].as_str().unwrap().to_owned();
    let prompt = "The capital of France is";
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/openai_client.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(format!("http://{}/v1", server.addr))
        .args([&id, "base", prompt])
        .output();
    let out = out.unwrap();
    assert!(out.status.success(), "{python} {script} base failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["models"], json!([id]));
    // llama.cpp's greedy continuation on the same file starts " the capital of the country of
    // France."; eight tokens reach the full stop.
    assert_eq!(report["completion"]["text"], " the capital of the country of France.", "{report}");
    let raw = complete(&server, &id, prompt, 8);
    assert_eq!(report["completion"]["text"], raw.text.as_str());
    assert_eq!(report["completion"]["tokens"], json!(raw.tokens));
    assert_eq!(report["completion"]["finish_reason"], "length");
    assert_eq!(report["chat"], json!({"raised": "BadRequestError", "status": 400, "code": "no_chat_template"}));
    assert_no_chat_template(&server, &id);
}
