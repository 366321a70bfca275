//! Both pre-tokenizers against HF `tokenizers`' own pre-tokenizers on the reference corpus
//! (tests/data/gen_reference.py), independent of any vocabulary.

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

#[test]
fn names() {
    assert_eq!(PreTokenizer::from_name("smollm"), Some(PreTokenizer::SmolLm));
    assert_eq!(PreTokenizer::from_name("gpt2"), Some(PreTokenizer::Gpt2));
    assert_eq!(PreTokenizer::from_name("default"), Some(PreTokenizer::Gpt2));
    assert_eq!(PreTokenizer::from_name("llama3"), None);
}

proptest! {
    #[test]
    fn pieces_are_nonempty_and_concatenate(text in any::<String>()) {
        for pre in [PreTokenizer::Gpt2, PreTokenizer::SmolLm] {
            let pieces = split(pre, &text);
            prop_assert!(pieces.iter().all(|p| !p.is_empty()));
            prop_assert_eq!(pieces.concat(), text.as_str());
        }
    }
}
