//! The committed f64 reference fixture (`tests/data/smollm2_reference.json`, written by
//! `tests/reference/llama_f64.py`) is complete and consistent, so engine tests can rely on it:
//! every greedy token is the argmax its step recorded, top-k lists are sorted, and the fixture
//! names the model file the catalogue pins.

use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/smollm2_reference.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

#[test]
fn fixture_names_the_pinned_model_and_its_command() {
    let f = fixture();
    let entry = model_files::lookup("smollm2-135m").unwrap();
    assert_eq!(f["gguf_sha256"], entry.gguf_sha256);
    assert!(f["command"].as_str().unwrap().starts_with("python3 redline/tests/reference/llama_f64.py fixture"));
    assert!(f["run_seconds"].as_f64().unwrap() > 0.0);
}

#[test]
fn greedy_tokens_are_the_argmax_of_each_recorded_step() {
    let f = fixture();
    let k = usize::try_from(f["top_k"].as_u64().unwrap()).unwrap();
    let n = usize::try_from(f["greedy_tokens"].as_u64().unwrap()).unwrap();
    let prompts = f["prompts"].as_array().unwrap();
    assert!(prompts.len() >= 3);
    for p in prompts {
        let greedy = ids(&p["greedy_ids"]);
        let steps = p["steps"].as_array().unwrap();
        assert_eq!((greedy.len(), steps.len()), (n, n), "{}", p["name"]);
        for (i, (token, step)) in greedy.iter().zip(steps).enumerate() {
            let top = ids(&step["top_ids"]);
            let logits: Vec<f64> = step["top_logits"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            assert_eq!((top.len(), logits.len()), (k, k));
            assert_eq!(top[0], *token, "{} step {i}", p["name"]);
            assert!(logits.windows(2).all(|w| w[0] >= w[1]), "{} step {i}: {logits:?}", p["name"]);
        }
    }
}

#[test]
fn the_france_prompt_continues_with_paris() {
    let f = fixture();
    let france = f["prompts"].as_array().unwrap().iter().find(|p| p["name"] == "france").unwrap();
    assert_eq!(france["text"], "The capital of France is");
    // " Paris" is token 7042 in the SmolLM2 vocabulary.
    assert_eq!(ids(&france["greedy_ids"])[0], 7042);
    assert!(france["greedy_text"].as_str().unwrap().starts_with(" Paris"));
}
