//! `redline serve`: an OpenAI-compatible HTTP server for one or more models on one device.
//!
//! HTTP runs on a small tokio runtime; generation runs on one thread that owns the device and
//! the loaded model (`worker`), taking requests from a bounded queue in arrival order and
//! switching models between requests when one asks for another served model.

mod catalog;
mod error;
mod history;
mod metrics;
mod page;
mod request;
mod response;
mod routes;
mod shutdown;
mod status;
mod stream;
mod worker;

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use anyhow::{Context as _, Result, bail};
use tokenizer::ChatTemplate;

use crate::model_args::{DeviceArgs, ModelFile, SessionArgs, SessionSetup};
use catalog::{Catalog, Limits, Offered, ServedModel};
use routes::AppState;
use worker::{LoadSpec, WorkerModel};

/// Serve models over HTTP with OpenAI's API.
///
/// Endpoints:
///   POST /v1/completions        {"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "stream"}
///   POST /v1/chat/completions   {"model", "messages": [{"role", "content"}], ...} with the model's chat template
///   GET  /v1/models             every served model
///   GET  /health                {"status": "ok"}
///   GET  /metrics               Prometheus text: requests, tokens, decode tok/s, replay routes, queue,
///                               model switches
///   GET  /redline/status        route proof (controller state, fallback reason, reconfiguration, tape,
///                               submission, replay positions), device, the loaded model's path and
///                               sha256 and admission, every served model, the model switches, the
///                               last 120 finished generations (decode tok/s, tokens, route)
///   GET  /                      a web page: chat with the served models, and the live route panel
///                               (its files under /assets/, embedded in the binary)
///
/// Several models: repeat --model (`--model tiny --model /path/b.gguf`). Each is served under its
/// id, the alias or the file name without `.gguf` (two models with one id are refused); a
/// request's "model" picks one, a request without "model" gets the first, and an id not served
/// is answered 404 `model_not_found` listing the served ids. One model is on the device at a
/// time, the first from startup: a request for another switches between requests (every object
/// of the old model is freed, the new one loads, the replay controller is reset and re-armed by
/// the new model's admission; /redline/status counts the switches). A request for the loaded
/// model does not reload it, and every request starts from position 0. --context and the
/// --max-* limits apply to each model, checked against each one's trained context.
///
/// `stream: true` answers with server-sent events ending in `data: [DONE]`. `n` must be 1;
/// `temperature` 0 is greedy (default 1); without `max_tokens` a request may generate up to
/// --max-tokens-limit tokens or what the context leaves. Requests are generated one at a time in
/// arrival order; a full queue answers 503 with Retry-After. A client that disconnects cancels
/// its generation. SIGINT/SIGTERM stop accepting, finish every request, and exit 0.
/// The first line on standard output is `listening on http://HOST:PORT`.
/// Each model file is checked at startup as `redline generate` checks it (GGUF structure,
/// hyperparameters, vocabulary sizes, tokenizer, finite weights); a model whose chat template is
/// missing or not ChatML is served with a warning, its chat completions answering 400.
/// Exit codes: 0 after a signal; 1 the input is invalid (a model file, naming the key or tensor
/// and the value) or the device failed to load it; 2 usage or I/O.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// A model alias (`redline models`; `tiny` is built in) or a path to a `.gguf` file. An
    /// alias not yet pulled is pulled first. Repeat to serve several models (one on the device
    /// at a time; a request's "model" picks one, the first by default).
    #[arg(long = "model", value_name = "MODEL", default_value = crate::models::DEFAULT_ALIAS)]
    pub models: Vec<String>,
    /// The device.
    #[command(flatten)]
    pub device: DeviceArgs,
    /// The KV cache (`--context` applies to every model) and the replay route.
    #[command(flatten)]
    pub session: SessionArgs,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0: any free port; the first output line says which).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Requests that may wait while one generates; more are answered 503.
    #[arg(long, default_value_t = 16)]
    pub queue: usize,
    /// Request bodies larger than this are answered 413.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Prompt tokens at most [default: the context less one].
    #[arg(long)]
    pub max_prompt_tokens: Option<usize>,
    /// `max_tokens` at most, and the default when a request gives none [default: 512, or the
    /// context when smaller].
    #[arg(long)]
    pub max_tokens_limit: Option<u32>,
    /// Testing only: arm a device fault once the first model is loaded (`replay-timeout`,
    /// `queue-fault`): it fires at the first retained token.
    #[arg(long, hide = true, value_parser = parse_fault)]
    pub inject_fault: Option<hal::Injection>,
}

fn parse_fault(s: &str) -> Result<hal::Injection, String> {
    crate::bench::arm::parse_fault(s)
}

/// A served model, opened at startup: what the handlers need, and what the worker loads.
struct Opened {
    /// The `--model` argument.
    spec: String,
    offered: Offered,
    worker: WorkerModel,
}

/// Why a served model could not be opened.
enum OpenFailure {
    /// An error whose chain says its exit code ([`crate::exit`]): usage or I/O (exit 2), or a
    /// model file that is invalid (exit 1).
    Error(anyhow::Error),
    /// The model is unusable (exit 1): the message.
    Model(String),
}

impl From<anyhow::Error> for OpenFailure {
    fn from(error: anyhow::Error) -> Self {
        Self::Error(error)
    }
}

