//! OpenAI's fields over raw HTTP: the `max_tokens` defaults (16 for completions, what the
//! context leaves for chat, both capped by `--max-tokens-limit`); `logit_bias` and the penalties
//! changing the output; log-probability entries for every generated token, the stop string's and
//! the end's included, the same whole and streamed; and a 400 naming every field that would
//! change the output and is not implemented, and every unknown one.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{Server, stream_text, tiny_model};

const CHAT: &str = "/v1/chat/completions";
const COMPLETIONS: &str = "/v1/completions";

/// The tiny model's token for the byte `x` (`gguf::tiny`: byte tokens start at id 3).
const TOKEN_X: u32 = 3 + 0x78;

fn server(context: u32, extra: &[&str]) -> Server {
    let model = tiny_model(&format!("fields-{context}"), context);
    let mut args = vec!["--model", model.to_str().unwrap(), "--device", "sim"];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn user(content: &str) -> Value {
    json!([{"role": "user", "content": content}])
}

fn usage(response: &Value, name: &str) -> u64 {
    response["usage"][name].as_u64().unwrap_or_else(|| panic!("no usage.{name}: {response}"))
}

#[test]
fn without_max_tokens_a_completion_gets_16_and_a_chat_what_the_context_leaves() {
    let server = server(64, &[]);
    let done = server.post(COMPLETIONS, &json!({"prompt": "the cat", "temperature": 0})).json();
    // The tiny model does not stop by itself on this prompt: the default is reached.
    assert_eq!((usage(&done, "completion_tokens"), &done["choices"][0]["finish_reason"]), (16, &json!("length")));
    let streamed = server.post(COMPLETIONS, &json!({"prompt": "the cat", "temperature": 0, "stream": true}));
    assert_eq!(stream_text(&streamed.events()), done["choices"][0]["text"].as_str().unwrap());

    let chat = server.post(CHAT, &json!({"messages": user("hello there"), "temperature": 0})).json();
    let prompt = usage(&chat, "prompt_tokens");
    assert!(prompt < 40, "{chat}");
    // --max-tokens-limit defaults to 63 here (the context less one): the room left is smaller.
    assert_eq!(usage(&chat, "completion_tokens"), 64 - prompt, "{chat}");
    assert_eq!(chat["choices"][0]["finish_reason"], "length");

    // Asking for more than the room is still an error, not a silent cut.
    let over = server.post(CHAT, &json!({"messages": user("hello there"), "max_tokens": 64 - prompt + 1}));
    assert_eq!((over.status, over.error_param()), (400, json!("max_tokens")));
}

#[test]
fn the_defaults_are_capped_by_the_max_tokens_limit() {
    let server = server(256, &["--max-tokens-limit", "10"]);
    let done = server.post(COMPLETIONS, &json!({"prompt": "the cat", "temperature": 0})).json();
    assert_eq!((usage(&done, "completion_tokens"), &done["choices"][0]["finish_reason"]), (10, &json!("length")));
    let chat = server.post(CHAT, &json!({"messages": user("hello there"), "temperature": 0})).json();
    assert_eq!((usage(&chat, "completion_tokens"), &chat["choices"][0]["finish_reason"]), (10, &json!("length")));
}

#[test]
fn logit_bias_and_penalties_change_what_is_generated() {
    let server = server(256, &[]);
    let ask = |extra: Value| {
        let mut request = json!({"prompt": "the cat", "max_tokens": 8, "temperature": 0, "logprobs": 1});
        request.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let response = server.post(COMPLETIONS, &request);
        assert_eq!(response.status, 200, "{}", response.text());
        response.json()["choices"][0].clone()
    };
    let biased = ask(json!({"logit_bias": {TOKEN_X.to_string(): 100}}));
    assert_eq!(biased["text"], "xxxxxxxx");
    // The log-probabilities are those of the biased logits: "x" is all but certain.
    for logprob in biased["logprobs"]["token_logprobs"].as_array().unwrap() {
        let logprob = logprob.as_f64().unwrap();
        assert!((-1e-3..=0.0).contains(&logprob), "{biased}");
    }
    let banned = ask(json!({"logit_bias": {TOKEN_X.to_string(): -100}, "prompt": "x"}));
    assert!(!banned["text"].as_str().unwrap().contains('x'), "{banned}");

    // Chat, whose entries carry each token's bytes: the tiny model repeats a newline.
    let chat = |penalty: i32| {
        let request = json!({
            "messages": user("hello there"), "max_tokens": 12, "temperature": 0, "logprobs": true,
            "frequency_penalty": penalty, "presence_penalty": penalty,
        });
        let response = server.post(CHAT, &request);
        assert_eq!(response.status, 200, "{}", response.text());
        let content = response.json()["choices"][0]["logprobs"]["content"].clone();
        let tokens: Vec<String> = content.as_array().unwrap().iter().map(|e| e["bytes"].to_string()).collect();
        let distinct = tokens.iter().collect::<std::collections::BTreeSet<_>>().len();
        (tokens, distinct)
    };
    let (plain, plain_distinct) = chat(0);
    let (penalized, penalized_distinct) = chat(2);
    assert_ne!(penalized, plain);
    assert!(penalized_distinct > plain_distinct, "{plain:?} {penalized:?}");
    let (encouraged, encouraged_distinct) = chat(-2);
    assert!(encouraged_distinct <= plain_distinct, "{plain:?} {encouraged:?}");
    assert_eq!(plain.len(), 12);

    // A bias on a token the model does not have names the field.
    let vocab_over = server.post(COMPLETIONS, &json!({"prompt": "x", "logit_bias": {"1000000": 1}}));
    assert_eq!((vocab_over.status, vocab_over.error_param()), (400, json!("logit_bias")));
}

/// A choice's log-probability entries as `(token, logprob)` and the response's finish reason,
/// whole or from every chunk of a stream.
fn entries(endpoint: &str, choices: &[Value]) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for choice in choices {
        let logprobs = &choice["logprobs"];
        if logprobs.is_null() {
            continue;
        }
        if endpoint == CHAT {
            for entry in logprobs["content"].as_array().unwrap() {
                out.push((entry["token"].as_str().unwrap().to_owned(), entry["logprob"].as_f64().unwrap()));
            }
        } else {
            let tokens = logprobs["tokens"].as_array().unwrap();
            let values = logprobs["token_logprobs"].as_array().unwrap();
            assert_eq!(tokens.len(), values.len());
            for (token, value) in tokens.iter().zip(values) {
                out.push((token.as_str().unwrap().to_owned(), value.as_f64().unwrap()));
            }
        }
    }
    out
}

