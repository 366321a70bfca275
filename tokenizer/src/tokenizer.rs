//! The byte-level BPE tokenizer: vocabulary validation, encoding (special tokens, pre-tokenizer,
//! merges by rank) and decoding.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::byte_level::ByteLevel;
use crate::error::TokenizerError;
use crate::pretokenize::{PreTokenizer, SUPPORTED_PRE_TOKENIZERS};

/// GGUF `tokenizer.ggml.token_type` values (llama.cpp's `llama_token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenType {
    /// 1: an ordinary byte-level BPE token.
    Normal,
    /// 2: the unknown token.
    Unknown,
    /// 3: a control token such as `<|im_start|>`.
    Control,
    /// 4: a user-defined token, matched literally in text and decoded as its raw text.
    UserDefined,
    /// 5: an unused slot.
    Unused,
}

impl TokenType {
    fn from_raw(value: i32) -> Option<Self> {
        match value {
            1 => Some(Self::Normal),
            2 => Some(Self::Unknown),
            3 => Some(Self::Control),
            4 => Some(Self::UserDefined),
            5 => Some(Self::Unused),
            // 0 (undefined) and 6 (byte tokens of SentencePiece vocabularies) have no meaning in a
            // byte-level vocabulary.
            _ => None,
        }
    }
}

/// The parts of a GGUF tokenizer that this crate needs, as read from the file's metadata.
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

/// `(left id, right id)` → `(rank, merged id)`.
type MergeTable = HashMap<(u32, u32), (u32, u32)>;

/// A validated byte-level BPE tokenizer.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    tokens: Vec<String>,
    types: Vec<TokenType>,
    /// Decoded bytes of every token (byte-level decoded for normal tokens, raw text otherwise).
    bytes: Vec<Vec<u8>>,
    ids: HashMap<String, u32>,
    merges: MergeTable,
    byte_ids: [u32; 256],
    /// Tokens matched literally in text, grouped by first byte, longest first; `bool` = matched
    /// only when special parsing is on.
    literal: Vec<Vec<(u32, bool)>>,
    pre: PreTokenizer,
    bos: u32,
    eos: u32,
    unk: Option<u32>,
    pad: Option<u32>,
}

fn checked_id(name: &'static str, id: u32, vocab_size: usize) -> Result<u32, TokenizerError> {
    if usize::try_from(id).is_ok_and(|i| i < vocab_size) {
        Ok(id)
    } else {
        Err(TokenizerError::SpecialIdOutOfRange { name, id, vocab_size })
    }
}

