//! Byte-level BPE (`tokenizer.ggml.model = "gpt2"`): vocabulary validation, encoding (special
//! tokens, pre-tokenizer, merges by rank).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::byte_level::ByteLevel;
use crate::error::TokenizerError;
use crate::pieces::{PieceIndex, Pieces};
use crate::pretokenize::{PreTokenizer, SUPPORTED_PRE_TOKENIZERS};
use crate::tokenizer::{
    IndexError, Model, NO_TOKEN, TokenType, Tokenizer, Vocab, control_by_text, end_of_generation_ids, id_index,
    in_range, index_tokens,
};

/// `(left id, right id)` → `(rank, merged id)`.
type MergeTable = HashMap<(u32, u32), (u32, u32)>;

/// The byte-level BPE half of a [`Tokenizer`].
#[derive(Debug, Clone)]
pub(crate) struct Bpe {
    merges: MergeTable,
    /// The id of each byte's byte-level symbol, or [`NO_TOKEN`].
    pub(crate) byte_ids: [u32; 256],
    /// Tokens matched literally in text, grouped by first byte, longest first; `bool` = matched
    /// only when special parsing is on.
    literal: Vec<Vec<(u32, bool)>>,
    pub(crate) pre: PreTokenizer,
    /// Whether a pre-token that is itself a token is emitted whole ([`PreTokenizer::ignore_merges`]).
    ignore_merges: bool,
    /// GPT-2's byte-to-character table, to spell a pre-token as a token string for that lookup.
    byte_level: ByteLevel,
    /// Whether `encode_special` puts BOS first / EOS last (llama.cpp's `add_bos`, `add_eos`).
    pub(crate) add_bos: bool,
    pub(crate) add_eos: bool,
}

fn checked_id(name: &'static str, id: u32, vocab_size: usize) -> Result<u32, TokenizerError> {
    in_range(id, vocab_size).ok_or(TokenizerError::SpecialIdOutOfRange { name, id, vocab_size })
}

/// The byte-level reading of a GGUF token type: 0 (undefined) and 6 (SentencePiece byte pieces)
/// have no meaning in a byte-level vocabulary.
fn bpe_token_type(raw: i32) -> Option<TokenType> {
    TokenType::from_raw(raw).filter(|ty| *ty != TokenType::Byte)
}

impl Tokenizer {
    /// Validates a byte-level BPE `vocab` and builds a tokenizer using the pre-tokenizer named
    /// `pre` (GGUF `tokenizer.ggml.pre`: `smollm`, `gpt2`, `default`, `lfm2` or `qwen35`).
    ///
    /// As llama.cpp does: tokens on its end-of-generation list and its fill-in-the-middle tokens
    /// (found by text) become control tokens whatever their stored type (Qwen's normal `</s>`);
    /// `lfm2` emits a pre-token that is itself in the vocabulary as that token, without merges,
    /// and puts BOS first by default (see [`Tokenizer::with_add_special`]).
    pub fn new(vocab: Vocab, pre: &str) -> Result<Self, TokenizerError> {
        let pre = PreTokenizer::from_name(pre).ok_or_else(|| TokenizerError::UnknownPreTokenizer {
            name: pre.to_owned(),
            supported: SUPPORTED_PRE_TOKENIZERS,
        })?;
        let Vocab { tokens, token_types, merges, bos, eos, unk, pad } = vocab;
        let size = tokens.len();
        if token_types.len() != size && size != 0 {
            return Err(TokenizerError::TypeCountMismatch { tokens: size, token_types: token_types.len() });
        }
        let pieces = index_tokens(tokens).map_err(|e| match e {
            // NO_TOKEN (u32::MAX) must stay out of range.
            IndexError::Size => TokenizerError::VocabSize { size, limit: u64::from(u32::MAX) },
            IndexError::Empty { index } => TokenizerError::EmptyToken { index },
            IndexError::Duplicate { index, first, token } => TokenizerError::DuplicateToken { index, first, token },
        })?;
        let bl = ByteLevel::new();
        let mut types = token_types
            .iter()
            .enumerate()
            .map(|(index, &raw)| bpe_token_type(raw).ok_or(TokenizerError::UnsupportedTokenType { index, value: raw }))
            .collect::<Result<Vec<TokenType>, _>>()?;
        for id in control_by_text(&pieces) {
            types[id_index(id)] = TokenType::Control;
        }
        let mut bytes = Pieces::with_capacity(size, 0);
        for (index, &ty) in types.iter().enumerate() {
            let token = pieces.text(index);
            match ty {
                TokenType::Normal => {
                    let decoded = bl
                        .decode(token)
                        .ok_or_else(|| TokenizerError::NotByteLevel { index, token: token.to_owned() })?;
                    bytes.push(&decoded);
                }
                _ => bytes.push(token.as_bytes()),
            }
        }
        // Real vocabularies lack some byte symbols (SmolLM2 has no token for 21 bytes: some C0
        // controls, 0xF1, 0xF2 and bytes that never occur in UTF-8). Those bytes get NO_TOKEN.
        let mut byte_ids = [NO_TOKEN; 256];
        for byte in 0..=u8::MAX {
            let symbol = bl.char_of(byte).to_string();
            let id = pieces.id(&symbol).filter(|&id| types[id_index(id)] == TokenType::Normal);
            byte_ids[usize::from(byte)] = id.unwrap_or(NO_TOKEN);
        }
        let merges = build_merges(&merges, &pieces)?;
        let literal = build_literal(&pieces, &types);
        let eos = checked_id("eos", eos, size)?;
        Ok(Self {
            bos: checked_id("bos", bos, size)?,
            eos,
            unk: unk.map(|id| checked_id("unk", id, size)).transpose()?,
            pad: pad.map(|id| checked_id("pad", id, size)).transpose()?,
            end_of_generation: end_of_generation_ids(&pieces, eos),
            pieces,
            types,
            bytes,
            model: Model::Bpe(Box::new(Bpe {
                merges,
                byte_ids,
                literal,
                pre,
                ignore_merges: pre.ignore_merges(),
                byte_level: bl,
                add_bos: pre.default_add_bos(),
                add_eos: false,
            })),
        })
    }
}

