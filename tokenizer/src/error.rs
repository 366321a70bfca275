//! Typed errors of the tokenizer layer: one enum per concern, each variant naming the offending
//! value and where it was found.

use thiserror::Error;

/// Why a byte-level vocabulary could not become a [`crate::Tokenizer`], or why an id could not be
/// decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TokenizerError {
    /// The pre-tokenizer name is not one this crate implements.
    #[error("unknown pre-tokenizer {name:?}; supported: {supported}")]
    UnknownPreTokenizer {
        /// The name that was asked for.
        name: String,
        /// The supported names, comma separated.
        supported: &'static str,
    },
    /// `tokens` and `token_types` have different lengths.
    #[error("vocabulary has {tokens} tokens but {token_types} token types")]
    TypeCountMismatch {
        /// Number of token strings.
        tokens: usize,
        /// Number of token types.
        token_types: usize,
    },
    /// The vocabulary is empty or has more ids than fit a `u32`.
    #[error("vocabulary size {size} is outside 1..={limit}")]
    VocabSize {
        /// Number of tokens given.
        size: usize,
        /// Largest accepted size.
        limit: u64,
    },
    /// A token string is empty.
    #[error("token {index} is empty")]
    EmptyToken {
        /// Token index.
        index: usize,
    },
    /// The same token string appears twice.
    #[error("token {index} {token:?} duplicates token {first}")]
    DuplicateToken {
        /// Index of the second occurrence.
        index: usize,
        /// Index of the first occurrence.
        first: usize,
        /// The token string.
        token: String,
    },
    /// A token type value this crate does not know.
    #[error("token {index} has unsupported token type {value}")]
    UnsupportedTokenType {
        /// Token index.
        index: usize,
        /// The raw type value.
        value: i32,
    },
    /// A token of type normal holds a character outside the GPT-2 byte-level alphabet.
    #[error("normal token {index} {token:?} is not in byte-level form")]
    NotByteLevel {
        /// Token index.
        index: usize,
        /// The token string.
        token: String,
    },
    /// A merge line is not two tokens separated by one space.
    #[error("merge {index} {merge:?} is not of the form \"a b\"")]
    MalformedMerge {
        /// Merge index (its rank).
        index: usize,
        /// The merge line.
        merge: String,
    },
    /// A merge names a token, or produces a token, that is not in the vocabulary.
    #[error("merge {index} {merge:?} names token {token:?} that is not in the vocabulary")]
    MergeTokenMissing {
        /// Merge index (its rank).
        index: usize,
        /// The merge line.
        merge: String,
        /// The missing token string.
        token: String,
    },
    /// The same merge appears twice (a merge's rank is its one position in the list).
    #[error("merge {index} {merge:?} duplicates merge {first}")]
    DuplicateMerge {
        /// Index of the second occurrence.
        index: usize,
        /// Index of the first occurrence.
        first: usize,
        /// The merge line.
        merge: String,
    },
    /// A special token id (bos, eos, ...) is out of range.
    #[error("{name} id {id} is out of range for a vocabulary of {vocab_size} tokens")]
    SpecialIdOutOfRange {
        /// Which special id (e.g. "bos").
        name: &'static str,
        /// The id.
        id: u32,
        /// Vocabulary size.
        vocab_size: usize,
    },
    /// A token id passed to decode is out of range.
    #[error("token id {id} at position {position} is out of range for a vocabulary of {vocab_size} tokens")]
    IdOutOfRange {
        /// The id.
        id: u32,
        /// Its position in the input sequence.
        position: usize,
        /// Vocabulary size.
        vocab_size: usize,
    },
}

/// Why a SentencePiece-style vocabulary ([`crate::SpmVocab`]) could not become a
/// [`crate::Tokenizer`]. [`SpmVocabError::key`] names the GGUF metadata key at fault.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SpmVocabError {
    /// The vocabulary is empty or has more ids than fit a `u32`.
    #[error("vocabulary size {size} is outside 1..={limit}")]
    VocabSize {
        /// Number of tokens given.
        size: usize,
        /// Largest accepted size.
        limit: u64,
    },
    /// `scores` does not hold one score per token.
    #[error("vocabulary has {tokens} tokens but {scores} scores")]
    ScoreCountMismatch {
        /// Number of token strings.
        tokens: usize,
        /// Number of scores.
        scores: usize,
    },
    /// `token_types` does not hold one type per token.
    #[error("vocabulary has {tokens} tokens but {token_types} token types")]
    TypeCountMismatch {
        /// Number of token strings.
        tokens: usize,
        /// Number of token types.
        token_types: usize,
    },
    /// A token string is empty.
    #[error("token {index} is empty")]
    EmptyToken {
        /// Token index.
        index: usize,
    },
    /// The same token string appears twice.
    #[error("token {index} {token:?} duplicates token {first}")]
    DuplicateToken {
        /// Index of the second occurrence.
        index: usize,
        /// Index of the first occurrence.
        first: usize,
        /// The token string.
        token: String,
    },
    /// A token type value outside 1..=6.
    #[error(
        "token {index} has unsupported token type {value} (1..=6: normal, unknown, control, user-defined, unused, byte)"
    )]
    UnsupportedTokenType {
        /// Token index.
        index: usize,
        /// The raw type value.
        value: i32,
    },
    /// A score is NaN, which orders no merge.
    #[error("token {index} has a NaN score")]
    NanScore {
        /// Token index.
        index: usize,
    },
    /// A token of type byte is not spelled `<0xNN>` with two hex digits.
    #[error("byte token {index} {token:?} is not of the form <0xNN>")]
    MalformedBytePiece {
        /// Token index.
        index: usize,
        /// The token string.
        token: String,
    },
    /// A special token id (bos, eos, unk, pad), given or defaulted, is out of range.
    #[error("{name} id {id} is out of range for a vocabulary of {vocab_size} tokens")]
    SpecialIdOutOfRange {
        /// Which special id (e.g. "bos").
        name: &'static str,
        /// The id.
        id: u32,
        /// Vocabulary size.
        vocab_size: usize,
    },
}

