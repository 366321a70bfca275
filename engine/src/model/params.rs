//! A llama-family model's hyperparameters and tensor inventory, read from GGUF metadata and
//! checked against what the decode kernels support before anything is uploaded.

use gguf::{GgmlType, Gguf};

/// Why a GGUF file is not a llama model this adapter can run.
#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    /// A metadata key is missing or has the wrong type.
    #[error(transparent)]
    Metadata(#[from] gguf::GgufError),
    /// `general.architecture` names no architecture an adapter runs
    /// ([`ARCHITECTURES`](super::language::ARCHITECTURES)).
    #[error("general.architecture is {found:?}; the supported architectures are {}", super::language::ARCHITECTURES.join(", "))]
    Architecture {
        /// What the file says.
        found: String,
    },
    /// A hyperparameter the kernels cannot run.
    #[error("{key} = {value}: {why}")]
    Unsupported {
        /// The metadata key (or derived quantity).
        key: &'static str,
        /// Its value.
        value: u64,
        /// What the kernels need.
        why: &'static str,
    },
    /// A hyperparameter outside the range the model's arithmetic is defined for.
    #[error("{key} = {value}: {rule}")]
    Invalid {
        /// The metadata key.
        key: &'static str,
        /// Its value, as written in the file.
        value: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// Two statements of the vocabulary size that disagree: `llama.vocab_size`, the length of
    /// `tokenizer.ggml.tokens`, the rows of `token_embd.weight` and of `output.weight`.
    #[error("{first} is {first_value} but {second} is {second_value}: the vocabulary sizes must agree")]
    VocabMismatch {
        /// The key or tensor that states one size.
        first: String,
        /// Its size.
        first_value: u64,
        /// The key or tensor it disagrees with.
        second: String,
        /// That one's size.
        second_value: u64,
    },
    /// A weight that is NaN or infinite ([`gguf::TensorView::check_finite`]).
    #[error(transparent)]
    Weights(gguf::GgufError),
    /// A tensor is missing.
    #[error("tensor {name} is missing")]
    MissingTensor {
        /// Its name.
        name: String,
    },
    /// A tensor has the wrong shape or type.
    #[error("tensor {name}: {found_type} {found_dims:?}, expected {expected}")]
    Tensor {
        /// Its name.
        name: String,
        /// Its type.
        found_type: String,
        /// Its dimensions (ne0 first).
        found_dims: Vec<u64>,
        /// What the adapter needs.
        expected: String,
    },
}

/// Hyperparameters of a llama-family model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LlamaParams {
    /// `llama.block_count`.
    pub layers: u32,
    /// `llama.embedding_length`.
    pub dim: u32,
    /// `llama.feed_forward_length`.
    pub ffn: u32,
    /// `llama.attention.head_count`.
    pub heads: u32,
    /// `llama.attention.head_count_kv`.
    pub kv_heads: u32,
    /// `dim / heads`.
    pub head_dim: u32,
    /// Rows of `token_embd.weight`.
    pub vocab: u32,
    /// `llama.context_length`: the longest context the model was trained for.
    pub context_train: u32,
    /// `llama.rope.freq_base`.
    pub rope_base: f32,
    /// `llama.attention.layer_norm_rms_epsilon`.
    pub eps: f32,
    /// Whether the output matrix is the token embedding (`output.weight` absent).
    pub tied_output: bool,
}

/// The block size every quantised row length must be a multiple of.
const BLOCK: u32 = 32;

impl LlamaParams {
    /// `kv_heads * head_dim`: one K (or V) row per position and layer.
    #[must_use]
    pub const fn kv_dim(&self) -> u32 {
        self.kv_heads * self.head_dim
    }

