//! Showing input-controlled text on a terminal: file names, manifest paths, kernel symbols, the
//! strings of a model's metadata. Any of them can hold control characters (an escape sequence
//! that recolours or rewrites the terminal, a carriage return that overwrites the line before, a
//! NUL), so every such string is passed through [`escape`] before it is printed.
//!
//! The escapes are Rust's spelling: `\n`, `\r`, `\t`, `\0`, `\x1b` for the other C0 controls and
//! DEL, `\u{9b}` for the C1 controls. Nothing else changes (a backslash stays one backslash, so
//! the escaped text of a name that holds the two characters `\n` reads the same as that of a
//! name holding a newline: the terminal is safe, the spelling is not unique).

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

/// `text` with every control character (C0, DEL, C1) spelled as an escape.
#[must_use]
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_keeping(text, |_| false)
}

/// [`escape`], but line feeds and tabs stay as they are: for text whose lines are its own layout
/// (a report, a generation streamed as it comes) rather than one name.
#[must_use]
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_keeping(text, |c| matches!(c, '\n' | '\t'))
}

/// A path, shown as [`escape`] shows its (lossily decoded) name.
#[must_use]
pub fn escape_path(path: &Path) -> String {
    escape(&path.to_string_lossy()).into_owned()
}

/// A [`fmt::Display`] of a string through [`escape`], for use inside `format!`.
#[derive(Clone, Copy, Debug)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&escape(self.0))
    }
}

/// A [`fmt::Display`] of a path through [`escape`].
#[derive(Clone, Copy, Debug)]
pub struct EscapedPath<'a>(pub &'a Path);

impl fmt::Display for EscapedPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&escape(&self.0.to_string_lossy()))
    }
}

fn escape_keeping(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !c.is_control() || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn control_characters_are_spelled_out() {
        // Hand-written: ESC [ 2 J (clear screen), a carriage return, a NUL, DEL, CSI (C1).
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\x1b[2Jb");
        assert_eq!(escape("x\ry\0z\u{7f}"), "x\\ry\\0z\\x7f");
        assert_eq!(escape("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escape("line\nnext\tcol"), "line\\nnext\\tcol");
        assert_eq!(escape_lines("line\nnext\tcol\u{1b}"), "line\nnext\tcol\\x1b");
        assert_eq!(escape_path(Path::new("/tmp/a\u{7}b/")), "/tmp/a\\x07b/");
        assert_eq!(format!("{}", Escaped("k\u{1b}]0;t\u{7}")), "k\\x1b]0;t\\x07");
        assert_eq!(format!("[{}]", EscapedPath(Path::new("m\0.gguf"))), "[m\\0.gguf]");
    }

    #[test]
    fn printable_text_is_borrowed_unchanged() {
        for text in ["", "tok_embd.weight", "smollm2 – 135M ✓", "C:\\path"] {
            assert!(matches!(escape(text), Cow::Borrowed(t) if t == text));
        }
    }

    proptest! {
        /// Nothing escaped holds a control character (but the kept ones), and text without any is
        /// unchanged.
        #[test]
        fn no_control_character_survives(text in ".*") {
            let escaped = escape(&text);
            prop_assert!(!escaped.chars().any(char::is_control));
            let lines = escape_lines(&text);
            prop_assert!(!lines.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
            prop_assert_eq!(lines.matches('\n').count(), text.matches('\n').count());
            if !text.chars().any(char::is_control) {
                prop_assert_eq!(escaped.as_ref(), text.as_str());
            }
        }
    }
}
