//! Prompt-prefix reuse (`Session::set_prefix_reuse`): a second turn whose prompt starts with
//! the first turn's prompt and answer keeps their KV rows and prefills only the new tokens, and
//! samples the tokens, with the log-probabilities' bits, that a fresh session prefilling the
//! whole prompt samples. On the tiny llama (KV only) any common prefix is kept; on the tiny
//! lfm2 and qwen35 (convolution and recurrent state) only a prompt that continues the whole
//! held sequence is, and any other starts from zeroed state. On the retained route the kept
//! prefix is followed by a prompt pass of ordinary launches and the decode after it replays.

use std::ops::ControlFlow;

use engine::model::{GenerateOptions, Session};
use engine::replay::{Backend, ReplayConfig};
use gguf::Gguf;
use pm4_encoding::Target;
use soft_device::SimDevice;
use tokenizer::{LogitsConfig, SamplerConfig};

fn options(max_tokens: u32) -> GenerateOptions {
    GenerateOptions {
        max_tokens,
        sampler: SamplerConfig { temperature: 0.0, ..SamplerConfig::default() },
        stop: Vec::new(),
        logits: LogitsConfig::default(),
        top_logprobs: Some(4),
    }
}

/// A sampled token, the bits of its log-probability, and its top 4 (ids and bits).
type Record = (u32, u32, Vec<(u32, u32)>);

/// A generation's tokens and their records.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    tokens: Vec<u32>,
    logprobs: Vec<Record>,
}

fn run(session: &mut Session<SimDevice>, prompt: &[u32], max_tokens: u32) -> (Outcome, usize) {
    let mut logprobs = Vec::new();
    let generation = session
        .generate_with(prompt, &options(max_tokens), |output| {
            if let (Some(record), Some(_)) = (output.logprobs, output.token) {
                let top = record.top.iter().map(|&(id, p)| (id, p.to_bits())).collect();
                logprobs.push((record.token, record.logprob.to_bits(), top));
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    (Outcome { tokens: generation.tokens, logprobs }, generation.cached_tokens)
}

fn ordinary() -> ReplayConfig {
    ReplayConfig { backend: Backend::Hip, explicit: true, ..ReplayConfig::default() }
}

/// What a fresh session without reuse samples from `prompt`.
fn fresh(file: &Gguf, prompt: &[u32], max_tokens: u32) -> Outcome {
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), file, 128, ordinary()).unwrap();
    run(&mut session, prompt, max_tokens).0
}

/// The first turn's prompt and answer as the device holds them: every generated token but the
/// last was forwarded.
fn held(prompt: &[u32], answer: &[u32]) -> Vec<u32> {
    let mut held = prompt.to_vec();
    held.extend_from_slice(&answer[..answer.len() - 1]);
    held
}

#[test]
fn a_kv_only_model_keeps_the_common_prefix_and_samples_what_a_full_prefill_samples() {
    let file = Gguf::parse(gguf::tiny_llama(&gguf::TinyLlamaConfig::default())).unwrap();
    for chunk in [1, 64] {
        let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file, 128, ordinary()).unwrap();
        session.set_prefill_chunk(chunk);
        session.set_prefix_reuse(true);
        let first: Vec<u32> = (0..20).map(|i| (i * 7 + 3) % 60 + 1).collect();
        let (one, cached) = run(&mut session, &first, 12);
        assert_eq!(cached, 0, "chunk {chunk}: nothing is held before the first turn");
        assert_eq!(one, fresh(&file, &first, 12), "chunk {chunk}");
        let kept = held(&first, &one.tokens);
        assert_eq!(session.held_tokens(), kept.len(), "chunk {chunk}");
        // The next turn: the whole history, then new tokens.
        let mut second = kept.clone();
        second.extend([5, 17, 29, 41]);
        let (two, cached) = run(&mut session, &second, 12);
        assert_eq!(cached, kept.len(), "chunk {chunk}: the history is kept");
        assert_eq!(two, fresh(&file, &second, 12), "chunk {chunk}: the second turn");
        // A prompt that leaves the history at token 9 keeps the nine before it.
        let mut third = second[..9].to_vec();
        third.extend([2, 4, 6]);
        let (three, cached) = run(&mut session, &third, 8);
        assert_eq!(cached, 9, "chunk {chunk}");
        assert_eq!(three, fresh(&file, &third, 8), "chunk {chunk}: a diverging prompt");
        // The same prompt again: all but its last token is kept.
        let (again, cached) = run(&mut session, &third, 8);
        assert_eq!((again, cached), (three, third.len() - 1), "chunk {chunk}: the same prompt again");
    }
}