#[test]
fn every_generated_token_has_an_entry_whole_and_streamed_with_a_stop_string() {
    let server = server(256, &[]);
    // The tiny model answers chat with newlines and this completion with control bytes: stop
    // strings of two of them end each within a few tokens, after a held-back first one.
    let cases = [
        (CHAT, json!({"messages": user("hello there"), "logprobs": true, "top_logprobs": 2, "stop": "\n\n"})),
        (CHAT, json!({"messages": user("hello there"), "logprobs": true, "stop": "never", "max_tokens": 5})),
        (COMPLETIONS, json!({"prompt": "the cat", "logprobs": 2, "stop": ["\u{6}\u{6}"]})),
        (COMPLETIONS, json!({"prompt": "the cat", "logprobs": 0, "max_tokens": 5})),
    ];
    for (endpoint, mut request) in cases {
        request["temperature"] = json!(0);
        let whole = server.post(endpoint, &request).json();
        let choice = &whole["choices"][0];
        let whole_entries = entries(endpoint, std::slice::from_ref(choice));
        assert_eq!(u64::try_from(whole_entries.len()).unwrap(), usage(&whole, "completion_tokens"), "{whole}");
        assert!(whole_entries.iter().all(|&(_, logprob)| logprob <= 0.0), "{whole}");
        let text = if endpoint == CHAT { &choice["message"]["content"] } else { &choice["text"] };
        let joined: String = whole_entries.iter().map(|(token, _)| token.as_str()).collect();
        assert!(joined.starts_with(text.as_str().unwrap()), "{joined:?} {whole}");
        if request["stop"] != json!("never") && request.get("max_tokens").is_none() {
            assert_eq!(choice["finish_reason"], "stop", "{whole}");
            // The stop string's tokens have entries; their text is not in the completion.
            assert!(joined.len() > text.as_str().unwrap().len(), "{whole}");
        }
        if endpoint == COMPLETIONS {
            let offsets = choice["logprobs"]["text_offset"].as_array().unwrap();
            let mut expected = 0;
            for ((token, _), offset) in whole_entries.iter().zip(offsets) {
                assert_eq!(offset.as_u64().unwrap(), expected, "{whole}");
                expected += u64::try_from(token.chars().count()).unwrap();
            }
        }

        request["stream"] = json!(true);
        let events = server.post(endpoint, &request).events();
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
        let chunks: Vec<Value> = events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
        let choices: Vec<Value> = chunks.iter().map(|c| c["choices"][0].clone()).collect();
        assert_eq!(stream_text(&events), text.as_str().unwrap());
        assert_eq!(entries(endpoint, &choices), whole_entries, "{events:?}");
        if endpoint == COMPLETIONS {
            // Offsets run on across chunks.
            let offsets: Vec<&Value> =
                choices.iter().filter_map(|c| c["logprobs"]["text_offset"].as_array()).flatten().collect();
            assert_eq!(offsets, choice["logprobs"]["text_offset"].as_array().unwrap().iter().collect::<Vec<_>>());
        }
        // Only the last chunk says why the stream ended, and it carries no entries.
        let last = choices.last().unwrap();
        assert_eq!((&last["finish_reason"], &last["logprobs"]), (&choice["finish_reason"], &Value::Null));
    }
}

