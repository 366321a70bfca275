//! The web page at `/`: its files over HTTP (types, caching, the Content-Security-Policy, 404s),
//! the generation history behind its speed chart, and the page itself in headless Chromium
//! driven over WebDriver with the reference model: a chat message typed and sent with the
//! keyboard gets the model's greedy answer, the route panel shows `ready`, and a screenshot is
//! written to `target/serve-page/screenshot.png`; and, on a server that needs an API key, the
//! page asks for it, says when the server refuses one, and chats once given the right one.

mod common;
mod serve_common;
mod webdriver;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serve_common::{Response, Server, tiny_model};
use webdriver::{Browser, ENTER, RELEASE, SHIFT};

/// Finished generations `/redline/status` keeps in `history` (README, `redline serve`).
const HISTORY_MAX: usize = 120;

fn tiny_server() -> Server {
    let model = tiny_model("page", 256);
    Server::start(&["--model", model.to_str().unwrap(), "--device", "sim", "--replay-backend", "auto"])
}

/// `GET path` with extra header lines.
fn get_with(server: &Server, path: &str, headers: &str) -> Response {
    serve_common::request_with(server.addr, "GET", path, headers, b"")
}

/// The `src` and `href` values of the page that are not fragments.
fn referenced(html: &str) -> Vec<String> {
    let mut urls: Vec<String> = ["src=\"", "href=\""]
        .iter()
        .flat_map(|attribute| html.split(attribute).skip(1).map(|rest| rest.split('"').next().unwrap().to_owned()))
        .filter(|url| !url.starts_with('#'))
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

#[test]
fn the_page_and_its_files_are_served_with_their_types_and_a_self_only_policy() {
    let server = tiny_server();
    let page = server.get("/");
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    let policy = page.header("content-security-policy").expect("a Content-Security-Policy");
    for directive in ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'"] {
        assert!(policy.split(';').any(|d| d.trim() == directive), "{directive} missing from {policy}");
    }
    assert!(!policy.contains("unsafe") && !policy.contains("http"), "{policy}");
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    let html = page.text();
    assert!(html.contains("<title>Redline</title>"), "{html}");

    let urls = referenced(&html);
    let types =
        [(".js", "text/javascript; charset=utf-8"), (".css", "text/css; charset=utf-8"), (".svg", "image/svg+xml")];
    for (extension, content_type) in types {
        let url = urls.iter().find(|u| u.ends_with(extension)).unwrap_or_else(|| panic!("no {extension} in {urls:?}"));
        let asset = server.get(url);
        assert_eq!(asset.status, 200, "{url}");
        assert_eq!(asset.header("content-type"), Some(content_type), "{url}");
        assert_eq!(asset.header("x-content-type-options"), Some("nosniff"), "{url}");
        assert!(asset.body.len() > 100, "{url}");
        // Revalidation: the tag names this content, and a browser holding it gets a bodiless 304.
        let tag = asset.header("etag").unwrap_or_else(|| panic!("{url}: no ETag"));
        let again = get_with(&server, url, &format!("If-None-Match: {tag}\r\n"));
        assert_eq!(again.status, 304, "{url}");
        assert!(again.body.is_empty(), "{url}");
        let other = get_with(&server, url, "If-None-Match: \"0000000000000000\"\r\n");
        assert_eq!((other.status, other.body.len()), (200, asset.body.len()), "{url}");
    }
    for url in &urls {
        assert!(url.starts_with("/assets/"), "the page loads {url}, not an embedded file");
        assert_eq!(server.request("HEAD", url, b"").status, 200, "HEAD {url}");
    }
}

#[test]
fn an_unknown_asset_is_the_404_error_object() {
    let server = tiny_server();
    let missing = server.get("/assets/missing.js");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"]["code"], "not_found", "{}", missing.text());
    assert!(missing.json()["error"]["message"].as_str().unwrap().contains("/assets/missing.js"));
    let head = server.request("HEAD", "/assets/missing.js", b"");
    assert_eq!(head.status, 404);
    assert!(head.body.is_empty());
    let post = server.request("POST", "/assets/app.js", b"{}");
    assert_eq!(post.status, 405);
    assert_eq!(post.json()["error"]["code"], "method_not_allowed", "{}", post.text());
}

