//! The rule of a bound word: what the written dword holds at a decode position, and its text form.
//!
//! A rule is one of these forms ([`FORMS`]), spaces optional, `A` a decimal `i64` (it may carry
//! a leading `-`), `D` and `W` decimal `u32` of at least 1:
//!
//! - `position`, `position + A`, `position - A`: a kernarg word that follows the position
//!   ([`Rule::Offset`], a [`KernargU32`](super::BindingKind::KernargU32) binding);
//! - `max(0, position + A)` (or `- A`): a kernarg word that follows the position once the
//!   position passes `-A` and is 0 before, such as the first key of a sliding attention window,
//!   `max(0, position + 1 - window)` ([`Rule::Clamped`], a
//!   [`KernargU32Clamped`](super::BindingKind::KernargU32Clamped) binding). Constant while the
//!   position is below `-A`, so no pair of early recordings shows it: only a declaration does;
//! - `ceil((position + A) / D)` (or `- A`): a work-group count that grows with the position
//!   ([`Rule::Grid`] in [`DimUnit::Workgroups`]: a [`GridAxis`](super::BindingKind::GridAxis)
//!   binding's `DIM` in work-groups, or a kernarg word that follows it);
//! - `ceil((position + A) / D) * W`: the same count in work-items, `W` per work-group
//!   ([`DimUnit::WorkItems`]: the `DIM` of a family that counts work-items).
//!
//! [`Rule`]'s `Display` prints the canonical form (`position + A` with the addend's own sign,
//! `position + -3`), which its `FromStr` reads back; IB bundles carry rules in this form.
//! [`Rule::value_within`] evaluates a rule: `position + A` must lie in `0..=u32::MAX`, the
//! division rounds up, the work-group count may not exceed the binding's maximum and the product
//! must fit `u32`.

use core::fmt;
use core::num::NonZeroU32;
use core::str::FromStr;

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{BindingError, DimUnit};

/// The accepted forms, for messages.
pub const FORMS: &str = "`position`, `position + A`, `max(0, position + A)`, `ceil((position + A) / D)` or \
     `ceil((position + A) / D) * W` (A a decimal i64, `- A` also accepted; D and W decimal u32 of at least 1)";

/// Offending text longer than this many characters is cut in messages.
pub const SHOWN_CHARS_MAX: usize = 64;

/// What a bound dword holds at a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `position + addend`.
    Offset {
        /// Added to the position.
        addend: i64,
    },
    /// `ceil((position + addend) / divisor)` work-groups, written in `unit`.
    Grid {
        /// Added to the position.
        addend: i64,
        /// What the shifted position is divided by, rounding up.
        divisor: NonZeroU32,
        /// Work-groups, or work-items with the work-group size.
        unit: DimUnit,
    },
    /// `max(0, position + addend)`: 0 while `position + addend` is negative.
    Clamped {
        /// Added to the position.
        addend: i64,
    },
}

impl Rule {
    /// The dword the rule gives at `position`, with no maximum on the work-group count.
    ///
    /// # Errors
    /// As [`Rule::value_within`].
    pub fn value_at(&self, position: u32) -> Result<u32, BindingError> {
        self.value_within(position, u32::MAX)
    }

