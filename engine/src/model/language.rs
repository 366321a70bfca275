//! A decoder-only language model on a device, whatever its architecture: the decode step is a
//! [`Workload`] (launches through the funnel), and the model adds what generation needs around
//! it (the token the next step embeds, the logits it leaves, the vocabulary and context sizes).
//! [`load`] picks the adapter from `general.architecture`: [`ARCHITECTURES`] lists them.

use gguf::Gguf;
use hal::Device;

use super::gemma3::Gemma3;
use super::llama::{Llama, LoadError};
use super::params::ParamsError;
use crate::workload::{Workload, WorkloadError};

/// The architectures [`load`] runs (`general.architecture`).
pub const ARCHITECTURES: &[&str] = &["llama", "gemma3"];

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
        other => Err(LoadError::Model(ParamsError::Architecture { found: other.to_owned() })),
    }
}
