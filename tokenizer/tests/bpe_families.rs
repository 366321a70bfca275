//! The `lfm2` and `qwen35` byte-level vocabularies end to end against llama.cpp's own tokenizer
//! (`tests/data/gen_bpe_families_reference.py`): small vocabularies in each family's shape, with
//! trained merges, tokens no merge reaches, and the family's control and user-defined tokens.
//! Every id sequence, every token's bytes, the end-of-generation set and the BOS/EOS defaults must
//! equal what llama.cpp does with the same vocabulary.

use proptest::prelude::*;
use serde_json::Value;
use tokenizer::{Decoder, PreTokenizer, TokenType, Tokenizer, Vocab};

fn families() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bpe_families_expected.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json["families"].as_array().unwrap().clone()
}

fn ids(value: &Value) -> Vec<u32> {
    value.as_array().unwrap().iter().map(|v| u32::try_from(v.as_u64().unwrap()).unwrap()).collect()
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap()).collect()
}

/// The tokenizer built from a family's vocabulary, as a model layer builds it from the GGUF.
fn build(family: &Value) -> Tokenizer {
    let v = &family["vocab"];
    let vocab = Vocab {
        tokens: strings(&v["tokens"]),
        token_types: v["token_types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| i32::try_from(t.as_i64().unwrap()).unwrap())
            .collect(),
        merges: strings(&v["merges"]),
        bos: u32::try_from(v["bos"].as_u64().unwrap()).unwrap(),
        eos: u32::try_from(v["eos"].as_u64().unwrap()).unwrap(),
        unk: None,
        pad: None,
    };
    Tokenizer::new(vocab, family["pre"].as_str().unwrap()).unwrap()
}

/// Both tokenizers, built once.
fn tokenizers() -> &'static [(String, Tokenizer)] {
    static BUILT: std::sync::OnceLock<Vec<(String, Tokenizer)>> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| families().iter().map(|f| (f["pre"].as_str().unwrap().to_owned(), build(f))).collect())
}

#[test]
fn encodings_match_llama_cpp() {
    let mut checked = 0;
    for family in families() {
        let pre = family["pre"].as_str().unwrap();
        let t = build(&family);
        let mut mismatches = Vec::new();
        for case in family["cases"].as_array().unwrap() {
            let text = case["text"].as_str().unwrap();
            let (add_special, parse_special) =
                (case["add_special"].as_bool().unwrap(), case["parse_special"].as_bool().unwrap());
            let got = t.encode_special(text, add_special, parse_special);
            let want = ids(&case["ids"]);
            if got != want {
                mismatches.push(format!("{text:?} add={add_special} special={parse_special}: {got:?} != {want:?}"));
            }
            checked += 1;
        }
        assert!(mismatches.is_empty(), "{pre}: {} cases differ:\n{}", mismatches.len(), mismatches.join("\n"));
    }
    assert!(checked >= 1000);
    println!("{checked} encodings equal llama.cpp's");
}

#[test]
fn vocabulary_settings_match_llama_cpp() {
    for family in families() {
        let pre = family["pre"].as_str().unwrap();
        let t = build(&family);
        assert_eq!(t.pre_tokenizer(), PreTokenizer::from_name(pre));
        assert_eq!(t.add_bos(), family["add_bos"].as_bool().unwrap(), "{pre} add_bos");
        assert_eq!(t.add_eos(), family["add_eos"].as_bool().unwrap(), "{pre} add_eos");
        assert_eq!(t.end_of_generation(), ids(&family["end_of_generation"]), "{pre} end of generation");
        let (pieces, special) = (strings(&family["pieces"]), strings(&family["special_pieces"]));
        assert_eq!(pieces.len(), t.vocab_size());
        for (id, (plain, with_special)) in (0u32..).zip(pieces.iter().zip(&special)) {
            assert_eq!(t.token_bytes(id, false).unwrap(), hex(plain), "{pre} token {id}");
            assert_eq!(t.token_bytes(id, true).unwrap(), hex(with_special), "{pre} token {id} (special)");
        }
    }
}

/// What the vectors pin, stated by name: the behaviours that differ between the families.
#[test]
fn family_behaviours() {
    let built = tokenizers();
    let (lfm2, qwen) = (&built[0].1, &built[1].1);
    // lfm2's ignore_merges: a whole pre-token that is a token is used as is ("987" has no merges),
    // even a control token's text ("<|>", matched without special parsing).
    assert_eq!(lfm2.encode("987", false), [lfm2.token_id("987").unwrap()]);
    assert_eq!(lfm2.encode("<|>", false), [lfm2.token_id("<|>").unwrap()]);
    assert_eq!(qwen.encode("987", false).len(), 3);
    // BOS first for lfm2 by default, as llama.cpp; not for qwen35.
    assert_eq!(lfm2.encode_special("x", true, false)[0], lfm2.token_id("<|startoftext|>").unwrap());
    assert_eq!(qwen.encode_special("x", true, false), qwen.encode("x", false));
    // Qwen's normal `</s>` is an end-of-generation control token in llama.cpp: split out of text
    // only with special parsing, and empty when decoded without specials.
    let end = qwen.token_id("</s>").unwrap();
    assert_eq!(qwen.token_type(end), Some(TokenType::Control));
    assert!(qwen.end_of_generation().contains(&end));
    assert_eq!(qwen.encode("a</s>b", true).len(), 3);
    assert!(!qwen.encode("a</s>b", false).contains(&end));
    for fim in ["<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<|im_end|>", "<|endoftext|>"] {
        assert!(qwen.end_of_generation().contains(&qwen.token_id(fim).unwrap()), "{fim}");
    }
    assert!(!qwen.end_of_generation().contains(&qwen.token_id("<|fim_prefix|>").unwrap()));
}

#[test]
fn add_special_flags_override_the_defaults() {
    let lfm2 = tokenizers()[0].1.clone();
    let bos = lfm2.bos();
    assert!(lfm2.add_bos() && !lfm2.add_eos());
    let kept = lfm2.clone().with_add_special(None, None);
    assert!(kept.add_bos() && !kept.add_eos());
    let flipped = lfm2.with_add_special(Some(false), Some(true));
    assert!(!flipped.add_bos() && flipped.add_eos());
    let ids = flipped.encode_special("x", true, false);
    assert_ne!(ids.first(), Some(&bos));
    assert_eq!(ids.last(), Some(&flipped.eos()));
}

proptest! {
    #[test]
    fn decode_encode_is_identity(
        text in "[ \\t\\n\\r a-zA-Z0-9'é\\u{301}\\u{93f}中😀!.<|>/]{0,40}|\\PC{0,20}",
        parse_special in any::<bool>(),
    ) {
        for (pre, t) in tokenizers() {
            let ids = t.encode(&text, parse_special);
            prop_assert!(ids.iter().all(|&id| usize::try_from(id).unwrap() < t.vocab_size()));
            // Every byte has a token in these vocabularies, so nothing is dropped.
            prop_assert_eq!(t.decode(&ids, true).unwrap(), text.as_bytes(), "{}", pre);
            let mut d = Decoder::new(t, true);
            let mut streamed: String = ids.iter().map(|&id| d.push(id).unwrap()).collect();
            streamed.push_str(&d.finish());
            prop_assert_eq!(&streamed, &text, "{}", pre);
        }
    }
}
