//! Sampler behaviour: greedy, reproducibility, filters, and empirical frequencies against a
//! distribution computed here from the definition.

use proptest::prelude::*;
use tokenizer::{Sampler, SamplerConfig, SamplerError};

fn sampler(temperature: f32, top_k: usize, top_p: f32, seed: u64) -> Sampler {
    Sampler::new(SamplerConfig { temperature, top_k, top_p, seed }).unwrap()
}

#[test]
fn greedy_is_argmax_lowest_id_on_ties() {
    let mut s = sampler(0.0, 0, 1.0, 1);
    assert_eq!(s.sample(&[0.1, 5.0, 5.0, -1.0]).unwrap(), 1);
    assert_eq!(s.sample(&[f32::NEG_INFINITY, -3.0, -4.0]).unwrap(), 1);
    assert_eq!(s.sample(&[2.0]).unwrap(), 0);
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let bad = |temperature, top_p| Sampler::new(SamplerConfig { temperature, top_k: 0, top_p, seed: 0 }).unwrap_err();
    assert_eq!(bad(-0.5, 1.0), SamplerError::Temperature { value: -0.5 });
    assert!(matches!(bad(f32::NAN, 1.0), SamplerError::Temperature { .. }));
    assert!(matches!(bad(f32::INFINITY, 1.0), SamplerError::Temperature { .. }));
    assert_eq!(bad(1.0, 0.0), SamplerError::TopP { value: 0.0 });
    assert_eq!(bad(1.0, 1.5), SamplerError::TopP { value: 1.5 });
    assert!(matches!(bad(1.0, f32::NAN), SamplerError::TopP { .. }));

    for temperature in [0.0, 1.0] {
        let mut s = sampler(temperature, 0, 1.0, 0);
        assert_eq!(s.sample(&[]).unwrap_err(), SamplerError::Empty);
        assert!(matches!(s.sample(&[1.0, f32::NAN]).unwrap_err(), SamplerError::BadLogit { index: 1, .. }));
        assert_eq!(
            s.sample(&[0.0, 1.0, f32::INFINITY]).unwrap_err(),
            SamplerError::BadLogit { index: 2, value: f32::INFINITY }
        );
        assert_eq!(s.sample(&[f32::NEG_INFINITY; 3]).unwrap_err(), SamplerError::AllMasked { len: 3 });
    }
}

#[test]
fn same_seed_same_tokens() {
    let logits: Vec<f32> = (0..50u8).map(|i| f32::from(i % 7) * 0.3).collect();
    let run = |seed| {
        let mut s = sampler(0.9, 20, 0.95, seed);
        (0..1000).map(|_| s.sample(&logits).unwrap()).collect::<Vec<u32>>()
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
}

#[test]
fn masked_tokens_never_drawn() {
    let mut s = sampler(1.0, 0, 1.0, 5);
    let logits = [0.0, f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY];
    for _ in 0..2000 {
        let id = s.sample(&logits).unwrap();
        assert!(id == 0 || id == 2);
    }
}

/// Draws `n` samples and returns the frequency of each id.
fn frequencies(s: &mut Sampler, logits: &[f32], n: u32) -> Vec<f64> {
    let mut counts = vec![0u32; logits.len()];
    for _ in 0..n {
        counts[usize::try_from(s.sample(logits).unwrap()).unwrap()] += 1;
    }
    counts.into_iter().map(|c| f64::from(c) / f64::from(n)).collect()
}

// Tolerance for 200,000 draws: the standard error of a frequency is at most
// sqrt(0.25 / 200_000) = 0.00112, so 0.006 is over 5 standard errors (false failure < 1e-6).
const DRAWS: u32 = 200_000;
const TOLERANCE: f64 = 0.006;

#[test]
fn frequencies_follow_softmax_with_temperature() {
    let logits = [1.0f32, 2.0, 0.5, 3.0];
    let t = 0.7f64;
    let weights: Vec<f64> = logits.iter().map(|&l| (f64::from(l) / t).exp()).collect();
    let total: f64 = weights.iter().sum();
    let mut s = sampler(0.7, 0, 1.0, 2024);
    let freq = frequencies(&mut s, &logits, DRAWS);
    for (id, (&f, w)) in freq.iter().zip(&weights).enumerate() {
        let p = w / total;
        assert!((f - p).abs() < TOLERANCE, "id {id}: frequency {f}, probability {p}");
    }
}

#[test]
fn frequencies_follow_top_k_then_top_p() {
    let logits = [1.0f32, 2.0, 0.5, 3.0, f32::NEG_INFINITY];
    let t = 0.7f64;
    // top-k = 3 keeps ids 3, 1, 0. Their softmax: e^(3/.7), e^(2/.7), e^(1/.7) = 72.7, 17.4, 4.2,
    // i.e. 0.771, 0.184, 0.044; top-p = 0.9 is first reached with ids 3 and 1 (0.955).
    let w = |l: f64| (l / t).exp();
    let (p3, p1, p0) = {
        let z = w(3.0) + w(2.0) + w(1.0);
        (w(3.0) / z, w(2.0) / z, w(1.0) / z)
    };
    assert!(p3 < 0.9 && p3 + p1 >= 0.9 && p0 > 0.0);
    let expected = [0.0, p1 / (p3 + p1), 0.0, p3 / (p3 + p1), 0.0];
    let mut s = sampler(0.7, 3, 0.9, 99);
    let freq = frequencies(&mut s, &logits, DRAWS);
    for (id, (&f, &p)) in freq.iter().zip(&expected).enumerate() {
        assert!((f - p).abs() < TOLERANCE, "id {id}: frequency {f}, probability {p}");
    }
    assert_eq!(freq[0], 0.0);
    assert_eq!(freq[2], 0.0);
}

#[test]
fn top_p_keeps_at_least_one() {
    let mut s = sampler(1.0, 0, 1e-6, 3);
    for _ in 0..500 {
        assert_eq!(s.sample(&[0.0, 0.1, 0.0]).unwrap(), 1);
    }
}

proptest! {
    #[test]
    fn top_k_one_is_greedy(raw in proptest::collection::vec(-4i8..4, 1..40), seed in any::<u64>(),
                           temperature in 0.05f32..3.0) {
        // Small integer logits make ties common: both must pick the lowest id among the maxima.
        let logits: Vec<f32> = raw.iter().map(|&v| f32::from(v)).collect();
        let greedy = sampler(0.0, 0, 1.0, seed).sample(&logits).unwrap();
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        prop_assert_eq!(Some(greedy), logits.iter().position(|&l| l == max).map(|i| u32::try_from(i).unwrap()));
        let mut top1 = sampler(temperature, 1, 1.0, seed);
        for _ in 0..5 {
            prop_assert_eq!(top1.sample(&logits).unwrap(), greedy);
        }
    }
}
