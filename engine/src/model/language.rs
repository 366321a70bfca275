//! A decoder-only language model on a device, whatever its architecture: the decode step is a
//! [`Workload`] (launches through the funnel), and the model adds what generation needs around
//! it (the token the next step embeds, the logits it leaves, the vocabulary and context sizes).
//! [`load`] picks the adapter from `general.architecture`: [`ARCHITECTURES`] lists them.

use gguf::Gguf;
use hal::Device;

use super::gemma3::{Gemma3, Gemma3Params};
use super::lfm2::{Lfm2, Lfm2Params};
use super::llama::{KvCacheLayout, Llama, LoadError};
use super::params::{LlamaParams, ParamsError};
use super::qwen35::{Qwen35, Qwen35Params};
use crate::workload::{Workload, WorkloadError};

/// The architectures [`load`] runs (`general.architecture`).
pub const ARCHITECTURES: &[&str] = &["llama", "gemma3", "lfm2", "qwen35"];

/// A language model whose decode step is a [`Workload`].
pub trait LanguageModel: Workload + std::fmt::Debug {
    /// The architecture (`general.architecture`).
    fn architecture(&self) -> &'static str;

    /// Tokens in the vocabulary (rows of the token embedding).
    fn vocab(&self) -> u32;

    /// Positions the KV cache holds.
    fn context(&self) -> u32;

    /// The token the next step embeds.
    ///
    /// # Errors
    /// [`WorkloadError::Init`] for an id outside the vocabulary.
    fn set_token(&mut self, token: u32) -> Result<(), WorkloadError>;

    /// The logits the last step (or prefill pass) left, one per vocabulary entry.
    ///
    /// # Errors
    /// The device's read error.
    fn logits(&self, device: &mut dyn Device) -> Result<Vec<f32>, WorkloadError>;
}

/// Loads the model of `file` onto `device` with a KV cache of `context` positions, with the
/// adapter its `general.architecture` names.
///
/// # Errors
/// [`LoadError::Model`] ([`ParamsError::Architecture`] for an architecture no adapter runs) or
/// [`LoadError::Workload`], as the adapter's own load.
pub fn load(device: &mut dyn Device, file: &Gguf, context: u32) -> Result<Box<dyn LanguageModel>, LoadError> {
    let architecture = file.str("general.architecture").map_err(ParamsError::Metadata)?;
    match architecture {
        "llama" => Ok(Box::new(Llama::load_model(device, file, context)?)),
        "gemma3" => Ok(Box::new(Gemma3::load_model(device, file, context)?)),
        "lfm2" => Ok(Box::new(Lfm2::load_model(device, file, context)?)),
        "qwen35" => Ok(Box::new(Qwen35::load_model(device, file, context)?)),
        other => Err(LoadError::Model(ParamsError::Architecture { found: other.to_owned() })),
    }
}

/// A model's hyperparameters as its adapter reads and checks them
/// ([`LlamaParams::from_gguf`], [`Gemma3Params::from_gguf`], [`Lfm2Params::from_gguf`],
/// [`Qwen35Params::from_gguf`]), for what is decided before the
/// model is loaded: the trained context, the weights' check, the KV cache a session would have.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ModelParams {
    /// A `llama` model.
    Llama(LlamaParams),
    /// A `gemma3` model.
    Gemma3(Gemma3Params),
    /// An `lfm2` model.
    Lfm2(Lfm2Params),
    /// A `qwen35` model.
    Qwen35(Qwen35Params),
}

impl ModelParams {
    /// The hyperparameters of `file`, read by the adapter its `general.architecture` names.
    ///
    /// # Errors
    /// [`ParamsError::Architecture`] for an architecture no adapter runs; the adapter's own
    /// [`ParamsError`] naming the key or tensor.
    pub fn from_gguf(file: &Gguf) -> Result<Self, ParamsError> {
        match file.str("general.architecture")? {
            "llama" => Ok(Self::Llama(LlamaParams::from_gguf(file)?)),
            "gemma3" => Ok(Self::Gemma3(Gemma3Params::from_gguf(file)?)),
            "lfm2" => Ok(Self::Lfm2(Lfm2Params::from_gguf(file)?)),
            "qwen35" => Ok(Self::Qwen35(Qwen35Params::from_gguf(file)?)),
            other => Err(ParamsError::Architecture { found: other.to_owned() }),
        }
    }

    /// The architecture (`general.architecture`).
    #[must_use]
    pub const fn architecture(&self) -> &'static str {
        match self {
            Self::Llama(_) => "llama",
            Self::Gemma3(_) => "gemma3",
            Self::Lfm2(_) => "lfm2",
            Self::Qwen35(_) => "qwen35",
        }
    }

    /// Tokens in the vocabulary (rows of the token embedding).
    #[must_use]
    pub const fn vocab(&self) -> u32 {
        match self {
            Self::Llama(p) => p.vocab,
            Self::Gemma3(p) => p.vocab,
            Self::Lfm2(p) => p.vocab,
            Self::Qwen35(p) => p.vocab,
        }
    }

    /// The trained context (`<architecture>.context_length`).
    #[must_use]
    pub const fn context_train(&self) -> u32 {
        match self {
            Self::Llama(p) => p.context_train,
            Self::Gemma3(p) => p.context_train,
            Self::Lfm2(p) => p.context_train,
            Self::Qwen35(p) => p.context_train,
        }
    }

    /// Every tensor the model uses, in upload order.
    #[must_use]
    pub fn tensor_names(&self) -> Vec<String> {
        match self {
            Self::Llama(p) => p.tensor_names(),
            Self::Gemma3(p) => p.tensor_names(),
            Self::Lfm2(p) => p.tensor_names(),
            Self::Qwen35(p) => p.tensor_names(),
        }
    }

    /// Checks that every weight the model uses is finite
    /// ([`gguf::TensorView::check_finite`]), as its load does while uploading.
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

    /// The KV cache of a session of `context` positions. Every adapter keeps one K and one V
    /// surface of `[layer][position][kv_head][head_dim]` f32 (the `gemma3` step addresses layer
    /// `L`'s block at `L × context × kv_dim × 4` bytes, as llama's does), every layer holding
    /// every position: a sliding layer's window bounds what it reads, not what it keeps. An
    /// `lfm2` model's layers are its attention blocks only (its convolution blocks keep the
    /// convolution state instead, a surface of its own); a `qwen35` model's are its
    /// full-attention layers only, in order (its DeltaNet layers keep sequence state instead,
    /// surfaces of their own).
    #[must_use]
    pub fn kv_cache_layout(&self, context: u32) -> KvCacheLayout {
        let f32_layout = |layers: u32, kv_heads: u32, head_dim: u32| {
            let element_bytes = 4;
            let position_stride_bytes = u64::from(element_bytes) * u64::from(kv_heads) * u64::from(head_dim);
            let layer_stride_bytes = position_stride_bytes * u64::from(context);
            KvCacheLayout {
                layers,
                positions: context,
                kv_heads,
                head_dim,
                element: "f32",
                element_bytes,
                position_stride_bytes,
                layer_stride_bytes,
                surface_bytes: layer_stride_bytes * u64::from(layers),
            }
        };
        match self {
            Self::Llama(p) => KvCacheLayout::of(p, context),
            Self::Gemma3(p) => f32_layout(p.layers, p.kv_heads, p.head_dim),
            Self::Lfm2(p) => f32_layout(p.attention_layers(), p.kv_heads, p.head_dim),
            Self::Qwen35(p) => f32_layout(p.attention_layers(), p.kv_heads, p.head_dim),
        }
    }
}
