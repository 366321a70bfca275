//! `POST /tokenize` and `POST /detokenize` in llama.cpp's server's shapes, with a served model
//! chosen by `model` (the first without it), behind the API key like the rest of the API.
//!
//! - `/tokenize` `{"content": STRING, "add_special": false, "parse_special": true, "with_pieces":
//!   false}` answers `{"tokens": [ID, ...]}`, or with `with_pieces` `{"tokens": [{"id": ID,
//!   "piece": STRING}, ...]}`, where a piece that is not valid UTF-8 on its own is the array of
//!   its bytes. `add_special` adds the model's BOS (and EOS) as its metadata asks;
//!   `parse_special` reads control tokens written in the text as themselves.
//! - `/detokenize` `{"tokens": [ID, ...]}` answers `{"content": STRING}`: every token's text,
//!   control tokens included (llama.cpp's server shows them too), invalid UTF-8 replaced by
//!   U+FFFD.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::json::field;
use crate::request::{object, required};
use crate::state::AppState;

/// Token ids one `/detokenize` takes at most.
pub(crate) const DETOKENIZE_TOKENS_MAX: usize = 1 << 20;

/// Refuses a field the endpoint does not define.
fn known(obj: &Map<String, Value>, fields: &[&str]) -> Result<(), ApiError> {
    match obj.keys().find(|k| !fields.contains(&k.as_str())) {
        None => Ok(()),
        Some(name) => Err(ApiError::invalid(
            name.as_str(),
            "unknown_parameter",
            format!("unknown field '{}': this endpoint takes {}", infile::escape(name), fields.join(", ")),
        )),
    }
}

pub(crate) async fn tokenize(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let obj = object(&crate::routes::body(raw)?)?;
    known(&obj, &["content", "add_special", "parse_special", "with_pieces", "model"])?;
    let content = match required(&obj, "content")? {
        Value::String(s) => s,
        other => {
            return Err(ApiError::invalid(
                "content",
                "invalid_type",
                format!("'content' must be a string, not {}", crate::json::kind(other)),
            ));
        }
    };
    let add_special: bool = field(&obj, "add_special", "a boolean")?.unwrap_or(false);
    let parse_special: bool = field(&obj, "parse_special", "a boolean")?.unwrap_or(true);
    let with_pieces: bool = field(&obj, "with_pieces", "a boolean")?.unwrap_or(false);
    let model: Option<String> = field(&obj, "model", "a string")?;
    let (_, offered) = state.catalog.select(model.as_deref())?;
    let tokenizer = &offered.tokenizer;
    let ids = tokenizer.encode_special(content, add_special, parse_special);
    let tokens: Vec<Value> = if with_pieces {
        ids.iter()
            .map(|&id| {
                let bytes = tokenizer.token_bytes(id, true).unwrap_or_default();
                let piece = std::str::from_utf8(bytes).map_or_else(|_| json!(bytes), |text| json!(text));
                json!({"id": id, "piece": piece})
            })
            .collect()
    } else {
        ids.iter().map(|&id| json!(id)).collect()
    };
    Ok(axum::Json(json!({"tokens": tokens})).into_response())
}

pub(crate) async fn detokenize(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let obj = object(&crate::routes::body(raw)?)?;
    known(&obj, &["tokens", "model"])?;
    let model: Option<String> = field(&obj, "model", "a string")?;
    let Value::Array(items) = required(&obj, "tokens")? else {
        return Err(ApiError::invalid("tokens", "invalid_type", "'tokens' must be an array of token ids"));
    };
    if items.len() > DETOKENIZE_TOKENS_MAX {
        return Err(ApiError::invalid(
            "tokens",
            "invalid_value",
            format!("'tokens' has {} ids; at most {DETOKENIZE_TOKENS_MAX}", items.len()),
        ));
    }
    let (_, offered) = state.catalog.select(model.as_deref())?;
    let tokenizer = &offered.tokenizer;
    let mut ids = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let id = item
            .as_u64()
            .and_then(|id| u32::try_from(id).ok())
            .filter(|&id| usize::try_from(id).is_ok_and(|id| id < tokenizer.vocab_size()));
        let Some(id) = id else {
            let shown: String = item.to_string().chars().take(40).collect();
            return Err(ApiError::invalid(
                format!("tokens[{i}]"),
                "invalid_value",
                format!(
                    "'tokens[{i}]' is {shown}: a token id of the model '{}' is an integer below {}",
                    offered.model.id,
                    tokenizer.vocab_size()
                ),
            ));
        };
        ids.push(id);
    }
    let bytes =
        tokenizer.decode(&ids, true).map_err(|e| ApiError::invalid("tokens", "invalid_value", e.to_string()))?;
    Ok(axum::Json(json!({"content": String::from_utf8_lossy(&bytes)})).into_response())
}
