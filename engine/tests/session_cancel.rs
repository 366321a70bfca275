//! `Session::generate` stops when its text callback asks it to, in the decode or in the
//! prefill: the tokens before the stop are the same as an uninterrupted generation's, the finish
//! reason says `cancelled`, and the session generates normally afterwards.

use std::ops::ControlFlow;

use engine::model::{GenerateOptions, Session};
use engine::replay::ReplayConfig;
use gguf::{Gguf, TinyLlamaConfig, tiny_llama};
use pm4_encoding::Target;
use soft_device::SimDevice;
use tokenizer::{LogitsConfig, SamplerConfig};

fn session() -> Session<SimDevice> {
    let file = Gguf::parse(tiny_llama(&TinyLlamaConfig::default())).unwrap();
    Session::new(SimDevice::new(Target::Gfx1100), &file, 64, ReplayConfig::default()).unwrap()
}

#[test]
fn breaking_from_on_text_cancels_before_the_next_forward() {
    let mut session = session();
    let prompt = session.tokenizer().encode("the cat", false);
    let options = GenerateOptions {
        max_tokens: 24,
        sampler: SamplerConfig::default(),
        stop: Vec::new(),
        logits: LogitsConfig::default(),
        top_logprobs: None,
    };
    let full = session.generate(&prompt, &options, |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(full.tokens.len(), 24, "the tiny model should not stop early: {:?}", full.finish_reason);

    // The callback is asked once per prefill pass but the last (the prompt is one pass), then
    // once per token: stop at the fifth generated token.
    assert!(prompt.len() <= usize::try_from(session.prefill_chunk()).unwrap());
    let stop_at = 5;
    let mut calls = 0;
    let cancelled = session
        .generate(&prompt, &options, |_| {
            calls += 1;
            if calls == stop_at { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        })
        .unwrap();
    assert_eq!(cancelled.finish_reason, "cancelled");
    assert_eq!(cancelled.tokens, full.tokens[..5]);
    assert_eq!(calls, stop_at, "no callback after the break");
    assert!(cancelled.decode_forwards < 5, "{} decode forwards after the break", cancelled.decode_forwards);
    assert!(full.text.starts_with(&cancelled.text));

    // Over a prompt of several passes (two tokens each here), the callback is asked after every
    // pass but the last.
    session.set_prefill_chunk(2);
    assert_eq!(session.prefill_chunk(), 2);
    let long = session.tokenizer().encode("a long prompt of many tokens", false);
    let passes = long.len().div_ceil(2);
    let mut prefill_calls = 0;
    let stopped = session
        .generate(&long, &options, |piece| {
            assert_eq!(piece, "", "no text during the prefill");
            prefill_calls += 1;
            if prefill_calls == 3 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        })
        .unwrap();
    assert!(passes > 4, "{long:?}");
    assert_eq!((stopped.finish_reason, stopped.tokens.len(), prefill_calls), ("cancelled", 0, 3));
    let mut calls = 0;
    let whole = session
        .generate(&long, &options, |_| {
            calls += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(calls, passes - 1 + whole.tokens.len() + usize::from(whole.finish_reason == "length"));

    // Passes of two tokens, or the prompt step by step, give the one-pass tokens.
    for chunk in [2, 1] {
        session.set_prefill_chunk(chunk);
        let again = session.generate(&prompt, &options, |_| ControlFlow::Continue(())).unwrap();
        assert_eq!(again.tokens, full.tokens, "prefill chunk {chunk}");
        assert_eq!(again.finish_reason, "length");
    }
}
