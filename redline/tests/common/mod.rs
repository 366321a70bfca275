//! Helpers shared by the daemon's command-line tests. Each test binary uses part of them.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs the `redline` binary with `args`, the replay route's environment variables removed
/// (the tests choose their route with flags).
pub(crate) fn redline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(args)
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .output()
        .unwrap()
}

/// The reference model's path (`REDLINE_SMOLLM2_GGUF`). Without it the calling test does
/// nothing, except under `CI=true`, where its absence is a failure.
pub(crate) fn reference_model() -> Option<String> {
    match std::env::var("REDLINE_SMOLLM2_GGUF") {
        Ok(path) => Some(path),
        Err(_) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "REDLINE_SMOLLM2_GGUF is not set under CI=true");
            println!("REDLINE_SMOLLM2_GGUF not set: did nothing");
            None
        }
    }
}

/// The Gemma 3 270M model's path (`REDLINE_GEMMA3_GGUF`). Without it the calling test does
/// nothing, except under `CI=true`, where its absence is a failure.
pub(crate) fn gemma_model() -> Option<String> {
    match std::env::var("REDLINE_GEMMA3_GGUF") {
        Ok(path) => Some(path),
        Err(_) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "REDLINE_GEMMA3_GGUF is not set under CI=true");
            println!("REDLINE_GEMMA3_GGUF not set: did nothing");
            None
        }
    }
}