    /// The dword the rule gives at `position` when a [`Rule::Grid`]'s work-group count may not
    /// exceed `max_workgroups` (a grid binding's prepared maximum; an offset ignores it).
    ///
    /// # Errors
    /// [`BindingError::OutOfRange`] when `position + addend` is outside `u32` (for
    /// [`Rule::Clamped`], above it),
    /// [`BindingError::GridAboveMax`] when the work-group count exceeds `max_workgroups`,
    /// [`BindingError::WorkItemsOverflow`] when the count in work-items does not fit `u32`.
    pub fn value_within(&self, position: u32, max_workgroups: u32) -> Result<u32, BindingError> {
        let (Rule::Offset { addend } | Rule::Grid { addend, .. } | Rule::Clamped { addend }) = *self;
        // Checked: an addend near i64::MAX must be refused, not overflow i64.
        let sum = i64::from(position).checked_add(addend);
        let sum = match (*self, sum) {
            (Rule::Clamped { .. }, Some(v)) => Some(v.max(0)),
            (_, sum) => sum,
        };
        let shifted = sum.and_then(|v| u32::try_from(v).ok()).ok_or(BindingError::OutOfRange { position, addend })?;
        let Rule::Grid { divisor, unit, .. } = *self else { return Ok(shifted) };
        let workgroups = shifted.div_ceil(divisor.get());
        if workgroups > max_workgroups {
            return Err(BindingError::GridAboveMax { position, workgroups, max_workgroups });
        }
        match unit {
            DimUnit::Workgroups => Ok(workgroups),
            DimUnit::WorkItems { workgroup_work_items } => workgroups
                .checked_mul(workgroup_work_items)
                .ok_or(BindingError::WorkItemsOverflow { position, workgroups, workgroup_work_items }),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::Offset { addend } => write!(f, "position + {addend}"),
            Rule::Clamped { addend } => write!(f, "max(0, position + {addend})"),
            Rule::Grid { addend, divisor, unit } => {
                write!(f, "ceil((position + {addend}) / {divisor})")?;
                match unit {
                    DimUnit::Workgroups => Ok(()),
                    DimUnit::WorkItems { workgroup_work_items } => write!(f, " * {workgroup_work_items}"),
                }
            }
        }
    }
}

/// Why a rule does not parse: the text (cut to a short prefix) and what was expected where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text} is not a rule: {problem} (accepted: {FORMS})")]
pub struct RuleError {
    /// The rule as written, quoted, cut to [`SHOWN_CHARS_MAX`] characters.
    pub text: String,
    /// What is wrong, and where (offsets count bytes of the text).
    pub problem: RuleProblem,
}

/// What is wrong with a rule's text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    /// A character no form uses.
    #[error("unexpected character {character:?} at offset {offset}")]
    UnexpectedCharacter {
        /// The character.
        character: char,
        /// Where.
        offset: usize,
    },
    /// Something else where `expected` belongs.
    #[error("expected {expected} at offset {offset}, found {found}")]
    Expected {
        /// What belongs there.
        expected: &'static str,
        /// Where.
        offset: usize,
        /// What is there.
        found: Found,
    },
    /// A number that must be at least 1 is 0.
    #[error("{what} at offset {offset} is 0, must be at least 1")]
    Zero {
        /// The number's role (`the divisor D`).
        what: &'static str,
        /// Where.
        offset: usize,
    },
    /// A number outside its type.
    #[error("{what} {digits} at offset {offset} is outside {range}")]
    OutOfRange {
        /// The number's role (`the addend A`).
        what: &'static str,
        /// Its digits, cut to [`SHOWN_CHARS_MAX`] characters.
        digits: String,
        /// Where (for a negative addend, its `-`).
        offset: usize,
        /// The type, `i64` or `u32`.
        range: &'static str,
    },
}

/// What a rule's text holds where something else was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// The end of the text.
    End,
    /// One of `+ - * / ( ) ,`.
    Punct(char),
    /// A word or a number, quoted and cut to [`SHOWN_CHARS_MAX`] characters.
    Text(String),
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::End => f.write_str("the end"),
            Found::Punct(c) => write!(f, "'{c}'"),
            Found::Text(text) => f.write_str(text),
        }
    }
}

/// `text` as a message shows it, quoted: at most [`SHOWN_CHARS_MAX`] characters, then `…` and
/// its length (`"xxxx"… (100000 bytes)`).
fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS_MAX) {
        None => format!("{text:?}"),
        Some((at, _)) => format!("{:?}… ({} bytes)", &text[..at], text.len()),
    }
}

/// `text` unquoted, cut as [`shown`] cuts it (for numbers).
fn cut(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS_MAX) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Number(&'a str),
    Punct(char),
}

impl Token<'_> {
    fn found(self) -> Found {
        match self {
            Token::Word(w) | Token::Number(w) => Found::Text(shown(w)),
            Token::Punct(c) => Found::Punct(c),
        }
    }
}

