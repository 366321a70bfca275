//! The rules of patch sites: what the patched dword holds at a decode position.
//!
//! A rule is one of these forms ([`FORMS`]), spaces optional, `A` a decimal `i64` (it may carry
//! a leading `-`), `D` and `W` decimal `u32` of at least 1:
//!
//! - `position`, `position + A`, `position - A`: a kernarg word that follows the position
//!   (tape-core's `KernargU32` binding);
//! - `ceil((position + A) / D)` (or `- A`): a work-group count that grows with the position (a
//!   `GridAxis` binding's `DIM` in work-groups, or a kernarg word that follows it);
//! - `ceil((position + A) / D) * W`: the same count in work-items, `W` per work-group (the `DIM`
//!   of a family that counts work-items).
//!
//! [`Rule::value_at`] evaluates a rule the way tape-core's bindings do: `position + A` must lie in
//! `0..=u32::MAX`, the division rounds up, the product must fit `u32`.

use std::fmt;
use std::str::FromStr;

/// The accepted forms, for messages.
pub const FORMS: &str = "`position`, `position + A`, `ceil((position + A) / D)` or `ceil((position + A) / D) * W` \
     (A a decimal i64, `- A` also accepted; D and W decimal u32 of at least 1)";

/// A parsed patch-site rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `position + addend`.
    Offset {
        /// Added to the position.
        addend: i64,
    },
    /// `ceil((position + addend) / divisor)`.
    Workgroups {
        /// Added to the position.
        addend: i64,
        /// At least 1.
        divisor: u32,
    },
    /// `ceil((position + addend) / divisor) * workgroup_work_items`.
    WorkItems {
        /// Added to the position.
        addend: i64,
        /// At least 1.
        divisor: u32,
        /// At least 1.
        workgroup_work_items: u32,
    },
}

/// Why a rule does not parse: the text (cut to a short prefix) and what was expected where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text} is not a rule: {problem} (accepted: {FORMS})")]
pub struct RuleError {
    /// The rule as written, quoted, cut to [`super::SHOWN_CHARS_MAX`] characters.
    pub text: String,
    /// What is wrong, with the character offset.
    pub problem: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Number(&'a str),
    Punct(char),
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Word(w) | Token::Number(w) => f.write_str(&super::shown(w)),
            Token::Punct(c) => write!(f, "'{c}'"),
        }
    }
}

