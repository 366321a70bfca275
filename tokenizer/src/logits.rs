//! The logits between the model and the sampler: OpenAI's presence and frequency penalties and
//! logit bias, applied in place before sampling; and the log-probabilities of the logits the
//! sampler saw, for reporting.

use std::collections::BTreeMap;

use crate::error::SamplerError;

/// The largest magnitude of a presence or frequency penalty (OpenAI's range is [-2, 2]).
pub const PENALTY_MAX: f32 = 2.0;

/// The largest magnitude of a logit bias (OpenAI's range is [-100, 100]).
pub const BIAS_MAX: f32 = 100.0;

/// The most alternatives [`log_probabilities`] reports per token (OpenAI's chat limit).
pub const TOP_LOGPROBS_MAX: usize = 20;

/// What is done to the logits before sampling. The default changes nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogitsConfig {
    /// Subtracted once from the logit of every token generated at least once so far.
    pub presence_penalty: f32,
    /// Subtracted from the logit of every token once per time it was generated so far.
    pub frequency_penalty: f32,
    /// `(token id, bias)`: added to that token's logit at every step.
    pub logit_bias: Vec<(u32, f32)>,
}

impl LogitsConfig {
    /// Whether the configuration leaves every logit as it is.
    #[must_use]
    pub fn is_identity(&self) -> bool {
        self.presence_penalty == 0.0 && self.frequency_penalty == 0.0 && self.logit_bias.is_empty()
    }

    fn penalizes(&self) -> bool {
        self.presence_penalty != 0.0 || self.frequency_penalty != 0.0
    }
}

/// Applies a [`LogitsConfig`] over one generation, counting the tokens it generates.
#[derive(Debug, Clone)]
pub struct LogitsProcessor {
    config: LogitsConfig,
    /// How often each token was generated; kept only while a penalty is set, so that a
    /// generation without one does no per-token work here.
    counts: BTreeMap<u32, u32>,
}

impl LogitsProcessor {
    /// Validates `config`: penalties finite and within ±[`PENALTY_MAX`], biases finite and within
    /// ±[`BIAS_MAX`].
    ///
    /// # Errors
    /// [`SamplerError::Penalty`] or [`SamplerError::LogitBias`] naming the value.
    pub fn new(config: LogitsConfig) -> Result<Self, SamplerError> {
        for (name, value) in [("presence", config.presence_penalty), ("frequency", config.frequency_penalty)] {
            if !(value.is_finite() && value.abs() <= PENALTY_MAX) {
                return Err(SamplerError::Penalty { name, value, limit: PENALTY_MAX });
            }
        }
        if let Some(&(id, value)) = config.logit_bias.iter().find(|(_, b)| !(b.is_finite() && b.abs() <= BIAS_MAX)) {
            return Err(SamplerError::LogitBias { id, value, limit: BIAS_MAX });
        }
        Ok(Self { config, counts: BTreeMap::new() })
    }

    /// Adds the biases and subtracts the penalties of the tokens accepted so far:
    /// `logit[j] += bias[j] - count[j] * frequency_penalty - (count[j] > 0) * presence_penalty`,
    /// computed in f64 and rounded once. A `-inf` logit stays `-inf`.
    ///
    /// # Errors
    /// [`SamplerError::BiasIdOutOfRange`] for a bias on a token id with no logit.
    pub fn apply(&self, logits: &mut [f32]) -> Result<(), SamplerError> {
        if self.config.is_identity() {
            return Ok(());
        }
        for &(id, bias) in &self.config.logit_bias {
            adjust(logits, id, f64::from(bias))?;
        }
        let (presence, frequency) = (f64::from(self.config.presence_penalty), f64::from(self.config.frequency_penalty));
        for (&id, &count) in &self.counts {
            adjust(logits, id, -(f64::from(count) * frequency + presence))?;
        }
        Ok(())
    }

    /// Counts `token` as generated (for the penalties of the steps after it).
    pub fn accept(&mut self, token: u32) {
        if self.config.penalizes() {
            *self.counts.entry(token).or_insert(0) += 1;
        }
    }
}

