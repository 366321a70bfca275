//! Whether the server can generate now, for `GET /health`: a model loads after the server is
//! listening (the first one at startup, another at a switch), and meanwhile `/health` answers
//! 503 with llama.cpp's server's body (`{"error": {"code": 503, "message": "Loading model",
//! "type": "unavailable_error"}}`, with the model's id added); 200 `{"status": "ok"}` once it is
//! on the device. Generation requests are not refused meanwhile: they wait in the queue.

use std::sync::Mutex;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::RETRY_AFTER_SECONDS;

/// The model being loaded, if one is.
#[derive(Debug, Default)]
pub(crate) struct Readiness {
    loading: Mutex<Option<String>>,
}

impl Readiness {
    /// Model `id` is being loaded: not ready until [`Readiness::set_ready`].
    pub(crate) fn set_loading(&self, id: &str) {
        *self.lock() = Some(id.to_owned());
    }

    /// The load ended (loaded, or failed and the loaded model, if any, still serves).
    pub(crate) fn set_ready(&self) {
        *self.lock() = None;
    }

    /// The model being loaded, if one is.
    pub(crate) fn loading(&self) -> Option<String> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.loading.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The `/health` answer.
    pub(crate) fn health(&self) -> Response {
        let Some(model) = self.loading() else {
            return axum::Json(serde_json::json!({"status": "ok"})).into_response();
        };
        let body = serde_json::json!({
            "error": {"code": 503, "message": "Loading model", "type": "unavailable_error", "model": model},
        });
        let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(response: Response) -> (StatusCode, serde_json::Value) {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn health_is_503_while_a_model_loads_and_200_after() {
        let readiness = Readiness::default();
        assert_eq!(body(readiness.health()).await, (StatusCode::OK, serde_json::json!({"status": "ok"})));
        readiness.set_loading("tiny");
        let response = readiness.health();
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "1");
        let (status, json) = body(response).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(json["error"]["message"], "Loading model");
        assert_eq!(json["error"]["type"], "unavailable_error");
        assert_eq!(json["error"]["model"], "tiny");
        readiness.set_ready();
        assert_eq!(body(readiness.health()).await.0, StatusCode::OK);
    }
}
