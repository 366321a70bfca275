//! Decode tokens per second of the reference model (SmolLM2-135M-Instruct, the GGUF named by
//! `REDLINE_SMOLLM2_GGUF`; `redline pull smollm2-135m` fetches it), of Gemma 3 270M (Q4_K_M,
//! `REDLINE_GEMMA3_GGUF`; `redline pull gemma-3-270m`) and of the LFM2-350M and Qwen3.5-0.8B
//! shapes (`REDLINE_LFM2_GGUF`, `REDLINE_QWEN35_GGUF`, see [`MODELS`]) when their files are named,
//! on the soft device, through the ordinary route and the retained route, next to this machine's
//! memory-bandwidth floor, all in one run. Each model is a group of its own (`decode_smollm2`,
//! `decode_gemma3`, `decode_lfm2`, `decode_qwen35`), which also prints the retained tape's
//! identity (dispatches, unique kernels, external launches, sequence hash):
//!
//! - `ordinary_token`: one decode forward with backend `hip` (483 launches through the funnel
//!   for SmolLM2, 364 for Gemma 3 270M), then its logits read back (where the host waits for the
//!   launches).
//! - `retained_token`: one decode forward of a `Ready` controller (one PM4-IB submission), then
//!   its logits read back.
//! - `prefill_128`: a 128-token prompt as one batched prefill pass (ordinary launches of the
//!   batched kernels), then the last token's logits read back.
//! - `weights_copy_floor`: copying as many bytes as the model's weights (what every token must
//!   read at least once) from one buffer to another: bytes per token / copy bandwidth, the time
//!   a memory-bound decode cannot beat on this machine.
//!
//! Tokens per second are `1 / time` (`128 / time` for the prefill); the ratios between the rows
//! are the result (the machine is shared), printed at the end of each model's group from the
//! same measurements: each decode route as a fraction of the floor's tok/s, the prefill as a
//! multiple of the decode tok/s; with SmolLM2 measured, every other model's tok/s as a fraction of
//! SmolLM2's. The
//! soft device runs every kernel's CPU reference with its strict checks on, so both routes are
//! compute-bound here; the retained route removes the host's per-launch work, not the kernels'
//! work.

use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use engine::funnel::Funnel;
use engine::model::LanguageModel;
use engine::model::language;
use engine::replay::{Backend, ReplayConfig, ReplayController, State, Step};
use gguf::Gguf;
use pm4_encoding::Target;
use soft_device::SimDevice;

const CONTEXT: u32 = 512;
/// Decode positions cycle through `FIRST..CONTEXT`: a step's cost depends on its position only
/// through attention, and both routes see the same positions.
const FIRST: u32 = 8;
/// Prompt tokens of the prefill row: one batched pass of either model.
const PREFILL_TOKENS: u32 = 128;
/// The token every decode step embeds (in both vocabularies).
const TOKEN: u32 = 7042;

/// The models benched: the group's name and the environment variable naming the GGUF. The
/// `lfm2` and `qwen35` files are the published shapes with seeded random weights
/// (`redline models write-tiny --shape lfm2-350m PATH`, `--shape qwen35-0.8b`): the step's
/// work and the tape are those of the real models, the tokens are not.
const MODELS: [(&str, &str); 4] = [
    ("decode_smollm2", "REDLINE_SMOLLM2_GGUF"),
    ("decode_gemma3", "REDLINE_GEMMA3_GGUF"),
    ("decode_lfm2", "REDLINE_LFM2_GGUF"),
    ("decode_qwen35", "REDLINE_QWEN35_GGUF"),
];

struct Arm {
    device: SimDevice,
    model: Box<dyn LanguageModel>,
    funnel: Funnel,
    controller: ReplayController,
    position: u32,
}

impl Arm {
    fn new(file: &Gguf, backend: Backend) -> Self {
        let mut device = SimDevice::new(Target::Gfx1100);
        let model = language::load(&mut device, file, CONTEXT).unwrap();
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
        self.model.set_token(TOKEN).unwrap();
        let position = self.position;
        // The first forward is the prompt; every later one continues it. The forward after a
        // wrap back to FIRST continues no earlier position, so it runs ordinarily (once every
        // CONTEXT - FIRST tokens).
        let step = if position == 0 { Step::Prompt } else { Step::Continuation };
        self.controller.forward(&mut self.device, &mut self.funnel, self.model.as_mut(), position, step).unwrap();
        // A forward returns once its launches are published: a token ends with its logits.
        std::hint::black_box(self.model.logits(&mut self.device).unwrap());
        self.position = if position + 1 >= CONTEXT { FIRST } else { position + 1 };
    }
}

/// Mean time per iteration over every timed iteration of a row (criterion's warm-up included).
#[derive(Default)]
struct Mean {
    total: Cell<Duration>,
    iterations: Cell<u64>,
}

impl Mean {
    /// Times `iters` calls of `f`, adding them to the mean.
    fn time(&self, iters: u64, mut f: impl FnMut()) -> Duration {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        let elapsed = start.elapsed();
        self.total.set(self.total.get() + elapsed);
        self.iterations.set(self.iterations.get() + iters);
        elapsed
    }