/// The tokens of `text` with their byte offsets; `Err` names an unexpected character.
fn tokens(text: &str) -> Result<Vec<(usize, Token<'_>)>, RuleProblem> {
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
        } else if "+-*/(),".contains(c) {
            out.push((at, Token::Punct(c)));
            chars.next();
        } else {
            return Err(RuleProblem::UnexpectedCharacter { character: c, offset: at });
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

    /// `expected` is missing here.
    fn missing(&self, expected: &'static str) -> RuleProblem {
        RuleProblem::Expected { expected, offset: self.offset(), found: self.peek().map_or(Found::End, Token::found) }
    }

    fn expect(&mut self, wanted: Token<'_>, expected: &'static str) -> Result<(), RuleProblem> {
        if self.peek() == Some(wanted) {
            self.next += 1;
            Ok(())
        } else {
            Err(self.missing(expected))
        }
    }

    fn at_end(&self) -> bool {
        self.next >= self.tokens.len()
    }

    /// A decimal number, optionally negative when `signed`: its offset (of the `-` when
    /// negative), whether it is negative, and its digits.
    fn number(&mut self, what: &'static str, signed: bool) -> Result<(usize, bool, &'a str), RuleProblem> {
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
            _ => Err(self.missing(what)),
        }
    }

    /// `position`, optionally `+ A` or `- A`; the addend.
    fn position_plus(&mut self) -> Result<i64, RuleProblem> {
        self.expect(Token::Word("position"), "\"position\"")?;
        let sign = match self.peek() {
            Some(Token::Punct('+')) => 1,
            Some(Token::Punct('-')) => -1,
            _ => return Ok(0),
        };
        self.next += 1;
        let (at, negative, digits) = self.number("the addend A (a decimal i64)", true)?;
        let outside =
            || RuleProblem::OutOfRange { what: "the addend A", digits: cut(digits), offset: at, range: "i64" };
        // i128 holds every i64 magnitude and its negation (`position - -9223372036854775808`
        // overflows i64 only after the signs combine).
        let magnitude: i128 = digits.parse().map_err(|_| outside())?;
        let value = magnitude * if negative { -1 } else { 1 } * sign;
        i64::try_from(value).map_err(|_| outside())
    }

    /// A `u32` of at least 1.
    fn positive(&mut self, what: &'static str) -> Result<NonZeroU32, RuleProblem> {
        let (at, _, digits) = self.number(what, false)?;
        match digits.parse::<u32>() {
            Ok(v) => NonZeroU32::new(v).ok_or(RuleProblem::Zero { what, offset: at }),
            Err(_) => Err(RuleProblem::OutOfRange { what, digits: cut(digits), offset: at, range: "u32" }),
        }
    }

    fn rule(&mut self) -> Result<Rule, RuleProblem> {
        let rule = if self.peek() == Some(Token::Word("ceil")) {
            self.next += 1;
            self.expect(Token::Punct('('), "'(' after \"ceil\"")?;
            self.expect(Token::Punct('('), "'(' before \"position\"")?;
            let addend = self.position_plus()?;
            self.expect(Token::Punct(')'), "')' after the addend")?;
            self.expect(Token::Punct('/'), "'/'")?;
            let divisor = self.positive("the divisor D")?;
            self.expect(Token::Punct(')'), "')' closing \"ceil(\"")?;
            let unit = if self.at_end() {
                DimUnit::Workgroups
            } else {
                self.expect(Token::Punct('*'), "the end or '*'")?;
                DimUnit::WorkItems { workgroup_work_items: self.positive("the work-group size W")?.get() }
            };
            Rule::Grid { addend, divisor, unit }
        } else if self.peek() == Some(Token::Word("max")) {
            self.next += 1;
            self.expect(Token::Punct('('), "'(' after \"max\"")?;
            self.expect(Token::Number("0"), "0 as the first argument of \"max\"")?;
            self.expect(Token::Punct(','), "',' after \"max(0\"")?;
            let addend = self.position_plus()?;
            self.expect(Token::Punct(')'), "')' closing \"max(\"")?;
            Rule::Clamped { addend }
        } else if self.peek() == Some(Token::Word("position")) {
            Rule::Offset { addend: self.position_plus()? }
        } else {
            return Err(self.missing("\"position\", \"max\" or \"ceil\""));
        };
        if !self.at_end() {
            return Err(self.missing("the end"));
        }
        Ok(rule)
    }
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Self, RuleError> {
        let fail = |problem: RuleProblem| RuleError { text: shown(text), problem };
        let tokens = tokens(text).map_err(fail)?;
        Parser { tokens, next: 0, len: text.len() }.rule().map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binding::BindingKind;
    use alloc::string::ToString;
    use proptest::prelude::*;

    fn nz(v: u32) -> NonZeroU32 {
        NonZeroU32::new(v).unwrap()
    }

    fn any_unit() -> impl Strategy<Value = DimUnit> {
        prop_oneof![
            Just(DimUnit::Workgroups),
            (1..=u32::MAX).prop_map(|workgroup_work_items| DimUnit::WorkItems { workgroup_work_items }),
        ]
    }

    /// Every rule the text form can hold: W of at least 1.
    fn any_rule() -> impl Strategy<Value = Rule> {
        prop_oneof![
            any::<i64>().prop_map(|addend| Rule::Offset { addend }),
            any::<i64>().prop_map(|addend| Rule::Clamped { addend }),
            (any::<i64>(), 1..=u32::MAX, any_unit()).prop_map(|(addend, divisor, unit)| Rule::Grid {
                addend,
                divisor: nz(divisor),
                unit
            }),
        ]
    }

    /// The rule's value computed in i128, independently of [`Rule::value_within`]: `None` where
    /// the rule has no value.
    fn reference(rule: Rule, position: u32, max_workgroups: u32) -> Option<u32> {
        let (Rule::Offset { addend } | Rule::Grid { addend, .. } | Rule::Clamped { addend }) = rule;
        let mut shifted = i128::from(position) + i128::from(addend);
        if matches!(rule, Rule::Clamped { .. }) && shifted < 0 {
            shifted = 0;
        }
        if !(0..=i128::from(u32::MAX)).contains(&shifted) {
            return None;
        }
        let Rule::Grid { divisor, unit, .. } = rule else { return u32::try_from(shifted).ok() };
        let divisor = i128::from(divisor.get());
        let workgroups = (shifted + divisor - 1) / divisor;
        if workgroups > i128::from(max_workgroups) {
            return None;
        }
        let times = match unit {
            DimUnit::Workgroups => 1,
            DimUnit::WorkItems { workgroup_work_items } => i128::from(workgroup_work_items),
        };
        u32::try_from(workgroups * times).ok()
    }

    proptest! {
        /// Every rule prints in a form the parser reads back as the same rule.
        #[test]
        fn printed_rules_parse_back(rule in any_rule()) {
            let text = rule.to_string();
            prop_assert_eq!(text.parse::<Rule>(), Ok(rule), "{}", text);
        }

        /// Text that parses prints back in the canonical form, which parses to the same rule.
        #[test]
        fn parsed_text_prints_canonically(
            addend in any::<i64>(),
            divisor in 1..=u32::MAX,
            w in 1..=u32::MAX,
            form in 0..4u8,
            spaces in "[ ]{0,2}",
        ) {
            let plus = if addend < 0 {
                format!("position{spaces}-{spaces}{}", addend.unsigned_abs())
            } else {
                format!("position{spaces}+{spaces}{addend}")
            };
            let text = match form {
                0 => plus,
                3 => format!("max({spaces}0{spaces},{spaces}{plus}{spaces})"),
                1 => format!("ceil(({plus}){spaces}/{spaces}{divisor})"),
                _ => format!("ceil(({plus}) / {divisor}){spaces}*{spaces}{w}"),
            };
            let rule = text.parse::<Rule>();
            prop_assert!(rule.is_ok(), "{}: {:?}", text, rule);
            let rule = rule.unwrap();
            prop_assert_eq!(rule.to_string().parse::<Rule>(), Ok(rule));
        }

        /// Any text parses to a rule or to an error that quotes at most a prefix of it.
        #[test]
        fn any_text_is_a_rule_or_a_short_error(text in "\\PC{0,40}|[ceilposition()+*/0-9 -]{0,40}") {
            if let Err(e) = text.parse::<Rule>() {
                prop_assert!(e.to_string().len() < 600, "{}", e);
            }
        }

        /// The evaluation agrees with the same arithmetic done in i128.
        #[test]
        fn value_within_is_the_reference_arithmetic(
            rule in any_rule(),
            position in any::<u32>(),
            max_workgroups in prop_oneof![Just(u32::MAX), any::<u32>()],
        ) {
            prop_assert_eq!(rule.value_within(position, max_workgroups).ok(), reference(rule, position, max_workgroups));
        }

        /// Small addends and divisors, where the values are mostly in range: same agreement.
        #[test]
        fn value_within_is_the_reference_arithmetic_near_zero(
            addend in -70i64..70,
            divisor in 1u32..70,
            w in prop_oneof![Just(0u32), 1u32..1025],
            position in 0u32..4096,
            max_workgroups in 0u32..80,
        ) {
            for rule in [
                Rule::Offset { addend },
                Rule::Clamped { addend },
                Rule::Grid { addend, divisor: nz(divisor), unit: DimUnit::Workgroups },
                Rule::Grid { addend, divisor: nz(divisor), unit: DimUnit::WorkItems { workgroup_work_items: w } },
            ] {
                prop_assert_eq!(
                    rule.value_within(position, max_workgroups).ok(),
                    reference(rule, position, max_workgroups),
                    "{}", rule
                );
            }
        }

        /// A grid binding written in work-items is its work-group value times the work-group
        /// size, and its rule's text reads back as the same rule.
        #[test]
        fn a_grid_binding_in_work_items_is_its_workgroups_times_the_size(
            axis in 0u8..3,
            addend in -100i64..100,
            divisor in 1u32..300,
            max_workgroups in any::<u32>(),
            wg in 1u16..=1024,
            position in any::<u32>(),
        ) {
            let kind = BindingKind::GridAxis { axis, addend, divisor, max_workgroups };
            let items = DimUnit::of_dispatch(true, wg);
            let expected = kind.value_at(position).ok().and_then(|g| g.checked_mul(u32::from(wg)));
            prop_assert_eq!(kind.value_in(position, items).ok(), expected);
            prop_assert_eq!(kind.value_in(position, DimUnit::of_dispatch(false, wg)), kind.value_at(position));
            let rule = kind.rule(items).unwrap();
            prop_assert_eq!(rule.to_string().parse::<Rule>(), Ok(rule));
        }
    }

    #[test]
    fn the_documented_forms_parse_and_evaluate() {
        let items = |w| DimUnit::WorkItems { workgroup_work_items: w };
        let cases: [(&str, Rule, u32, Option<u32>); 12] = [
            // A sliding window of 512 keys starts at max(0, position + 1 - 512): 0 through
            // position 511, then one further per position.
            ("max(0, position - 511)", Rule::Clamped { addend: -511 }, 0, Some(0)),
            ("max(0,position-511)", Rule::Clamped { addend: -511 }, 511, Some(0)),
            ("max(0, position + -511)", Rule::Clamped { addend: -511 }, 512, Some(1)),
            ("max(0, position + 4294967296)", Rule::Clamped { addend: 1 << 32 }, 0, None),
            ("position", Rule::Offset { addend: 0 }, 5, Some(5)),
            ("position + 1000", Rule::Offset { addend: 1000 }, 7, Some(1007)),
            ("position+ -3", Rule::Offset { addend: -3 }, 7, Some(4)),
            ("position - 3", Rule::Offset { addend: -3 }, 2, None),
            (
                "ceil((position + 1) / 64)",
                Rule::Grid { addend: 1, divisor: nz(64), unit: DimUnit::Workgroups },
                64,
                Some(2),
            ),
            (
                "ceil( ( position + 0 ) / 1 )",
                Rule::Grid { addend: 0, divisor: nz(1), unit: DimUnit::Workgroups },
                9,
                Some(9),
            ),
            (
                "ceil((position + 1) / 64) * 64",
                Rule::Grid { addend: 1, divisor: nz(64), unit: items(64) },
                63,
                Some(64),
            ),
            (
                "ceil((position + 1) / 1) * 4294967295",
                Rule::Grid { addend: 1, divisor: nz(1), unit: items(u32::MAX) },
                1,
                None,
            ),
        ];
        for (text, rule, position, value) in cases {
            assert_eq!(text.parse::<Rule>(), Ok(rule), "{text}");
            assert_eq!(rule.value_at(position).ok(), value, "{text} at {position}");
            assert_eq!(rule.to_string().parse::<Rule>(), Ok(rule), "{rule} re-reads");
        }
    }

    /// Values that tell a correct evaluation from the likely wrong ones: the unit ignored on a
    /// family that counts work-items, the addend applied twice or not at all, the division
    /// rounded down, the maximum checked after the unit instead of on the work-group count.
    #[test]
    fn the_evaluation_tells_the_unit_the_addend_and_the_rounding_apart() {
        let grid = BindingKind::GridAxis { axis: 1, addend: 1, divisor: 64, max_workgroups: 3 };
        let items = DimUnit::of_dispatch(true, 64);
        assert_eq!(items, DimUnit::WorkItems { workgroup_work_items: 64 });
        assert_eq!(DimUnit::of_dispatch(false, 64), DimUnit::Workgroups);
        // position 64: 65 work-items of 64 → 2 work-groups (floor: 1; addend twice: 66, still 2;
        // no addend: 1) → 128 work-items on a family that counts work-items.
        assert_eq!(grid.value_in(64, DimUnit::Workgroups), Ok(2));
        assert_eq!(grid.value_in(64, items), Ok(128));
        // position 63: 64 → exactly 1 work-group (addend twice: 65 → 2).
        assert_eq!(grid.value_in(63, items), Ok(64));
        // position 0: 1 → 1 (no addend: 0).
        assert_eq!(grid.value_in(0, items), Ok(64));
        // The maximum bounds the work-group count (3), not the work-items (192).
        assert_eq!(grid.value_in(191, items), Ok(192));
        assert_eq!(
            grid.value_in(192, items),
            Err(BindingError::GridAboveMax { position: 192, workgroups: 4, max_workgroups: 3 })
        );
        // A kernarg word is written as bound, whatever the unit of the launch's DIM.
        let word = BindingKind::KernargGridWorkgroups { offset: 8, axis: 1, addend: 1, divisor: 64, max_workgroups: 3 };
        assert_eq!(word.value_in(64, items), Ok(2));
        assert_eq!(word.rule(items).map(|r| r.to_string()).as_deref(), Ok("ceil((position + 1) / 64)"));
        let offset = BindingKind::KernargU32 { offset: 0, addend: 1000 };
        assert_eq!(offset.value_in(7, items), Ok(1007));
        assert_eq!(offset.rule(items).map(|r| r.to_string()).as_deref(), Ok("position + 1000"));
        assert_eq!(grid.rule(items).map(|r| r.to_string()).as_deref(), Ok("ceil((position + 1) / 64) * 64"));
        assert_eq!(grid.rule(DimUnit::Workgroups).map(|r| r.to_string()).as_deref(), Ok("ceil((position + 1) / 64)"));
    }

    #[test]
    fn values_outside_u32_are_typed_errors() {
        let big = BindingKind::GridAxis { axis: 0, addend: 0, divisor: 1, max_workgroups: u32::MAX };
        assert_eq!(big.value_in(0x1_0000, DimUnit::of_dispatch(true, u16::MAX)), Ok(0x1_0000 * 0xffff));
        assert_eq!(
            big.value_in(0x1_0001, DimUnit::of_dispatch(true, u16::MAX)),
            Ok(u32::MAX),
            "65537 × 65535 is 2^32 - 1"
        );
        assert_eq!(
            big.value_in(0x1_0002, DimUnit::of_dispatch(true, u16::MAX)),
            Err(BindingError::WorkItemsOverflow {
                position: 0x1_0002,
                workgroups: 0x1_0002,
                workgroup_work_items: 65535
            })
        );
        // An addend that overflows i64 with the position is out of range, not a wrap.
        assert_eq!(
            Rule::Offset { addend: i64::MAX }.value_at(1),
            Err(BindingError::OutOfRange { position: 1, addend: i64::MAX })
        );
        assert_eq!(
            BindingKind::KernargU32 { offset: 0, addend: i64::MAX }.value_at(u32::MAX),
            Err(BindingError::OutOfRange { position: u32::MAX, addend: i64::MAX })
        );
        assert_eq!(Rule::Offset { addend: -1 }.value_at(0), Err(BindingError::OutOfRange { position: 0, addend: -1 }));
        assert_eq!(
            BindingKind::GridAxis { axis: 0, addend: 0, divisor: 0, max_workgroups: 1 }.rule(DimUnit::Workgroups),
            Err(BindingError::Malformed { axis: 0, divisor: 0 })
        );
        assert_eq!(
            BindingKind::GridAxis { axis: 3, addend: 0, divisor: 1, max_workgroups: 1 }
                .value_in(0, DimUnit::Workgroups),
            Err(BindingError::Malformed { axis: 3, divisor: 1 })
        );
    }

    #[test]
    fn other_text_is_refused_naming_the_offset_and_the_forms() {
        let cases = [
            ("position ** banana", "expected the end at offset 9, found '*'"),
            ("position + banana", "expected the addend A (a decimal i64) at offset 11, found \"banana\""),
            ("", "expected \"position\", \"max\" or \"ceil\" at offset 0, found the end"),
            ("pos + 1", "expected \"position\", \"max\" or \"ceil\" at offset 0, found \"pos\""),
            ("max(1, position)", "expected 0 as the first argument of \"max\" at offset 4, found \"1\""),
            ("max(0 position)", "expected ',' after \"max(0\" at offset 6, found \"position\""),
            ("max(0, position + 2", "expected ')' closing \"max(\" at offset 19, found the end"),
            ("max(0, position) + 1", "expected the end at offset 17, found '+'"),
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
            assert!(err.problem.to_string().contains(problem), "{text}: {msg}");
            assert!(msg.contains("`ceil((position + A) / D) * W`"), "{text}: {msg}");
        }
    }

    #[test]
    fn refusals_carry_the_offending_values() {
        let problem = |text: &str| text.parse::<Rule>().unwrap_err().problem;
        assert_eq!(problem("ceil((position + 1) / 0)"), RuleProblem::Zero { what: "the divisor D", offset: 22 });
        assert_eq!(
            problem("position - 9223372036854775809"),
            RuleProblem::OutOfRange {
                what: "the addend A",
                digits: "9223372036854775809".into(),
                offset: 11,
                range: "i64"
            }
        );
        assert_eq!(
            "position - 9223372036854775808".parse::<Rule>(),
            Ok(Rule::Offset { addend: i64::MIN }),
            "the most negative addend is a rule"
        );
        assert_eq!(
            problem("position + 1 )"),
            RuleProblem::Expected { expected: "the end", offset: 13, found: Found::Punct(')') }
        );
        assert_eq!(problem("position ≠ 1"), RuleProblem::UnexpectedCharacter { character: '≠', offset: 9 });
        assert_eq!(
            problem("ceil((position + 1) / 64) *"),
            RuleProblem::Expected { expected: "the work-group size W", offset: 27, found: Found::End }
        );
    }

    #[test]
    fn shown_and_cut_cut_long_text() {
        assert_eq!(shown("short"), "\"short\"");
        assert_eq!(cut("123"), "123");
        let long = "é".repeat(100);
        let quoted = shown(&long);
        assert!(quoted.starts_with(&format!("\"{}\"", "é".repeat(SHOWN_CHARS_MAX))), "{quoted}");
        assert!(quoted.ends_with("\"… (200 bytes)"), "{quoted}");
        assert!(cut(&long).starts_with(&"é".repeat(SHOWN_CHARS_MAX)));
        assert!(cut(&long).ends_with("é… (200 bytes)"));
    }

    #[test]
    fn long_rules_are_cut_in_messages() {
        let text = format!("position + 1{}", " ".repeat(10_000) + "x");
        let msg = text.parse::<Rule>().unwrap_err().to_string();
        assert!(msg.len() < 600, "{} bytes", msg.len());
        let long_word = "p".repeat(1000);
        let err = long_word.parse::<Rule>().unwrap_err();
        assert!(err.to_string().contains("… (1000 bytes)"), "{err}");
        assert!(err.to_string().len() < 600, "{err}");
    }
}
