//! A served GGUF file that is truncated or rewritten while `redline serve` runs: the process
//! stays alive. The loaded model keeps answering as before (its weights are on the device, read
//! from the bytes hashed at startup; the server never maps the file), `/redline/status` reports
//! the file changed, and a request that would load a changed file again (a model switch) gets a
//! 503 naming the file and what changed, while the other models keep serving.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{Server, tiny_model_seeded};

/// A model file of this test's own (no other test's server maps or reads it).
fn own_model(name: &str, seed: u64) -> std::path::PathBuf {
    tiny_model_seeded(name, 256, seed)
}

fn answer(server: &Server, model: &str) -> (u16, Value) {
    let response = server
        .post("/v1/completions", &json!({"model": model, "prompt": "the cat", "max_tokens": 12, "temperature": 0}));
    (response.status, response.json())
}

fn truncate(path: &std::path::Path, len: u64) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len).unwrap();
}

#[test]
fn truncating_the_loaded_model_file_leaves_the_server_answering_with_the_model_it_loaded() {
    let path = own_model("file-truncated", 11);
    let server = Server::start(&["--model", path.to_str().unwrap(), "--device", "sim"]);
    let (status, before) = answer(&server, "file-truncated");
    assert_eq!(status, 200, "{before}");
    let models = server.get("/redline/status").json()["models"].clone();
    assert_eq!(models[0]["file"], json!({"changed": false}), "{models}");

    truncate(&path, 100);
    for _ in 0..3 {
        let (status, after) = answer(&server, "file-truncated");
        assert_eq!(status, 200, "{after}");
        assert_eq!(after["choices"][0]["text"], before["choices"][0]["text"], "{after}");
    }
    let status = server.get("/redline/status").json();
    let file = &status["models"][0]["file"];
    assert_eq!(file["changed"], true, "{status}");
    let detail = file["detail"].as_str().unwrap();
    assert!(detail.contains(path.to_str().unwrap()) && detail.contains("is now 100"), "{detail}");
    assert!(status["controller"]["state"].is_string(), "{status}");

    // Rewritten in place to garbage of another size: still alive, still answering.
    std::fs::write(&path, vec![0xAB; 3000]).unwrap();
    assert_eq!(answer(&server, "file-truncated").0, 200);
    assert_eq!(server.get("/health").status, 200);
    let mut child = server;
    assert!(child.child.try_wait().unwrap().is_none(), "the server exited: {}", child.stderr());
    child.terminate();
    assert!(child.wait(std::time::Duration::from_secs(30)).success(), "{}", child.stderr());
}

#[test]
fn a_changed_file_is_refused_when_a_switch_would_load_it_and_the_others_keep_serving() {
    let a = own_model("file-switch-a", 21);
    let b = own_model("file-switch-b", 22);
    let server = Server::start(&["--model", a.to_str().unwrap(), "--model", b.to_str().unwrap(), "--device", "sim"]);
    let (status, a_before) = answer(&server, "file-switch-a");
    assert_eq!(status, 200, "{a_before}");
    let original = std::fs::read(&b).unwrap();

    // B is not loaded; its file loses its tail.
    truncate(&b, u64::try_from(original.len() / 2).unwrap());
    let (status, refused) = answer(&server, "file-switch-b");
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], "model_file_changed", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("file-switch-b") && message.contains(b.to_str().unwrap()), "{message}");
    assert!(message.contains(&format!("it was {} bytes", original.len())), "{message}");

    // A is still loaded and answers as before; no switch was begun.
    let (status, a_after) = answer(&server, "file-switch-a");
    assert_eq!((status, &a_after["choices"]), (200, &a_before["choices"]));
    let status = server.get("/redline/status").json();
    assert_eq!(status["switches"], 0, "{status}");
    assert_eq!(status["models"][1]["file"]["changed"], true, "{status}");
    assert_eq!(status["models"][0]["file"]["changed"], false, "{status}");

    // Restoring the bytes does not make B loadable: its file was written to since startup.
    std::fs::write(&b, &original).unwrap();
    let (status, refused) = answer(&server, "file-switch-b");
    assert_eq!(status, 503, "{refused}");
    assert_eq!(answer(&server, "file-switch-a").0, 200);
    assert_eq!(server.get("/health").status, 200);
}

#[test]
fn an_untouched_second_model_still_switches_in_and_out() {
    let a = own_model("file-untouched-a", 31);
    let b = own_model("file-untouched-b", 32);
    let server = Server::start(&["--model", a.to_str().unwrap(), "--model", b.to_str().unwrap(), "--device", "sim"]);
    let (_, a_first) = answer(&server, "file-untouched-a");
    let (status, b_first) = answer(&server, "file-untouched-b");
    assert_eq!(status, 200, "{b_first}");
    assert_ne!(a_first["choices"][0]["text"], b_first["choices"][0]["text"], "two seeds gave one model");
    // Back to A: read again from its descriptor, the same bytes, the same answer.
    let (status, a_again) = answer(&server, "file-untouched-a");
    assert_eq!((status, &a_again["choices"]), (200, &a_first["choices"]));
    assert_eq!(server.get("/redline/status").json()["switches"], 2);
}
