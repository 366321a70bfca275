//! Pre-tokenization: splitting text into the pieces BPE runs on, as llama.cpp does for each GGUF
//! `tokenizer.ggml.pre` name.
//!
//! Every rule is a regex in its source, implemented here as a hand-written scanner rather than
//! with `fancy-regex`: the only look-ahead, `\s+(?!\S)`, is "a whitespace run, minus its last
//! character when a non-space follows", which a scanner states directly, and it keeps the crate
//! free of a regex engine (compile time on two cores). `\p{L}`, `\p{N}` and `\p{M}` come from
//! generated general-category tables of Unicode 15.1 (the version of llama.cpp's own tables), `\s`
//! is Unicode White_Space (`char::is_whitespace`, the same set as llama.cpp's).
//!
//! - `gpt2`, `default`: GPT-2's regex
//!   `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!   (HF `ByteLevel(use_regex=true)`; llama.cpp's gpt2 list without the final `\s+`, which its
//!   split adds implicitly).
//! - `smollm`: every `\p{N}` character isolated first (HF `Digits(individual_digits=true)`,
//!   llama.cpp's first regex `\p{N}`), then GPT-2's regex on the stretches between.
//! - `lfm2`: llama.cpp's `llama3` rule,
//!   `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
//!   (the Llama 3 tokenizer's regex with its `(?i:...)` contractions spelled out in ASCII, as
//!   llama.cpp has it: `'ſ` is no contraction).
//! - `qwen35`: llama.cpp's `qwen35` rule,
//!   `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:
//!   the `llama3` shape with single digits, and combining marks (`\p{M}`) belonging to words.
//!
//! `tests/data/pretokenize_llamacpp.json` holds llama.cpp's own splits of a varied corpus under
//! all four rules (see `tests/data/README.md`).

use crate::unicode_tables::{LETTER, MARK, NUMBER};

/// Which pre-tokenizer a vocabulary was trained with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreTokenizer {
    /// GPT-2's regex (`gpt2`, `default`).
    Gpt2,
    /// Every number character isolated, then GPT-2's regex (`smollm`, HF Digits + ByteLevel).
    SmolLm,
    /// LFM2's (`lfm2`): llama.cpp's `llama3` rule (numbers in runs of up to three digits,
    /// case-insensitive contractions, newlines kept with the whitespace before them).
    Lfm2,
    /// Qwen 3.5's (`qwen35`): the `llama3` shape with single digits and marks inside words.
    Qwen35,
}

/// The names [`PreTokenizer::from_name`] accepts, for error messages.
pub const SUPPORTED_PRE_TOKENIZERS: &str = "smollm, gpt2, default, lfm2, qwen35";

/// How the `llama3`-shaped rules differ.
#[derive(Debug, Clone, Copy)]
struct WordRule {
    /// Whether words take combining marks: `[\p{L}\p{M}]+` rather than `\p{L}+`.
    marks_in_words: bool,
    /// The longest digit run one piece takes: `\p{N}{1,3}` or `\p{N}`.
    digits_max: usize,
}

/// A splitting rule.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// GPT-2's regex, after isolating every number character if `isolate_numbers`.
    Gpt2 { isolate_numbers: bool },
    /// The `llama3` shape.
    Words(WordRule),
}

/// What llama.cpp does for one pre-tokenizer name: the rule, and the two vocabulary settings it
/// ties to the name (`llama_vocab::impl::load`).
#[derive(Debug)]
struct Facts {
    rule: Rule,
    /// `ignore_merges`: a pre-token that is itself in the vocabulary is emitted as that token,
    /// whatever the merges would make of it.
    ignore_merges: bool,
    /// The default of `add_bos`, which GGUF `tokenizer.ggml.add_bos_token` overrides.
    add_bos: bool,
}

/// Indexed by [`PreTokenizer`] in declaration order.
const FACTS: [Facts; 4] = [
    Facts { rule: Rule::Gpt2 { isolate_numbers: false }, ignore_merges: false, add_bos: false },
    Facts { rule: Rule::Gpt2 { isolate_numbers: true }, ignore_merges: false, add_bos: false },
    Facts { rule: Rule::Words(WordRule { marks_in_words: false, digits_max: 3 }), ignore_merges: true, add_bos: true },
    Facts { rule: Rule::Words(WordRule { marks_in_words: true, digits_max: 1 }), ignore_merges: false, add_bos: false },
];

