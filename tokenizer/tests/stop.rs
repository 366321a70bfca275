//! Stop tokens and stop strings fed token by token.

use proptest::prelude::*;
use tokenizer::{StopMatcher, StopStep};

fn step(emit: &str, stop: bool) -> StopStep {
    StopStep { emit: emit.to_owned(), stop }
}

#[test]
fn stop_string_split_across_tokens() {
    let mut m = StopMatcher::new(vec![], vec!["</s>".to_owned()]);
    assert_eq!(m.push(10, "Hello <"), step("Hello ", false));
    assert_eq!(m.push(11, "/"), step("", false));
    assert_eq!(m.push(12, "s> more"), step("", true));
    assert!(m.stopped());
    assert_eq!(m.push(13, "x"), step("", true));
}

#[test]
fn false_start_is_released() {
    let mut m = StopMatcher::new(vec![], vec!["</s>".to_owned()]);
    assert_eq!(m.push(1, "a<"), step("a", false));
    assert_eq!(m.push(2, "/b"), step("</b", false));
    assert_eq!(m.push(3, "<"), step("", false));
    assert_eq!(m.finish(), "<");
}

#[test]
fn text_before_stop_in_same_token_is_emitted() {
    let mut m = StopMatcher::new(vec![], vec!["\n\nUser:".to_owned()]);
    assert_eq!(m.push(1, "Sure.\n"), step("Sure.", false));
    assert_eq!(m.push(2, "\nUs"), step("", false));
    assert_eq!(m.push(3, "er: hi"), step("", true));
}

#[test]
fn stop_token_releases_held_text() {
    let mut m = StopMatcher::new(vec![2], vec!["<|".to_owned()]);
    assert_eq!(m.push(5, "a<"), step("a", false));
    assert_eq!(m.push(2, ""), step("<", true));
}

#[test]
fn earliest_stop_string_wins() {
    let mut m = StopMatcher::new(vec![], vec!["bcd".to_owned(), "abc".to_owned()]);
    assert_eq!(m.push(1, "xab"), step("x", false));
    assert_eq!(m.push(2, "cd"), step("", true));
}

#[test]
fn multibyte_prefixes_hold_whole_characters() {
    let mut m = StopMatcher::new(vec![], vec!["é!".to_owned()]);
    assert_eq!(m.push(1, "café"), step("caf", false));
    assert_eq!(m.push(2, "?"), step("é?", false));
}

proptest! {
    /// However the text is cut into tokens, what is emitted before the stop is exactly the text up
    /// to the first occurrence of any stop string (or all of it with `finish`).
    #[test]
    fn chunking_does_not_matter(
        pieces in proptest::collection::vec("[ab<>/é]{0,4}", 0..12),
        stops in proptest::collection::vec("[ab<>/é]{1,3}", 0..3),
    ) {
        let text = pieces.concat();
        let first = stops.iter().filter_map(|s| text.find(s.as_str())).min();
        let mut m = StopMatcher::new(vec![], stops.clone());
        let mut out = String::new();
        let mut stopped = false;
        for (i, p) in pieces.iter().enumerate() {
            let s = m.push(u32::try_from(i).unwrap(), p);
            prop_assert!(!stopped || s.emit.is_empty());
            out.push_str(&s.emit);
            stopped |= s.stop;
        }
        if !stopped {
            out.push_str(&m.finish());
        }
        prop_assert_eq!(stopped, first.is_some());
        prop_assert_eq!(out.as_str(), &text[..first.unwrap_or(text.len())]);
    }
}
