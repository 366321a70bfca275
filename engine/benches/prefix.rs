//! Time to first token of a chat's second turn with and without prompt-prefix reuse
//! (`Session::set_prefix_reuse`), on the soft device, in one run: the reference model
//! (SmolLM2-135M-Instruct, `REDLINE_SMOLLM2_GGUF`) when named, else the tiny built-in llama.
//!
//! The first turn's prompt is a 420-token history; the second turn's is the history, the first
//! answer's 8 tokens and 24 new tokens. Each timed call generates one token from the second
//! turn's prompt:
//!
//! - `whole_prompt`: reuse off, the whole prompt is prefilled;
//! - `kept_history`: reuse on, with the device holding the first turn (restored, untimed, before
//!   each call), so only the answer's last token and the new ones are prefilled.
//!
//! The ratio `whole_prompt / kept_history` is printed at the end: how much sooner the second
//! turn's first token comes.

use std::cell::Cell;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use engine::model::{GenerateOptions, Session};
use engine::replay::{Backend, ReplayConfig};
use gguf::Gguf;
use pm4_encoding::Target;
use soft_device::SimDevice;
use tokenizer::{LogitsConfig, SamplerConfig};

const HISTORY: usize = 420;
const ANSWER: u32 = 8;
const NEW: usize = 24;

fn options(max_tokens: u32) -> GenerateOptions {
    GenerateOptions {
        max_tokens,
        sampler: SamplerConfig { temperature: 0.0, ..SamplerConfig::default() },
        stop: Vec::new(),
        logits: LogitsConfig::default(),
        top_logprobs: None,
    }
}

fn generate(session: &mut Session<SimDevice>, prompt: &[u32], max_tokens: u32) -> Vec<u32> {
    session.generate(prompt, &options(max_tokens), |_| ControlFlow::Continue(())).unwrap().tokens
}

fn prefix(c: &mut Criterion) {
    let (name, file) = match std::env::var("REDLINE_SMOLLM2_GGUF") {
        Ok(path) => ("smollm2", Gguf::open(&path).unwrap()),
        Err(_) => ("tiny", Gguf::parse(gguf::tiny_llama(&gguf::TinyLlamaConfig::default())).unwrap()),
    };
    let config = ReplayConfig { backend: Backend::Hip, explicit: true, ..ReplayConfig::default() };
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file, 1024, config).unwrap();
    let vocab = u32::try_from(session.tokenizer().vocab_size()).unwrap();
    // Ordinary word tokens, far from the special ones at the start of the vocabulary.
    let token = |i: usize| 300 + u32::try_from(i * 37).unwrap() % (vocab - 300);
    let history: Vec<u32> = (0..HISTORY).map(token).collect();
    let answer = generate(&mut session, &history, ANSWER);
    let mut second = history.clone();
    second.extend_from_slice(&answer);
    second.extend((HISTORY..HISTORY + NEW).map(token));
    let mut group = c.benchmark_group(format!("prefix_{name}"));
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(10));
    let whole = Cell::new(Duration::ZERO);
    let kept = Cell::new(Duration::ZERO);
    group.bench_function("whole_prompt", |b| {
        session.set_prefix_reuse(false);
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                generate(&mut session, &second, 1);
            }
            let elapsed = start.elapsed();
            whole.set(elapsed / u32::try_from(iters).unwrap());
            elapsed
        });
    });
    group.bench_function("kept_history", |b| {
        session.set_prefix_reuse(true);
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                // The first turn again (all but its last prompt token kept): the device holds
                // the history and the answer, as after a chat's first turn.
                assert_eq!(generate(&mut session, &history, ANSWER), answer);
                let start = Instant::now();
                generate(&mut session, &second, 1);
                elapsed += start.elapsed();
            }
            kept.set(elapsed / u32::try_from(iters).unwrap());
            elapsed
        });
    });
    group.finish();
    println!(
        "prefix_{name}: second turn of {} prompt tokens, {} kept: time to first token {:.1} ms whole, {:.1} ms kept: {:.2}x sooner",
        second.len(),
        second.len() - NEW - 1,
        whole.get().as_secs_f64() * 1e3,
        kept.get().as_secs_f64() * 1e3,
        whole.get().as_secs_f64() / kept.get().as_secs_f64()
    );
}

criterion_group!(benches, prefix);
criterion_main!(benches);
