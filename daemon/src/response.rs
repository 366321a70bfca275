//! OpenAI response bodies: whole completions, stream chunks and the usage object.

use serde_json::{Value, json};

use super::logprobs::{self, Entry};
use super::worker::Finished;

/// Which endpoint a response belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/v1/completions`: `text_completion` objects, `choices[].text`.
    Completions,
    /// `/v1/chat/completions`: `chat.completion(.chunk)` objects, `choices[].message|delta`.
    Chat,
}

/// The fields every object of one response shares.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// `cmpl-…` or `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The served model's id.
    pub model: String,
}

impl Envelope {
    /// A new response's envelope; `serial` makes the id unique within the process, and a random
    /// tag drawn once per process ([`process_tag`]) across processes and restarts.
    pub(crate) fn new(endpoint: Endpoint, serial: u64, model: &str) -> Self {
        let created = crate::clock::since_epoch().as_secs();
        let prefix = match endpoint {
            Endpoint::Completions => "cmpl",
            Endpoint::Chat => "chatcmpl",
        };
        let id = format!("{prefix}-{:016x}{serial:08x}", process_tag());
        Self { endpoint, id, created, model: model.to_owned() }
    }

    fn object(&self, object: &str, choices: Value) -> Value {
        json!({
            "id": self.id,
            "object": object,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": Value::Null,
            "choices": choices,
        })
    }

    /// The `logprobs` of a choice: `entries` in the endpoint's shape (see `logprobs`), whose
    /// first token starts `offset` characters into the completion (advanced past the last);
    /// `null` when log-probabilities were not asked for (`None`).
    pub(crate) fn logprobs(&self, entries: Option<&[Entry]>, offset: &mut usize) -> Value {
        match (entries, self.endpoint) {
            (None, _) => Value::Null,
            (Some(entries), Endpoint::Completions) => logprobs::completion(entries, offset),
            (Some(entries), Endpoint::Chat) => logprobs::chat(entries),
        }
    }

    /// The whole (non-streamed) response; `logprobs` as [`Envelope::logprobs`] made it.
    pub(crate) fn complete(&self, text: &str, logprobs: Value, finished: &Finished) -> Value {
        let choice = match self.endpoint {
            Endpoint::Completions => json!({
                "index": 0, "text": text, "logprobs": logprobs, "finish_reason": finished.finish_reason,
            }),
            Endpoint::Chat => json!({
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": logprobs,
                "finish_reason": finished.finish_reason,
            }),
        };
        let object = match self.endpoint {
            Endpoint::Completions => "text_completion",
            Endpoint::Chat => "chat.completion",
        };
        let mut value = self.object(object, json!([choice]));
        value["usage"] = usage(finished);
        value
    }

    /// A stream chunk: a piece of text (`Some`) with its `logprobs` ([`Envelope::logprobs`]),
    /// the chat opening (role only, `None` with no finish reason), or the last chunk
    /// (`finish_reason`).
    pub(crate) fn chunk(&self, text: Option<&str>, logprobs: Value, finish_reason: Option<&str>) -> Value {
        let choice = match self.endpoint {
            Endpoint::Completions => json!({
                "index": 0, "text": text.unwrap_or(""), "logprobs": logprobs, "finish_reason": finish_reason,
            }),
            Endpoint::Chat => {
                let delta = match (text, finish_reason) {
                    (Some(text), _) => json!({"content": text}),
                    (None, None) => json!({"role": "assistant", "content": ""}),
                    (None, Some(_)) => json!({}),
                };
                json!({"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason})
            }
        };
        self.object(self.chunk_object(), json!([choice]))
    }

    /// The usage chunk `stream_options.include_usage` asks for: no choices.
    pub(crate) fn usage_chunk(&self, finished: &Finished) -> Value {
        let mut value = self.object(self.chunk_object(), json!([]));
        value["usage"] = usage(finished);
        value
    }

    const fn chunk_object(&self) -> &'static str {
        match self.endpoint {
            Endpoint::Completions => "text_completion",
            Endpoint::Chat => "chat.completion.chunk",
        }
    }
}

/// The usage object; `prompt_tokens_details.cached_tokens` counts the prompt tokens kept from
/// the previous generation, as OpenAI reports its prompt cache.
fn usage(finished: &Finished) -> Value {
    json!({
        "prompt_tokens": finished.prompt_tokens,
        "completion_tokens": finished.completion_tokens,
        "total_tokens": finished.prompt_tokens + finished.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": finished.cached_tokens},
    })
}

/// 64 random bits drawn once per process: the operating system's randomness through the
/// standard library's hash keys, mixed with the process id and the clock, so that two servers
/// (behind one gateway, or one restarted) hand out different response ids.
fn process_tag() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    static TAG: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TAG.get_or_init(|| {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u128(crate::clock::since_epoch().as_nanos());
        hasher.finish()
    })
}

/// One server-sent event carrying `data`.
pub(crate) fn sse(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// The event that ends every stream.
pub(crate) const SSE_DONE: &str = "data: [DONE]\n\n";
