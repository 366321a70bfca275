//! The report's facts about the model that ran (size, parameters, architecture, hyperparameters,
//! quantization) and its KV cache. Facts follow [`super::facts`]: a value, or `null` and why.
//! The device's facts are the caller's ([`super::device::Devices::describe`]): only it knows
//! the backend.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::facts::fact;
use crate::model::{KvCacheLayout, LlamaParams};

/// llama.cpp's `llama_ftype` names of `general.file_type` values (llama.h).
fn file_type_name(value: u32) -> Option<&'static str> {
    Some(match value {
        0 => "ALL_F32",
        1 => "MOSTLY_F16",
        2 => "MOSTLY_Q4_0",
        3 => "MOSTLY_Q4_1",
        7 => "MOSTLY_Q8_0",
        8 => "MOSTLY_Q5_0",
        9 => "MOSTLY_Q5_1",
        _ => return None,
    })
}

/// Tensors, bytes and parameters per tensor type, and the type that holds most bytes.
fn quantization(file: &gguf::Gguf) -> Value {
    let mut types: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for tensor in file.tensors() {
        let row = types.entry(tensor.ty().to_string()).or_default();
        row.0 += 1;
        row.1 = row.1.saturating_add(tensor.byte_len().unwrap_or(0));
        row.2 = row.2.saturating_add(tensor.element_count());
    }
    let dominant = types.iter().max_by_key(|(_, (_, bytes, _))| *bytes).map(|(name, _)| name.clone());
    let file_type = match file.get("general.file_type").map(|_| file.u32("general.file_type")) {
        None => Err("the file has no general.file_type".to_owned()),
        Some(Err(e)) => Err(e.to_string()),
        Some(Ok(v)) => Ok(json!({"id": v, "llama_ftype": file_type_name(v)})),
    };
    json!({
        "file_type": fact(file_type),
        "dominant_tensor_type": fact(dominant.ok_or("the file has no tensors")),
        "tensor_types": types.iter().map(|(name, (tensors, bytes, parameters))| json!({
            "type": name, "tensors": tensors, "bytes": bytes, "parameters": parameters,
        })).collect::<Vec<_>>(),
    })
}

fn hyperparameters(p: &LlamaParams) -> Value {
    json!({
        "layers": p.layers, "embedding": p.dim, "feed_forward": p.ffn, "heads": p.heads, "kv_heads": p.kv_heads,
        "head_dim": p.head_dim, "vocab": p.vocab, "context_train": p.context_train, "tied_output": p.tied_output,
    })
}

/// The model facts added to the report's `model`: file size, parameters, architecture,
/// hyperparameters, quantization.
#[must_use]
pub fn model(path: &Path, file: &gguf::Gguf) -> serde_json::Map<String, Value> {
    let bytes = std::fs::metadata(path).map(|m| m.len()).map_err(|e| format!("{}: {e}", path.display()));
    let parameters = file
        .tensors()
        .iter()
        .try_fold(0u64, |sum, t| sum.checked_add(t.element_count()))
        .ok_or("the tensors' element counts overflow u64");
    let architecture = file.str("general.architecture").map(str::to_owned).map_err(|e| e.to_string());
    let name = file.str("general.name").map(str::to_owned).map_err(|e| e.to_string());
    let params = LlamaParams::from_gguf(file).map(|p| hyperparameters(&p)).map_err(|e| e.to_string());
    let value = json!({
        "bytes": fact(bytes), "parameters": fact(parameters), "architecture": fact(architecture), "name": fact(name),
        "hyperparameters": fact(params), "quantization": quantization(file),
    });
    value.as_object().cloned().unwrap_or_default()
}

/// The KV cache of a session of `context` positions: [`KvCacheLayout`] and its order in words.
#[must_use]
pub fn kv_cache(file: &gguf::Gguf, context: u32) -> Value {
    let layout = LlamaParams::from_gguf(file).map_err(|e| e.to_string()).and_then(|p| {
        let mut value = serde_json::to_value(KvCacheLayout::of(&p, context)).map_err(|e| e.to_string())?;
        value["order"] = json!("[layer][position][kv_head][head_dim], row-major, little-endian");
        value["surfaces"] = json!(["k_cache", "v_cache"]);
        value["total_bytes"] = json!(2 * KvCacheLayout::of(&p, context).surface_bytes);
        Ok(value)
    });
    fact(layout)
}
