//! Any bytes as a SentencePiece-style vocabulary (pieces, scores, token types, special ids and
//! flags, including empty and duplicate pieces, NaN scores, bad types, malformed byte pieces and
//! out-of-range ids) followed by text: building the tokenizer gives a tokenizer or a typed error,
//! never a panic; an accepted one encodes the text with and without specials and BOS into ids in
//! range, which decode, whole and streamed, without error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tokenizer::{Decoder, SpmVocab, Tokenizer};

/// Takes bytes from the front of the input, zero once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&first, rest)) = self.0.split_first() else { return 0 };
        self.0 = rest;
        first
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let (taken, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        taken
    }

    /// An optional id around the vocabulary size (in and out of range).
    fn id(&mut self, size: usize) -> Option<u32> {
        let b = self.byte();
        (b & 1 == 1).then(|| u32::try_from(usize::from(b >> 1) % (size + 3)).unwrap_or(u32::MAX))
    }

    fn flag(&mut self) -> Option<bool> {
        match self.byte() % 3 {
            0 => None,
            1 => Some(false),
            _ => Some(true),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let size = usize::from(input.byte() % 48);
    let mut vocab = SpmVocab::default();
    for _ in 0..size {
        let len = usize::from(input.byte() % 8);
        vocab.tokens.push(String::from_utf8_lossy(input.bytes(len)).into_owned());
        // 0..=7: the six types and two that are not.
        vocab.token_types.push(i32::from(input.byte() % 8));
        let score = input.byte();
        vocab.scores.push(if score == u8::MAX { f32::NAN } else { (f32::from(score) - 128.0) / 8.0 });
    }
    // Sometimes one count is off.
    match input.byte() % 16 {
        0 => drop(vocab.scores.pop()),
        1 => vocab.token_types.push(1),
        _ => {}
    }
    vocab.bos = input.id(size);
    vocab.eos = input.id(size);
    vocab.unk = input.id(size);
    vocab.pad = input.id(size);
    vocab.add_bos = input.flag();
    vocab.add_eos = input.flag();
    vocab.add_space_prefix = input.flag();
    let text = String::from_utf8_lossy(input.0);
    let Ok(t) = Tokenizer::new_spm(vocab) else { return };
    for parse_special in [false, true] {
        let ids = t.encode_special(&text, true, parse_special);
        assert!(ids.iter().all(|&id| usize::try_from(id).is_ok_and(|i| i < t.vocab_size())));
        let whole = t.decode(&ids, parse_special).expect("ids in range");
        let mut decoder = Decoder::new(&t, parse_special);
        let mut streamed = String::new();
        for &id in &ids {
            streamed.push_str(&decoder.push(id).expect("id in range"));
        }
        streamed.push_str(&decoder.finish());
        // The whole decode differs from the stream at most by the prefix space it drops.
        let whole = String::from_utf8_lossy(&whole);
        assert!(streamed == whole || (t.add_space_prefix() && streamed.strip_prefix(' ') == Some(&*whole)));
    }
});
