//! Admission of a gemma3 file: a row naming its model format (container, architecture, tensor
//! types) and the KV layout its adapter gives arms it on the soft device, up to the row's
//! context and not past it.

use std::collections::BTreeSet;

use engine::admission::model::{self, Setting};
use engine::admission::{AdmissionRegistry, ModelFormat};
use lowering::plan::Transport;
use pm4_encoding::Target;

const SHA: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
const KV: &str = "f32:layer,position,kv_head,head_dim";

#[test]
fn a_gemma3_file_is_admitted_by_a_row_naming_its_format_and_the_kv_layout_of_its_adapter() {
    let file = gguf::Gguf::parse(gguf::tiny_gemma3(&gguf::TinyGemma3Config::default())).unwrap();
    let format = ModelFormat::of_gguf(&file);
    assert_eq!(format.architecture, "gemma3");
    let text = serde_json::json!({"admissions": [{
        "arch": "gfx1100", "device_kind": "sim", "model_format": format,
        "model_sha256": SHA, "max_context": 64, "kv_layout": KV, "transport": "pm4",
        "fixture": "smollm2-135m-gfx1100-sim",
    }]})
    .to_string();
    let fixtures: BTreeSet<String> = BTreeSet::from(["smollm2-135m-gfx1100-sim".to_owned()]);
    let registry = AdmissionRegistry::parse(&text, Some(&fixtures)).unwrap();
    let device = soft_device::SimDevice::new(Target::Gfx1100);
    let setting = |context| Setting { kind: "sim", context, transport: Transport::Pm4 };
    let decision = model::decide(&registry, &file, SHA, &device, setting(64));
    assert!(decision.admitted, "{}", decision.reason);
    let longer = model::decide(&registry, &file, SHA, &device, setting(65));
    assert!(!longer.admitted && longer.reason.contains("context 65"), "{}", longer.reason);
}