impl Tokenizer {
    /// Validates `vocab` and builds a tokenizer using the pre-tokenizer named `pre`
    /// (GGUF `tokenizer.ggml.pre`: `smollm`, `gpt2` or `default`).
    pub fn new(vocab: Vocab, pre: &str) -> Result<Self, TokenizerError> {
        let pre = PreTokenizer::from_name(pre).ok_or_else(|| TokenizerError::UnknownPreTokenizer {
            name: pre.to_owned(),
            supported: SUPPORTED_PRE_TOKENIZERS,
        })?;
        let Vocab { tokens, token_types, merges, bos, eos, unk, pad } = vocab;
        let size = tokens.len();
        // NO_TOKEN (u32::MAX) must stay out of range.
        if size == 0 || u32::try_from(size).is_err() {
            return Err(TokenizerError::VocabSize { size, limit: u64::from(u32::MAX) });
        }
        if token_types.len() != size {
            return Err(TokenizerError::TypeCountMismatch { tokens: size, token_types: token_types.len() });
        }
        let bl = ByteLevel::new();
        let mut ids = HashMap::with_capacity(size);
        let mut types = Vec::with_capacity(size);
        let mut bytes = Vec::with_capacity(size);
        for (index, (token, &raw)) in tokens.iter().zip(&token_types).enumerate() {
            if token.is_empty() {
                return Err(TokenizerError::EmptyToken { index });
            }
            let ty = TokenType::from_raw(raw).ok_or(TokenizerError::UnsupportedTokenType { index, value: raw })?;
            let decoded = match ty {
                TokenType::Normal => {
                    bl.decode(token).ok_or_else(|| TokenizerError::NotByteLevel { index, token: token.clone() })?
                }
                _ => token.as_bytes().to_vec(),
            };
            // CAST: index < size, which fits u32 (checked above).
            let id =
                u32::try_from(index).map_err(|_| TokenizerError::VocabSize { size, limit: u64::from(u32::MAX) })?;
            if let Some(&first) = ids.get(token) {
                let first = usize::try_from(first).unwrap_or(usize::MAX);
                return Err(TokenizerError::DuplicateToken { index, first, token: token.clone() });
            }
            ids.insert(token.clone(), id);
            types.push(ty);
            bytes.push(decoded);
        }
        // Real vocabularies lack some byte symbols (SmolLM2 has no token for 21 bytes: some C0
        // controls, 0xF1, 0xF2 and bytes that never occur in UTF-8). Those bytes get NO_TOKEN.
        let mut byte_ids = [NO_TOKEN; 256];
        for byte in 0..=u8::MAX {
            let symbol = bl.char_of(byte).to_string();
            let id = ids.get(&symbol).copied().filter(|&id| types[id_index(id)] == TokenType::Normal);
            byte_ids[usize::from(byte)] = id.unwrap_or(NO_TOKEN);
        }
        let merges = build_merges(&merges, &ids)?;
        let literal = build_literal(&tokens, &types);
        Ok(Self {
            bos: checked_id("bos", bos, size)?,
            eos: checked_id("eos", eos, size)?,
            unk: unk.map(|id| checked_id("unk", id, size)).transpose()?,
            pad: pad.map(|id| checked_id("pad", id, size)).transpose()?,
            tokens,
            types,
            bytes,
            ids,
            merges,
            byte_ids,
            literal,
            pre,
        })
    }

    /// The bytes that have no single-byte token and are therefore dropped by [`Tokenizer::encode`]
    /// (for SmolLM2: 21 bytes, mostly C0 controls and bytes invalid in UTF-8).
    pub fn missing_bytes(&self) -> Vec<u8> {
        (0..=u8::MAX).filter(|&b| self.byte_ids[usize::from(b)] == NO_TOKEN).collect()
    }

    /// Number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
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

    /// The pre-tokenizer in use.
    pub fn pre_tokenizer(&self) -> PreTokenizer {
        self.pre
    }

