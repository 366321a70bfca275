//! Log-probabilities in OpenAI's shapes: chat's `{"content": [{"token", "logprob", "bytes",
//! "top_logprobs"}], "refusal": null}` and the completions' legacy `{"tokens",
//! "token_logprobs", "top_logprobs", "text_offset"}`.
//!
//! Every generated token has an entry, in order, so there are as many as `completion_tokens`:
//! the tokens of a stop string and the end-of-sequence token too, though their text is not in
//! the completion. A token's text is its bytes decoded lossily on their own (a token holding part
//! of a UTF-8 character shows U+FFFD; `bytes` has the raw bytes), control tokens by name
//! (`<|im_end|>`). A stream sends a token's entry with the first chunk after it that carries
//! text, and the entries of tokens whose text is never shown in a last chunk of empty text
//! before the one with `finish_reason`: the entries of all chunks together are the whole
//! response's.

use serde_json::{Map, Value, json};
use tokenizer::{TokenLogprobs, Tokenizer};

/// One token as a log-probability entry names it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scored {
    /// Its text (lossy; control tokens by name).
    pub text: String,
    /// Its raw bytes.
    pub bytes: Vec<u8>,
    /// Its log-probability.
    pub logprob: f32,
}

/// A generated token's entry: the token and the most likely alternatives at its step.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The generated token.
    pub chosen: Scored,
    /// The alternatives, most likely first (equal ones in id order, as greedy sampling picks).
    pub top: Vec<Scored>,
}

impl Entry {
    /// The entry of `record`, its tokens named by `tokenizer`.
    pub(crate) fn new(tokenizer: &Tokenizer, record: &TokenLogprobs) -> Self {
        let scored = |id: u32, logprob: f32| {
            let bytes = tokenizer.token_bytes(id, true).unwrap_or_default().to_vec();
            Scored { text: String::from_utf8_lossy(&bytes).into_owned(), bytes, logprob }
        };
        Self {
            chosen: scored(record.token, record.logprob),
            top: record.top.iter().map(|&(id, logprob)| scored(id, logprob)).collect(),
        }
    }
}

/// Chat's `logprobs` object for `entries`.
pub(crate) fn chat(entries: &[Entry]) -> Value {
    let scored = |s: &Scored| json!({"token": s.text, "logprob": number(s.logprob), "bytes": s.bytes});
    let content: Vec<Value> = entries
        .iter()
        .map(|entry| {
            let mut value = scored(&entry.chosen);
            value["top_logprobs"] = entry.top.iter().map(scored).collect();
            value
        })
        .collect();
    json!({"content": content, "refusal": Value::Null})
}

/// The completions' legacy `logprobs` object for `entries`, whose first token starts `offset`
/// characters into the completion; `offset` is advanced past the last. A token's offset is the
/// sum of the lengths, in characters, of the texts of the tokens before it (so that the tokens'
/// texts joined and sliced at an offset start with that token). `top_logprobs` maps each
/// alternative's text to its log-probability, and holds the generated token too (OpenAI's "up to
/// `logprobs` + 1"); of alternatives with one text, the most likely is kept.
pub(crate) fn completion(entries: &[Entry], offset: &mut usize) -> Value {
    let mut text_offset = Vec::with_capacity(entries.len());
    let top: Vec<Map<String, Value>> = entries
        .iter()
        .map(|entry| {
            text_offset.push(*offset);
            *offset += entry.chosen.text.chars().count();
            let mut top = Map::new();
            for scored in entry.top.iter().chain([&entry.chosen]) {
                top.entry(scored.text.clone()).or_insert_with(|| number(scored.logprob));
            }
            top
        })
        .collect();
    json!({
        "tokens": entries.iter().map(|e| e.chosen.text.as_str()).collect::<Vec<_>>(),
        "token_logprobs": entries.iter().map(|e| number(e.chosen.logprob)).collect::<Vec<_>>(),
        "top_logprobs": top,
        "text_offset": text_offset,
    })
}

/// `value` as the JSON number of its shortest decimal form (`-0.6931472`, not the f64 digits of
/// the f32, `-0.6931471824645996`): parsed back as an f32 it is `value` again.
fn number(value: f32) -> Value {
    // A finite f32's decimal form is a valid f64; a non-finite one has no JSON number.
    value.to_string().parse::<f64>().map_or(Value::Null, Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(text: &str, logprob: f32) -> Scored {
        Scored { text: text.to_owned(), bytes: text.as_bytes().to_vec(), logprob }
    }

    fn entries() -> Vec<Entry> {
        vec![
            Entry { chosen: scored("Hé", -0.25), top: vec![scored("Hé", -0.25), scored("A", -2.5)] },
            // A partial character: two tokens with the same lossy text.
            Entry {
                chosen: Scored { text: "\u{FFFD}".into(), bytes: vec![0xE2], logprob: -1.5 },
                top: vec![
                    scored("x", -0.5),
                    Scored { text: "\u{FFFD}".into(), bytes: vec![0xF0], logprob: -1.0 },
                    Scored { text: "\u{FFFD}".into(), bytes: vec![0xE2], logprob: -1.5 },
                ],
            },
            Entry { chosen: scored("<|im_end|>", -0.125), top: vec![] },
        ]
    }

    #[test]
    fn the_chat_shape() {
        let value = chat(&entries());
        assert_eq!(value["refusal"], Value::Null);
        let content = value["content"].as_array().unwrap();
        assert_eq!(content.len(), 3);
        assert_eq!(
            content[0],
            json!({"token": "Hé", "logprob": -0.25, "bytes": [72, 195, 169], "top_logprobs": [
                {"token": "Hé", "logprob": -0.25, "bytes": [72, 195, 169]},
                {"token": "A", "logprob": -2.5, "bytes": [65]},
            ]})
        );
        assert_eq!(content[1]["bytes"], json!([0xE2]));
        assert_eq!(content[1]["top_logprobs"][1]["bytes"], json!([0xF0]));
        assert_eq!(content[2]["top_logprobs"], json!([]));
        assert_eq!(chat(&[]), json!({"content": [], "refusal": null}));
    }

    #[test]
    fn numbers_are_the_shortest_form_of_the_f32() {
        let third = -(1.0f32 / 3.0);
        assert_eq!(number(third).to_string(), "-0.33333334");
        assert_eq!(number(third).as_f64().unwrap().to_string().parse::<f32>().unwrap(), third);
        assert_eq!(number(-9.077_679e-5).to_string(), "-0.00009077679");
        assert_eq!(number(f32::NEG_INFINITY), Value::Null);
    }

    #[test]
    fn the_legacy_shape_with_offsets_in_characters() {
        let mut offset = 3;
        let value = completion(&entries(), &mut offset);
        assert_eq!(value["tokens"], json!(["Hé", "\u{FFFD}", "<|im_end|>"]));
        assert_eq!(value["token_logprobs"], json!([-0.25, -1.5, -0.125]));
        // "Hé" is two characters, U+FFFD one.
        assert_eq!(value["text_offset"], json!([3, 5, 6]));
        assert_eq!(offset, 16);
        assert_eq!(value["top_logprobs"][0], json!({"Hé": -0.25, "A": -2.5}));
        // The more likely of the two U+FFFD alternatives, and the chosen token under its text.
        assert_eq!(value["top_logprobs"][1], json!({"x": -0.5, "\u{FFFD}": -1.0}));
        // With no alternatives asked for, the generated token alone.
        assert_eq!(value["top_logprobs"][2], json!({"<|im_end|>": -0.125}));
    }
}
