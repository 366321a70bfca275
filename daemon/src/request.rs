//! OpenAI request bodies, read field by field so that every error names the field at fault.
//! Which fields are used, accepted without effect, refused or unknown: see `fields`.

use serde_json::{Map, Value};
use tokenizer::{LogitsConfig, Message};

use super::error::ApiError;
use super::fields;
use super::json::{field, kind};
use super::response::Endpoint;

/// Stop strings at most (OpenAI's limit).
pub(crate) const STOPS_MAX: usize = 4;

/// The highest temperature accepted (OpenAI's range is [0, 2]).
pub(crate) const TEMPERATURE_MAX: f32 = 2.0;

/// Settings shared by completions and chat completions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sampling {
    /// New tokens at most, if given.
    pub max_tokens: Option<u32>,
    /// The field `max_tokens` came from (`max_tokens`, or chat's `max_completion_tokens`), for
    /// messages.
    pub max_tokens_field: &'static str,
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
    /// Log-probabilities asked for, with this many alternatives per token.
    pub logprobs: Option<usize>,
    /// Penalties and logit bias.
    pub logits: LogitsConfig,
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
pub(crate) fn object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
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

/// Field `name`, which must be present.
pub(crate) fn required<'a>(obj: &'a Map<String, Value>, name: &str) -> Result<&'a Value, ApiError> {
    match obj.get(name) {
        None | Some(Value::Null) => {
            Err(ApiError::invalid(name, "missing_required_parameter", format!("'{name}' is required")))
        }
        Some(value) => Ok(value),
    }
}

/// The settings both endpoints share. `max_tokens_alias` is another name `max_tokens` may be
/// given by (`max_completion_tokens` for chat).
fn sampling(obj: &Map<String, Value>, max_tokens_alias: Option<&'static str>) -> Result<Sampling, ApiError> {
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
        max_tokens_field: max_tokens.map_or("max_tokens", |(name, _)| name),
        temperature,
        top_p,
        seed,
        stop: stops(obj)?,
        stream,
        include_usage,
        logprobs: None,
        logits: fields::logits(obj)?,
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
    fields::known(&obj, Endpoint::Completions)?;
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
    fields::unsupported(&obj, Endpoint::Completions)?;
    let sampling = Sampling { logprobs: fields::completion_logprobs(&obj)?, ..sampling(&obj, None)? };
    Ok(CompletionRequest { model: field(&obj, "model", "a string")?, prompt, sampling })
}

