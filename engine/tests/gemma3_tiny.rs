//! The gemma3 adapter on the tiny generated model (every matrix type in use, a sliding window of
//! 8 keys on five of every six layers), on the soft device:
//! - a batched prefill leaves the KV cache and the logits bit for bit as the same prompt run step
//!   by step;
//! - greedy decoding through the replay controller (shadow-validated, then retained) gives the
//!   tokens, logits and every surface of the ordinary route bit for bit, over positions far past
//!   the window, although the window's first key was 0 in every recording;
//! - the tape carries the declared bindings: the window's first key of every sliding layer as
//!   `max(0, position - 7)`.

use engine::funnel::Funnel;
use engine::model::{Gemma3, LanguageModel};
use engine::plan::Transport;
use engine::replay::{Backend, ReplayConfig, ReplayController, State, Step};
use engine::workload::Workload;
use gguf::{Gguf, TinyGemma3Config, tiny_gemma3};
use pm4_encoding::Target;
use soft_device::SimDevice;
use tape_core::binding::BindingKind;

const CONTEXT: u32 = 128;

fn file() -> Gguf {
    Gguf::parse(tiny_gemma3(&TinyGemma3Config::default())).unwrap()
}

fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        assert!(v.is_finite(), "logit {i} is {v}");
        if v > logits[best] {
            best = i;
        }
    }
    u32::try_from(best).unwrap()
}

fn snapshot(model: &Gemma3, device: &mut SimDevice) -> Vec<Vec<u8>> {
    model.surfaces().iter().map(|s| s.snapshot(device).unwrap()).collect()
}

#[test]
fn a_batched_prefill_is_the_step_by_step_prompt_bit_for_bit() {
    let file = file();
    // 21 tokens: past the window, in two passes (13 + 8) from position 0.
    let prompt: Vec<u32> = (0..21).map(|i| 6 + (i * 37) % 300).collect();
    let mut device = SimDevice::new(Target::Gfx1100);
    let mut stepped = Gemma3::load_model(&mut device, &file, CONTEXT).unwrap();
    let mut funnel = Funnel::new(8192);
    for (position, &t) in (0u32..).zip(&prompt) {
        stepped.set_token(t).unwrap();
        stepped.prepare_step(&mut device, &mut funnel, position).unwrap();
        stepped.step(&mut device, &mut funnel, position).unwrap();
    }
    let expected = (snapshot(&stepped, &mut device), stepped.logits(&mut device).unwrap());

    let mut device = SimDevice::new(Target::Gfx1100);
    let mut batched = Gemma3::load_model(&mut device, &file, CONTEXT).unwrap();
    batched.prefill(&mut device, &mut funnel, 0, &prompt[..13]).unwrap();
    batched.prefill(&mut device, &mut funnel, 13, &prompt[13..]).unwrap();
    let logits = batched.logits(&mut device).unwrap();
    let surfaces = snapshot(&batched, &mut device);
    let names: Vec<String> = batched.surfaces().iter().map(|s| s.name.clone()).collect();
    for (i, name) in names.iter().enumerate() {
        // The KV caches and the logits are what the prefill owes; the step's scratch is not.
        if ["k_cache", "v_cache", "logits"].contains(&name.as_str()) {
            assert!(surfaces[i] == expected.0[i], "{name} differs from the step-by-step prompt");
        }
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&logits), bits(&expected.1));
}

/// Tokens, each step's logits, the final surfaces, and the controller.
type Decoded = (Vec<u32>, Vec<Vec<f32>>, Vec<Vec<u8>>, ReplayController);

fn decode(target: Target, backend: Backend, prompt: &[u32], steps: usize) -> Decoded {
    let file = file();
    let mut device = SimDevice::new(target);
    let mut model = Gemma3::load_model(&mut device, &file, CONTEXT).unwrap();
    let mut funnel = Funnel::new(8192);
    let validate_first = backend == Backend::Shadow;
    let backend = if validate_first { Backend::Auto } else { backend };
    let mut controller = ReplayController::new(ReplayConfig {
        backend,
        transport: Transport::Pm4,
        explicit: true,
        validate_first,
        ..ReplayConfig::default()
    });
    controller.configure_model_default(true);
    let mut tokens = prompt.to_vec();
    let mut all_logits = Vec::new();
    let mut position = 0u32;
    for &t in prompt {
        model.set_token(t).unwrap();
        controller.forward(&mut device, &mut funnel, &mut model, position, Step::Prompt).unwrap();
        position += 1;
    }
    for _ in 0..steps {
        let logits = model.logits(&mut device).unwrap();
        let next = argmax(&logits);
        all_logits.push(logits);
        tokens.push(next);
        model.set_token(next).unwrap();
        controller.forward(&mut device, &mut funnel, &mut model, position, Step::Continuation).unwrap();
        position += 1;
    }
    let surfaces = snapshot(&model, &mut device);
    (tokens, all_logits, surfaces, controller)
}

#[test]
fn the_retained_route_crosses_the_window_bit_exact() {
    // Recorded at positions 3 to 5 (the window's first key 0 in every recording), shadow-validated
    // at 6 to 13, retained from 14 to 46.
    let prompt = [2, 60, 61];
    let target = Target::Gfx1201;
    let (tokens, logits, surfaces, hip) = decode(target, Backend::Hip, &prompt, 44);
    assert_eq!(hip.state(), &State::Hip);
    let (r_tokens, r_logits, r_surfaces, controller) = decode(target, Backend::Shadow, &prompt, 44);
    assert_eq!(controller.state(), &State::Ready, "{:?}", controller.state());
    let observed = controller.observations();
    assert_eq!((observed.recorded, observed.retained), (3, 33), "{observed:?}");
    assert_eq!(observed.replay_positions.first(), Some(&14), "{observed:?}");
    assert_eq!(r_tokens, tokens);
    for (step, (a, b)) in logits.iter().zip(&r_logits).enumerate() {
        assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()), "logits of step {step} differ");
    }
    assert!(surfaces == r_surfaces, "a surface differs after the retained route");
    let tape = controller.tape().expect("a tape");
    let first_keys: Vec<(&str, BindingKind)> = tape
        .bindings()
        .iter()
        .filter(|b| b.name.ends_with(".attention.first"))
        .map(|b| (b.name.as_str(), b.kind))
        .collect();
    // Layers 0-4 and 6 slide; layer 5 attends globally.
    let names: Vec<&str> = first_keys.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "layer0.attention.first",
            "layer1.attention.first",
            "layer2.attention.first",
            "layer3.attention.first",
            "layer4.attention.first",
            "layer6.attention.first"
        ]
    );
    assert!(first_keys.iter().all(|(_, k)| matches!(k, BindingKind::KernargU32Clamped { addend: -7, .. })));
}
