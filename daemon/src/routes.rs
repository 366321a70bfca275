//! The HTTP routes: OpenAI endpoints, health, metrics, route status and the web page.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use engine::model::GenerateOptions;
use tokenizer::SamplerConfig;
use tokio::sync::mpsc;

use super::auth;
use super::body;
use super::catalog::Offered;
use super::conn;
use super::error::ApiError;
use super::guard;
use super::metrics::Metrics;
use super::request::{self, Sampling};
use super::response::{Endpoint, Envelope};
use super::state::AppState;
use super::status;
use super::stream;
use super::worker::{Event, Job};

/// The router with every endpoint, the body limit, the 404/405 error objects and request counting.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/tokenize", post(super::tokenize::tokenize))
        .route("/detokenize", post(super::tokenize::detokenize))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/redline/status", get(status_page))
        .merge(super::page::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.body_limits.bytes))
        // Innermost first: the handler is dropped when its client goes; a body is read after
        // its content type and the key are checked, the key after the Host; every answer is
        // counted.
        .layer(middleware::from_fn(conn::cancel_when_gone))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), body::read_body))
        .layer(middleware::from_fn(guard::require_json))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), auth::require_key))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), guard::check_host))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), count_request))
        .with_state(state)
}

/// Counts every request by its route and status; one whose connection ended before its answer
/// (hyper drops the handler when it sees the client go) counts as
/// [`conn::CLIENT_CLOSED_REQUEST`].
async fn count_request(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    /// Counts the request when dropped: with its status once answered, 499 if never.
    struct Count<'a> {
        metrics: &'a Metrics,
        endpoint: String,
        status: u16,
    }
    impl Drop for Count<'_> {
        fn drop(&mut self) {
            self.metrics.request(&self.endpoint, self.status);
        }
    }
    let endpoint = request.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str).to_owned();
    let mut count = Count { metrics: &state.metrics, endpoint, status: conn::CLIENT_CLOSED_REQUEST };
    let response = next.run(request).await;
    count.status = response.status().as_u16();
    response
}

async fn not_found(request: Request) -> ApiError {
    ApiError::request(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no route {} {}: see `redline serve --help` for the endpoints", request.method(), request.uri().path()),
    )
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::request(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} is not allowed on {}", request.method(), request.uri().path()),
    )
}

async fn health(State(state): State<Arc<AppState>>) -> Response {
    state.metrics.readiness.health()
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    let data: Vec<serde_json::Value> = state
        .catalog
        .models()
        .iter()
        .map(|offered| {
            let model = &offered.model;
            serde_json::json!({"id": model.id, "object": "model", "created": model.created, "owned_by": "redline"})
        })
        .collect();
    axum::Json(serde_json::json!({"object": "list", "data": data})).into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let text = state.metrics.render(state.queue_gauge());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

async fn status_page(State(state): State<Arc<AppState>>) -> Response {
    let gauge = state.queue_gauge();
    axum::Json(status::report(&state.catalog, &state.device, &state.metrics, gauge)).into_response()
}

/// The body, or the error its rejection (too large, unreadable) calls for.
pub(crate) fn body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::request(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request_too_large",
            "the request body is larger than --max-body-bytes allows",
        ),
        status => ApiError::request(status, "invalid_body", rejection.body_text()),
    })
}

async fn completions(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request = request::completion(&body(raw)?)?;
    let (model, offered) = state.catalog.select(request.model.as_deref())?;
    let prompt = offered.tokenizer.encode_special(&request.prompt, true, false);
    let job = Queued { model, offered, endpoint: Endpoint::Completions, prompt_param: "prompt" };
    generate(&state, job, prompt, request.sampling).await
}

async fn chat_completions(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request = request::chat(&body(raw)?)?;
    let (model, offered) = state.catalog.select(request.model.as_deref())?;
    let Some(template) = &offered.template else {
        return Err(ApiError::request(
            StatusCode::BAD_REQUEST,
            "no_chat_template",
            format!("the model '{}' has no recognised chat template: use /v1/completions", offered.model.id),
        ));
    };
    let prompt = template.encode(&offered.tokenizer, &request.messages, true);
    let job = Queued { model, offered, endpoint: Endpoint::Chat, prompt_param: "messages" };
    generate(&state, job, prompt, request.sampling).await
}

/// `max_tokens` of a completion that gives none (OpenAI's default).
pub(crate) const COMPLETION_MAX_TOKENS: u32 = 16;

/// Where a request goes: the served model (its index and entry), the endpoint, and the field
/// the prompt came from.
struct Queued<'a> {
    model: usize,
    offered: &'a Offered,
    endpoint: Endpoint,
    prompt_param: &'static str,
}

