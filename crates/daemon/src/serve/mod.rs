//! `redline serve`: an OpenAI-compatible HTTP server for one model on one device.
//!
//! HTTP runs on a small tokio runtime; generation runs on one thread that owns the model
//! (`worker`), taking requests from a bounded queue in arrival order.

mod error;
mod metrics;
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

use crate::model_args::{ModelArgs, OpenedModel};
use routes::{AppState, Limits};
use status::ServedModel;
use worker::LoadSpec;

/// Serve a model over HTTP with OpenAI's API.
///
/// Endpoints:
///   POST /v1/completions        {"prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "stream"}
///   POST /v1/chat/completions   {"messages": [{"role", "content"}], ...} with the model's chat template
///   GET  /v1/models             the one served model
///   GET  /health                {"status": "ok"}
///   GET  /metrics               Prometheus text: requests, tokens, decode tok/s, replay routes, queue
///   GET  /redline/status        route proof (controller state, fallback reason, tape, submission,
///                               replay positions), device, model path and sha256, admission
///
/// `stream: true` answers with server-sent events ending in `data: [DONE]`. `n` must be 1;
/// `temperature` 0 is greedy (default 1); without `max_tokens` a request may generate up to
/// --max-tokens-limit tokens or what the context leaves. Requests are generated one at a time in
/// arrival order; a full queue answers 503 with Retry-After. A client that disconnects cancels
/// its generation. SIGINT/SIGTERM stop accepting, finish every request, and exit 0.
/// The first line on standard output is `listening on http://HOST:PORT`.
/// Exit codes: 0 after a signal, 1 the model or device failed to load, 2 usage or I/O.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
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
    /// Testing only: arm a device fault once the model is loaded (`replay-timeout`,
    /// `queue-fault`): it fires at the first retained token.
    #[arg(long, hide = true, value_parser = parse_fault)]
    pub inject_fault: Option<hal::Injection>,
}

fn parse_fault(s: &str) -> Result<hal::Injection, String> {
    crate::bench::arm::parse_fault(s)
}

/// Runs `redline serve` until SIGINT or SIGTERM.
///
/// # Errors
/// Usage and I/O errors (exit 2); model and device failures are reported with exit 1.
pub fn run(args: &Args) -> Result<ExitCode> {
    if args.queue == 0 {
        bail!("--queue must be at least 1");
    }
    let opened = args.model.open()?;
    let context = opened.context;
    let limits = limits(args, context)?;
    let tokenizer = match engine::model::tokenizer_from_gguf(&opened.file) {
        Ok(tokenizer) => tokenizer,
        Err(error) => {
            eprintln!("redline: {error}");
            return Ok(ExitCode::from(1));
        }
    };
    let template = chat_template(&opened.file);
    let model = served_model(&opened)?;
    drop(opened.file);
    let metrics = Arc::new(metrics::Metrics::default());
    let (queue, jobs) = tokio::sync::mpsc::channel(args.queue);
    // The generation thread opens the file again: the map is not shared across threads.
    let spec = LoadSpec {
        path: opened.resolved.path,
        sha256: model.sha256.clone(),
        kind: opened.kind,
        target: opened.target,
        context,
        config: opened.config,
        admissions: opened.admissions,
        inject_fault: args.inject_fault,
    };
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
        model,
        device,
        tokenizer,
        template,
        limits,
        serial: AtomicU64::new(0),
    };
    serve(args, state)?;
    // Every handler (and so every queue sender) is gone: the thread ends after its last job.
    thread.join().map_err(|_| anyhow::anyhow!("the generation thread panicked"))?;
    eprintln!("stopped");
    Ok(ExitCode::SUCCESS)
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

/// The limits, checked against the context.
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
    Ok(Limits { body_bytes: args.max_body_bytes, prompt_tokens, max_tokens, context })
}

/// The model's chat template, or `None` (chat completions then answer 400) with a warning.
fn chat_template(file: &gguf::Gguf) -> Option<ChatTemplate> {
    let template = file.get("tokenizer.chat_template").and_then(|_| file.str("tokenizer.chat_template").ok());
    let Some(template) = template else {
        eprintln!("warning: the model has no chat template; /v1/chat/completions will answer 400");
        return None;
    };
    match ChatTemplate::from_gguf_template(template) {
        Ok(template) => Some(template),
        Err(error) => {
            eprintln!("warning: {error}; /v1/chat/completions will answer 400");
            None
        }
    }
}

/// The model as clients and the status page see it. An alias's file was just verified against
/// its pinned digest; a path is hashed here.
fn served_model(opened: &OpenedModel) -> Result<ServedModel> {
    let sha256 = opened.sha256()?;
    let resolved = &opened.resolved;
    Ok(ServedModel {
        id: resolved.entry.map_or_else(|| model_id(&resolved.path), |entry| entry.alias.to_owned()),
        path: resolved.path.display().to_string(),
        sha256,
        created: unix_seconds(),
    })
}

/// A path's model id: the file name without `.gguf`.
fn model_id(path: &std::path::Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
