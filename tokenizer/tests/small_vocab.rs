//! Encoding and decoding on a small hand-made byte-level vocabulary, with expected ids worked out
//! by hand from the merge list in `common`.

mod common;

use common::{merged, small_tokenizer, small_vocab};
use proptest::prelude::*;
use tokenizer::{Decoder, PreTokenizer, SUPPORTED_PRE_TOKENIZERS, TokenType, Tokenizer, TokenizerError};

fn b(byte: u8) -> u32 {
    u32::from(byte)
}

#[test]
fn merges_apply_by_rank() {
    let t = small_tokenizer();
    // " the": "Ġ t" (rank 0) then "h e" (1) then "Ġt he" (2).
    assert_eq!(t.encode(" the", false), [merged(2)]);
    // "in": one merge; "inn": leftmost pair "i n" then leftover n.
    assert_eq!(t.encode("inn", false), [merged(3), b(b'n')]);
    // "aaa": ties go to the leftmost pair.
    assert_eq!(t.encode("aaa", false), [merged(10), b(b'a')]);
    // "é" is bytes C3 A9, byte-level "Ã©", merged.
    assert_eq!(t.encode("é", false), [merged(9)]);
    // Four spaces then a word: the run gives its last space to " a"; "ĠĠ ĠĠ" needs two "Ġ Ġ" first.
    assert_eq!(t.encode("    a", false), [merged(6), b(b' '), merged(4)]);
    assert_eq!(t.encode("     ", false), [merged(7), b(b' ')]);
    // Digits are isolated by smollm, so no merge can join them.
    assert_eq!(t.encode("12", false), [b(b'1'), b(b'2')]);
    assert_eq!(t.encode("\n\n", false), [merged(8)]);
}

#[test]
fn special_tokens_only_when_asked() {
    let t = small_tokenizer();
    let start = t.special("<|im_start|>").unwrap();
    let end = t.special("<|im_end|>").unwrap();
    assert_eq!((start, end), (267, 268));
    assert_eq!(t.encode("<|im_start|>", true), [start]);
    let plain = t.encode("<|im_start|>", false);
    assert_eq!(plain.len(), "<|im_start|>".len());
    assert_eq!(t.decode(&plain, false).unwrap(), b"<|im_start|>");
    // "<|im" is also a control token: the longer one wins where both match.
    assert_eq!(t.encode("<|im_end|><|im", true), [end, 270]);
    // User-defined tokens match even without special parsing, as in llama.cpp.
    assert_eq!(t.encode("x<tool>", false), [b(b'x'), 269]);
    assert_eq!(t.special("he"), None);
    assert_eq!(t.token_type(start), Some(TokenType::Control));
}

#[test]
fn control_text_only_when_asked() {
    let t = small_tokenizer();
    let ids = t.encode("<|im_start|>hi<tool>", true);
    assert_eq!(t.decode(&ids, false).unwrap(), b"hi<tool>");
    assert_eq!(t.decode(&ids, true).unwrap(), b"<|im_start|>hi<tool>");
}

#[test]
fn accessors() {
    let t = small_tokenizer();
    assert_eq!(t.vocab_size(), 256 + 11 + 4);
    assert_eq!((t.bos(), t.eos()), (267, 268));
    assert_eq!(t.token_text(u32::from(b' ')), Some("Ġ"));
    assert_eq!(t.token_text(merged(2)), Some("Ġthe"));
    assert_eq!(t.token_text(10_000), None);
}

#[test]
fn out_of_range_ids_are_errors() {
    let t = small_tokenizer();
    let err = t.decode(&[1, 2, 271], false).unwrap_err();
    assert_eq!(err, TokenizerError::IdOutOfRange { id: 271, position: 2, vocab_size: 271 });
    let mut d = Decoder::new(&t, false);
    assert!(d.push(5).is_ok());
    assert!(matches!(d.push(u32::MAX), Err(TokenizerError::IdOutOfRange { id: u32::MAX, position: 1, .. })));
}

#[test]
fn streaming_holds_back_split_characters() {
    let t = small_tokenizer();
    // "😀" is four bytes, four byte tokens.
    let ids = t.encode("a😀", false);
    assert_eq!(ids.len(), 5);
    let mut d = Decoder::new(&t, false);
    let out: Vec<String> = ids.iter().map(|&id| d.push(id).unwrap()).collect();
    assert_eq!(out, ["a", "", "", "", "😀"]);
    assert_eq!(d.finish(), "");
}

