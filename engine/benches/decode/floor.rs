//! The memory floor of one decode token: the bytes a token must read, and the fastest read of
//! that many bytes this machine does on all its cores.
//!
//! A decode step reads, at least once each:
//! - **weights**: every tensor the model uploads ([`ModelParams::tensor_names`]), whole, except
//!   the token embedding when the model has its own `output.weight` (the step then reads one
//!   embedding row; a model without `output.weight` reads the whole embedding as its LM head);
//! - **KV rows in use**: at position `p`, rows `0..=p` of K and of V of every attention layer
//!   ([`engine::model::KvCacheLayout`]: `2 × (p + 1) × position_stride_bytes` a layer), except
//!   that a Gemma 3 sliding layer reads only the last `window` rows
//!   ([`engine::model::Gemma3Params::is_sliding`]);
//! - **sequence state**: every surface holding convolution or recurrent state, read whole;
//! - **activations**: the `f32` input vector of every two-dimensional weight (its row length ×
//!   4 bytes) and the logits read back (`vocab × 4`).
//!
//! SmolLM2-135M-Instruct Q4_1, for example (printed by the bench for every model): weights
//! 96,576,768 bytes (its token embedding, Q8_0, is also its LM head, so it is read whole), KV
//! 46,080 bytes a position (30 layers × K and V × 3 heads × 64 × 4 bytes), no sequence state,
//! activations 797,952 bytes: 98,227,200 bytes a token at positions 16..20, 121,082,880 at
//! 512..516.
//!
//! Writes (the KV row, the state, the activations) are not counted: the floor is what a token
//! cannot avoid reading, so a decode at the floor would still write on top of it.
//!
//! The read is [`read`]: the buffer split into one contiguous part per rayon thread (the pool
//! the soft device's kernels use, already awake), each part folded by XOR over `u64` words with
//! 16 independent accumulators (loads the compiler vectorises; on this machine the widest
//! vector loads read no faster, measured when this floor was chosen).

use engine::model::LanguageModel;
use engine::model::language::ModelParams;
use gguf::Gguf;
use rayon::prelude::*;

/// The bytes one token reads, by kind.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bytes {
    pub(crate) weights: u64,
    pub(crate) kv: u64,
    pub(crate) state: u64,
    pub(crate) activations: u64,
}

impl Bytes {
    pub(crate) fn total(&self) -> u64 {
        self.weights + self.kv + self.state + self.activations
    }
}

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes (weights {}, KV rows {}, state {}, activations {})",
            self.total(),
            self.weights,
            self.kv,
            self.state,
            self.activations
        )
    }
}

/// What a model's tokens read, apart from the KV rows (which depend on the position).
pub(crate) struct Floor {
    weights: u64,
    activations: u64,
    state: u64,
    /// `2 × position_stride_bytes`: the KV bytes of one position in one layer.
    kv_row: u64,
    /// Per attention layer, the rows it reads at most (a sliding layer's window), or `None`.
    layers: Vec<Option<u32>>,
}

impl Floor {
    /// The floor of `file`'s model as `model` (loaded from it) runs it.
    pub(crate) fn of(file: &Gguf, model: &dyn LanguageModel) -> Self {
        let params = ModelParams::from_gguf(file).expect("the model loaded, so its parameters read");
        let names = params.tensor_names();
        let untied = names.iter().any(|n| n == "output.weight");
        let (mut weights, mut activations) = (0u64, u64::from(params.vocab()) * 4);
        for tensor in file.tensors().iter().filter(|t| names.iter().any(|n| n == t.name())) {
            let bytes = tensor.byte_len().expect("a loaded model's tensors have known layouts");
            let dims = tensor.dims();
            if tensor.name() == "token_embd.weight" && untied {
                weights += bytes / dims.get(1).copied().unwrap_or(1).max(1);
                continue;
            }
            weights += bytes;
            if dims.len() == 2 {
                activations += dims[0] * 4;
            }
        }
        let state = model.surfaces().iter().filter(|s| s.state.is_some()).map(|s| s.bytes).sum();
        let layout = params.kv_cache_layout(model.context());
        let layers = (0..layout.layers)
            .map(|layer| match &params {
                ModelParams::Gemma3(p) if p.is_sliding(layer) => Some(p.window),
                _ => None,
            })
            .collect();
        Self { weights, activations, state, kv_row: 2 * layout.position_stride_bytes, layers }
    }

    /// The bytes of a token at `position` (KV rows `0..=position`).
    pub(crate) fn at(&self, position: u32) -> Bytes {
        Bytes {
            weights: self.weights,
            kv: self
                .layers
                .iter()
                .map(|window| self.kv_row * u64::from(window.map_or(position + 1, |w| w.min(position + 1))))
                .sum(),
            state: self.state,
            activations: self.activations,
        }
    }

    /// The mean bytes of the tokens at `positions`.
    pub(crate) fn mean(&self, positions: std::ops::Range<u32>) -> Bytes {
        let n = u64::from(positions.end.saturating_sub(positions.start)).max(1);
        let kv = positions.clone().map(|p| self.at(p).kv).sum::<u64>() / n;
        Bytes { kv, ..self.at(positions.start) }
    }
}

/// Reads every byte of `buffer` once, on every thread of the rayon pool; returns a fold of
/// them so that the reads cannot be elided.
pub(crate) fn read(buffer: &[u64]) -> u64 {
    let part = buffer.len().div_ceil(rayon::current_num_threads().max(1)).max(16);
    buffer.par_chunks(part).map(fold).reduce(|| 0, |a, b| a ^ b)
}

fn fold(words: &[u64]) -> u64 {
    let mut acc = [0u64; 16];
    let mut chunks = words.chunks_exact(16);
    for chunk in &mut chunks {
        for (a, w) in acc.iter_mut().zip(chunk) {
            *a ^= *w;
        }
    }
    chunks.remainder().iter().chain(&acc).fold(0, |a, w| a ^ w)
}
