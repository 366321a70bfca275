//! The tiny lfm2 model (`gguf::tiny_lfm2` with its default configuration) on the soft device
//! against the independent f64 reference (`redline/tests/data/lfm2_reference.json`, written by
//! `redline/tests/reference/lfm2_f64.py` over gguf-py's dequantization; llama.cpp run on the same
//! weights in F32 agrees with that reference within the 7.4e-3 the fixture records, so the
//! reference is llama.cpp's model):
//!
//! - for every prompt, fed the reference's own prompt ids in one batched prefill pass, each of the
//!   32 greedy steps' top-5 logits agree with the reference's within [`TOLERANCE`] and every
//!   greedy token is the reference's; the prompts run one after the other on one model, the
//!   sequence state reset between them as a session does;
//! - the same prompt run step by step leaves the logits, the KV cache and the convolution state
//!   bit for bit as the batched pass does, and so do the decode steps after it.

use engine::funnel::Funnel;
use engine::model::{LanguageModel, Lfm2};
use engine::workload::Workload;
use gguf::{Gguf, TinyLfm2Config, tiny_lfm2};
use pm4_encoding::Target;
use serde_json::Value;
use sha2::{Digest, Sha256};
use soft_device::SimDevice;

/// Absolute logit tolerance against the f64 reference (logits are O(20), their standard deviation
/// about 8): some forty times the worst difference measured (2.2e-5), so that a kernel computing
/// anything else than the reference's model (a tap order, a state shift, a norm, a RoPE pairing)
/// fails, while f32 rounding does not. The reference's closest top-two margin is 0.142 (`story`
/// step 26), far above twice the tolerance, so no step is a tie at this precision.
const TOLERANCE: f64 = 1e-3;
const CONTEXT: u32 = 256;

fn ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| u32::try_from(x.as_u64().unwrap()).unwrap()).collect()
}

fn reference() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../redline/tests/data/lfm2_reference.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn tiny() -> Gguf {
    let bytes = tiny_lfm2(&TinyLfm2Config::default());
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        Some(digest.as_str()),
        reference()["gguf_sha256"].as_str(),
        "the tiny model is not the file the fixture was written for: regenerate the fixture (its command)"
    );
    Gguf::parse(bytes).unwrap()
}

fn argmax(logits: &[f32]) -> u32 {
    u32::try_from((0..logits.len()).fold(0, |best, i| if logits[i] > logits[best] { i } else { best })).unwrap()
}

#[test]
fn tiny_lfm2_greedy_tokens_and_logits_match_the_f64_reference() {
    let file = tiny();
    let reference = reference();
    let mut device = SimDevice::new(Target::Gfx1100);
    let mut model = Lfm2::load_model(&mut device, &file, CONTEXT).unwrap();
    let mut funnel = Funnel::new(8192);
    let mut report = Vec::new();
    for prompt in reference["prompts"].as_array().unwrap() {
        let name = prompt["name"].as_str().unwrap();
        let prompt_ids = ids(&prompt["prompt_ids"]);
        let greedy = ids(&prompt["greedy_ids"]);
        let steps = prompt["steps"].as_array().unwrap();
        assert_eq!(greedy.len(), 32);
        model.reset_state(&mut device).unwrap();
        model.prefill(&mut device, &mut funnel, 0, &prompt_ids).unwrap();
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
        report.push(format!("{name}: {} greedy tokens equal, worst |Δlogit| {worst:.3e}", greedy.len()));
    }
    println!("{}", report.join("\n"));
}

/// The named surfaces' used bytes.
fn read(model: &Lfm2, device: &mut SimDevice, names: &[&str]) -> Vec<Vec<u8>> {
    names
        .iter()
        .map(|name| {
            let s = model.surfaces().iter().find(|s| s.name == *name).unwrap();
            let mut bytes = vec![0u8; usize::try_from(s.bytes).unwrap()];
            hal::Device::read(device, s.va, &mut bytes).unwrap();
            bytes
        })
        .collect()
}

#[test]
fn a_batched_prefill_is_the_prompt_step_by_step_bit_for_bit() {
    let file = tiny();
    let reference = reference();
    let prompt = &reference["prompts"][1];
    let (prompt_ids, greedy) = (ids(&prompt["prompt_ids"]), ids(&prompt["greedy_ids"]));
    let compared = ["logits", "k_cache", "v_cache", "conv_state"];
    let mut arms = Vec::new();
    for batched in [true, false] {
        let mut device = SimDevice::new(Target::Gfx1100);
        let mut model = Lfm2::load_model(&mut device, &file, CONTEXT).unwrap();
        let mut funnel = Funnel::new(8192);
        if batched {
            // Passes of 20, 20 and 8 tokens: the state and the cache carry across passes.
            for (first, pass) in (0u32..).step_by(20).zip(prompt_ids.chunks(20)) {
                model.prefill(&mut device, &mut funnel, first, pass).unwrap();
            }
        } else {
            for (position, &token) in (0u32..).zip(&prompt_ids) {
                model.set_token(token).unwrap();
                model.prepare_step(&mut device, &mut funnel, position).unwrap();
                model.step(&mut device, &mut funnel, position).unwrap();
            }
        }
        let mut snapshots = vec![read(&model, &mut device, &compared)];
        let positions = u32::try_from(prompt_ids.len()).unwrap()..;
        for (position, &token) in positions.zip(&greedy[..8]) {
            model.set_token(token).unwrap();
            model.prepare_step(&mut device, &mut funnel, position).unwrap();
            model.step(&mut device, &mut funnel, position).unwrap();
            snapshots.push(read(&model, &mut device, &compared));
        }
        arms.push(snapshots);
    }
    for (step, (a, b)) in arms[0].iter().zip(&arms[1]).enumerate() {
        for ((name, x), y) in compared.iter().zip(a).zip(b) {
            assert!(x == y, "after {step} decode steps: {name} differs between the batched and the stepped prompt");
        }
    }
    // The state is not trivially equal: the prompt left it non-zero.
    assert!(arms[0][0][3].iter().any(|&b| b != 0), "the convolution state holds the prompt's last inputs");
}
