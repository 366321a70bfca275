//! Token sampling: greedy, or temperature softmax with top-k and top-p (nucleus) filtering and a
//! draw from a seeded deterministic generator, so that a seed reproduces a generation exactly.

use crate::error::SamplerError;

/// Sampling parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplerConfig {
    /// Softmax temperature; `0` means greedy (argmax, ties to the lowest id).
    pub temperature: f32,
    /// Keep only the `top_k` most likely tokens; `0` turns the filter off.
    pub top_k: usize,
    /// Keep the smallest set of most likely tokens whose probabilities add up to at least
    /// `top_p` (always at least one token); `1` turns the filter off. Must be in (0, 1].
    pub top_p: f32,
    /// Seed of the pseudo-random generator.
    pub seed: u64,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self { temperature: 0.0, top_k: 0, top_p: 1.0, seed: 0 }
    }
}

/// splitmix64: expands one seed into the generator state (the seeding xoshiro's authors recommend).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256** (Blackman and Vigna), a small, fast generator with a 2^256 - 1 period.
#[derive(Debug, Clone)]
pub struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    /// A generator seeded from `seed` through splitmix64 (never the all-zero state).
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        Self { s: [splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm)] }
    }

    /// A generator in exactly `state`; `None` for the all-zero state, which xoshiro never leaves.
    pub fn from_state(state: [u64; 4]) -> Option<Self> {
        (state != [0; 4]).then_some(Self { s: state })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform number in [0, 1) with 52 random mantissa bits.
    pub fn next_f64(&mut self) -> f64 {
        // Exponent of 1.0 with random mantissa gives [1, 2); no integer-to-float cast needed.
        f64::from_bits((0x3FF << 52) | (self.next_u64() >> 12)) - 1.0
    }
}

/// A configured sampler with its generator state.
#[derive(Debug, Clone)]
pub struct Sampler {
    config: SamplerConfig,
    rng: Xoshiro256,
}

impl Sampler {
    /// Validates `config`: temperature finite and >= 0, top_p in (0, 1].
    pub fn new(config: SamplerConfig) -> Result<Self, SamplerError> {
        if !config.temperature.is_finite() || config.temperature < 0.0 {
            return Err(SamplerError::Temperature { value: config.temperature });
        }
        if !(config.top_p > 0.0 && config.top_p <= 1.0) {
            return Err(SamplerError::TopP { value: config.top_p });
        }
        Ok(Self { config, rng: Xoshiro256::new(config.seed) })
    }

    /// The configuration.
    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    /// Picks the next token id from `logits` (index = id). NaN and +inf logits are errors; -inf
    /// means "never".
    pub fn sample(&mut self, logits: &[f32]) -> Result<u32, SamplerError> {
        check_logits(logits)?;
        if self.config.temperature == 0.0 {
            return Ok(argmax(logits));
        }
        let dist = self.distribution(logits)?;
        let total: f64 = dist.iter().map(|&(_, p)| p).sum();
        let mut target = self.rng.next_f64() * total;
        for &(id, p) in &dist {
            if target < p {
                return Ok(id);
            }
            target -= p;
        }
        // Rounding can leave target a hair above the last weight: the last kept token takes it.
        Ok(dist.last().map_or(0, |&(id, _)| id))
    }

    /// The filtered distribution `sample` draws from, most likely first, as `(id, weight)`;
    /// weights are normalised softmax probabilities before top-p truncation.
    pub fn distribution(&self, logits: &[f32]) -> Result<Vec<(u32, f64)>, SamplerError> {
        check_logits(logits)?;
        let mut cands: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l != f32::NEG_INFINITY)
            .filter_map(|(i, &l)| Some((u32::try_from(i).ok()?, l)))
            .collect();
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        let k = self.config.top_k;
        if k > 0 && k < cands.len() {
            cands.select_nth_unstable_by(k - 1, order);
            cands.truncate(k);
        }
        cands.sort_unstable_by(order);
        let temperature = f64::from(self.config.temperature);
        let max = cands.first().map_or(0.0, |&(_, l)| f64::from(l));
        let mut dist: Vec<(u32, f64)> =
            cands.iter().map(|&(id, l)| (id, ((f64::from(l) - max) / temperature).exp())).collect();
        let sum: f64 = dist.iter().map(|&(_, w)| w).sum();
        for entry in &mut dist {
            entry.1 /= sum;
        }
        let top_p = f64::from(self.config.top_p);
        if top_p < 1.0 {
            let mut cumulative = 0.0;
            let keep = dist
                .iter()
                .position(|&(_, p)| {
                    cumulative += p;
                    cumulative >= top_p
                })
                .map_or(dist.len(), |i| i + 1);
            dist.truncate(keep.max(1));
        }
        Ok(dist)
    }
}

pub(crate) fn check_logits(logits: &[f32]) -> Result<(), SamplerError> {
    if logits.is_empty() {
        return Err(SamplerError::Empty);
    }
    if u32::try_from(logits.len()).is_err() {
        return Err(SamplerError::TooManyLogits { len: logits.len(), limit: u64::from(u32::MAX) });
    }
    if let Some((index, &value)) = logits.iter().enumerate().find(|&(_, l)| l.is_nan() || *l == f32::INFINITY) {
        return Err(SamplerError::BadLogit { index, value });
    }
    if logits.iter().all(|&l| l == f32::NEG_INFINITY) {
        return Err(SamplerError::AllMasked { len: logits.len() });
    }
    Ok(())
}

/// Index of the largest logit, lowest index on ties (logits already checked: no NaN, not empty).
fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    // CAST: check_logits bounded the length by u32::MAX.
    u32::try_from(best).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_value() {
        // First output of splitmix64 from state 0, as published with the algorithm.
        assert_eq!(splitmix64(&mut 0), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn xoshiro_first_outputs_by_hand() {
        let mut x = Xoshiro256::from_state([1, 2, 3, 4]).unwrap();
        // rotl(2 * 5, 7) * 9 = 1280 * 9.
        assert_eq!(x.next_u64(), 11_520);
        // The second output, from the state after one step computed by the definition:
        let (mut s0, mut s1, mut s2, mut s3) = (1u64, 2u64, 3u64, 4u64);
        let t = s1 << 17;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = s3.rotate_left(45);
        assert_eq!((s0, s2, s3), (7, 262_146, 6u64.rotate_left(45)));
        assert_eq!(x.next_u64(), s1.wrapping_mul(5).rotate_left(7).wrapping_mul(9));
        assert!(Xoshiro256::from_state([0; 4]).is_none());
    }

    #[test]
    fn unit_interval() {
        let mut x = Xoshiro256::new(7);
        for _ in 0..10_000 {
            let u = x.next_f64();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
