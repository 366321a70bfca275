//! OpenAI request bodies, read field by field so that every error names the field at fault.
//! Fields the server does not use are ignored, as OpenAI clients send extras.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokenizer::Message;

use super::error::ApiError;

/// Stop strings at most (OpenAI's limit).
pub(crate) const STOPS_MAX: usize = 4;

/// The highest temperature accepted (OpenAI's range is [0, 2]).
pub(crate) const TEMPERATURE_MAX: f32 = 2.0;

/// Settings shared by completions and chat completions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sampling {
    /// New tokens at most, if given.
    pub max_tokens: Option<u32>,
    /// 0 is greedy.
    pub temperature: f32,
    /// Nucleus threshold in (0, 1].
    pub top_p: f32,
    /// Sampler seed, if given.
    pub seed: Option<u64>,
    /// Stop strings.
    pub stop: Vec<String>,
    /// Answer as server-sent events.
    pub stream: bool,
    /// With `stream`: a last chunk carrying the usage object (`stream_options.include_usage`).
    pub include_usage: bool,
}

/// `POST /v1/completions`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompletionRequest {
    /// The served model's id, if given.
    pub model: Option<String>,
    /// The text to continue.
    pub prompt: String,
    /// Sampling settings.
    pub sampling: Sampling,
}

/// `POST /v1/chat/completions`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatRequest {
    /// The served model's id, if given.
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Sampling settings.
    pub sampling: Sampling,
}

/// The body as a JSON object.
fn object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::request(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not valid JSON: {e}"),
        )
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(ApiError::request(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body must be a JSON object, not {}", kind(&other)),
        )),
    }
}

/// The JSON kind of `value`, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Field `name` as a `T`; absent or `null` is `None`.
fn field<T: DeserializeOwned>(obj: &Map<String, Value>, name: &str, expected: &str) -> Result<Option<T>, ApiError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone()).map(Some).map_err(|_| {
            let shown: String = value.to_string().chars().take(40).collect();
            ApiError::invalid(name, "invalid_type", format!("'{name}' must be {expected}, not {} {shown}", kind(value)))
        }),
    }
}

/// Field `name`, which must be present.
fn required<'a>(obj: &'a Map<String, Value>, name: &str) -> Result<&'a Value, ApiError> {
    match obj.get(name) {
        None | Some(Value::Null) => {
            Err(ApiError::invalid(name, "missing_required_parameter", format!("'{name}' is required")))
        }
        Some(value) => Ok(value),
    }
}

/// The settings both endpoints share. `max_tokens_alias` is another name `max_tokens` may be
/// given by (`max_completion_tokens` for chat).
fn sampling(obj: &Map<String, Value>, max_tokens_alias: Option<&str>) -> Result<Sampling, ApiError> {
    let n: Option<u64> = field(obj, "n", "an integer")?;
    if n.is_some_and(|n| n != 1) {
        return Err(ApiError::invalid("n", "invalid_value", "'n' must be 1: one choice per request"));
    }
    // The alias (chat's `max_completion_tokens`) wins over `max_tokens`; both are checked.
    let mut max_tokens = None;
    for name in max_tokens_alias.into_iter().chain(["max_tokens"]) {
        if let Some(value) = field::<u32>(obj, name, "a positive integer")? {
            max_tokens = max_tokens.or(Some((name, value)));
        }
    }
    if let Some((name, 0)) = max_tokens {
        return Err(ApiError::invalid(name, "invalid_value", format!("'{name}' must be at least 1")));
    }
    let temperature: f32 = field(obj, "temperature", "a number")?.unwrap_or(1.0);
    if !(0.0..=TEMPERATURE_MAX).contains(&temperature) {
        return Err(ApiError::invalid(
            "temperature",
            "invalid_value",
            format!("'temperature' {temperature} is outside [0, {TEMPERATURE_MAX}]"),
        ));
    }
    let top_p: f32 = field(obj, "top_p", "a number")?.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(ApiError::invalid("top_p", "invalid_value", format!("'top_p' {top_p} is outside (0, 1]")));
    }
    let seed: Option<u64> = field(obj, "seed", "a non-negative integer")?;
    let stream: bool = field(obj, "stream", "a boolean")?.unwrap_or(false);
    let include_usage = match field::<Map<String, Value>>(obj, "stream_options", "an object")? {
        Some(options) => field::<bool>(&options, "include_usage", "a boolean")
            .map_err(|e| ApiError { param: Some("stream_options.include_usage".into()), ..e })?
            .unwrap_or(false),
        None => false,
    };
    Ok(Sampling {
        max_tokens: max_tokens.map(|(_, v)| v),
        temperature,
        top_p,
        seed,
        stop: stops(obj)?,
        stream,
        include_usage,
    })
}

