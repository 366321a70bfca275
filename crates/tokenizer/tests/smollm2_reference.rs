//! SmolLM2's real vocabulary against ids produced by HuggingFace `tokenizers` (see
//! `tests/data/gen_reference.py`, which also writes the vocabulary JSON this test loads from
//! `REDLINE_SMOLLM2_VOCAB_JSON`; the 49k-token vocabulary itself is not committed).

mod common;

use common::byte_char;
use serde_json::Value;
use tokenizer::{ChatTemplate, Decoder, SMOLLM2_CHATML, Tokenizer, Vocab};

const VOCAB_ENV: &str = "REDLINE_SMOLLM2_VOCAB_JSON";

fn load() -> Option<(Tokenizer, Value)> {
    let Ok(path) = std::env::var(VOCAB_ENV) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{VOCAB_ENV} is not set: CI must run the SmolLM2 reference test (run tests/data/gen_reference.py)"
        );
        println!("{VOCAB_ENV} not set: SmolLM2 reference test did nothing");
        return None;
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let json: Value = serde_json::from_str(&text).expect("vocabulary JSON parses");
    let strings = |key: &str| -> Vec<String> {
        json[key].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
    };
    let id = |key: &str| u32::try_from(json[key].as_u64().unwrap()).unwrap();
    let vocab = Vocab {
        tokens: strings("tokens"),
        token_types: json["token_types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| i32::try_from(v.as_i64().unwrap()).unwrap())
            .collect(),
        merges: strings("merges"),
        bos: id("bos"),
        eos: id("eos"),
        unk: Some(id("unk")),
        pad: Some(id("pad")),
    };
    let tokenizer = Tokenizer::new(vocab, json["pre"].as_str().unwrap()).expect("SmolLM2 vocabulary is valid");
    Some((tokenizer, json))
}

fn expected_cases() -> Vec<(String, bool, Vec<u32>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/smollm2_expected.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ids = c["ids"].as_array().unwrap().iter().map(|v| u32::try_from(v.as_u64().unwrap()).unwrap());
            (c["text"].as_str().unwrap().to_owned(), c["parse_special"].as_bool().unwrap(), ids.collect())
        })
        .collect()
}

#[test]
fn smollm2_matches_hf_tokenizers() {
    let Some((t, json)) = load() else { return };
    assert_eq!(t.vocab_size(), 49_152);
    assert_eq!((t.bos(), t.eos(), t.unk(), t.pad()), (1, 2, Some(0), Some(2)));
    assert_eq!((t.special("<|im_start|>"), t.special("<|im_end|>")), (Some(1), Some(2)));
    assert_eq!(json["chat_template"].as_str(), Some(SMOLLM2_CHATML));
    assert!(ChatTemplate::from_gguf_template(json["chat_template"].as_str().unwrap()).is_ok());

    let cases = expected_cases();
    assert!(cases.len() >= 60, "corpus has {} cases", cases.len());
    // The bytes SmolLM2 has no token for, from GPT-2's byte table (common::byte_char), checked
    // against the tokenizer's own report.
    let missing: Vec<u8> = (0..=u8::MAX).filter(|&b| t.token_id(&byte_char(b).to_string()).is_none()).collect();
    assert_eq!(missing.len(), 21);
    assert_eq!(t.missing_bytes(), missing);
    let mut round_trips = 0;
    let mut mismatches = Vec::new();
    for (text, parse_special, expected) in &cases {
        let ids = t.encode(text, *parse_special);
        if &ids != expected {
            mismatches.push(format!("{text:?} special={parse_special}: got {ids:?}, want {expected:?}"));
        }
        // Bytes without a single-byte token are dropped by encode (as by the reference).
        let kept: Vec<u8> = text.bytes().filter(|b| !missing.contains(b)).collect();
        assert_eq!(t.decode(&ids, true).unwrap(), kept, "round trip of {text:?}");
        if kept.len() == text.len() {
            round_trips += 1;
            let mut d = Decoder::new(&t, true);
            let mut streamed: String = ids.iter().map(|&id| d.push(id).unwrap()).collect();
            streamed.push_str(&d.finish());
            assert_eq!(&streamed, text, "streamed decode of {text:?}");
        }
    }
    println!("{} cases match HF tokenizers; {round_trips} round-trip exactly", cases.len());
    assert_eq!(round_trips, cases.len() - 1, "only the control-byte case drops bytes");
    assert!(mismatches.is_empty(), "{} of {} cases differ:\n{}", mismatches.len(), cases.len(), mismatches.join("\n"));
}

#[test]
fn smollm2_known_prompt() {
    let Some((t, _)) = load() else { return };
    // Control tokens decode to nothing unless asked.
    let ids = t.encode("<|im_start|>user\nHi<|im_end|>", true);
    assert_eq!(ids.first(), Some(&1));
    assert_eq!(ids.last(), Some(&2));
    assert_eq!(t.decode(&ids, false).unwrap(), b"user\nHi");
}