/// Adds `delta` to the logit of `id`.
fn adjust(logits: &mut [f32], id: u32, delta: f64) -> Result<(), SamplerError> {
    let vocab_size = logits.len();
    let logit = usize::try_from(id)
        .ok()
        .and_then(|index| logits.get_mut(index))
        .ok_or(SamplerError::BiasIdOutOfRange { id, vocab_size })?;
    *logit = to_f32(f64::from(*logit) + delta);
    Ok(())
}

/// The log-probabilities of one sampled token and of the most likely tokens at its step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenLogprobs {
    /// The sampled token.
    pub token: u32,
    /// Its log-probability.
    pub logprob: f32,
    /// The most likely tokens with their log-probabilities, most likely first; equal logits in
    /// ascending id order, as the greedy sampler breaks ties, so the first is the greedy token.
    pub top: Vec<(u32, f32)>,
}

/// Fills `out` with the log-softmax of `logits` (computed in f64, reported as f32) for `token`
/// and the `top` most likely tokens (fewer when fewer have a finite logit). `out.top` keeps its
/// capacity, so a caller reusing `out` allocates only on the first step.
///
/// # Errors
/// The logits errors of [`crate::Sampler::sample`]; [`SamplerError::TopLogprobs`] for `top`
/// over [`TOP_LOGPROBS_MAX`]; [`SamplerError::TokenOutOfRange`] for a `token` with no logit.
pub fn log_probabilities(logits: &[f32], token: u32, top: usize, out: &mut TokenLogprobs) -> Result<(), SamplerError> {
    crate::sampler::check_logits(logits)?;
    if top > TOP_LOGPROBS_MAX {
        return Err(SamplerError::TopLogprobs { value: top, limit: TOP_LOGPROBS_MAX });
    }
    let chosen = usize::try_from(token)
        .ok()
        .and_then(|index| logits.get(index))
        .ok_or(SamplerError::TokenOutOfRange { id: token, vocab_size: logits.len() })?;
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let max = f64::from(max);
    let sum: f64 = logits.iter().map(|&l| (f64::from(l) - max).exp()).sum();
    // check_logits left at least one finite logit: its term is exp(0) = 1, so `sum` >= 1.
    let log_sum = max + sum.ln();
    // A finite logit gets a finite log-probability, even where logits span more than f32's range.
    let logprob = |logit: f32| {
        let value = to_f32(f64::from(logit) - log_sum);
        if logit.is_finite() { value.max(f32::MIN) } else { value }
    };
    out.token = token;
    out.logprob = logprob(*chosen);
    out.top.clear();
    out.top.reserve(top + 1);
    if top > 0 {
        for (id, &logit) in (0u32..).zip(logits) {
            // Ascending ids: a logit equal to a kept one goes after it, as argmax's first maximum.
            let full = out.top.len() == top;
            if logit == f32::NEG_INFINITY || (full && out.top.last().is_some_and(|&(_, last)| logit <= last)) {
                continue;
            }
            let at = out.top.partition_point(|&(_, kept)| kept >= logit);
            out.top.insert(at, (id, logit));
            out.top.truncate(top);
        }
    }
    for entry in &mut out.top {
        entry.1 = logprob(entry.1);
    }
    Ok(())
}