impl Bpe {
    /// Encodes `text` (see [`Tokenizer::encode`]).
    pub(crate) fn encode(&self, t: &Tokenizer, text: &str, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut plain_start = 0;
        let mut at = 0;
        let bytes = text.as_bytes();
        while at < bytes.len() {
            if let Some((id, len)) = self.literal_at(t, &bytes[at..], parse_special) {
                self.encode_plain(t, &text[plain_start..at], &mut out);
                out.push(id);
                at += len;
                plain_start = at;
            } else {
                at += 1;
                while at < bytes.len() && !text.is_char_boundary(at) {
                    at += 1;
                }
            }
        }
        self.encode_plain(t, &text[plain_start..], &mut out);
        out
    }

    /// The longest literal token at the start of `rest`, as `(id, length)`.
    fn literal_at(&self, t: &Tokenizer, rest: &[u8], parse_special: bool) -> Option<(u32, usize)> {
        let first = usize::from(*rest.first()?);
        self.literal[first].iter().find_map(|&(id, needs_special)| {
            let token = t.pieces.get(id_index(id)).unwrap_or_default();
            (rest.starts_with(token) && (parse_special || !needs_special)).then_some((id, token.len()))
        })
    }

    /// Encodes text that holds no literal tokens.
    fn encode_plain(&self, t: &Tokenizer, text: &str, out: &mut Vec<u32>) {
        let mut work = Work::default();
        self.pre.split(text, |piece| {
            if let Some(id) = self.whole_token(t, piece, &mut work.spelled) {
                out.push(id);
            } else {
                self.bpe(piece, &mut work, out);
            }
        });
    }

    /// With `ignore_merges`, the token whose string is `piece` in byte-level form, of any type (as
    /// llama.cpp looks the pre-token up among all token texts).
    fn whole_token(&self, t: &Tokenizer, piece: &str, spelled: &mut String) -> Option<u32> {
        if !self.ignore_merges {
            return None;
        }
        spelled.clear();
        spelled.extend(piece.bytes().map(|b| self.byte_level.char_of(b)));
        t.pieces.id(spelled)
    }

