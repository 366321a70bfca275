//! What a browser page the user visits must not be able to do to a server on their machine.
//!
//! - **DNS rebinding.** A page on `attacker.example` whose name is made to resolve to 127.0.0.1
//!   reaches a loopback server with `Host: attacker.example`. Bound to a loopback address, the
//!   server accepts only the loopback names (`localhost`, `*.localhost`), IP literals (no name
//!   to rebind) and the `--allowed-host` names; any other `Host` is answered 421 Misdirected
//!   Request naming the host and the flag. Bound elsewhere, any host is accepted unless
//!   `--allowed-host` names some (then the same rule applies).
//! - **A request without `Host`** is answered 400, as HTTP/1.1 requires (RFC 9112 §3.2); an
//!   HTTP/1.0 request may omit it.
//! - **Cross-site form posts.** A page may POST `text/plain` (or form) bodies anywhere without a
//!   CORS preflight; the JSON endpoints answer any content type but `application/json` (any
//!   `+json` type and parameters such as `charset` allowed) 415, so such a post never runs a
//!   generation.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The host names requests may name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hosts {
    /// `--allowed-host`, lowercased.
    allowed: Vec<String>,
    /// Whether `Host` is checked: bound to loopback, or names were given.
    checked: bool,
}

impl Hosts {
    /// The `--allowed-host` names; checked once [`Hosts::bound`] says where the server listens.
    pub(crate) fn new(allowed: Vec<String>) -> Self {
        let allowed: Vec<String> = allowed.into_iter().map(|h| h.trim().to_ascii_lowercase()).collect();
        let checked = !allowed.is_empty();
        Self { allowed, checked }
    }

    /// The server listens on a loopback address (`true`) or beyond.
    pub(crate) fn bound(&mut self, loopback: bool) {
        self.checked = loopback || !self.allowed.is_empty();
    }

    /// Whether a request naming `host` (a `Host` header's value) is served.
    pub(crate) fn accepts(&self, host: &str) -> bool {
        if !self.checked {
            return true;
        }
        let name = host_name(host).to_ascii_lowercase();
        let name = name.strip_suffix('.').unwrap_or(&name);
        name == "localhost"
            || name.ends_with(".localhost")
            || name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok()
            || self.allowed.iter().any(|allowed| allowed == name)
    }
}

/// The name of a `Host` value without its port (`[::1]:8080` gives `[::1]`).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':')
        .map_or(host, |(name, port)| if port.bytes().all(|b| b.is_ascii_digit()) { name } else { host })
}

/// The middleware for the `Host` rules.
pub(crate) async fn check_host(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST);
    let Some(host) = host else {
        if request.version() == Version::HTTP_11 {
            return ApiError::request(
                StatusCode::BAD_REQUEST,
                "missing_host",
                "an HTTP/1.1 request must have a Host header",
            )
            .into_response();
        }
        return next.run(request).await;
    };
    let Ok(host) = host.to_str() else {
        return ApiError::request(StatusCode::BAD_REQUEST, "invalid_host", "the Host header is not ASCII")
            .into_response();
    };
    if !state.hosts.accepts(host) {
        let shown = infile::escape(host);
        return ApiError::request(
            StatusCode::MISDIRECTED_REQUEST,
            "host_not_allowed",
            format!(
                "this server does not answer for the host '{shown}': it accepts localhost and IP addresses, and the \
                 names given with --allowed-host (a page on another site cannot reach it through DNS rebinding)"
            ),
        )
        .into_response();
    }
    next.run(request).await
}

/// Whether `path` takes a JSON body on POST.
fn json_endpoint(path: &str) -> bool {
    matches!(path, "/v1/completions" | "/v1/chat/completions" | "/tokenize" | "/detokenize")
}

/// Whether a `Content-Type` value is JSON: `application/json` or `application/*+json`, with any
/// parameters.
fn is_json(value: &str) -> bool {
    let media = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

/// The middleware for JSON bodies: a POST to a JSON endpoint with another content type is 415.
pub(crate) async fn require_json(request: Request, next: Next) -> Response {
    if request.method() != Method::POST || !json_endpoint(request.uri().path()) {
        return next.run(request).await;
    }
    let content_type = request.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or("(not ASCII)"));
    match content_type {
        Some(value) if is_json(value) => next.run(request).await,
        other => {
            let what =
                other.map_or_else(|| "no Content-Type".to_owned(), |v| format!("Content-Type '{}'", infile::escape(v)));
            ApiError::request(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!(
                    "{} takes a JSON body (Content-Type: application/json); this request has {what}",
                    request.uri().path()
                ),
            )
            .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_server_accepts_loopback_names_ip_literals_and_the_allowed_names() {
        let mut hosts = Hosts::new(vec!["Chat.Example.org".to_owned()]);
        hosts.bound(true);
        for host in [
            "localhost",
            "localhost:8080",
            "LOCALHOST.",
            "app.localhost:1",
            "127.0.0.1:8080",
            "[::1]:8080",
            "[::1]",
            "10.0.0.7",
            "chat.example.org:443",
        ] {
            assert!(hosts.accepts(host), "{host}");
        }
        for host in ["attacker.example:8080", "attacker.example", "localhost.attacker.example", "example.org", ""] {
            assert!(!hosts.accepts(host), "{host}");
        }
    }

    #[test]
    fn a_server_bound_beyond_loopback_checks_hosts_only_when_names_are_given() {
        let mut open = Hosts::new(Vec::new());
        open.bound(false);
        assert!(open.accepts("anything.example"));
        let mut named = Hosts::new(vec!["gpu-3.lan".to_owned()]);
        named.bound(false);
        assert!(named.accepts("gpu-3.lan:8080"));
        assert!(!named.accepts("anything.example"));
    }

    #[test]
    fn json_content_types() {
        for value in ["application/json", "Application/JSON; charset=utf-8", "application/vnd.api+json"] {
            assert!(is_json(value), "{value}");
        }
        for value in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "json"]
        {
            assert!(!is_json(value), "{value}");
        }
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("a.b:x"), "a.b:x");
    }
}
