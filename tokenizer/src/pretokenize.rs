//! Pre-tokenization: splitting text into the pieces BPE runs on, as GPT-2's regex does.
//!
//! The regex is
//! `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//! (HF `ByteLevel(use_regex=true)`; llama.cpp's gpt2 list without the final `\s+`, which its split
//! adds implicitly). It is implemented as a hand-written scanner rather than with `fancy-regex`:
//! the only look-ahead, `\s+(?!\S)`, is "a whitespace run, minus its last character when a
//! non-space follows", which a scanner states directly, and it keeps the crate free of a regex
//! engine (compile time on two cores). `\p{L}`/`\p{N}` come from generated general-category tables,
//! `\s` is Unicode White_Space (`char::is_whitespace`).
//!
//! `smollm` first isolates every `\p{N}` character (HF `Digits(individual_digits=true)`,
//! llama.cpp's first regex `\p{N}`) and runs the GPT-2 scanner on the stretches between.

use crate::unicode_tables::{LETTER, NUMBER};

/// Which pre-tokenizer a vocabulary was trained with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreTokenizer {
    /// GPT-2's regex (`gpt2`, `default`).
    Gpt2,
    /// Every number character isolated, then GPT-2's regex (`smollm`, HF Digits + ByteLevel).
    SmolLm,
}

/// The names [`PreTokenizer::from_name`] accepts, for error messages.
pub const SUPPORTED_PRE_TOKENIZERS: &str = "smollm, gpt2, default";

impl PreTokenizer {
    /// The pre-tokenizer a GGUF `tokenizer.ggml.pre` name means, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "gpt2" | "default" => Some(Self::Gpt2),
            "smollm" => Some(Self::SmolLm),
            _ => None,
        }
    }

    /// Calls `piece` with each pre-token of `text`, in order; the pieces concatenate to `text`.
    pub fn split<'t>(self, text: &'t str, mut piece: impl FnMut(&'t str)) {
        match self {
            Self::Gpt2 => split_gpt2(text, &mut piece),
            Self::SmolLm => {
                let mut start = 0;
                for (at, c) in text.char_indices() {
                    if is_number(c) {
                        split_gpt2(&text[start..at], &mut piece);
                        let end = at + c.len_utf8();
                        piece(&text[at..end]);
                        start = end;
                    }
                }
                split_gpt2(&text[start..], &mut piece);
            }
        }
    }
}

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let code = u32::from(c);
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < code {
                std::cmp::Ordering::Less
            } else if lo > code {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// `\p{L}`.
pub(crate) fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    in_table(LETTER, c)
}

/// `\p{N}`.
pub(crate) fn is_number(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    in_table(NUMBER, c)
}

/// `[^\s\p{L}\p{N}]`.
fn is_other(c: char) -> bool {
    !c.is_whitespace() && !is_letter(c) && !is_number(c)
}

/// Length in bytes of the longest prefix of `s` whose characters satisfy `class`.
fn run_len(s: &str, class: impl Fn(char) -> bool) -> usize {
    s.char_indices().find(|&(_, c)| !class(c)).map_or(s.len(), |(at, _)| at)
}

/// Length of the contraction `'s|'t|'re|'ve|'m|'ll|'d` at the start of `s`, if any.
fn contraction_len(s: &str) -> Option<usize> {
    const CONTRACTIONS: [&str; 7] = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];
    CONTRACTIONS.iter().find(|c| s.starts_with(*c)).map(|c| c.len())
}

/// Length of the first GPT-2 pre-token of non-empty `s`.
fn next_len(s: &str) -> usize {
    if let Some(len) = contraction_len(s) {
        return len;
    }
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
    let lead = usize::from(s.starts_with(' '));
    let rest = &s[lead..];
    if let Some(c) = rest.chars().next() {
        let classes: [fn(char) -> bool; 3] = [is_letter, is_number, is_other];
        for class in classes {
            if class(c) {
                return lead + run_len(rest, class);
            }
        }
    }
    // `\s+(?!\S)|\s+`: s starts with whitespace here (a lone ' ' before whitespace or the end, or
    // another whitespace character).
    let ws = run_len(s, char::is_whitespace);
    if ws == s.len() {
        return ws;
    }
    // A non-space follows: the run gives up its last character to the next pre-token, unless that
    // would leave it empty (then `\s+` takes the single character).
    let last = s[..ws].chars().next_back().map_or(0, char::len_utf8);
    if ws > last { ws - last } else { ws }
}

fn split_gpt2<'t>(mut text: &'t str, piece: &mut impl FnMut(&'t str)) {
    while !text.is_empty() {
        let len = next_len(text);
        // INVARIANT: next_len of a non-empty string is a non-zero char boundary.
        debug_assert!(len > 0 && text.is_char_boundary(len));
        let (head, tail) = text.split_at(len);
        piece(head);
        text = tail;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(pre: PreTokenizer, text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        pre.split(text, |p| out.push(p));
        out
    }

    #[test]
    fn gpt2_examples() {
        let g = PreTokenizer::Gpt2;
        assert_eq!(pieces(g, "Hello world"), ["Hello", " world"]);
        assert_eq!(pieces(g, "don't I'll"), ["don", "'t", " I", "'ll"]);
        assert_eq!(pieces(g, "a   b"), ["a", "  ", " b"]);
        assert_eq!(pieces(g, "a \n\n b "), ["a", " \n\n", " b", " "]);
        assert_eq!(pieces(g, "x\ny"), ["x", "\n", "y"]);
        assert_eq!(pieces(g, "x\t\ty"), ["x", "\t", "\t", "y"]);
        assert_eq!(pieces(g, "12345 abc!!!"), ["12345", " abc", "!!!"]);
        assert_eq!(pieces(g, "''s"), ["''", "s"]);
        assert_eq!(pieces(g, " ü中文"), [" ü中文"]);
        assert!(pieces(g, "").is_empty());
    }

    #[test]
    fn smollm_isolates_digits() {
        let s = PreTokenizer::SmolLm;
        assert_eq!(pieces(s, "a 12 b"), ["a", " ", "1", "2", " b"]);
        assert_eq!(pieces(s, "x²"), ["x", "²"]);
    }

    #[test]
    fn categories() {
        assert!(is_letter('é') && is_letter('中') && is_letter('ß'));
        assert!(!is_letter('\u{301}') && !is_letter('1') && !is_letter('😀'));
        assert!(is_number('٣') && is_number('½') && is_number('Ⅻ'));
        assert!(is_other('😀') && is_other('\u{301}') && !is_other('\u{3000}'));
    }
}
