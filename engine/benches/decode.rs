//! Decode tokens per second of the reference model (SmolLM2-135M-Instruct, the GGUF named by
//! `REDLINE_SMOLLM2_GGUF`; `redline pull smollm2-135m` fetches it), of Gemma 3 270M (Q4_K_M,
//! `REDLINE_GEMMA3_GGUF`; `redline pull gemma-3-270m`) and of the LFM2-350M and Qwen3.5-0.8B
//! shapes (`REDLINE_LFM2_GGUF`, `REDLINE_QWEN35_GGUF`, see [`MODELS`]) when their files are named,
//! on the soft device, through the ordinary route and the retained route, at context 16 and at
//! context 512, each next to this machine's memory floor for the same token, all in one run.
//! Each model is a group of its own (`decode_smollm2`, `decode_gemma3`, `decode_lfm2`,
//! `decode_qwen35`), which also prints the retained tape's identity (dispatches, unique kernels,
//! external launches, sequence hash):
//!
//! - `ordinary_ctx16`, `ordinary_ctx512`: one decode forward with backend `hip` (483 launches
//!   through the funnel for SmolLM2, 364 for Gemma 3 270M), then its logits read back (where the
//!   host waits for the launches), at positions `16..20` (`512..516`), in turn.
//! - `retained_ctx16`, `retained_ctx512`: the same through a `Ready` controller (one PM4-IB
//!   submission a token). Every timed token is a replay (checked).
//! - `prefill_128`: a 128-token prompt as one batched prefill pass (ordinary launches of the
//!   batched kernels), then the last token's logits read back.
//! - `read_floor_ctx16`, `read_floor_ctx512`: reading, once, as many bytes as one token at that
//!   context must read (the weights, the KV rows in use, the sequence state, the activations:
//!   [`floor`] defines them and prints them by kind) on every core, with the fastest streaming read
//!   this machine does ([`floor::read`]). Its tok/s is the most a decode that is bound by memory
//!   could do here.
//!
//! A timed token continues the one before it; after the last position of a window the arm moves
//! back to the window's first position with an ordinary prompt forward at the position before
//! it, outside the timed region. Tokens per second are `1 / time` (`128 / time` for the
//! prefill); the ratios printed at the end of each group, from the same measurements, are the
//! result (the machine is shared): each decode route as a fraction of the floor's tok/s at its
//! context, retained over ordinary, and the prefill's tok/s as a multiple of the floor's at
//! context 16. The soft device runs every kernel's CPU reference with its strict checks on.

#[path = "decode/floor.rs"]
mod floor;

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

/// KV positions of every arm (the model's trained context when it is shorter; a context whose
/// window does not fit is not timed).
const CONTEXT: u32 = 1024;
/// Warm-up positions `0..FIRST` of every arm (the retained arm records, calibrates and prepares
/// its tape there).
const FIRST: u32 = 8;
/// The contexts decode is timed at: the first position of each window.
const CONTEXTS: [u32; 2] = [16, 512];
/// Positions a window holds: tokens are timed at `start..start + WINDOW`, in turn.
const WINDOW: u32 = 4;
/// Prompt tokens of the prefill row: one batched pass of either model.
const PREFILL_TOKENS: u32 = 128;
/// The token every decode step embeds (modulo a smaller vocabulary).
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
    /// The position the next timed token decodes.
    position: u32,
    /// Timed tokens.
    timed: u64,
}

impl Arm {
    fn new(file: &Gguf, backend: Backend) -> Self {
        let mut device = SimDevice::new(Target::Gfx1100);
        let model = language::load(&mut device, file, context_of(file)).unwrap();
        let mut controller = ReplayController::new(ReplayConfig { backend, explicit: true, ..ReplayConfig::default() });
        controller.configure_model_default(true);
        let mut arm = Self { device, model, funnel: Funnel::new(4096), controller, position: FIRST, timed: 0 };
        // Prefill-like warm-up; the retained arm records, calibrates and prepares here.
        for position in 0..FIRST {
            arm.forward(position, if position == 0 { Step::Prompt } else { Step::Continuation });
        }
        arm
    }

    /// One forward at `position`, and its logits read back (a token ends with its logits: a
    /// forward returns once its launches are published).
    fn forward(&mut self, position: u32, step: Step) {
        self.model.set_token(TOKEN % self.model.vocab()).unwrap();
        self.controller.forward(&mut self.device, &mut self.funnel, self.model.as_mut(), position, step).unwrap();
        black_box(self.model.logits(&mut self.device).unwrap());
    }

    /// Times `iters` tokens at the positions of the window starting at `start`, in turn, adding
    /// them to `mean`; moving back to `start` is not timed.
    fn time(&mut self, mean: &Mean, iters: u64, start: u32) -> Duration {
        let mut elapsed = Duration::ZERO;
        for _ in 0..iters {
            if !(start..start + WINDOW).contains(&self.position) {
                self.forward(start - 1, Step::Prompt);
                self.position = start;
            }
            let begun = Instant::now();
            self.forward(self.position, Step::Continuation);
            elapsed += begun.elapsed();
            self.position += 1;
        }
        self.timed += iters;
        mean.add(elapsed, iters);
        elapsed
    }
}

/// Mean time per iteration over every timed iteration of a row (criterion's warm-up included).
#[derive(Default)]
struct Mean {
    total: Cell<Duration>,
    iterations: Cell<u64>,
}

impl Mean {
    fn add(&self, elapsed: Duration, iters: u64) {
        self.total.set(self.total.get() + elapsed);
        self.iterations.set(self.iterations.get() + iters);
    }

    /// Times `iters` calls of `f`, adding them to the mean.
    fn time(&self, iters: u64, mut f: impl FnMut()) -> Duration {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        let elapsed = start.elapsed();
        self.add(elapsed, iters);
        elapsed
    }

