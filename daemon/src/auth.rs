//! The API-key check: when any key is configured ([`crate::keys`]), every `/v1/*`, `/metrics`,
//! `/tokenize`, `/detokenize` and `/redline/*` request needs `Authorization: Bearer KEY`; `/health` and the page stay open.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// Whether `path` needs a key: the API, the metrics and the route status.
fn protected(path: &str) -> bool {
    path == "/v1"
        || path.starts_with("/v1/")
        || matches!(path, "/metrics" | "/tokenize" | "/detokenize")
        || path.starts_with("/redline/")
}

/// The bearer token of an `Authorization` header (scheme case-insensitive).
fn bearer(value: &HeaderValue) -> Option<&[u8]> {
    let value = value.as_bytes();
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let start = rest.iter().position(|&b| b != b' ')?;
    Some(&rest[start..])
}

/// The middleware: a protected path without an accepted key is answered 401.
pub(crate) async fn require_key(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    if !state.api_keys.required() || !protected(request.uri().path()) {
        return next.run(request).await;
    }
    let message = match request.headers().get(header::AUTHORIZATION) {
        None => "this server needs an API key: send it as 'Authorization: Bearer KEY'",
        Some(value) => match bearer(value) {
            Some(key) if state.api_keys.accepts(key) => return next.run(request).await,
            Some(_) => "the API key is not accepted",
            None => "the Authorization header must be 'Bearer KEY'",
        },
    };
    let mut response = ApiError::request(StatusCode::UNAUTHORIZED, "invalid_api_key", message).into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_and_protected_paths() {
        let token = |v: &str| bearer(&HeaderValue::from_str(v).unwrap()).map(<[u8]>::to_vec);
        assert_eq!(token("Bearer abc"), Some(b"abc".to_vec()));
        assert_eq!(token("bearer   abc"), Some(b"abc".to_vec()));
        assert_eq!(token("Basic abc"), None);
        assert_eq!(token("Bearer "), None);
        assert_eq!(token("Bearer"), None);
        for path in [
            "/v1/models",
            "/v1/chat/completions",
            "/v1/x",
            "/v1",
            "/metrics",
            "/redline/status",
            "/tokenize",
            "/detokenize",
        ] {
            assert!(protected(path), "{path}");
        }
        for path in ["/health", "/", "/assets/app.js", "/v1x", "/metricsx", "/redline"] {
            assert!(!protected(path), "{path}");
        }
    }
}
