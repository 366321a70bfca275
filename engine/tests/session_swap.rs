//! `Session::reconfigure` swaps the model on the same device: A → B → A gives each model's
//! tokens exactly as a fresh session of it does, the old plan is released before the new model
//! loads, the controller is re-armed and reaches the retained route again with no stale-plan
//! error, and the route proof names each reconfiguration.

use std::ops::ControlFlow;

use engine::admission::AdmissionDecision;
use engine::model::{GenerateOptions, Session};
use engine::replay::{Backend, ReplayConfig};
use gguf::{Gguf, TinyLlamaConfig, tiny_llama};
use hal::Device;
use pm4_encoding::Target;
use soft_device::SimDevice;
use tokenizer::{LogitsConfig, SamplerConfig};

const CONTEXT: u32 = 64;

fn model(seed: u64) -> Gguf {
    Gguf::parse(tiny_llama(&TinyLlamaConfig { seed, ..TinyLlamaConfig::default() })).unwrap()
}

fn config() -> ReplayConfig {
    ReplayConfig { backend: Backend::Auto, explicit: true, ..ReplayConfig::default() }
}

fn options() -> GenerateOptions {
    GenerateOptions {
        max_tokens: 16,
        sampler: SamplerConfig::default(),
        stop: Vec::new(),
        logits: LogitsConfig::default(),
        top_logprobs: None,
    }
}

fn generate(session: &mut Session<SimDevice>, prompt: &str) -> Vec<u32> {
    let ids = session.tokenizer().encode(prompt, false);
    session.generate(&ids, &options(), |_| ControlFlow::Continue(())).unwrap().tokens
}

/// A fresh session's tokens for `file`, twice (the second request over the installed plan).
fn fresh(file: &Gguf) -> (Vec<u32>, Vec<u32>) {
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), file, CONTEXT, config()).unwrap();
    (generate(&mut session, "the cat"), generate(&mut session, "the cat"))
}

#[test]
fn a_to_b_to_a_gives_each_model_its_fresh_tokens_and_names_each_reconfiguration() {
    let (a, b) = (model(1), model(2));
    let (fresh_a, fresh_a_again) = fresh(&a);
    let (fresh_b, _) = fresh(&b);
    assert_eq!(fresh_a, fresh_a_again, "a request starts from a reset cache and position 0");
    assert_ne!(fresh_a, fresh_b, "the two models must differ for the test to mean anything");

    let mut session = Session::new(SimDevice::new(Target::Gfx1100), &a, CONTEXT, config()).unwrap();
    assert_eq!(generate(&mut session, "the cat"), fresh_a);
    assert_eq!(session.route_proof().state, "ready");
    assert!(session.route_proof().observations.retained > 0);
    let epoch = session.device().lifetime().epoch;

    session.reconfigure(&b, CONTEXT, AdmissionDecision::not_evaluated(), "model a -> b").unwrap();
    let proof = session.route_proof();
    let reconfiguration = proof.reconfiguration.clone().unwrap();
    assert_eq!(reconfiguration.sentence, "Model reconfiguration invalidated the old plan.");
    assert_eq!(reconfiguration.count, 1);
    assert!(reconfiguration.detail.starts_with("model a -> b; old plan: the pm4 plan of"), "{reconfiguration:?}");
    assert!(reconfiguration.detail.ends_with("(released)"), "{reconfiguration:?}");
    assert_eq!((proof.state, proof.tape.is_none(), proof.observations.retained), ("armed", true, 0));
    assert_eq!(session.device().lifetime().epoch, epoch + 1, "the old model's objects were freed");
    assert_eq!(session.device().topology().queues, 0, "the old plan's queue was destroyed");

    assert_eq!(generate(&mut session, "the cat"), fresh_b);
    let proof = session.route_proof();
    assert_eq!(proof.state, "ready", "{:?}", proof.fallback_reason);
    assert!(proof.observations.retained > 0);

    session.reconfigure(&a, CONTEXT, AdmissionDecision::not_evaluated(), "model b -> a").unwrap();
    assert_eq!(session.route_proof().reconfiguration.unwrap().count, 2);
    assert_eq!(generate(&mut session, "the cat"), fresh_a);
    assert_eq!(generate(&mut session, "the cat"), fresh_a_again);
    let proof = session.route_proof();
    assert_eq!((proof.state, proof.fallback_reason), ("ready", None));
}
