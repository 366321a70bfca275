//! The bench report: environment, workload, settings, per-arm results and route proofs, gates.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use engine::stationarity::{GateStatus, Summary};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::Params;
use super::run::{ArmRun, Setup};

/// Now as RFC 3339 UTC with seconds (`2026-12-01T03:17:29Z`).
#[must_use]
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    utc_from_unix(secs)
}

/// RFC 3339 UTC of a Unix time (Howard Hinnant's days-to-civil algorithm).
#[must_use]
pub fn utc_from_unix(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A file-name-safe form of an RFC 3339 time (`20261201T031729Z`).
#[must_use]
pub fn utc_stamp(utc: &str) -> String {
    utc.chars().filter(|c| *c != '-' && *c != ':').collect()
}

/// The source checkout's commit and dirty state, captured at run time with `git` in the
/// current directory; `unknown` outside a checkout.
#[must_use]
pub fn source() -> Value {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match (git(&["rev-parse", "HEAD"]), git(&["status", "--porcelain"])) {
        (Some(commit), Some(status)) => json!({
            "commit": commit, "dirty": !status.is_empty(),
            "captured": "run time: git rev-parse HEAD and git status --porcelain in the working directory",
        }),
        _ => json!({"commit": "unknown", "dirty": "unknown", "captured": "run time: not in a git checkout"}),
    }
}

/// SHA-256 of the running binary.
#[must_use]
pub fn binary_digest() -> String {
    std::env::current_exe()
        .and_then(std::fs::File::open)
        .and_then(|f| crate::pull::sha256_reader(std::io::BufReader::new(f)))
        .map_or_else(|e| format!("unknown: {e}"), |(digest, _)| digest)
}

/// SHA-256 of token ids as little-endian u32.
#[must_use]
pub fn tokens_sha256(ids: &[u32]) -> String {
    let mut hasher = Sha256::new();
    for id in ids {
        hasher.update(id.to_le_bytes());
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// One gate's verdict.
struct Gates(Vec<(String, Result<(), String>)>);

impl Gates {
    fn check(&mut self, name: &str, result: Result<(), String>) {
        self.0.push((name.to_owned(), result));
    }
}

fn timed(run: &ArmRun) -> impl Iterator<Item = &super::run::PhaseRow> {
    run.rows.iter().filter(|r| r.phase == "timed")
}

fn check_ready(run: &ArmRun, transport: &str) -> Result<(), String> {
    for (which, proof) in [("lifecycle", &run.lifecycle_proof), ("timed", &run.timed_proof)] {
        if proof["state"] != "ready" {
            return Err(format!("{which} state {} (fallback: {})", proof["state"], proof["fallback_reason"]));
        }
        if !proof["fallback_reason"].is_null() || proof["observations"]["fallbacks"] != 0 {
            return Err(format!("{which} proof records a fallback: {}", proof["fallback_reason"]));
        }
        if proof["transport"] != transport {
            return Err(format!("{which} transport {}, asked {transport}", proof["transport"]));
        }
    }
    Ok(())
}

fn check_positions(run: &ArmRun) -> Result<(), String> {
    for row in timed(run) {
        let r = &row.record;
        if let Some(error) = &r.error {
            return Err(format!("row {} failed: {error}", row.index));
        }
        if r.replay_positions != r.eligible_positions || r.retained != r.eligible_positions.len() as u64 {
            return Err(format!(
                "row {} replayed positions {:?}, eligible {:?}",
                row.index, r.replay_positions, r.eligible_positions
            ));
        }
    }
    Ok(())
}

fn check_identity(run: &ArmRun) -> Result<(), String> {
    let ids: BTreeSet<String> = timed(run).map(|r| r.record.identity.to_string()).collect();
    let any_null = timed(run).any(|r| r.record.identity["tape"].is_null() || r.record.identity["submission"].is_null());
    match (ids.len(), any_null) {
        (1, false) => Ok(()),
        (_, true) => Err("a timed row had no prepared plan".into()),
        (n, false) => Err(format!("{n} prepared identities across the timed rows")),
    }
}

fn check_ordinary(run: &ArmRun) -> Result<(), String> {
    let retained: u64 = run.rows.iter().map(|r| r.record.retained).sum();
    if retained != 0 || run.timed_proof["observations"]["retained"] != 0 {
        return Err(format!("{retained} retained forwards on the ordinary arm"));
    }
    if run.timed_proof["state"] != "hip" {
        return Err(format!("state {}", run.timed_proof["state"]));
    }
    Ok(())
}

fn check_tokens(hip: &ArmRun, auto: &ArmRun) -> Result<(), String> {
    let reference = timed(hip).next().map(|r| &r.record.tokens).ok_or("no timed hip row")?;
    for run in [hip, auto] {
        if let Some(row) = timed(run).find(|r| &r.record.tokens != reference) {
            return Err(format!(
                "{} row {} generated {:?}, hip generated {:?}",
                run.name, row.index, row.record.tokens, reference
            ));
        }
    }
    Ok(())
}

fn gates(params: &Params, runs: &[ArmRun]) -> Gates {
    let mut gates = Gates(Vec::new());
    for run in runs {
        let stationary = match &run.gate {
            GateStatus::Passed { .. } => Ok(()),
            other => Err(other.to_string()),
        };
        gates.check(&format!("stationarity.{}", run.name), stationary);
        let failed: Vec<String> =
            run.rows.iter().filter_map(|r| r.record.error.as_ref().map(|e| format!("row {}: {e}", r.index))).collect();
        gates.check(&format!("rows.{}", run.name), if failed.is_empty() { Ok(()) } else { Err(failed.join("; ")) });
    }
    let (hip, auto) = (&runs[0], &runs[1]);
    gates.check("route.auto.ready", check_ready(auto, &params.transport));
    gates.check("route.auto.every_position", check_positions(auto));
    gates.check("route.auto.one_identity", check_identity(auto));
    gates.check("route.hip.no_retained", check_ordinary(hip));
    gates.check("tokens_match", check_tokens(hip, auto));
    let shadow = &auto.timed_proof["shadow"];
    if !shadow.is_null() {
        let exact = shadow["divergences"].as_array().is_some_and(Vec::is_empty);
        gates.check("shadow.auto", if exact { Ok(()) } else { Err(format!("divergences: {}", shadow["divergences"])) });
    }
    gates
}

fn arm_result(run: &ArmRun) -> Value {
    let tok_s: Vec<f64> = timed(run).filter_map(|r| r.record.tok_s).collect();
    let ms: Vec<f64> = timed(run).filter_map(|r| r.record.ms_per_token).collect();
    let (gate_start, gate_end) = match run.gate {
        GateStatus::Passed { settled_start, settled_end } => {
            (Some(run.gate_first_row + settled_start), Some(run.gate_first_row + settled_end))
        }
        _ => (None, None),
    };
    json!({
        "config": run.config,
        "tok_s": Summary::of(&tok_s), "ms_per_token": Summary::of(&ms),
        "tok_s_raw": tok_s, "ms_per_token_raw": ms,
        "gate": run.gate, "settled_rows": [gate_start, gate_end],
        "lifecycle_route_proof": run.lifecycle_proof, "timed_route_proof": run.timed_proof,
        "admission": run.admission,
        "rows": run.rows,
    })
}

/// The report of a finished bench.
#[must_use]
pub fn build(params: &Params, setup: &Setup, utc: &str, runs: &[ArmRun]) -> Value {
    let gates = gates(params, runs);
    let invalid: Vec<String> =
        gates.0.iter().filter_map(|(name, r)| r.as_ref().err().map(|e| format!("{name}: {e}"))).collect();
    let median = |run: &ArmRun| Summary::of(&timed(run).filter_map(|r| r.record.tok_s).collect::<Vec<_>>());
    let ratio = match (median(&runs[0]), median(&runs[1])) {
        (Some(hip), Some(auto)) if hip.median > 0.0 => Some(auto.median / hip.median),
        _ => None,
    };
    let auto = &runs[1].timed_proof;
    json!({
        "utc": utc,
        "source": source(),
        "binary_sha256": binary_digest(),
        "device": {"kind": setup.device.0, "arch": setup.target.name(), "selected": setup.device.1},
        "model": {"path": setup.model_path, "sha256": setup.model_sha256},
        "admission": setup.admission,
        "workload": {
            "prompt_sha256": tokens_sha256(&setup.prompt), "prompt_tokens": setup.prompt.len(),
            "decode_tokens_per_row": params.tokens, "context": params.context,
            "sampler": {"temperature": params.temperature, "top_k": 0, "top_p": 1.0}, "seed": params.seed,
        },
        "settings": {
            "transport": params.transport, "retained_backend": params.retained_backend,
            "order": params.order, "process": params.process, "warmup": params.warmup, "runs": params.runs,
            "gate": params.gate(), "inject_fault": params.inject_fault,
            "arms": runs.iter().map(|r| json!({"name": r.name, "config": r.config})).collect::<Vec<_>>(),
        },
        "tape": auto["tape"], "submission": auto["submission"], "shadow": auto["shadow"],
        "arms": runs.iter().map(|r| (r.name.to_owned(), arm_result(r))).collect::<serde_json::Map<_, _>>(),
        "gates": gates.0.iter().map(|(name, r)| json!({
            "name": name, "pass": r.is_ok(), "detail": r.as_ref().err(),
        })).collect::<Vec<_>>(),
        "valid": invalid.is_empty(),
        "invalid_reasons": invalid,
        "ratio_retained_over_ordinary_tok_s": ratio,
    })
}

/// The summary lines on stderr.
pub fn print_summary(report: &Value) {
    for arm in ["hip", "auto"] {
        let t = &report["arms"][arm]["tok_s"];
        eprintln!("{arm}: tok/s min {} median {} max {}", t["min"], t["median"], t["max"]);
    }
    eprintln!("ratio auto/hip: {}", report["ratio_retained_over_ordinary_tok_s"]);
    eprintln!("valid: {}", report["valid"]);
    for reason in report["invalid_reasons"].as_array().into_iter().flatten() {
        eprintln!("invalid: {}", reason.as_str().unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting_matches_known_instants() {
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1796095049` → Tue Dec  1 03:17:29 UTC 2026.
        assert_eq!(utc_from_unix(1_796_095_049), "2026-12-01T03:17:29Z");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_stamp("2026-12-01T03:17:29Z"), "20261201T031729Z");
    }

    #[test]
    fn token_digest_is_of_little_endian_u32() {
        // sha256 of the 8 bytes 01 00 00 00 02 01 00 00.
        let expected = {
            let mut h = Sha256::new();
            h.update([1u8, 0, 0, 0, 2, 1, 0, 0]);
            h.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        assert_eq!(tokens_sha256(&[1, 258]), expected);
    }
}
