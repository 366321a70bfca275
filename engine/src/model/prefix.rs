//! Prompt-prefix reuse: which tokens the session's device holds the sequence of (the KV rows at
//! positions `0..n`, and for a model with sequence state, that state after token `n - 1`), and
//! how much of a new prompt they let a generation skip.
//!
//! A KV row depends only on the tokens at and before its position, and a batched prefill writes
//! the bits the step-by-step forwards write (`kernel_refs::cpu::prefill`), so any common prefix
//! of the held tokens and a new prompt can be kept and the prompt prefilled from where they
//! differ: the logits, and so every sampled token, are the bits a full prefill gives. Sequence
//! state (a convolution window, a recurrent matrix) is only ever the state after the last held
//! token, so a model that has any is reused only when the new prompt continues the whole held
//! sequence. At least the prompt's last token always runs, for its logits.

/// The tokens whose sequence the device holds, in position order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Held {
    tokens: Vec<u32>,
}

impl Held {
    /// Nothing is held: the next generation starts from position 0.
    pub(crate) fn clear(&mut self) {
        self.tokens.clear();
    }

    /// How many leading tokens of `prompt` can be skipped; `sequence_state`: the model carries
    /// sequence state beside its KV cache.
    pub(crate) fn reusable(&self, prompt: &[u32], sequence_state: bool) -> usize {
        let Some(limit) = prompt.len().checked_sub(1) else {
            return 0;
        };
        let common = self.tokens.iter().zip(prompt).take_while(|(held, new)| held == new).count();
        if sequence_state {
            // The state is the state after the whole held sequence, or useless.
            if common == self.tokens.len() && common <= limit { common } else { 0 }
        } else {
            common.min(limit)
        }
    }

    /// Keeps the first `n` tokens (the rows after them are about to be overwritten).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.tokens.truncate(n);
    }

    /// Tokens whose forwards have run, at the next positions.
    pub(crate) fn extend(&mut self, tokens: &[u32]) {
        self.tokens.extend_from_slice(tokens);
    }

    /// How many tokens are held.
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(tokens: &[u32]) -> Held {
        let mut held = Held::default();
        held.extend(tokens);
        held
    }

    #[test]
    fn a_kv_only_model_reuses_the_common_prefix_but_never_the_last_prompt_token() {
        let h = held(&[1, 2, 3, 4, 5]);
        assert_eq!(h.reusable(&[1, 2, 3, 9, 9, 9], false), 3);
        assert_eq!(h.reusable(&[1, 2, 3, 4, 5, 6, 7], false), 5);
        // The whole prompt is held: its last token still runs, for the logits.
        assert_eq!(h.reusable(&[1, 2, 3], false), 2);
        assert_eq!(h.reusable(&[1, 2, 3, 4, 5], false), 4);
        assert_eq!(h.reusable(&[9, 2, 3], false), 0);
        assert_eq!(h.reusable(&[1], false), 0);
        assert_eq!(h.reusable(&[], false), 0);
        assert_eq!(Held::default().reusable(&[1, 2], false), 0);
    }

    #[test]
    fn a_model_with_sequence_state_reuses_only_a_whole_held_sequence_it_extends() {
        let h = held(&[1, 2, 3]);
        assert_eq!(h.reusable(&[1, 2, 3, 4], true), 3);
        // A prefix of the held sequence: the state is past it.
        assert_eq!(h.reusable(&[1, 2, 4, 5], true), 0);
        // The held sequence again: its last token would have to run on a state that has seen it.
        assert_eq!(h.reusable(&[1, 2, 3], true), 0);
        assert_eq!(h.reusable(&[1, 2], true), 0);
    }

    #[test]
    fn truncation_and_extension_track_the_positions() {
        let mut h = held(&[1, 2, 3, 4]);
        h.truncate(2);
        h.extend(&[7, 8]);
        assert_eq!(h, held(&[1, 2, 7, 8]));
        assert_eq!(h.len(), 4);
        h.clear();
        assert_eq!(h.len(), 0);
    }
}
