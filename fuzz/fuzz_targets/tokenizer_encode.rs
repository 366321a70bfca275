//! Any bytes, read as lossy UTF-8 text, through a small byte-level vocabulary with merges and
//! control/user-defined tokens, under every supported pre-tokenizer: encode never panics, every id
//! is in range, decode gives the text back (with and without special parsing), and streaming
//! decode agrees.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tokenizer::{Decoder, SUPPORTED_PRE_TOKENIZERS, Tokenizer, Vocab};

/// GPT-2's byte-to-character table.
fn byte_char(byte: u8) -> char {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(byte) {
        return char::from(byte);
    }
    let rank = (0..byte).filter(|&b| !printable(b)).count();
    char::from_u32(0x100 + u32::try_from(rank).unwrap()).unwrap()
}

/// One tokenizer per supported `tokenizer.ggml.pre` name, over the same vocabulary.
fn tokenizers() -> &'static [Tokenizer] {
    static TOKENIZERS: OnceLock<Vec<Tokenizer>> = OnceLock::new();
    TOKENIZERS.get_or_init(|| {
        const MERGES: &[&str] = &["Ġ t", "h e", "Ġt he", "i n", "Ġ a", "Ġ Ġ", "ĠĠ ĠĠ", "Ċ Ċ", "Ã ©", "a a", "aa a"];
        const SPECIALS: &[(&str, i32)] = &[("<|im_start|>", 3), ("<|im_end|>", 3), ("<|im", 3), ("<t>", 4)];
        let mut tokens: Vec<String> = (0..=u8::MAX).map(|b| byte_char(b).to_string()).collect();
        tokens.extend(MERGES.iter().map(|m| m.replace(' ', "")));
        let mut token_types = vec![1; tokens.len()];
        for (text, ty) in SPECIALS {
            tokens.push((*text).to_owned());
            token_types.push(*ty);
        }
        let vocab = Vocab {
            tokens,
            token_types,
            merges: MERGES.iter().map(|m| (*m).to_owned()).collect(),
            bos: 267,
            eos: 268,
            unk: None,
            pad: None,
        };
        SUPPORTED_PRE_TOKENIZERS
            .split(", ")
            .map(|pre| Tokenizer::new(vocab.clone(), pre).expect("built-in vocabulary is valid"))
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (t, parse_special) in tokenizers().iter().flat_map(|t| [(t, false), (t, true)]) {
        let ids = t.encode(&text, parse_special);
        assert_eq!(t.decode(&ids, true).expect("ids in range"), text.as_bytes());
        let mut decoder = Decoder::new(t, true);
        let mut streamed = String::new();
        for &id in &ids {
            streamed.push_str(&decoder.push(id).expect("id in range"));
        }
        streamed.push_str(&decoder.finish());
        assert_eq!(streamed, text);
    }
});
