//! `GET /redline/status`: which route the server's generations take and why, the device, the
//! loaded model and its digest, every served model, the model switches, and the admission
//! decision of the loaded model, and the last finished generations (`history`: decode speed and
//! route of each, for the page's chart).

use serde_json::{Value, json};

use super::catalog::{Catalog, ServedModel};
use super::metrics::{Metrics, QueueGauge};
use super::worker::DeviceInfo;

/// The status document.
pub(crate) fn report(catalog: &Catalog, device: &DeviceInfo, metrics: &Metrics, queue: QueueGauge) -> Value {
    let snapshot = metrics.snapshot();
    let proof = snapshot.as_ref().map(|s| &s.proof);
    let loaded = snapshot.as_ref().and_then(|s| s.loaded.as_ref());
    let controller = proof.map_or(Value::Null, |p| {
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
    let models: Vec<Value> = catalog
        .models()
        .iter()
        .enumerate()
        .map(|(i, offered)| {
            let mut model = identity(&offered.model);
            model["loaded"] = json!(loaded.is_some_and(|(index, _)| *index == i));
            // Whether the file can be loaded again (a switch reads it); the loaded model runs
            // from the device either way.
            model["file"] = match offered.source.check() {
                Ok(()) => json!({"changed": false}),
                Err(error) => json!({"changed": true, "detail": error.to_string()}),
            };
            model
        })
        .collect();
    json!({
        // The loaded model; null after a switch that failed midway.
        "model": loaded.and_then(|(index, _)| catalog.get(*index)).map(|offered| identity(&offered.model)),
        "models": models,
        "switches": snapshot.as_ref().map_or(0, |s| s.switches),
        "device": {"kind": device.kind, "arch": device.arch, "reason": device.reason},
        "controller": controller,
        "tape": proof.map(|p| &p.tape),
        "submission": proof.map(|p| &p.submission),
        "shadow": proof.map(|p| &p.shadow),
        "observations": proof.map(|p| &p.observations),
        "admission": loaded.map(|(_, admission)| admission),
        "queue": {"depth": queue.depth, "capacity": queue.capacity},
        "generations": metrics.generations(),
        // The generation running now (tokens so far, seconds, decode speed since its first
        // token), or null; the route counts above change when it ends.
        "generating": metrics.progress().map(|p| p.report(std::time::Instant::now())),
        "history": metrics.history(),
    })
}

/// A model's id, path and digest.
fn identity(model: &ServedModel) -> Value {
    json!({"id": model.id, "path": model.path, "sha256": model.sha256})
}
