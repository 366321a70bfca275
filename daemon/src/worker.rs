//! The one generation thread: it owns the device and the [`Session`] (which stay on the thread
//! that made them) and runs queued jobs in arrival order. A job for another served model than
//! the loaded one switches models first (a reconfiguration of the same session and device). A
//! job whose client has gone is skipped, and a generation whose client goes stops at the next
//! token.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use engine::admission::AdmissionRegistry;
use engine::admission::model::{Setting, decide};
use engine::model::{GenerateOptions, Session};
use engine::replay::ReplayConfig;
use hal::{Device, FaultInjection};
use infile::{EscapedPath, escape, escape_lines};
use tokio::sync::mpsc;

use super::history::Forwards;
use super::logprobs::Entry;
use super::metrics::{Metrics, Progress, Snapshot};
use super::model_file::ModelSource;

/// One generation to run.
#[derive(Debug)]
pub(crate) struct Job {
    /// The served model to run it with (an index into `--model` order).
    pub model: usize,
    /// Prompt token ids (non-empty, fits the context with `options.max_tokens`).
    pub prompt: Vec<u32>,
    /// Sampling, stops, length.
    pub options: GenerateOptions,
    /// Where the text goes; a closed receiver means the client has gone.
    pub events: mpsc::UnboundedSender<Event>,
    /// When the request arrived (its queue wait counts in its latencies).
    pub arrived: std::time::Instant,
}

/// What the worker reports about a job.
#[derive(Debug)]
pub(crate) enum Event {
    /// The next piece of text.
    Text(Piece),
    /// The generation ended.
    Done(Result<Finished, String>),
}

/// A piece of a generation's text, with the log-probability entries of the tokens sampled
/// since the last piece when they were asked for. The text is empty only in a generation's last
/// piece, which carries the entries of tokens whose text is never shown (see `logprobs`).
#[derive(Debug)]
pub(crate) struct Piece {
    /// The text.
    pub text: String,
    /// The entries, in order.
    pub logprobs: Vec<Entry>,
}

/// A finished generation's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finished {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Of them, those kept from the previous generation instead of prefilled.
    pub cached_tokens: usize,
    /// Generated tokens.
    pub completion_tokens: usize,
    /// `stop` or `length`.
    pub finish_reason: &'static str,
}

/// A served model as the worker loads it.
#[derive(Debug)]
pub(crate) struct WorkerModel {
    /// The id clients see, for messages and the reconfiguration's detail.
    pub id: String,
    /// The GGUF file, for messages.
    pub path: PathBuf,
    /// The parsed file while it waits to be loaded: the first model's from startup until it
    /// is loaded; any model's during a switch to it. Its bytes are dropped once on the device.
    pub file: Option<gguf::Gguf>,
    /// The file as opened at startup: a switch loads it again through the same descriptor into
    /// a new snapshot and refuses it if it has changed ([`super::model_file`]).
    pub source: Arc<ModelSource>,
    /// Its SHA-256.
    pub sha256: String,
    /// KV-cache positions.
    pub context: u32,
}

/// A device the caller opened for the server: the device, its kind (`sim`, `hsa`: what
/// admission rows and the status page name) and why it was chosen.
#[derive(Debug)]
pub struct OpenedDevice<D> {
    /// The device.
    pub device: D,
    /// Its kind.
    pub kind: &'static str,
    /// Why this device was chosen.
    pub reason: String,
}

/// What the worker needs to load the models.
#[derive(Debug)]
pub(crate) struct LoadSpec {
    /// The served models in `--model` order (the index jobs carry); the first is loaded at
    /// startup.
    pub models: Vec<WorkerModel>,
    /// The replay configuration.
    pub config: ReplayConfig,
    /// The admissions registry the default route is decided by.
    pub admissions: AdmissionRegistry,
    /// A fault armed once the first model is loaded (testing).
    pub inject_fault: Option<hal::Injection>,
    /// Whether a generation keeps the prompt prefix the device holds from the previous one.
    pub prefix_reuse: bool,
}

