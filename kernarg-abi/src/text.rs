//! Quoting input-controlled text in messages: a name, id or key read from the input is cut to a
//! short prefix, and a list of them to its first few, so that no message echoes megabytes.

use alloc::string::String;
use core::fmt;

/// Characters of one input string quoted in a message.
pub(crate) const QUOTE_MAX_CHARS: usize = 80;
/// Items of a list quoted in a message.
pub(crate) const LIST_MAX_ITEMS: usize = 8;

/// The first [`QUOTE_MAX_CHARS`] characters of `text`.
pub(crate) fn cut(text: &str) -> &str {
    text.char_indices().nth(QUOTE_MAX_CHARS).map_or(text, |(end, _)| &text[..end])
}

/// `text`, cut after [`QUOTE_MAX_CHARS`] characters (the cut marked with its full length).
pub(crate) struct Short<'a>(pub(crate) &'a str);

impl fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = cut(self.0);
        f.write_str(shown)?;
        if shown.len() < self.0.len() {
            write!(f, "... ({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

/// `items` joined by `, `, each [`Short`], at most [`LIST_MAX_ITEMS`] of them and a count of the
/// rest.
pub(crate) struct ShortList<'a>(pub(crate) &'a [String]);

impl fmt::Display for ShortList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.0.iter().take(LIST_MAX_ITEMS).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", Short(item))?;
        }
        if self.0.len() > LIST_MAX_ITEMS {
            write!(f, ", and {} more", self.0.len() - LIST_MAX_ITEMS)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    #[test]
    fn long_text_is_cut_with_its_length() {
        assert_eq!(Short("gfx1100").to_string(), "gfx1100");
        let long = "é".repeat(100);
        let shown = Short(&long).to_string();
        assert_eq!(shown, format!("{}... (200 bytes)", "é".repeat(QUOTE_MAX_CHARS)));
        assert_eq!(cut(&long).chars().count(), QUOTE_MAX_CHARS);
    }

    #[test]
    fn long_lists_are_cut_with_a_count() {
        let items: Vec<String> = (0..10).map(|i| format!("e{i}")).collect();
        assert_eq!(ShortList(&items).to_string(), "e0, e1, e2, e3, e4, e5, e6, e7, and 2 more");
        assert_eq!(ShortList(&["a".to_string()]).to_string(), "a");
    }
}
