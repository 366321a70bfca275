//! The series gateways and autoscalers read from a vLLM server, under vLLM's names, per served
//! model (label `model_name`, the served id), beside the `redline_*` ones (`crate::metrics`).
//! The README's "Metrics" section lists them.
//!
//! - `vllm:num_requests_running`, `vllm:num_requests_waiting` (gauges): requests generating
//!   (at most one: generations run one at a time) and queued.
//! - `vllm:kv_cache_usage_perc` (gauge, 0 to 1): KV-cache positions in use (the loaded model's
//!   held sequence, or the running one's prompt and tokens) over its context; 0 for a model not
//!   loaded. `vllm:gpu_cache_usage_perc` is the same value under its earlier name.
//! - `vllm:time_to_first_token_seconds`, `vllm:inter_token_latency_seconds`,
//!   `vllm:e2e_request_latency_seconds` (histograms): from a request's arrival (its queue wait
//!   included) to its first token, between consecutive tokens, and to its end.
//! - `vllm:prompt_tokens_total`, `vllm:generation_tokens_total` (counters), and
//!   `vllm:prefix_cache_queries_total`, `vllm:prefix_cache_hits_total` (counters, in tokens: the
//!   prompt tokens looked up and those kept from the previous generation).
//! - `vllm:request_success_total` (counter, with `finished_reason` `stop` or `length`).

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// A Prometheus histogram of seconds: cumulative counts per upper bound, count and sum.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    bounds: &'static [f64],
    /// Observations at or below each bound.
    buckets: Vec<u64>,
    count: u64,
    sum: f64,
}

impl Histogram {
    pub(crate) fn new(bounds: &'static [f64]) -> Self {
        Self { bounds, buckets: vec![0; bounds.len()], count: 0, sum: 0.0 }
    }

    pub(crate) fn observe(&mut self, seconds: f64) {
        for (bucket, &bound) in self.buckets.iter_mut().zip(self.bounds) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }

    /// The `_bucket`, `_sum` and `_count` lines; `labels` (`name="value",...`) go before `le`.
    pub(crate) fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (bucket, bound) in self.buckets.iter().zip(self.bounds) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {bucket}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let braces = |s: &str| if s.is_empty() { String::new() } else { format!("{{{s}}}") };
        let _ = writeln!(out, "{name}_sum{} {}", braces(labels), self.sum);
        let _ = writeln!(out, "{name}_count{} {}", braces(labels), self.count);
    }
}

/// Bounds of the time-to-first-token and end-to-end histograms, seconds.
const LATENCY_BOUNDS: &[f64] =
    &[0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0];
/// Bounds of the inter-token histogram, seconds.
const TOKEN_BOUNDS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5];

/// A series' name, help and value of one model.
type Sampled<T> = (&'static str, &'static str, fn(&Series) -> T);

/// A histogram's name, help and the histogram of one model.
type Histograms = (&'static str, &'static str, fn(&Series) -> &Histogram);

/// One served model's series.
#[derive(Debug, Clone)]
struct Series {
    waiting: u64,
    running: u64,
    /// KV positions in use, and the context.
    kv: (u64, u64),
    ttft: Histogram,
    itl: Histogram,
    e2e: Histogram,
    prompt_tokens: u64,
    generation_tokens: u64,
    cached_tokens: u64,
    finished_stop: u64,
    finished_length: u64,
}

impl Series {
    fn new() -> Self {
        Self {
            waiting: 0,
            running: 0,
            kv: (0, 0),
            ttft: Histogram::new(LATENCY_BOUNDS),
            itl: Histogram::new(TOKEN_BOUNDS),
            e2e: Histogram::new(LATENCY_BOUNDS),
            prompt_tokens: 0,
            generation_tokens: 0,
            cached_tokens: 0,
            finished_stop: 0,
            finished_length: 0,
        }
    }
}

/// The per-model series of every served model.
#[derive(Debug, Default)]
pub(crate) struct ServedSeries {
    /// (served id, its series), in `--model` order (the index jobs carry).
    models: Mutex<Vec<(String, Series)>>,
}