/// The device the models run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeviceInfo {
    /// `sim` or `hsa`.
    pub kind: &'static str,
    /// The architecture.
    pub arch: String,
    /// Why this device was chosen.
    pub reason: String,
}

/// Opens the device with `open` on a new thread and returns once it is open: the thread and
/// the device, or why it did not open. The thread then loads the first model ([`Readiness`]
/// says so meanwhile) and serves `jobs` until every sender is dropped; a first model that fails
/// to load is reported on `failed` and ends the thread.
///
/// [`Readiness`]: super::readiness::Readiness
pub(crate) fn spawn<D, F>(
    spec: LoadSpec,
    open: F,
    jobs: mpsc::Receiver<Job>,
    metrics: Arc<Metrics>,
    failed: tokio::sync::oneshot::Sender<String>,
) -> Result<(JoinHandle<()>, DeviceInfo), String>
where
    D: Device + FaultInjection + 'static,
    F: FnOnce() -> Result<OpenedDevice<D>, String> + Send + 'static,
{
    let (opened_tx, opened_rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("redline-generate".into())
        .spawn(move || {
            let opened = match open() {
                Ok(opened) => opened,
                Err(message) => {
                    let _ = opened_tx.send(Err(message));
                    return;
                }
            };
            eprintln!("device: {}", escape_lines(&opened.reason));
            let info = DeviceInfo {
                kind: opened.kind,
                arch: opened.device.target().to_string(),
                reason: opened.reason.clone(),
            };
            if opened_tx.send(Ok(info)).is_err() {
                return;
            }
            match load(spec, opened) {
                Ok(worker) => {
                    metrics.set_snapshot(worker.snapshot());
                    metrics.served.kv_in_use(0, 0, worker.session.context());
                    metrics.readiness.set_ready();
                    serve_jobs(worker, jobs, &metrics);
                }
                Err(message) => {
                    let _ = failed.send(message);
                }
            }
        })
        .map_err(|e| format!("starting the generation thread: {e}"))?;
    match opened_rx.recv() {
        Ok(Ok(device)) => Ok((thread, device)),
        Ok(Err(message)) => {
            let _ = thread.join();
            Err(message)
        }
        Err(_) => Err("the generation thread ended while opening the device".to_owned()),
    }
}

/// The generation thread's state: one session on one device, holding one served model.
struct Worker<D: Device> {
    session: Session<D>,
    /// The device's kind, as admission rows name it.
    kind: &'static str,
    spec: LoadSpec,
    /// The served model the session holds; `None` after a switch failed midway (the session
    /// then holds no model it can run, and the next job reloads whichever it asks for).
    loaded: Option<usize>,
    /// Switches begun.
    switches: u64,
}

/// Loads the first model on the opened device.
fn load<D>(mut spec: LoadSpec, opened: OpenedDevice<D>) -> Result<Worker<D>, String>
where
    D: Device + FaultInjection,
{
    let OpenedDevice { device, kind, .. } = opened;
    let Some(first) = spec.models.first_mut() else {
        return Err("no model to serve".to_owned());
    };
    eprintln!("loading {} ({} KV positions) onto the {} device ...", EscapedPath(&first.path), first.context, kind);
    let start = std::time::Instant::now();
    let file = match first.file.take() {
        Some(file) => file,
        None => read_again(first)?,
    };
    let setting = Setting { kind, context: first.context, transport: spec.config.transport };
    let admission = decide(&spec.admissions, &file, &first.sha256, &device, setting);
    eprintln!("admission: {}", escape_lines(&admission.reason));
    let mut session = Session::with_admission(device, &file, first.context, spec.config.clone(), admission)
        .map_err(|e| e.to_string())?;
    session.set_prefix_reuse(spec.prefix_reuse);
    drop(file);
    eprintln!("model loaded in {:.1} s", start.elapsed().as_secs_f64());
    if let Some(fault) = spec.inject_fault {
        hal::FaultInjection::inject(session.device_mut(), fault).map_err(|e| format!("--inject-fault: {e}"))?;
        eprintln!("armed an injected {fault:?}");
    }
    Ok(Worker { session, kind, spec, loaded: Some(0), switches: 0 })
}

impl<D: Device> Worker<D> {
    /// What the status page shows of the thread's state.
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            proof: self.session.route_proof(),
            loaded: self.loaded.map(|index| (index, self.session.admission().clone())),
            switches: self.switches,
        }
    }

    /// Makes served model `index` the loaded one. The model already loaded stays as it is (a
    /// request only begins a new sequence, which keeps a valid plan); another one reconfigures
    /// the session: the controller releases the old plan, the device reset frees every object
    /// of the old model, the new one loads and the controller is re-armed from its admission.
    fn switch_to(&mut self, index: usize, metrics: &Metrics) -> Result<(), String> {
        if self.loaded == Some(index) {
            return Ok(());
        }
        let id = self.spec.models.get(index).map_or_else(String::new, |m| m.id.clone());
        metrics.readiness.set_loading(&id);
        let result = self.load_other(index, metrics);
        metrics.readiness.set_ready();
        result
    }

    /// [`Worker::switch_to`] another model than the loaded one.
    fn load_other(&mut self, index: usize, metrics: &Metrics) -> Result<(), String> {
        let from =
            self.loaded.and_then(|i| self.spec.models.get(i)).map_or("none (a switch failed)", |m| &m.id).to_owned();
        let served = self.spec.models.len();
        let Some(to) = self.spec.models.get_mut(index) else {
            return Err(format!("no served model {index}: {served} are served"));
        };
        let why = format!("model switch {from} -> {}", to.id);
        eprintln!("{}: loading {} ({} KV positions) ...", escape(&why), EscapedPath(&to.path), to.context);
        let start = std::time::Instant::now();
        // The file is read (and checked unchanged) before the loaded model is touched: a file
        // that cannot be read again fails this request and leaves the loaded model serving.
        let file = match to.file.take() {
            Some(file) => file,
            None => read_again(to)?,
        };
        let to = &self.spec.models[index];
        let setting = Setting { kind: self.kind, context: to.context, transport: self.spec.config.transport };
        let admission = decide(&self.spec.admissions, &file, &to.sha256, self.session.device(), setting);
        eprintln!("admission: {}", escape_lines(&admission.reason));
        self.switches += 1;
        self.loaded = None;
        let result = self.session.reconfigure(&file, to.context, admission, &why);
        drop(file);
        if result.is_ok() {
            self.session.set_prefix_reuse(self.spec.prefix_reuse);
            self.loaded = Some(index);
            eprintln!("model {} loaded in {:.1} s", escape(&to.id), start.elapsed().as_secs_f64());
        }
        let result = result.map_err(|e| format!("switching to model '{}': {e}", to.id));
        // The status page shows the reset (or the failed switch) before the new model's first
        // forward.
        metrics.set_snapshot(self.snapshot());
        result
    }
}