/// The tokens of `text` with their character offsets; `Err` names an unexpected character.
fn tokens(text: &str) -> Result<Vec<(usize, Token<'_>)>, String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(at, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut end = at;
            while let Some(&(i, c)) = chars.peek().filter(|(_, c)| c.is_ascii_alphanumeric() || *c == '_') {
                end = i + c.len_utf8();
                chars.next();
            }
            out.push((at, Token::Word(&text[at..end])));
        } else if c.is_ascii_digit() {
            let mut end = at;
            while let Some(&(i, c)) = chars.peek().filter(|(_, c)| c.is_ascii_digit()) {
                end = i + c.len_utf8();
                chars.next();
            }
            out.push((at, Token::Number(&text[at..end])));
        } else if "+-*/()".contains(c) {
            out.push((at, Token::Punct(c)));
            chars.next();
        } else {
            return Err(format!("unexpected character {c:?} at offset {at}"));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: Vec<(usize, Token<'a>)>,
    next: usize,
    len: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Token<'a>> {
        self.tokens.get(self.next).map(|&(_, t)| t)
    }

    fn offset(&self) -> usize {
        self.tokens.get(self.next).map_or(self.len, |&(at, _)| at)
    }

    fn found(&self) -> String {
        self.peek().map_or_else(|| "the end".to_owned(), |t| t.to_string())
    }

    fn expect(&mut self, wanted: Token<'_>, what: &str) -> Result<(), String> {
        if self.peek() == Some(wanted) {
            self.next += 1;
            Ok(())
        } else {
            Err(format!("expected {what} at offset {}, found {}", self.offset(), self.found()))
        }
    }

    fn at_end(&self) -> bool {
        self.next >= self.tokens.len()
    }

    /// A decimal number, optionally negative when `signed`.
    fn number(&mut self, what: &str, signed: bool) -> Result<(usize, bool, &'a str), String> {
        let at = self.offset();
        let negative = signed && self.peek() == Some(Token::Punct('-'));
        if negative {
            self.next += 1;
        }
        match self.peek() {
            Some(Token::Number(n)) => {
                self.next += 1;
                Ok((at, negative, n))
            }
            _ => Err(format!("expected {what} at offset {}, found {}", self.offset(), self.found())),
        }
    }

    /// `position`, optionally `+ A` or `- A`; the addend.
    fn position_plus(&mut self) -> Result<i64, String> {
        self.expect(Token::Word("position"), "\"position\"")?;
        let sign = match self.peek() {
            Some(Token::Punct('+')) => 1,
            Some(Token::Punct('-')) => -1,
            _ => return Ok(0),
        };
        self.next += 1;
        let (at, negative, digits) = self.number("the addend A (a decimal i64)", true)?;
        let outside = || format!("the addend A {} at offset {at} is outside i64", super::cut(digits));
        let magnitude: i128 = digits.parse().map_err(|_| outside())?;
        let value = magnitude * if negative { -1 } else { 1 } * sign;
        i64::try_from(value).map_err(|_| outside())
    }

    /// A `u32` of at least 1.
    fn positive(&mut self, what: &str) -> Result<u32, String> {
        let (at, _, digits) = self.number(what, false)?;
        match digits.parse::<u32>() {
            Ok(0) => Err(format!("{what} at offset {at} is 0, must be at least 1")),
            Ok(v) => Ok(v),
            Err(_) => Err(format!("{what} {} at offset {at} is outside u32", super::cut(digits))),
        }
    }
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Self, RuleError> {
        let fail = |problem: String| RuleError { text: super::shown(text), problem };
        let tokens = tokens(text).map_err(fail)?;
        let mut p = Parser { tokens, next: 0, len: text.len() };
        let rule = (|| {
            if p.peek() == Some(Token::Word("ceil")) {
                p.next += 1;
                p.expect(Token::Punct('('), "'(' after \"ceil\"")?;
                p.expect(Token::Punct('('), "'(' before \"position\"")?;
                let addend = p.position_plus()?;
                p.expect(Token::Punct(')'), "')' after the addend")?;
                p.expect(Token::Punct('/'), "'/'")?;
                let divisor = p.positive("the divisor D")?;
                p.expect(Token::Punct(')'), "')' closing \"ceil(\"")?;
                if p.at_end() {
                    return Ok(Rule::Workgroups { addend, divisor });
                }
                p.expect(Token::Punct('*'), "the end or '*'")?;
                let workgroup_work_items = p.positive("the work-group size W")?;
                Ok(Rule::WorkItems { addend, divisor, workgroup_work_items })
            } else if p.peek() == Some(Token::Word("position")) {
                Ok(Rule::Offset { addend: p.position_plus()? })
            } else {
                Err(format!("expected \"position\" or \"ceil\" at offset {}, found {}", p.offset(), p.found()))
            }
        })()
        .map_err(fail)?;
        if !p.at_end() {
            return Err(fail(format!("expected the end at offset {}, found {}", p.offset(), p.found())));
        }
        Ok(rule)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::Offset { addend } => write!(f, "position + {addend}"),
            Rule::Workgroups { addend, divisor } => write!(f, "ceil((position + {addend}) / {divisor})"),
            Rule::WorkItems { addend, divisor, workgroup_work_items } => {
                write!(f, "ceil((position + {addend}) / {divisor}) * {workgroup_work_items}")
            }
        }
    }
}