/// What a finished (or cancelled) generation adds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Finished {
    /// Its prompt tokens, and those kept from the previous generation.
    pub prompt_tokens: usize,
    pub cached_tokens: usize,
    /// Tokens generated.
    pub generated: usize,
    /// From arrival to the end.
    pub latency: Duration,
    /// `stop` or `length`; `None`: cancelled or failed.
    pub reason: Option<&'static str>,
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl ServedSeries {
    /// Series for the served ids, in `--model` order.
    pub(crate) fn new(ids: impl IntoIterator<Item = String>) -> Self {
        Self { models: Mutex::new(ids.into_iter().map(|id| (id, Series::new())).collect()) }
    }

    fn with(&self, model: usize, f: impl FnOnce(&mut Series)) {
        let mut models = self.models.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, series)) = models.get_mut(model) {
            f(series);
        }
    }

    /// A request for `model` was queued.
    pub(crate) fn queued(&self, model: usize) {
        self.with(model, |s| s.waiting += 1);
    }

    /// A queued request left the queue: to run (`running`) or skipped.
    pub(crate) fn dequeued(&self, model: usize, running: bool) {
        self.with(model, |s| {
            s.waiting = s.waiting.saturating_sub(1);
            s.running += u64::from(running);
        });
    }

    /// `model`'s KV positions in use, of `context`; every other model's become 0 (one model is
    /// on the device).
    pub(crate) fn kv_in_use(&self, model: usize, used: usize, context: u32) {
        let mut models = self.models.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (i, (_, series)) in models.iter_mut().enumerate() {
            series.kv = if i == model { (count(used), u64::from(context)) } else { (0, 0) };
        }
    }

    /// The first token of a request for `model`, `since` its arrival.
    pub(crate) fn first_token(&self, model: usize, since: Duration) {
        self.with(model, |s| s.ttft.observe(since.as_secs_f64()));
    }

    /// The time between two consecutive tokens.
    pub(crate) fn inter_token(&self, model: usize, gap: Duration) {
        self.with(model, |s| s.itl.observe(gap.as_secs_f64()));
    }

    /// A running request for `model` ended.
    pub(crate) fn finished(&self, model: usize, finished: Finished) {
        self.with(model, |s| {
            s.running = s.running.saturating_sub(1);
            s.prompt_tokens += count(finished.prompt_tokens);
            s.cached_tokens += count(finished.cached_tokens);
            s.generation_tokens += count(finished.generated);
            match finished.reason {
                Some("stop") => s.finished_stop += 1,
                Some(_) => s.finished_length += 1,
                None => return,
            }
            s.e2e.observe(finished.latency.as_secs_f64());
        });
    }

    /// The exposition of every series.
    pub(crate) fn render(&self, out: &mut String) {
        let models = self.models.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let label = |id: &str| format!("model_name=\"{}\"", super::metrics::label_escape(id));
        let gauges: [Sampled<f64>; 4] = [
            ("vllm:num_requests_running", "Requests generating now.", |s| s.running as f64),
            ("vllm:num_requests_waiting", "Requests waiting in the queue.", |s| s.waiting as f64),
            ("vllm:kv_cache_usage_perc", "KV-cache positions in use over the context (1 is full).", usage),
            ("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc under its earlier name.", usage),
        ];
        for (name, help, value) in gauges {
            header(out, name, "gauge", help);
            for (id, series) in &models {
                let _ = writeln!(out, "{name}{{{}}} {}", label(id), value(series));
            }
        }
        let counters: [Sampled<u64>; 4] = [
            ("vllm:prompt_tokens_total", "Prompt tokens of finished and cancelled requests.", |s| s.prompt_tokens),
            ("vllm:generation_tokens_total", "Tokens generated.", |s| s.generation_tokens),
            ("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", |s| s.prompt_tokens),
            ("vllm:prefix_cache_hits_total", "Prompt tokens kept from the previous generation.", |s| s.cached_tokens),
        ];
        for (name, help, value) in counters {
            header(out, name, "counter", help);
            for (id, series) in &models {
                let _ = writeln!(out, "{name}{{{}}} {}", label(id), value(series));
            }
        }
        header(out, "vllm:request_success_total", "counter", "Requests that finished, by finish reason.");
        for (id, series) in &models {
            for (reason, n) in [("stop", series.finished_stop), ("length", series.finished_length)] {
                let _ = writeln!(out, "vllm:request_success_total{{{},finished_reason=\"{reason}\"}} {n}", label(id));
            }
        }
        let histograms: [Histograms; 3] = [
            ("vllm:time_to_first_token_seconds", "From a request's arrival to its first token.", |s| &s.ttft),
            ("vllm:inter_token_latency_seconds", "Between consecutive generated tokens.", |s| &s.itl),
            ("vllm:e2e_request_latency_seconds", "From a request's arrival to its end.", |s| &s.e2e),
        ];
        for (name, help, histogram) in histograms {
            header(out, name, "histogram", help);
            for (id, series) in &models {
                histogram(series).render(out, name, &label(id));
            }
        }
    }
}

