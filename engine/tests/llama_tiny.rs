//! The llama adapter on the project's tiny generated model, on the soft device: greedy decoding
//! through the ordinary path, and the same decode through the replay controller (shadow
//! validation, then the retained route) gives bit-identical logits, KV cache and tokens.

use engine::funnel::Funnel;
use engine::model::Llama;
use engine::plan::Transport;
use engine::replay::{Backend, ReplayConfig, ReplayController, State, Step};
use engine::workload::Workload;
use gguf::{Gguf, TinyLlamaConfig, tiny_llama};
use pm4_encoding::Target;
use soft_device::SimDevice;

const CONTEXT: u32 = 64;

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

/// Tokens, each step's logits, the final surfaces, and the controller.
type Decoded = (Vec<u32>, Vec<Vec<f32>>, Vec<Vec<u8>>, ReplayController);

/// Greedy decode of `steps` tokens after `prompt`; returns the tokens and every step's logits,
/// plus the surfaces at the end.
fn decode(target: Target, backend: Backend, prompt: &[u32], steps: usize) -> Decoded {
    let file = Gguf::parse(tiny_llama(&TinyLlamaConfig::default())).unwrap();
    let mut device = SimDevice::new(target);
    let mut model = Llama::load(&mut device, &file, CONTEXT).unwrap();
    let mut funnel = Funnel::new(4096);
    // `shadow` here means the product route validated first: `auto` with the oracle before Ready
    // (the `shadow` backend itself is a diagnostic that never replays a product forward).
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
        // The prompt is prefill, its last token included: never eligible.
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
    let surfaces = model.surfaces().iter().map(|s| s.snapshot(&mut device).unwrap()).collect();
    (tokens, all_logits, surfaces, controller)
}

#[test]
fn tiny_llama_decodes_identically_on_the_ordinary_and_retained_routes() {
    let prompt = [40, 41, 42, 43];
    for target in [Target::Gfx1100, Target::Gfx1201] {
        let (tokens, logits, surfaces, hip) = decode(target, Backend::Hip, &prompt, 24);
        assert_eq!(hip.state(), &State::Hip);
        assert_eq!(hip.observations().retained, 0);
        let (r_tokens, r_logits, r_surfaces, controller) = decode(target, Backend::Shadow, &prompt, 24);
        assert_eq!(controller.state(), &State::Ready, "{target}: {:?}", controller.state());
        assert!(controller.observations().retained >= 8, "{:?}", controller.observations());
        assert_eq!(controller.observations().ordinary_launches_in_retained_forwards, 0);
        assert_eq!(tokens, r_tokens, "{target}");
        for (a, b) in logits.iter().zip(&r_logits) {
            assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()), "{target}: logits differ");
        }
        assert!(surfaces == r_surfaces, "{target}: a surface differs");
        // The comparison is not vacuous: the logits follow the position and the cache (the random
        // tiny model repeats its last token greedily, so the tokens alone would prove little).
        for pair in logits.windows(2) {
            assert!(pair[0].iter().zip(&pair[1]).any(|(x, y)| x.to_bits() != y.to_bits()), "{target}: logits repeat");
        }
    }
}