/// Checks the model's limits, queues the job and answers (whole or streamed).
async fn generate(
    state: &AppState,
    queued: Queued<'_>,
    prompt: Vec<u32>,
    sampling: Sampling,
) -> Result<Response, ApiError> {
    let Queued { model, offered, endpoint, prompt_param } = queued;
    model_loadable(state, model, offered)?;
    let options = options(offered, endpoint, prompt.len(), prompt_param, &sampling)?;
    let (events, mut received) = mpsc::unbounded_channel();
    let job = Job { model, prompt, options, events, arrived: std::time::Instant::now() };
    // Counted before it is sent: the generation thread may take it at once.
    state.metrics.served.queued(model);
    state.queue.try_send(job).inspect_err(|_| state.metrics.served.dequeued(model, false)).map_err(
        |error| match error {
            mpsc::error::TrySendError::Full(_) => ApiError::queue_full(state.queue_capacity),
            mpsc::error::TrySendError::Closed(_) => {
                ApiError::server(StatusCode::SERVICE_UNAVAILABLE, "not_generating", "the generation thread has stopped")
            }
        },
    )?;
    let envelope = Envelope::new(endpoint, state.serial.fetch_add(1, Ordering::Relaxed), &offered.model.id);
    let logprobs = sampling.logprobs.is_some();
    if sampling.stream {
        let extras = stream::Extras { include_usage: sampling.include_usage, logprobs };
        return Ok(stream::response(envelope, received, extras));
    }
    let (mut text, mut entries) = (String::new(), Vec::new());
    while let Some(event) = received.recv().await {
        match event {
            Event::Text(piece) => {
                text.push_str(&piece.text);
                entries.extend(piece.logprobs);
            }
            Event::Done(Ok(finished)) => {
                let logprobs = envelope.logprobs(logprobs.then_some(entries.as_slice()), &mut 0);
                return Ok(axum::Json(envelope.complete(&text, logprobs, &finished)).into_response());
            }
            Event::Done(Err(message)) => {
                return Err(ApiError::server(StatusCode::INTERNAL_SERVER_ERROR, "generation_failed", message));
            }
        }
    }
    Err(ApiError::server(StatusCode::INTERNAL_SERVER_ERROR, "generation_failed", "the generation thread stopped"))
}

/// A model other than the loaded one is read from its file again when a request switches to
/// it: refused at once (503 `model_file_changed`) when that file has changed since startup.
/// The loaded model is on the device and answers whatever happened to its file.
fn model_loadable(state: &AppState, model: usize, offered: &Offered) -> Result<(), ApiError> {
    if state.metrics.loaded_model() == Some(model) {
        return Ok(());
    }
    offered.source.check().map_err(|error| {
        ApiError::server(
            StatusCode::SERVICE_UNAVAILABLE,
            "model_file_changed",
            format!("the model '{}' cannot be loaded: {error}", offered.model.id),
        )
    })
}

/// The generation options, or the limit the request breaks. Without `max_tokens`, a completion
/// gets [`COMPLETION_MAX_TOKENS`] and a chat completion what the context leaves, both capped by
/// `--max-tokens-limit` (and the context).
fn options(
    offered: &Offered,
    endpoint: Endpoint,
    prompt_tokens: usize,
    prompt_param: &str,
    sampling: &Sampling,
) -> Result<GenerateOptions, ApiError> {
    let limits = &offered.limits;
    if prompt_tokens == 0 {
        return Err(ApiError::invalid(prompt_param, "invalid_value", format!("'{prompt_param}' encodes to no tokens")));
    }
    if prompt_tokens > limits.prompt_tokens {
        return Err(ApiError::invalid(
            prompt_param,
            "context_length_exceeded",
            format!(
                "'{prompt_param}' is {prompt_tokens} tokens; at most {} (--max-prompt-tokens)",
                limits.prompt_tokens
            ),
        ));
    }
    let room = usize::try_from(limits.context).unwrap_or(usize::MAX).saturating_sub(prompt_tokens);
    let room = u32::try_from(room).unwrap_or(u32::MAX);
    let field = sampling.max_tokens_field;
    let max_tokens = match sampling.max_tokens {
        Some(asked) if asked > limits.max_tokens => {
            return Err(ApiError::invalid(
                field,
                "invalid_value",
                format!("'{field}' {asked} is more than {} (--max-tokens-limit)", limits.max_tokens),
            ));
        }
        Some(asked) if asked > room => {
            return Err(ApiError::invalid(
                field,
                "context_length_exceeded",
                format!("{prompt_tokens} prompt tokens + '{field}' {asked} exceed the context of {}", limits.context),
            ));
        }
        Some(asked) => asked,
        None => match endpoint {
            Endpoint::Completions => COMPLETION_MAX_TOKENS.min(limits.max_tokens).min(room),
            Endpoint::Chat => limits.max_tokens.min(room),
        },
    };
    if max_tokens == 0 {
        return Err(ApiError::invalid(
            prompt_param,
            "context_length_exceeded",
            format!("{prompt_tokens} prompt tokens leave no room in the context of {}", limits.context),
        ));
    }
    let vocab_size = offered.tokenizer.vocab_size();
    if let Some(&(id, _)) =
        sampling.logits.logit_bias.iter().find(|&&(id, _)| usize::try_from(id).map_or(true, |id| id >= vocab_size))
    {
        return Err(ApiError::invalid(
            "logit_bias",
            "invalid_value",
            format!("'logit_bias' names token {id}; the model '{}' has {vocab_size} tokens", offered.model.id),
        ));
    }
    let seed = sampling.seed.unwrap_or_else(fresh_seed);
    Ok(GenerateOptions {
        max_tokens,
        sampler: SamplerConfig { temperature: sampling.temperature, top_k: 0, top_p: sampling.top_p, seed },
        stop: sampling.stop.clone(),
        logits: sampling.logits.clone(),
        top_logprobs: sampling.logprobs,
    })
}

/// A seed for a request that gave none: sampled output then differs between requests, as
/// OpenAI's does.
fn fresh_seed() -> u64 {
    let nanos = crate::clock::since_epoch().as_nanos();
    // The low 64 bits of the clock are the varying ones.
    u64::try_from(nanos & u128::from(u64::MAX)).unwrap_or_default()
}
