//! Byte-level BPE tokenization for GGUF `gpt2`-model vocabularies (SmolLM2 and kin), and the text
//! side of generation around it.
//!
//! - [`Tokenizer`]: built from the vocabulary parts ([`Vocab`]) and the `tokenizer.ggml.pre` name;
//!   encodes with the model's pre-tokenizer and merges, parses control tokens on request, decodes.
//! - [`Decoder`]: streaming decode that only ever yields complete UTF-8.
//! - [`ChatTemplate`]: recognised chat templates (ChatML), rendered byte-exact to their Jinja source.
//! - [`Sampler`]: greedy / temperature + top-k + top-p sampling with a seeded xoshiro256**.
//! - [`LogitsProcessor`]: presence and frequency penalties and logit bias before sampling;
//!   [`log_probabilities`] of the logits the sampler saw.
//! - [`StopMatcher`]: stop tokens and stop strings over a token stream.
//!
//! This crate reads no files: a GGUF reader elsewhere supplies the parts.
//!
//! Reference data: `tests/data/gen_reference.py MODEL.gguf VOCAB.json` regenerates the expected ids
//! (HF `tokenizers`), pre-tokenizer splits and ChatML renderings (jinja2) and writes the SmolLM2
//! vocabulary to `VOCAB.json`; the SmolLM2 test reads the vocabulary from the fixture GGUF named by
//! `REDLINE_SMOLLM2_GGUF` (without it the test does nothing, except under `CI=true`, where it fails).
#![forbid(unsafe_code)]

mod byte_level;
mod chat;
mod decoder;
mod error;
mod logits;
mod pretokenize;
mod sampler;
mod stop;
mod tokenizer;
mod unicode_tables;

pub use chat::{ChatTemplate, Message, PLAIN_CHATML, SMOLLM2_CHATML};
pub use decoder::{Decoder, Utf8Stream};
pub use error::{ChatTemplateError, SamplerError, TokenizerError};
pub use logits::{
    BIAS_MAX, LogitsConfig, LogitsProcessor, PENALTY_MAX, TOP_LOGPROBS_MAX, TokenLogprobs, log_probabilities,
};
pub use pretokenize::{PreTokenizer, SUPPORTED_PRE_TOKENIZERS};
pub use sampler::{Sampler, SamplerConfig, Xoshiro256};
pub use stop::{StopMatcher, StopStep};
pub use tokenizer::{TokenType, Tokenizer, Vocab};
