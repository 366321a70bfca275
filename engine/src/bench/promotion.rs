//! The promotion rule: declared before the timed rows, it says whether the measured result
//! promotes the retained route (`promote`) or not (`hold`).
//!
//! A rule is one or more clauses separated by commas, all of which must hold:
//!
//! ```text
//! rule   = clause *("," clause)          at most CLAUSES_MAX clauses, each named once
//! clause = metric op number              ratio>=1.10   delta_tok_s>0
//!        / check "=pass"                 gates=pass    health=pass
//! metric = "ratio"        median tok/s of the retained arm over the ordinary arm's
//!        / "delta_tok_s"  median tok/s of the retained arm minus the ordinary arm's
//! op     = ">=" / ">"
//! check  = "gates"        every validity gate of the report passed (`valid`)
//!        / "health"       both arms' decoded output is healthy (see `health`)
//! ```
//!
//! Spaces around a clause are ignored; anything else that does not fit is an error naming the
//! clause and the part that is wrong.

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

/// The rule `redline bench` applies without `--promotion-rule`.
pub const DEFAULT_RULE: &str = "ratio>=1.10,gates=pass,health=pass";
/// Clauses of one rule at most.
pub const CLAUSES_MAX: usize = 8;

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>=`.
    AtLeast,
    /// `>`.
    Above,
}

impl Op {
    fn holds(self, measured: f64, bound: f64) -> bool {
        match self {
            Op::AtLeast => measured >= bound,
            Op::Above => measured > bound,
        }
    }

    const fn text(self) -> &'static str {
        match self {
            Op::AtLeast => ">=",
            Op::Above => ">",
        }
    }
}

/// A measured quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Retained over ordinary median tok/s.
    Ratio,
    /// Retained minus ordinary median tok/s.
    DeltaTokS,
}

impl Metric {
    const fn name(self) -> &'static str {
        match self {
            Metric::Ratio => "ratio",
            Metric::DeltaTokS => "delta_tok_s",
        }
    }
}

/// A pass/fail check of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Every validity gate passed.
    Gates,
    /// Both arms' output is healthy.
    Health,
}

impl Check {
    const fn name(self) -> &'static str {
        match self {
            Check::Gates => "gates",
            Check::Health => "health",
        }
    }
}

/// One clause.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Clause {
    /// `metric op bound`.
    Compare {
        /// What is compared.
        metric: Metric,
        /// How.
        op: Op,
        /// With what (finite).
        bound: f64,
    },
    /// `check=pass`.
    Pass(Check),
}

impl Clause {
    fn name(&self) -> &'static str {
        match self {
            Clause::Compare { metric, .. } => metric.name(),
            Clause::Pass(check) => check.name(),
        }
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Clause::Compare { metric, op, bound } => write!(f, "{}{}{bound}", metric.name(), op.text()),
            Clause::Pass(check) => write!(f, "{}=pass", check.name()),
        }
    }
}

/// Why a rule does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// No clause at all.
    #[error("the rule is empty; write clauses such as {DEFAULT_RULE}")]
    Empty,
    /// More than [`CLAUSES_MAX`] clauses.
    #[error("{count} clauses exceed the limit of {limit}")]
    TooManyClauses {
        /// Clauses given.
        count: usize,
        /// [`CLAUSES_MAX`].
        limit: usize,
    },
    /// An empty clause (two commas in a row, or a trailing comma).
    #[error("clause {index} is empty")]
    EmptyClause {
        /// 1-based.
        index: usize,
    },
    /// A clause that names nothing known.
    #[error(
        "clause {index} {clause:?}: unknown name {name:?}; accepted: ratio, delta_tok_s (with >= or >), gates, health (with =pass)"
    )]
    UnknownName {
        /// 1-based.
        index: usize,
        /// The clause.
        clause: String,
        /// The name it starts with.
        name: String,
    },
    /// A metric without `>=` or `>`.
    #[error("clause {index} {clause:?}: {name} needs >= or > and a number, found {rest:?}")]
    BadOperator {
        /// 1-based.
        index: usize,
        /// The clause.
        clause: String,
        /// The metric.
        name: &'static str,
        /// What followed the name.
        rest: String,
    },
    /// A bound that is not a finite number.
    #[error("clause {index} {clause:?}: {text:?} is not a finite number")]
    BadNumber {
        /// 1-based.
        index: usize,
        /// The clause.
        clause: String,
        /// The bound's text.
        text: String,
    },
    /// A check with anything but `=pass`.
    #[error("clause {index} {clause:?}: {name} takes =pass, found {rest:?}")]
    BadCheck {
        /// 1-based.
        index: usize,
        /// The clause.
        clause: String,
        /// The check.
        name: &'static str,
        /// What followed the name.
        rest: String,
    },
    /// A name used by two clauses.
    #[error("clause {index} {clause:?}: {name} is already constrained by an earlier clause")]
    Duplicate {
        /// 1-based.
        index: usize,
        /// The clause.
        clause: String,
        /// The name.
        name: &'static str,
    },
}

/// A parsed rule: its clauses, in the order written.
#[derive(Clone, Debug, PartialEq)]
pub struct PromotionRule {
    clauses: Vec<Clause>,
}

impl Default for PromotionRule {
    fn default() -> Self {
        // PANIC: DEFAULT_RULE is a valid rule (tested).
        DEFAULT_RULE.parse().expect("the default rule parses")
    }
}

fn split_name(clause: &str) -> (&str, &str) {
    let end = clause.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(clause.len());
    clause.split_at(end)
}

fn parse_clause(index: usize, clause: &str) -> Result<Clause, RuleError> {
    let (name, rest) = split_name(clause);
    let owned = || clause.to_owned();
    let metric = match name {
        "ratio" => Metric::Ratio,
        "delta_tok_s" => Metric::DeltaTokS,
        "gates" | "health" => {
            let check = if name == "gates" { Check::Gates } else { Check::Health };
            return if rest == "=pass" {
                Ok(Clause::Pass(check))
            } else {
                Err(RuleError::BadCheck { index, clause: owned(), name: check.name(), rest: rest.to_owned() })
            };
        }
        _ => return Err(RuleError::UnknownName { index, clause: owned(), name: name.to_owned() }),
    };
    let (op, number) = if let Some(n) = rest.strip_prefix(">=") {
        (Op::AtLeast, n)
    } else if let Some(n) = rest.strip_prefix('>') {
        (Op::Above, n)
    } else {
        return Err(RuleError::BadOperator { index, clause: owned(), name: metric.name(), rest: rest.to_owned() });
    };
    // `f64::from_str` also takes `inf` and `NaN`: both are refused by the finiteness check.
    match number.parse::<f64>() {
        Ok(bound) if bound.is_finite() && !number.starts_with('+') => Ok(Clause::Compare { metric, op, bound }),
        _ => Err(RuleError::BadNumber { index, clause: owned(), text: number.to_owned() }),
    }
}

impl FromStr for PromotionRule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Err(RuleError::Empty);
        }
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() > CLAUSES_MAX {
            return Err(RuleError::TooManyClauses { count: parts.len(), limit: CLAUSES_MAX });
        }
        let mut clauses: Vec<Clause> = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            let index = i + 1;
            if part.is_empty() {
                return Err(RuleError::EmptyClause { index });
            }
            let clause = parse_clause(index, part)?;
            if clauses.iter().any(|c| c.name() == clause.name()) {
                return Err(RuleError::Duplicate { index, clause: (*part).to_owned(), name: clause.name() });
            }
            clauses.push(clause);
        }
        Ok(Self { clauses })
    }
}

impl fmt::Display for PromotionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, clause) in self.clauses.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{clause}")?;
        }
        Ok(())
    }
}

/// What a finished bench measured, as the rule reads it.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Retained over ordinary median tok/s, when both exist.
    pub ratio: Option<f64>,
    /// Retained minus ordinary median tok/s, when both exist.
    pub delta_tok_s: Option<f64>,
    /// The failed validity gates (`name: detail`).
    pub invalid: Vec<String>,
    /// The health failures of both arms.
    pub unhealthy: Vec<String>,
}

impl PromotionRule {
    /// The clauses, in order.
    #[must_use]
    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }

    /// The rule's disposition of `m`: `{"disposition": "promote"|"hold", "reason", "verdicts"}`,
    /// a verdict per clause saying whether it held and what was measured.
    #[must_use]
    pub fn judge(&self, m: &Measured) -> Value {
        let verdicts: Vec<(String, bool, Value, String)> = self
            .clauses
            .iter()
            .map(|clause| {
                let (holds, measured, detail) = match *clause {
                    Clause::Compare { metric, op, bound } => {
                        let value = if metric == Metric::Ratio { m.ratio } else { m.delta_tok_s };
                        match value {
                            Some(v) if op.holds(v, bound) => (true, json!(v), format!("{} {v:.4}", metric.name())),
                            Some(v) => {
                                (false, json!(v), format!("{} {v:.4} is not {}{bound}", metric.name(), op.text()))
                            }
                            None => (false, Value::Null, format!("no {}: an arm has no timed speed", metric.name())),
                        }
                    }
                    Clause::Pass(Check::Gates) => {
                        (m.invalid.is_empty(), json!(m.invalid.is_empty()), failures("gates", &m.invalid))
                    }
                    Clause::Pass(Check::Health) => {
                        (m.unhealthy.is_empty(), json!(m.unhealthy.is_empty()), failures("health", &m.unhealthy))
                    }
                };
                (clause.to_string(), holds, measured, detail)
            })
            .collect();
        let failed: Vec<String> = verdicts.iter().filter(|v| !v.1).map(|(c, _, _, d)| format!("{c}: {d}")).collect();
        let promote = failed.is_empty();
        json!({
            "disposition": if promote { "promote" } else { "hold" },
            "reason": if promote { "every clause holds".to_owned() } else { failed.join("; ") },
            "verdicts": verdicts.iter().map(|(clause, holds, measured, detail)| json!({
                "clause": clause, "holds": holds, "measured": measured, "detail": detail,
            })).collect::<Vec<_>>(),
        })
    }
}

fn failures(what: &str, list: &[String]) -> String {
    if list.is_empty() { format!("{what} pass") } else { format!("{what} fail: {}", list.join("; ")) }
}

/// Parses `--promotion-rule` for clap.
///
/// # Errors
/// The [`RuleError`] as text.
pub fn parse_arg(s: &str) -> Result<PromotionRule, String> {
    s.parse().map_err(|e: RuleError| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_print_back() {
        let rule: PromotionRule = DEFAULT_RULE.parse().unwrap();
        assert_eq!(rule.to_string(), "ratio>=1.1,gates=pass,health=pass");
        assert_eq!(rule, PromotionRule::default());
        let rule: PromotionRule = " delta_tok_s>-0.5 , ratio>1 ".parse().unwrap();
        assert_eq!(
            rule.clauses(),
            [
                Clause::Compare { metric: Metric::DeltaTokS, op: Op::Above, bound: -0.5 },
                Clause::Compare { metric: Metric::Ratio, op: Op::Above, bound: 1.0 },
            ]
        );
    }

    #[test]
    fn bad_rules_name_the_bad_part() {
        let cases = [
            ("", "empty"),
            ("ratio>=1.1,", "clause 2 is empty"),
            ("speed>=2", "unknown name \"speed\""),
            ("ratio=1.1", "ratio needs >= or >"),
            ("ratio<=1.1", "found \"<=1.1\""),
            ("ratio>=x", "\"x\" is not a finite number"),
            ("ratio>=inf", "\"inf\" is not a finite number"),
            ("ratio>=NaN", "\"NaN\" is not a finite number"),
            ("ratio>=+1", "\"+1\" is not a finite number"),
            ("ratio>=", "\"\" is not a finite number"),
            ("gates=fail", "gates takes =pass, found \"=fail\""),
            ("health", "health takes =pass"),
            ("ratio>=1,ratio>2", "clause 2 \"ratio>2\": ratio is already constrained"),
            ("gates=pass,gates=pass,a,b,c,d,e,f,g", "9 clauses exceed the limit of 8"),
        ];
        for (rule, needle) in cases {
            let error = rule.parse::<PromotionRule>().unwrap_err().to_string();
            assert!(error.contains(needle), "{rule:?}: {error}");
        }
    }

    #[test]
    fn the_rule_promotes_only_when_every_clause_holds() {
        let rule = PromotionRule::default();
        let good = Measured { ratio: Some(1.25), delta_tok_s: Some(3.0), invalid: vec![], unhealthy: vec![] };
        let verdict = rule.judge(&good);
        assert_eq!(verdict["disposition"], "promote", "{verdict}");
        assert_eq!(verdict["verdicts"][0]["measured"], 1.25);
        let slow = Measured { ratio: Some(1.05), ..good.clone() };
        let verdict = rule.judge(&slow);
        assert_eq!(verdict["disposition"], "hold");
        assert!(verdict["reason"].as_str().unwrap().starts_with("ratio>=1.1: ratio 1.0500 is not >=1.1"), "{verdict}");
        let invalid = Measured { invalid: vec!["tokens_match: differ".into()], ..good.clone() };
        assert_eq!(rule.judge(&invalid)["reason"], "gates=pass: gates fail: tokens_match: differ");
        let unmeasured = Measured { ratio: None, ..good };
        assert_eq!(rule.judge(&unmeasured)["verdicts"][0]["measured"], Value::Null);
        assert_eq!(rule.judge(&unmeasured)["disposition"], "hold");
    }
}
