//! The Redline server (`redline serve`): an OpenAI-compatible HTTP server for one or more models
//! on one device, with the web page, the metrics and the route status.
//!
//! HTTP runs on a small tokio runtime; generation runs on one thread that owns the device and
//! the loaded model (`worker`), taking requests from a bounded queue in arrival order and
//! switching models between requests when one asks for another served model. The device is
//! opened on that thread by the caller's opener ([`Config::open_device`]): the server is generic
//! over the HAL and names no backend. Parsing the command line is the `redline` binary's.

mod auth;
mod body;
mod catalog;
mod clock;
mod config;
mod conn;
mod error;
mod fields;
mod guard;
mod history;
mod json;
pub mod keys;
mod listen;
mod logprobs;
mod metrics;
mod model_file;
mod page;
mod readiness;
mod request;
mod response;
mod routes;
mod shutdown;
mod startup;
mod state;
mod status;
mod stream;
mod tokenize;
mod vllm;
mod worker;

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use hal::{Device, FaultInjection};
use infile::{escape, escape_lines};

use catalog::{Catalog, Offered};
use startup::{OpenFailure, Opened, open};
use state::AppState;
use worker::{LoadSpec, WorkerModel};

pub use config::Config;
pub use keys::ApiKeys;
pub use worker::OpenedDevice;

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

/// Runs the server until SIGINT or SIGTERM: opens every model, loads the first on the device
/// `config.open_device` opens, listens, and serves.
///
/// # Errors
/// Usage and I/O errors (exit 2), and a model file that is invalid (exit 1: its error says so);
/// a model or device that cannot run is reported here and is exit 1.
pub fn run<D, F>(config: Config<F>) -> Result<ExitCode>
where
    D: Device + FaultInjection + 'static,
    F: FnOnce() -> Result<OpenedDevice<D>, String> + Send + 'static,
{
    if config.queue == 0 {
        bail!("--queue must be at least 1");
    }
    if config.max_connections == 0 {
        bail!("--max-connections must be at least 1");
    }
    let mut opened: Vec<Opened> = Vec::with_capacity(config.models.len());
    for spec in &config.models {
        match open(&config, spec, &opened) {
            Ok(model) => opened.push(model),
            Err(OpenFailure::Error(error)) => return Err(error),
            Err(OpenFailure::Model(message)) => {
                eprintln!("redline: --model {}: {}", escape(spec), escape_lines(&message));
                return Ok(ExitCode::from(1));
            }
        }
    }
    let (offered, models): (Vec<Offered>, Vec<WorkerModel>) = opened.into_iter().map(|o| (o.offered, o.worker)).unzip();
    let metrics = Arc::new(metrics::Metrics::new(models.iter().map(|m| m.id.clone()).collect()));
    if let Some(first) = models.first() {
        metrics.readiness.set_loading(&first.id);
    }
    let (queue, jobs) = tokio::sync::mpsc::channel(config.queue);
    let Config { replay, admissions, open_device, api_keys, inject_fault, prefix_reuse, allowed_hosts, .. } = config;
    let listening = Listening {
        host: config.host,
        port: config.port,
        queue: config.queue,
        body_timeout: config.body_timeout,
        header_timeout: config.header_timeout,
        max_connections: config.max_connections,
    };
    let spec = LoadSpec { models, config: replay, admissions, inject_fault, prefix_reuse };
    let (failed_tx, failed) = tokio::sync::oneshot::channel();
    let (thread, device) = match worker::spawn(spec, open_device, jobs, Arc::clone(&metrics), failed_tx) {
        Ok(started) => started,
        Err(message) => {
            eprintln!("redline: {}", escape_lines(&message));
            return Ok(ExitCode::from(1));
        }
    };
    let state = AppState {
        queue,
        queue_capacity: listening.queue,
        metrics,
        catalog: Catalog::new(offered),
        device,
        body_limits: state::BodyLimits { bytes: config.max_body_bytes, timeout: listening.body_timeout },
        api_keys,
        serial: AtomicU64::new(0),
        hosts: guard::Hosts::new(allowed_hosts),
    };
    let load_failure = serve(&listening, state, failed)?;
    // Every handler (and so every queue sender) is gone: the thread ends after its last job.
    thread.join().map_err(|_| anyhow::anyhow!("the generation thread panicked"))?;
    if let Some(message) = load_failure {
        eprintln!("redline: {}", escape_lines(&message));
        return Ok(ExitCode::from(1));
    }
    eprintln!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// Where and how the server listens.
#[derive(Debug)]
struct Listening {
    host: String,
    port: u16,
    queue: usize,
    header_timeout: Duration,
    body_timeout: Duration,
    max_connections: usize,
}

/// Binds, prints the address, and serves until a signal, or until the first model fails to
/// load (its message is returned), and the drain that follows.
fn serve(
    args: &Listening,
    mut state: AppState,
    failed: tokio::sync::oneshot::Receiver<String>,
) -> Result<Option<String>> {
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
        state.hosts.bound(address.ip().is_loopback());
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
        let failure = std::sync::Mutex::new(None);
        let stop = async {
            tokio::select! {
                () = signal => {}
                message = failed => {
                    // A dropped sender: the thread ended without a load failure (it serves).
                    let Ok(message) = message else { return std::future::pending().await };
                    eprintln!("the first model failed to load: not accepting new connections");
                    *failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(message);
                }
            }
        };
        listen::serve(listener, app, settings, stop).await;
        Ok(failure.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
    })
}
