//! `Session::with_admission`: the admission decision arms the retained route by default; a
//! refused model fails closed to ordinary launches with the reason kept, unless the backend was
//! asked for explicitly.

use std::collections::BTreeSet;

use engine::admission::{AdmissionDecision, AdmissionQuery, AdmissionRegistry, ModelFormat};
use engine::model::{GenerateOptions, Session};
use engine::replay::{Backend, ReplayConfig};
use gguf::{Gguf, TinyLlamaConfig, tiny_llama};
use pm4_encoding::Target;
use soft_device::SimDevice;
use tokenizer::{LogitsConfig, SamplerConfig};

const KV_LAYOUT: &str = "f32:layer,position,kv_head,head_dim";
const TINY_SHA: &str = "1111111111111111111111111111111111111111111111111111111111111111";

fn registry_for(file: &Gguf, arch: &str) -> AdmissionRegistry {
    let format = ModelFormat::of_gguf(file);
    let text = serde_json::json!({"admissions": [{
        "arch": arch, "device_kind": "sim", "model_format": format,
        "model_sha256": TINY_SHA, "max_context": 64, "kv_layout": KV_LAYOUT, "transport": "pm4",
        "fixture": "tiny-evidence",
    }]})
    .to_string();
    let fixtures: BTreeSet<String> = ["tiny-evidence".to_owned()].into();
    AdmissionRegistry::parse(&text, Some(&fixtures)).unwrap()
}

fn decide(file: &Gguf, registry_arch: &str) -> AdmissionDecision {
    let format = ModelFormat::of_gguf(file);
    registry_for(file, registry_arch).decide(&AdmissionQuery {
        arch: Target::Gfx1100,
        device_kind: "sim",
        devices: 1,
        model_format: &format,
        model_sha256: TINY_SHA,
        context: 64,
        kv_layout: KV_LAYOUT,
        transport: engine::plan::Transport::Pm4,
    })
}

fn generate(session: &mut Session<SimDevice>) -> engine::replay::RouteProof {
    let options = GenerateOptions {
        max_tokens: 8,
        sampler: SamplerConfig::default(),
        stop: Vec::new(),
        logits: LogitsConfig::default(),
        top_logprobs: None,
    };
    session.generate(&[1, 2, 3], &options, |_| std::ops::ControlFlow::Continue(())).unwrap();
    session.route_proof()
}

#[test]
fn an_admitted_model_arms_the_default_route_and_a_refused_one_fails_closed() {
    let file = Gguf::parse(tiny_llama(&TinyLlamaConfig::default())).unwrap();
    let implicit = ReplayConfig { backend: Backend::Auto, explicit: false, ..ReplayConfig::default() };

    let admitted = decide(&file, "gfx1100");
    assert!(admitted.admitted, "{}", admitted.reason);
    let device = SimDevice::new(Target::Gfx1100);
    let mut session = Session::with_admission(device, &file, 64, implicit.clone(), admitted.clone()).unwrap();
    assert_eq!(session.admission(), &admitted);
    let proof = generate(&mut session);
    assert_eq!(proof.state, "ready");
    assert!(proof.observations.retained > 0);

    let refused = decide(&file, "gfx1201");
    assert!(!refused.admitted);
    assert!(refused.reason.contains("gfx1100 has no admission row"), "{}", refused.reason);
    let device = SimDevice::new(Target::Gfx1100);
    let mut session = Session::with_admission(device, &file, 64, implicit.clone(), refused.clone()).unwrap();
    assert_eq!(session.admission().reason, refused.reason);
    let proof = generate(&mut session);
    assert_eq!(proof.state, "hip");
    assert_eq!(proof.observations.retained, 0);

    // An explicit request arms the route regardless of admission.
    let explicit = ReplayConfig { explicit: true, ..implicit.clone() };
    let device = SimDevice::new(Target::Gfx1100);
    let mut session = Session::with_admission(device, &file, 64, explicit, refused).unwrap();
    assert_eq!(generate(&mut session).state, "ready");

    // `Session::new` makes no decision: not admitted.
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file, 64, implicit).unwrap();
    assert!(!session.admission().admitted);
    assert_eq!(generate(&mut session).state, "hip");
}
