//! The bench report: environment, workload, settings, per-arm results and route proofs, gates,
//! output health, correctness and the promotion rule's disposition. Facts that can be unknown are
//! `{"value": V, "why": null}` or `{"value": null, "why": "..."}` ([`super::facts`]).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::arm::RowRecord;
use super::facts::{self, fact, known, unknown};
use super::health::{self, RowOutput};
use super::outcome::{ArmRun, Destination, PhaseRow, Setup};
use super::params::{Params, Process};
use super::promotion::Measured;
use super::time::utc_now;
use crate::stationarity::{GateStatus, Summary};

/// SHA-256 of the running binary.
#[must_use]
pub fn binary_digest() -> String {
    std::env::current_exe()
        .and_then(std::fs::File::open)
        .and_then(|f| model_files::digest::sha256_reader(std::io::BufReader::new(f)))
        .map_or_else(|e| format!("unknown: {e}"), |(digest, _)| digest)
}

/// SHA-256 of bytes, lower-case hex.
#[must_use]
pub fn bytes_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
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

fn timed(run: &ArmRun) -> impl Iterator<Item = &PhaseRow> {
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

/// Gate 2 (capture completeness): the retained arm's tape was reconciled with the device's own
/// kernel trace at every recorded position (`engine::replay::census`); a device that keeps no
/// trace in the process passes with the proof saying so (its trace is reconciled from outside,
/// `redline census`).
fn check_census(auto: &ArmRun) -> Result<(), String> {
    let census = &auto.timed_proof["census"];
    if census.is_null() {
        return Err("no census: the retained arm captured no tape".to_owned());
    }
    let positions = census["positions"].as_array().ok_or("the census has no positions")?;
    if positions.is_empty() && !census["trace"].as_str().is_some_and(|t| t.starts_with("none")) {
        return Err(format!("the census reconciled no position ({})", census["trace"]));
    }
    match positions.iter().find(|p| p["verdict"] != "reconciled") {
        Some(p) => Err(format!("position {}: {}", p["position"], p)),
        None => Ok(()),
    }
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
    gates.check("census.auto", check_census(auto));
    let shadow = &auto.timed_proof["shadow"];
    if !shadow.is_null() {
        let exact = shadow["divergences"].as_array().is_some_and(Vec::is_empty);
        gates.check("shadow.auto", if exact { Ok(()) } else { Err(format!("divergences: {}", shadow["divergences"])) });
    }
    gates
}

fn arm_result(run: &ArmRun, health: &Value) -> Value {
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
        "output_health": health,
        "rows": run.rows,
    })
}

/// What the report needs besides the parameters, the setup and the runs.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The start, RFC 3339 UTC.
    pub utc: &'a str,
    /// Where the report and plot go.
    pub to: Destination<'a>,
    /// The promotion rule's declaration ([`declaration`]).
    pub declaration: &'a Value,
}

fn path_fact(path: Option<&Path>, why: &str) -> Value {
    match path {
        Some(path) => known(std::path::absolute(path).unwrap_or_else(|_| path.to_owned()).display().to_string()),
        None => unknown(why),
    }
}

/// The promotion rule as declared; [`declare_now`] stamps it when it is printed and written.
#[must_use]
pub fn declaration(params: &Params, to: Destination<'_>) -> Value {
    let rule = &params.promotion_rule;
    json!({
        "rule": rule.to_string(),
        "clauses": rule.clauses().iter().map(ToString::to_string).collect::<Vec<_>>(),
        "declared_utc": null,
        "declared": "before the first timed row of either arm: printed on standard error and written to the report file",
        "report_file": path_fact(to.report, "no report file: the bench runs inside redline golden"),
    })
}

/// Stamps a declaration with the time it is made.
pub fn declare_now(declaration: &mut Value) {
    declaration["declared_utc"] = json!(utc_now());
}

fn invocation(to: Destination<'_>) -> Value {
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    json!({
        "argv": argv,
        "cwd": fact(std::env::current_dir().map(|d| d.display().to_string())),
        "report_path": path_fact(to.report, "no report file: the bench runs inside redline golden"),
        "plot_path": path_fact(to.plot, "no plot file: the bench runs inside redline golden"),
    })
}

