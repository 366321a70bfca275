//! The admissions registry the binary carries (`registry/admissions.json`, checked against the
//! sealed fixtures of `registry/fixtures.json`), and the admission decision for a loaded model.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context as _, Result};

use crate::exit::InvalidInput as _;
use engine::admission::{AdmissionDecision, AdmissionQuery, AdmissionRegistry, ModelFormat};
use engine::model::{KvCacheLayout, LlamaParams};
use engine::plan::Transport;
use hal::Device;

/// `registry/admissions.json` as built into the binary.
pub const EMBEDDED_ADMISSIONS: &str = include_str!("../../../registry/admissions.json");
/// `registry/fixtures.json` as built into the binary.
pub const EMBEDDED_FIXTURES: &str = include_str!("../../../registry/fixtures.json");

/// The fixture ids of a fixture registry's text.
///
/// # Errors
/// The text is not a fixture registry.
pub fn fixture_ids(text: &str) -> Result<BTreeSet<String>> {
    Ok(crate::golden::registry::Registry::parse(text)?.fixtures.into_iter().map(|f| f.id).collect())
}

/// The largest registry file read (admissions, fixtures): 16 MiB.
pub const REGISTRY_LIMIT: infile::Limit = infile::Limit::new("registry", infile::mib(16));

/// The admissions registry: `path` when given (its fixture ids checked against the embedded
/// fixture registry), else the embedded one.
///
/// # Errors
/// Reading (an I/O error, or a file over [`REGISTRY_LIMIT`]) or parsing (invalid input), naming
/// the file, row and field.
pub fn load(path: Option<&Path>) -> Result<AdmissionRegistry> {
    let fixtures = fixture_ids(EMBEDDED_FIXTURES).context("the embedded fixture registry")?;
    match path {
        Some(path) => {
            let text = infile::read_to_string(path, REGISTRY_LIMIT)?;
            AdmissionRegistry::parse(&text, Some(&fixtures)).with_context(|| format!("{}", path.display())).invalid()
        }
        None => AdmissionRegistry::parse(EMBEDDED_ADMISSIONS, Some(&fixtures)).context("the embedded admissions"),
    }
}

/// What a session would run with, as admission compares it.
#[derive(Clone, Copy, Debug)]
pub struct Setting<'a> {
    /// The device kind's name (`sim`, `hsa`).
    pub kind: &'a str,
    /// KV-cache positions.
    pub context: u32,
    /// The retained route's transport.
    pub transport: Transport,
}

/// The decision for `file` (SHA-256 `sha256`) on `device` (its architecture and topology) with
/// `setting`. The KV layout is the one the engine's llama gives `file` at the context; a file
/// that is not a llama has none a row can name.
#[must_use]
pub fn decide(
    registry: &AdmissionRegistry,
    file: &gguf::Gguf,
    sha256: &str,
    device: &dyn Device,
    setting: Setting<'_>,
) -> AdmissionDecision {
    let model_format = ModelFormat::of_gguf(file);
    let kv_layout = match LlamaParams::from_gguf(file) {
        Ok(params) => KvCacheLayout::of(&params, setting.context).scheme(),
        Err(e) => format!("none ({e})"),
    };
    registry.decide(&AdmissionQuery {
        arch: device.target(),
        device_kind: setting.kind,
        devices: device.topology().gpus_used,
        model_format: &model_format,
        model_sha256: sha256,
        context: setting.context,
        kv_layout: &kv_layout,
        transport: setting.transport,
    })
}
