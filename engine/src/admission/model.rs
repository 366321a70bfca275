//! The admission decision for a model loaded on a device: its format, digest and KV layout
//! with the setting a session would run with, as the registry's rows compare them.

use hal::Device;

use super::{AdmissionDecision, AdmissionQuery, AdmissionRegistry, ModelFormat};
use crate::model::language::ModelParams;
use crate::plan::Transport;

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
/// `setting`. The KV layout is the one the adapter of `file`'s architecture gives it at the
/// context ([`ModelParams::kv_cache_layout`]); a file no adapter runs has none a row can name.
#[must_use]
pub fn decide(
    registry: &AdmissionRegistry,
    file: &gguf::Gguf,
    sha256: &str,
    device: &dyn Device,
    setting: Setting<'_>,
) -> AdmissionDecision {
    let model_format = ModelFormat::of_gguf(file);
    let kv_layout = match ModelParams::from_gguf(file) {
        Ok(params) => params.kv_cache_layout(setting.context).scheme(),
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
