//! `stream: true`: the worker's events as server-sent events in OpenAI's chunk format, ending
//! with `data: [DONE]`. When the client goes, hyper drops this body, its receiver with it, and
//! the worker's next send fails: that stops the generation.

use std::convert::Infallible;

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde_json::Value;
use tokio::sync::mpsc;

use super::error::ApiError;
use super::response::{Endpoint, Envelope, SSE_DONE, sse};
use super::worker::Event;

/// Where a stream is.
#[derive(Debug)]
struct Progress {
    envelope: Envelope,
    events: mpsc::UnboundedReceiver<Event>,
    include_usage: bool,
    /// Whether log-probabilities were asked for.
    logprobs: bool,
    /// Characters of the completion before the next chunk's first token (legacy `text_offset`).
    offset: usize,
    opened: bool,
    ended: bool,
}

/// What a stream is asked to carry beyond the text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Extras {
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// Whether log-probabilities were asked for.
    pub logprobs: bool,
}

/// The streamed response.
pub(crate) fn response(envelope: Envelope, events: mpsc::UnboundedReceiver<Event>, extras: Extras) -> Response {
    let Extras { include_usage, logprobs } = extras;
    let progress = Progress { envelope, events, include_usage, logprobs, offset: 0, opened: false, ended: false };
    let body = stream::unfold(progress, |mut progress| async move {
        let text = next(&mut progress).await?;
        Some((Ok::<_, Infallible>(text), progress))
    });
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], Body::from_stream(body))
        .into_response()
}

/// The next events' text, `None` after `[DONE]`.
async fn next(progress: &mut Progress) -> Option<String> {
    if progress.ended {
        return None;
    }
    if !progress.opened {
        progress.opened = true;
        // Chat streams open with the assistant's role, as OpenAI's do.
        if progress.envelope.endpoint == Endpoint::Chat {
            return Some(sse(&progress.envelope.chunk(None, Value::Null, None)));
        }
    }
    let event = progress.events.recv().await;
    // Anything but more text is the stream's last event.
    progress.ended = !matches!(event, Some(Event::Text(_)));
    match event {
        Some(Event::Text(piece)) => {
            let entries = progress.logprobs.then_some(piece.logprobs.as_slice());
            let logprobs = progress.envelope.logprobs(entries, &mut progress.offset);
            Some(sse(&progress.envelope.chunk(Some(&piece.text), logprobs, None)))
        }
        Some(Event::Done(Ok(finished))) => {
            let mut text = sse(&progress.envelope.chunk(None, Value::Null, Some(finished.finish_reason)));
            if progress.include_usage {
                text.push_str(&sse(&progress.envelope.usage_chunk(&finished)));
            }
            text.push_str(SSE_DONE);
            Some(text)
        }
        Some(Event::Done(Err(message))) => Some(failure(&message)),
        None => Some(failure("the generation thread stopped")),
    }
}

/// An error event, then `[DONE]`.
fn failure(message: &str) -> String {
    let error = ApiError::server(axum::http::StatusCode::INTERNAL_SERVER_ERROR, "generation_failed", message);
    format!("{}{SSE_DONE}", sse(&error.body()))
}
