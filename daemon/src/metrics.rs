//! Counters for `GET /metrics` (Prometheus text format) and the generation thread's snapshot
//! (route proof, loaded model) behind `GET /redline/status`. The generation thread writes them
//! after each model switch and each job; HTTP handlers read.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use engine::admission::AdmissionDecision;
use engine::model::Generation;
use engine::replay::RouteProof;

use super::history::{Entry, Forwards, History};
use super::readiness::Readiness;
use super::vllm::{Histogram, ServedSeries};

/// What the generation thread last published.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// The controller's route proof.
    pub proof: RouteProof,
    /// The loaded model (its index among the served models) and its admission decision; `None`
    /// after a switch that failed midway, when the device holds no model it can run.
    pub loaded: Option<(usize, AdmissionDecision)>,
    /// Model switches begun since the server started (the first load is none).
    pub switches: u64,
}

/// The generation the thread is running, as it goes: published at most every
/// [`Progress::PUBLISH_EVERY`] and at its end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Progress {
    /// When the job began (its prefill), on the server's clock.
    pub started: std::time::Instant,
    /// When its first token was sampled, once it was.
    pub first_token: Option<std::time::Instant>,
    /// Tokens generated so far.
    pub tokens: u64,
}

impl Progress {
    /// How often a running generation is published at most.
    pub(crate) const PUBLISH_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

    /// A job starting now.
    pub(crate) fn start() -> Self {
        Self { started: std::time::Instant::now(), first_token: None, tokens: 0 }
    }

    /// One more token, sampled now.
    pub(crate) fn token(&mut self) {
        self.tokens += 1;
        self.first_token.get_or_insert_with(std::time::Instant::now);
    }

    /// The document the status shows: tokens so far, seconds since the job began, and the decode
    /// speed since the first token (tokens after it per second; 0 before a second token).
    pub(crate) fn report(&self, now: std::time::Instant) -> serde_json::Value {
        let decoding = self.first_token.map_or(0.0, |first| now.saturating_duration_since(first).as_secs_f64());
        let after_first = self.tokens.saturating_sub(1);
        let speed = if decoding > 0.0 && after_first > 0 {
            // CAST: a token count far below 2^53 is exact as f64.
            #[allow(clippy::cast_precision_loss)]
            let after_first = after_first as f64;
            after_first / decoding
        } else {
            0.0
        };
        serde_json::json!({
            "tokens": self.tokens,
            "seconds": now.saturating_duration_since(self.started).as_secs_f64(),
            "decode_tokens_per_second": speed,
        })
    }
}

/// Server-wide counters and the latest snapshot.
#[derive(Debug)]
pub(crate) struct Metrics {
    /// HTTP requests by (endpoint, status).
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    prompt_tokens: AtomicU64,
    generated_tokens: AtomicU64,
    generations_finished: AtomicU64,
    generations_cancelled: AtomicU64,
    generations_failed: AtomicU64,
    /// The last finished generation's decode speed, as `f64` bits.
    decode_tokens_per_second_bits: AtomicU64,
    /// Time to first token of the finished generations, as a histogram.
    time_to_first_token: Mutex<Histogram>,
    /// Prompt tokens kept from the previous generation instead of prefilled.
    cached_tokens: AtomicU64,
    /// The last cancelled generation's generated tokens.
    last_cancelled_tokens: AtomicU64,
    /// 1 while the generation thread runs a job.
    generating: AtomicU64,
    snapshot: Mutex<Option<Snapshot>>,
    /// The generation running now, if any.
    progress: Mutex<Option<Progress>>,
    /// The last finished generations.
    history: History,
    /// Whether a model is loading (`/health`).
    pub(crate) readiness: Readiness,
    /// The vLLM-named series of every served model.
    pub(crate) served: ServedSeries,
}