/// Runs `redline serve` until SIGINT or SIGTERM.
///
/// # Errors
/// Usage and I/O errors (exit 2); model and device failures are reported with exit 1.
pub fn run(args: &Args) -> Result<ExitCode> {
    if args.queue == 0 {
        bail!("--queue must be at least 1");
    }
    let setup = args.session.check(&args.device)?;
    let mut opened: Vec<Opened> = Vec::with_capacity(args.models.len());
    for spec in &args.models {
        match open(args, spec, &opened) {
            Ok(model) => opened.push(model),
            Err(OpenFailure::Error(error)) => return Err(error),
            Err(OpenFailure::Model(message)) => {
                eprintln!("redline: --model {spec}: {message}");
                return Ok(ExitCode::from(1));
            }
        }
    }
    let (offered, models): (Vec<Offered>, Vec<WorkerModel>) = opened.into_iter().map(|o| (o.offered, o.worker)).unzip();
    let metrics = Arc::new(metrics::Metrics::default());
    let (queue, jobs) = tokio::sync::mpsc::channel(args.queue);
    let SessionSetup { kind, target, config, admissions } = setup;
    let spec = LoadSpec { models, kind, target, config, admissions, inject_fault: args.inject_fault };
    let (thread, device) = match worker::spawn(spec, jobs, Arc::clone(&metrics)) {
        Ok(started) => started,
        Err(message) => {
            eprintln!("redline: {message}");
            return Ok(ExitCode::from(1));
        }
    };
    let state = AppState {
        queue,
        queue_capacity: args.queue,
        metrics,
        catalog: Catalog::new(offered),
        device,
        body_bytes: args.max_body_bytes,
        serial: AtomicU64::new(0),
    };
    serve(args, state)?;
    // Every handler (and so every queue sender) is gone: the thread ends after its last job.
    thread.join().map_err(|_| anyhow::anyhow!("the generation thread panicked"))?;
    eprintln!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// Opens `--model spec`: resolves it, checks its llama parameters, refuses an id one of
/// `earlier` serves, checks the limits against its context, reads its tokenizer and chat
/// template, checks its weights finite (so that a model that cannot load fails at startup, not
/// at the first request that switches to it) and hashes it.
fn open(args: &Args, spec: &str, earlier: &[Opened]) -> Result<Opened, OpenFailure> {
    let ModelFile { resolved, file, params, context } = args.session.open_model(spec)?;
    let id = resolved.entry.map_or_else(|| catalog::path_id(&resolved.path), |entry| entry.alias.to_owned());
    if let Some(other) = earlier.iter().find(|o| o.offered.model.id == id) {
        return Err(OpenFailure::Error(anyhow::anyhow!(
            "--model {} and --model {spec} are both served as '{id}': each served model needs its own id \
             (its alias, or its file name without .gguf)",
            other.spec
        )));
    }
    let limits = limits(args, context).with_context(|| format!("--model {spec}"))?;
    let tokenizer = engine::model::tokenizer_from_gguf(&file).map_err(|e| OpenFailure::Model(e.to_string()))?;
    params.check_weights(&file).map_err(|e| OpenFailure::Model(e.to_string()))?;
    let template = chat_template(&id, &file);
    let sha256 = crate::model_args::model_sha256(&resolved)?;
    let path = resolved.path.display().to_string();
    let model = ServedModel { id: id.clone(), path, sha256: sha256.clone(), created: unix_seconds() };
    Ok(Opened {
        spec: spec.to_owned(),
        offered: Offered { model, tokenizer, template, limits },
        worker: WorkerModel { id, path: resolved.path, file, sha256, context },
    })
}

/// Binds, prints the address, and serves until a signal and the drain that follows.
fn serve(args: &Args, state: AppState) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the HTTP runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
            .await
            .with_context(|| format!("binding {}:{}", args.host, args.port))?;
        let address: SocketAddr = listener.local_addr()?;
        let signal = shutdown::install().context("installing the SIGINT/SIGTERM handlers")?;
        let app = routes::router(Arc::new(state));
        let mut stdout = std::io::stdout();
        writeln!(stdout, "listening on http://{address}")?;
        stdout.flush()?;
        eprintln!("serving {} (queue {})", address, args.queue);
        axum::serve(listener, app).with_graceful_shutdown(signal).await.context("serving HTTP")
    })
}

/// The limits, checked against a model's context.
fn limits(args: &Args, context: u32) -> Result<Limits> {
    let context_tokens = usize::try_from(context)?;
    if context < 2 {
        bail!("--context {context}: at least 2 positions (one prompt token and one new token)");
    }
    let prompt_tokens = args.max_prompt_tokens.unwrap_or(context_tokens - 1);
    if prompt_tokens == 0 || prompt_tokens >= context_tokens {
        bail!("--max-prompt-tokens {prompt_tokens}: must be in 1..{context} (the context)");
    }
    let max_tokens = args.max_tokens_limit.unwrap_or(512.min(context - 1));
    if max_tokens == 0 || max_tokens >= context {
        bail!("--max-tokens-limit {max_tokens}: must be in 1..{context} (the context)");
    }
    Ok(Limits { prompt_tokens, max_tokens, context })
}

/// Model `id`'s chat template, or `None` (its chat completions then answer 400) with a warning
/// naming the key and why: absent, not a string, or not a template this build renders (with the
/// byte offset where it departs from the supported ones). Such a model is still served for
/// completions.
fn chat_template(id: &str, file: &gguf::Gguf) -> Option<ChatTemplate> {
    const KEY: &str = "tokenizer.chat_template";
    let unusable = |why: &dyn std::fmt::Display| {
        eprintln!("warning: the model '{id}'{why}; /v1/chat/completions will answer 400 for it");
        None
    };
    if file.get(KEY).is_none() {
        return unusable(&format!(" has no chat template ({KEY})"));
    }
    let template = match file.str(KEY) {
        Ok(template) => template,
        Err(error) => return unusable(&format!(": {error}")),
    };
    match ChatTemplate::from_gguf_template(template) {
        Ok(template) => Some(template),
        Err(error) => unusable(&format!(": {KEY}: {error}")),
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
