//! `redline serve`: an OpenAI-compatible HTTP server for one or more models on one device.
//!
//! HTTP runs on a small tokio runtime; generation runs on one thread that owns the device and
//! the loaded model (`worker`), taking requests from a bounded queue in arrival order and
//! switching models between requests when one asks for another served model.

mod auth;
mod body;
mod catalog;
mod conn;
mod error;
mod fields;
mod history;
mod listen;
mod logprobs;
mod metrics;
mod model_file;
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
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokenizer::ChatTemplate;

use crate::model_args::{DeviceArgs, ModelFile, SessionArgs, SessionSetup};
use catalog::{Catalog, Limits, Offered, ServedModel};
use model_file::ModelSource;
use routes::AppState;
use worker::{LoadSpec, WorkerModel};

/// The OpenAI endpoint a request body is for ([`check_request_body`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestEndpoint {
    /// `POST /v1/completions`.
    Completions,
    /// `POST /v1/chat/completions`.
    Chat,
}

/// Parses `body` as the server parses a request to `endpoint` before it reads the prompt: `Ok`,
/// or the 400's field (when one is at fault) and message. It never panics (the fuzz target
/// `serve_request` holds it to that).
///
/// # Errors
/// The field at fault, if any, and the message the server answers with.
pub fn check_request_body(endpoint: RequestEndpoint, body: &[u8]) -> Result<(), (Option<String>, String)> {
    let result = match endpoint {
        RequestEndpoint::Completions => request::completion(body).map(|_| ()),
        RequestEndpoint::Chat => request::chat(body).map(|_| ()),
    };
    result.map_err(|error| (error.param, error.message))
}

/// Serve models over HTTP with OpenAI's API.
///
/// Endpoints:
///   POST /v1/completions        {"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "stream",
///                               "logprobs" (0..=5), "presence_penalty", "frequency_penalty", "logit_bias", "user"}
///   POST /v1/chat/completions   {"model", "messages": [{"role", "content"}], ..., "max_completion_tokens",
///                               "logprobs": true, "top_logprobs" (0..=20)} with the model's chat template
///   GET  /v1/models             every served model
///   GET  /health                {"status": "ok"}
///   GET  /metrics               Prometheus text: requests, tokens, decode tok/s, replay routes, queue,
///                               model switches
///   GET  /redline/status        route proof (controller state, fallback reason, reconfiguration, tape,
///                               submission, replay positions), device, the loaded model's path and
///                               sha256 and admission, every served model, the model switches, the
///                               last 120 finished generations (decode tok/s, tokens, route), the
///                               one running now (tokens so far, decode tok/s)
///   GET  /                      a web page: chat with the served models, and the live route panel
///                               (its files under /assets/, embedded in the binary)
///
/// Log-probabilities are the log-softmax of the logits the sampler saw: after the penalties and
/// `logit_bias`, before temperature and top-p; the most likely first (equal ones by token id, so
/// at temperature 0 the first is the generated token). Every generated token has an entry, the
/// stop string's and the end-of-sequence token's too, though their text is not in the answer (a
/// stream sends those in a last chunk of empty text). `presence_penalty`, `frequency_penalty`
/// ([-2, 2]) and `logit_bias` ({"token id": [-100, 100]}, at most 1024) change the logits as
/// OpenAI documents. Fields that cannot change the output (`user`, `metadata`, `store`,
/// `service_tier`, `parallel_tool_calls`) are accepted; one that would and is not implemented
/// (`tools`, `tool_choice`, `functions`, `response_format` but text, `best_of` > 1, `echo`,
/// `suffix`, `audio`, `modalities` but text, `prediction`, ...) is a 400 naming it, and so is a
/// field the endpoint does not define (`unknown_parameter`).
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
/// `temperature` 0 is greedy (default 1); without `max_tokens` a completion generates up to 16
/// tokens and a chat completion up to what the context leaves, both at most --max-tokens-limit.
/// Requests are generated one at a time in
/// arrival order; a full queue answers 503 with Retry-After. A client that disconnects cancels
/// its generation. SIGINT/SIGTERM stop accepting, finish every request, and exit 0.
///
/// Limits: --max-connections open connections (more are answered 503 at once); a request head
/// must arrive within --header-timeout, a body within --body-timeout (408); a Content-Length over
/// --max-body-bytes is answered 413 before the body is read.
/// Access: with --api-key, REDLINE_API_KEY or --api-key-file, /v1/*, /metrics and /redline/*
/// need `Authorization: Bearer KEY` (401 otherwise); /health stays open. Listening beyond
/// loopback without a key prints a warning.
/// Model files are read, not mapped: the loaded model runs from the device whatever happens to
/// its file; a switch to a model whose file changed since startup is answered 503.
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
    #[arg(long = "model", value_name = "MODEL", default_value = model_files::DEFAULT_ALIAS)]
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
    /// Request bodies larger than this are answered 413 (a larger Content-Length at once,
    /// before the body is read).
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Seconds a client has to send a request's head (its request line and headers), counted
    /// from the connection's start or its previous response: a connection that takes longer,
    /// or sends nothing, is closed. It is also how long an idle keep-alive connection stays
    /// open.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    pub header_timeout: Duration,
    /// Seconds a client has to send a request's whole body once its head has arrived; a
    /// slower one is answered 408 and closed.
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = parse_seconds)]
    pub body_timeout: Duration,
    /// Open connections at most; more are answered 503 and closed at once. The server raises
    /// its open-file limit (ulimit -n) to fit them, up to the hard limit.
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,
    /// Require this API key (`Authorization: Bearer KEY`) on /v1/*, /metrics and /redline/*;
    /// repeat for several. /health and the page stay open. Without it, the environment
    /// variable REDLINE_API_KEY gives the key (one), if set.
    #[arg(long = "api-key", value_name = "KEY")]
    pub api_keys: Vec<String>,
    /// A file of API keys, one a line (blank lines and lines starting with # are skipped);
    /// repeatable, and combined with --api-key.
    #[arg(long = "api-key-file", value_name = "FILE")]
    pub api_key_files: Vec<std::path::PathBuf>,
    /// Prompt tokens at most [default: the context less one].
    #[arg(long)]
    pub max_prompt_tokens: Option<usize>,
    /// `max_tokens` at most, and the most a request without one generates (a completion at
    /// most 16 tokens, a chat completion what the context leaves) [default: 512, or the context
    /// when smaller].
    #[arg(long)]
    pub max_tokens_limit: Option<u32>,
    /// Testing only: arm a device fault once the first model is loaded (`replay-timeout`,
    /// `queue-fault`): it fires at the first retained token.
    #[arg(long, hide = true, value_parser = parse_fault)]
    pub inject_fault: Option<hal::Injection>,
}

