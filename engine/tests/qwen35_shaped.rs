//! The qwen35 adapter on Qwen3.5-0.8B's published shape (`gguf::QWEN35_0_8B`: 24 layers, 18 of
//! them gated-DeltaNet layers with 16 heads of 128, 6 full-attention layers with 8 query heads
//! of 256 rotated over their first 64 elements, a 248,320-token tied embedding, Q4_K_M's types),
//! with seeded random weights, written streaming into a temporary file (about 510 MB), on the
//! soft device:
//! - the adapter reads the published hyperparameters and KV layout from it;
//! - a prompt prefilled in one pass leaves the logits, the KV cache and both state surfaces bit
//!   for bit as the same prompt run step by step;
//! - the retained route reaches Ready and the shadow oracle finds every surface bit for bit equal
//!   at the positions where the convolution window fills (3, 4, 5) and at a later one.

use engine::funnel::Funnel;
use engine::model::language::ModelParams;
use engine::model::{LanguageModel, Qwen35, Qwen35Params};
use engine::plan::Transport;
use engine::replay::{Backend, ReplayConfig, ReplayController, State, Step};
use engine::workload::Workload;
use gguf::{Gguf, QWEN35_0_8B, write_shaped_qwen35_file};
use pm4_encoding::Target;
use soft_device::SimDevice;

const CONTEXT: u32 = 64;

fn file() -> (Gguf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("redline-qwen35-shaped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("qwen35-0.8b.gguf");
    let bytes = write_shaped_qwen35_file(&path, &QWEN35_0_8B, 0x0835).unwrap();
    assert!((500_000_000..520_000_000).contains(&bytes), "{bytes} bytes");
    (Gguf::open(&path).unwrap(), dir)
}

fn used(model: &Qwen35, device: &mut SimDevice, name: &str) -> Vec<u8> {
    let s = model.surfaces().iter().find(|s| s.name == name).unwrap().clone();
    let mut bytes = vec![0u8; usize::try_from(s.bytes).unwrap()];
    hal::Device::read(device, s.va, &mut bytes).unwrap();
    bytes
}

#[test]
fn the_published_shape_loads_prefills_like_its_steps_and_replays_bit_for_bit() {
    let (file, dir) = file();
    let p = Qwen35Params::from_gguf(&file).unwrap();
    assert_eq!((p.layers, p.recurrent_layers(), p.attention_layers()), (24, 18, 6));
    assert_eq!((p.dim, p.ffn, p.heads, p.kv_heads, p.head_dim, p.rope_dims), (1024, 3584, 8, 2, 256, 64));
    assert_eq!((p.state, p.k_heads, p.v_heads, p.conv_kernel, p.vocab), (128, 16, 16, 4, 248_320));
    assert!(p.tied_output && p.context_train == 262_144);
    let layout = ModelParams::Qwen35(p).kv_cache_layout(CONTEXT);
    assert_eq!((layout.layers, layout.surface_bytes), (6, 6 * 64 * 512 * 4));

    let prompt = [1u32, 75, 104, 108, 108, 111, 35];
    let mut funnel = Funnel::new(8192);
    let mut device = SimDevice::new(Target::Gfx1151);
    let mut batched = Qwen35::load_model(&mut device, &file, CONTEXT).unwrap();
    batched.prefill(&mut device, &mut funnel, 0, &prompt).unwrap();
    let names = ["logits", "k_cache", "v_cache", "conv_state", "recurrent_state"];
    let expected: Vec<Vec<u8>> = names.iter().map(|n| used(&batched, &mut device, n)).collect();
    drop(batched);
    let mut device = SimDevice::new(Target::Gfx1151);
    let mut model = Qwen35::load_model(&mut device, &file, CONTEXT).unwrap();
    for (position, &t) in (0u32..).zip(&prompt) {
        model.set_token(t).unwrap();
        model.prepare_step(&mut device, &mut funnel, position).unwrap();
        model.step(&mut device, &mut funnel, position).unwrap();
    }
    for (name, want) in names.iter().zip(&expected) {
        assert!(&used(&model, &mut device, name) == want, "{name}: the prefill pass differs from the steps");
    }
    assert!(model.logits(&mut device).unwrap().iter().all(|v| v.is_finite()));

    // The route: record from position 0, then the oracle from a reset state.
    model.reset_state(&mut device).unwrap();
    let config =
        ReplayConfig { backend: Backend::Auto, transport: Transport::Pm4, explicit: true, ..ReplayConfig::default() };
    let mut controller = ReplayController::new(config);
    controller.configure_model_default(true);
    for position in 0..8u32 {
        model.set_token(prompt[usize::try_from(position).unwrap() % prompt.len()]).unwrap();
        let step = if position == 0 { Step::Prompt } else { Step::Continuation };
        controller.forward(&mut device, &mut funnel, &mut model, position, step).unwrap();
        if controller.state() == &State::Ready {
            break;
        }
    }
    assert_eq!(controller.state(), &State::Ready, "{:?}", controller.state());
    let tape = controller.tape().unwrap().clone();
    let mut plan = engine::plan::prepare(&mut device, &tape).unwrap();
    model.reset_state(&mut device).unwrap();
    let timeout = std::time::Duration::from_secs(60);
    for position in [0u32, 1, 2, 3, 4, 5, 40] {
        model.set_token(prompt[usize::try_from(position).unwrap() % prompt.len()]).unwrap();
        let report =
            engine::shadow::run(&mut device, &mut funnel, &mut model, &tape, &mut plan, &[position], timeout).unwrap();
        assert!(report.is_exact(), "position {position}: {:?}", report.divergences);
        assert!(report.uncovered_state(model.surfaces()).is_empty());
    }
    plan.release(&mut device).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