/// `stop`: a string or an array of at most [`STOPS_MAX`] non-empty strings.
fn stops(obj: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    let stops = match obj.get("stop") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s.clone()],
        Some(value) => field::<Vec<String>>(obj, "stop", "a string or an array of strings")?
            .ok_or_else(|| ApiError::invalid("stop", "invalid_type", format!("'stop' is {}", kind(value))))?,
    };
    if stops.len() > STOPS_MAX {
        return Err(ApiError::invalid(
            "stop",
            "invalid_value",
            format!("'stop' has {} strings; at most {STOPS_MAX}", stops.len()),
        ));
    }
    if stops.iter().any(String::is_empty) {
        return Err(ApiError::invalid("stop", "invalid_value", "'stop' strings must not be empty"));
    }
    Ok(stops)
}

/// Parses a completions body.
pub(crate) fn completion(body: &[u8]) -> Result<CompletionRequest, ApiError> {
    let obj = object(body)?;
    let prompt = match required(&obj, "prompt")? {
        Value::String(s) => s.clone(),
        Value::Array(items) if items.len() == 1 && items[0].is_string() => {
            items[0].as_str().unwrap_or_default().to_owned()
        }
        Value::Array(items) if items.len() > 1 => {
            return Err(ApiError::invalid(
                "prompt",
                "invalid_value",
                "'prompt' may hold one string: batches are not served",
            ));
        }
        other => {
            return Err(ApiError::invalid(
                "prompt",
                "invalid_type",
                format!("'prompt' must be a string, not {}", kind(other)),
            ));
        }
    };
    Ok(CompletionRequest { model: field(&obj, "model", "a string")?, prompt, sampling: sampling(&obj, None)? })
}

/// Parses a chat completions body.
pub(crate) fn chat(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let obj = object(body)?;
    let Value::Array(items) = required(&obj, "messages")? else {
        return Err(ApiError::invalid("messages", "invalid_type", "'messages' must be an array of messages"));
    };
    if items.is_empty() {
        return Err(ApiError::invalid("messages", "invalid_value", "'messages' must hold at least one message"));
    }
    let messages = items.iter().enumerate().map(|(i, item)| message(i, item)).collect::<Result<_, _>>()?;
    let model = field(&obj, "model", "a string")?;
    Ok(ChatRequest { model, messages, sampling: sampling(&obj, Some("max_completion_tokens"))? })
}

/// Message `i`: `{"role", "content"}`, content a string or an array of text parts.
fn message(i: usize, item: &Value) -> Result<Message, ApiError> {
    let at = |field: &str| format!("messages[{i}]{field}");
    let Value::Object(obj) = item else {
        return Err(ApiError::invalid(
            at(""),
            "invalid_type",
            format!("message {i} must be an object, not {}", kind(item)),
        ));
    };
    let role = match obj.get("role") {
        Some(Value::String(role)) => role.as_str(),
        Some(other) => {
            return Err(ApiError::invalid(
                at(".role"),
                "invalid_type",
                format!("message {i}'s role must be a string, not {}", kind(other)),
            ));
        }
        None => {
            return Err(ApiError::invalid(
                at(".role"),
                "missing_required_parameter",
                format!("message {i} has no role"),
            ));
        }
    };
    let role = match role {
        "system" | "developer" => "system",
        "user" => "user",
        "assistant" => "assistant",
        other => {
            return Err(ApiError::invalid(
                at(".role"),
                "invalid_value",
                format!("message {i}'s role {other:?} is not one of system, developer, user, assistant"),
            ));
        }
    };
    let content = match obj.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => text_parts(parts).ok_or_else(|| {
            ApiError::invalid(
                at(".content"),
                "invalid_value",
                format!("message {i}'s content parts must all be {{\"type\": \"text\", \"text\": ...}}"),
            )
        })?,
        Some(other) => {
            return Err(ApiError::invalid(
                at(".content"),
                "invalid_type",
                format!("message {i}'s content must be a string, not {}", kind(other)),
            ));
        }
        None => {
            return Err(ApiError::invalid(
                at(".content"),
                "missing_required_parameter",
                format!("message {i} has no content"),
            ));
        }
    };
    Ok(Message::new(role, content))
}

