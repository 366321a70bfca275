//! The OpenAI error object every failed request answers with:
//! `{"error": {"message", "type", "param", "code"}}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Seconds a client is told to wait when the queue is full.
pub(crate) const RETRY_AFTER_SECONDS: u32 = 1;

/// A request that cannot be served, as the status code and the OpenAI error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What is wrong, naming the field and the value or limit.
    pub message: String,
    /// `invalid_request_error` for the client's mistakes, `server_error` otherwise.
    pub kind: &'static str,
    /// The request field at fault, when there is one (`messages[1].role`).
    pub param: Option<String>,
    /// A machine-readable code (`invalid_value`, `context_length_exceeded`, ...).
    pub code: Option<&'static str>,
}

impl ApiError {
    /// A 400 about `param`.
    pub(crate) fn invalid(param: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some(param.into()),
            code: Some(code),
        }
    }

    /// A client error with no single field at fault.
    pub(crate) fn request(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, message: message.into(), kind: "invalid_request_error", param: None, code: Some(code) }
    }

    /// A request's `model` is not served: 404 `model_not_found` about `model`, as OpenAI answers.
    pub(crate) fn model_not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some("model".to_owned()),
            code: Some("model_not_found"),
        }
    }

    /// A failure on the server's side (a forward failed, the worker is gone).
    pub(crate) fn server(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, message: message.into(), kind: "server_error", param: None, code: Some(code) }
    }

    /// The queue is full: 503, and the client may retry after [`RETRY_AFTER_SECONDS`].
    pub(crate) fn queue_full(capacity: usize) -> Self {
        Self::server(
            StatusCode::SERVICE_UNAVAILABLE,
            "queue_full",
            format!("the request queue is full ({capacity} waiting): retry after {RETRY_AFTER_SECONDS} s"),
        )
    }

    /// The error object as JSON.
    pub(crate) fn body(&self) -> serde_json::Value {
        serde_json::json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        }
        response
    }
}
