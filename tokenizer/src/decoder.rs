//! Streaming decoding: tokens in, complete UTF-8 text out.
//!
//! A byte-level token can end in the middle of a multi-byte character (emoji are often split over
//! two or three tokens), so the decoder holds back a trailing incomplete sequence until the next
//! token completes it. Bytes that can never become valid UTF-8 are replaced by U+FFFD, as
//! `String::from_utf8_lossy` would.

use crate::error::TokenizerError;
use crate::tokenizer::Tokenizer;

/// Turns a stream of byte chunks into complete UTF-8 text.
#[derive(Debug, Clone, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `bytes` and returns all text that is now complete; an incomplete character at the
    /// end (at most 3 bytes) is kept for the next call.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // PANIC: from_utf8 vouched for the prefix up to valid_up_to.
                    out.push_str(std::str::from_utf8(valid).expect("prefix is valid UTF-8"));
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        None => {
                            // Incomplete sequence at the end: keep it.
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        let kept = rest.len();
        let drop = self.pending.len() - kept;
        self.pending.drain(..drop);
        out
    }

    /// Bytes held back waiting for the rest of a character.
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }

    /// Ends the stream: any held-back bytes come out as U+FFFD.
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// Decodes token ids one at a time into complete UTF-8 text: each token's
/// [`Tokenizer::token_bytes`], as llama.cpp's `token_to_piece` streams them. Unlike
/// [`Tokenizer::decode`] it keeps the leading space an SPM vocabulary with `add_space_prefix`
/// writes before the first word (a stream may continue text that came before it).
#[derive(Debug, Clone)]
pub struct Decoder<'t> {
    tokenizer: &'t Tokenizer,
    special: bool,
    position: usize,
    stream: Utf8Stream,
}

impl<'t> Decoder<'t> {
    /// A decoder over `tokenizer`; control tokens produce their text only if `special` is set.
    pub fn new(tokenizer: &'t Tokenizer, special: bool) -> Self {
        Self { tokenizer, special, position: 0, stream: Utf8Stream::new() }
    }

    /// Feeds one token; returns the text that became complete (possibly empty).
    pub fn push(&mut self, id: u32) -> Result<String, TokenizerError> {
        let bytes = self.tokenizer.token_bytes(id, self.special).ok_or(TokenizerError::IdOutOfRange {
            id,
            position: self.position,
            vocab_size: self.tokenizer.vocab_size(),
        })?;
        self.position += 1;
        Ok(self.stream.push(bytes))
    }

    /// Ends decoding: a held-back incomplete character comes out as U+FFFD.
    pub fn finish(&mut self) -> String {
        self.stream.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn holds_back_split_emoji() {
        let emoji = "😀".as_bytes();
        let mut s = Utf8Stream::new();
        assert_eq!(s.push(&[b'a', emoji[0]]), "a");
        assert_eq!(s.push(&emoji[1..3]), "");
        assert_eq!(s.pending().len(), 3);
        assert_eq!(s.push(&emoji[3..]), "😀");
        assert!(s.pending().is_empty());
    }

    #[test]
    fn invalid_bytes_become_replacement() {
        let mut s = Utf8Stream::new();
        assert_eq!(s.push(&[0xFF, b'x', 0xE2, 0x82]), "\u{FFFD}x");
        assert_eq!(s.finish(), "\u{FFFD}");
    }

    proptest! {
        #[test]
        fn any_chunking_equals_lossy(bytes in proptest::collection::vec(any::<u8>(), 0..64),
                                     cuts in proptest::collection::vec(0usize..64, 0..8)) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut s = Utf8Stream::new();
            let mut out = String::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                out.push_str(&s.push(&bytes[start..cut]));
                start = cut;
            }
            out.push_str(&s.finish());
            prop_assert_eq!(out, String::from_utf8_lossy(&bytes).into_owned());
        }
    }
}