    /// Reads and checks the hyperparameters and every tensor's type and shape.
    ///
    /// # Errors
    /// [`ParamsError`] naming the key or tensor.
    pub fn from_gguf(file: &Gguf) -> Result<Self, ParamsError> {
        let arch = file.str("general.architecture")?;
        if arch != "llama" {
            return Err(ParamsError::Architecture { found: arch.to_owned() });
        }
        let layers = file.u32("llama.block_count")?;
        let dim = file.u32("llama.embedding_length")?;
        let ffn = file.u32("llama.feed_forward_length")?;
        let heads = file.u32("llama.attention.head_count")?;
        let kv_heads = file.u32("llama.attention.head_count_kv")?;
        let unsupported = |key, value: u32, why| ParamsError::Unsupported { key, value: u64::from(value), why };
        for (key, value) in [("llama.block_count", layers), ("llama.attention.head_count_kv", kv_heads)] {
            if value == 0 {
                return Err(unsupported(key, value, "must be at least 1"));
            }
        }
        for (key, value) in [("llama.embedding_length", dim), ("llama.feed_forward_length", ffn)] {
            if value == 0 || value % BLOCK != 0 {
                return Err(unsupported(key, value, "the quantised matvec needs a non-zero multiple of 32"));
            }
        }
        if heads == 0 || dim % heads != 0 {
            return Err(unsupported("llama.attention.head_count", heads, "must divide the embedding length"));
        }
        if heads % kv_heads != 0 {
            return Err(unsupported("llama.attention.head_count_kv", kv_heads, "must divide the head count"));
        }
        let head_dim = dim / heads;
        // The attention kernel has one work-item per output element of a head (ATTN_BLOCK = 64).
        if head_dim % 2 != 0 || head_dim > 64 {
            return Err(unsupported("head dimension", head_dim, "the kernels need an even head size of at most 64"));
        }
        if let Some(rope_dims) = file.get("llama.rope.dimension_count").map(|_| file.u32("llama.rope.dimension_count"))
        {
            let rope_dims = rope_dims?;
            if rope_dims != head_dim {
                return Err(unsupported("llama.rope.dimension_count", rope_dims, "partial rotary embeddings"));
            }
        }
        let context_train = file.u32(CONTEXT_KEY)?;
        if context_train == 0 {
            return Err(ParamsError::Invalid {
                key: CONTEXT_KEY,
                value: "0".to_owned(),
                rule: "the trained context must be at least 1 position",
            });
        }
        let rope_base = file.f32(ROPE_BASE_KEY)?;
        positive_finite(ROPE_BASE_KEY, rope_base, "the RoPE frequency base must be finite and greater than 0")?;
        let eps = file.f32(EPS_KEY)?;
        positive_finite(EPS_KEY, eps, "the RMSNorm epsilon must be finite and greater than 0")?;
        let embd = tensor(file, EMBEDDING, &[GgmlType::Q8_0], &[u64::from(dim)], 2)?;
        let vocab = u32::try_from(embd[1]).map_err(|_| ParamsError::Unsupported {
            key: "token_embd.weight rows",
            value: embd[1],
            why: "more than 2^32 tokens",
        })?;
        check_vocab(file, embd[1])?;
        let params = Self {
            layers,
            dim,
            ffn,
            heads,
            kv_heads,
            head_dim,
            vocab,
            context_train,
            rope_base,
            eps,
            tied_output: file.tensor_info("output.weight").is_none(),
        };
        params.check_tensors(file)?;
        Ok(params)
    }

    fn check_tensors(&self, file: &Gguf) -> Result<(), ParamsError> {
        let matrix = [GgmlType::Q4_1, GgmlType::Q8_0];
        let (d, f, kv) = (u64::from(self.dim), u64::from(self.ffn), u64::from(self.kv_dim()));
        for l in 0..self.layers {
            let name = |part: &str| format!("blk.{l}.{part}.weight");
            for norm in ["attn_norm", "ffn_norm"] {
                tensor(file, &name(norm), &[GgmlType::F32], &[d], 1)?;
            }
            for (part, cols, rows) in [
                ("attn_q", d, d),
                ("attn_k", d, kv),
                ("attn_v", d, kv),
                ("attn_output", d, d),
                ("ffn_gate", d, f),
                ("ffn_up", d, f),
                ("ffn_down", f, d),
            ] {
                tensor(file, &name(part), &matrix, &[cols, rows], 2)?;
            }
        }
        tensor(file, "output_norm.weight", &[GgmlType::F32], &[d], 1)?;
        if !self.tied_output {
            let output = tensor(file, "output.weight", &[GgmlType::Q8_0], &[d], 2)?;
            agree(rows(EMBEDDING), u64::from(self.vocab), rows("output.weight"), output[1])?;
        }
        Ok(())
    }

