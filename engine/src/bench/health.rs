//! Decoded-output health: a timed row is healthy when its decoded text has a character that is
//! not white space, its finish reason is `length` or `stop`, and it has no runaway repetition.
//!
//! Runaway repetition is measured on the generated token ids: the longest back-to-back
//! repetition is the n-gram of 1 to [`NGRAM_TOKENS_MAX`] tokens and the start that cover the
//! most tokens with consecutive copies of it (`span = n × copies`). It is a runaway when it has
//! at least [`RUNAWAY_COPIES_MIN`] copies and covers at least [`RUNAWAY_SPAN_PCT_MIN`] percent of
//! the generated tokens: `a b a b` in 16 tokens is ordinary, `x x x x` in 7 is a loop.

use serde::Serialize;
use serde_json::{Value, json};

/// Longest n-gram whose repetition is measured, tokens.
pub const NGRAM_TOKENS_MAX: usize = 8;
/// Fewest back-to-back copies that can make a runaway.
pub const RUNAWAY_COPIES_MIN: usize = 4;
/// Smallest share of the generated tokens a runaway covers, percent.
pub const RUNAWAY_SPAN_PCT_MIN: usize = 50;
/// The finish reasons of a healthy row: the length limit or the end of sequence.
pub const FINISH_REASONS: [&str; 2] = ["length", "stop"];

/// A back-to-back repetition of one n-gram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Repeat {
    /// Tokens in the n-gram.
    pub ngram_tokens: usize,
    /// Consecutive copies, at least 2.
    pub copies: usize,
    /// Index of the first copy's first token.
    pub start: usize,
    /// `ngram_tokens × copies`.
    pub span_tokens: usize,
}

impl Repeat {
    /// Whether it is a runaway in `generated` tokens (see the module documentation).
    #[must_use]
    pub fn is_runaway(&self, generated: usize) -> bool {
        self.copies >= RUNAWAY_COPIES_MIN && self.span_tokens * 100 >= RUNAWAY_SPAN_PCT_MIN * generated
    }
}

/// The longest back-to-back repetition of `tokens` (ties: the shorter n-gram, then the earlier
/// start); `None` when nothing repeats.
#[must_use]
pub fn longest_repeat(tokens: &[u32]) -> Option<Repeat> {
    let mut best: Option<Repeat> = None;
    for n in 1..=NGRAM_TOKENS_MAX.min(tokens.len() / 2) {
        for start in 0..=tokens.len() - 2 * n {
            let gram = &tokens[start..start + n];
            let copies = 1 + tokens[start + n..].chunks_exact(n).take_while(|chunk| *chunk == gram).count();
            let span_tokens = n * copies;
            if copies >= 2 && best.is_none_or(|b| span_tokens > b.span_tokens) {
                best = Some(Repeat { ngram_tokens: n, copies, start, span_tokens });
            }
        }
    }
    best
}

/// Why a row is not healthy (empty when it is).
#[must_use]
pub fn row_problems(text: &str, finish_reason: &str, tokens: &[u32]) -> Vec<String> {
    let mut problems = Vec::new();
    if text.trim().is_empty() {
        problems.push(format!("decoded text {text:?} has no character that is not white space"));
    }
    if !FINISH_REASONS.contains(&finish_reason) {
        problems.push(format!("finish reason {finish_reason:?} is not length or stop"));
    }
    if let Some(repeat) = longest_repeat(tokens).filter(|r| r.is_runaway(tokens.len())) {
        problems.push(format!(
            "runaway repetition: {} copies of a {}-token n-gram from token {} cover {} of {} tokens",
            repeat.copies,
            repeat.ngram_tokens,
            repeat.start,
            repeat.span_tokens,
            tokens.len()
        ));
    }
    problems
}

/// The criteria, as the report records them.
#[must_use]
pub fn criteria() -> Value {
    json!({
        "text": "at least one character that is not white space",
        "finish_reasons": FINISH_REASONS,
        "repetition": {
            "measured_on": "generated token ids",
            "ngram_tokens_max": NGRAM_TOKENS_MAX, "runaway_copies_min": RUNAWAY_COPIES_MIN,
            "runaway_span_pct_min": RUNAWAY_SPAN_PCT_MIN,
        },
        "rows": "every timed row of the arm",
    })
}