/// Every `tokenizer.ggml.pre` name the crate supports builds a tokenizer from the same byte-level
/// vocabulary, with that pre-tokenizer and llama.cpp's BOS default for the name.
#[test]
fn every_supported_pre_tokenizer_name_builds() {
    let expected = [
        ("smollm", PreTokenizer::SmolLm, false),
        ("gpt2", PreTokenizer::Gpt2, false),
        ("default", PreTokenizer::Gpt2, false),
        ("lfm2", PreTokenizer::Lfm2, true),
        ("qwen35", PreTokenizer::Qwen35, false),
    ];
    let names: Vec<&str> = SUPPORTED_PRE_TOKENIZERS.split(", ").collect();
    assert_eq!(names, expected.map(|(name, _, _)| name));
    for (name, pre, add_bos) in expected {
        let t = Tokenizer::new(small_vocab(), name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(t.pre_tokenizer(), Some(pre), "{name}");
        assert_eq!(t.add_bos(), add_bos, "{name}");
        assert!(!t.add_eos(), "{name}");
        let text = "I'LL see  the 1234 é\u{301}!\n\n<|im_end|>";
        for parse_special in [false, true] {
            let ids = t.encode(text, parse_special);
            assert_eq!(t.decode(&ids, true).unwrap(), text.as_bytes(), "{name}");
        }
        // The merges apply under every rule.
        assert_eq!(t.encode(" the", false), [merged(2)], "{name}");
        let with_bos = t.encode_special("x", true, false);
        assert_eq!(with_bos.first() == Some(&t.bos()), add_bos, "{name}");
    }
}

#[test]
fn malformed_vocabularies_name_the_index() {
    let unknown = Tokenizer::new(small_vocab(), "llama3").unwrap_err();
    assert_eq!(
        unknown,
        TokenizerError::UnknownPreTokenizer { name: "llama3".to_owned(), supported: SUPPORTED_PRE_TOKENIZERS }
    );
    assert!(unknown.to_string().contains("smollm, gpt2, default, lfm2, qwen35"), "{unknown}");

    let mut v = small_vocab();
    v.token_types.pop();
    assert_eq!(
        Tokenizer::new(v, "gpt2").unwrap_err(),
        TokenizerError::TypeCountMismatch { tokens: 271, token_types: 270 }
    );

    let mut v = small_vocab();
    v.tokens[270] = "Ġt".to_owned();
    assert_eq!(
        Tokenizer::new(v, "gpt2").unwrap_err(),
        TokenizerError::DuplicateToken { index: 270, first: 256, token: "Ġt".to_owned() }
    );

    let mut v = small_vocab();
    v.merges.push("x zz".to_owned());
    assert!(matches!(
        Tokenizer::new(v, "gpt2").unwrap_err(),
        TokenizerError::MergeTokenMissing { index: 11, token, .. } if token == "zz"
    ));

    // The merge's result must exist too.
    let mut v = small_vocab();
    v.merges.push("x y".to_owned());
    assert!(matches!(
        Tokenizer::new(v, "gpt2").unwrap_err(),
        TokenizerError::MergeTokenMissing { index: 11, token, .. } if token == "xy"
    ));

    // A merge listed twice: its rank would be ambiguous.
    let mut v = small_vocab();
    let again = v.merges[3].clone();
    v.merges.push(again.clone());
    let err = Tokenizer::new(v, "gpt2").unwrap_err();
    assert_eq!(err, TokenizerError::DuplicateMerge { index: 11, first: 3, merge: again.clone() });
    assert_eq!(err.to_string(), format!("merge 11 {again:?} duplicates merge 3"));

    let mut v = small_vocab();
    v.merges.push("xy".to_owned());
    assert!(matches!(Tokenizer::new(v, "gpt2").unwrap_err(), TokenizerError::MalformedMerge { index: 11, .. }));

    let mut v = small_vocab();
    v.tokens[258] = "he llo".to_owned();
    assert!(matches!(Tokenizer::new(v, "gpt2").unwrap_err(), TokenizerError::NotByteLevel { index: 258, .. }));

    let mut v = small_vocab();
    v.token_types[5] = 6;
    assert_eq!(Tokenizer::new(v, "gpt2").unwrap_err(), TokenizerError::UnsupportedTokenType { index: 5, value: 6 });

    let mut v = small_vocab();
    v.tokens.truncate(3);
    v.token_types.truncate(3);
    v.merges.clear();
    (v.bos, v.eos) = (0, 1);
    let t = Tokenizer::new(v, "gpt2").unwrap();
    assert_eq!(t.missing_bytes(), (3..=u8::MAX).collect::<Vec<u8>>());
    // Bytes without a token are dropped, and the tokens around them do not merge across them.
    assert_eq!(t.encode("\u{1}\u{3}\u{2}\u{0}", false), [1, 2, 0]);

    let mut v = small_vocab();
    v.eos = 271;
    assert!(matches!(Tokenizer::new(v, "gpt2").unwrap_err(), TokenizerError::SpecialIdOutOfRange { name: "eos", .. }));

    let mut v = small_vocab();
    v.tokens[270] = String::new();
    assert_eq!(Tokenizer::new(v, "gpt2").unwrap_err(), TokenizerError::EmptyToken { index: 270 });
}

proptest! {
    #[test]
    fn decode_encode_is_identity(text in any::<String>(), parse_special in any::<bool>()) {
        let t = small_tokenizer();
        let ids = t.encode(&text, parse_special);
        prop_assert!(ids.iter().all(|&id| usize::try_from(id).unwrap() < t.vocab_size()));
        prop_assert_eq!(t.decode(&ids, true).unwrap(), text.as_bytes());
    }

    #[test]
    fn decode_encode_is_identity_with_markup(
        parts in proptest::collection::vec(prop_oneof![
            Just("<|im_start|>".to_owned()), Just("<|im".to_owned()), Just("<tool>".to_owned()),
            Just(" the".to_owned()), Just("  ".to_owned()), Just("\n\n".to_owned()), "\\PC{0,6}",
        ], 0..12),
        parse_special in any::<bool>(),
    ) {
        let t = small_tokenizer();
        let text = parts.concat();
        let ids = t.encode(&text, parse_special);
        prop_assert_eq!(t.decode(&ids, true).unwrap(), text.as_bytes());
        let mut d = Decoder::new(&t, true);
        let mut streamed = String::new();
        for id in ids {
            streamed.push_str(&d.push(id).unwrap());
        }
        streamed.push_str(&d.finish());
        prop_assert_eq!(streamed, text);
    }
}
