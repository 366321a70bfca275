//! Helpers shared by the daemon's command-line tests. Each test binary uses part of them.
#![allow(dead_code)]

pub(crate) mod bundles;

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

/// The sealed fixture registry the binary embeds.
const FIXTURES: &str = include_str!("../../../registry/fixtures.json");

/// Whether fixture `id`'s sealing run promoted the retained route under its declared rule
/// (`sealed.promotion.disposition` is `promote` in `registry/fixtures.json`): only then does the
/// admission row naming it arm the route by default.
pub(crate) fn promoted(id: &str) -> bool {
    let registry: serde_json::Value = serde_json::from_str(FIXTURES).unwrap();
    let fixture = registry["fixtures"].as_array().unwrap().iter().find(|f| f["id"] == id);
    let fixture = fixture.unwrap_or_else(|| panic!("no sealed fixture {id}"));
    fixture["sealed"]["promotion"]["disposition"] == "promote"
}

/// Asserts that `admission` (a decision as the binary reports it) is what fixture `id`'s sealing
/// run makes it: admitted by the row naming `id` when the run promoted the retained route, else
/// refused naming the fixture and the reason the registry records.
pub(crate) fn assert_admission_follows(admission: &serde_json::Value, id: &str) {
    if promoted(id) {
        assert_eq!(admission["admitted"], true, "{admission}");
        assert_eq!(admission["row"]["fixture"], id, "{admission}");
        assert!(admission["reason"].as_str().unwrap().starts_with("admitted by row"), "{admission}");
    } else {
        let registry: serde_json::Value = serde_json::from_str(FIXTURES).unwrap();
        let fixture = registry["fixtures"].as_array().unwrap().iter().find(|f| f["id"] == id).unwrap();
        let recorded = fixture["sealed"]["promotion"]["reason"].as_str().unwrap_or("sealed without a promotion rule");
        assert_eq!(admission["admitted"], false, "{admission}");
        let reason = admission["reason"].as_str().unwrap();
        assert!(reason.contains(&format!("(fixture {id}) does not arm the retained route by default")), "{reason}");
        assert!(reason.ends_with(recorded), "{reason} does not end with {recorded:?}");
    }
}

/// The flags that arm the retained route when the admission rows naming `ids` do not all arm
/// it by default: none, or `--replay-backend auto`.
pub(crate) fn arming(ids: &[&str]) -> &'static [&'static str] {
    if ids.iter().all(|id| promoted(id)) { &[] } else { &["--replay-backend", "auto"] }
}
