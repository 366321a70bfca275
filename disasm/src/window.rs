//! What both decoders share: the window a stream is decoded in, how a stream ends, and the
//! errors of writing the disassembly.

use crate::input::{StreamError, Words};

/// Dwords decoded at a time: more than the longest PM4 packet (a 14-bit count: 16,386 dwords
/// with the header), so a packet that runs past the window's end runs past the stream's end once
/// the window is full.
pub const WINDOW: usize = 1 << 16;

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Every byte decoded.
    Whole,
    /// Decoding stopped; the message says where and why.
    Stopped(String),
}

/// Writing the disassembly failed (or reading the stream did, part-way).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Reading the input or writing the output.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing a JSON line.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// The output form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Text blocks.
    Text,
    /// One JSON object per packet (JSON Lines).
    Json,
}

/// Fills `window` to [`WINDOW`] dwords or the end of the stream; returns whether the stream
/// ended, and the input error that ended it, if one did.
pub(crate) fn fill(words: &mut Words, window: &mut Vec<u32>) -> Result<(bool, Option<String>), WriteError> {
    while window.len() < WINDOW {
        match words.read(window, WINDOW - window.len()) {
            Ok(0) => return Ok((true, None)),
            Ok(_) => {}
            Err(StreamError::Input(message)) => return Ok((true, Some(message))),
            Err(StreamError::Io(e)) => return Err(e.into()),
        }
    }
    Ok((false, None))
}
