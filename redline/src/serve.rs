//! `redline serve`: the flags; the server is the `daemon` crate, on the device `select` opens.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use daemon::{ApiKeys, Config, OpenedDevice};

use crate::model_args::{DeviceArgs, SessionArgs, SessionSetup};
use crate::select::{AnyDevice, select_for_model};

/// Serve models over HTTP with OpenAI's API.
///
/// Endpoints:
///   POST /v1/completions        {"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "stream",
///                               "logprobs" (0..=5), "presence_penalty", "frequency_penalty", "logit_bias", "user"}
///   POST /v1/chat/completions   {"model", "messages": [{"role", "content"}], ..., "max_completion_tokens",
///                               "logprobs": true, "top_logprobs" (0..=20)} with the model's chat template
///   GET  /v1/models             every served model
///   POST /tokenize              {"content", "add_special", "parse_special", "with_pieces", "model"} -> {"tokens"}
///   POST /detokenize            {"tokens", "model"} -> {"content"} (llama.cpp's server's shapes)
///   GET  /health                200 {"status": "ok"}; 503 {"error": {"code": 503, "message": "Loading model", ...}}
///                               while a model loads (after startup's listening line, and at a switch)
///   GET  /metrics               Prometheus text: requests, tokens, decode tok/s, replay routes, queue,
///                               model switches; and per model under vLLM's names (vllm:num_requests_running,
///                               vllm:num_requests_waiting, vllm:kv_cache_usage_perc, time to first token,
///                               inter-token and end-to-end histograms, prefix-cache hits)
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
/// Several models: repeat --model (`--model tiny --model /path/b.gguf`, or `--model smollm2-135m
/// --model gemma-3-270m`, a llama and a gemma3). Each is served under its
/// id, the alias or the file name without `.gguf` (two models with one id are refused); a
/// request's "model" picks one, a request without "model" gets the first, and an id not served
/// is answered 404 `model_not_found` listing the served ids. One model is on the device at a
/// time, the first from startup: a request for another switches between requests (every object
/// of the old model is freed, the new one loads, the replay controller is reset and re-armed by
/// the new model's admission; /redline/status counts the switches). A request for the loaded
/// model does not reload it. A prompt that starts with the previous generation's prompt and
/// answer (a chat's next turn) keeps their KV rows and prefills only the rest
/// (`usage.prompt_tokens_details.cached_tokens` counts the kept ones; --no-prefix-reuse turns
/// it off); nothing is kept across a model switch. --context and the
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
/// The first line on standard output is `listening on http://HOST:PORT`; the first model then
/// loads (/health answers 503 until it is on the device; requests wait in the queue).
/// Browsers: bound to loopback, only loopback host names, IP addresses and --allowed-host names
/// are answered (421 otherwise); an HTTP/1.1 request without Host is 400; the JSON endpoints
/// answer a body that is not `Content-Type: application/json` 415.
/// Each model file is checked at startup as `redline generate` checks it (GGUF structure,
/// hyperparameters, vocabulary sizes, tokenizer, finite weights); a model whose chat template is
/// missing or not ChatML (a base model such as Gemma 3 270M) is served with a warning, its chat
/// completions answering 400 `no_chat_template`.
/// Exit codes: 0 after a signal; 1 the input is invalid (a model file, naming the key or tensor
/// and the value) or the device failed to load it; 2 usage or I/O.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// A model alias (`redline models`: smollm2-135m, gemma-3-270m; `tiny`, `tiny-gemma3`,
    /// `tiny-lfm2` and `tiny-qwen35` are built in) or a path to a `.gguf` file, a llama, gemma3,
    /// lfm2 or qwen35. An alias not yet pulled is pulled first. Repeat to serve several models (one on the device
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
    /// Prefill every prompt whole: do not keep the KV rows of the longest prefix a prompt shares
    /// with the previous generation's tokens. Reuse (the default) changes no output bit; a
    /// model with convolution or recurrent state is reused only when the prompt continues the
    /// whole previous sequence (a chat's next turn).
    #[arg(long)]
    pub no_prefix_reuse: bool,
    /// Also answer requests whose Host header names HOST (port aside); repeatable. Bound to a
    /// loopback address, the server otherwise answers only localhost, *.localhost and IP
    /// addresses (421 for any other name: a web page cannot reach it through DNS rebinding);
    /// bound elsewhere, any name unless this is given.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Testing only: arm a device fault once the first model is loaded (`replay-timeout`,
    /// `queue-fault`): it fires at the first retained token.
    #[arg(long, hide = true, value_parser = parse_fault)]
    pub inject_fault: Option<hal::Injection>,
}

fn parse_fault(s: &str) -> Result<hal::Injection, String> {
    engine::bench::arm::parse_fault(s)
}

/// A timeout in seconds (fractions allowed): more than 0 and at most an hour.
fn parse_seconds(s: &str) -> Result<Duration, String> {
    let seconds: f64 = s.parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(seconds > 0.0 && seconds <= 3600.0) {
        return Err(format!("{s} s is outside (0, 3600]"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string())
}

/// Runs `redline serve` until SIGINT or SIGTERM.
///
/// # Errors
/// Usage and I/O errors (exit 2); model and device failures are reported with exit 1.
pub fn run(args: &Args) -> Result<ExitCode> {
    if args.queue == 0 {
        anyhow::bail!("--queue must be at least 1");
    }
    if args.max_connections == 0 {
        anyhow::bail!("--max-connections must be at least 1");
    }
    let api_keys = ApiKeys::configured(&args.api_keys, &args.api_key_files)?;
    let SessionSetup { kind, target, config, admissions } = args.session.check(&args.device)?;
    let open_device = move || {
        select_for_model(kind, Some(target))
            .map(|(device, reason)| OpenedDevice { kind: device.kind().name(), device, reason })
            .map_err(|e| e.to_string())
    };
    daemon::run::<AnyDevice, _>(Config {
        models: args.models.clone(),
        context: args.session.context,
        replay: config,
        admissions,
        open_device,
        api_keys,
        host: args.host.clone(),
        port: args.port,
        queue: args.queue,
        max_body_bytes: args.max_body_bytes,
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        max_connections: args.max_connections,
        max_prompt_tokens: args.max_prompt_tokens,
        max_tokens_limit: args.max_tokens_limit,
        inject_fault: args.inject_fault,
        prefix_reuse: !args.no_prefix_reuse,
        allowed_hosts: args.allowed_hosts.clone(),
    })
}
