//! A model fed a fixed, reproducible prompt, as a [`Workload`]: every route's host preparation
//! of a position sets that position's token first, so the steps recorded into a tape and the
//! steps run ordinarily see the same tokens. `redline lower --model` records one decode step of
//! a model this way.
//!
//! The prompt: the model's BOS token (`tokenizer.ggml.bos_token_id`, token 0 when the file names
//! none) at position 0, `(position * 7919) mod vocab` after it.

use hal::Device;
use tape_core::calibrate::GridRule;

use crate::funnel::Funnel;
use crate::model::LanguageModel;
use crate::workload::{Surface, Workload, WorkloadError};

/// Multiplier of the prompt's token sequence: the 1000th prime, so that consecutive positions
/// take tokens far apart in the vocabulary.
pub const TOKEN_STRIDE: u64 = 7919;

/// The model with its fixed prompt.
#[derive(Debug)]
pub struct FixedPrompt<'a> {
    model: &'a mut dyn LanguageModel,
    bos: u32,
}

impl<'a> FixedPrompt<'a> {
    /// `model` fed the fixed prompt that starts with `bos`.
    pub fn new(model: &'a mut dyn LanguageModel, bos: u32) -> Self {
        Self { model, bos }
    }

    /// The prompt's token at `position`: the BOS token at position 0, `(position * 7919) mod
    /// vocab` after it.
    #[must_use]
    pub fn token(&self, position: u32) -> u32 {
        if position == 0 {
            return self.bos;
        }
        let vocab = u64::from(self.model.vocab());
        // The remainder is below the vocabulary size, so it fits.
        u32::try_from(u64::from(position) * TOKEN_STRIDE % vocab).unwrap_or(0)
    }

    /// The BOS token of the model's file (`tokenizer.ggml.bos_token_id`), or token 0 when the
    /// file names none or one outside the vocabulary.
    #[must_use]
    pub fn bos_of(file: &gguf::Gguf, vocab: u32) -> u32 {
        file.u32("tokenizer.ggml.bos_token_id").ok().filter(|&t| t < vocab).unwrap_or(0)
    }
}

impl Workload for FixedPrompt<'_> {
    fn name(&self) -> &str {
        self.model.name()
    }

    fn prepare_step(
        &mut self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        position: u32,
    ) -> Result<(), WorkloadError> {
        self.model.set_token(self.token(position))?;
        self.model.prepare_step(device, funnel, position)
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        self.model.step(device, funnel, position)
    }

    fn surfaces(&self) -> &[Surface] {
        self.model.surfaces()
    }

    fn grid_rules(&self) -> &[GridRule] {
        self.model.grid_rules()
    }

    fn max_position(&self) -> u32 {
        self.model.max_position()
    }
}