#[test]
fn reuse_is_off_by_default_and_a_new_sequence_or_a_swap_forgets_what_is_held() {
    let file = Gguf::parse(gguf::tiny_llama(&gguf::TinyLlamaConfig::default())).unwrap();
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file, 128, ordinary()).unwrap();
    let prompt = [3u32, 9, 27, 14];
    let (_, cached) = run(&mut session, &prompt, 4);
    assert_eq!(cached, 0);
    assert_eq!(run(&mut session, &prompt, 4).1, 0, "off by default");
    session.set_prefix_reuse(true);
    let _ = run(&mut session, &prompt, 4);
    assert_eq!(run(&mut session, &prompt, 4).1, 3);
    session.begin_sequence().unwrap();
    assert_eq!(session.held_tokens(), 0);
    assert_eq!(run(&mut session, &prompt, 4).1, 0, "after begin_sequence");
    let admission = session.admission().clone();
    session.reconfigure(&file, 128, admission, "a reload").unwrap();
    assert_eq!(session.held_tokens(), 0);
    assert_eq!(run(&mut session, &prompt, 4).1, 0, "after a model swap, even of the same file");
}

#[test]
fn a_model_with_sequence_state_keeps_only_a_whole_held_sequence() {
    let files = [
        ("lfm2", gguf::tiny_lfm2(&gguf::TinyLfm2Config::default())),
        ("qwen35", gguf::tiny_qwen35(&gguf::TinyQwen35Config::default())),
    ];
    for (architecture, bytes) in files {
        let file = Gguf::parse(bytes).unwrap();
        let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file, 128, ordinary()).unwrap();
        session.set_prefix_reuse(true);
        let first = [5u32, 9, 14, 20, 3, 11];
        let (one, _) = run(&mut session, &first, 6);
        let kept = held(&first, &one.tokens);
        let mut second = kept.clone();
        second.extend([7, 2, 30]);
        let (two, cached) = run(&mut session, &second, 6);
        assert_eq!(cached, kept.len(), "{architecture}: the whole held sequence is continued");
        assert_eq!(two, fresh(&file, &second, 6), "{architecture}: the continuing turn");
        // A prompt that shares only a prefix: the state is past it, so nothing is kept.
        let mut third = second[..4].to_vec();
        third.extend([1, 2]);
        let (three, cached) = run(&mut session, &third, 6);
        assert_eq!(cached, 0, "{architecture}: a shared prefix of a stateful sequence is not kept");
        assert_eq!(three, fresh(&file, &third, 6), "{architecture}: the diverging turn");
    }
}

#[test]
fn on_the_retained_route_the_decode_after_a_kept_prefix_replays_and_changes_no_bit() {
    let file = Gguf::parse(gguf::tiny_llama(&gguf::TinyLlamaConfig::default())).unwrap();
    let validated =
        ReplayConfig { backend: Backend::Auto, explicit: true, validate_first: true, ..ReplayConfig::default() };
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file, 128, validated).unwrap();
    session.set_prefix_reuse(true);
    let first = [4u32, 8, 15, 16, 23, 42];
    // 3 recorded warm-ups and 8 shadow-validated positions, then the retained route.
    let (one, _) = run(&mut session, &first, 16);
    assert_eq!(session.route_proof().state, "ready");
    let mut second = held(&first, &one.tokens);
    second.extend([1, 2, 3]);
    let before = session.route_proof().observations;
    let (two, cached) = run(&mut session, &second, 10);
    let after = session.route_proof().observations;
    assert_eq!(cached, second.len() - 3);
    let forwards = u64::try_from(two.tokens.len() - 1).unwrap();
    assert_eq!(after.retained - before.retained, forwards, "every decode forward after the kept prefix replays");
    assert_eq!(after.fallbacks, 0);
    assert_eq!(two, fresh(&file, &second, 10), "the ordinary route without reuse");
    let first_replayed = u32::try_from(second.len()).unwrap();
    assert!(after.replay_positions.contains(&first_replayed), "{:?}", after.replay_positions);
}
