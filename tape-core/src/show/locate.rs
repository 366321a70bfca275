//! Where a JSON tape stopped parsing: the line and column serde_json reports, the JSON path
//! of the value it stopped in (found by scanning the bytes before it), and its message cut to a
//! readable length.

use alloc::borrow::ToOwned as _;
use alloc::format;
use alloc::string::{String, ToString as _};
use alloc::vec::Vec;
use core::fmt::Write as _;

/// Most bytes of a decoder's message quoted in an error (serde_json quotes offending strings and
/// unknown field names whole).
const MESSAGE_BYTES_MAX: usize = 160;

/// A serde_json error with its line and column, the JSON path of the value it stopped at, and
/// its message cut to [`MESSAGE_BYTES_MAX`] bytes.
pub(super) fn json_error(text: &[u8], error: &serde_json::Error) -> String {
    let full = error.to_string();
    let (line, column) = (error.line(), error.column());
    let suffix = format!(" at line {line} column {column}");
    let message = cut(full.strip_suffix(&suffix).unwrap_or(&full));
    let hint = if text.first().is_some_and(|&b| b != b'{' && !b.is_ascii_whitespace()) {
        " (a tape is JSON or starts with RLTAPE)"
    } else {
        ""
    };
    if line == 0 {
        return format!("invalid JSON tape: {message}{hint}");
    }
    let path = line_start(text, line).map(|start| json_path_at(text, start.saturating_add(column)));
    match path.filter(|p| !p.is_empty()) {
        Some(path) => format!("invalid JSON tape at line {line} column {column}, {path}: {message}{hint}"),
        None => format!("invalid JSON tape at line {line} column {column}: {message}{hint}"),
    }
}

/// `message` cut to about [`MESSAGE_BYTES_MAX`] bytes: its start and its end (where serde_json
/// says what it expected), `…` in place of the middle.
fn cut(message: &str) -> String {
    if message.len() <= MESSAGE_BYTES_MAX {
        return message.to_owned();
    }
    let (mut head, mut tail) = (MESSAGE_BYTES_MAX * 2 / 3, message.len() - MESSAGE_BYTES_MAX / 3);
    while !message.is_char_boundary(head) {
        head -= 1;
    }
    while !message.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}…{}", &message[..head], &message[tail..])
}

/// Byte offset of the first byte of 1-based line `line`.
fn line_start(text: &[u8], line: usize) -> Option<usize> {
    if line <= 1 {
        return Some(0);
    }
    text.iter().enumerate().filter(|&(_, &b)| b == b'\n').nth(line - 2).map(|(i, _)| i + 1)
}

/// The JSON path (`launches[0].geometry.grid_work_items[1]`) of the value a parser reading
/// `text` is in at byte `offset`, from a scan of the bytes before it: the open objects (with the
/// key last read in each) and arrays (with the index of the element). Keys are cut to 32 bytes.
fn json_path_at(text: &[u8], offset: usize) -> String {
    enum Frame {
        Object { key: Option<String>, expect_key: bool },
        Array { index: usize },
    }
    let end = offset.min(text.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < end {
        match text[i] {
            b'{' => stack.push(Frame::Object { key: None, expect_key: true }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array { index }) => *index = index.saturating_add(1),
                Some(Frame::Object { key, expect_key }) => {
                    *key = None;
                    *expect_key = true;
                }
                None => {}
            },
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while let Some(&b) = text.get(j) {
                    match b {
                        b'"' => break,
                        b'\\' => j += 2,
                        _ => j += 1,
                    }
                }
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut()
                    && *expect_key
                {
                    let raw = text.get(start..j.min(text.len()).min(start.saturating_add(32))).unwrap_or_default();
                    *key = Some(String::from_utf8_lossy(raw).into_owned());
                    *expect_key = false;
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object { key: None, .. } => {}
            Frame::Array { index } => {
                let _ = write!(path, "[{index}]");
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    /// The path at the byte just after the first occurrence of `marker` in `text`.
    fn path_after(text: &str, marker: &str) -> String {
        let at = text.find(marker).unwrap() + marker.len();
        json_path_at(text.as_bytes(), at)
    }

    #[test]
    fn json_paths_follow_keys_and_indices() {
        let text = r#"{"a": {"b": [1, {"c": "x,]}{\"y"}, [2, 3]]}, "d": 4}"#;
        assert_eq!(path_after(text, r#""a""#), "a");
        assert_eq!(path_after(text, "[1"), "a.b[0]");
        assert_eq!(path_after(text, r#""c""#), "a.b[1].c");
        // Brackets, commas and escaped quotes inside strings are not structure.
        assert_eq!(path_after(text, r#"\"y""#), "a.b[1].c");
        assert_eq!(path_after(text, "[2, "), "a.b[2][1]");
        assert_eq!(path_after(text, "3]"), "a.b[2]");
        assert_eq!(path_after(text, r#""d""#), "d");
        assert_eq!(json_path_at(text.as_bytes(), 0), "");
        assert_eq!(json_path_at(text.as_bytes(), usize::MAX), "");
        // A string that never ends, a long key: no panic, the key cut to 32 bytes.
        assert_eq!(json_path_at(br#"{"abc"#, 5), "abc");
        let long = format!(r#"{{"{}": 1"#, "k".repeat(100));
        assert_eq!(json_path_at(long.as_bytes(), long.len()), "k".repeat(32));
        assert_eq!(json_path_at(br#"{"a": "\"#, 8), "a");
    }

    #[test]
    fn long_messages_keep_their_start_and_end() {
        let short = "invalid type: string \"x\", expected u32";
        assert_eq!(cut(short), short);
        let long = format!("invalid type: string \"{}\", expected u32", "é".repeat(1000));
        let kept = cut(&long);
        assert!(kept.len() <= MESSAGE_BYTES_MAX + '…'.len_utf8() + 1, "{}", kept.len());
        assert!(kept.starts_with("invalid type: string \"é") && kept.ends_with("\", expected u32"), "{kept}");
    }

    #[test]
    fn lines_start_after_their_newline() {
        let text = b"a\nbc\n\nd";
        assert_eq!(line_start(text, 1), Some(0));
        assert_eq!(line_start(text, 2), Some(2));
        assert_eq!(line_start(text, 4), Some(6));
        assert_eq!(line_start(text, 5), None);
    }
}
