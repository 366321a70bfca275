//! `tokenizer_from_gguf` on byte-level vocabularies: the pre-tokenizer's name sets llama.cpp's
//! default for BOS (`lfm2` adds it, `smollm` and `qwen35` do not), and a file's
//! `tokenizer.ggml.add_bos_token` / `add_eos_token` override the default whichever it is.

use engine::model::tokenizer_from_gguf;
use gguf::{Gguf, TinyLlamaConfig, Value, tiny_llama_writer};

/// The tiny llama's vocabulary under pre-tokenizer `pre`, with the BOS and EOS keys given.
fn tokenizer(pre: &str, add_bos: Option<bool>, add_eos: Option<bool>) -> tokenizer::Tokenizer {
    let mut w = tiny_llama_writer(&TinyLlamaConfig::default());
    w.set("tokenizer.ggml.pre", Value::String(pre.to_owned())).unwrap();
    for (key, flag) in [("tokenizer.ggml.add_bos_token", add_bos), ("tokenizer.ggml.add_eos_token", add_eos)] {
        w.remove(key);
        if let Some(flag) = flag {
            w.set(key, Value::Bool(flag)).unwrap();
        }
    }
    tokenizer_from_gguf(&Gguf::parse(w.to_bytes()).unwrap()).unwrap()
}

#[test]
fn the_pre_tokenizer_sets_the_bos_default_and_the_file_overrides_it() {
    let file = Gguf::parse(tiny_llama_writer(&TinyLlamaConfig::default()).to_bytes()).unwrap();
    let bos = file.u32("tokenizer.ggml.bos_token_id").unwrap();
    let eos = file.u32("tokenizer.ggml.eos_token_id").unwrap();
    let plain = tokenizer("smollm", None, None).encode("the cat", false);
    assert!(!plain.is_empty());
    let with_bos = [&[bos][..], &plain].concat();
    let cases = [
        ("lfm2", None, None, with_bos.clone()),
        ("lfm2", Some(false), None, plain.clone()),
        ("qwen35", None, None, plain.clone()),
        ("qwen35", Some(true), None, with_bos.clone()),
        ("smollm", None, Some(true), [&plain[..], &[eos]].concat()),
    ];
    for (pre, add_bos, add_eos, expected) in cases {
        let ids = tokenizer(pre, add_bos, add_eos).encode_special("the cat", true, false);
        // The three pre-tokenizers split "the cat" alike, so only BOS and EOS differ.
        assert_eq!(ids, expected, "{pre} add_bos {add_bos:?} add_eos {add_eos:?}");
    }
}