impl Rule {
    /// The dword the rule gives at `position`; `None` when `position + A` is outside `u32` or
    /// the product overflows.
    #[must_use]
    pub fn value_at(&self, position: u32) -> Option<u32> {
        let (addend, divisor, times) = match *self {
            Rule::Offset { addend } => (addend, 1, 1),
            Rule::Workgroups { addend, divisor } => (addend, divisor, 1),
            Rule::WorkItems { addend, divisor, workgroup_work_items } => (addend, divisor, workgroup_work_items),
        };
        let base = u32::try_from(i64::from(position).checked_add(addend)?).ok()?;
        base.div_ceil(divisor.max(1)).checked_mul(times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_rule() -> impl Strategy<Value = Rule> {
        prop_oneof![
            any::<i64>().prop_map(|addend| Rule::Offset { addend }),
            (any::<i64>(), 1..=u32::MAX).prop_map(|(addend, divisor)| Rule::Workgroups { addend, divisor }),
            (any::<i64>(), 1..=u32::MAX, 1..=u32::MAX).prop_map(|(addend, divisor, workgroup_work_items)| {
                Rule::WorkItems { addend, divisor, workgroup_work_items }
            }),
        ]
    }

    proptest! {
        /// Every rule prints in a form the parser reads back as the same rule.
        #[test]
        fn printed_rules_parse_back(rule in any_rule()) {
            let text = rule.to_string();
            prop_assert_eq!(text.parse::<Rule>(), Ok(rule), "{}", text);
        }

        /// Any text parses to a rule or to an error that quotes at most a prefix of it.
        #[test]
        fn any_text_is_a_rule_or_a_short_error(text in "\\PC{0,40}|[ceilposition()+*/0-9 -]{0,40}") {
            if let Err(e) = text.parse::<Rule>() {
                prop_assert!(e.to_string().len() < 600, "{}", e);
            }
        }
    }

    #[test]
    fn the_documented_forms_parse_and_evaluate() {
        let cases: [(&str, Rule, u32, Option<u32>); 8] = [
            ("position", Rule::Offset { addend: 0 }, 5, Some(5)),
            ("position + 1000", Rule::Offset { addend: 1000 }, 7, Some(1007)),
            ("position+ -3", Rule::Offset { addend: -3 }, 7, Some(4)),
            ("position - 3", Rule::Offset { addend: -3 }, 2, None),
            ("ceil((position + 1) / 64)", Rule::Workgroups { addend: 1, divisor: 64 }, 64, Some(2)),
            ("ceil( ( position + 0 ) / 1 )", Rule::Workgroups { addend: 0, divisor: 1 }, 9, Some(9)),
            (
                "ceil((position + 1) / 64) * 64",
                Rule::WorkItems { addend: 1, divisor: 64, workgroup_work_items: 64 },
                63,
                Some(64),
            ),
            (
                "ceil((position + 1) / 1) * 4294967295",
                Rule::WorkItems { addend: 1, divisor: 1, workgroup_work_items: u32::MAX },
                1,
                None,
            ),
        ];
        for (text, rule, position, value) in cases {
            assert_eq!(text.parse::<Rule>(), Ok(rule), "{text}");
            assert_eq!(rule.value_at(position), value, "{text} at {position}");
            assert_eq!(rule.to_string().parse::<Rule>(), Ok(rule), "{rule} re-reads");
        }
    }

    #[test]
    fn other_text_is_refused_naming_the_offset_and_the_forms() {
        let cases = [
            ("position ** banana", "expected the end at offset 9, found '*'"),
            ("position + banana", "expected the addend A (a decimal i64) at offset 11, found \"banana\""),
            ("", "expected \"position\" or \"ceil\" at offset 0, found the end"),
            ("pos + 1", "expected \"position\" or \"ceil\" at offset 0, found \"pos\""),
            ("position + 1 + 2", "expected the end at offset 13, found '+'"),
            ("ceil((position + 1) / 0)", "the divisor D at offset 22 is 0"),
            ("ceil((position + 1) / 4294967296)", "the divisor D 4294967296 at offset 22 is outside u32"),
            ("position + 99999999999999999999", "the addend A 99999999999999999999 at offset 11 is outside i64"),
            ("ceil((position + 1) / 64) * 0", "the work-group size W at offset 28 is 0"),
            ("position ≠ 1", "unexpected character '≠' at offset 9"),
            ("ceil(position + 1) / 64", "expected '(' before \"position\" at offset 5"),
        ];
        for (text, problem) in cases {
            let err = text.parse::<Rule>().unwrap_err();
            let msg = err.to_string();
            assert!(err.problem.contains(problem), "{text}: {msg}");
            assert!(msg.contains("`ceil((position + A) / D) * W`"), "{text}: {msg}");
        }
    }

    #[test]
    fn long_rules_are_cut_in_messages() {
        let text = format!("position + 1{}", " ".repeat(10_000) + "x");
        let msg = text.parse::<Rule>().unwrap_err().to_string();
        assert!(msg.len() < 600, "{} bytes", msg.len());
    }
}
