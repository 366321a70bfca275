//! Spans from the timestamps of [`super::run`], and the report every output form renders.
//!
//! Slot `0` is the body's entry, slot `k + 1` follows launch `k`, slot `n + 1` its exit
//! ([`lowering::profile`]). Span `k` is slot `k + 1` minus slot `k`; the token's device time is
//! the exit minus the entry, and the spans' sum (slot `n` minus slot `0`) is that less the tail
//! (the terminal wait and acquire after the last timestamp of a dispatch).

use serde::Serialize;
use tape_core::tape::TapeIdentity;

use super::{DISCLAIMER, Measured};
use crate::replay::{Route, SubmissionProof};

/// The schema of the JSON report, in the repository.
pub const SCHEMA: &str = "docs/profile-report.schema.json";
/// The slowest dispatches a report names.
pub const SLOWEST_MAX: usize = 10;

/// The profile: identities, spans and the certified route's check.
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// [`DISCLAIMER`].
    pub disclaimer: &'static str,
    /// The model's architecture.
    pub architecture: &'static str,
    /// The GPU clock's rate the spans are converted with.
    pub timestamp_frequency_hz: u64,
    /// The certified tape and body.
    pub certified: Certified,
    /// The instrumented body.
    pub instrumented: Instrumented,
    /// The positions the instrumented body ran at, one per token.
    pub positions: Vec<u32>,
    /// One entry per dispatch, in tape order.
    pub dispatches: Vec<DispatchSpans>,
    /// Per kernel: its dispatches' median spans summed, slowest first.
    pub kernels: Vec<KernelSpans>,
    /// The dispatches with the longest median spans, slowest first (at most [`SLOWEST_MAX`]).
    pub slowest: Vec<Slowest>,
    /// Per token: its device time and the spans' sum.
    pub tokens: Vec<TokenTime>,
    /// The spans' sum over the device time, over the tokens.
    pub span_fraction: Fraction,
    /// The certified route before and after profiling.
    pub route: RouteReport,
}

/// The certified tape and its body.
#[derive(Clone, Debug, Serialize)]
pub struct Certified {
    /// The tape's identity (dispatch count, unique kernels, external launches, sequence hash).
    pub tape: TapeIdentity,
    /// Its PM4 body's dwords, as the certified plan submits it.
    pub body_dwords: usize,
}

/// The instrumented body's identity.
#[derive(Clone, Debug, Serialize)]
pub struct Instrumented {
    /// Dispatches: the tape's.
    pub dispatch_count: usize,
    /// Its dwords.
    pub body_dwords: usize,
    /// Its sequence hash (`lowering::profile::InstrumentedIb::sequence_hash`), hex.
    pub sequence_hash: String,
    /// Timestamp packets: dispatches + 2.
    pub timestamps: usize,
    /// Waits added before the timestamps after dispatches.
    pub added_waits: usize,
    /// Whether each timestamp after a dispatch waits for it.
    pub serialized: bool,
}

/// One dispatch's spans.
#[derive(Clone, Debug, Serialize)]
pub struct DispatchSpans {
    /// The launch's index in the tape.
    pub index: usize,
    /// Its kernel symbol.
    pub kernel: String,
    /// Whether the certified body waits before it (a boundary of the tape).
    pub boundary_before: bool,
    /// Its span in each token, nanoseconds.
    pub span_ns: Vec<f64>,
    /// The smallest.
    pub min_ns: f64,
    /// The median.
    pub median_ns: f64,
}

/// One kernel's dispatches.
#[derive(Clone, Debug, Serialize)]
pub struct KernelSpans {
    /// The kernel symbol.
    pub kernel: String,
    /// Its dispatches per token.
    pub dispatches: usize,
    /// Their median spans, summed.
    pub median_ns_sum: f64,
    /// That over the sum of every dispatch's median span.
    pub share: f64,
}

/// A slow dispatch.
#[derive(Clone, Debug, Serialize)]
pub struct Slowest {
    /// The launch's index.
    pub index: usize,
    /// Its kernel.
    pub kernel: String,
    /// Its median span.
    pub median_ns: f64,
}

/// One token's device time.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TokenTime {
    /// The position.
    pub position: u32,
    /// First to last timestamp.
    pub device_ns: f64,
    /// The spans' sum.
    pub span_sum_ns: f64,
    /// After the last dispatch's timestamp: the terminal wait and acquire.
    pub tail_ns: f64,
    /// `span_sum_ns / device_ns`.
    pub span_fraction: f64,
}

/// A fraction over the tokens.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Fraction {
    /// The smallest.
    pub min: f64,
    /// The median.
    pub median: f64,
}

/// The certified route around profiling.
#[derive(Clone, Debug, Serialize)]
pub struct RouteReport {
    /// The controller's tape identity before.
    pub tape_before: TapeIdentity,
    /// After.
    pub tape_after: Option<TapeIdentity>,
    /// Whether they are equal.
    pub tape_unchanged: bool,
    /// The certified plan's submission before.
    pub submission_before: SubmissionProof,
    /// After.
    pub submission_after: Option<SubmissionProof>,
    /// The controller's state after its forward at the first profiled position.
    pub state_after: &'static str,
    /// That forward's route.
    pub route_after: Route,
    /// Whether its logits equal the instrumented body's there, bit for bit.
    pub logits_match: bool,
}

