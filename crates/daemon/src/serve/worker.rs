//! The one generation thread: it owns the device and the [`Session`] (which stay on the thread
//! that made them) and runs queued jobs in arrival order. A job whose client has gone is
//! skipped, and a generation whose client goes stops at the next token.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::select::AnyDevice;
use crate::select::{DeviceKind, select_for_model};
use engine::admission::{AdmissionDecision, AdmissionRegistry};
use engine::model::{GenerateOptions, Session};
use engine::replay::ReplayConfig;
use hal::Device;
use pm4_encoding::Target;
use tokio::sync::mpsc;

use super::metrics::Metrics;

/// One generation to run.
#[derive(Debug)]
pub(crate) struct Job {
    /// Prompt token ids (non-empty, fits the context with `options.max_tokens`).
    pub prompt: Vec<u32>,
    /// Sampling, stops, length.
    pub options: GenerateOptions,
    /// Where the text goes; a closed receiver means the client has gone.
    pub events: mpsc::UnboundedSender<Event>,
}

/// What the worker reports about a job.
#[derive(Debug)]
pub(crate) enum Event {
    /// The next piece of text (never empty).
    Text(String),
    /// The generation ended.
    Done(Result<Finished, String>),
}

/// A finished generation's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finished {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Generated tokens.
    pub completion_tokens: usize,
    /// `stop` or `length`.
    pub finish_reason: &'static str,
}

/// What the worker needs to load the model.
#[derive(Debug, Clone)]
pub(crate) struct LoadSpec {
    /// The GGUF file.
    pub path: PathBuf,
    /// Its SHA-256.
    pub sha256: String,
    /// `--device`.
    pub kind: DeviceKind,
    /// `--arch`.
    pub target: Target,
    /// KV-cache positions.
    pub context: u32,
    /// The replay configuration.
    pub config: ReplayConfig,
    /// The admissions registry the default route is decided by.
    pub admissions: AdmissionRegistry,
    /// A fault armed once the model is loaded (testing).
    pub inject_fault: Option<hal::Injection>,
}

/// The device the model was loaded on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeviceInfo {
    /// `sim` or `hsa`.
    pub kind: &'static str,
    /// The architecture.
    pub arch: String,
    /// Why this device was chosen.
    pub reason: String,
    /// Whether the model is admitted to the retained route on this device, and why.
    pub admission: AdmissionDecision,
}

/// Loads the model on a new thread and, once it is loaded, serves `jobs` there until every
/// sender is dropped. Returns the thread and the device, or the load failure's message.
pub(crate) fn spawn(
    spec: LoadSpec,
    jobs: mpsc::Receiver<Job>,
    metrics: Arc<Metrics>,
) -> Result<(JoinHandle<()>, DeviceInfo), String> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("redline-generate".into())
        .spawn(move || match load(&spec) {
            Ok((session, device)) => {
                metrics.set_route(session.route_proof());
                if ready_tx.send(Ok(device)).is_ok() {
                    serve_jobs(session, jobs, &metrics);
                }
            }
            Err(message) => {
                let _ = ready_tx.send(Err(message));
            }
        })
        .map_err(|e| format!("starting the generation thread: {e}"))?;
    match ready_rx.recv() {
        Ok(Ok(device)) => Ok((thread, device)),
        Ok(Err(message)) => {
            let _ = thread.join();
            Err(message)
        }
        Err(_) => Err("the generation thread ended while loading the model".to_owned()),
    }
}

/// Selects the device and loads the model.
fn load(spec: &LoadSpec) -> Result<(Session<AnyDevice>, DeviceInfo), String> {
    let (device, reason) = select_for_model(spec.kind, Some(spec.target)).map_err(|e| e.to_string())?;
    eprintln!("device: {reason}");
    let file = gguf::Gguf::open(&spec.path).map_err(|e| format!("reading {}: {e}", spec.path.display()))?;
    let (kind, target) = (device.kind().name(), device.target());
    eprintln!("loading {} ({} KV positions) onto the {} device ...", spec.path.display(), spec.context, kind);
    let start = std::time::Instant::now();
    let admission = crate::admit::decide(&spec.admissions, &file, &spec.sha256, target, kind);
    eprintln!("admission: {}", admission.reason);
    let mut session = Session::with_admission(device, &file, spec.context, spec.config.clone(), admission.clone())
        .map_err(|e| e.to_string())?;
    eprintln!("model loaded in {:.1} s", start.elapsed().as_secs_f64());
    if let Some(fault) = spec.inject_fault {
        hal::FaultInjection::inject(session.device_mut(), fault).map_err(|e| format!("--inject-fault: {e}"))?;
        eprintln!("armed an injected {fault:?}");
    }
    Ok((session, DeviceInfo { kind, arch: target.to_string(), reason, admission }))
}

/// Runs jobs in arrival order until the queue closes.
fn serve_jobs(mut session: Session<AnyDevice>, mut jobs: mpsc::Receiver<Job>, metrics: &Metrics) {
    while let Some(job) = jobs.blocking_recv() {
        if job.events.is_closed() {
            metrics.generation_cancelled(0);
            continue;
        }
        metrics.set_generating(true);
        let done = run_job(&mut session, &job, metrics);
        // The route snapshot is current before the client hears the generation ended.
        metrics.set_route(session.route_proof());
        metrics.set_generating(false);
        if let Some(done) = done {
            let _ = job.events.send(Event::Done(done));
        }
    }
}

/// One generation, its text sent as it comes; the result to send, unless the client has gone.
fn run_job(session: &mut Session<AnyDevice>, job: &Job, metrics: &Metrics) -> Option<Result<Finished, String>> {
    let generation = session.generate(&job.prompt, &job.options, |piece| {
        if piece.is_empty() {
            // Nothing to show yet; still notice a client that has gone.
            return if job.events.is_closed() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) };
        }
        match job.events.send(Event::Text(piece.to_owned())) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    });
    Some(match generation {
        Ok(generation) if generation.finish_reason == "cancelled" => {
            metrics.prompt_tokens(generation.prompt_tokens);
            metrics.generation_cancelled(generation.tokens.len());
            return None;
        }
        Ok(generation) => {
            metrics.generation_finished(&generation);
            Ok(Finished {
                prompt_tokens: generation.prompt_tokens,
                completion_tokens: generation.tokens.len(),
                finish_reason: generation.finish_reason,
            })
        }
        Err(error) => {
            metrics.generation_failed();
            eprintln!("redline: generation failed: {error}");
            Err(error.to_string())
        }
    })
}