fn history(server: &Server) -> Vec<Value> {
    let status = server.get("/redline/status").json();
    status["history"].as_array().unwrap_or_else(|| panic!("no history: {status}")).clone()
}

#[test]
fn the_history_has_one_entry_per_finished_generation_and_is_bounded() {
    let server = tiny_server();
    assert_eq!(history(&server), Vec::<Value>::new());
    let mut usages = Vec::new();
    for (prompt, max_tokens) in [("the cat", 6), ("a dog", 9), ("hello", 3)] {
        let request = json!({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0});
        let body = server.post("/v1/completions", &request).json();
        usages.push(body["usage"].clone());
    }
    // A refused request generates nothing.
    assert_eq!(server.post("/v1/completions", &json!({"prompt": "x", "temperature": 9})).status, 400);
    let entries = history(&server);
    assert_eq!(entries.len(), 3, "{entries:?}");
    for (entry, usage) in entries.iter().zip(&usages) {
        assert_eq!(entry["prompt_tokens"], usage["prompt_tokens"], "{entry}");
        assert_eq!(entry["completion_tokens"], usage["completion_tokens"], "{entry}");
        let decode = entry["decode_forwards"].as_u64().unwrap();
        assert_eq!(decode + 1, usage["completion_tokens"].as_u64().unwrap(), "{entry}");
        let retained = entry["retained_forwards"].as_u64().unwrap();
        let expected = if retained == 0 {
            "ordinary"
        } else if retained >= decode {
            "retained"
        } else {
            "mixed"
        };
        assert_eq!(entry["route"], expected, "{entry}");
        assert!(entry["ordinary_forwards"].as_u64().unwrap() >= 1, "the prefill is ordinary: {entry}");
        assert!(entry["decode_tokens_per_second"].as_f64().unwrap() > 0.0, "{entry}");
    }
    let times: Vec<u64> = entries.iter().map(|e| e["unix_ms"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    // The controller warms up on the first generation and replays from then on.
    assert_eq!(entries[0]["route"], "mixed", "{entries:?}");
    assert_eq!(entries[1]["route"], "retained", "{entries:?}");
    let status = server.get("/redline/status").json();
    let retained: u64 = entries.iter().map(|e| e["retained_forwards"].as_u64().unwrap()).sum();
    assert_eq!(status["observations"]["retained"], retained, "{status}");

    for _ in 0..HISTORY_MAX {
        assert_eq!(server.post("/v1/completions", &json!({"prompt": "x", "max_tokens": 1})).status, 200);
    }
    let last = server.post("/v1/completions", &json!({"prompt": "one two three", "max_tokens": 2})).json();
    let entries = history(&server);
    assert_eq!(entries.len(), HISTORY_MAX);
    assert_eq!(entries[HISTORY_MAX - 1]["prompt_tokens"], last["usage"]["prompt_tokens"]);
    assert_eq!(entries[HISTORY_MAX - 1]["completion_tokens"], 2);
    assert!(entries[..HISTORY_MAX - 1].iter().all(|e| e["completion_tokens"] == 1), "the oldest were dropped");
}

#[test]
fn the_status_shows_the_generation_running_now() {
    let server = serve_common::long_server("page-progress", &[]);
    assert_eq!(server.get("/redline/status").json()["generating"], Value::Null);
    let body = json!({"prompt": "x", "max_tokens": 4000, "temperature": 0, "stream": true}).to_string();
    let mut stream = serve_common::send(server.addr, "POST", "/v1/completions", body.as_bytes());
    serve_common::read_until(&mut stream, "data: ");
    let running = |at_least: u64| {
        let mut seen = Value::Null;
        serve_common::eventually(Duration::from_secs(30), "the running generation's progress", || {
            seen = server.get("/redline/status").json()["generating"].clone();
            seen["tokens"].as_u64().is_some_and(|n| n >= at_least)
        });
        seen
    };
    let first = running(8);
    let later = running(first["tokens"].as_u64().unwrap() + 8);
    assert!(later["seconds"].as_f64() > first["seconds"].as_f64(), "{first} then {later}");
    assert!(later["decode_tokens_per_second"].as_f64().unwrap() > 0.0, "{later}");
    drop(stream);
    serve_common::eventually(Duration::from_secs(10), "the cancelled generation to leave the status", || {
        server.get("/redline/status").json()["generating"].is_null()
    });
}

/// `target/serve-page/screenshot.png` of this workspace.
fn screenshot_path() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(&tmp).join("serve-page").join("screenshot.png")
}

/// The assistant's message: its `data-state` and text, once it has one.
const ANSWER: &str = "const m = document.querySelector('#conversation .message.assistant');
    return m ? {state: m.dataset.state, text: m.querySelector('.content').textContent,
                meta: m.querySelector('.meta').textContent} : null;";

#[test]
fn the_page_chats_with_the_reference_model_and_shows_the_route() {
    let Some(model) = common::reference_model() else { return };
    let Some((chromium, driver)) = webdriver::tools() else { return };
    let start = Instant::now();
    // The default route when the fixture's sealing run promoted it; asked for otherwise.
    let route = common::arming(&["smollm2-135m-gfx1100-sim"]);
    let server = Server::start(&[&["--model", &model, "--device", "sim"], route].concat());
    let browser = Browser::start(&chromium, &driver);
    browser.navigate(&format!("http://{}/", server.addr));
    assert_eq!(browser.title(), "Redline");
    browser.wait_for(Duration::from_secs(30), "the route panel shows a state", |b| {
        let state = b.execute("return document.getElementById('controller-state').textContent;", &[]);
        (state.as_str().is_some_and(|s| s != "unknown")).then_some(())
    });
    browser.wait_for(Duration::from_secs(30), "the model list is filled", |b| {
        let value = b.execute("return document.getElementById('model').value;", &[]);
        (value == "SmolLM2-135M-Instruct.Q4_1").then_some(())
    });
    let loaded = start.elapsed();

    // Shift+Enter is a new line, not a send.
    let message = browser.element("#message");
    browser.type_keys(&message, &format!("line one{SHIFT}{ENTER}{RELEASE}line two"));
    let typed = browser.execute("return document.getElementById('message').value;", &[]);
    assert_eq!(typed, "line one\nline two");
    assert_eq!(browser.execute(ANSWER, &[]), Value::Null, "Shift+Enter sent the message");
    browser.clear(&message);

    for (id, value) in [("#temperature", "0"), ("#max-tokens", "12")] {
        let input = browser.element(id);
        browser.clear(&input);
        browser.type_keys(&input, value);
    }
    let question = "What is the capital of France?";
    browser.type_keys(&message, question);
    let sent = Instant::now();
    browser.type_keys(&message, ENTER);
    let answer = browser.wait_for(Duration::from_secs(180), "the answer is complete", |b| {
        let answer = b.execute(ANSWER, &[]);
        (answer.is_object() && answer["state"] != "streaming").then_some(answer)
    });
    let answered = sent.elapsed();
    assert_eq!(answer["state"], "done", "{answer}");
    let text = answer["text"].as_str().unwrap();
    assert!(text.contains("Paris"), "{answer}");

    let direct = server.post(
        "/v1/chat/completions",
        &json!({
            "model": "SmolLM2-135M-Instruct.Q4_1",
            "messages": [{"role": "user", "content": question}],
            "temperature": 0,
            "top_p": 1,
            "max_tokens": 12,
        }),
    );
    assert_eq!(direct.status, 200, "{}", direct.text());
    assert_eq!(direct.json()["choices"][0]["message"]["content"], text, "the page and the API differ");

    browser.wait_for(Duration::from_secs(30), "the route panel shows ready and the generation", |b| {
        let panel = b.execute(
            "return {state: document.getElementById('controller-state').textContent,
                     points: document.querySelectorAll('#chart .point').length};",
            &[],
        );
        (panel["state"] == "ready" && panel["points"].as_u64() >= Some(1)).then_some(())
    });
    let path = screenshot_path();
    let png = browser.screenshot();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert!(png.len() > 20_000, "a {} byte screenshot is blank", png.len());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &png).unwrap();
    println!(
        "page loaded in {:.1} s, answered in {:.1} s ({text:?}), {:.1} s in all; screenshot {} ({} bytes)",
        loaded.as_secs_f64(),
        answered.as_secs_f64(),
        start.elapsed().as_secs_f64(),
        path.display(),
        png.len()
    );
}