/// Bounds of `redline_time_to_first_token_seconds`, seconds.
const TIME_TO_FIRST_TOKEN_BOUNDS: &[f64] = &[0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

impl Default for Metrics {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

/// The queue's fill at the time of a scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueGauge {
    /// Jobs waiting (the one generating not included).
    pub depth: usize,
    /// Jobs that may wait at most.
    pub capacity: usize,
}

/// A lock that a panicking holder poisoned still holds valid counters.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `usize` to a counter increment.
fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl Metrics {
    /// The counters of a server serving `ids` (`--model` order).
    pub(crate) fn new(ids: Vec<String>) -> Self {
        Self {
            requests: Mutex::default(),
            prompt_tokens: AtomicU64::default(),
            generated_tokens: AtomicU64::default(),
            generations_finished: AtomicU64::default(),
            generations_cancelled: AtomicU64::default(),
            generations_failed: AtomicU64::default(),
            decode_tokens_per_second_bits: AtomicU64::default(),
            time_to_first_token: Mutex::new(Histogram::new(TIME_TO_FIRST_TOKEN_BOUNDS)),
            cached_tokens: AtomicU64::default(),
            last_cancelled_tokens: AtomicU64::default(),
            generating: AtomicU64::default(),
            snapshot: Mutex::default(),
            progress: Mutex::default(),
            history: History::default(),
            readiness: Readiness::default(),
            served: ServedSeries::new(ids),
        }
    }

    /// Counts one answered HTTP request.
    pub(crate) fn request(&self, endpoint: &str, status: u16) {
        *lock(&self.requests).entry((endpoint.to_owned(), status)).or_insert(0) += 1;
    }

    /// Counts prompt tokens prefilled.
    pub(crate) fn prompt_tokens(&self, n: usize) {
        self.prompt_tokens.fetch_add(count(n), Ordering::Relaxed);
    }

    /// A generation that ran to `stop` or `length`, making `forwards`.
    pub(crate) fn generation_finished(&self, generation: &Generation, forwards: Forwards) {
        self.history.push(Entry::new(generation, forwards, super::history::unix_ms()));
        self.prompt_tokens(generation.prompt_tokens);
        self.cached_tokens.fetch_add(count(generation.cached_tokens), Ordering::Relaxed);
        self.generated_tokens.fetch_add(count(generation.tokens.len()), Ordering::Relaxed);
        self.generations_finished.fetch_add(1, Ordering::Relaxed);
        if generation.decode_forwards > 0 {
            self.decode_tokens_per_second_bits.store(generation.tokens_per_second().to_bits(), Ordering::Relaxed);
        }
        lock(&self.time_to_first_token).observe(generation.prefill_time.as_secs_f64());
    }

    /// A generation whose client went away after `generated` tokens (0: before it started).
    pub(crate) fn generation_cancelled(&self, generated: usize) {
        self.generated_tokens.fetch_add(count(generated), Ordering::Relaxed);
        self.generations_cancelled.fetch_add(1, Ordering::Relaxed);
        self.last_cancelled_tokens.store(count(generated), Ordering::Relaxed);
    }

    /// A generation that ended with an error.
    pub(crate) fn generation_failed(&self) {
        self.generations_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the generation thread is running a job.
    pub(crate) fn set_generating(&self, generating: bool) {
        self.generating.store(u64::from(generating), Ordering::Relaxed);
    }

    /// Publishes the running generation's progress (`None`: none runs).
    pub(crate) fn set_progress(&self, progress: Option<Progress>) {
        *lock(&self.progress) = progress;
    }

    /// The running generation's progress, if one runs.
    pub(crate) fn progress(&self) -> Option<Progress> {
        *lock(&self.progress)
    }

    /// Replaces the snapshot.
    pub(crate) fn set_snapshot(&self, snapshot: Snapshot) {
        *lock(&self.snapshot) = Some(snapshot);
    }

    /// The index of the loaded model, read without copying the snapshot (none before the first
    /// load, and after a switch that failed midway).
    pub(crate) fn loaded_model(&self) -> Option<usize> {
        lock(&self.snapshot).as_ref().and_then(|s| s.loaded.as_ref().map(|(index, _)| *index))
    }

    /// The snapshot (none before the first model is loaded).
    pub(crate) fn snapshot(&self) -> Option<Snapshot> {
        lock(&self.snapshot).clone()
    }

    /// Generations by outcome and the last cancelled one's tokens, for the status page.
    pub(crate) fn generations(&self) -> serde_json::Value {
        serde_json::json!({
            "finished": self.generations_finished.load(Ordering::Relaxed),
            "cancelled": self.generations_cancelled.load(Ordering::Relaxed),
            "failed": self.generations_failed.load(Ordering::Relaxed),
            "last_cancelled_tokens": self.last_cancelled_tokens.load(Ordering::Relaxed),
            "generated_tokens": self.generated_tokens.load(Ordering::Relaxed),
            "prompt_tokens": self.prompt_tokens.load(Ordering::Relaxed),
        })
    }

    /// The last finished generations, oldest first.
    pub(crate) fn history(&self) -> Vec<Entry> {
        self.history.entries()
    }

    /// The Prometheus text exposition.
    pub(crate) fn render(&self, queue: QueueGauge) -> String {
        let mut out = String::new();
        header(&mut out, "redline_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
        for ((endpoint, status), n) in lock(&self.requests).iter() {
            let _ = writeln!(
                out,
                "redline_requests_total{{endpoint=\"{}\",status=\"{status}\"}} {n}",
                label_escape(endpoint)
            );
        }
        let counters = [
            (
                "redline_prompt_tokens_total",
                "Prompt tokens of the generations (kept ones included).",
                &self.prompt_tokens,
            ),
            (
                "redline_prompt_tokens_cached_total",
                "Prompt tokens kept from the previous generation instead of prefilled.",
                &self.cached_tokens,
            ),
            (
                "redline_generated_tokens_total",
                "Tokens generated (cancelled generations included).",
                &self.generated_tokens,
            ),
            ("redline_generations_total", "Generations that ran to stop or length.", &self.generations_finished),
            (
                "redline_requests_cancelled_total",
                "Generations stopped or skipped because the client went away.",
                &self.generations_cancelled,
            ),
            ("redline_generation_failures_total", "Generations that ended with an error.", &self.generations_failed),
        ];
        for (name, help, value) in counters {
            header(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        let speed = f64::from_bits(self.decode_tokens_per_second_bits.load(Ordering::Relaxed));
        header(&mut out, "redline_decode_tokens_per_second", "gauge", "Decode speed of the last finished generation.");
        let _ = writeln!(out, "redline_decode_tokens_per_second {speed}");
        header(
            &mut out,
            "redline_time_to_first_token_seconds",
            "histogram",
            "Time from the start of a finished generation's prefill to its first token.",
        );
        lock(&self.time_to_first_token).render(&mut out, "redline_time_to_first_token_seconds", "");
        header(&mut out, "redline_generating", "gauge", "1 while a request is being generated.");
        let _ = writeln!(out, "redline_generating {}", self.generating.load(Ordering::Relaxed));
        header(&mut out, "redline_queue_depth", "gauge", "Requests waiting for the generation thread.");
        let _ = writeln!(out, "redline_queue_depth {}", queue.depth);
        header(&mut out, "redline_queue_capacity", "gauge", "Requests that may wait at most (--queue).");
        let _ = writeln!(out, "redline_queue_capacity {}", queue.capacity);
        if let Some(snapshot) = self.snapshot() {
            header(&mut out, "redline_model_switches_total", "counter", "Model switches begun (--model repeated).");
            let _ = writeln!(out, "redline_model_switches_total {}", snapshot.switches);
            route(&mut out, &snapshot.proof);
        }
        self.served.render(&mut out);
        out
    }
}

/// The replay observations of the route proof.
fn route(out: &mut String, proof: &RouteProof) {
    let o = &proof.observations;
    header(
        out,
        "redline_replay_forwards_total",
        "counter",
        "Forwards by the route they took (RouteProof observations).",
    );
    for (route, n) in
        [("retained", o.retained), ("ordinary", o.ordinary), ("recorded", o.recorded), ("shadow", o.shadow)]
    {
        let _ = writeln!(out, "redline_replay_forwards_total{{route=\"{route}\"}} {n}");
    }
    header(out, "redline_replay_fallbacks_total", "counter", "Replay fallbacks entered.");
    let _ = writeln!(out, "redline_replay_fallbacks_total {}", o.fallbacks);
    header(out, "redline_replay_state", "gauge", "The replay controller's state (1 for the current one).");
    let _ = writeln!(out, "redline_replay_state{{state=\"{}\"}} 1", label_escape(proof.state));
}

/// `# HELP` and `# TYPE` lines.
fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value with `\`, `"` and newlines escaped.
pub(crate) fn label_escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reports_the_speed_since_the_first_token() {
        let t0 = std::time::Instant::now();
        let second = std::time::Duration::from_secs(1);
        let mut progress = Progress { started: t0, first_token: None, tokens: 0 };
        assert_eq!(progress.report(t0 + second)["decode_tokens_per_second"], 0.0);
        progress.first_token = Some(t0 + second);
        progress.tokens = 5;
        let report = progress.report(t0 + 3 * second);
        // Four tokens after the first, in the two seconds since it.
        assert_eq!(report, serde_json::json!({"tokens": 5, "seconds": 3.0, "decode_tokens_per_second": 2.0}));
        progress.tokens = 1;
        assert_eq!(progress.report(t0 + 3 * second)["decode_tokens_per_second"], 0.0);
    }

    #[test]
    fn the_exposition_has_one_sample_per_series_and_escapes_labels() {
        let metrics = Metrics::default();
        metrics.request("/v1/completions", 200);
        metrics.request("/v1/completions", 200);
        metrics.request("a\"b", 404);
        metrics.generation_cancelled(7);
        let text = metrics.render(QueueGauge { depth: 2, capacity: 16 });
        assert!(text.contains("redline_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"), "{text}");
        assert!(text.contains("redline_requests_total{endpoint=\"a\\\"b\",status=\"404\"} 1\n"), "{text}");
        assert!(text.contains("\nredline_requests_cancelled_total 1\n"), "{text}");
        assert!(text.contains("\nredline_generated_tokens_total 7\n"), "{text}");
        assert!(text.contains("\nredline_queue_depth 2\n"), "{text}");
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            assert_eq!(line.split(' ').count(), 2, "{line}");
        }
    }

    #[test]
    fn time_to_first_token_is_a_cumulative_histogram() {
        let metrics = Metrics::default();
        for millis in [30, 400, 400, 7000] {
            metrics.generation_finished(
                &Generation {
                    text: String::new(),
                    tokens: vec![1],
                    prompt_tokens: 3,
                    cached_tokens: 0,
                    decode_time: std::time::Duration::ZERO,
                    decode_forwards: 0,
                    prefill_time: std::time::Duration::from_millis(millis),
                    finish_reason: "length",
                },
                Forwards::default(),
            );
        }
        let text = metrics.render(QueueGauge { depth: 0, capacity: 1 });
        let name = "redline_time_to_first_token_seconds";
        assert!(text.contains(&format!("# TYPE {name} histogram\n")), "{text}");
        for (le, n) in [("0.025", 0), ("0.05", 1), ("0.25", 1), ("0.5", 3), ("5", 3), ("10", 4), ("+Inf", 4)] {
            assert!(text.contains(&format!("\n{name}_bucket{{le=\"{le}\"}} {n}\n")), "le {le}: {text}");
        }
        assert!(text.contains(&format!("\n{name}_count 4\n")), "{text}");
        let sum: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}_sum ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        assert!((sum - 7.83).abs() < 1e-9, "{sum}");
    }
}
