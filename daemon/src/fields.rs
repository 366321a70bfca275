//! The OpenAI request fields beyond the prompt and the basic sampling settings. Every field
//! OpenAI defines for an endpoint is one of: used (log-probabilities, penalties, logit bias);
//! accepted because it cannot change the output (`user`, `metadata`, ...: type-checked, then
//! ignored); or not implemented, when it would change the output (`tools`, `echo`, ...: a 400
//! naming it, unless it has the value that changes nothing). A field OpenAI does not define is a
//! 400 `unknown_parameter`, as OpenAI answers.

use serde_json::{Map, Value};
use tokenizer::{BIAS_MAX, LogitsConfig, PENALTY_MAX};

use super::error::ApiError;
use super::json::{field, kind};
use super::response::Endpoint;

/// The highest `logprobs` of a completion (OpenAI's limit).
pub(crate) const COMPLETION_LOGPROBS_MAX: u64 = 5;

/// The highest `top_logprobs` of a chat completion (OpenAI's limit).
pub(crate) const CHAT_TOP_LOGPROBS_MAX: u64 = 20;

/// `logit_bias` entries at most.
pub(crate) const LOGIT_BIAS_ENTRIES_MAX: usize = 1024;

/// Fields both endpoints read.
const SHARED: &[&str] = &[
    "model",
    "max_tokens",
    "temperature",
    "top_p",
    "seed",
    "stop",
    "stream",
    "stream_options",
    "n",
    "logprobs",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "user",
];

/// Completion fields beyond [`SHARED`]: read, or checked by [`unsupported`].
const COMPLETION: &[&str] = &["prompt", "best_of", "echo", "suffix"];

/// Chat fields beyond [`SHARED`]: read, accepted as [`NO_EFFECT`], or checked by [`unsupported`].
const CHAT: &[&str] = &[
    "messages",
    "max_completion_tokens",
    "top_logprobs",
    "metadata",
    "store",
    "service_tier",
    "parallel_tool_calls",
    "prompt_cache_key",
    "safety_identifier",
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "response_format",
    "audio",
    "modalities",
    "prediction",
    "reasoning_effort",
    "web_search_options",
    "verbosity",
];

/// Chat fields that cannot change the output, with the type each must have.
const NO_EFFECT: &[(&str, Kind)] = &[
    ("metadata", Kind::Object),
    ("store", Kind::Bool),
    ("service_tier", Kind::String),
    ("parallel_tool_calls", Kind::Bool),
    ("prompt_cache_key", Kind::String),
    ("safety_identifier", Kind::String),
];

#[derive(Debug, Clone, Copy)]
enum Kind {
    Bool,
    String,
    Object,
}

/// The first field of `obj` the endpoint does not define.
///
/// # Errors
/// 400 `unknown_parameter` naming it.
pub(crate) fn known(obj: &Map<String, Value>, endpoint: Endpoint) -> Result<(), ApiError> {
    let own = match endpoint {
        Endpoint::Completions => COMPLETION,
        Endpoint::Chat => CHAT,
    };
    match obj.keys().find(|name| !SHARED.contains(&name.as_str()) && !own.contains(&name.as_str())) {
        Some(name) => Err(ApiError::invalid(
            name.as_str(),
            "unknown_parameter",
            format!("Unrecognized request argument supplied: {name}"),
        )),
        None => Ok(()),
    }
}

/// The fields that would change the output and are not implemented, given a value that would;
/// and the type of the fields that are accepted without effect (`user` among them).
///
/// # Errors
/// 400 `unsupported_parameter` (or `unsupported_value`) naming the field, or `invalid_type`.
pub(crate) fn unsupported(obj: &Map<String, Value>, endpoint: Endpoint) -> Result<(), ApiError> {
    field::<String>(obj, "user", "a string")?;
    match endpoint {
        Endpoint::Completions => {
            if field::<u64>(obj, "best_of", "a positive integer")?.is_some_and(|n| n != 1) {
                return Err(unsupported_value("best_of", "'best_of' must be 1: one completion is generated"));
            }
            if field::<bool>(obj, "echo", "a boolean")? == Some(true) {
                return Err(unsupported_value("echo", "'echo' must be false: the prompt is not echoed"));
            }
            if field::<String>(obj, "suffix", "a string")?.is_some_and(|s| !s.is_empty()) {
                return Err(not_implemented("suffix", "insertion after a suffix"));
            }
        }
        Endpoint::Chat => chat_unsupported(obj)?,
    }
    Ok(())
}

fn chat_unsupported(obj: &Map<String, Value>) -> Result<(), ApiError> {
    for &(name, kind) in NO_EFFECT {
        match kind {
            Kind::Bool => field::<bool>(obj, name, "a boolean").map(drop)?,
            Kind::String => field::<String>(obj, name, "a string").map(drop)?,
            Kind::Object => field::<Map<String, Value>>(obj, name, "an object").map(drop)?,
        }
    }
    for name in ["tools", "functions", "audio", "prediction", "reasoning_effort", "web_search_options", "verbosity"] {
        if obj.get(name).is_some_and(|value| !value.is_null()) {
            return Err(not_implemented(name, "it"));
        }
    }
    for name in ["tool_choice", "function_call"] {
        match obj.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::String(choice)) if choice == "none" => {}
            Some(_) => return Err(not_implemented(name, "tool and function calls")),
        }
    }
    match obj.get("response_format") {
        None | Some(Value::Null) => {}
        Some(Value::Object(format)) if format.len() == 1 && format.get("type") == Some(&Value::from("text")) => {}
        Some(_) => {
            return Err(unsupported_value(
                "response_format",
                "'response_format' must be {\"type\": \"text\"}: structured output is not implemented",
            ));
        }
    }
    match obj.get("modalities") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(items)) if items.iter().all(|item| item == "text") && !items.is_empty() => Ok(()),
        Some(_) => Err(unsupported_value("modalities", "'modalities' must be [\"text\"]: text is the only output")),
    }
}

