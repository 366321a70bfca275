//! The tiny qwen35 model (`gguf::tiny_qwen35` with its default configuration, the built-in
//! `tiny-qwen35`) on the soft device, ordinary route, against the independent f64 reference
//! (`redline/tests/data/qwen35_reference.json`, written by
//! `redline/tests/reference/qwen35_f64.py` over gguf-py's dequantization):
//! - for every prompt, fed as token ids through batched prefill passes (the long prompt takes two,
//!   so the DeltaNet state crosses a pass boundary), each of 32 greedy steps' top-5 logits agree
//!   with the reference's within [`TOLERANCE`] and every greedy token is the reference's (the
//!   reference's closest top-two margin, 0.0059 at a `long` step, is far above twice the
//!   tolerance, so no step is a tie at this precision);
//! - the same prompt run step by step leaves the logits and every surface (the KV cache, the
//!   convolution and recurrent state included) bit for bit as the batched passes.
//!
//! Measured: the worst difference is 1.4e-5 on logits of magnitude up to 10.

use engine::funnel::Funnel;
use engine::model::{LanguageModel, Qwen35};
use engine::workload::Workload;
use gguf::{Gguf, TinyQwen35Config, tiny_qwen35};
use pm4_encoding::Target;
use serde_json::Value;
use sha2::{Digest, Sha256};
use soft_device::SimDevice;

/// Absolute logit tolerance against the f64 reference (logits up to 10): about ten times the
/// worst difference measured, so that a kernel computing anything but the reference's model (a
/// rope pairing, a gate half, a key head, a state update order) fails while f32 rounding does not.
const TOLERANCE: f64 = 1e-4;
const CONTEXT: u32 = 256;

fn ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| u32::try_from(x.as_u64().unwrap()).unwrap()).collect()
}

fn reference() -> Value {
    serde_json::from_slice(
        &std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../redline/tests/data/qwen35_reference.json")).unwrap(),
    )
    .unwrap()
}

/// The tiny model, checked to be the file the reference ran.
fn file(reference: &Value) -> Gguf {
    let bytes = tiny_qwen35(&TinyQwen35Config::default());
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        Some(digest.as_str()),
        reference["gguf_sha256"].as_str(),
        "the tiny qwen35 writer changed: rewrite the fixture with the command it records"
    );
    Gguf::parse(bytes).unwrap()
}

fn argmax(logits: &[f32]) -> u32 {
    u32::try_from((0..logits.len()).fold(0, |best, i| if logits[i] > logits[best] { i } else { best })).unwrap()
}

fn prefill(model: &mut Qwen35, device: &mut SimDevice, funnel: &mut Funnel, prompt: &[u32]) {
    model.reset_state(device).unwrap();
    for (first, chunk) in (0u32..).step_by(128).zip(prompt.chunks(128)) {
        model.prefill(device, funnel, first, chunk).unwrap();
    }
}

#[test]
fn greedy_tokens_and_logits_match_the_f64_reference() {
    let reference = reference();
    let file = file(&reference);
    let mut device = SimDevice::new(Target::Gfx1100);
    let mut model = Qwen35::load_model(&mut device, &file, CONTEXT).unwrap();
    let mut report = Vec::new();
    for prompt in reference["prompts"].as_array().unwrap() {
        let name = prompt["name"].as_str().unwrap();
        let prompt_ids = ids(&prompt["prompt_ids"]);
        let greedy = ids(&prompt["greedy_ids"]);
        let steps = prompt["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 32, "{name}");
        let mut funnel = Funnel::new(8192);
        prefill(&mut model, &mut device, &mut funnel, &prompt_ids);
        let positions = u32::try_from(prompt_ids.len()).unwrap()..;
        let mut worst = 0.0f64;
        for (position, (step, (&expected, s))) in positions.zip(greedy.iter().zip(steps).enumerate()) {
            let logits = model.logits(&mut device).unwrap();
            let (top_ids, top_logits) = (ids(&s["top_ids"]), s["top_logits"].as_array().unwrap());
            for (&id, want) in top_ids.iter().zip(top_logits) {
                let got = f64::from(logits[usize::try_from(id).unwrap()]);
                let diff = (got - want.as_f64().unwrap()).abs();
                worst = worst.max(diff);
                assert!(diff <= TOLERANCE, "{name} step {step}: logit of {id} is {got}, reference {want}");
            }
            assert_eq!(argmax(&logits), expected, "{name} step {step}: the greedy token differs from the reference's");
            model.set_token(expected).unwrap();
            model.prepare_step(&mut device, &mut funnel, position).unwrap();
            model.step(&mut device, &mut funnel, position).unwrap();
        }
        let margin = prompt["min_margin"].as_f64().unwrap();
        assert!(
            margin > 10.0 * TOLERANCE,
            "{name}: the reference's closest margin {margin} is no tie at this tolerance"
        );
        report.push(format!("{name}: {} greedy tokens equal, worst |Δlogit| {worst:.3e}", greedy.len()));
    }
    println!("{}", report.join("\n"));
}

fn snapshot(model: &Qwen35, device: &mut SimDevice) -> Vec<(String, Vec<u8>)> {
    model.surfaces().iter().map(|s| (s.name.clone(), s.snapshot(device).unwrap())).collect()
}

#[test]
fn the_long_prompt_step_by_step_is_the_batched_passes_bit_for_bit() {
    let reference = reference();
    let file = file(&reference);
    let prompt = ids(&reference["prompts"][1]["prompt_ids"]);
    assert!(prompt.len() > 128, "two prefill passes");
    let mut funnel = Funnel::new(8192);

    let mut device = SimDevice::new(Target::Gfx1100);
    let mut batched = Qwen35::load_model(&mut device, &file, CONTEXT).unwrap();
    prefill(&mut batched, &mut device, &mut funnel, &prompt);
    let expected = snapshot(&batched, &mut device);

    let mut device = SimDevice::new(Target::Gfx1100);
    let mut stepped = Qwen35::load_model(&mut device, &file, CONTEXT).unwrap();
    for (position, &t) in (0u32..).zip(&prompt) {
        stepped.set_token(t).unwrap();
        stepped.prepare_step(&mut device, &mut funnel, position).unwrap();
        stepped.step(&mut device, &mut funnel, position).unwrap();
    }
    let got = snapshot(&stepped, &mut device);
    for ((name, a), (_, b)) in expected.iter().zip(&got) {
        // The step's scratch (activations of the last token's layers) differs in what the passes
        // keep in their own surfaces; the state, the caches and the logits must not.
        if ["conv_state", "recurrent_state", "k_cache", "v_cache", "logits"].contains(&name.as_str()) {
            assert!(a == b, "surface {name} differs between the batched passes and the steps");
        }
    }
    let surface = stepped.surfaces().iter().find(|s| s.name == "recurrent_state").unwrap().clone();
    let mut used = vec![0u8; usize::try_from(surface.bytes).unwrap()];
    hal::Device::read(&mut device, surface.va, &mut used).unwrap();
    assert!(used.iter().any(|&b| b != 0), "the prompt moved the recurrent state");
}