fn median(run: &ArmRun, of: impl Fn(&RowRecord) -> Option<f64>) -> Option<f64> {
    Summary::of(&timed(run).filter_map(|r| of(&r.record)).collect::<Vec<_>>()).map(|s| s.median)
}

/// Retained against ordinary medians: the ratio with the absolute delta beside it.
fn versus(hip: Option<f64>, auto: Option<f64>, unit: &str) -> Value {
    match (hip, auto) {
        (Some(h), Some(a)) if h > 0.0 => known(json!({
            "ordinary_median": h, "retained_median": a, "ratio": a / h, format!("delta_{unit}"): a - h,
        })),
        (Some(_), Some(_)) => unknown("the ordinary median is 0: no ratio"),
        (None, _) => unknown("the ordinary arm has no timed row with a measurement"),
        (_, None) => unknown("the retained arm has no timed row with a measurement"),
    }
}

fn health_of(runs: &[ArmRun]) -> (Value, Vec<String>) {
    let mut unhealthy = Vec::new();
    let mut arms = serde_json::Map::new();
    for run in runs {
        let rows: Vec<RowOutput<'_>> = timed(run)
            .map(|r| RowOutput {
                index: r.index,
                error: r.record.error.as_deref(),
                text: &r.record.text,
                finish_reason: &r.record.finish_reason,
                tokens: &r.record.tokens,
            })
            .collect();
        let value = health::arm(&rows);
        for failure in value["failures"].as_array().into_iter().flatten() {
            unhealthy.push(format!("{}: {}", run.name, failure.as_str().unwrap_or_default()));
        }
        arms.insert(run.name.to_owned(), value);
    }
    let value = json!({"pass": unhealthy.is_empty(), "criteria": health::criteria(), "arms": arms});
    (value, unhealthy)
}

fn correctness(runs: &[ArmRun], gates: &Gates) -> Value {
    let tokens_match = gates.0.iter().any(|(name, r)| name == "tokens_match" && r.is_ok());
    let shadow = &runs[1].timed_proof["shadow"];
    let shadow = if shadow.is_null() {
        unknown(
            "the shadow oracle did not run (--retained-backend auto); --retained-backend shadow compares every surface bit for bit",
        )
    } else {
        known(
            json!({"positions": shadow["positions"], "divergences": shadow["divergences"], "bytes_per_arm": shadow["bytes_per_arm"]}),
        )
    };
    json!({
        "tolerance": "bit-exact",
        "why": "the retained route runs the same kernels with the same kernarg bytes in the same order as the \
                ordinary path (docs/ARCHITECTURE.md), so its logits and KV cache are bit-identical: there is no \
                numeric tolerance to allow",
        "compared": "the generated token ids of every timed row of both arms against the first timed ordinary row \
                     (gate tokens_match)",
        "tokens_match": tokens_match,
        "shadow": shadow,
    })
}

fn topology(params: &Params, setup: &Setup, runs: &[ArmRun]) -> Value {
    let fresh = params.process == Process::Fresh;
    let devices: Vec<Value> = runs
        .iter()
        .map(|run| {
            let submission = &run.timed_proof["submission"];
            let retained = if submission.is_null() {
                unknown(format!("the {} arm prepared no retained plan", run.name))
            } else {
                known(json!({
                    "queues": submission["queues"], "queue_id": submission["queue_id"],
                    "packets_per_token": submission["packets"], "transport": submission["transport"],
                }))
            };
            json!({
                "arm": run.name, "kind": setup.device.0, "arch": setup.target.name(),
                "agent_index": setup.device_record.agent_index,
                "process": if fresh { "its own redline bench-worker process" } else { "the bench process" },
                // Both backends keep one queue for ordinary launches (the HAL's in-order stream).
                "ordinary_launch_queues": 1,
                "retained_queues": retained,
            })
        })
        .collect();
    json!({
        "gpus": setup.device_record.gpus,
        "device_instances": runs.len(),
        "processes": if fresh { 1 + runs.len() } else { 1 },
        "devices": devices,
    })
}