/// One timed row as the health check sees it.
#[derive(Clone, Copy, Debug)]
pub struct RowOutput<'a> {
    /// Its index in the arm.
    pub index: usize,
    /// Why it failed, when it did.
    pub error: Option<&'a str>,
    /// Decoded text.
    pub text: &'a str,
    /// Finish reason.
    pub finish_reason: &'a str,
    /// Generated token ids.
    pub tokens: &'a [u32],
}

/// The health of an arm's timed rows: pass, the problems, and the first row's measurements.
#[must_use]
pub fn arm(rows: &[RowOutput<'_>]) -> Value {
    let mut failures = Vec::new();
    for row in rows {
        match row.error {
            Some(error) => failures.push(format!("row {}: failed: {error}", row.index)),
            None => failures.extend(
                row_problems(row.text, row.finish_reason, row.tokens)
                    .into_iter()
                    .map(|p| format!("row {}: {p}", row.index)),
            ),
        }
    }
    if rows.is_empty() {
        failures.push("no timed row".to_owned());
    }
    let first = rows.first().map(|r| {
        json!({
            "index": r.index, "text": r.text, "finish_reason": r.finish_reason, "generated_tokens": r.tokens.len(),
            "longest_repeat": longest_repeat(r.tokens),
        })
    });
    json!({"pass": failures.is_empty(), "rows_checked": rows.len(), "failures": failures, "first_row": first})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_repeat_is_the_widest_back_to_back_span() {
        assert_eq!(longest_repeat(&[]), None);
        assert_eq!(longest_repeat(&[1, 2, 3, 4]), None);
        assert_eq!(longest_repeat(&[7, 7]), Some(Repeat { ngram_tokens: 1, copies: 2, start: 0, span_tokens: 2 }));
        assert_eq!(
            longest_repeat(&[9, 1, 2, 1, 2, 1, 2, 5]),
            Some(Repeat { ngram_tokens: 2, copies: 3, start: 1, span_tokens: 6 })
        );
        // 3 copies of 1 token (span 3) lose to 2 copies of 3 tokens (span 6).
        assert_eq!(
            longest_repeat(&[4, 4, 4, 1, 2, 3, 1, 2, 3]),
            Some(Repeat { ngram_tokens: 3, copies: 2, start: 3, span_tokens: 6 })
        );
    }

    #[test]
    fn a_runaway_needs_enough_copies_and_coverage() {
        let looped = [5, 5, 5, 5, 1, 2, 3];
        assert!(longest_repeat(&looped).unwrap().is_runaway(looped.len()), "4 copies over 4 of 7 tokens");
        let short = [5, 5, 5, 1, 2, 3, 4];
        assert!(!longest_repeat(&short).unwrap().is_runaway(short.len()), "3 copies are not enough");
        let mut long = vec![5, 5, 5, 5];
        long.extend(10..30);
        assert!(!longest_repeat(&long).unwrap().is_runaway(long.len()), "4 of 24 tokens is under half");
    }

    #[test]
    fn row_problems_name_each_failed_check() {
        assert!(row_problems("Paris is", "length", &[1, 2, 3]).is_empty());
        assert!(row_problems("ok", "stop", &[1]).is_empty());
        let problems = row_problems(" \n", "cancelled", &[8, 8, 8, 8, 8]);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("white space") && problems[1].contains("cancelled"), "{problems:?}");
        assert!(problems[2].starts_with("runaway repetition: 5 copies of a 1-token n-gram"), "{problems:?}");
    }

    #[test]
    fn an_arm_fails_on_a_failed_or_missing_row() {
        let good = RowOutput { index: 3, error: None, text: "a b", finish_reason: "length", tokens: &[1, 2] };
        assert_eq!(arm(&[good])["pass"], true);
        let failed = RowOutput { error: Some("replay failed"), ..good };
        let value = arm(&[good, failed]);
        assert_eq!(value["pass"], false);
        assert_eq!(value["failures"], json!(["row 3: failed: replay failed"]));
        assert_eq!(arm(&[])["failures"], json!(["no timed row"]));
    }
}
