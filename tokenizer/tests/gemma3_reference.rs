//! Gemma 3's real SentencePiece vocabulary (262,144 pieces) against llama.cpp's own tokenizer
//! (see `tests/data/gen_gemma3_reference.py` and `tests/data/README.md`). The vocabulary is read
//! from the GGUF named by `REDLINE_GEMMA3_GGUF` (without it the test does nothing, except under
//! `CI=true`, where it fails).

use std::time::Instant;

use serde_json::Value;
use tokenizer::{Decoder, SpmVocab, TokenType, Tokenizer, TokenizerModel};

const GGUF_ENV: &str = "REDLINE_GEMMA3_GGUF";

/// The sha256 of the GGUF the vectors were made from (also in the JSON).
const GGUF_SHA256: &str = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";

/// The vocabulary as a model layer reads it from the file's metadata, or `None` without the file.
fn read_vocab() -> Option<SpmVocab> {
    let Ok(path) = std::env::var(GGUF_ENV) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{GGUF_ENV} is not set: CI must run the Gemma 3 tokenizer reference test"
        );
        println!("{GGUF_ENV} not set: Gemma 3 tokenizer reference test did nothing");
        return None;
    };
    let started = Instant::now();
    let file = gguf::Gguf::open(&path).unwrap_or_else(|e| panic!("opening {path}: {e}"));
    let opened = started.elapsed();
    let model = file.str("tokenizer.ggml.model").unwrap();
    assert_eq!(TokenizerModel::from_gguf_name(model), Some(TokenizerModel::Spm));
    let optional_id = |key: &str| file.get(key).map(|_| file.u32(key).unwrap_or_else(|e| panic!("{e}")));
    let optional_flag = |key: &str| file.get(key).map(|_| file.bool(key).unwrap_or_else(|e| panic!("{e}")));
    let vocab = SpmVocab {
        tokens: file.string_array("tokenizer.ggml.tokens").unwrap().into_iter().map(str::to_owned).collect(),
        scores: file.f32_array("tokenizer.ggml.scores").unwrap(),
        token_types: file.i32_array("tokenizer.ggml.token_type").unwrap(),
        bos: optional_id("tokenizer.ggml.bos_token_id"),
        eos: optional_id("tokenizer.ggml.eos_token_id"),
        unk: optional_id("tokenizer.ggml.unknown_token_id"),
        pad: optional_id("tokenizer.ggml.padding_token_id"),
        add_bos: optional_flag("tokenizer.ggml.add_bos_token"),
        add_eos: optional_flag("tokenizer.ggml.add_eos_token"),
        add_space_prefix: optional_flag("tokenizer.ggml.add_space_prefix"),
    };
    println!(
        "Gemma 3 GGUF parsed in {:.1} ms, tokenizer metadata copied out by {:.1} ms",
        opened.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3
    );
    Some(vocab)
}

/// The tokenizer built from the file's own metadata.
fn load() -> Option<Tokenizer> {
    Some(Tokenizer::new_spm(read_vocab()?).expect("Gemma 3 vocabulary is valid"))
}

fn ms(seconds: f64) -> String {
    format!("{:.1} ms", seconds * 1e3)
}

#[test]
fn gemma3_load_time() {
    let Some(vocab) = read_vocab() else { return };
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let copy = vocab.clone();
            let started = Instant::now();
            let t = Tokenizer::new_spm(copy).unwrap();
            let seconds = started.elapsed().as_secs_f64();
            assert_eq!(t.vocab_size(), 262_144);
            seconds
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!("Tokenizer::new_spm on 262,144 pieces: min {}, median {} of 5", ms(times[0]), ms(times[2]));
}

struct Case {
    text: String,
    add_special: bool,
    parse_special: bool,
    ids: Vec<u32>,
    detokenized: Vec<u8>,
}

fn cases() -> (Value, Vec<Case>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gemma3_expected.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ids = c["ids"].as_array().unwrap().iter().map(|v| u32::try_from(v.as_u64().unwrap()).unwrap());
            let detokenized = match c.get("detokenized") {
                Some(text) => text.as_str().unwrap().as_bytes().to_vec(),
                None => c["detokenized_bytes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| u8::try_from(b.as_u64().unwrap()).unwrap())
                    .collect(),
            };
            Case {
                text: c["text"].as_str().unwrap().to_owned(),
                add_special: c["add_special"].as_bool().unwrap(),
                parse_special: c["parse_special"].as_bool().unwrap(),
                ids: ids.collect(),
                detokenized,
            }
        })
        .collect();
    (json, cases)
}

