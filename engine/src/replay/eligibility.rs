//! Which forwards may take the retained route: the controller decides before each forward, from
//! what the adapter says of it and from the forwards before it (`docs/ARCHITECTURE.md`, "The
//! replay controller", "Eligibility").
//!
//! A forward is eligible when it is the next sequential single-token continuation: the adapter
//! calls it a [`Step::Continuation`] (a sampled token fed back, not a prompt token — the last
//! prompt token included), its position is the one after the previous forward's in the same
//! sequence, and, once a tape exists, every binding of the tape has a value at the position
//! (a position past a binding's calibrated maximum would replay the wrong geometry).

use std::fmt;

use serde::Serialize;
use tape_core::tape::Tape;

/// What the adapter knows of a forward before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A prompt token, the last one included: its step is not a decode continuation.
    Prompt,
    /// A sampled token fed back: a decode continuation.
    Continuation,
}

/// Why a forward was not eligible.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Ineligible {
    /// A prompt token.
    Prompt {
        /// The position.
        position: u32,
    },
    /// The position does not follow the previous forward's.
    NotNext {
        /// The position.
        position: u32,
        /// The position after the previous forward's (`None`: no forward since the sequence began).
        expected: Option<u32>,
    },
    /// A binding of the tape has no value at the position.
    PastCalibratedMax {
        /// The position.
        position: u32,
        /// The binding's name.
        binding: String,
        /// Why (the grid and its calibrated maximum).
        detail: String,
    },
}

impl fmt::Display for Ineligible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ineligible::Prompt { position } => write!(f, "position {position} is a prompt token"),
            Ineligible::NotNext { position, expected: Some(expected) } => {
                write!(f, "position {position} is not the next sequential position {expected}")
            }
            Ineligible::NotNext { position, expected: None } => {
                write!(f, "position {position} continues no earlier forward of this sequence")
            }
            Ineligible::PastCalibratedMax { position, binding, detail } => {
                write!(f, "position {position} is past the calibrated maximum of binding {binding}: {detail}")
            }
        }
    }
}

/// The sequence the controller has seen: the position after the last forward's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sequence {
    next: Option<u32>,
}

impl Sequence {
    /// A new sequence: the next forward continues nothing.
    pub(crate) fn restart(&mut self) {
        self.next = None;
    }

    /// Decides the forward at `position` and moves the sequence on to it.
    pub(crate) fn decide(&mut self, position: u32, step: Step, tape: Option<&Tape>) -> Result<(), Ineligible> {
        let expected = self.next;
        self.next = position.checked_add(1);
        if step == Step::Prompt {
            return Err(Ineligible::Prompt { position });
        }
        if expected != Some(position) {
            return Err(Ineligible::NotNext { position, expected });
        }
        if let Some(tape) = tape {
            for binding in tape.bindings() {
                if let Err(e) = binding.kind.value_at(position) {
                    return Err(Ineligible::PastCalibratedMax {
                        position,
                        binding: binding.name.clone(),
                        detail: e.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_next_continuation_is_eligible() {
        let mut s = Sequence::default();
        assert_eq!(s.decide(0, Step::Prompt, None), Err(Ineligible::Prompt { position: 0 }));
        assert_eq!(s.decide(1, Step::Prompt, None), Err(Ineligible::Prompt { position: 1 }), "the last prompt token");
        assert_eq!(s.decide(2, Step::Continuation, None), Ok(()));
        assert_eq!(s.decide(2, Step::Continuation, None), Err(Ineligible::NotNext { position: 2, expected: Some(3) }));
        assert_eq!(s.decide(3, Step::Continuation, None), Ok(()), "the repeated position moved the sequence on");
        assert_eq!(s.decide(5, Step::Continuation, None), Err(Ineligible::NotNext { position: 5, expected: Some(4) }));
        s.restart();
        assert_eq!(s.decide(6, Step::Continuation, None), Err(Ineligible::NotNext { position: 6, expected: None }));
        assert_eq!(
            s.decide(u32::MAX, Step::Continuation, None),
            Err(Ineligible::NotNext { position: u32::MAX, expected: Some(7) })
        );
        assert_eq!(
            s.decide(0, Step::Continuation, None),
            Err(Ineligible::NotNext { position: 0, expected: None }),
            "nothing follows u32::MAX"
        );
    }
}