/// `value` rounded to the nearest f32 (an f64 beyond f32's range becomes an infinity).
#[allow(clippy::cast_possible_truncation)]
fn to_f32(value: f64) -> f32 {
    // CAST: rounding to the nearest f32 is the point; there is no lossless conversion.
    value as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Sampler, SamplerConfig};
    use proptest::prelude::*;

    fn processor(presence_penalty: f32, frequency_penalty: f32, logit_bias: &[(u32, f32)]) -> LogitsProcessor {
        LogitsProcessor::new(LogitsConfig { presence_penalty, frequency_penalty, logit_bias: logit_bias.to_vec() })
            .unwrap()
    }

    fn greedy(logits: &[f32]) -> u32 {
        Sampler::new(SamplerConfig::default()).unwrap().sample(logits).unwrap()
    }

    #[test]
    fn penalties_follow_openais_formula_by_hand() {
        let mut p = processor(0.5, 1.0, &[]);
        let logits = [1.0, 2.0, 3.0, 0.5];
        assert_eq!(greedy(&logits), 2);
        p.accept(2);
        p.accept(1);
        p.accept(2);
        let mut penalized = logits;
        p.apply(&mut penalized).unwrap();
        // Token 2 twice: 3 - (2 * 1.0 + 0.5); token 1 once: 2 - (1 * 1.0 + 0.5); the others as they were.
        assert_eq!(penalized, [1.0, 0.5, 0.5, 0.5]);
        assert_eq!(greedy(&penalized), 0);
        // Negative penalties favour what was generated: 3 + (2 * 0.25 + 0.125).
        let mut p = processor(-0.125, -0.25, &[]);
        p.accept(2);
        p.accept(2);
        let mut favoured = [3.5, 1.0, 3.0];
        p.apply(&mut favoured).unwrap();
        assert_eq!(favoured, [3.5, 1.0, 3.625]);
        assert_eq!(greedy(&favoured), 2);
    }

    #[test]
    fn bias_is_added_and_masked_logits_stay_masked() {
        let mut p = processor(0.0, 2.0, &[(3, 1.0), (0, -100.0)]);
        let mut logits = [1.0, 0.25, f32::NEG_INFINITY, 0.5];
        p.apply(&mut logits).unwrap();
        assert_eq!(logits, [-99.0, 0.25, f32::NEG_INFINITY, 1.5]);
        assert_eq!(greedy(&logits), 3);
        p.accept(3);
        let mut logits = [1.0, 0.25, f32::NEG_INFINITY, 0.5];
        p.apply(&mut logits).unwrap();
        // Bias +1, then one occurrence at frequency 2: 0.5 + 1 - 2.
        assert_eq!(logits, [-99.0, 0.25, f32::NEG_INFINITY, -0.5]);
        assert_eq!(greedy(&logits), 1);
    }

    #[test]
    fn nothing_is_counted_or_changed_without_a_setting() {
        let mut p = processor(0.0, 0.0, &[]);
        p.accept(1);
        assert!(p.counts.is_empty());
        let mut logits = [0.5, -0.0, 7.0];
        p.apply(&mut logits).unwrap();
        assert_eq!(logits.map(f32::to_bits), [0.5f32, -0.0, 7.0].map(f32::to_bits));
    }

    #[test]
    fn settings_outside_their_ranges_are_named() {
        let config = |presence_penalty, frequency_penalty, logit_bias: Vec<(u32, f32)>| LogitsConfig {
            presence_penalty,
            frequency_penalty,
            logit_bias,
        };
        let err = |c| LogitsProcessor::new(c).unwrap_err();
        assert_eq!(err(config(2.5, 0.0, vec![])), SamplerError::Penalty { name: "presence", value: 2.5, limit: 2.0 });
        assert!(matches!(err(config(0.0, f32::NAN, vec![])), SamplerError::Penalty { name: "frequency", .. }));
        assert_eq!(
            err(config(0.0, 0.0, vec![(7, -100.5)])),
            SamplerError::LogitBias { id: 7, value: -100.5, limit: 100.0 }
        );
        assert!(LogitsProcessor::new(config(-2.0, 2.0, vec![(1, 100.0), (2, -100.0)])).is_ok());
        let mut logits = [0.0; 4];
        assert_eq!(
            processor(0.0, 0.0, &[(4, 1.0)]).apply(&mut logits).unwrap_err(),
            SamplerError::BiasIdOutOfRange { id: 4, vocab_size: 4 }
        );
    }

    #[test]
    #[allow(clippy::cast_possible_truncation)]
    fn log_probabilities_by_hand() {
        let mut out = TokenLogprobs::default();
        log_probabilities(&[0.0; 4], 3, 3, &mut out).unwrap();
        let quarter = -(4.0f64.ln()) as f32;
        assert_eq!(
            out,
            TokenLogprobs { token: 3, logprob: quarter, top: vec![(0, quarter), (1, quarter), (2, quarter)] }
        );

        let logits = [1.0, 3.0, 3.0, f32::NEG_INFINITY, 2.0];
        let log_sum = 3.0 + (2.0f64 + (-1.0f64).exp() + (-2.0f64).exp()).ln();
        let lp = |l: f64| (l - log_sum) as f32;
        log_probabilities(&logits, 4, 5, &mut out).unwrap();
        assert_eq!(out.token, 4);
        assert_eq!(out.logprob, lp(2.0));
        // The -inf logit is never an alternative; the tie 1/2 goes to the lower id, as greedy does.
        assert_eq!(out.top, [(1, lp(3.0)), (2, lp(3.0)), (4, lp(2.0)), (0, lp(1.0))]);
        assert_eq!(out.top[0].0, greedy(&logits));

        log_probabilities(&logits, 0, 0, &mut out).unwrap();
        assert_eq!((out.logprob, out.top.len()), (lp(1.0), 0));
        // -0.0 and 0.0 are equal logits: the first is the greedy token.
        log_probabilities(&[-0.0, 0.0], 1, 1, &mut out).unwrap();
        assert_eq!(out.top[0].0, 0);
        assert_eq!(greedy(&[-0.0, 0.0]), 0);
    }

    #[test]
    fn log_probabilities_refuse_what_they_cannot_report() {
        let mut out = TokenLogprobs::default();
        assert_eq!(
            log_probabilities(&[0.0; 30], 0, 21, &mut out).unwrap_err(),
            SamplerError::TopLogprobs { value: 21, limit: 20 }
        );
        assert_eq!(
            log_probabilities(&[0.0; 3], 3, 1, &mut out).unwrap_err(),
            SamplerError::TokenOutOfRange { id: 3, vocab_size: 3 }
        );
        assert_eq!(log_probabilities(&[], 0, 1, &mut out).unwrap_err(), SamplerError::Empty);
        assert!(matches!(
            log_probabilities(&[0.0, f32::NAN], 0, 1, &mut out).unwrap_err(),
            SamplerError::BadLogit { index: 1, .. }
        ));
        // Logits spanning more than f32's range still give finite log-probabilities.
        log_probabilities(&[f32::MAX, -f32::MAX], 1, 2, &mut out).unwrap();
        assert_eq!(out.logprob, f32::MIN);
        assert_eq!(out.top, [(0, 0.0), (1, f32::MIN)]);
    }

    proptest! {
        #[test]
        fn the_top_is_greedy_sorted_and_a_distribution(
            logits in proptest::collection::vec(prop_oneof![(-8i8..8).prop_map(f32::from), -30.0f32..30.0], 1..64),
            top in 0usize..=20,
        ) {
            let token = greedy(&logits);
            let mut out = TokenLogprobs::default();
            log_probabilities(&logits, token, top, &mut out).unwrap();
            prop_assert_eq!(out.top.len(), top.min(logits.len()));
            if let Some(&(first, logprob)) = out.top.first() {
                prop_assert_eq!(first, token);
                prop_assert_eq!(logprob, out.logprob);
            }
            prop_assert!(out.top.windows(2).all(|w| w[0].1 >= w[1].1 && (w[0].1 > w[1].1 || w[0].0 < w[1].0)));
            let mut all = TokenLogprobs::default();
            let total: f64 = (0u32..).zip(&logits).map(|(id, _)| {
                log_probabilities(&logits, id, 0, &mut all).unwrap();
                prop_assert!(all.logprob <= 0.0);
                Ok(f64::from(all.logprob).exp())
            }).sum::<Result<f64, TestCaseError>>()?;
            prop_assert!((total - 1.0).abs() < 1e-5, "{total}");
        }
    }
}