fn not_implemented(name: &str, what: &str) -> ApiError {
    ApiError::invalid(
        name,
        "unsupported_parameter",
        format!("'{name}' is not supported: this server does not implement {what}"),
    )
}

fn unsupported_value(name: &str, message: &str) -> ApiError {
    ApiError::invalid(name, "unsupported_value", message)
}

/// A completion's `logprobs`: the number of alternatives in 0..=5, or `None` when not asked.
///
/// # Errors
/// 400 naming `logprobs`.
pub(crate) fn completion_logprobs(obj: &Map<String, Value>) -> Result<Option<usize>, ApiError> {
    let expected = format!("an integer from 0 to {COMPLETION_LOGPROBS_MAX}");
    count(obj, "logprobs", &expected, COMPLETION_LOGPROBS_MAX)
}

/// A chat completion's `logprobs: true` and `top_logprobs` (0..=20, 0 when absent): the number
/// of alternatives, or `None` when not asked.
///
/// # Errors
/// 400 naming `logprobs`, or `top_logprobs` out of range or given without `logprobs: true`.
pub(crate) fn chat_logprobs(obj: &Map<String, Value>) -> Result<Option<usize>, ApiError> {
    let asked = field::<bool>(obj, "logprobs", "a boolean")?.unwrap_or(false);
    let expected = format!("an integer from 0 to {CHAT_TOP_LOGPROBS_MAX}");
    let top = count(obj, "top_logprobs", &expected, CHAT_TOP_LOGPROBS_MAX)?;
    if top.is_some() && !asked {
        return Err(ApiError::invalid("top_logprobs", "invalid_value", "'top_logprobs' requires 'logprobs': true"));
    }
    Ok(asked.then_some(top.unwrap_or(0)))
}

/// Field `name` as an integer in 0..=`max`.
fn count(obj: &Map<String, Value>, name: &str, expected: &str, max: u64) -> Result<Option<usize>, ApiError> {
    let Some(value) = field::<u64>(obj, name, expected)? else { return Ok(None) };
    if value > max {
        return Err(ApiError::invalid(name, "invalid_value", format!("'{name}' {value} is not {expected}")));
    }
    Ok(Some(usize::try_from(value).unwrap_or(usize::MAX)))
}

/// `presence_penalty`, `frequency_penalty` (numbers in [-2, 2]) and `logit_bias` (an object of
/// token ids to numbers in [-100, 100]; ids are checked against the vocabulary later, when the
/// model is known).
///
/// # Errors
/// 400 naming the field.
pub(crate) fn logits(obj: &Map<String, Value>) -> Result<LogitsConfig, ApiError> {
    let penalty = |name: &str| -> Result<f32, ApiError> {
        let value: f32 = field(obj, name, "a number")?.unwrap_or(0.0);
        if !(value.is_finite() && value.abs() <= PENALTY_MAX) {
            return Err(ApiError::invalid(
                name,
                "invalid_value",
                format!("'{name}' {value} is outside [-{PENALTY_MAX}, {PENALTY_MAX}]"),
            ));
        }
        Ok(value)
    };
    Ok(LogitsConfig {
        presence_penalty: penalty("presence_penalty")?,
        frequency_penalty: penalty("frequency_penalty")?,
        logit_bias: logit_bias(obj)?,
    })
}

fn logit_bias(obj: &Map<String, Value>) -> Result<Vec<(u32, f32)>, ApiError> {
    let invalid = |message: String| ApiError::invalid("logit_bias", "invalid_value", message);
    let Some(entries) = field::<Map<String, Value>>(obj, "logit_bias", "an object of token ids to numbers")? else {
        return Ok(Vec::new());
    };
    if entries.len() > LOGIT_BIAS_ENTRIES_MAX {
        return Err(invalid(format!("'logit_bias' has {} entries; at most {LOGIT_BIAS_ENTRIES_MAX}", entries.len())));
    }
    entries
        .iter()
        .map(|(key, value)| {
            let shown: String = key.chars().take(40).collect();
            let id = key
                .parse::<u32>()
                .ok()
                .filter(|_| key.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| invalid(format!("'logit_bias' key {shown:?} is not a token id")))?;
            let bias: f32 = serde_json::from_value(value.clone())
                .map_err(|_| invalid(format!("'logit_bias' {shown:?} must be a number, not {}", kind(value))))?;
            if !(bias.is_finite() && bias.abs() <= BIAS_MAX) {
                return Err(invalid(format!("'logit_bias' {shown:?}: {value} is outside [-{BIAS_MAX}, {BIAS_MAX}]")));
            }
            Ok((id, bias))
        })
        .collect()
}