impl PreTokenizer {
    /// The pre-tokenizer a GGUF `tokenizer.ggml.pre` name means, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "gpt2" | "default" => Some(Self::Gpt2),
            "smollm" => Some(Self::SmolLm),
            "lfm2" => Some(Self::Lfm2),
            "qwen35" => Some(Self::Qwen35),
            _ => None,
        }
    }

    fn facts(self) -> &'static Facts {
        let index = match self {
            Self::Gpt2 => 0,
            Self::SmolLm => 1,
            Self::Lfm2 => 2,
            Self::Qwen35 => 3,
        };
        &FACTS[index]
    }

    /// Whether llama.cpp emits a pre-token that is itself a token as that token, without merging
    /// (its `ignore_merges`; `lfm2`).
    pub fn ignore_merges(self) -> bool {
        self.facts().ignore_merges
    }

    /// Whether llama.cpp puts BOS first by default for this name (`lfm2`), when the file has no
    /// `tokenizer.ggml.add_bos_token`.
    pub fn default_add_bos(self) -> bool {
        self.facts().add_bos
    }

    /// Calls `piece` with each pre-token of `text`, in order; the pieces concatenate to `text`.
    pub fn split<'t>(self, text: &'t str, mut piece: impl FnMut(&'t str)) {
        match self.facts().rule {
            Rule::Gpt2 { isolate_numbers: false } => split_gpt2(text, &mut piece),
            Rule::Gpt2 { isolate_numbers: true } => {
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
            Rule::Words(rule) => split_words(text, rule, &mut piece),
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

/// `\p{M}` (no ASCII character is a mark).
pub(crate) fn is_mark(c: char) -> bool {
    !c.is_ascii() && in_table(MARK, c)
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

/// Length of `'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]` at the start of `s`, if any.
fn contraction_len_ascii_ci(s: &str) -> Option<usize> {
    let mut bytes = s.bytes().map(|b| b.to_ascii_lowercase());
    if bytes.next() != Some(b'\'') {
        return None;
    }
    match (bytes.next()?, bytes.next()) {
        (b's' | b't' | b'm' | b'd', _) => Some(2),
        (b'r' | b'v', Some(b'e')) | (b'l', Some(b'l')) => Some(3),
        _ => None,
    }
}

/// The whitespace alternatives `\s+(?!\S)|\s+` on `s`, which starts with a run of `ws` bytes of
/// whitespace: a run that a non-space follows gives up its last character to the next
/// pre-token, unless that would leave it empty (then `\s+` takes the single character).
fn trailing_space_len(s: &str, ws: usize) -> usize {
    if ws == s.len() {
        return ws;
    }
    let last = s[..ws].chars().next_back().map_or(0, char::len_utf8);
    if ws > last { ws - last } else { ws }
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
    trailing_space_len(s, run_len(s, char::is_whitespace))
}

fn split_gpt2<'t>(text: &'t str, piece: &mut impl FnMut(&'t str)) {
    split_by(text, next_len, piece);
}

/// Calls `piece` with the successive pre-tokens of `text` that `len` measures.
fn split_by<'t>(mut text: &'t str, len: impl Fn(&str) -> usize, piece: &mut impl FnMut(&'t str)) {
    while !text.is_empty() {
        let len = len(text);
        // INVARIANT: the measures return a non-zero char boundary for non-empty text.
        debug_assert!(len > 0 && text.is_char_boundary(len));
        let (head, tail) = text.split_at(len);
        piece(head);
        text = tail;
    }
}

/// Length of the first pre-token of non-empty `s` under a `llama3`-shaped rule; the alternatives
/// in the regex's order.
fn next_len_words(s: &str, rule: WordRule) -> usize {
    if let Some(len) = contraction_len_ascii_ci(s) {
        return len;
    }
    let is_word = |c: char| is_letter(c) || (rule.marks_in_words && is_mark(c));
    let mut chars = s.chars();
    let Some(first) = chars.next() else { return 0 };
    let second = chars.next();
    // `[^\r\n\p{L}\p{N}]?W+` (W: `\p{L}` or `[\p{L}\p{M}]`): a word, or one character of any other
    // kind but a newline or number in front of one.
    if !matches!(first, '\r' | '\n') && !is_number(first) && (is_word(first) || second.is_some_and(is_word)) {
        let lead = first.len_utf8();
        return lead + run_len(&s[lead..], is_word);
    }
    // `\p{N}{1,3}` or `\p{N}`.
    if is_number(first) {
        return s.chars().take_while(|&c| is_number(c)).take(rule.digits_max).map(char::len_utf8).sum();
    }
    // ` ?[^\s W \p{N}]+[\r\n]*`.
    let other = |c: char| !c.is_whitespace() && !is_word(c) && !is_number(c);
    let lead = usize::from(first == ' ' && second.is_some_and(other));
    if lead == 1 || other(first) {
        let len = lead + run_len(&s[lead..], other);
        return len + run_len(&s[len..], |c| matches!(c, '\r' | '\n'));
    }
    // `\s*[\r\n]+`: whitespace up to and including the last newline of the run.
    let ws = run_len(s, char::is_whitespace);
    if let Some(at) = s[..ws].rfind(['\r', '\n']) {
        return at + 1;
    }
    if ws == 0 {
        // Unreachable: every character is a word, number, other or whitespace character. One
        // character keeps the split moving, as llama.cpp's "no match" step does.
        return first.len_utf8();
    }
    trailing_space_len(s, ws)
}

fn split_words<'t>(text: &'t str, rule: WordRule, piece: &mut impl FnMut(&'t str)) {
    split_by(text, |s| next_len_words(s, rule), piece);
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

    /// Hand-derived from the `llama3` regex, alternative by alternative.
    #[test]
    fn lfm2_examples() {
        let l = PreTokenizer::Lfm2;
        // Contractions in either case; a letter run may take one leading non-letter.
        assert_eq!(pieces(l, "DON'T I'LL it's"), ["DON", "'T", " I", "'LL", " it", "'s"]);
        assert_eq!(pieces(l, "(hello) !!!x"), ["(hello", ")", " !!!", "x"]);
        // Digits in runs of at most three, never with a space in front.
        assert_eq!(pieces(l, "1234567 x 12"), ["123", "456", "7", " x", " ", "12"]);
        // Newlines stay with the whitespace before them and with punctuation before them.
        assert_eq!(pieces(l, "a  \n\n  b"), ["a", "  \n\n", " ", " b"]);
        assert_eq!(pieces(l, "end.\r\n\r\nNext"), ["end", ".\r\n\r\n", "Next"]);
        assert_eq!(pieces(l, "x\ny"), ["x", "\n", "y"]);
        // A combining mark is not a letter: it leads the next word, or stands alone.
        assert_eq!(pieces(l, "e\u{301}te\u{301}"), ["e", "\u{301}te", "\u{301}"]);
        assert_eq!(pieces(l, "a   "), ["a", "   "]);
    }

    /// Hand-derived from the `qwen35` regex.
    #[test]
    fn qwen35_examples() {
        let q = PreTokenizer::Qwen35;
        assert_eq!(pieces(q, "e\u{301}te\u{301}"), ["e\u{301}te\u{301}"]);
        assert_eq!(pieces(q, " \u{301}x 12"), [" \u{301}x", " ", "1", "2"]);
        assert_eq!(pieces(q, "हिन्दी!"), ["हिन्दी", "!"]);
        assert_eq!(pieces(q, "She'S 42\n"), ["She", "'S", " ", "4", "2", "\n"]);
    }

    #[test]
    fn contractions_are_ascii_only() {
        assert_eq!(contraction_len_ascii_ci("'Ll"), Some(3));
        assert_eq!(contraction_len_ascii_ci("'ſ"), None);
        assert_eq!(contraction_len_ascii_ci("'"), None);
        assert_eq!(contraction_len_ascii_ci("'r"), None);
        assert_eq!(contraction_len_ascii_ci("'rE"), Some(3));
    }

    /// The crate's category tables and `\s` against llama.cpp's own, recorded over every code point
    /// by `tests/data/gen_pretokenize_llamacpp.py`; and the code points on which HF `tokenizers`
    /// splits differently from llama.cpp (its newer Unicode) are ones both llama.cpp and this crate
    /// leave unassigned, in no class.
    #[test]
    fn categories_equal_llama_cpp() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pretokenize_llamacpp.json");
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let categories = &json["llamacpp_categories"];
        type Class = fn(char) -> bool;
        let classes: [(&str, Class); 4] =
            [("letter", is_letter), ("number", is_number), ("mark", is_mark), ("whitespace", char::is_whitespace)];
        for (name, class) in classes {
            let mut theirs = vec![false; 0x11_0000];
            for range in categories[name].as_array().unwrap() {
                let (lo, hi) = (range[0].as_u64().unwrap(), range[1].as_u64().unwrap());
                for code in lo..=hi {
                    theirs[usize::try_from(code).unwrap()] = true;
                }
            }
            for c in (0..0x11_0000u32).filter_map(char::from_u32) {
                assert_eq!(class(c), theirs[usize::try_from(u32::from(c)).unwrap()], "{name} U+{:04X}", u32::from(c));
            }
        }
        for difference in json["hf_differences"].as_array().unwrap() {
            let unassigned = difference["unassigned"].as_array().unwrap();
            assert!(difference["folded_long_s"].as_bool().unwrap() || !unassigned.is_empty());
            for code in unassigned {
                let c = char::from_u32(u32::try_from(code.as_u64().unwrap()).unwrap()).unwrap();
                assert!(is_other(c) && !is_mark(c), "U+{:04X}", u32::from(c));
            }
        }
    }

    #[test]
    fn categories() {
        assert!(is_letter('é') && is_letter('中') && is_letter('ß'));
        assert!(!is_letter('\u{301}') && !is_letter('1') && !is_letter('😀'));
        assert!(is_number('٣') && is_number('½') && is_number('Ⅻ'));
        assert!(is_other('😀') && is_other('\u{301}') && !is_other('\u{3000}'));
        assert!(is_mark('\u{301}') && is_mark('\u{93f}') && is_mark('\u{20e3}') && is_mark('\u{fe0f}'));
        assert!(!is_mark('a') && !is_mark('é'));
        // Assigned in Unicode 15.0 and 15.1 (CJK extensions H and I): letters as in llama.cpp.
        assert!(is_letter('\u{31350}') && is_letter('\u{2ebf0}'));
    }
}
