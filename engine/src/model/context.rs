//! The KV-cache positions of a session: `--context` checked against the model's trained
//! context, or the default when it is not given.

/// `context`, checked against the model in `file`: the KV cache needs a position, and takes no
/// more than the trained context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// No position at all.
    #[error("--context 0: the KV cache needs at least one position")]
    Zero,
    /// More than the model was trained for.
    #[error("--context {context} exceeds the model's trained context of {trained} positions")]
    PastTrained {
        /// The positions asked for.
        context: u32,
        /// `llama.context_length`.
        trained: u32,
    },
}

/// `context`, checked: at least 1 and at most the model's trained context
/// (`llama.context_length`; any length when the file does not say).
///
/// # Errors
/// [`ContextError`] naming both.
pub fn check_context(file: &gguf::Gguf, context: u32) -> Result<u32, ContextError> {
    if context == 0 {
        return Err(ContextError::Zero);
    }
    match file.u32("llama.context_length") {
        Ok(trained) if context > trained => Err(ContextError::PastTrained { context, trained }),
        _ => Ok(context),
    }
}

/// KV-cache positions when `--context` is not given: 1024, or the model's trained context
/// (`llama.context_length`) when shorter.
#[must_use]
pub fn default_context(file: &gguf::Gguf) -> u32 {
    file.u32("llama.context_length").map_or(1024, |trained| trained.min(1024))
}
