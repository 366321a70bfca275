//! The exit-code rule every command follows: 0 success; 1 the input is invalid (a parse,
//! validation or model-file error, structural or semantic, a file over its format's size limit,
//! or a file that changed while it was read: a short read, growth, a write); 2 usage or I/O (a
//! bad flag, a missing or unreadable file, a path that is not a regular file, a model too large
//! for this machine's memory).
//!
//! Commands that judge their input themselves return `Ok(ExitCode::from(1))` after printing
//! the message. Errors that travel up as `anyhow::Error` are classified here by what their chain
//! holds: an [`Invalid`] marker, a library error that says the input is invalid (a registry
//! that does not load, a model file of an architecture this build does not run), a [`infile::ReadError`], a [`gguf::GgufError`], an I/O error. Anything
//! else is a usage error.

use std::fmt;
use std::process::ExitCode;

use engine::admission::load::LoadError;
use engine::golden::GoldenError;
use engine::model::OpenError;

/// Exit code for invalid input.
pub const INVALID_INPUT: u8 = 1;
/// Exit code for usage and I/O errors.
pub const USAGE_OR_IO: u8 = 2;

/// Marks an error as "the input is invalid" (exit 1) while keeping its message and chain.
#[derive(Debug)]
pub struct Invalid(anyhow::Error);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Only the outermost message: the rest of the chain is reached through `source`.
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Invalid {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// An invalid-input error with `message`.
pub fn invalid(message: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Invalid(anyhow::anyhow!("{message}")))
}

/// Marks the error of a result as invalid input.
pub trait InvalidInput<T> {
    /// The same result, its error classified as invalid input (exit 1).
    ///
    /// # Errors
    /// The error it already had.
    fn invalid(self) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> InvalidInput<T> for Result<T, E> {
    fn invalid(self) -> anyhow::Result<T> {
        self.map_err(|e| anyhow::Error::new(Invalid(e.into())))
    }
}

/// The exit code for an error that ended a command ([module docs](self)): the first cause in its
/// chain that says what kind of failure it is decides.
#[must_use]
pub fn code(error: &anyhow::Error) -> u8 {
    for cause in error.chain() {
        if cause.is::<Invalid>() {
            return INVALID_INPUT;
        }
        // Library errors that say for themselves when the input given is at fault; otherwise
        // the causes they hold decide.
        if cause.downcast_ref::<LoadError>().is_some_and(LoadError::is_invalid_input)
            || cause.downcast_ref::<GoldenError>().is_some_and(GoldenError::is_invalid_input)
            || cause.downcast_ref::<OpenError>().is_some_and(OpenError::is_invalid_input)
        {
            return INVALID_INPUT;
        }
        if let Some(e) = cause.downcast_ref::<infile::ReadError>() {
            return if e.is_invalid_input() { INVALID_INPUT } else { USAGE_OR_IO };
        }
        if let Some(e) = cause.downcast_ref::<gguf::GgufError>() {
            return match e {
                gguf::GgufError::Read(read) if !read.is_invalid_input() => USAGE_OR_IO,
                _ => INVALID_INPUT,
            };
        }
        if cause.is::<std::io::Error>() {
            return USAGE_OR_IO;
        }
    }
    USAGE_OR_IO
}

/// Prints `error` as `redline: error: ...` with its whole chain, its control characters escaped
/// ([`infile::escape_lines`]: a path, symbol or metadata string it quotes cannot drive the
/// terminal), and returns its exit code.
#[must_use]
pub fn report(error: &anyhow::Error) -> ExitCode {
    eprintln!("redline: error: {}", infile::escape_lines(&format!("{error:#}")));
    ExitCode::from(code(error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn markers_and_causes_decide_the_code() {
        assert_eq!(code(&anyhow::anyhow!("--arch and --out are required")), USAGE_OR_IO);
        assert_eq!(code(&invalid("bad rule")), INVALID_INPUT);
        let io = std::fs::read("/nonexistent/redline-exit").context("reading the tape");
        assert_eq!(code(&io.unwrap_err()), USAGE_OR_IO);
        let marked: anyhow::Result<()> = Err(anyhow::anyhow!("inner")).context("outer").invalid();
        let marked = marked.unwrap_err();
        assert_eq!(code(&marked), INVALID_INPUT);
        assert_eq!(format!("{marked:#}"), "outer: inner", "the marker adds nothing to the message");
        let structural = gguf::Gguf::parse(b"GGUF".to_vec()).unwrap_err();
        assert!(!matches!(structural, gguf::GgufError::Read(_)));
        assert_eq!(code(&anyhow::Error::new(structural).context("reading m.gguf")), INVALID_INPUT);
        let missing = gguf::Gguf::open("/nonexistent/m.gguf").unwrap_err();
        assert_eq!(code(&anyhow::Error::new(missing)), USAGE_OR_IO);
        let limit = infile::Limit::new("tape", 1);
        let dir = infile::read(std::path::Path::new("/"), limit).unwrap_err();
        assert_eq!(code(&anyhow::Error::new(dir)), USAGE_OR_IO);
    }
}
