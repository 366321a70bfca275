//! The tokenizer shared by both vocabulary models: token texts, types and decoded bytes, the
//! special ids, decoding; encoding dispatches to the model (`bpe` or `spm`).

use crate::bpe::Bpe;
use crate::error::TokenizerError;
use crate::pieces::{PieceIndex, Pieces};
use crate::pretokenize::PreTokenizer;
use crate::spm::Spm;

/// GGUF `tokenizer.ggml.token_type` values (llama.cpp's `llama_token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenType {
    /// 1: an ordinary token (a byte-level BPE token, or a SentencePiece piece).
    Normal,
    /// 2: the unknown token.
    Unknown,
    /// 3: a control token such as `<|im_start|>` or `<start_of_turn>`.
    Control,
    /// 4: a user-defined token, matched literally in text and decoded as its raw text.
    UserDefined,
    /// 5: an unused slot.
    Unused,
    /// 6: a SentencePiece byte-fallback piece `<0xNN>`, standing for one byte (SPM only).
    Byte,
}

impl TokenType {
    /// The type a raw GGUF value names, or `None` for 0 (undefined) and values past 6.
    pub(crate) fn from_raw(value: i32) -> Option<Self> {
        match value {
            1 => Some(Self::Normal),
            2 => Some(Self::Unknown),
            3 => Some(Self::Control),
            4 => Some(Self::UserDefined),
            5 => Some(Self::Unused),
            6 => Some(Self::Byte),
            _ => None,
        }
    }
}

/// Which algorithm a GGUF vocabulary is encoded with (`tokenizer.ggml.model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerModel {
    /// `gpt2`: byte-level BPE with ranked merges and a regex pre-tokenizer (SmolLM2); built by
    /// [`Tokenizer::new`] from a [`Vocab`].
    Bpe,
    /// `llama`: SentencePiece-style pieces with scores and byte fallback (Gemma 3), llama.cpp's
    /// SPM; built by [`Tokenizer::new_spm`] from a [`crate::SpmVocab`].
    Spm,
}

/// The `tokenizer.ggml.model` names [`TokenizerModel::from_gguf_name`] accepts, for error messages.
pub const SUPPORTED_TOKENIZER_MODELS: &str = "gpt2, llama";

impl TokenizerModel {
    /// The model a GGUF `tokenizer.ggml.model` value names, or `None`.
    pub fn from_gguf_name(name: &str) -> Option<Self> {
        match name {
            "gpt2" => Some(Self::Bpe),
            "llama" => Some(Self::Spm),
            _ => None,
        }
    }
}

