//! The served models as the HTTP handlers see them (id, file, digest, tokenizer, chat template,
//! limits), and the choice of one by a request's `model` field. One of them is loaded on the
//! device at a time; the generation thread switches when a job asks for another.

use std::sync::Arc;

use tokenizer::{ChatTemplate, Tokenizer};

use super::error::ApiError;
use super::model_file::ModelSource;

/// Request limits (`--max-*`), checked against one model's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Prompt tokens at most.
    pub prompt_tokens: usize,
    /// `max_tokens` at most.
    pub max_tokens: u32,
    /// KV-cache positions: prompt + new tokens at most.
    pub context: u32,
}

/// A served model's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServedModel {
    /// The id clients see (`/v1/models`, `model` in requests and responses): the alias, or the
    /// file's stem.
    pub id: String,
    /// The GGUF file.
    pub path: String,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
    /// When the server opened it, Unix seconds.
    pub created: u64,
}

/// A served model with what a handler needs to turn a request into a job.
#[derive(Debug)]
pub(crate) struct Offered {
    /// Its identity.
    pub model: ServedModel,
    /// Its tokenizer (the session has its own copy of the loaded model's).
    pub tokenizer: Tokenizer,
    /// Its chat template, when recognised.
    pub template: Option<ChatTemplate>,
    /// Its limits.
    pub limits: Limits,
    /// Its file, to tell whether it can still be loaded.
    pub source: Arc<ModelSource>,
}

/// The served models, in `--model` order.
///
/// INVARIANT: at least one, and no two share an id.
#[derive(Debug)]
pub(crate) struct Catalog {
    models: Vec<Offered>,
}

impl Catalog {
    /// The catalog of `models`, which the caller has checked for duplicate ids.
    pub(crate) fn new(models: Vec<Offered>) -> Self {
        assert!(!models.is_empty(), "serve needs at least one model");
        for (i, offered) in models.iter().enumerate() {
            assert!(models[..i].iter().all(|m| m.model.id != offered.model.id), "duplicate id {:?}", offered.model.id);
        }
        Self { models }
    }

    /// Every served model, in `--model` order (the index is the one jobs carry).
    pub(crate) fn models(&self) -> &[Offered] {
        &self.models
    }

    /// The model at `index`.
    pub(crate) fn get(&self, index: usize) -> Option<&Offered> {
        self.models.get(index)
    }

    /// The model a request's `model` field names, with its index; without the field, the first
    /// (`--model` order), so clients that send none work as with one model.
    ///
    /// # Errors
    /// An id that is not served: 404 `model_not_found` listing the served ids, as OpenAI answers.
    pub(crate) fn select(&self, requested: Option<&str>) -> Result<(usize, &Offered), ApiError> {
        let Some(requested) = requested else {
            return Ok((0, &self.models[0]));
        };
        self.models.iter().enumerate().find(|(_, m)| m.model.id == requested).ok_or_else(|| {
            ApiError::model_not_found(format!(
                "the model '{requested}' is not served here; the served models are: {}",
                self.ids()
            ))
        })
    }

    /// The served ids, comma-separated.
    fn ids(&self) -> String {
        self.models.iter().map(|m| m.model.id.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// A path's model id: the file name without `.gguf`.
pub(crate) fn path_id(path: &std::path::Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(id: &str) -> Offered {
        let bytes = gguf::tiny_llama(&gguf::TinyLlamaConfig::default());
        let dir = std::env::temp_dir().join(format!("redline-catalog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{id}.gguf"));
        std::fs::write(&path, &bytes).unwrap();
        let (source, _) = ModelSource::open(&path).unwrap();
        let file = gguf::Gguf::parse(bytes).unwrap();
        Offered {
            model: ServedModel { id: id.to_owned(), path: format!("{id}.gguf"), sha256: String::new(), created: 0 },
            tokenizer: engine::model::tokenizer_from_gguf(&file).unwrap(),
            template: None,
            limits: Limits { prompt_tokens: 8, max_tokens: 8, context: 16 },
            source: Arc::new(source),
        }
    }

    #[test]
    fn a_request_selects_by_id_the_first_without_one_and_an_unknown_id_lists_the_served() {
        let catalog = Catalog::new(vec![offered("a"), offered("b")]);
        assert_eq!(catalog.select(None).unwrap().0, 0);
        assert_eq!(catalog.select(Some("b")).unwrap().0, 1);
        let error = catalog.select(Some("c")).unwrap_err();
        assert_eq!(error.status, axum::http::StatusCode::NOT_FOUND);
        assert_eq!(
            (error.kind, error.param.as_deref(), error.code),
            ("invalid_request_error", Some("model"), Some("model_not_found"))
        );
        assert_eq!(error.message, "the model 'c' is not served here; the served models are: a, b");
    }

    #[test]
    fn a_path_is_served_as_its_stem() {
        assert_eq!(
            path_id(std::path::Path::new("/models/SmolLM2-135M-Instruct.Q4_1.gguf")),
            "SmolLM2-135M-Instruct.Q4_1"
        );
    }
}
