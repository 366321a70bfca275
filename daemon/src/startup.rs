//! The served models opened at startup: each resolved, read through the trusted loader (a sealed
//! snapshot, hashed as it is copied; never mapped), checked, with its limits and chat template,
//! before anything listens.

use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use engine::model::{ModelFile, open_model};
use tokenizer::ChatTemplate;

use crate::catalog::{self, Limits, Offered, ServedModel};
use crate::clock::unix_seconds;
use crate::config::Config;
use crate::model_file::ModelSource;
use crate::worker::WorkerModel;

/// A served model, opened at startup: what the handlers need, and what the worker loads.
pub(crate) struct Opened {
    /// The `--model` argument.
    pub(crate) spec: String,
    pub(crate) offered: Offered,
    pub(crate) worker: WorkerModel,
}

/// Why a served model could not be opened.
pub(crate) enum OpenFailure {
    /// An error whose chain says its exit code: usage or I/O (exit 2), or a model file that is
    /// invalid (exit 1).
    Error(anyhow::Error),
    /// The model is unusable (exit 1): the message.
    Model(String),
}

impl From<anyhow::Error> for OpenFailure {
    fn from(error: anyhow::Error) -> Self {
        Self::Error(error)
    }
}

/// Opens `--model spec`: resolves it, checks its hyperparameters (`llama` or `gemma3`),
/// refuses an id one of `earlier` serves, checks the limits against its context, reads its
/// tokenizer and chat template, checks its weights finite (so that a model that cannot load fails at startup, not
/// at the first request that switches to it); its digest is its snapshot's (an alias's, the pinned one).
pub(crate) fn open<F>(config: &Config<F>, spec: &str, earlier: &[Opened]) -> Result<Opened, OpenFailure> {
    let mut source = None;
    let ModelFile { resolved, file, sha256, params, context } = open_model(spec, config.context, |path| {
        let (opened, file) = ModelSource::open(path)?;
        source = Some(opened);
        Ok(file)
    })
    .map_err(anyhow::Error::from)?;
    let source = Arc::new(source.context("the model file was not read")?);
    let id = resolved.entry.map_or_else(|| catalog::path_id(&resolved.path), |entry| entry.alias.to_owned());
    if let Some(other) = earlier.iter().find(|o| o.offered.model.id == id) {
        return Err(OpenFailure::Error(anyhow::anyhow!(
            "--model {} and --model {spec} are both served as '{id}': each served model needs its own id \
             (its alias, or its file name without .gguf)",
            other.spec
        )));
    }
    let limits = limits(config.max_prompt_tokens, config.max_tokens_limit, context)
        .with_context(|| format!("--model {spec}"))?;
    let tokenizer = engine::model::tokenizer_from_gguf(&file).map_err(|e| OpenFailure::Model(e.to_string()))?;
    params.check_weights(&file).map_err(|e| OpenFailure::Model(e.to_string()))?;
    let template = chat_template(&id, &file);
    let path = resolved.path.display().to_string();
    let model = ServedModel { id: id.clone(), path, sha256: sha256.clone(), created: unix_seconds() };
    // Only the first model is loaded at startup; the others are read again when a request
    // switches to them, so their bytes are not held meanwhile.
    let file = earlier.is_empty().then_some(file);
    Ok(Opened {
        spec: spec.to_owned(),
        offered: Offered { model, tokenizer, template, limits, source: Arc::clone(&source) },
        worker: WorkerModel { id, path: resolved.path, file, source, sha256, context },
    })
}

/// The limits, checked against a model's context.
fn limits(max_prompt_tokens: Option<usize>, max_tokens_limit: Option<u32>, context: u32) -> Result<Limits> {
    let context_tokens = usize::try_from(context)?;
    if context < 2 {
        bail!("--context {context}: at least 2 positions (one prompt token and one new token)");
    }
    let prompt_tokens = max_prompt_tokens.unwrap_or(context_tokens - 1);
    if prompt_tokens == 0 || prompt_tokens >= context_tokens {
        bail!("--max-prompt-tokens {prompt_tokens}: must be in 1..{context} (the context)");
    }
    let max_tokens = max_tokens_limit.unwrap_or(512.min(context - 1));
    if max_tokens == 0 || max_tokens >= context {
        bail!("--max-tokens-limit {max_tokens}: must be in 1..{context} (the context)");
    }
    Ok(Limits { prompt_tokens, max_tokens, context })
}

/// Model `id`'s chat template, or `None` (its chat completions then answer 400) with a warning
/// naming the key and why: absent, not a string, or not a template this build renders (with the
/// byte offset where it departs from the supported ones). Such a model is still served for
/// completions.
fn chat_template(id: &str, file: &gguf::Gguf) -> Option<ChatTemplate> {
    const KEY: &str = "tokenizer.chat_template";
    let unusable = |why: &dyn std::fmt::Display| {
        eprintln!(
            "warning: the model '{}'{}; /v1/chat/completions will answer 400 for it",
            infile::escape(id),
            infile::escape_lines(&why.to_string())
        );
        None
    };
    if file.get(KEY).is_none() {
        return unusable(&format!(" has no chat template ({KEY})"));
    }
    let template = match file.str(KEY) {
        Ok(template) => template,
        Err(error) => return unusable(&format!(": {error}")),
    };
    match ChatTemplate::from_gguf_template(template) {
        Ok(template) => Some(template),
        Err(error) => unusable(&format!(": {KEY}: {error}")),
    }
}