/// `model`'s file loaded again through the descriptor opened at startup into a new snapshot,
/// unchanged, and parsed.
fn read_again(model: &WorkerModel) -> Result<gguf::Gguf, String> {
    model.source.reload().map_err(|e| format!("the model '{}' cannot be loaded: {e}", model.id))
}

/// Runs jobs in arrival order until the queue closes, switching models between jobs.
fn serve_jobs<D: Device>(mut worker: Worker<D>, mut jobs: mpsc::Receiver<Job>, metrics: &Metrics) {
    while let Some(job) = jobs.blocking_recv() {
        if job.events.is_closed() {
            metrics.served.dequeued(job.model, false);
            metrics.generation_cancelled(0);
            continue;
        }
        metrics.served.dequeued(job.model, true);
        metrics.set_generating(true);
        let done = match worker.switch_to(job.model, metrics) {
            Ok(()) => run_job(&mut worker.session, &job, metrics),
            Err(message) => {
                metrics.served.finished(job.model, served_end(&job, 0, 0, 0, None));
                metrics.generation_failed();
                eprintln!("redline: {}", escape_lines(&message));
                Some(Err(message))
            }
        };
        // The snapshot is current before the client hears the generation ended.
        if let Some(loaded) = worker.loaded {
            metrics.served.kv_in_use(loaded, worker.session.held_tokens(), worker.session.context());
        }
        metrics.set_snapshot(worker.snapshot());
        metrics.set_progress(None);
        metrics.set_generating(false);
        if let Some(done) = done {
            let _ = job.events.send(Event::Done(done));
        }
    }
}

