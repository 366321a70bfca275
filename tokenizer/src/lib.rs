//! Tokenization for GGUF vocabularies of two models, chosen by `tokenizer.ggml.model`
//! ([`TokenizerModel::from_gguf_name`]), and the text side of generation around it.
//!
//! - [`Tokenizer`]: one type for both models, built with [`Tokenizer::new`] from a byte-level BPE
//!   [`Vocab`] (`gpt2`: SmolLM2, LFM2, Qwen 3.5 and kin; the [`PreTokenizer`] its
//!   `tokenizer.ggml.pre` names, and ranked merges) or with
//!   [`Tokenizer::new_spm`] from a SentencePiece-style [`SpmVocab`] (`llama`: Gemma 3; scored
//!   pieces, byte fallback, llama.cpp's SPM rules); parses special tokens on request, decodes.
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
//! `REDLINE_SMOLLM2_GGUF`. `tests/data/gen_gemma3_reference.py` records llama.cpp's own ids and
//! detokenized text for Gemma 3 (see `tests/data/README.md`); that test reads the vocabulary from
//! the GGUF named by `REDLINE_GEMMA3_GGUF`. Without its file each test does nothing, except under
//! `CI=true`, where it fails. `tests/data/gen_pretokenize_llamacpp.py` records llama.cpp's own
//! pre-token splits under every supported `tokenizer.ggml.pre` name, and its Unicode categories;
//! `tests/data/gen_bpe_families_reference.py` its ids, token bytes and end-of-generation sets for
//! small vocabularies of the `lfm2` and `qwen35` families.
#![forbid(unsafe_code)]

mod bpe;
mod byte_level;
mod chat;
mod decoder;
mod error;
mod logits;
mod pieces;
mod pretokenize;
mod sampler;
mod spm;
mod spm_specials;
mod stop;
mod tokenizer;
mod unicode_tables;

pub use chat::{ChatTemplate, Message, PLAIN_CHATML, SMOLLM2_CHATML};
pub use decoder::{Decoder, Utf8Stream};
pub use error::{ChatTemplateError, SamplerError, SpmVocabError, TokenizerError};
pub use logits::{
    BIAS_MAX, LogitsConfig, LogitsProcessor, PENALTY_MAX, TOP_LOGPROBS_MAX, TokenLogprobs, log_probabilities,
};
pub use pretokenize::{PreTokenizer, SUPPORTED_PRE_TOKENIZERS};
pub use sampler::{Sampler, SamplerConfig, Xoshiro256};
pub use spm::SpmVocab;
pub use stop::{StopMatcher, StopStep};
pub use tokenizer::{SUPPORTED_TOKENIZER_MODELS, TokenType, Tokenizer, TokenizerModel, Vocab};