#[test]
fn fields_that_would_change_the_output_and_unknown_fields_are_400_naming_them() {
    let server = server(256, &[]);
    let messages = user("hi");
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (COMPLETIONS, json!({"best_of": 2}), "best_of", "unsupported_value"),
        (COMPLETIONS, json!({"echo": true}), "echo", "unsupported_value"),
        (COMPLETIONS, json!({"suffix": "done"}), "suffix", "unsupported_parameter"),
        (COMPLETIONS, json!({"logprobs": 6}), "logprobs", "invalid_value"),
        (COMPLETIONS, json!({"logprobs": true}), "logprobs", "invalid_type"),
        (COMPLETIONS, json!({"presence_penalty": 3}), "presence_penalty", "invalid_value"),
        (COMPLETIONS, json!({"frequency_penalty": -2.5}), "frequency_penalty", "invalid_value"),
        (COMPLETIONS, json!({"logit_bias": {"5": 101}}), "logit_bias", "invalid_value"),
        (COMPLETIONS, json!({"user": 1}), "user", "invalid_type"),
        (COMPLETIONS, json!({"top_logprobs": 2}), "top_logprobs", "unknown_parameter"),
        (COMPLETIONS, json!({"frobnicate": true}), "frobnicate", "unknown_parameter"),
        (CHAT, json!({"tools": [{"type": "function", "function": {"name": "f"}}]}), "tools", "unsupported_parameter"),
        (CHAT, json!({"tool_choice": "required"}), "tool_choice", "unsupported_parameter"),
        (CHAT, json!({"functions": [{"name": "f"}]}), "functions", "unsupported_parameter"),
        (CHAT, json!({"function_call": "auto"}), "function_call", "unsupported_parameter"),
        (CHAT, json!({"response_format": {"type": "json_object"}}), "response_format", "unsupported_value"),
        (CHAT, json!({"audio": {"voice": "alloy", "format": "mp3"}}), "audio", "unsupported_parameter"),
        (CHAT, json!({"modalities": ["audio"]}), "modalities", "unsupported_value"),
        (CHAT, json!({"prediction": {"type": "content", "content": "x"}}), "prediction", "unsupported_parameter"),
        (CHAT, json!({"n": 2}), "n", "invalid_value"),
        (CHAT, json!({"logprobs": 3}), "logprobs", "invalid_type"),
        (CHAT, json!({"top_logprobs": 3}), "top_logprobs", "invalid_value"),
        (CHAT, json!({"logprobs": true, "top_logprobs": 21}), "top_logprobs", "invalid_value"),
        (CHAT, json!({"echo": true}), "echo", "unknown_parameter"),
        (CHAT, json!({"max_tokenz": 3}), "max_tokenz", "unknown_parameter"),
    ];
    for (endpoint, fields, param, code) in cases {
        let mut request = if endpoint == CHAT { json!({"messages": messages}) } else { json!({"prompt": "x"}) };
        request.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        let response = server.post(endpoint, &request);
        assert_eq!(response.status, 400, "{request}: {}", response.text());
        let error = &response.json()["error"];
        assert_eq!(
            (&error["param"], &error["code"], &error["type"]),
            (&json!(param), &json!(code), &json!("invalid_request_error")),
            "{request}"
        );
        assert!(error["message"].as_str().unwrap().contains(param), "{error}");
    }
    // Fields that change nothing are accepted, with the values that change nothing.
    let accepted = json!({
        "messages": messages, "max_tokens": 2, "user": "u", "metadata": {"k": "v"}, "store": false,
        "service_tier": "auto", "parallel_tool_calls": false, "tool_choice": "none",
        "response_format": {"type": "text"}, "modalities": ["text"], "stream_options": null,
    });
    assert_eq!(server.post(CHAT, &accepted).status, 200);
    let accepted = json!({"prompt": "x", "max_tokens": 2, "user": "u", "best_of": 1, "echo": false, "suffix": null});
    assert_eq!(server.post(COMPLETIONS, &accepted).status, 200);
}

#[test]
fn help_says_what_the_logprobs_are_of_and_the_defaults() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_redline")).args(["serve", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "\"logprobs\" (0..=5)",
        "\"top_logprobs\" (0..=20)",
        "the log-softmax of the logits the sampler saw: after the penalties and\n`logit_bias`, before temperature and top-p",
        "without `max_tokens` a completion generates up to 16\ntokens and a chat completion up to what the context leaves, both at most --max-tokens-limit",
        "`presence_penalty`, `frequency_penalty`\n([-2, 2])",
        "(`unknown_parameter`)",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}