/// The concatenated text of content parts, or `None` when a part is not text.
fn text_parts(parts: &[Value]) -> Option<String> {
    parts.iter().try_fold(String::new(), |mut text, part| {
        if part.get("type")?.as_str()? != "text" {
            return None;
        }
        text.push_str(part.get("text")?.as_str()?);
        Some(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(result: Result<impl std::fmt::Debug, ApiError>) -> Option<String> {
        result.expect_err("should be rejected").param
    }

    #[test]
    fn fields_of_the_wrong_type_or_value_are_named() {
        let cases: [(&str, &str); 9] = [
            (r#"{"prompt": 1}"#, "prompt"),
            (r#"{"prompt": "x", "max_tokens": "8"}"#, "max_tokens"),
            (r#"{"prompt": "x", "max_tokens": 0}"#, "max_tokens"),
            (r#"{"prompt": "x", "temperature": -0.5}"#, "temperature"),
            (r#"{"prompt": "x", "top_p": 0}"#, "top_p"),
            (r#"{"prompt": "x", "seed": -1}"#, "seed"),
            (r#"{"prompt": "x", "stop": ["a", 3]}"#, "stop"),
            (r#"{"prompt": "x", "n": 2}"#, "n"),
            (r#"{"prompt": "x", "stream": "yes"}"#, "stream"),
        ];
        for (body, expected) in cases {
            assert_eq!(param(completion(body.as_bytes())).as_deref(), Some(expected), "{body}");
        }
        assert_eq!(param(chat(br#"{"messages": []}"#)).as_deref(), Some("messages"));
        assert_eq!(
            param(chat(br#"{"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]}"#))
                .as_deref(),
            Some("messages[1].role")
        );
        assert_eq!(param(chat(br#"{"messages": [{"role": "user"}]}"#)).as_deref(), Some("messages[0].content"));
        assert_eq!(
            param(chat(br#"{"messages": [{"role": "user", "content": "a"}], "max_completion_tokens": -3}"#)).as_deref(),
            Some("max_completion_tokens")
        );
    }

    #[test]
    fn valid_bodies_parse_and_extras_are_ignored() {
        let request = completion(br#"{"model": "m", "prompt": ["hi"], "max_tokens": 5, "temperature": 0, "stop": "x", "seed": 7, "logit_bias": {}, "user": "u"}"#).unwrap();
        assert_eq!(request.model.as_deref(), Some("m"));
        assert_eq!(request.prompt, "hi");
        assert_eq!(request.sampling.max_tokens, Some(5));
        assert_eq!(request.sampling.stop, ["x"]);
        assert_eq!(request.sampling.seed, Some(7));
        let request = chat(br#"{"messages": [{"role": "developer", "content": [{"type": "text", "text": "be brief"}]}, {"role": "user", "content": "hi", "name": "me"}], "stream": true, "stream_options": {"include_usage": true}, "max_completion_tokens": 3}"#).unwrap();
        assert_eq!(request.model, None);
        assert_eq!(request.messages, [Message::new("system", "be brief"), Message::new("user", "hi")]);
        assert!(request.sampling.stream && request.sampling.include_usage);
        assert_eq!(request.sampling.max_tokens, Some(3));
        assert_eq!(completion(b"[1]").unwrap_err().code, Some("invalid_json"));
        assert_eq!(completion(b"{").unwrap_err().code, Some("invalid_json"));
    }
}
