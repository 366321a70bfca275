//! SentencePiece-style tokenization (`tokenizer.ggml.model = "llama"`, Gemma 3), as llama.cpp's
//! SPM tokenizer does it; the rules are documented on [`Tokenizer::new_spm`].

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::error::SpmVocabError;
use crate::pieces::Pieces;
use crate::spm_specials::{Fragment, Specials};
use crate::tokenizer::{
    IndexError, Model, NO_TOKEN, TokenType, Tokenizer, control_by_text, end_of_generation_ids, id_index, in_range,
    index_tokens,
};

/// `▁` (U+2581 LOWER ONE EIGHTH BLOCK), SentencePiece's stand-in for a space.
const SPACE_MARK: char = '\u{2581}';

/// The parts of a GGUF SentencePiece-style tokenizer, as read from the file's metadata. Keys that
/// a file may leave out are `Option`s; `None` takes llama.cpp's default for `llama` vocabularies.
#[derive(Debug, Clone, Default)]
pub struct SpmVocab {
    /// `tokenizer.ggml.tokens`: the pieces, `▁` for a space.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.scores`, one per token: merge priority, higher first. A file without
    /// scores means 0 for every piece (llama.cpp's reading): pass zeros.
    pub scores: Vec<f32>,
    /// `tokenizer.ggml.token_type`, one per token: 1 normal, 2 unknown, 3 control, 4 user-defined,
    /// 5 unused, 6 byte.
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.bos_token_id` (default 1).
    pub bos: Option<u32>,
    /// `tokenizer.ggml.eos_token_id` (default 2).
    pub eos: Option<u32>,
    /// `tokenizer.ggml.unknown_token_id` (default 0).
    pub unk: Option<u32>,
    /// `tokenizer.ggml.padding_token_id` (default none).
    pub pad: Option<u32>,
    /// `tokenizer.ggml.add_bos_token` (default true).
    pub add_bos: Option<bool>,
    /// `tokenizer.ggml.add_eos_token` (default false).
    pub add_eos: Option<bool>,
    /// `tokenizer.ggml.add_space_prefix` (default true).
    pub add_space_prefix: Option<bool>,
}

/// The SPM half of a [`Tokenizer`].
#[derive(Debug, Clone)]
pub(crate) struct Spm {
    /// Per token; NaN-free, and -0.0 stored as 0.0 so that equal scores compare equal.
    scores: Vec<f32>,
    /// The piece each byte falls back to, or [`NO_TOKEN`].
    pub(crate) byte_ids: [u32; 256],
    specials: Specials,
    /// The longest piece in bytes: no longer pair can be a piece.
    max_piece_len: usize,
    pub(crate) add_bos: bool,
    pub(crate) add_eos: bool,
    pub(crate) add_space_prefix: bool,
}

/// The byte a `<0xNN>` piece stands for, or `None` if `piece` is not of that form.
fn byte_piece_value(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    (hex.len() == 2 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| u8::from_str_radix(hex, 16).ok())?
}

impl Tokenizer {
    /// Validates a SentencePiece-style `vocab` and builds its tokenizer, which encodes and decodes
    /// as llama.cpp's SPM tokenizer does. Indexing a quarter million pieces is the main cost of
    /// building (the Gemma 3 reference test measures it).
    ///
    /// Encoding (`encode(text, parse_special)`):
    /// 1. Special tokens are split out of the text: user-defined tokens always, control and
    ///    unknown tokens when `parse_special` is set. The longest goes first and claims all its
    ///    occurrences, leftmost first, in the text not yet claimed; then the next longest (equal
    ///    lengths in id order). So with specials `ab` and `bcd`, `abcd` is `a` + `bcd`.
    /// 2. Each stretch of text between them becomes one symbol sequence: a space is put in front when
    ///    `add_space_prefix` is set and the stretch starts the input or follows a special token;
    ///    every space becomes `▁` (U+2581, nothing else is escaped); the text is cut into its
    ///    characters.
    /// 3. Adjacent symbols whose concatenation is a vocabulary piece (of any type) are candidates; the
    ///    candidate whose piece has the highest score merges first, the leftmost on equal scores, and
    ///    the merged symbol forms new candidates with its neighbours. A priority queue of candidates
    ///    makes this O(n log n) in the characters of the stretch; there is no pre-tokenizer, so the
    ///    whole stretch is one sequence.
    /// 4. Each final symbol is its piece's id. A single character that is not a piece is written as
    ///    its UTF-8 bytes in byte pieces (`<0xNN>`, upper-case hex, or failing that the one-byte piece
    ///    itself); a character one of whose bytes has no piece becomes the unknown token (llama.cpp
    ///    gives up on the whole text there).
    ///
    /// Decoding gives normal pieces with `▁` as a space, byte pieces as their byte, user-defined
    /// tokens as their text, control and unknown tokens as their text only when asked, unused tokens
    /// as nothing; a whole-sequence decode drops one leading space when `add_space_prefix` is set
    /// (see [`Tokenizer::decode`]).
    ///
    /// Token types are taken from the vocabulary, with one adjustment llama.cpp makes when it loads a
    /// vocabulary: a token whose text is on its end-of-generation list is a control token (Gemma 3's
    /// user-defined `</s>` is therefore only split out with `parse_special`, and decodes to nothing
    /// without `special`).
    pub fn new_spm(vocab: SpmVocab) -> Result<Self, SpmVocabError> {
        let SpmVocab { tokens, scores, token_types, bos, eos, unk, pad, add_bos, add_eos, add_space_prefix } = vocab;
        let size = tokens.len();
        if size != 0 && scores.len() != size {
            return Err(SpmVocabError::ScoreCountMismatch { tokens: size, scores: scores.len() });
        }
        if size != 0 && token_types.len() != size {
            return Err(SpmVocabError::TypeCountMismatch { tokens: size, token_types: token_types.len() });
        }
        let pieces = index_tokens(tokens).map_err(|e| match e {
            IndexError::Size => SpmVocabError::VocabSize { size, limit: u64::from(u32::MAX) },
            IndexError::Empty { index } => SpmVocabError::EmptyToken { index },
            IndexError::Duplicate { index, first, token } => SpmVocabError::DuplicateToken { index, first, token },
        })?;
        let mut types = token_types
            .iter()
            .enumerate()
            .map(|(index, &raw)| {
                TokenType::from_raw(raw).ok_or(SpmVocabError::UnsupportedTokenType { index, value: raw })
            })
            .collect::<Result<Vec<TokenType>, _>>()?;
        // llama.cpp makes every token on its end-of-generation list, and the FIM tokens, control.
        for id in control_by_text(&pieces) {
            types[id_index(id)] = TokenType::Control;
        }
        let mut bytes = Pieces::with_capacity(size, pieces.total_len());
        for (index, ty) in types.iter().enumerate() {
            let piece = pieces.get(index).unwrap_or_default();
            match ty {
                TokenType::Normal => push_unescaped(&mut bytes, piece),
                TokenType::Byte => {
                    let token = pieces.text(index);
                    let byte = byte_piece_value(token)
                        .ok_or_else(|| SpmVocabError::MalformedBytePiece { index, token: token.to_owned() })?;
                    bytes.push(&[byte]);
                }
                TokenType::Unused => bytes.push(&[]),
                TokenType::Unknown | TokenType::Control | TokenType::UserDefined => bytes.push(piece),
            }
        }
        let scores = scores
            .iter()
            .enumerate()
            .map(|(index, &score)| {
                if score.is_nan() {
                    Err(SpmVocabError::NanScore { index })
                } else {
                    // -0.0 + 0.0 is 0.0: equal scores compare equal in the merge order, as under
                    // llama.cpp's `<` on floats.
                    Ok(score + 0.0)
                }
            })
            .collect::<Result<Vec<f32>, _>>()?;
        let checked = |name: &'static str, id: u32| {
            in_range(id, size).ok_or(SpmVocabError::SpecialIdOutOfRange { name, id, vocab_size: size })
        };
        let bos = checked("bos", bos.unwrap_or(1))?;
        let eos = checked("eos", eos.unwrap_or(2))?;
        let unk = checked("unk", unk.unwrap_or(0))?;
        let pad = pad.map(|id| checked("pad", id)).transpose()?;
        let byte_ids = std::array::from_fn(|byte| {
            // CAST: from_fn indexes 0..256.
            let byte = u8::try_from(byte).unwrap_or(u8::MAX);
            let hex = format!("<0x{byte:02X}>");
            let single = (byte.is_ascii()).then(|| char::from(byte).to_string());
            pieces.id(&hex).or_else(|| single.and_then(|s| pieces.id(&s))).unwrap_or(NO_TOKEN)
        });
        let max_piece_len = pieces.max_len();
        let specials = Specials::new(&pieces, &types);
        Ok(Self {
            bos,
            eos,
            unk: Some(unk),
            pad,
            end_of_generation: end_of_generation_ids(&pieces, eos),
            pieces,
            types,
            bytes,
            model: Model::Spm(Box::new(Spm {
                scores,
                byte_ids,
                specials,
                max_piece_len,
                add_bos: add_bos.unwrap_or(true),
                add_eos: add_eos.unwrap_or(false),
                add_space_prefix: add_space_prefix.unwrap_or(true),
            })),
        })
    }
}

/// Pushes `piece` with every `▁` written as a space.
fn push_unescaped(bytes: &mut Pieces, piece: &[u8]) {
    const MARK: &[u8] = "\u{2581}".as_bytes();
    // Most pieces hold no `▁`, and every `▁` starts with the byte 0xE2.
    if !piece.contains(&MARK[0]) {
        bytes.push(piece);
        return;
    }
    let mut unescaped = Vec::with_capacity(piece.len());
    let mut rest = piece;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix(MARK) {
            unescaped.push(b' ');
            rest = after;
        } else {
            unescaped.push(rest[0]);
            rest = &rest[1..];
        }
    }
    bytes.push(&unescaped);
}

impl Spm {
    /// Encodes `text` (see the module documentation).
    pub(crate) fn encode(&self, t: &Tokenizer, text: &str, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut work = Work::default();
        // The start of the input counts as "after a special token" for the space prefix.
        let mut after_special = true;
        for fragment in self.specials.partition(&t.pieces, text, parse_special) {
            match fragment {
                Fragment::Text(range) => {
                    let prefix = self.add_space_prefix && after_special;
                    self.encode_text(t, &text[range], prefix, &mut work, &mut out);
                    after_special = false;
                }
                Fragment::Token(id) => {
                    out.push(id);
                    after_special = true;
                }
            }
        }
        out
    }

    /// Encodes one stretch of text that holds no special token.
    fn encode_text(&self, t: &Tokenizer, raw: &str, prefix: bool, work: &mut Work, out: &mut Vec<u32>) {
        let Work { text, syms, heap } = work;
        text.clear();
        syms.clear();
        heap.clear();
        if prefix {
            text.push(SPACE_MARK);
        }
        for c in raw.chars() {
            text.push(if c == ' ' { SPACE_MARK } else { c });
        }
        for (start, c) in text.char_indices() {
            let len = c.len_utf8();
            let id = t.pieces.id(&text[start..start + len]).unwrap_or(NO_TOKEN);
            let index = syms.len();
            syms.push(Sym { start, len, id, prev: index.wrapping_sub(1), next: index + 1 });
        }
        let n = syms.len();
        for right in 1..n {
            self.push_candidate(t, text, syms, heap, right - 1, right);
        }
        while let Some(Candidate { left, right, size, id, .. }) = heap.pop() {
            let (l, r) = (syms[left], syms[right]);
            // A merge at either end since the candidate was made changed one of the lengths.
            if l.len == 0 || r.len == 0 || l.len + r.len != size {
                continue;
            }
            syms[left].len = size;
            syms[left].id = id;
            syms[right].len = 0;
            syms[left].next = r.next;
            if r.next < n {
                syms[r.next].prev = left;
                self.push_candidate(t, text, syms, heap, left, r.next);
            }
            if l.prev < n {
                self.push_candidate(t, text, syms, heap, l.prev, left);
            }
        }
        let mut at = 0;
        while at < n {
            let sym = syms[at];
            if sym.id != NO_TOKEN {
                out.push(sym.id);
            } else {
                self.byte_fallback(t, &text.as_bytes()[sym.start..sym.start + sym.len], out);
            }
            at = sym.next;
        }
    }

    /// A character that is not a piece: its bytes as byte pieces, or the unknown token.
    fn byte_fallback(&self, t: &Tokenizer, bytes: &[u8], out: &mut Vec<u32>) {
        let ids = bytes.iter().map(|&b| self.byte_ids[usize::from(b)]);
        if ids.clone().all(|id| id != NO_TOKEN) {
            out.extend(ids);
        } else {
            out.extend(t.unk);
        }
    }

    /// Queues the merge of adjacent symbols `left` and `right` if their text is a piece.
    fn push_candidate(
        &self,
        t: &Tokenizer,
        text: &str,
        syms: &[Sym],
        heap: &mut BinaryHeap<Candidate>,
        left: usize,
        right: usize,
    ) {
        let (l, r) = (syms[left], syms[right]);
        let size = l.len + r.len;
        if size > self.max_piece_len {
            return;
        }
        let Some(id) = text.get(l.start..l.start + size).and_then(|piece| t.pieces.id(piece)) else { return };
        heap.push(Candidate { score: self.scores[id_index(id)], left, right, size, id });
    }
}

/// One symbol of the sequence being merged: `text[start..start + len]`; `len` 0 once merged into
/// its left neighbour. `prev`/`next` are indices, out of range (`usize::MAX` or `n`) at the ends.
#[derive(Debug, Clone, Copy)]
struct Sym {
    start: usize,
    len: usize,
    /// The piece's id, or [`NO_TOKEN`] for a character that is not a piece.
    id: u32,
    prev: usize,
    next: usize,
}

/// A possible merge. The queue pops the highest score first, then the lowest `left`.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    score: f32,
    left: usize,
    right: usize,
    /// Bytes of the merged text, to tell a candidate made stale by another merge.
    size: usize,
    id: u32,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.left.cmp(&self.left))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

/// Scratch space reused across the stretches of one encode call.
#[derive(Debug, Default)]
struct Work {
    text: String,
    syms: Vec<Sym>,
    heap: BinaryHeap<Candidate>,
}