/// The report of a finished bench.
#[must_use]
pub fn build(params: &Params, setup: &Setup, cx: &Context<'_>, runs: &[ArmRun]) -> Value {
    let gates = gates(params, runs);
    let invalid: Vec<String> =
        gates.0.iter().filter_map(|(name, r)| r.as_ref().err().map(|e| format!("{name}: {e}"))).collect();
    let (hip, auto_run) = (&runs[0], &runs[1]);
    let tok_s = versus(median(hip, |r| r.tok_s), median(auto_run, |r| r.tok_s), "tok_s");
    let ms = versus(median(hip, |r| r.ms_per_token), median(auto_run, |r| r.ms_per_token), "ms");
    let (ratio, delta) = (tok_s["value"]["ratio"].as_f64(), tok_s["value"]["delta_tok_s"].as_f64());
    let (output_health, unhealthy) = health_of(runs);
    let measured = Measured { ratio, delta_tok_s: delta, invalid: invalid.clone(), unhealthy };
    let mut promotion = cx.declaration.clone();
    if let (Some(target), Value::Object(verdict)) = (promotion.as_object_mut(), params.promotion_rule.judge(&measured))
    {
        target.extend(verdict);
    }
    let auto = &auto_run.timed_proof;
    let mut device = json!({"kind": setup.device.0, "arch": setup.target.name(), "selected": setup.device.1});
    let mut model = json!({"path": setup.model_path, "sha256": setup.model_sha256});
    if let (Some(d), Some(m)) = (device.as_object_mut(), model.as_object_mut()) {
        d.extend(setup.device_record.fields.clone());
        m.extend(setup.model_record.clone());
    }
    let prompt = params.prompt_text().as_bytes();
    json!({
        "schema": "docs/bench-report.schema.json",
        "utc": cx.utc,
        "source": facts::source(),
        "binary_sha256": binary_digest(),
        "invocation": invocation(cx.to),
        "host": facts::host(),
        "clocks": facts::clocks(setup.device_record.gpu_clock.clone()),
        "device": device,
        "topology": topology(params, setup, runs),
        "model": model,
        "kv_cache": setup.kv_cache,
        "admission": setup.admission,
        "workload": {
            "prompt_sha256": tokens_sha256(&setup.prompt), "prompt_tokens": setup.prompt.len(),
            "prompt_bytes_sha256": bytes_sha256(prompt), "prompt_bytes": prompt.len(),
            "decode_tokens_per_row": params.tokens, "context": params.context,
            "sampler": {"temperature": params.temperature, "top_k": 0, "top_p": 1.0}, "seed": params.seed,
        },
        "environment": facts::environment(),
        "settings": {
            "transport": params.transport, "retained_backend": params.retained_backend,
            "order": params.order, "process": params.process, "warmup": params.warmup, "runs": params.runs,
            "gate": params.gate(), "inject_fault": params.inject_fault,
            "promotion_rule": params.promotion_rule.to_string(),
            "arms": runs.iter().map(|r| json!({"name": r.name, "config": r.config})).collect::<Vec<_>>(),
        },
        "tape": auto["tape"], "submission": auto["submission"], "shadow": auto["shadow"],
        "census": auto["census"],
        "retained_tape": auto_run.tape,
        "arms": runs.iter().map(|r| {
            (r.name.to_owned(), arm_result(r, &output_health["arms"][r.name]))
        }).collect::<serde_json::Map<_, _>>(),
        "output_health": output_health,
        "correctness": correctness(runs, &gates),
        "gates": gates.0.iter().map(|(name, r)| json!({
            "name": name, "pass": r.is_ok(), "detail": r.as_ref().err(),
        })).collect::<Vec<_>>(),
        "valid": invalid.is_empty(),
        "invalid_reasons": invalid,
        "ratio_retained_over_ordinary_tok_s": ratio,
        "delta_retained_minus_ordinary_tok_s": delta,
        "comparison": {"tok_s": tok_s, "ms_per_token": ms},
        "promotion": promotion,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