    /// Iterations per second.
    fn per_second(&self) -> f64 {
        let iterations = self.iterations.get() as f64;
        iterations / self.total.get().as_secs_f64().max(f64::MIN_POSITIVE)
    }

    fn timed(&self) -> bool {
        self.iterations.get() > 0
    }
}

fn decode(c: &mut Criterion) {
    for (group, key) in MODELS {
        let Ok(path) = std::env::var(key) else {
            eprintln!("{key} is not set: {group} not run (`redline pull` fetches the model; point {key} at the GGUF)");
            continue;
        };
        bench_model(c, group, &Gguf::open(&path).unwrap());
    }
}

/// The rows of `group` for the model in `file`, and the ratios they measured.
fn bench_model(c: &mut Criterion, group_name: &str, file: &Gguf) {
    let mut group = c.benchmark_group(group_name);
    group.sample_size(10).warm_up_time(Duration::from_secs(2)).measurement_time(Duration::from_secs(10));
    let means: [[Mean; 3]; 2] = Default::default();
    let prefill_mean = Mean::default();

    let mut ordinary = Arm::new(file, Backend::Hip);
    let mut retained = Arm::new(file, Backend::Auto);
    assert_eq!(retained.controller.state(), &State::Ready, "the retained arm is prepared");
    let replays_before = retained.controller.observations().retained;
    if let Some(tape) = retained.controller.tape() {
        let id = tape.identity();
        let hash: String = id.sequence_hash.iter().map(|b| format!("{b:02x}")).collect();
        eprintln!(
            "{group_name}: retained tape: {} dispatches, {} unique kernels, {} external launches, sequence hash {hash}",
            id.dispatch_count, id.unique_kernels, id.external_launches
        );
    }
    let floor = floor::Floor::of(file, ordinary.model.as_ref());
    let fits = |context: &u32| context + WINDOW <= context_of(file);
    for (context, [ordinary_mean, retained_mean, floor_mean]) in CONTEXTS.into_iter().zip(&means) {
        if !fits(&context) {
            eprintln!("{group_name}: context {context} is past the model's trained context: not timed");
            continue;
        }
        group.bench_function(format!("ordinary_ctx{context}"), |b| {
            b.iter_custom(|iters| ordinary.time(ordinary_mean, iters, context));
        });
        group.bench_function(format!("retained_ctx{context}"), |b| {
            b.iter_custom(|iters| retained.time(retained_mean, iters, context));
        });
        let bytes = floor.mean(context..context + WINDOW);
        let words = vec![1u64; usize::try_from(bytes.total().div_ceil(8)).unwrap()];
        group.bench_function(format!("read_floor_ctx{context}"), |b| {
            b.iter_custom(|iters| {
                floor_mean.time(iters, || {
                    black_box(floor::read(black_box(&words)));
                })
            });
        });
    }
    // Every timed token of the retained arm replayed; the moves back to a window's start did not.
    let replays = retained.controller.observations().retained - replays_before;
    assert_eq!(replays, retained.timed, "every timed retained token is a replay");
    assert_eq!(retained.controller.state(), &State::Ready);
    assert_eq!(ordinary.controller.observations().retained, 0, "the ordinary arm replays nothing");
    drop((ordinary, retained));

    let mut device = SimDevice::new(Target::Gfx1100);
    let mut model = language::load(&mut device, file, context_of(file)).unwrap();
    assert!(model.prefill_chunk() >= PREFILL_TOKENS, "the prompt is one batched pass");
    let mut funnel = Funnel::new(4096);
    let prompt: Vec<u32> = (0..PREFILL_TOKENS).map(|i| (1000 + 37 * i) % model.vocab()).collect();
    group.bench_function("prefill_128", |b| {
        b.iter_custom(|iters| {
            prefill_mean.time(iters, || {
                model.prefill(&mut device, &mut funnel, 0, &prompt).unwrap();
                black_box(model.logits(&mut device).unwrap());
            })
        });
    });
    drop(model);
    group.finish();

    for (context, [ordinary, retained, read]) in CONTEXTS.into_iter().zip(&means) {
        if [ordinary, retained, read].iter().any(|m| !m.timed()) {
            eprintln!("{group_name}: context {context}: some rows were not timed (a filter or the context): no ratios");
            continue;
        }
        let (ordinary, retained, read) = (ordinary.per_second(), retained.per_second(), read.per_second());
        let bytes = floor.mean(context..context + WINDOW);
        eprintln!(
            "{group_name}: context {context}: a token reads {bytes}; read floor {read:.1} tok/s ({:.1} GB/s)",
            read * bytes.total() as f64 / 1e9
        );
        eprintln!(
            "{group_name}: context {context}: decode ordinary {ordinary:.1} tok/s = {:.3} x floor, retained \
             {retained:.1} tok/s = {:.3} x floor, retained / ordinary = {:.3}",
            ordinary / read,
            retained / read,
            retained / ordinary
        );
    }
    if !prefill_mean.timed() || !means[0][2].timed() {
        return;
    }
    let prefill = prefill_mean.per_second() * f64::from(PREFILL_TOKENS);
    eprintln!(
        "{group_name}: prefill of {PREFILL_TOKENS} tokens {prefill:.1} tok/s = {:.2} x the context-16 read floor",
        prefill / means[0][2].per_second()
    );
}

/// The KV positions of the arms: [`CONTEXT`], or the model's trained context when shorter.
fn context_of(file: &Gguf) -> u32 {
    let params = engine::model::language::ModelParams::from_gguf(file).expect("the model's parameters read");
    CONTEXT.min(params.context_train())
}

criterion_group!(benches, decode);
criterion_main!(benches);
