//! The pre-tokenizers against HF `tokenizers`' own pre-tokenizers on the SmolLM2 reference corpus
//! (tests/data/gen_reference.py), and against llama.cpp's own splits of a larger corpus for every
//! supported name (tests/data/gen_pretokenize_llamacpp.py), independent of any vocabulary.

use proptest::prelude::*;
use serde_json::Value;
use tokenizer::PreTokenizer;

fn split(pre: PreTokenizer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    pre.split(text, |p| out.push(p.to_owned()));
    out
}

#[test]
fn splits_match_hf() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pretokenize_expected.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = json["cases"].as_array().unwrap();
    assert!(cases.len() >= 60);
    for case in cases {
        let text = case["text"].as_str().unwrap();
        for (name, pre) in [("gpt2", PreTokenizer::Gpt2), ("smollm", PreTokenizer::SmolLm)] {
            let expected: Vec<String> =
                case[name].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_owned()).collect();
            assert_eq!(split(pre, text), expected, "{name} split of {text:?}");
        }
    }
}

/// Every pre-tokenizer with its GGUF name.
const ALL: [(&str, PreTokenizer); 4] = [
    ("gpt2", PreTokenizer::Gpt2),
    ("smollm", PreTokenizer::SmolLm),
    ("lfm2", PreTokenizer::Lfm2),
    ("qwen35", PreTokenizer::Qwen35),
];

fn strings(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_owned()).collect()
}

#[test]
fn splits_match_llama_cpp() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pretokenize_llamacpp.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = json["cases"].as_array().unwrap();
    assert!(cases.len() >= 450);
    let mut checked = 0;
    for case in cases {
        let text = case["text"].as_str().unwrap();
        for (name, pre) in ALL {
            assert_eq!(split(pre, text), strings(&case[name]), "{name} split of {text:?}");
            checked += 1;
        }
    }
    println!("{checked} splits equal llama.cpp's");
}

#[test]
fn names() {
    assert_eq!(PreTokenizer::from_name("smollm"), Some(PreTokenizer::SmolLm));
    assert_eq!(PreTokenizer::from_name("gpt2"), Some(PreTokenizer::Gpt2));
    assert_eq!(PreTokenizer::from_name("default"), Some(PreTokenizer::Gpt2));
    assert_eq!(PreTokenizer::from_name("lfm2"), Some(PreTokenizer::Lfm2));
    assert_eq!(PreTokenizer::from_name("qwen35"), Some(PreTokenizer::Qwen35));
    for unsupported in ["llama3", "llama-bpe", "qwen2", "qwen3", "qwen3.5", "LFM2", ""] {
        assert_eq!(PreTokenizer::from_name(unsupported), None, "{unsupported:?}");
    }
    // llama.cpp's vocabulary settings tied to the names.
    for (name, pre) in ALL {
        assert_eq!(pre.ignore_merges(), name == "lfm2", "{name}");
        assert_eq!(pre.default_add_bos(), name == "lfm2", "{name}");
    }
}

/// Text made of the characters the rules tell apart: spaces and other whitespace, newlines,
/// letters, contractions' apostrophes, ASCII and other digits, combining marks, punctuation,
/// symbols and CJK.
const MIXED: &str = "[ \t\r\n\u{a0}\u{3000}\u{85}aZsStTlLré'\u{2019}0-9\u{663}\u{b2}\u{301}\u{93f}\u{20e3}\u{fe0f}\u{200d}!?.,<|>中😀]{0,40}";

fn nonempty_and_concatenate(text: &str) -> Result<(), TestCaseError> {
    for (name, pre) in ALL {
        let pieces = split(pre, text);
        prop_assert!(pieces.iter().all(|p| !p.is_empty()), "{name}: empty piece in {pieces:?}");
        prop_assert_eq!(pieces.concat(), text, "{}", name);
    }
    Ok(())
}

proptest! {
    #[test]
    fn pieces_are_nonempty_and_concatenate(text in any::<String>()) {
        nonempty_and_concatenate(&text)?;
    }

    #[test]
    fn mixed_pieces_are_nonempty_and_concatenate(text in MIXED) {
        nonempty_and_concatenate(&text)?;
    }

    /// In the `llama3`-shaped rules a number character is never part of a word, punctuation or
    /// whitespace piece: it stands in a piece of numbers only, at most three (`lfm2`) or one
    /// (`qwen35`) of them.
    #[test]
    fn numbers_stand_alone(text in MIXED) {
        let is_number = |c: char| c.is_ascii_digit() || c == '\u{663}' || c == '\u{b2}';
        for (pre, most) in [(PreTokenizer::Lfm2, 3), (PreTokenizer::Qwen35, 1)] {
            for piece in split(pre, &text) {
                if piece.chars().any(is_number) {
                    prop_assert!(piece.chars().all(is_number), "{pre:?}: {piece:?}");
                    prop_assert!(piece.chars().count() <= most, "{pre:?}: {piece:?}");
                }
            }
        }
    }
}