/// KV positions in use over the context.
fn usage(series: &Series) -> f64 {
    let (used, context) = series.kv;
    // CAST: positions far below 2^53 are exact as f64.
    #[allow(clippy::cast_precision_loss)]
    if context == 0 { 0.0 } else { used as f64 / context as f64 }
}

/// `# HELP` and `# TYPE` lines.
fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, series: &str) -> f64 {
        let line = text.lines().find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '));
        line.unwrap_or_else(|| panic!("{series} missing:\n{text}")).rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn the_gauges_follow_requests_through_the_queue_and_the_counters_add_up() {
        let served = ServedSeries::new(["a".to_owned(), "b\"".to_owned()]);
        served.queued(0);
        served.queued(0);
        served.queued(1);
        served.dequeued(0, true);
        served.kv_in_use(0, 32, 128);
        let mut text = String::new();
        served.render(&mut text);
        assert_eq!(sample(&text, "vllm:num_requests_running{model_name=\"a\"}"), 1.0);
        assert_eq!(sample(&text, "vllm:num_requests_waiting{model_name=\"a\"}"), 1.0);
        assert_eq!(sample(&text, "vllm:num_requests_waiting{model_name=\"b\\\"\"}"), 1.0);
        assert_eq!(sample(&text, "vllm:kv_cache_usage_perc{model_name=\"a\"}"), 0.25);
        assert_eq!(sample(&text, "vllm:gpu_cache_usage_perc{model_name=\"a\"}"), 0.25);
        served.first_token(0, Duration::from_millis(30));
        served.inter_token(0, Duration::from_millis(4));
        served.inter_token(0, Duration::from_millis(6));
        let latency = Duration::from_secs(2);
        served
            .finished(0, Finished { prompt_tokens: 10, cached_tokens: 6, generated: 3, latency, reason: Some("stop") });
        served.dequeued(0, false);
        served.kv_in_use(1, 5, 10);
        let mut text = String::new();
        served.render(&mut text);
        assert_eq!(sample(&text, "vllm:num_requests_running{model_name=\"a\"}"), 0.0);
        assert_eq!(sample(&text, "vllm:num_requests_waiting{model_name=\"a\"}"), 0.0);
        assert_eq!(sample(&text, "vllm:kv_cache_usage_perc{model_name=\"a\"}"), 0.0);
        assert_eq!(sample(&text, "vllm:kv_cache_usage_perc{model_name=\"b\\\"\"}"), 0.5);
        assert_eq!(sample(&text, "vllm:prompt_tokens_total{model_name=\"a\"}"), 10.0);
        assert_eq!(sample(&text, "vllm:prefix_cache_hits_total{model_name=\"a\"}"), 6.0);
        assert_eq!(sample(&text, "vllm:generation_tokens_total{model_name=\"a\"}"), 3.0);
        assert_eq!(sample(&text, "vllm:request_success_total{model_name=\"a\",finished_reason=\"stop\"}"), 1.0);
        assert_eq!(sample(&text, "vllm:request_success_total{model_name=\"a\",finished_reason=\"length\"}"), 0.0);
        let ttft = "vllm:time_to_first_token_seconds";
        assert_eq!(sample(&text, &format!("{ttft}_bucket{{model_name=\"a\",le=\"0.025\"}}")), 0.0);
        assert_eq!(sample(&text, &format!("{ttft}_bucket{{model_name=\"a\",le=\"0.05\"}}")), 1.0);
        assert_eq!(sample(&text, &format!("{ttft}_count{{model_name=\"a\"}}")), 1.0);
        let itl = "vllm:inter_token_latency_seconds";
        assert_eq!(sample(&text, &format!("{itl}_bucket{{model_name=\"a\",le=\"0.005\"}}")), 1.0);
        assert_eq!(sample(&text, &format!("{itl}_count{{model_name=\"a\"}}")), 2.0);
        assert!((sample(&text, &format!("{itl}_sum{{model_name=\"a\"}}")) - 0.01).abs() < 1e-12);
        assert_eq!(sample(&text, "vllm:e2e_request_latency_seconds_count{model_name=\"a\"}"), 1.0);
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            assert_eq!(line.rsplit_once(' ').map(|(_, v)| v.parse::<f64>().is_ok()), Some(true), "{line}");
        }
    }
}
