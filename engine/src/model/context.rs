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
        /// `<architecture>.context_length`.
        trained: u32,
    },
}

/// `context`, checked: at least 1 and at most the model's trained context
/// (`<architecture>.context_length`, [`trained_context`]; any length when the file does not
/// say).
///
/// # Errors
/// [`ContextError`] naming both.
pub fn check_context(file: &gguf::Gguf, context: u32) -> Result<u32, ContextError> {
    if context == 0 {
        return Err(ContextError::Zero);
    }
    match trained_context(file) {
        Ok(trained) if context > trained => Err(ContextError::PastTrained { context, trained }),
        _ => Ok(context),
    }
}

/// KV-cache positions when `--context` is not given: 1024, or the model's trained context
/// ([`trained_context`]) when shorter.
#[must_use]
pub fn default_context(file: &gguf::Gguf) -> u32 {
    trained_context(file).map_or(1024, |trained| trained.min(1024))
}

/// The trained context the file states: `<architecture>.context_length`, the architecture
/// being `general.architecture` (`llama.context_length`, `gemma3.context_length`).
///
/// # Errors
/// Either key is missing or not of its type.
pub fn trained_context(file: &gguf::Gguf) -> Result<u32, gguf::GgufError> {
    let architecture = file.str("general.architecture")?;
    file.u32(&format!("{architecture}.context_length"))
}