    /// Byte-pair encodes one pre-token: start from single-byte symbols and repeatedly apply the
    /// lowest-ranked merge among adjacent pairs, leftmost first on ties (HF's and llama.cpp's order).
    fn bpe(&self, piece: &str, work: &mut Work, out: &mut Vec<u32>) {
        let Work { syms, prev, heap, spelled: _ } = work;
        syms.clear();
        prev.clear();
        heap.clear();
        syms.extend(piece.bytes().map(|b| Sym { id: self.byte_ids[usize::from(b)], next: 0, alive: true }));
        let n = syms.len();
        for (i, sym) in syms.iter_mut().enumerate() {
            sym.next = i + 1;
        }
        // usize::MAX (0 - 1) marks "no previous symbol", like n marks "no next".
        prev.extend((0..n).map(|i| i.wrapping_sub(1)));
        for left in 0..n.saturating_sub(1) {
            self.push_pair(syms, heap, left, left + 1);
        }
        while let Some(Reverse(Pair { rank: _, left, right, left_id, right_id, merged })) = heap.pop() {
            let (l, r) = (&syms[left], &syms[right]);
            let stale = !l.alive || !r.alive || l.next != right || l.id != left_id || r.id != right_id;
            if stale {
                continue;
            }
            syms[left].id = merged;
            syms[right].alive = false;
            let after = syms[right].next;
            syms[left].next = after;
            if after < n {
                prev[after] = left;
                self.push_pair(syms, heap, left, after);
            }
            let before = prev[left];
            if before < n {
                self.push_pair(syms, heap, before, left);
            }
        }
        // A byte without a token is dropped, as llama.cpp and HF `tokenizers` (no unk token) do;
        // it never merged because NO_TOKEN is in no merge.
        out.extend(syms.iter().filter(|s| s.alive && s.id != NO_TOKEN).map(|s| s.id));
    }

    fn push_pair(&self, syms: &[Sym], heap: &mut BinaryHeap<Reverse<Pair>>, left: usize, right: usize) {
        let (left_id, right_id) = (syms[left].id, syms[right].id);
        if let Some(&(rank, merged)) = self.merges.get(&(left_id, right_id)) {
            heap.push(Reverse(Pair { rank, left, right, left_id, right_id, merged }));
        }
    }
}

fn build_merges(lines: &[String], pieces: &PieceIndex) -> Result<MergeTable, TokenizerError> {
    let mut merges: MergeTable = HashMap::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let malformed = || TokenizerError::MalformedMerge { index, merge: line.clone() };
        let (a, b) = line.split_once(' ').ok_or_else(malformed)?;
        if a.is_empty() || b.is_empty() || b.contains(' ') {
            return Err(malformed());
        }
        let lookup = |token: &str| {
            pieces.id(token).ok_or_else(|| TokenizerError::MergeTokenMissing {
                index,
                merge: line.clone(),
                token: token.to_owned(),
            })
        };
        let merged = format!("{a}{b}");
        let (left, right, result) = (lookup(a)?, lookup(b)?, lookup(&merged)?);
        let rank = u32::try_from(index).map_err(|_| malformed())?;
        // A merge is its line split at the only space, so one pair of ids is one line: a pair
        // already present is the same line again.
        if let Some(&(first, _)) = merges.get(&(left, right)) {
            let first = usize::try_from(first).unwrap_or(usize::MAX);
            return Err(TokenizerError::DuplicateMerge { index, first, merge: line.clone() });
        }
        merges.insert((left, right), (rank, result));
    }
    Ok(merges)
}

fn build_literal(texts: &PieceIndex, types: &[TokenType]) -> Vec<Vec<(u32, bool)>> {
    let mut literal: Vec<Vec<(u32, bool)>> = vec![Vec::new(); 256];
    for (index, ty) in types.iter().enumerate() {
        let needs_special = match ty {
            TokenType::UserDefined => false,
            TokenType::Control | TokenType::Unknown => true,
            TokenType::Normal | TokenType::Unused | TokenType::Byte => continue,
        };
        // INVARIANT: tokens are non-empty and the vocabulary size fits u32 (checked by the caller).
        let (Some(&first), Ok(id)) = (texts.text(index).as_bytes().first(), u32::try_from(index)) else { continue };
        literal[usize::from(first)].push((id, needs_special));
    }
    for group in &mut literal {
        // Longest first, so that a token that is a prefix of another never shadows it.
        group.sort_by_key(|&(id, _)| Reverse(texts.text(id_index(id)).len()));
    }
    literal
}

#[derive(Debug, Clone, Copy)]
struct Sym {
    id: u32,
    next: usize,
    alive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pair {
    rank: u32,
    left: usize,
    right: usize,
    left_id: u32,
    right_id: u32,
    merged: u32,
}

/// Scratch space reused across the pre-tokens of one encode call.
#[derive(Debug, Default)]
struct Work {
    syms: Vec<Sym>,
    prev: Vec<usize>,
    heap: BinaryHeap<Reverse<Pair>>,
    /// A pre-token spelled in the byte-level alphabet.
    spelled: String,
}
