//! API keys (`--api-key`, `REDLINE_API_KEY`, `--api-key-file`): when any is set, every `/v1/*`,
//! `/metrics` and `/redline/*` request needs `Authorization: Bearer KEY`; `/health` and the page
//! stay open. A key is compared by its SHA-256 digest against every configured key's, in time
//! that depends on neither key's bytes.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest as _, Sha256};

use super::error::ApiError;
use super::routes::AppState;

/// A key file's size at most.
pub(crate) const KEY_FILE_MAX_BYTES: u64 = 1 << 20;

/// A key's length at most.
const KEY_MAX_BYTES: usize = 512;

/// The accepted keys, as digests; empty when the server is open.
#[derive(Debug, Clone, Default)]
pub(crate) struct ApiKeys {
    digests: Vec<[u8; 32]>,
}

impl ApiKeys {
    /// The keys of `--api-key` (each flag; `REDLINE_API_KEY` when none is given) and of each
    /// `--api-key-file` (one key a line; blank lines and lines starting with `#` skipped).
    ///
    /// # Errors
    /// An empty or malformed key (naming the flag, or the file and line), an unreadable file or
    /// one with no key.
    pub(crate) fn load(flags: &[String], files: &[std::path::PathBuf]) -> Result<Self> {
        let mut keys = Self::default();
        for key in flags {
            keys.add(key).context("--api-key (or REDLINE_API_KEY)")?;
        }
        for path in files {
            keys.add_file(path).with_context(|| format!("--api-key-file {}", path.display()))?;
        }
        Ok(keys)
    }

    fn add_file(&mut self, path: &Path) -> Result<()> {
        let bytes = infile::read(path, infile::Limit::new("API key file", KEY_FILE_MAX_BYTES))?;
        let text = std::str::from_utf8(&bytes).map_err(|e| anyhow::anyhow!("not UTF-8 at byte {}", e.valid_up_to()))?;
        let before = self.digests.len();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self.add(line).with_context(|| format!("line {}", index + 1))?;
        }
        if self.digests.len() == before {
            bail!("no key in the file (one key a line; blank lines and # comments are skipped)");
        }
        Ok(())
    }

    fn add(&mut self, key: &str) -> Result<()> {
        if key.is_empty() {
            bail!("an API key must not be empty");
        }
        if key.len() > KEY_MAX_BYTES {
            bail!("an API key is {} bytes; at most {KEY_MAX_BYTES}", key.len());
        }
        // A key travels in a header: visible ASCII only, so no key can be sent differently
        // from how it was configured.
        if let Some((at, c)) = key.char_indices().find(|&(_, c)| !c.is_ascii_graphic()) {
            bail!("an API key may hold visible ASCII characters only; character {c:?} at byte {at} is not");
        }
        self.digests.push(Sha256::digest(key.as_bytes()).into());
        Ok(())
    }

    /// Whether any key is required.
    pub(crate) fn required(&self) -> bool {
        !self.digests.is_empty()
    }

    /// Whether `key` is one of the keys; every configured key is compared, each in full.
    fn accepts(&self, key: &[u8]) -> bool {
        let given: [u8; 32] = Sha256::digest(key).into();
        self.digests.iter().fold(false, |found, digest| found | equal(digest, &given))
    }
}

/// Equality of two digests in time independent of where they differ.
fn equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // An optimiser cannot turn the fold above into an early exit once the result is observed
    // only here.
    std::hint::black_box(difference) == 0
}

/// Whether `path` needs a key: the API, the metrics and the route status.
fn protected(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/") || path == "/metrics" || path.starts_with("/redline/")
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
    fn keys_from_flags_and_files_and_their_errors() {
        let dir = std::env::temp_dir().join(format!("redline-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("keys");
        std::fs::write(&file, "# team keys\n\n  sk-two  \nsk-three\n").unwrap();
        let keys = ApiKeys::load(&["sk-one".to_owned()], std::slice::from_ref(&file)).unwrap();
        for key in ["sk-one", "sk-two", "sk-three"] {
            assert!(keys.accepts(key.as_bytes()), "{key}");
        }
        for key in ["", "sk-on", "sk-one ", "SK-ONE", "# team keys"] {
            assert!(!keys.accepts(key.as_bytes()), "{key:?}");
        }
        assert!(!ApiKeys::default().required());

        let error = |flags: &[&str], text: Option<&str>| {
            let files: Vec<_> =
                text.map(|t| std::fs::write(&file, t).map(|()| file.clone()).unwrap()).into_iter().collect();
            let flags: Vec<String> = flags.iter().map(|s| (*s).to_owned()).collect();
            format!("{:#}", ApiKeys::load(&flags, &files).unwrap_err())
        };
        assert!(error(&[""], None).contains("must not be empty"));
        assert!(error(&["a b"], None).contains("character ' ' at byte 1"));
        assert!(error(&[], Some("# none\n\n")).contains("no key in the file"));
        let bad_line = error(&[], Some("good\nbad\u{7}key\n"));
        assert!(bad_line.contains("line 2") && bad_line.contains(&file.display().to_string()), "{bad_line}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bearer_tokens_and_protected_paths() {
        let token = |v: &str| bearer(&HeaderValue::from_str(v).unwrap()).map(<[u8]>::to_vec);
        assert_eq!(token("Bearer abc"), Some(b"abc".to_vec()));
        assert_eq!(token("bearer   abc"), Some(b"abc".to_vec()));
        assert_eq!(token("Basic abc"), None);
        assert_eq!(token("Bearer "), None);
        assert_eq!(token("Bearer"), None);
        for path in ["/v1/models", "/v1/chat/completions", "/v1/x", "/v1", "/metrics", "/redline/status"] {
            assert!(protected(path), "{path}");
        }
        for path in ["/health", "/", "/assets/app.js", "/v1x", "/metricsx", "/redline"] {
            assert!(!protected(path), "{path}");
        }
    }
}
