//! `Session::generate_with` reports each token's log-probabilities from the logits the sampler
//! saw: the test decodes the same tokens step by step through the model itself, reads each
//! step's logits from the device, applies the penalties and the logit bias by OpenAI's formula
//! and takes the log-softmax here. Asking for log-probabilities changes no token.

use std::ops::ControlFlow;

use engine::funnel::Funnel;
use engine::model::{GenerateOptions, Llama, Session};
use engine::replay::{Backend, ReplayConfig, ReplayController, Step};
use gguf::{Gguf, TinyLlamaConfig, tiny_llama};
use pm4_encoding::Target;
use soft_device::SimDevice;
use tokenizer::{LogitsConfig, SamplerConfig, TokenLogprobs};

const CONTEXT: u32 = 64;
const TOP: usize = 5;

fn file() -> Gguf {
    Gguf::parse(tiny_llama(&TinyLlamaConfig::default())).unwrap()
}

fn options(sampler: SamplerConfig, logits: LogitsConfig, top_logprobs: Option<usize>) -> GenerateOptions {
    GenerateOptions { max_tokens: 16, sampler, stop: Vec::new(), logits, top_logprobs }
}

/// The generation and every token's reported log-probabilities, in order.
fn generate(prompt: &[u32], options: &GenerateOptions) -> (Vec<u32>, String, Vec<TokenLogprobs>) {
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file(), CONTEXT, ReplayConfig::default()).unwrap();
    let mut records = Vec::new();
    let generation = session
        .generate_with(prompt, options, |output| {
            assert_eq!(output.logprobs.is_some(), options.top_logprobs.is_some() && output.token.is_some());
            if let Some(record) = output.logprobs {
                assert_eq!(Some(record.token), output.token);
                records.push(record.clone());
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    (generation.tokens, generation.text, records)
}

/// Every step's logits, read from the device, of `prompt` followed by `tokens`, run one token at
/// a time on ordinary launches.
fn device_logits(prompt: &[u32], tokens: &[u32]) -> Vec<Vec<f32>> {
    let mut device = SimDevice::new(Target::Gfx1100);
    let mut model = Llama::load(&mut device, &file(), CONTEXT).unwrap();
    let mut funnel = Funnel::new(4096);
    let mut controller = ReplayController::new(ReplayConfig { backend: Backend::Hip, ..ReplayConfig::default() });
    let mut position = 0;
    for &token in prompt {
        model.set_token(token).unwrap();
        controller.forward(&mut device, &mut funnel, &mut model, position, Step::Prompt).unwrap();
        position += 1;
    }
    let mut all = Vec::new();
    for &token in tokens {
        all.push(model.logits(&mut device).unwrap());
        model.set_token(token).unwrap();
        controller.forward(&mut device, &mut funnel, &mut model, position, Step::Continuation).unwrap();
        position += 1;
    }
    all
}

/// OpenAI's penalties and bias over `logits`, given the tokens generated before this step.
#[allow(clippy::cast_possible_truncation)]
fn penalized(logits: &[f32], before: &[u32], config: &LogitsConfig) -> Vec<f64> {
    let mut out: Vec<f64> = logits.iter().map(|&l| f64::from(l)).collect();
    for &(id, bias) in &config.logit_bias {
        out[usize::try_from(id).unwrap()] += f64::from(bias);
    }
    for (id, value) in out.iter_mut().enumerate() {
        let count = before.iter().filter(|&&t| usize::try_from(t).unwrap() == id).count();
        let count = f64::from(u32::try_from(count).unwrap());
        if count > 0.0 {
            *value -= count * f64::from(config.frequency_penalty) + f64::from(config.presence_penalty);
        }
    }
    // CAST: the sampler sees f32 logits.
    out.iter().map(|&v| f64::from(v as f32)).collect()
}

/// The log-softmax of `logits`, summed from the largest term down.
fn log_softmax(logits: &[f64]) -> Vec<f64> {
    let mut sorted = logits.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let max = sorted[0];
    let log_sum = max + sorted.iter().map(|l| (l - max).exp()).sum::<f64>().ln();
    logits.iter().map(|l| l - log_sum).collect()
}

fn close(reported: f32, expected: f64) -> bool {
    (f64::from(reported) - expected).abs() <= 1e-6 * expected.abs().max(1.0)
}

#[test]
fn logprobs_are_the_log_softmax_of_the_logits_the_sampler_saw() {
    let prompt = [40, 41, 42, 43];
    let penalties =
        LogitsConfig { presence_penalty: 0.5, frequency_penalty: 0.75, logit_bias: vec![(70, 2.5), (5, -1.0)] };
    for config in [LogitsConfig::default(), penalties] {
        let (tokens, _, records) = generate(&prompt, &options(SamplerConfig::default(), config.clone(), Some(TOP)));
        assert_eq!(tokens.len(), 16, "the tiny model should not stop early");
        assert_eq!(records.len(), tokens.len());
        for (step, logits) in device_logits(&prompt, &tokens).iter().enumerate() {
            let seen = penalized(logits, &tokens[..step], &config);
            let expected = log_softmax(&seen);
            let mut order: Vec<usize> = (0..seen.len()).collect();
            order.sort_by(|&a, &b| seen[b].total_cmp(&seen[a]).then(a.cmp(&b)));
            let record = &records[step];
            // Greedy: the sampled token is the best after the penalties, and the first alternative.
            assert_eq!(usize::try_from(record.token).unwrap(), order[0], "step {step} with {config:?}");
            assert!(
                close(record.logprob, expected[order[0]]),
                "step {step}: {} vs {}",
                record.logprob,
                expected[order[0]]
            );
            assert_eq!(record.top.len(), TOP);
            for (&(id, logprob), &best) in record.top.iter().zip(&order) {
                assert_eq!(usize::try_from(id).unwrap(), best, "step {step}: {:?}", record.top);
                assert!(close(logprob, expected[best]), "step {step} token {id}: {logprob} vs {}", expected[best]);
            }
        }
    }
}

#[test]
fn penalties_change_the_greedy_tokens() {
    let prompt = [40, 41, 42, 43];
    let (plain, _, _) = generate(&prompt, &options(SamplerConfig::default(), LogitsConfig::default(), None));
    let repeat = LogitsConfig { frequency_penalty: 2.0, presence_penalty: 2.0, ..LogitsConfig::default() };
    let (penalized, _, _) = generate(&prompt, &options(SamplerConfig::default(), repeat, None));
    assert_ne!(plain, penalized);
    let distinct = |tokens: &[u32]| tokens.iter().collect::<std::collections::BTreeSet<_>>().len();
    assert!(distinct(&penalized) >= distinct(&plain), "{plain:?} {penalized:?}");
}

#[test]
fn asking_for_logprobs_changes_no_token() {
    let prompt = [50, 60, 70];
    let sampled = SamplerConfig { temperature: 1.0, top_k: 0, top_p: 0.9, seed: 7 };
    let penalties = LogitsConfig { presence_penalty: -0.5, frequency_penalty: 0.25, logit_bias: vec![(99, 1.5)] };
    for sampler in [SamplerConfig::default(), sampled] {
        for config in [LogitsConfig::default(), penalties.clone()] {
            let (without, text, none) = generate(&prompt, &options(sampler, config.clone(), None));
            assert!(none.is_empty());
            for top in [0, 20] {
                let (with, with_text, records) = generate(&prompt, &options(sampler, config.clone(), Some(top)));
                assert_eq!((&with, &with_text), (&without, &text), "{sampler:?} {config:?} top {top}");
                assert_eq!(records.iter().map(|r| r.token).collect::<Vec<_>>(), with);
                assert!(records.iter().all(|r| r.top.len() == top && r.logprob <= 0.0));
            }
        }
    }
}

#[test]
fn too_many_alternatives_is_a_sampler_error() {
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), &file(), CONTEXT, ReplayConfig::default()).unwrap();
    let error = session
        .generate(&[40], &options(SamplerConfig::default(), LogitsConfig::default(), Some(21)), |_| {
            ControlFlow::Continue(())
        })
        .unwrap_err();
    assert_eq!(error.to_string(), "sampling: 21 top log-probabilities asked for; at most 20");
    let bias = LogitsConfig { logit_bias: vec![(1_000_000, 1.0)], ..LogitsConfig::default() };
    let error = session
        .generate(&[40], &options(SamplerConfig::default(), bias, None), |_| ControlFlow::Continue(()))
        .unwrap_err();
    assert!(error.to_string().contains("logit bias on token 1000000"), "{error}");
}
