//! The web page at `/`: a chat with the served models and the live route panel. Its files are
//! embedded in the binary and served under [`ASSET_PREFIX`]; nothing is fetched from elsewhere,
//! and the Content-Security-Policy says so to the browser. The page needs no API key itself;
//! the requests its script makes do, when the server has one.

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest as _, Sha256};

use crate::state::AppState;

/// Where the page's files are served.
pub(crate) const ASSET_PREFIX: &str = "/assets/";

/// Only the server's own files, scripts without `eval` or inline code, no frames, no forms
/// posted elsewhere: the page is a client of this server's API and nothing else.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// An embedded file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asset {
    /// The name after [`ASSET_PREFIX`] (`app.js`), or `""` for the page itself at `/`.
    pub name: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    pub bytes: &'static [u8],
}

/// The page and its files.
pub(crate) static ASSETS: [Asset; 4] = [
    Asset { name: "", content_type: "text/html; charset=utf-8", bytes: include_bytes!("assets/index.html") },
    Asset { name: "app.css", content_type: "text/css; charset=utf-8", bytes: include_bytes!("assets/app.css") },
    Asset { name: "app.js", content_type: "text/javascript; charset=utf-8", bytes: include_bytes!("assets/app.js") },
    Asset { name: "icon.svg", content_type: "image/svg+xml", bytes: include_bytes!("assets/icon.svg") },
];

/// `GET /` and `GET /assets/NAME` for each embedded file (HEAD too: axum answers it from GET
/// without the body). Any other name under the prefix falls through to the router's 404.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    ASSETS.iter().fold(Router::new(), |router, asset| {
        let path = if asset.name.is_empty() { "/".to_owned() } else { format!("{ASSET_PREFIX}{}", asset.name) };
        router.route(&path, get(move |request: HeaderMap| async move { serve(asset, &request) }))
    })
}

/// The file, or 304 when the browser's copy (`If-None-Match`) is this one.
fn serve(asset: &Asset, request: &HeaderMap) -> Response {
    let tag = etag(asset.bytes);
    // The files change only with the binary; `no-cache` makes the browser ask each time, and
    // the tag lets the answer be a bodiless 304.
    let headers = [
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        (header::ETAG, tag.clone()),
    ];
    let fresh = request.get_all(header::IF_NONE_MATCH).iter().any(|value| matches(value, &tag));
    if fresh {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (headers, [(header::CONTENT_TYPE, asset.content_type)], asset.bytes).into_response()
}

/// A strong tag from the content: the first 16 hex digits of its SHA-256, quoted.
fn etag(bytes: &[u8]) -> HeaderValue {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    HeaderValue::from_str(&format!("\"{hex}\"")).unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

/// Whether an `If-None-Match` value (a list of tags, or `*`) names `tag`.
fn matches(value: &HeaderValue, tag: &HeaderValue) -> bool {
    let (Ok(value), Ok(tag)) = (value.to_str(), tag.to_str()) else { return false };
    value.split(',').map(str::trim).any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_named_once_and_is_non_empty_utf8() {
        for (i, asset) in ASSETS.iter().enumerate() {
            assert!(ASSETS[..i].iter().all(|other| other.name != asset.name), "{} twice", asset.name);
            assert!(!asset.bytes.is_empty(), "{}", asset.name);
            assert!(std::str::from_utf8(asset.bytes).is_ok(), "{} is not UTF-8", asset.name);
        }
    }

    #[test]
    fn the_page_loads_every_asset_and_nothing_else() {
        let html = std::str::from_utf8(ASSETS[0].bytes).unwrap();
        let mut referenced = std::collections::BTreeSet::new();
        for attribute in ["src=\"", "href=\""] {
            for rest in html.split(attribute).skip(1) {
                let url = rest.split('"').next().unwrap();
                if url.starts_with('#') {
                    continue;
                }
                let name = url.strip_prefix(ASSET_PREFIX).unwrap_or_else(|| panic!("{url} is not an embedded asset"));
                assert!(ASSETS.iter().any(|a| !a.name.is_empty() && a.name == name), "{url} is not served");
                referenced.insert(name);
            }
        }
        assert_eq!(referenced.len(), ASSETS.len() - 1, "{referenced:?}");
    }

    #[test]
    fn if_none_match_takes_lists_weak_tags_and_star() {
        let tag = etag(b"x");
        let tag_text = tag.to_str().unwrap().to_owned();
        assert_eq!(tag_text.len(), 18, "{tag_text}");
        for value in [tag_text.clone(), format!("\"0\", W/{tag_text}"), "*".to_owned()] {
            assert!(matches(&HeaderValue::from_str(&value).unwrap(), &tag), "{value}");
        }
        assert!(!matches(&HeaderValue::from_static("\"0123456789abcdef\""), &tag));
        assert_ne!(etag(b"y"), tag);
    }
}
