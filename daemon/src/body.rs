//! Request bodies: a `Content-Length` over `--max-body-bytes` is answered 413 from the header,
//! before a byte of the body is read; any other body is read whole within `--body-timeout`
//! (408 when it is not) and at most `--max-body-bytes` (413), so a handler never waits on a
//! slow client. Both refusals close the connection, whose unread body cannot be skipped.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::state::{AppState, BodyLimits};

/// The 413 answer.
fn too_large(limits: BodyLimits, announced: Option<u64>) -> ApiError {
    let what = announced.map_or_else(|| "the request body is".to_owned(), |n| format!("Content-Length {n} is"));
    ApiError::request(
        StatusCode::PAYLOAD_TOO_LARGE,
        "request_too_large",
        format!("{what} larger than --max-body-bytes {} allows", limits.bytes),
    )
}

/// An answer that ends the connection.
fn closing(error: ApiError) -> Response {
    let mut response = error.into_response();
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The middleware: checks the announced length, reads the body under the limits, and hands the
/// handler the bytes.
pub(crate) async fn read_body(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let limits = state.body_limits;
    // hyper has already refused a malformed or repeated Content-Length.
    let announced =
        request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > u64::try_from(limits.bytes).unwrap_or(u64::MAX)) {
        return closing(too_large(limits, announced));
    }
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(limits.timeout, axum::body::to_bytes(body, limits.bytes)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(error)) => {
            // `to_bytes` says only that the body failed: over the limit (a chunked body), or
            // the client's stream broke.
            let over =
                std::error::Error::source(&error).is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
            return closing(if over {
                too_large(limits, None)
            } else {
                ApiError::request(StatusCode::BAD_REQUEST, "invalid_body", format!("reading the request body: {error}"))
            });
        }
        Err(_) => {
            return closing(ApiError::request(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!("the request body did not arrive within --body-timeout {} s", limits.timeout.as_secs()),
            ));
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
