//! Chat templates. Only templates recognised exactly are rendered: a GGUF file carries a Jinja
//! template, and rendering a different one by guess would silently change the prompt.

use crate::Tokenizer;
use crate::error::ChatTemplateError;

/// SmolLM2's ChatML template, as stored in `tokenizer.chat_template`.
pub const SMOLLM2_CHATML: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// Plain ChatML: every message as `<|im_start|>role\ncontent<|im_end|>\n`, no default system message.
pub const PLAIN_CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Role: `system`, `user`, `assistant`, ...
    pub role: String,
    /// Message text.
    pub content: String,
}

impl Message {
    /// A message with `role` and `content`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self { role: role.into(), content: content.into() }
    }
}

/// A recognised chat template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatTemplate {
    /// ChatML (`<|im_start|>role\ncontent<|im_end|>\n`), with the system message inserted when the
    /// conversation does not start with one.
    ChatMl {
        /// System prompt used when the first message is not a system message (none for plain
        /// ChatML).
        default_system: Option<String>,
    },
}

impl ChatTemplate {
    /// Recognises a GGUF `tokenizer.chat_template` string; anything else is an error.
    pub fn from_gguf_template(template: &str) -> Result<Self, ChatTemplateError> {
        // Jinja reads the escape `\n` in a string literal as a newline: both spellings are one
        // template.
        let unescaped = template.replace("\\n", "\n");
        let template_text = template;
        let template = unescaped.as_str();
        if template == SMOLLM2_CHATML {
            return Ok(Self::ChatMl {
                default_system: Some("You are a helpful AI assistant named SmolLM, trained by Hugging Face".to_owned()),
            });
        }
        if template == PLAIN_CHATML {
            return Ok(Self::ChatMl { default_system: None });
        }
        let mut offset = [SMOLLM2_CHATML, PLAIN_CHATML]
            .map(|known| matched_len(template_text, known))
            .into_iter()
            .max()
            .unwrap_or(0);
        while !template_text.is_char_boundary(offset) {
            offset -= 1;
        }
        Err(ChatTemplateError::Unrecognised {
            len: template_text.len(),
            prefix: template_text.chars().take(48).collect(),
            offset,
            found: template_text.get(offset..).unwrap_or_default().chars().take(32).collect(),
        })
    }

    /// Renders `messages` exactly as the Jinja template does; with `add_generation_prompt` the
    /// text ends with the opening of an assistant turn.
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> String {
        self.parts(messages, add_generation_prompt).iter().map(|part| part.text()).collect()
    }

    /// Encodes `messages` as [`render`](Self::render) lays them out, with only the template's own
    /// markers read as control tokens: a role or content that spells `<|im_end|>` stays text, so
    /// a message cannot close its turn or open another one. For messages without such spellings
    /// the ids equal `tokenizer.encode(&self.render(..), true)`.
    pub fn encode(&self, tokenizer: &Tokenizer, messages: &[Message], add_generation_prompt: bool) -> Vec<u32> {
        let mut ids = Vec::new();
        for part in self.parts(messages, add_generation_prompt) {
            match part {
                Part::Marker(marker) => ids.extend(tokenizer.encode(marker, true)),
                Part::Text(text) => ids.extend(tokenizer.encode(&text, false)),
            }
        }
        ids
    }

    /// The rendered conversation as template markers and the text between them (adjacent text
    /// joined, so each run is tokenized as the whole rendering would tokenize it).
    fn parts(&self, messages: &[Message], add_generation_prompt: bool) -> Vec<Part> {
        let Self::ChatMl { default_system } = self;
        let mut parts = Parts::default();
        let mut turn = |role: &str, content: &str| {
            parts.marker(IM_START);
            parts.text(role);
            parts.text("\n");
            parts.text(content);
            parts.marker(IM_END);
            parts.text("\n");
        };
        // The template's `loop.first` test sits inside the loop: no messages, no system prompt.
        if let Some(system) = default_system
            && messages.first().is_some_and(|m| m.role != "system")
        {
            turn("system", system);
        }
        for m in messages {
            turn(&m.role, &m.content);
        }
        if add_generation_prompt {
            parts.marker(IM_START);
            parts.text("assistant\n");
        }
        parts.0
    }
}

/// ChatML's turn markers (control tokens of a ChatML vocabulary).
const IM_START: &str = "<|im_start|>";
const IM_END: &str = "<|im_end|>";