    /// Iterations per second.
    fn per_second(&self) -> f64 {
        let iterations = self.iterations.get() as f64;
        iterations / self.total.get().as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// One model's tokens per second, as its group measured them.
struct Rates {
    ordinary: f64,
    retained: f64,
    prefill: f64,
}

fn decode(c: &mut Criterion) {
    let mut measured = Vec::new();
    for (group, key) in MODELS {
        let Ok(path) = std::env::var(key) else {
            eprintln!("{key} is not set: {group} not run (`redline pull` fetches the model; point {key} at the GGUF)");
            continue;
        };
        if let Some(rates) = bench_model(c, group, &Gguf::open(&path).unwrap()) {
            measured.push((group, rates));
        }
    }
    if let Some((_, smollm2)) = measured.iter().find(|(group, _)| *group == "decode_smollm2") {
        for (group, rates) in measured.iter().filter(|(group, _)| *group != "decode_smollm2") {
            eprintln!(
                "{group} / decode_smollm2: decode ordinary {:.2} x, decode retained {:.2} x, prefill {:.2} x",
                rates.ordinary / smollm2.ordinary,
                rates.retained / smollm2.retained,
                rates.prefill / smollm2.prefill
            );
        }
    }
}

/// The four rows of `group` for the model in `file`, and the tok/s they measured (`None` when a
/// filter left a row untimed).
fn bench_model(c: &mut Criterion, group_name: &str, file: &Gguf) -> Option<Rates> {
    let weight_bytes: usize = file.tensors().iter().map(|t| usize::try_from(t.byte_len().unwrap_or(0)).unwrap()).sum();
    let mut group = c.benchmark_group(group_name);
    group.sample_size(10).warm_up_time(Duration::from_secs(2)).measurement_time(Duration::from_secs(15));
    let (ordinary_mean, retained_mean, prefill_mean, floor_mean) =
        (Mean::default(), Mean::default(), Mean::default(), Mean::default());

    let mut ordinary = Arm::new(file, Backend::Hip);
    group.bench_function("ordinary_token", |b| b.iter_custom(|iters| ordinary_mean.time(iters, || ordinary.token())));
    drop(ordinary);

    let mut retained = Arm::new(file, Backend::Auto);
    assert_eq!(retained.controller.state(), &State::Ready, "the retained arm is prepared");
    let before = retained.controller.observations().retained;
    if let Some(tape) = retained.controller.tape() {
        let id = tape.identity();
        let hash: String = id.sequence_hash.iter().map(|b| format!("{b:02x}")).collect();
        eprintln!(
            "{group_name}: retained tape: {} dispatches, {} unique kernels, {} external launches, sequence hash {hash}",
            id.dispatch_count, id.unique_kernels, id.external_launches
        );
    }
    group.bench_function("retained_token", |b| b.iter_custom(|iters| retained_mean.time(iters, || retained.token())));
    // (A filter that skips the row times nothing.)
    let timed = retained_mean.iterations.get() > 0;
    assert!(!timed || retained.controller.observations().retained > before, "the retained arm replayed");
    assert_eq!(retained.controller.state(), &State::Ready);
    drop(retained);

    let mut device = SimDevice::new(Target::Gfx1100);
    let mut model = language::load(&mut device, file, CONTEXT).unwrap();
    assert!(model.prefill_chunk() >= PREFILL_TOKENS, "the prompt is one batched pass");
    let mut funnel = Funnel::new(4096);
    let prompt: Vec<u32> = (0..PREFILL_TOKENS).map(|i| 1000 + 37 * i).collect();
    group.bench_function("prefill_128", |b| {
        b.iter_custom(|iters| {
            prefill_mean.time(iters, || {
                model.prefill(&mut device, &mut funnel, 0, &prompt).unwrap();
                black_box(model.logits(&mut device).unwrap());
            })
        });
    });
    drop(model);

    let source = vec![1u8; weight_bytes];
    let mut target = vec![0u8; weight_bytes];
    group.bench_function("weights_copy_floor", |b| {
        b.iter_custom(|iters| {
            floor_mean.time(iters, || {
                target.copy_from_slice(black_box(&source));
                black_box(&mut target);
            })
        });
    });
    group.finish();
    if [&ordinary_mean, &retained_mean, &prefill_mean, &floor_mean].iter().any(|m| m.iterations.get() == 0) {
        eprintln!("{group_name}: some rows were not timed (a filter): no ratios");
        return None;
    }
    let floor = floor_mean.per_second();
    let (ordinary, retained) = (ordinary_mean.per_second(), retained_mean.per_second());
    let prefill = prefill_mean.per_second() * f64::from(PREFILL_TOKENS);
    eprintln!("{group_name}: weights per token: {weight_bytes} bytes; weights-copy floor {floor:.1} tok/s");
    eprintln!("{group_name}: decode ordinary {ordinary:.1} tok/s = {:.2} x floor", ordinary / floor);
    eprintln!("{group_name}: decode retained {retained:.1} tok/s = {:.2} x floor", retained / floor);
    eprintln!(
        "{group_name}: prefill of {PREFILL_TOKENS} tokens {prefill:.1} tok/s = {:.1} x ordinary decode, {:.1} x \
         retained decode",
        prefill / ordinary,
        prefill / retained
    );
    Some(Rates { ordinary, retained, prefill })
}

criterion_group!(benches, decode);
criterion_main!(benches);