/// Parses a chat completions body.
pub(crate) fn chat(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let obj = object(body)?;
    fields::known(&obj, Endpoint::Chat)?;
    let Value::Array(items) = required(&obj, "messages")? else {
        return Err(ApiError::invalid("messages", "invalid_type", "'messages' must be an array of messages"));
    };
    if items.is_empty() {
        return Err(ApiError::invalid("messages", "invalid_value", "'messages' must hold at least one message"));
    }
    let messages = items.iter().enumerate().map(|(i, item)| message(i, item)).collect::<Result<_, _>>()?;
    let model = field(&obj, "model", "a string")?;
    fields::unsupported(&obj, Endpoint::Chat)?;
    let sampling =
        Sampling { logprobs: fields::chat_logprobs(&obj)?, ..sampling(&obj, Some("max_completion_tokens"))? };
    Ok(ChatRequest { model, messages, sampling })
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
    fn valid_bodies_parse_and_fields_without_effect_are_accepted() {
        let request = completion(br#"{"model": "m", "prompt": ["hi"], "max_tokens": 5, "temperature": 0, "stop": "x", "seed": 7, "logit_bias": {}, "user": "u", "best_of": 1, "echo": false, "suffix": ""}"#).unwrap();
        assert_eq!(request.model.as_deref(), Some("m"));
        assert_eq!(request.prompt, "hi");
        assert_eq!(request.sampling.max_tokens, Some(5));
        assert_eq!(request.sampling.stop, ["x"]);
        assert_eq!(request.sampling.seed, Some(7));
        assert_eq!((request.sampling.logprobs, &request.sampling.logits), (None, &LogitsConfig::default()));
        let request = chat(br#"{"messages": [{"role": "developer", "content": [{"type": "text", "text": "be brief"}]}, {"role": "user", "content": "hi", "name": "me"}], "stream": true, "stream_options": {"include_usage": true}, "max_completion_tokens": 3, "user": "u", "metadata": {"k": "v"}, "store": false, "service_tier": "auto", "parallel_tool_calls": true, "tool_choice": "none", "response_format": {"type": "text"}, "modalities": ["text"], "tools": null}"#).unwrap();
        assert_eq!(request.model, None);
        assert_eq!(request.messages, [Message::new("system", "be brief"), Message::new("user", "hi")]);
        assert!(request.sampling.stream && request.sampling.include_usage);
        assert_eq!(request.sampling.max_tokens, Some(3));
        assert_eq!(completion(b"[1]").unwrap_err().code, Some("invalid_json"));
        assert_eq!(completion(b"{").unwrap_err().code, Some("invalid_json"));
    }

    #[test]
    fn logprobs_penalties_and_bias_parse() {
        let request = completion(br#"{"prompt": "x", "logprobs": 3, "presence_penalty": -2, "frequency_penalty": 1.5, "logit_bias": {"17": 100, "0": -100, "42": 0.5}}"#).unwrap();
        assert_eq!(request.sampling.logprobs, Some(3));
        let LogitsConfig { presence_penalty, frequency_penalty, mut logit_bias } = request.sampling.logits;
        assert_eq!((presence_penalty, frequency_penalty), (-2.0, 1.5));
        logit_bias.sort_by_key(|&(id, _)| id);
        assert_eq!(logit_bias, [(0, -100.0), (17, 100.0), (42, 0.5)]);
        assert_eq!(completion(br#"{"prompt": "x", "logprobs": 0}"#).unwrap().sampling.logprobs, Some(0));
        assert_eq!(completion(br#"{"prompt": "x", "logprobs": null}"#).unwrap().sampling.logprobs, None);
        let chat_logprobs = |extra: &str| {
            let body = format!(r#"{{"messages": [{{"role": "user", "content": "a"}}]{extra}}}"#);
            chat(body.as_bytes()).map(|request| request.sampling.logprobs)
        };
        assert_eq!(chat_logprobs(r#", "logprobs": true, "top_logprobs": 20"#).unwrap(), Some(20));
        assert_eq!(chat_logprobs(r#", "logprobs": true"#).unwrap(), Some(0));
        assert_eq!(chat_logprobs(r#", "logprobs": false"#).unwrap(), None);
        assert_eq!(chat_logprobs("").unwrap(), None);
    }

    #[test]
    fn new_fields_of_the_wrong_type_or_range_are_named() {
        let cases: [(&str, &str, &str); 17] = [
            (r#""logprobs": 6"#, "logprobs", "invalid_value"),
            (r#""logprobs": -1"#, "logprobs", "invalid_type"),
            (r#""logprobs": true"#, "logprobs", "invalid_type"),
            (r#""logprobs": 2.5"#, "logprobs", "invalid_type"),
            (r#""presence_penalty": 2.5"#, "presence_penalty", "invalid_value"),
            (r#""frequency_penalty": -2.01"#, "frequency_penalty", "invalid_value"),
            (r#""frequency_penalty": "1""#, "frequency_penalty", "invalid_type"),
            (r#""presence_penalty": 1e300"#, "presence_penalty", "invalid_value"),
            (r#""logit_bias": [1]"#, "logit_bias", "invalid_type"),
            (r#""logit_bias": {"abc": 1}"#, "logit_bias", "invalid_value"),
            (r#""logit_bias": {"+5": 1}"#, "logit_bias", "invalid_value"),
            (r#""logit_bias": {"99999999999": 1}"#, "logit_bias", "invalid_value"),
            (r#""logit_bias": {"5": 100.5}"#, "logit_bias", "invalid_value"),
            (r#""logit_bias": {"5": "1"}"#, "logit_bias", "invalid_value"),
            (r#""user": 7"#, "user", "invalid_type"),
            (r#""best_of": "2""#, "best_of", "invalid_type"),
            (r#""echo": 1"#, "echo", "invalid_type"),
        ];
        for (extra, param, code) in cases {
            let body = format!(r#"{{"prompt": "x", {extra}}}"#);
            let error = completion(body.as_bytes()).expect_err(&body);
            assert_eq!((error.param.as_deref(), error.code), (Some(param), Some(code)), "{body}: {}", error.message);
            assert!(error.message.contains(param), "{body}: {}", error.message);
        }
        let many: Vec<String> = (0..=fields::LOGIT_BIAS_ENTRIES_MAX).map(|i| format!(r#""{i}": 1"#)).collect();
        let body = format!(r#"{{"prompt": "x", "logit_bias": {{{}}}}}"#, many.join(","));
        assert_eq!(param(completion(body.as_bytes())).as_deref(), Some("logit_bias"));
        let chat_cases: [(&str, &str); 6] = [
            (r#""logprobs": 1"#, "logprobs"),
            (r#""logprobs": true, "top_logprobs": 21"#, "top_logprobs"),
            (r#""logprobs": true, "top_logprobs": -1"#, "top_logprobs"),
            (r#""top_logprobs": 2"#, "top_logprobs"),
            (r#""logprobs": false, "top_logprobs": 0"#, "top_logprobs"),
            (r#""store": "yes""#, "store"),
        ];
        for (extra, expected) in chat_cases {
            let body = format!(r#"{{"messages": [{{"role": "user", "content": "a"}}], {extra}}}"#);
            assert_eq!(param(chat(body.as_bytes())).as_deref(), Some(expected), "{body}");
        }
    }

    #[test]
    fn fields_that_would_change_the_output_are_refused_and_unknown_ones_named() {
        let refused: [(&str, &str, &str); 5] = [
            (r#""best_of": 2"#, "best_of", "unsupported_value"),
            (r#""echo": true"#, "echo", "unsupported_value"),
            (r#""suffix": "end""#, "suffix", "unsupported_parameter"),
            (r#""top_logprobs": 2"#, "top_logprobs", "unknown_parameter"),
            (r#""tools": []"#, "tools", "unknown_parameter"),
        ];
        for (extra, param, code) in refused {
            let body = format!(r#"{{"prompt": "x", {extra}}}"#);
            let error = completion(body.as_bytes()).expect_err(&body);
            assert_eq!((error.param.as_deref(), error.code), (Some(param), Some(code)), "{body}");
        }
        let refused: [(&str, &str, &str); 14] = [
            (r#""tools": [{"type": "function", "function": {"name": "f"}}]"#, "tools", "unsupported_parameter"),
            (r#""tool_choice": "auto""#, "tool_choice", "unsupported_parameter"),
            (r#""functions": []"#, "functions", "unsupported_parameter"),
            (r#""function_call": {"name": "f"}"#, "function_call", "unsupported_parameter"),
            (r#""response_format": {"type": "json_object"}"#, "response_format", "unsupported_value"),
            (r#""audio": {"voice": "alloy", "format": "wav"}"#, "audio", "unsupported_parameter"),
            (r#""modalities": ["text", "audio"]"#, "modalities", "unsupported_value"),
            (r#""prediction": {"type": "content", "content": "x"}"#, "prediction", "unsupported_parameter"),
            (r#""reasoning_effort": "low""#, "reasoning_effort", "unsupported_parameter"),
            (r#""n": 2"#, "n", "invalid_value"),
            (r#""echo": true"#, "echo", "unknown_parameter"),
            (r#""best_of": 1"#, "best_of", "unknown_parameter"),
            (r#""frobnicate": 1"#, "frobnicate", "unknown_parameter"),
            (r#""Temperature": 0"#, "Temperature", "unknown_parameter"),
        ];
        for (extra, param, code) in refused {
            let body = format!(r#"{{"messages": [{{"role": "user", "content": "a"}}], {extra}}}"#);
            let error = chat(body.as_bytes()).expect_err(&body);
            assert_eq!((error.param.as_deref(), error.code), (Some(param), Some(code)), "{body}");
            assert!(error.message.contains(param), "{body}: {}", error.message);
        }
        let unknown = completion(br#"{"prompt": "x", "max_token": 4}"#).unwrap_err();
        assert_eq!(unknown.message, "Unrecognized request argument supplied: max_token");
    }

    /// A JSON value of any kind, nested a little.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
            "[a-z ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// The names a request body may carry, and a few it may not.
    const NAMES: [&str; 24] = [
        "model",
        "prompt",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "seed",
        "stop",
        "stream",
        "stream_options",
        "n",
        "logprobs",
        "top_logprobs",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "user",
        "echo",
        "tools",
        "response_format",
        "metadata",
        "role",
        "nonsense",
    ];

    proptest::proptest! {
        /// Any object of known and unknown fields with values of any kind parses or is a 400
        /// naming, when it names one, a field of the body; never a panic.
        #[test]
        fn any_body_parses_or_is_a_400_naming_one_of_its_fields(
            fields in proptest::collection::vec((0..NAMES.len(), json_value()), 0..8),
        ) {
            let body: Map<String, Value> = fields.into_iter().map(|(i, v)| (NAMES[i].to_owned(), v)).collect();
            let bytes = serde_json::to_vec(&body).unwrap();
            for result in [completion(&bytes).map(|_| ()), chat(&bytes).map(|_| ())] {
                if let Err(error) = result {
                    proptest::prop_assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST);
                    proptest::prop_assert!(!error.message.is_empty());
                    if let Some(param) = &error.param {
                        let top = param.split(['.', '[']).next().unwrap_or_default();
                        proptest::prop_assert!(body.contains_key(top) || ["prompt", "messages"].contains(&top),
                            "{} names {} outside {:?}", error.message, param, body.keys().collect::<Vec<_>>());
                    }
                }
            }
        }

        /// Any bytes: a typed answer, never a panic.
        #[test]
        fn any_bytes_parse_or_are_a_400(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            for result in [completion(&bytes).map(|_| ()), chat(&bytes).map(|_| ())] {
                if let Err(error) = result {
                    proptest::prop_assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST);
                }
            }
        }
    }
}
