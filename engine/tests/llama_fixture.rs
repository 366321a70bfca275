//! SmolLM2-135M-Instruct (the reference fixture, `REDLINE_SMOLLM2_GGUF`) on the soft device,
//! ordinary route, against the independent f64 reference
//! (`redline/tests/data/smollm2_reference.json`, written by
//! `redline/tests/reference/llama_f64.py`): the greedy tokens are the reference's, and
//! the top-5 logits of every step agree within [`TOLERANCE`].

use engine::funnel::Funnel;
use engine::model::Llama;
use engine::replay::{Backend, ReplayConfig, ReplayController, State, Step};
use engine::workload::Workload;
use gguf::Gguf;
use pm4_encoding::Target;
use serde_json::Value;
use soft_device::SimDevice;

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
        &std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../redline/tests/data/smollm2_reference.json")).unwrap(),
    )
    .unwrap();
    let mut worst = 0.0f64;
    for prompt in reference["prompts"].as_array().unwrap() {
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

/// The reference prompts prefilled in one batched pass ([`Workload::prefill`]): the logits of the
/// last prompt token are the bits of the step-by-step prefill (and so within [`TOLERANCE`] of the
/// f64 reference), the KV caches are the same bits, and the greedy continuation is the
/// reference's.
#[test]
fn smollm2_batched_prefill_gives_the_step_by_step_bits_and_the_reference_tokens() {
    let Some(path) = fixture_path() else { return };
    let file = Gguf::open(&path).unwrap();
    let reference: Value = serde_json::from_slice(
        &std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../redline/tests/data/smollm2_reference.json")).unwrap(),
    )
    .unwrap();
    let caches = |model: &Llama, device: &mut SimDevice| -> Vec<Vec<u8>> {
        ["k_cache", "v_cache"]
            .iter()
            .map(|name| model.surfaces().iter().find(|s| s.name == *name).unwrap().snapshot(device).unwrap())
            .collect()
    };
    for prompt in reference["prompts"].as_array().unwrap() {
        let prompt_ids = ids(&prompt["prompt_ids"]);
        let greedy = ids(&prompt["greedy_ids"]);
        let mut arms = Vec::new();
        for batched in [true, false] {
            let mut device = SimDevice::new(Target::Gfx1100);
            let mut model = Llama::load(&mut device, &file, 64).unwrap();
            let mut funnel = Funnel::new(4096);
            if batched {
                model.prefill(&mut device, &mut funnel, 0, &prompt_ids).unwrap();
            } else {
                for (position, &t) in (0u32..).zip(&prompt_ids) {
                    model.set_token(t).unwrap();
                    model.prepare_step(&mut device, &mut funnel, position).unwrap();
                    model.step(&mut device, &mut funnel, position).unwrap();
                }
            }
            let logits = model.logits(&mut device).unwrap();
            let expected = &prompt["steps"][0];
            for (id, value) in ids(&expected["top_ids"]).iter().zip(expected["top_logits"].as_array().unwrap()) {
                let diff = (f64::from(logits[usize::try_from(*id).unwrap()]) - value.as_f64().unwrap()).abs();
                assert!(diff <= TOLERANCE, "{}: token {id}: {diff}", prompt["name"]);
            }
            let mut tokens = Vec::new();
            let mut step_logits = logits.clone();
            for position in (0u32..).skip(prompt_ids.len()).take(STEPS) {
                let argmax = (0..step_logits.len()).max_by(|&a, &b| step_logits[a].total_cmp(&step_logits[b])).unwrap();
                let token = u32::try_from(argmax).unwrap();
                tokens.push(token);
                model.set_token(token).unwrap();
                model.prepare_step(&mut device, &mut funnel, position).unwrap();
                model.step(&mut device, &mut funnel, position).unwrap();
                step_logits = model.logits(&mut device).unwrap();
            }
            assert_eq!(tokens, greedy[..STEPS], "{} (batched {batched})", prompt["name"]);
            arms.push((logits.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), caches(&model, &mut device)));
        }
        assert!(arms[0].0 == arms[1].0, "{}: the logits differ from the step-by-step prefill", prompt["name"]);
        assert!(arms[0].1 == arms[1].1, "{}: the KV caches differ from the step-by-step prefill", prompt["name"]);
    }
}