impl SpmVocabError {
    /// The GGUF metadata key whose value is at fault (`tokenizer.ggml.tokens`, `.scores`, ...).
    pub fn key(&self) -> &'static str {
        match self {
            Self::VocabSize { .. } | Self::EmptyToken { .. } | Self::DuplicateToken { .. } => "tokenizer.ggml.tokens",
            Self::MalformedBytePiece { .. } => "tokenizer.ggml.tokens",
            Self::ScoreCountMismatch { .. } | Self::NanScore { .. } => "tokenizer.ggml.scores",
            Self::TypeCountMismatch { .. } | Self::UnsupportedTokenType { .. } => "tokenizer.ggml.token_type",
            Self::SpecialIdOutOfRange { name, .. } => match *name {
                "bos" => "tokenizer.ggml.bos_token_id",
                "eos" => "tokenizer.ggml.eos_token_id",
                "unk" => "tokenizer.ggml.unknown_token_id",
                _ => "tokenizer.ggml.padding_token_id",
            },
        }
    }
}

/// Why a chat template could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ChatTemplateError {
    /// The template is not one this crate recognises; nothing is guessed.
    #[error(
        "unrecognised chat template ({len} bytes, starts {prefix:?}): from byte offset {offset} ({found:?}) it \
         matches no supported template (ChatML)"
    )]
    Unrecognised {
        /// Length of the template in bytes.
        len: usize,
        /// Its first characters, for the message.
        prefix: String,
        /// The byte offset in the template where it departs from the supported template it
        /// follows furthest (its length when it is a proper prefix of one).
        offset: usize,
        /// The template's first characters from `offset` on.
        found: String,
    },
}

/// Why a sampler could not be built or could not sample.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SamplerError {
    /// Temperature is negative or not finite.
    #[error("temperature {value} must be finite and >= 0")]
    Temperature {
        /// The value given.
        value: f32,
    },
    /// top_p is outside (0, 1].
    #[error("top_p {value} must be in (0, 1]")]
    TopP {
        /// The value given.
        value: f32,
    },
    /// There were no logits to sample from.
    #[error("no logits to sample from")]
    Empty,
    /// More logits than token ids fit a `u32`.
    #[error("{len} logits exceed the id limit {limit}")]
    TooManyLogits {
        /// Number of logits.
        len: usize,
        /// Largest accepted number.
        limit: u64,
    },
    /// A logit is NaN or +infinity, which would make the distribution undefined.
    #[error("logit {index} is {value}, not a number the distribution can use")]
    BadLogit {
        /// Index (token id) of the logit.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// Every logit is -infinity: no token has positive probability.
    #[error("all {len} logits are -inf")]
    AllMasked {
        /// Number of logits.
        len: usize,
    },
    /// A presence or frequency penalty is not finite or beyond its limit.
    #[error("{name} penalty {value} must be in [-{limit}, {limit}]")]
    Penalty {
        /// `presence` or `frequency`.
        name: &'static str,
        /// The value given.
        value: f32,
        /// The largest magnitude accepted.
        limit: f32,
    },
    /// A logit bias is not finite or beyond its limit.
    #[error("the bias {value} of token {id} must be in [-{limit}, {limit}]")]
    LogitBias {
        /// The token id.
        id: u32,
        /// The value given.
        value: f32,
        /// The largest magnitude accepted.
        limit: f32,
    },
    /// A logit bias names a token id the logits do not hold.
    #[error("logit bias on token {id}, out of range for a vocabulary of {vocab_size} tokens")]
    BiasIdOutOfRange {
        /// The token id.
        id: u32,
        /// Number of logits.
        vocab_size: usize,
    },
    /// More top log-probabilities asked for than are reported.
    #[error("{value} top log-probabilities asked for; at most {limit}")]
    TopLogprobs {
        /// The number asked for.
        value: usize,
        /// The most reported.
        limit: usize,
    },
    /// The log-probability of a token id the logits do not hold was asked for.
    #[error("token {id} is out of range for a vocabulary of {vocab_size} tokens")]
    TokenOutOfRange {
        /// The token id.
        id: u32,
        /// Number of logits.
        vocab_size: usize,
    },
}
