//! ChatML rendering against jinja2's rendering of the GGUF template (tests/data/gen_reference.py).

use serde_json::Value;
use tokenizer::{ChatTemplate, Message, SMOLLM2_CHATML};

#[test]
fn chatml_matches_jinja() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/chatml_expected.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let template_text = json["template"].as_str().unwrap();
    assert_eq!(template_text, SMOLLM2_CHATML);
    let template = ChatTemplate::from_gguf_template(template_text).unwrap();
    let conversations = json["conversations"].as_array().unwrap();
    assert!(conversations.len() >= 6);
    for c in conversations {
        let messages: Vec<Message> = c["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Message::new(m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        let generation = c["add_generation_prompt"].as_bool().unwrap();
        assert_eq!(
            template.render(&messages, generation),
            c["expected"].as_str().unwrap(),
            "{messages:?} generation={generation}"
        );
    }
}
