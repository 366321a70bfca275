//! Decode tokens per second of the reference model (SmolLM2-135M-Instruct, the GGUF named by
//! `REDLINE_SMOLLM2_GGUF`; `redline pull smollm2-135m` fetches it) on the soft device, through the
//! ordinary route and the retained route, next to this machine's memory-bandwidth floor, all in
//! one run:
//!
//! - `ordinary_token`: one decode forward with backend `hip` (453 launches through the funnel),
//!   then its logits read back (where the host waits for the launches).
//! - `retained_token`: one decode forward of a `Ready` controller (one PM4-IB submission), then
//!   its logits read back.
//! - `weights_copy_floor`: copying as many bytes as the model's weights (what every token must
//!   read at least once) from one buffer to another: bytes per token / copy bandwidth, the time
//!   a memory-bound decode cannot beat on this machine.
//!
//! Tokens per second are `1 / time`; the ratios between the rows are the result (the machine is
//! shared). The soft device runs every kernel's CPU reference, so both routes are compute-bound
//! here; the retained route removes the host's per-launch work, not the kernels' work.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use engine::funnel::Funnel;
use engine::model::Llama;
use engine::replay::{Backend, ReplayConfig, ReplayController, State, Step};
use gguf::Gguf;
use pm4_encoding::Target;
use soft_device::SimDevice;

const CONTEXT: u32 = 512;
/// Decode positions cycle through `FIRST..CONTEXT`: a step's cost depends on its position only
/// through attention, and both routes see the same positions.
const FIRST: u32 = 8;

struct Arm {
    device: SimDevice,
    model: Llama,
    funnel: Funnel,
    controller: ReplayController,
    position: u32,
}

impl Arm {
    fn new(file: &Gguf, backend: Backend) -> Self {
        let mut device = SimDevice::new(Target::Gfx1100);
        let model = Llama::load(&mut device, file, CONTEXT).unwrap();
        let mut controller = ReplayController::new(ReplayConfig { backend, explicit: true, ..ReplayConfig::default() });
        controller.configure_model_default(true);
        let mut arm = Self { device, model, funnel: Funnel::new(4096), controller, position: 0 };
        // Prefill-like warm-up; the retained arm records, calibrates and prepares here.
        for _ in 0..FIRST {
            arm.token();
        }
        arm
    }

    fn token(&mut self) {
        self.model.set_token(7042).unwrap();
        let position = self.position;
        // The first forward is the prompt; every later one continues it. The forward after a
        // wrap back to FIRST continues no earlier position, so it runs ordinarily (once every
        // CONTEXT - FIRST tokens).
        let step = if position == 0 { Step::Prompt } else { Step::Continuation };
        self.controller.forward(&mut self.device, &mut self.funnel, &mut self.model, position, step).unwrap();
        // A forward returns once its launches are published: a token ends with its logits.
        std::hint::black_box(self.model.logits(&mut self.device).unwrap());
        self.position = if position + 1 >= CONTEXT { FIRST } else { position + 1 };
    }
}

fn decode(c: &mut Criterion) {
    let Ok(path) = std::env::var("REDLINE_SMOLLM2_GGUF") else {
        eprintln!("REDLINE_SMOLLM2_GGUF is not set: run `redline pull smollm2-135m` and point it at the GGUF");
        return;
    };
    let file = Gguf::open(&path).unwrap();
    let weight_bytes: usize = file.tensors().iter().map(|t| usize::try_from(t.byte_len().unwrap_or(0)).unwrap()).sum();
    let mut group = c.benchmark_group("decode_smollm2");
    group.sample_size(10).warm_up_time(Duration::from_secs(2)).measurement_time(Duration::from_secs(15));

    let mut ordinary = Arm::new(&file, Backend::Hip);
    group.bench_function("ordinary_token", |b| b.iter(|| ordinary.token()));
    drop(ordinary);

    let mut retained = Arm::new(&file, Backend::Auto);
    assert_eq!(retained.controller.state(), &State::Ready, "the retained arm is prepared");
    let before = retained.controller.observations().retained;
    group.bench_function("retained_token", |b| b.iter(|| retained.token()));
    assert!(retained.controller.observations().retained > before, "the retained arm replayed");
    assert_eq!(retained.controller.state(), &State::Ready);
    drop(retained);

    let source = vec![1u8; weight_bytes];
    let mut target = vec![0u8; weight_bytes];
    group.bench_function("weights_copy_floor", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                target.copy_from_slice(black_box(&source));
                black_box(&mut target);
            }
            start.elapsed()
        });
    });
    eprintln!("weights per token: {weight_bytes} bytes");
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