/// Greedy decode of the France prompt for `steps` tokens through a controller with `config`;
/// returns the tokens and the controller.
fn decode_fixture(file: &Gguf, target: Target, config: ReplayConfig, steps: usize) -> (Vec<u32>, ReplayController) {
    let mut device = SimDevice::new(target);
    let mut model = Llama::load(&mut device, file, 64).unwrap();
    let mut funnel = Funnel::new(4096);
    let mut controller = ReplayController::new(config);
    controller.configure_model_default(true);
    let prompt = [504, 3575, 282, 4649, 314];
    let mut position = 0;
    for &t in &prompt {
        model.set_token(t).unwrap();
        controller.forward(&mut device, &mut funnel, &mut model, position, Step::Prompt).unwrap();
        position += 1;
    }
    let mut tokens = Vec::new();
    for _ in 0..steps {
        let logits = model.logits(&mut device).unwrap();
        let next = (0..logits.len()).max_by(|&a, &b| logits[a].total_cmp(&logits[b])).unwrap();
        let next = u32::try_from(next).unwrap();
        tokens.push(next);
        model.set_token(next).unwrap();
        controller.forward(&mut device, &mut funnel, &mut model, position, Step::Continuation).unwrap();
        position += 1;
    }
    (tokens, controller)
}

#[test]
fn smollm2_shadow_parity_at_16_positions_then_retained_on_gfx1100_and_gfx1201() {
    let Some(path) = fixture_path() else { return };
    let file = Gguf::open(&path).unwrap();
    const STEPS: usize = 24;
    for target in [Target::Gfx1100, Target::Gfx1201] {
        let base = ReplayConfig { explicit: true, shadow_positions: 16, ..ReplayConfig::default() };
        let (ordinary, hip) =
            decode_fixture(&file, target, ReplayConfig { backend: Backend::Hip, ..base.clone() }, STEPS);
        assert_eq!(hip.observations().retained, 0);
        let (retained, controller) =
            decode_fixture(&file, target, ReplayConfig { backend: Backend::Auto, validate_first: true, ..base }, STEPS);
        assert_eq!(retained, ordinary, "{target}: generated tokens differ with the retained route");
        assert_eq!(controller.state(), &State::Ready, "{target}");
        let obs = controller.observations();
        // Shadow validation compared every surface (logits, KV cache, activations, guards) at 16
        // positions, bit for bit; each was exact, or the controller would be in Fallback.
        assert_eq!(obs.shadow, 16, "{target}: {obs:?}");
        let proof = controller.route_proof();
        assert!(proof.shadow.as_ref().is_some_and(engine::shadow::ShadowReport::is_exact), "{target}");
        // Positions: prompt 0..=4, decode forwards (continuations) 5..=4+STEPS.
        // Recorded 5..=7, shadow 8..=23, every later forward retained.
        let retained_positions: Vec<u32> = (5 + 3 + 16..=4 + u32::try_from(STEPS).unwrap()).collect();
        assert_eq!(obs.replay_positions, retained_positions, "{target}");
        assert_eq!(obs.ordinary_launches_in_retained_forwards, 0);
    }
}

/// Long context: with a KV cache of 1024 positions, SmolLM2's tape captured at the start passes
/// the shadow oracle (all three arms, every surface — logits, KV cache, activations, guards — bit
/// for bit) near position 0, at 500, 1000 and the last position.
#[test]
fn smollm2_shadow_parity_near_0_500_1000_and_the_last_position_of_a_1024_context() {
    let Some(path) = fixture_path() else { return };
    let file = Gguf::open(&path).unwrap();
    const CONTEXT: u32 = 1024;
    let mut device = SimDevice::new(Target::Gfx1100);
    let mut model = Llama::load(&mut device, &file, CONTEXT).unwrap();
    let mut funnel = Funnel::new(4096);
    let mut controller =
        ReplayController::new(ReplayConfig { backend: Backend::Auto, explicit: true, ..ReplayConfig::default() });
    controller.configure_model_default(true);
    // "The capital of France is": prompt steps, then continuations until the plan is Ready.
    let prompt = [504, 3575, 282, 4649, 314];
    for (position, &token) in (0u32..).zip(&prompt) {
        model.set_token(token).unwrap();
        controller.forward(&mut device, &mut funnel, &mut model, position, Step::Prompt).unwrap();
    }
    for position in 5..8u32 {
        model.set_token(7042).unwrap();
        controller.forward(&mut device, &mut funnel, &mut model, position, Step::Continuation).unwrap();
    }
    assert_eq!(controller.state(), &State::Ready);
    let tape = controller.tape().unwrap().clone();
    let mut plan = engine::plan::prepare(&mut device, &tape).unwrap();
    let positions = [8, 500, 1000, CONTEXT - 1];
    let timeout = std::time::Duration::from_secs(60);
    let report =
        engine::shadow::run(&mut device, &mut funnel, &mut model, &tape, &mut plan, &positions, timeout).unwrap();
    assert_eq!(report.positions, positions);
    assert!(report.is_exact(), "{:?}", report.divergences);
    assert!(report.surfaces >= 3, "logits, the KV cache and activations: {}", report.surfaces);
    // The comparison covers the whole KV cache of 1024 positions.
    let p = model.params();
    let kv_bytes = 2 * u64::from(p.layers) * u64::from(CONTEXT) * u64::from(p.kv_heads * p.head_dim) * 4;
    assert!(report.bytes_per_arm >= kv_bytes, "{} < {kv_bytes}", report.bytes_per_arm);
}
