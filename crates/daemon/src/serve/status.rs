//! `GET /redline/status`: which route the server's generations take and why, the device, the
//! model and its digest, and the admission decision.

use serde_json::{Value, json};

use super::metrics::{Metrics, QueueGauge};
use super::worker::DeviceInfo;

/// The model being served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServedModel {
    /// The id clients see (`/v1/models`, `model` in responses): the alias, or the file's stem.
    pub id: String,
    /// The GGUF file.
    pub path: String,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
    /// When the server loaded it, Unix seconds.
    pub created: u64,
}

/// The status document.
pub(crate) fn report(model: &ServedModel, device: &DeviceInfo, metrics: &Metrics, queue: QueueGauge) -> Value {
    let proof = metrics.route();
    let controller = proof.as_ref().map_or(Value::Null, |p| {
        json!({
            "state": p.state,
            "fallback_reason": p.fallback_reason,
            "fallback": p.fallback,
            "reconfiguration": p.reconfiguration,
            "request": p.request,
            "transport": p.transport,
            "last_eligible": p.last_eligible,
            "last_ineligible": p.last_ineligible,
        })
    });
    json!({
        "model": {"id": model.id, "path": model.path, "sha256": model.sha256},
        "device": {"kind": device.kind, "arch": device.arch, "reason": device.reason},
        "controller": controller,
        "tape": proof.as_ref().map(|p| &p.tape),
        "submission": proof.as_ref().map(|p| &p.submission),
        "shadow": proof.as_ref().map(|p| &p.shadow),
        "observations": proof.as_ref().map(|p| &p.observations),
        "admission": device.admission,
        "queue": {"depth": queue.depth, "capacity": queue.capacity},
        "generations": metrics.generations(),
    })
}