/// The parts of a GGUF byte-level BPE tokenizer that this crate needs, as read from the file's
/// metadata.
#[derive(Debug, Clone, Default)]
pub struct Vocab {
    /// `tokenizer.ggml.tokens`: token strings, in GPT-2 byte-level form for normal tokens.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.token_type`, one per token.
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.merges`: `"a b"` lines, highest priority first.
    pub merges: Vec<String>,
    /// `tokenizer.ggml.bos_token_id`.
    pub bos: u32,
    /// `tokenizer.ggml.eos_token_id`.
    pub eos: u32,
    /// `tokenizer.ggml.unknown_token_id`, if present.
    pub unk: Option<u32>,
    /// `tokenizer.ggml.padding_token_id`, if present.
    pub pad: Option<u32>,
}

/// Texts of the tokens llama.cpp treats as ending generation (its end-of-generation list, matched
/// by text because converted models rarely name them in metadata). Of these a vocabulary holds a
/// few: Gemma 3 `<end_of_turn>`, `<eos>` and `</s>`, SmolLM2, LFM2 and Qwen `<|im_end|>` and
/// `<|endoftext|>`, Qwen also a normal token `</s>`.
pub(crate) const END_OF_GENERATION_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
];

/// The texts by which llama.cpp finds a vocabulary's fill-in-the-middle tokens: prefix, suffix,
/// middle, pad, repository and file separator, one list each. Each token found is made a control
/// token; the last three also end generation (Qwen's `<|fim_pad|>`, `<|repo_name|>` and
/// `<|file_sep|>`, SmolLM2's `<reponame>`).
const FIM_TEXTS: [&[&str]; 6] = [
    &[
        "<|fim_prefix|>",
        "<fim-prefix>",
        "<fim_prefix>",
        "<｜fim▁begin｜>",
        "<PRE>",
        "▁<PRE>",
        "<|code_prefix|>",
        "<|prefix|>",
    ],
    &[
        "<|fim_suffix|>",
        "<fim-suffix>",
        "<fim_suffix>",
        "<｜fim▁hole｜>",
        "<SUF>",
        "▁<SUF>",
        "<|code_suffix|>",
        "<|suffix|>",
    ],
    &[
        "<|fim_middle|>",
        "<fim-middle>",
        "<fim_middle>",
        "<｜fim▁end｜>",
        "<MID>",
        "▁<MID>",
        "<|code_middle|>",
        "<|middle|>",
    ],
    &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    &["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"],
    &["<|file_sep|>"],
];

/// The [`FIM_TEXTS`] lists whose token ends generation.
const FIM_END_OF_GENERATION: std::ops::Range<usize> = 3..6;

/// The FIM token llama.cpp finds by one of `texts`. It takes the first match in its hash map's
/// order; a vocabulary with two texts of one list (none known) gets the lowest id here.
fn fim_token(pieces: &PieceIndex, texts: &[&str]) -> Option<u32> {
    texts.iter().filter_map(|text| pieces.id(text)).min()
}

/// The tokens llama.cpp makes control tokens whatever their stored type: those on its
/// end-of-generation list and the FIM tokens. A control token is split out of text only with
/// special parsing, and decodes to its raw text only with `special` set.
pub(crate) fn control_by_text(pieces: &PieceIndex) -> Vec<u32> {
    let eog = END_OF_GENERATION_TEXTS.iter().filter_map(|text| pieces.id(text));
    eog.chain(FIM_TEXTS.iter().filter_map(|texts| fim_token(pieces, texts))).collect()
}

/// A validated tokenizer of either model.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    /// The stored string of every token, and the id of each.
    pub(crate) pieces: PieceIndex,
    pub(crate) types: Vec<TokenType>,
    /// Decoded bytes of every token, as [`Tokenizer::token_bytes`] gives them with `special` set.
    pub(crate) bytes: Pieces,
    pub(crate) bos: u32,
    pub(crate) eos: u32,
    pub(crate) unk: Option<u32>,
    pub(crate) pad: Option<u32>,
    /// Sorted, deduplicated.
    pub(crate) end_of_generation: Vec<u32>,
    pub(crate) model: Model,
}

/// The model-specific half of a [`Tokenizer`].
#[derive(Debug, Clone)]
pub(crate) enum Model {
    Bpe(Box<Bpe>),
    Spm(Box<Spm>),
}

/// Why a token list could not be indexed (shared by both models' validation).
pub(crate) enum IndexError {
    /// The list is empty or longer than `u32` ids reach.
    Size,
    /// Token `index` is empty.
    Empty { index: usize },
    /// Token `index` repeats token `first`.
    Duplicate { index: usize, first: usize, token: String },
}

/// The token strings stored back to back, with their ids. Tokens must be non-empty and distinct,
/// and their number must fit `u32` with [`NO_TOKEN`] left out of range.
pub(crate) fn index_tokens(tokens: Vec<String>) -> Result<PieceIndex, IndexError> {
    let size = tokens.len();
    if size == 0 || u32::try_from(size).is_err() {
        return Err(IndexError::Size);
    }
    let total = tokens.iter().map(String::len).sum();
    let mut pieces = PieceIndex::with_capacity(size, total);
    for (index, token) in tokens.into_iter().enumerate() {
        if token.is_empty() {
            return Err(IndexError::Empty { index });
        }
        if let Err(first) = pieces.push(&token) {
            return Err(IndexError::Duplicate { index, first: id_index(first), token });
        }
    }
    Ok(pieces)
}

/// Ids of the tokens llama.cpp ends generation at: those of [`END_OF_GENERATION_TEXTS`], the FIM
/// pad, repository and file-separator tokens, and `eos`.
pub(crate) fn end_of_generation_ids(pieces: &PieceIndex, eos: u32) -> Vec<u32> {
    let mut eog: Vec<u32> = END_OF_GENERATION_TEXTS.iter().filter_map(|text| pieces.id(text)).collect();
    eog.extend(FIM_TEXTS[FIM_END_OF_GENERATION].iter().filter_map(|texts| fim_token(pieces, texts)));
    eog.push(eos);
    eog.sort_unstable();
    eog.dedup();
    eog
}

/// Marks "no token" (a byte without a token, a piece not in the vocabulary); never a valid id,
/// since vocabularies are smaller than `u32::MAX`.
pub(crate) const NO_TOKEN: u32 = u32::MAX;

/// An id already checked against the vocabulary size, as an index.
pub(crate) fn id_index(id: u32) -> usize {
    // PANIC: ids come from this vocabulary, whose size fits both u32 and usize.
    usize::try_from(id).expect("vocabulary ids fit usize")
}

/// `id` if it is below `vocab_size`.
pub(crate) fn in_range(id: u32, vocab_size: usize) -> Option<u32> {
    usize::try_from(id).is_ok_and(|i| i < vocab_size).then_some(id)
}

impl Tokenizer {
    /// Which model this tokenizer encodes with.
    pub fn model(&self) -> TokenizerModel {
        match self.model {
            Model::Bpe(_) => TokenizerModel::Bpe,
            Model::Spm(_) => TokenizerModel::Spm,
        }
    }

    /// Number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.types.len()
    }

    /// Beginning-of-sequence id.
    pub fn bos(&self) -> u32 {
        self.bos
    }

    /// End-of-sequence id.
    pub fn eos(&self) -> u32 {
        self.eos
    }

    /// Unknown-token id, if the vocabulary names one.
    pub fn unk(&self) -> Option<u32> {
        self.unk
    }

    /// Padding id, if the vocabulary names one.
    pub fn pad(&self) -> Option<u32> {
        self.pad
    }

    /// The tokens llama.cpp ends generation at, sorted: the EOS id, every token whose text is on
    /// its end-of-generation list, and the FIM pad, repository and file-separator tokens it finds
    /// by text (Gemma 3: `<eos>`, `</s>`, `<end_of_turn>`; SmolLM2: `<|endoftext|>`, `<|im_end|>`,
    /// `<reponame>`; Qwen: `</s>`, `<|endoftext|>`, `<|im_end|>`, `<|fim_pad|>`, `<|repo_name|>`,
    /// `<|file_sep|>`).
    pub fn end_of_generation(&self) -> &[u32] {
        &self.end_of_generation
    }

    /// Whether [`Tokenizer::encode_special`] puts BOS first (`tokenizer.ggml.add_bos_token`). A
    /// byte-level [`Vocab`] carries no such flag: llama.cpp's default for the pre-tokenizer
    /// ([`PreTokenizer::default_add_bos`]: `true` for `lfm2`), unless
    /// [`Tokenizer::with_add_special`] set it.
    pub fn add_bos(&self) -> bool {
        match &self.model {
            Model::Bpe(bpe) => bpe.add_bos,
            Model::Spm(spm) => spm.add_bos,
        }
    }

    /// Whether [`Tokenizer::encode_special`] puts EOS last (`tokenizer.ggml.add_eos_token`;
    /// `false` for a byte-level [`Vocab`] unless [`Tokenizer::with_add_special`] set it).
    pub fn add_eos(&self) -> bool {
        match &self.model {
            Model::Bpe(bpe) => bpe.add_eos,
            Model::Spm(spm) => spm.add_eos,
        }
    }

    /// This tokenizer with [`Tokenizer::add_bos`] and [`Tokenizer::add_eos`] set from a file's
    /// `tokenizer.ggml.add_bos_token` and `tokenizer.ggml.add_eos_token`; `None` (the key is
    /// absent) keeps the current value, as llama.cpp lets a present key override its default.
    #[must_use]
    pub fn with_add_special(mut self, add_bos: Option<bool>, add_eos: Option<bool>) -> Self {
        let (bos, eos) = match &mut self.model {
            Model::Bpe(bpe) => (&mut bpe.add_bos, &mut bpe.add_eos),
            Model::Spm(spm) => (&mut spm.add_bos, &mut spm.add_eos),
        };
        *bos = add_bos.unwrap_or(*bos);
        *eos = add_eos.unwrap_or(*eos);
        self
    }

    /// Whether SPM encoding writes a space before text that starts the input or follows a special
    /// token, and decoding drops it again (`tokenizer.ggml.add_space_prefix`; always `false` for
    /// byte-level BPE).
    pub fn add_space_prefix(&self) -> bool {
        match &self.model {
            Model::Bpe(_) => false,
            Model::Spm(spm) => spm.add_space_prefix,
        }
    }

    /// The pre-tokenizer in use (byte-level BPE only; SPM has none).
    pub fn pre_tokenizer(&self) -> Option<PreTokenizer> {
        match &self.model {
            Model::Bpe(bpe) => Some(bpe.pre),
            Model::Spm(_) => None,
        }
    }

    /// The bytes that have no token of their own: BPE drops them when encoding (for SmolLM2, 21
    /// bytes, mostly C0 controls and bytes invalid in UTF-8); SPM writes a character it cannot
    /// spell in byte pieces as the unknown token.
    pub fn missing_bytes(&self) -> Vec<u8> {
        let byte_ids = match &self.model {
            Model::Bpe(bpe) => &bpe.byte_ids,
            Model::Spm(spm) => &spm.byte_ids,
        };
        (0..=u8::MAX).filter(|&b| byte_ids[usize::from(b)] == NO_TOKEN).collect()
    }

    /// The stored string of token `id` (byte-level form for BPE normal tokens, `▁` for spaces in
    /// SPM pieces), or `None` if out of range.
    pub fn token_text(&self, id: u32) -> Option<&str> {
        let index = usize::try_from(id).ok()?;
        (index < self.vocab_size()).then(|| self.pieces.text(index))
    }

    /// The type of token `id`, or `None` if out of range. For SPM this is the type encoding and
    /// decoding use: a token on llama.cpp's end-of-generation list is a control token whatever
    /// its stored type (Gemma 3's user-defined `</s>`).
    pub fn token_type(&self, id: u32) -> Option<TokenType> {
        self.types.get(usize::try_from(id).ok()?).copied()
    }

    /// The id of a non-normal token (control, user-defined, ...) spelled `name`, e.g. `<|im_start|>`.
    pub fn special(&self, name: &str) -> Option<u32> {
        self.pieces.id(name).filter(|&id| !matches!(self.types[id_index(id)], TokenType::Normal | TokenType::Byte))
    }

    /// The id of the token whose stored string is `text`, of any type.
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.pieces.id(text)
    }

    /// The bytes token `id` decodes to (llama.cpp's `token_to_piece`): control and unknown tokens
    /// give their text only when `special` is set, otherwise nothing; unused tokens give their text
    /// under the same rule in BPE and nothing in SPM; SPM pieces give `▁` as a space and byte
    /// pieces their byte. `None` if `id` is out of range.
    pub fn token_bytes(&self, id: u32, special: bool) -> Option<&[u8]> {
        let index = usize::try_from(id).ok()?;
        let shown = match self.types.get(index)? {
            TokenType::Normal | TokenType::UserDefined | TokenType::Byte => true,
            TokenType::Control | TokenType::Unknown | TokenType::Unused => special,
        };
        if shown { self.bytes.get(index) } else { Some(&[]) }
    }

    /// Encodes `text` without adding BOS or EOS (llama.cpp's `tokenize` with `add_special` off).
    ///
    /// User-defined tokens that occur literally are always emitted as their ids (as llama.cpp
    /// does); control and unknown tokens only when `parse_special` is set, otherwise their text is
    /// tokenized like any other. BPE: where literal tokens overlap, the longest wins; bytes whose
    /// byte-level symbol is not in the vocabulary are dropped (see [`Tokenizer::missing_bytes`]).
    /// SPM: special tokens are split out longest first (llama.cpp's order), and the text between
    /// them is encoded as [`Tokenizer::new_spm`] describes.
    pub fn encode(&self, text: &str, parse_special: bool) -> Vec<u32> {
        match &self.model {
            Model::Bpe(bpe) => bpe.encode(self, text, parse_special),
            Model::Spm(spm) => spm.encode(self, text, parse_special),
        }
    }

    /// Encodes `text` as llama.cpp's `tokenize(text, add_special, parse_special)` does: with
    /// `add_special`, BOS first if [`Tokenizer::add_bos`] and EOS last if [`Tokenizer::add_eos`].
    pub fn encode_special(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
        let bos = (add_special && self.add_bos()).then_some(self.bos);
        let eos = (add_special && self.add_eos()).then_some(self.eos);
        let mut ids: Vec<u32> = bos.into_iter().collect();
        ids.extend(self.encode(text, parse_special));
        ids.extend(eos);
        ids
    }

    /// Decodes `ids` to bytes (not necessarily UTF-8: a sequence may end inside a character), as
    /// llama.cpp's `detokenize` with `remove_special` off: the pieces of [`Tokenizer::token_bytes`]
    /// one after another, except that with [`Tokenizer::add_space_prefix`] one leading space of the
    /// first piece is dropped (the space encoding added). Control tokens give their text only when
    /// `special` is set. (For `gpt2`, `default` and `lfm2` vocabularies llama.cpp's `detokenize`
    /// also "cleans up" spaces before `?!.,` and some contractions afterwards; this does not,
    /// which keeps decoding the inverse of encoding.)
    pub fn decode(&self, ids: &[u32], special: bool) -> Result<Vec<u8>, TokenizerError> {
        let mut out = Vec::new();
        for (position, &id) in ids.iter().enumerate() {
            let mut piece = self.token_bytes(id, special).ok_or(TokenizerError::IdOutOfRange {
                id,
                position,
                vocab_size: self.vocab_size(),
            })?;
            if position == 0 && self.add_space_prefix() {
                piece = piece.strip_prefix(b" ").unwrap_or(piece);
            }
            out.extend_from_slice(piece);
        }
        Ok(out)
    }
}
