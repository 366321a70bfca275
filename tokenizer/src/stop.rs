//! Stop handling for generation: stop tokens end the stream at once; stop strings end it where
//! they first occur, and text that might still turn into a stop string is held back so that a
//! stop string split over several tokens is never partly emitted.

/// What to do after one token.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StopStep {
    /// Text that is safe to show now.
    pub emit: String,
    /// Whether generation must stop (the stop token or string itself is not in `emit`).
    pub stop: bool,
}

/// Incremental matcher of stop tokens and stop strings.
#[derive(Debug, Clone)]
pub struct StopMatcher {
    token_ids: Vec<u32>,
    strings: Vec<String>,
    held: String,
    stopped: bool,
}

impl StopMatcher {
    /// A matcher stopping on any of `stop_token_ids` or `stop_strings` (empty strings are ignored:
    /// they would match before any text).
    pub fn new(stop_token_ids: Vec<u32>, stop_strings: Vec<String>) -> Self {
        let strings = stop_strings.into_iter().filter(|s| !s.is_empty()).collect();
        Self { token_ids: stop_token_ids, strings, held: String::new(), stopped: false }
    }

    /// Whether a stop was already seen; later calls emit nothing.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Feeds token `id` and the text it decoded to.
    pub fn push(&mut self, id: u32, text: &str) -> StopStep {
        if self.stopped {
            return StopStep { emit: String::new(), stop: true };
        }
        if self.token_ids.contains(&id) {
            // What was held back was only a possible start of a stop string: it is plain text.
            self.stopped = true;
            return StopStep { emit: std::mem::take(&mut self.held), stop: true };
        }
        self.held.push_str(text);
        if let Some(at) = self.strings.iter().filter_map(|s| self.held.find(s.as_str())).min() {
            self.stopped = true;
            let mut emit = std::mem::take(&mut self.held);
            emit.truncate(at);
            return StopStep { emit, stop: true };
        }
        let keep = self.partial_suffix_len();
        let emit_len = self.held.len() - keep;
        let rest = self.held.split_off(emit_len);
        let emit = std::mem::replace(&mut self.held, rest);
        StopStep { emit, stop: false }
    }

    /// Ends the stream without a stop: the held-back text is emitted.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Length of the longest suffix of the held text that is a proper prefix of a stop string.
    fn partial_suffix_len(&self) -> usize {
        let held = self.held.as_str();
        held.char_indices()
            .map(|(at, _)| at)
            .find(|&at| {
                let suffix = &held[at..];
                self.strings.iter().any(|s| s.len() > suffix.len() && s.starts_with(suffix))
            })
            .map_or(0, |at| held.len() - at)
    }
}