#[test]
fn gemma3_matches_llama_cpp() {
    let Some(t) = load() else { return };
    let (json, cases) = cases();
    assert_eq!(json["gguf_sha256"].as_str(), Some(GGUF_SHA256));
    assert!(json["strings"].as_u64().unwrap() >= 200);
    assert_eq!(cases.len(), 4 * usize::try_from(json["strings"].as_u64().unwrap()).unwrap());

    // The metadata as the GGUF states it (read independently with gguf-py).
    assert_eq!(t.model(), TokenizerModel::Spm);
    assert_eq!(t.vocab_size(), 262_144);
    assert_eq!((t.bos(), t.eos(), t.unk(), t.pad()), (2, 1, Some(3), Some(0)));
    assert!(t.add_bos() && !t.add_eos() && !t.add_space_prefix());
    assert_eq!((t.special("<start_of_turn>"), t.special("<end_of_turn>")), (Some(105), Some(106)));
    // llama.cpp's end-of-generation tokens for this file, as its loader lists them.
    assert_eq!(t.end_of_generation(), [1, 106, 212]);
    assert_eq!(t.token_type(212), Some(TokenType::Control), "</s> is control, as llama.cpp reads it");
    assert_eq!(t.token_type(238), Some(TokenType::Byte));
    assert!(t.missing_bytes().is_empty());

    let mut mismatches = Vec::new();
    let mut round_trips = 0;
    for case in &cases {
        let Case { text, add_special, parse_special, ids: expected, detokenized } = case;
        let ids = t.encode_special(text, *add_special, *parse_special);
        if &ids != expected {
            mismatches.push(format!(
                "{text:?} add_special={add_special} special={parse_special}: got {ids:?}, want {expected:?}"
            ));
            continue;
        }
        let decoded = t.decode(&ids, *parse_special).unwrap();
        if &decoded != detokenized {
            mismatches.push(format!(
                "{text:?} special={parse_special}: decoded {:?}, llama.cpp {:?}",
                String::from_utf8_lossy(&decoded),
                String::from_utf8_lossy(detokenized)
            ));
        }
        // Without a leading-space strip (add_space_prefix is off) streaming gives the same text.
        let mut d = Decoder::new(&t, *parse_special);
        let mut streamed: String = ids.iter().map(|&id| d.push(id).unwrap()).collect();
        streamed.push_str(&d.finish());
        assert_eq!(streamed.as_bytes(), &detokenized[..], "streamed decode of {text:?}");
        if !add_special {
            // SPM cannot tell a `▁` in the text from a space: those come back as spaces.
            let spaced = text.replace('\u{2581}', " ");
            assert_eq!(detokenized, spaced.as_bytes(), "llama.cpp's round trip of {text:?}");
            assert_eq!(decoded, spaced.as_bytes(), "round trip of {text:?}");
            round_trips += usize::from(spaced == *text);
        }
    }
    println!(
        "{} of {} cases agree with llama.cpp; {round_trips} round-trip exactly",
        cases.len() - mismatches.len(),
        cases.len()
    );
    assert!(mismatches.is_empty(), "{} of {} cases differ:\n{}", mismatches.len(), cases.len(), mismatches.join("\n"));
}

#[test]
fn gemma3_encode_throughput() {
    let Some(t) = load() else { return };
    let paragraph = "The quick brown fox jumps over the lazy dog; naïve café owners in Zürich serve 日本の緑茶 \
                     and 😀 emoji.\n\tfn main() { println!(\"{}\", 1 + 2); }\n<start_of_turn>user\nHi<end_of_turn>\n";
    let text = paragraph.repeat(8192 / paragraph.len() + 1);
    let rounds = 20;
    let started = Instant::now();
    let mut tokens = 0;
    for _ in 0..rounds {
        tokens += t.encode(&text, true).len();
    }
    let seconds = started.elapsed().as_secs_f64();
    let bytes = text.len() * rounds;
    println!(
        "encoded {bytes} bytes into {tokens} tokens in {:.1} ms: {:.2} MB/s",
        seconds * 1e3,
        bytes as f64 / seconds / 1e6
    );
    // A long run of one character merges in O(n log n), not quadratically.
    let long = "a".repeat(100_000);
    let started = Instant::now();
    let ids = t.encode(&long, false);
    let seconds = started.elapsed().as_secs_f64();
    println!("100,000 × 'a' → {} tokens in {:.1} ms", ids.len(), seconds * 1e3);
    assert_eq!(t.decode(&ids, false).unwrap(), long.as_bytes());
}
