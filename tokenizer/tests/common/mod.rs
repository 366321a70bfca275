//! A small hand-made byte-level vocabulary shared by the integration tests.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use tokenizer::{Tokenizer, Vocab};

/// GPT-2's byte-to-character table, written independently of the crate's.
pub(crate) fn byte_char(byte: u8) -> char {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(byte) {
        return char::from(byte);
    }
    let rank = (0..byte).filter(|&b| !printable(b)).count();
    char::from_u32(0x100 + u32::try_from(rank).unwrap()).unwrap()
}

/// Merges of the small vocabulary, highest priority first.
pub(crate) const MERGES: &[&str] = &["Ġ t", "h e", "Ġt he", "i n", "Ġ a", "e r", "Ġ Ġ", "ĠĠ ĠĠ", "Ċ Ċ", "Ã ©", "a a"];

/// Special tokens after the byte and merged tokens: (text, GGUF type).
pub(crate) const SPECIALS: &[(&str, i32)] = &[("<|im_start|>", 3), ("<|im_end|>", 3), ("<tool>", 4), ("<|im", 3)];

/// Ids: 0..256 byte symbols in byte order, then merge results in merge order, then SPECIALS.
pub(crate) fn small_vocab() -> Vocab {
    let mut tokens: Vec<String> = (0..=u8::MAX).map(|b| byte_char(b).to_string()).collect();
    for m in MERGES {
        tokens.push(m.replace(' ', ""));
    }
    let mut token_types = vec![1; tokens.len()];
    for (text, ty) in SPECIALS {
        tokens.push((*text).to_owned());
        token_types.push(*ty);
    }
    let merges = MERGES.iter().map(|m| (*m).to_owned()).collect();
    Vocab { tokens, token_types, merges, bos: 256 + 11, eos: 256 + 12, unk: None, pad: None }
}

/// The id of the merge result at `index` in [`MERGES`].
pub(crate) fn merged(index: u32) -> u32 {
    256 + index
}

pub(crate) fn small_tokenizer() -> Tokenizer {
    Tokenizer::new(small_vocab(), "smollm").expect("small vocabulary is valid")
}