/// One generation, its text sent as it comes; the result to send, unless the client has gone.
fn run_job<D: Device>(session: &mut Session<D>, job: &Job, metrics: &Metrics) -> Option<Result<Finished, String>> {
    let before = Forwards::observed(session.controller().observations());
    // Entries of tokens whose text is still held back; empty (never allocated) without logprobs.
    let mut pending = Vec::new();
    let mut progress = Progress::start();
    let mut published = progress.started;
    metrics.set_progress(Some(progress));
    metrics.served.kv_in_use(job.model, job.prompt.len(), session.context());
    let mut last_token: Option<std::time::Instant> = None;
    let generation = session.generate_with(&job.prompt, &job.options, |output| {
        if let Some(record) = output.logprobs {
            pending.push(Entry::new(output.tokenizer, record));
        }
        if output.token.is_some() {
            let now = std::time::Instant::now();
            match last_token {
                None => metrics.served.first_token(job.model, now.saturating_duration_since(job.arrived)),
                Some(last) => metrics.served.inter_token(job.model, now.saturating_duration_since(last)),
            }
            last_token = Some(now);
            progress.token();
            if published.elapsed() >= Progress::PUBLISH_EVERY {
                metrics.set_progress(Some(progress));
                published = std::time::Instant::now();
            }
        }
        if output.text.is_empty() {
            // Nothing to show yet; still notice a client that has gone.
            return if job.events.is_closed() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) };
        }
        let piece = Piece { text: output.text.to_owned(), logprobs: std::mem::take(&mut pending) };
        match job.events.send(Event::Text(piece)) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    });
    Some(match generation {
        Ok(generation) if generation.finish_reason == "cancelled" => {
            let end =
                served_end(job, generation.prompt_tokens, generation.cached_tokens, generation.tokens.len(), None);
            metrics.served.finished(job.model, end);
            metrics.prompt_tokens(generation.prompt_tokens);
            metrics.generation_cancelled(generation.tokens.len());
            return None;
        }
        Ok(generation) => {
            let reason = Some(generation.finish_reason);
            let end =
                served_end(job, generation.prompt_tokens, generation.cached_tokens, generation.tokens.len(), reason);
            metrics.served.finished(job.model, end);
            let forwards = Forwards::observed(session.controller().observations()).since(before);
            metrics.generation_finished(&generation, forwards);
            if !pending.is_empty() {
                // A client gone since is noticed by the send of the outcome as well.
                let _ = job.events.send(Event::Text(Piece { text: String::new(), logprobs: pending }));
            }
            Ok(Finished {
                prompt_tokens: generation.prompt_tokens,
                cached_tokens: generation.cached_tokens,
                completion_tokens: generation.tokens.len(),
                finish_reason: generation.finish_reason,
            })
        }
        Err(error) => {
            metrics.served.finished(job.model, served_end(job, job.prompt.len(), 0, 0, None));
            metrics.generation_failed();
            eprintln!("redline: generation failed: {}", escape_lines(&error.to_string()));
            Err(error.to_string())
        }
    })
}

/// What a request's end adds to its model's vLLM-named series.
fn served_end(
    job: &Job,
    prompt_tokens: usize,
    cached_tokens: usize,
    generated: usize,
    reason: Option<&'static str>,
) -> crate::vllm::Finished {
    crate::vllm::Finished { prompt_tokens, cached_tokens, generated, latency: job.arrived.elapsed(), reason }
}