/// A piece of a rendered conversation.
#[derive(Debug, PartialEq, Eq)]
enum Part {
    /// A template marker, read as a control token.
    Marker(&'static str),
    /// Text from the template or a message, never read as control tokens.
    Text(String),
}

impl Part {
    fn text(&self) -> &str {
        match self {
            Self::Marker(marker) => marker,
            Self::Text(text) => text,
        }
    }
}

/// Builds a part list, joining adjacent text.
#[derive(Debug, Default)]
struct Parts(Vec<Part>);

/// How many leading bytes of `template` agree with `known`, the escape `\n` in `template`
/// agreeing with a newline in `known` (as [`ChatTemplate::from_gguf_template`] reads it).
fn matched_len(template: &str, known: &str) -> usize {
    let (t, k) = (template.as_bytes(), known.as_bytes());
    let (mut i, mut j) = (0, 0);
    while let (Some(&a), Some(&b)) = (t.get(i), k.get(j)) {
        if a == b {
            i += 1;
        } else if b == b'\n' && t.get(i..i + 2) == Some(b"\\n".as_slice()) {
            i += 2;
        } else {
            break;
        }
        j += 1;
    }
    i
}

impl Parts {
    fn marker(&mut self, marker: &'static str) {
        self.0.push(Part::Marker(marker));
    }

    fn text(&mut self, text: &str) {
        if let Some(Part::Text(last)) = self.0.last_mut() {
            last.push_str(text);
        } else {
            self.0.push(Part::Text(text.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unrecognised_is_error() {
        let err = ChatTemplate::from_gguf_template("{{ messages }}").unwrap_err();
        assert!(matches!(err, ChatTemplateError::Unrecognised { len: 14, offset: 1, .. }), "{err}");
        let near = SMOLLM2_CHATML.replace("SmolLM", "SmolLN");
        let err = ChatTemplate::from_gguf_template(&near).unwrap_err();
        let at = SMOLLM2_CHATML.find("SmolLM").unwrap() + 5;
        assert!(
            matches!(&err, ChatTemplateError::Unrecognised { offset, found, .. } if *offset == at && found.starts_with("N, trained")),
            "{err}"
        );
        assert!(err.to_string().contains(&format!("from byte offset {at} (\"N, trained")), "{err}");
    }

    #[test]
    fn the_offset_counts_escaped_newlines_as_written() {
        // Plain ChatML with `\n` escapes, broken just after its first escape.
        let escaped = PLAIN_CHATML.replace('\n', "\\n");
        let first = escaped.find("\\n").unwrap();
        let broken = format!("{}XX{}", &escaped[..first + 2], &escaped[first + 2..]);
        let err = ChatTemplate::from_gguf_template(&broken).unwrap_err();
        assert!(matches!(&err, ChatTemplateError::Unrecognised { offset, .. } if *offset == first + 2), "{err}");
        // A proper prefix departs where it ends.
        let err = ChatTemplate::from_gguf_template(&PLAIN_CHATML[..40]).unwrap_err();
        assert!(matches!(&err, ChatTemplateError::Unrecognised { offset: 40, found, .. } if found.is_empty()), "{err}");
        let err = ChatTemplate::from_gguf_template("{% for message in messagés %}").unwrap_err();
        assert!(matches!(&err, ChatTemplateError::Unrecognised { offset: 24, found, .. } if found == "és %}"), "{err}");
    }

    #[test]
    fn plain_chatml_has_no_default_system_message() {
        let t = ChatTemplate::from_gguf_template(PLAIN_CHATML).unwrap();
        let text = t.render(&[Message::new("user", "hi")], true);
        assert_eq!(text, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
        // The same template with Jinja's `\n` escapes instead of newline characters.
        let escaped = PLAIN_CHATML.replace('\n', "\\n");
        assert_ne!(escaped, PLAIN_CHATML);
        assert_eq!(ChatTemplate::from_gguf_template(&escaped).unwrap(), t);
    }

    #[test]
    fn empty_conversation() {
        let t = ChatTemplate::from_gguf_template(SMOLLM2_CHATML).unwrap();
        assert_eq!(t.render(&[], false), "");
        assert_eq!(t.render(&[], true), "<|im_start|>assistant\n");
    }
}
