//! The last [`HISTORY_MAX`] finished generations, oldest first, with the route their decode
//! forwards took: the page's decode-speed chart (`history` in `GET /redline/status`).

use std::collections::VecDeque;
use std::sync::Mutex;

use engine::model::Generation;
use engine::replay::Observations;
use serde::Serialize;

/// Finished generations kept; older ones are dropped.
pub(crate) const HISTORY_MAX: usize = 120;

/// Forward counts of the replay controller, to take differences of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Forwards {
    /// Forwards that replayed the plan.
    pub retained: u64,
    /// Forwards that issued ordinary launches (recording ones included).
    pub ordinary: u64,
}

impl Forwards {
    /// The controller's counts as of now.
    pub(crate) fn observed(observations: &Observations) -> Self {
        Self { retained: observations.retained, ordinary: observations.ordinary.saturating_add(observations.recorded) }
    }

    /// The forwards made since `before` (a model switch in between resets the counts: none
    /// are then negative).
    pub(crate) fn since(self, before: Self) -> Self {
        Self {
            retained: self.retained.saturating_sub(before.retained),
            ordinary: self.ordinary.saturating_sub(before.ordinary),
        }
    }
}

/// One finished generation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Entry {
    /// When it finished, in milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// Decode speed (the prefill excluded; 0 with no decode forward).
    pub decode_tokens_per_second: f64,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    /// Forwards after the first token's (each timed in the decode speed).
    pub decode_forwards: u32,
    /// Forwards that replayed the plan.
    pub retained_forwards: u64,
    /// Forwards that issued ordinary launches, the prefill's included.
    pub ordinary_forwards: u64,
    /// `retained` when every decode forward replayed, `ordinary` when none did, else `mixed`.
    pub route: &'static str,
}

impl Entry {
    /// The entry for `generation`, which made `forwards`, finished at `unix_ms`.
    pub(crate) fn new(generation: &Generation, forwards: Forwards, unix_ms: u64) -> Self {
        let decode = u64::from(generation.decode_forwards);
        let route = match forwards.retained {
            0 => "ordinary",
            retained if retained >= decode => "retained",
            _ => "mixed",
        };
        Self {
            unix_ms,
            decode_tokens_per_second: generation.tokens_per_second(),
            prompt_tokens: generation.prompt_tokens,
            completion_tokens: generation.tokens.len(),
            decode_forwards: generation.decode_forwards,
            retained_forwards: forwards.retained,
            ordinary_forwards: forwards.ordinary,
            route,
        }
    }
}

/// The bounded list.
#[derive(Debug, Default)]
pub(crate) struct History {
    entries: Mutex<VecDeque<Entry>>,
}

impl History {
    /// Appends `entry`, dropping the oldest past [`HISTORY_MAX`].
    pub(crate) fn push(&self, entry: Entry) {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if entries.len() == HISTORY_MAX {
            entries.pop_front();
        }
        entries.push_back(entry);
    }

    /// The entries, oldest first.
    pub(crate) fn entries(&self) -> Vec<Entry> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().copied().collect()
    }
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_ms() -> u64 {
    u64::try_from(crate::clock::since_epoch().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generation(tokens: usize, decode_forwards: u32) -> Generation {
        Generation {
            text: String::new(),
            tokens: vec![7; tokens],
            prompt_tokens: 5,
            cached_tokens: 0,
            decode_time: std::time::Duration::from_millis(500),
            decode_forwards,
            prefill_time: std::time::Duration::from_millis(100),
            finish_reason: "length",
        }
    }

    #[test]
    fn the_route_is_what_the_decode_forwards_did() {
        let cases = [((4, 1), 4, "retained"), ((0, 5), 4, "ordinary"), ((3, 2), 4, "mixed"), ((0, 1), 0, "ordinary")];
        for ((retained, ordinary), decode, route) in cases {
            let entry = Entry::new(&generation(decode as usize + 1, decode), Forwards { retained, ordinary }, 9);
            assert_eq!(entry.route, route, "{retained} retained, {ordinary} ordinary, {decode} decode forwards");
            assert_eq!((entry.retained_forwards, entry.ordinary_forwards), (retained, ordinary));
        }
        let entry = Entry::new(&generation(5, 4), Forwards::default(), 9);
        assert_eq!((entry.completion_tokens, entry.prompt_tokens, entry.unix_ms), (5, 5, 9));
        assert!((entry.decode_tokens_per_second - 8.0).abs() < 1e-9, "{entry:?}");
    }

    #[test]
    fn forwards_since_count_recorded_ones_as_ordinary_and_survive_a_reset() {
        let before = Observations { retained: 10, ordinary: 2, recorded: 3, ..Observations::default() };
        let after = Observations { retained: 14, ordinary: 3, recorded: 3, shadow: 1, ..Observations::default() };
        let made = Forwards::observed(&after).since(Forwards::observed(&before));
        assert_eq!(made, Forwards { retained: 4, ordinary: 1 });
        let reset = Observations { retained: 1, ..Observations::default() };
        assert_eq!(
            Forwards::observed(&reset).since(Forwards::observed(&before)),
            Forwards { retained: 0, ordinary: 0 }
        );
    }

    #[test]
    fn the_history_keeps_the_newest_entries_in_order() {
        let history = History::default();
        let total = HISTORY_MAX + 7;
        for i in 0..total {
            history.push(Entry::new(&generation(1, 0), Forwards::default(), u64::try_from(i).unwrap()));
        }
        let times: Vec<u64> = history.entries().iter().map(|e| e.unix_ms).collect();
        let expected: Vec<u64> = (7..u64::try_from(total).unwrap()).collect();
        assert_eq!(times, expected);
    }
}