/// The report of `measured`.
#[must_use]
pub fn build(measured: &Measured) -> Profile {
    let hz = measured.timestamp_frequency_hz.max(1);
    // CAST: tick counts far below 2^53 in any run; nanoseconds as f64 for the report.
    #[allow(clippy::cast_precision_loss)]
    let ns = |ticks: u64| ticks as f64 * 1e9 / hz as f64;
    let launches = measured.tape.launches();
    let boundaries = tape_core::deps::boundaries(launches).unwrap_or_default();
    let dispatches: Vec<DispatchSpans> = launches
        .iter()
        .enumerate()
        .map(|(k, launch)| {
            let span_ns: Vec<f64> =
                measured.runs.iter().map(|run| ns(run.ticks[k + 1].saturating_sub(run.ticks[k]))).collect();
            DispatchSpans {
                index: k,
                kernel: launch.artifact.symbol.clone(),
                boundary_before: boundaries.binary_search(&k).is_ok(),
                min_ns: span_ns.iter().copied().fold(f64::INFINITY, f64::min),
                median_ns: median(&span_ns),
                span_ns,
            }
        })
        .collect();
    let n = launches.len();
    let tokens: Vec<TokenTime> = measured
        .runs
        .iter()
        .map(|run| {
            let device_ns = ns(run.ticks[n + 1] - run.ticks[0]);
            let span_sum_ns = ns(run.ticks[n] - run.ticks[0]);
            TokenTime {
                position: run.position,
                device_ns,
                span_sum_ns,
                tail_ns: ns(run.ticks[n + 1] - run.ticks[n]),
                span_fraction: if device_ns > 0.0 { span_sum_ns / device_ns } else { 0.0 },
            }
        })
        .collect();
    let fractions: Vec<f64> = tokens.iter().map(|t| t.span_fraction).collect();
    let route = &measured.route;
    Profile {
        schema: SCHEMA,
        disclaimer: DISCLAIMER,
        architecture: measured.architecture,
        timestamp_frequency_hz: measured.timestamp_frequency_hz,
        certified: Certified { tape: measured.tape.identity(), body_dwords: measured.certified_dwords },
        instrumented: Instrumented {
            dispatch_count: measured.body.dispatch_offsets.len(),
            body_dwords: measured.body.words.len(),
            sequence_hash: hex(&measured.body.sequence_hash()),
            timestamps: measured.body.slots(),
            added_waits: measured.body.added_waits.len(),
            serialized: !measured.body.added_waits.is_empty(),
        },
        positions: measured.runs.iter().map(|r| r.position).collect(),
        kernels: kernels(&dispatches),
        slowest: slowest(&dispatches),
        dispatches,
        tokens,
        span_fraction: Fraction {
            min: fractions.iter().copied().fold(f64::INFINITY, f64::min),
            median: median(&fractions),
        },
        route: RouteReport {
            tape_before: route.before,
            tape_after: route.after,
            tape_unchanged: route.after == Some(route.before),
            submission_before: route.submission_before,
            submission_after: route.submission_after,
            state_after: route.state_after,
            route_after: route.route_after,
            logits_match: route.logits_match,
        },
    }
}

/// Per kernel, slowest first (equal sums by name).
fn kernels(dispatches: &[DispatchSpans]) -> Vec<KernelSpans> {
    let total: f64 = dispatches.iter().map(|d| d.median_ns).sum();
    let mut by_kernel: Vec<KernelSpans> = Vec::new();
    for d in dispatches {
        match by_kernel.iter_mut().find(|k| k.kernel == d.kernel) {
            Some(k) => {
                k.dispatches += 1;
                k.median_ns_sum += d.median_ns;
            }
            None => by_kernel.push(KernelSpans {
                kernel: d.kernel.clone(),
                dispatches: 1,
                median_ns_sum: d.median_ns,
                share: 0.0,
            }),
        }
    }
    for k in &mut by_kernel {
        k.share = if total > 0.0 { k.median_ns_sum / total } else { 0.0 };
    }
    by_kernel.sort_by(|a, b| b.median_ns_sum.total_cmp(&a.median_ns_sum).then_with(|| a.kernel.cmp(&b.kernel)));
    by_kernel
}

fn slowest(dispatches: &[DispatchSpans]) -> Vec<Slowest> {
    let mut order: Vec<&DispatchSpans> = dispatches.iter().collect();
    order.sort_by(|a, b| b.median_ns.total_cmp(&a.median_ns).then_with(|| a.index.cmp(&b.index)));
    order
        .into_iter()
        .take(SLOWEST_MAX)
        .map(|d| Slowest { index: d.index, kernel: d.kernel.clone(), median_ns: d.median_ns })
        .collect()
}

/// The median (the mean of the middle two for an even count; 0 for none).
#[must_use]
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        len if len % 2 == 1 => sorted[len / 2],
        len => f64::midpoint(sorted[len / 2 - 1], sorted[len / 2]),
    }
}

/// Lower-case hex.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert!((median(&[3.0, 1.0, 2.0]) - 2.0).abs() < f64::EPSILON);
        assert!((median(&[4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < f64::EPSILON);
        assert!(median(&[]).abs() < f64::EPSILON);
    }
}
