//! Any bytes as an admissions registry (with and without a fixture list): a typed result,
//! never a panic; a parsed registry answers the predicate for every target.
#![no_main]

use std::collections::BTreeSet;

use engine::admission::{AdmissionQuery, AdmissionRegistry, ModelFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let fixtures: BTreeSet<String> = ["smollm2-135m-gfx1100-sim".to_owned()].into();
    let _ = AdmissionRegistry::parse(text, Some(&fixtures));
    if let Ok(registry) = AdmissionRegistry::parse(text, None) {
        let format =
            ModelFormat { container: "gguf".into(), architecture: "llama".into(), tensor_types: BTreeSet::new() };
        for arch in pm4_encoding::Target::ALL {
            let decision = registry.decide(&AdmissionQuery {
                arch,
                device_kind: "sim",
                devices: 1,
                model_format: &format,
                model_sha256: "",
                context: 1024,
                kv_layout: "",
                transport: engine::plan::Transport::Pm4,
            });
            assert!(!decision.admitted, "an empty tensor type set and digest are never certified");
        }
    }
});