fn parse_fault(s: &str) -> Result<hal::Injection, String> {
    engine::bench::arm::parse_fault(s)
}

/// The `--api-key` values, or `REDLINE_API_KEY` when none is given.
fn key_flags(args: &Args) -> Result<Vec<String>> {
    if !args.api_keys.is_empty() {
        return Ok(args.api_keys.clone());
    }
    match std::env::var("REDLINE_API_KEY") {
        Ok(key) => Ok(vec![key]),
        Err(std::env::VarError::NotPresent) => Ok(Vec::new()),
        Err(std::env::VarError::NotUnicode(_)) => bail!("REDLINE_API_KEY is not valid UTF-8"),
    }
}

/// A timeout in seconds (fractions allowed): more than 0 and at most an hour.
fn parse_seconds(s: &str) -> Result<Duration, String> {
    let seconds: f64 = s.parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(seconds > 0.0 && seconds <= 3600.0) {
        return Err(format!("{s} s is outside (0, 3600]"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string())
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
    if args.max_connections == 0 {
        bail!("--max-connections must be at least 1");
    }
    let api_keys = auth::ApiKeys::load(&key_flags(args)?, &args.api_key_files)?;
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
        body_limits: body::BodyLimits { bytes: args.max_body_bytes, timeout: args.body_timeout },
        api_keys,
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
    let mut source = None;
    let ModelFile { resolved, file, params, context } = args.session.open_model_with(spec, |path| {
        let (opened, bytes) = ModelSource::open(path)?;
        source = Some(opened);
        Ok(gguf::Gguf::parse(bytes)?)
    })?;
    let source = Arc::new(source.context("the model file was not read")?);
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
    let sha256 = source.sha256().to_owned();
    if let Some(entry) = resolved.entry
        && entry.gguf_sha256 != sha256
    {
        return Err(OpenFailure::Model(format!(
            "{}: SHA-256 {sha256}, not the {} pinned for '{}': the cached file is damaged; `redline pull {}` \
             fetches it again",
            resolved.path.display(),
            entry.gguf_sha256,
            entry.alias,
            entry.alias
        )));
    }
    let path = resolved.path.display().to_string();
    let model = ServedModel { id: id.clone(), path, sha256: sha256.clone(), created: unix_seconds() };
    // Only the first model is loaded at startup; the others are read again when a request
    // switches to them, so their bytes are not held meanwhile.
    let file = earlier.is_empty().then_some(file);
    Ok(Opened {
        spec: spec.to_owned(),
        offered: Offered { model, tokenizer, template, limits, source: Arc::clone(&source) },
        worker: WorkerModel { id, path: resolved.path, file, source, sha256, context },
    })
}

/// Binds, prints the address, and serves until a signal and the drain that follows.
fn serve(args: &Args, state: AppState) -> Result<()> {
    let settings = listen::Settings {
        connections_max: listen::fit_descriptors(args.max_connections),
        header_timeout: args.header_timeout,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the HTTP runtime")?;
    runtime.block_on(async {
        let listener = listen::bind(&args.host, args.port)
            .await
            .with_context(|| format!("binding {}:{}", args.host, args.port))?;
        let address: SocketAddr = listener.local_addr()?;
        let signal = shutdown::install().context("installing the SIGINT/SIGTERM handlers")?;
        if !address.ip().is_loopback() && !state.api_keys.required() {
            eprintln!(
                "warning: listening on {address}, which other machines may reach, without an API key: anyone who \
                 can reach it can use the model (set --api-key, REDLINE_API_KEY or --api-key-file)"
            );
        }
        let app = routes::router(Arc::new(state));
        let mut stdout = std::io::stdout();
        writeln!(stdout, "listening on http://{address}")?;
        stdout.flush()?;
        eprintln!(
            "serving {address} (queue {}, at most {} connections, header timeout {:?}, body timeout {:?})",
            args.queue, settings.connections_max, settings.header_timeout, args.body_timeout
        );
        listen::serve(listener, app, settings, signal).await;
        Ok(())
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

/// The wall clock since the Unix epoch (zero if the clock is before it): response ids and
/// `created`, history times, fresh seeds.
pub(crate) fn since_epoch() -> Duration {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default()
}

fn unix_seconds() -> u64 {
    since_epoch().as_secs()
}