    /// Every tensor the model uses, in upload order: the embedding, the output matrix when it is
    /// not tied, the output norm, then each layer's.
    #[must_use]
    pub fn tensor_names(&self) -> Vec<String> {
        let mut names = vec![EMBEDDING.to_owned()];
        if !self.tied_output {
            names.push("output.weight".to_owned());
        }
        names.push("output_norm.weight".to_owned());
        for l in 0..self.layers {
            for part in LAYER_TENSORS {
                names.push(format!("blk.{l}.{part}.weight"));
            }
        }
        names
    }

    /// Checks that every weight of the model is finite ([`gguf::TensorView::check_finite`]):
    /// each element of the F32 norms, the scales (and Q4_1 minimums) of the quantised matrices.
    /// One pass over the file reading 2 bytes of each 20- or 34-byte block: for a 135M-parameter
    /// Q4_1 model about 4.2 million scales.
    ///
    /// # Errors
    /// [`ParamsError::Weights`] naming the tensor, the block or element and its byte offset;
    /// [`ParamsError::Metadata`] for a tensor the file cannot give.
    pub fn check_weights(&self, file: &Gguf) -> Result<(), ParamsError> {
        for name in self.tensor_names() {
            file.tensor(&name)?.check_finite().map_err(ParamsError::Weights)?;
        }
        Ok(())
    }
}

/// The tensors of one layer, in upload order.
pub const LAYER_TENSORS: [&str; 9] =
    ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"];

const CONTEXT_KEY: &str = "llama.context_length";
const ROPE_BASE_KEY: &str = "llama.rope.freq_base";
const EPS_KEY: &str = "llama.attention.layer_norm_rms_epsilon";
const VOCAB_KEY: &str = "llama.vocab_size";
const TOKENS_KEY: &str = "tokenizer.ggml.tokens";
const EMBEDDING: &str = "token_embd.weight";

pub(super) fn positive_finite(key: &'static str, value: f32, rule: &'static str) -> Result<(), ParamsError> {
    if value.is_finite() && value > 0.0 {
        return Ok(());
    }
    Err(ParamsError::Invalid { key, value: format!("{value:?}"), rule })
}

pub(super) fn rows(tensor: &str) -> String {
    format!("the row count of {tensor} (dimension 1)")
}

pub(super) fn agree(first: String, first_value: u64, second: String, second_value: u64) -> Result<(), ParamsError> {
    if first_value == second_value {
        return Ok(());
    }
    Err(ParamsError::VocabMismatch { first, first_value, second, second_value })
}

/// `llama.vocab_size` (when present) and the length of `tokenizer.ggml.tokens` (when it is an
/// array; its absence or type is the tokenizer's to report) against the embedding's rows.
fn check_vocab(file: &Gguf, embedding_rows: u64) -> Result<(), ParamsError> {
    check_vocab_of(file, VOCAB_KEY, embedding_rows)
}

/// [`check_vocab`] with the architecture's own vocabulary key (`<arch>.vocab_size`).
pub(super) fn check_vocab_of(file: &Gguf, vocab_key: &str, embedding_rows: u64) -> Result<(), ParamsError> {
    if file.get(vocab_key).is_some() {
        let declared = file.u32(vocab_key)?;
        agree(vocab_key.to_owned(), u64::from(declared), rows(EMBEDDING), embedding_rows)?;
    }
    if let Some(gguf::Value::Array(tokens)) = file.get(TOKENS_KEY) {
        let count = u64::try_from(tokens.len()).unwrap_or(u64::MAX);
        agree(format!("the length of {TOKENS_KEY}"), count, rows(EMBEDDING), embedding_rows)?;
    }
    Ok(())
}

/// Checks a tensor's type and leading dimensions; returns its dimensions.
pub(super) fn tensor(
    file: &Gguf,
    name: &str,
    types: &[GgmlType],
    leading: &[u64],
    rank: usize,
) -> Result<Vec<u64>, ParamsError> {
    let info = file.tensor_info(name).ok_or_else(|| ParamsError::MissingTensor { name: name.to_owned() })?;
    let dims: Vec<u64> = info.dims().to_vec();
    let fits = types.contains(&info.ty()) && dims.len() == rank && dims.iter().zip(leading).all(|(a, b)| a == b);
    if !fits {
        let names: Vec<String> = types.iter().map(ToString::to_string).collect();
        return Err(ParamsError::Tensor {
            name: name.to_owned(),
            found_type: info.ty().to_string(),
            found_dims: dims,
            expected: format!("{} with leading dimensions {leading:?} (rank {rank})", names.join(" or ")),
        });
    }
    Ok(dims)
}