    /// The stored string of token `id` (byte-level form for normal tokens), or `None` if out of range.
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.tokens.get(usize::try_from(id).ok()?).map(String::as_str)
    }

    /// The type of token `id`, or `None` if out of range.
    pub fn token_type(&self, id: u32) -> Option<TokenType> {
        self.types.get(usize::try_from(id).ok()?).copied()
    }

    /// The id of a non-normal token (control, user-defined, ...) spelled `name`, e.g. `<|im_start|>`.
    pub fn special(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied().filter(|&id| self.types[id_index(id)] != TokenType::Normal)
    }

    /// The id of the token whose stored string is `text`, of any type.
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    /// The bytes token `id` decodes to: control, unknown and unused tokens give their text only
    /// when `special` is set, otherwise nothing. `None` if `id` is out of range.
    pub fn token_bytes(&self, id: u32, special: bool) -> Option<&[u8]> {
        let index = usize::try_from(id).ok()?;
        let shown = match self.types.get(index)? {
            TokenType::Normal | TokenType::UserDefined => true,
            TokenType::Control | TokenType::Unknown | TokenType::Unused => special,
        };
        Some(if shown { &self.bytes[index] } else { &[] })
    }

    /// Encodes `text`. User-defined tokens that occur literally are always emitted as their ids
    /// (as llama.cpp does); control and unknown tokens only when `parse_special` is set, otherwise
    /// their text is tokenized like any other. Where literal tokens overlap, the longest wins.
    /// Bytes whose byte-level symbol is not in the vocabulary are dropped, as llama.cpp and HF
    /// `tokenizers` do (see [`Tokenizer::missing_bytes`]). No BOS is added.
    pub fn encode(&self, text: &str, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut plain_start = 0;
        let mut at = 0;
        let bytes = text.as_bytes();
        while at < bytes.len() {
            if let Some((id, len)) = self.literal_at(&bytes[at..], parse_special) {
                self.encode_plain(&text[plain_start..at], &mut out);
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
        self.encode_plain(&text[plain_start..], &mut out);
        out
    }

    /// The longest literal token at the start of `rest`, as `(id, length)`.
    fn literal_at(&self, rest: &[u8], parse_special: bool) -> Option<(u32, usize)> {
        let first = usize::from(*rest.first()?);
        self.literal[first].iter().find_map(|&(id, needs_special)| {
            let token = self.tokens[id_index(id)].as_bytes();
            (rest.starts_with(token) && (parse_special || !needs_special)).then_some((id, token.len()))
        })
    }

    /// Encodes text that holds no literal tokens.
    fn encode_plain(&self, text: &str, out: &mut Vec<u32>) {
        let mut work = Work::default();
        self.pre.split(text, |piece| self.bpe(piece, &mut work, out));
    }

    /// Byte-pair encodes one pre-token: start from single-byte symbols and repeatedly apply the
    /// lowest-ranked merge among adjacent pairs, leftmost first on ties (HF's and llama.cpp's order).
    fn bpe(&self, piece: &str, work: &mut Work, out: &mut Vec<u32>) {
        let Work { syms, prev, heap } = work;
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

    /// Decodes `ids` to bytes (not necessarily UTF-8: a sequence may end inside a character).
    /// Control tokens give their text only when `special` is set.
    pub fn decode(&self, ids: &[u32], special: bool) -> Result<Vec<u8>, TokenizerError> {
        let mut out = Vec::new();
        for (position, &id) in ids.iter().enumerate() {
            let piece = self.token_bytes(id, special).ok_or(TokenizerError::IdOutOfRange {
                id,
                position,
                vocab_size: self.vocab_size(),
            })?;
            out.extend_from_slice(piece);
        }
        Ok(out)
    }
}

/// Marks a byte whose byte-level symbol has no token; never a valid id (vocabularies are < u32::MAX).
const NO_TOKEN: u32 = u32::MAX;

/// An id already checked against the vocabulary size, as an index.
fn id_index(id: u32) -> usize {
    // PANIC: ids come from this vocabulary, whose size fits both u32 and usize.
    usize::try_from(id).expect("vocabulary ids fit usize")
}

fn build_merges(lines: &[String], ids: &HashMap<String, u32>) -> Result<MergeTable, TokenizerError> {
    let mut merges: MergeTable = HashMap::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let malformed = || TokenizerError::MalformedMerge { index, merge: line.clone() };
        let (a, b) = line.split_once(' ').ok_or_else(malformed)?;
        if a.is_empty() || b.is_empty() || b.contains(' ') {
            return Err(malformed());
        }
        let lookup = |token: &str| {
            ids.get(token).copied().ok_or_else(|| TokenizerError::MergeTokenMissing {
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

fn build_literal(tokens: &[String], types: &[TokenType]) -> Vec<Vec<(u32, bool)>> {
    let mut literal: Vec<Vec<(u32, bool)>> = vec![Vec::new(); 256];
    for (index, (token, ty)) in tokens.iter().zip(types).enumerate() {
        let needs_special = match ty {
            TokenType::UserDefined => false,
            TokenType::Control | TokenType::Unknown => true,
            TokenType::Normal | TokenType::Unused => continue,
        };
        // INVARIANT: tokens are non-empty and the vocabulary size fits u32 (checked by the caller).
        let (Some(&first), Ok(id)) = (token.as_bytes().first(), u32::try_from(index)) else { continue };
        literal[usize::from(first)].push((id, needs_special));
    }
    for group in &mut literal {
        // Longest first, so that a token that is a prefix of another never shadows it.
        group.sort_by_key(|&(id, _)| Reverse(tokens[id_index(id)].len()));
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
}
