//! SmolLM2-135M-Instruct (the reference fixture, `REDLINE_SMOLLM2_GGUF`) on the soft device,
//! ordinary route, against the independent f64 reference
//! (`crates/daemon/tests/data/smollm2_reference.json`, written by
//! `crates/daemon/tests/reference/llama_f64.py`): the greedy tokens are the reference's, and
//! the top-5 logits of every step agree within [`TOLERANCE`].

use engine::funnel::Funnel;
use engine::model::Llama;
use engine::sim::SimDevice;
use engine::workload::Workload;
use gguf::Gguf;
use pm4_encoding::Target;
use serde_json::Value;

const GGUF_ENV: &str = "REDLINE_SMOLLM2_GGUF";
/// Absolute logit tolerance against the f64 reference: the engine computes in f32 with the
/// kernels' summation orders and its own exp; logits here are O(10).
const TOLERANCE: f64 = 0.05;
/// Greedy steps compared per prompt.
const STEPS: usize = 3;

fn fixture_path() -> Option<String> {
    if let Ok(path) = std::env::var(GGUF_ENV) {
        return Some(path);
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{GGUF_ENV} is not set: CI must run the fixture test");
    println!("{GGUF_ENV} not set: the SmolLM2 fixture test did nothing");
    None
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| u32::try_from(x.as_u64().unwrap()).unwrap()).collect()
}

#[test]
fn smollm2_greedy_tokens_and_logits_match_the_f64_reference() {
    let Some(path) = fixture_path() else { return };
    let file = Gguf::open(&path).unwrap();
    let reference: Value = serde_json::from_slice(
        &std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../daemon/tests/data/smollm2_reference.json")).unwrap(),
    )
    .unwrap();
    let mut worst = 0.0f64;
    for prompt in reference["prompts"].as_array().unwrap().iter().take(2) {
        let mut device = SimDevice::new(Target::Gfx1100);
        let mut model = Llama::load(&mut device, &file, 64).unwrap();
        let mut funnel = Funnel::new(4096);
        let prompt_ids = ids(&prompt["prompt_ids"]);
        let greedy = ids(&prompt["greedy_ids"]);
        let mut position = 0;
        let mut feed = |model: &mut Llama, device: &mut SimDevice, token: u32| {
            model.set_token(token).unwrap();
            model.prepare_step(device, &mut funnel, position).unwrap();
            model.step(device, &mut funnel, position).unwrap();
            position += 1;
        };
        for &t in &prompt_ids {
            feed(&mut model, &mut device, t);
        }
        for step in 0..STEPS {
            let logits = model.logits(&mut device).unwrap();
            let expected = &prompt["steps"][step];
            let top = ids(&expected["top_ids"]);
            for (id, value) in top.iter().zip(expected["top_logits"].as_array().unwrap()) {
                let diff = (f64::from(logits[usize::try_from(*id).unwrap()]) - value.as_f64().unwrap()).abs();
                worst = worst.max(diff);
                assert!(diff <= TOLERANCE, "{}: step {step}, token {id}: {diff}", prompt["name"]);
            }
            let argmax = (0..logits.len()).max_by(|&a, &b| logits[a].total_cmp(&logits[b])).unwrap();
            assert_eq!(u32::try_from(argmax).unwrap(), greedy[step], "{}: step {step}", prompt["name"]);
            feed(&mut model, &mut device, greedy[step]);
        }
    }
    println!("largest top-5 logit difference from the f64 reference: {worst:.5}");
}