/// Whether the key form is shown, and the reason it gives.
const KEY_FORM: &str = "return {shown: !document.getElementById('key-section').hidden,
    reason: document.getElementById('key-reason').textContent};";

#[test]
fn the_page_asks_for_the_key_of_a_server_that_needs_one() {
    let Some((chromium, driver)) = webdriver::tools() else { return };
    let key = "sk-page-test-42";
    let model = tiny_model("page-key", 256);
    let server = Server::start(&["--model", model.to_str().unwrap(), "--device", "sim", "--api-key", key]);
    let browser = Browser::start(&chromium, &driver);
    // The page itself is open.
    browser.navigate(&format!("http://{}/", server.addr));
    assert_eq!(browser.title(), "Redline");
    let form = browser.wait_for(Duration::from_secs(30), "the key form", |b| {
        let form = b.execute(KEY_FORM, &[]);
        (form["shown"] == true).then_some(form)
    });
    assert!(form["reason"].as_str().unwrap().contains("needs an API key"), "{form}");
    let focused = browser.execute("return document.activeElement.id;", &[]);
    assert_eq!(focused, "api-key", "the key field is not focused");

    // A wrong key, submitted with Enter, is refused by the server and asked for again.
    let field = browser.element("#api-key");
    browser.type_keys(&field, &format!("{key}-wrong{ENTER}"));
    browser.wait_for(Duration::from_secs(30), "the wrong key to be refused", |b| {
        let form = b.execute(KEY_FORM, &[]);
        (form["shown"] == true && form["reason"].as_str().is_some_and(|r| r.contains("refused the key"))).then_some(())
    });

    // The right key: the model list fills and a message gets the API's answer.
    let field = browser.element("#api-key");
    browser.clear(&field);
    browser.type_keys(&field, &format!("{key}{ENTER}"));
    browser.wait_for(Duration::from_secs(30), "the model list is filled", |b| {
        (b.execute("return document.getElementById('model').value;", &[]) == "page-key").then_some(())
    });
    assert_eq!(browser.execute(KEY_FORM, &[])["shown"], false);
    for (id, value) in [("#temperature", "0"), ("#max-tokens", "6")] {
        let input = browser.element(id);
        browser.clear(&input);
        browser.type_keys(&input, value);
    }
    let message = browser.element("#message");
    browser.type_keys(&message, &format!("hello{ENTER}"));
    let answer = browser.wait_for(Duration::from_secs(60), "the answer is complete", |b| {
        let answer = b.execute(ANSWER, &[]);
        (answer.is_object() && answer["state"] != "streaming").then_some(answer)
    });
    assert_eq!(answer["state"], "done", "{answer}");
    let request = json!({
        "model": "page-key",
        "messages": [{"role": "user", "content": "hello"}],
        "temperature": 0,
        "top_p": 1,
        "max_tokens": 6,
    })
    .to_string();
    let auth = format!("Authorization: Bearer {key}\r\n");
    let direct = serve_common::request_with(server.addr, "POST", "/v1/chat/completions", &auth, request.as_bytes());
    assert_eq!(direct.status, 200, "{}", direct.text());
    assert_eq!(direct.json()["choices"][0]["message"]["content"], answer["text"], "the page and the API differ");
    // Requests without the key were refused, none with it.
    let metrics = get_with(&server, "/metrics", &format!("Authorization: Bearer {key}\r\n")).text();
    assert!(metrics.contains("redline_requests_total{endpoint=\"/v1/models\",status=\"401\"}"), "{metrics}");
    assert!(
        metrics.contains("redline_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 2\n"),
        "{metrics}"
    );
}
