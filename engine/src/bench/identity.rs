//! The report's facts about the model that ran (size, parameters, architecture, hyperparameters,
//! quantization) and its KV cache. Facts follow [`super::facts`]: a value, or `null` and why.
//! The device's facts are the caller's ([`super::device::Devices::describe`]): only it knows
//! the backend.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::facts::fact;
use crate::model::language::ModelParams;

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
        10 => "MOSTLY_Q2_K",
        11 => "MOSTLY_Q3_K_S",
        12 => "MOSTLY_Q3_K_M",
        13 => "MOSTLY_Q3_K_L",
        14 => "MOSTLY_Q4_K_S",
        15 => "MOSTLY_Q4_K_M",
        16 => "MOSTLY_Q5_K_S",
        17 => "MOSTLY_Q5_K_M",
        18 => "MOSTLY_Q6_K",
        32 => "MOSTLY_BF16",
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

/// The hyperparameters every architecture has, and a `gemma3` model's sliding window (an `lfm2`
/// model's `kv_heads` are those of its attention blocks).
fn hyperparameters(params: &ModelParams) -> Value {
    match params {
        ModelParams::Llama(p) => json!({
            "layers": p.layers, "embedding": p.dim, "feed_forward": p.ffn, "heads": p.heads, "kv_heads": p.kv_heads,
            "head_dim": p.head_dim, "vocab": p.vocab, "context_train": p.context_train, "tied_output": p.tied_output,
        }),
        ModelParams::Gemma3(p) => json!({
            "layers": p.layers, "embedding": p.dim, "feed_forward": p.ffn, "heads": p.heads, "kv_heads": p.kv_heads,
            "head_dim": p.head_dim, "vocab": p.vocab, "context_train": p.context_train, "tied_output": p.tied_output,
            "sliding_window": p.window,
        }),
        ModelParams::Lfm2(p) => json!({
            "layers": p.layers, "embedding": p.dim, "feed_forward": p.ffn, "heads": p.heads, "kv_heads": p.kv_heads,
            "head_dim": p.head_dim, "vocab": p.vocab, "context_train": p.context_train, "tied_output": p.tied_output,
        }),
        // The report's schema names no DeltaNet quantities: a qwen35 model reports the common
        // ones (its heads and head size are the full-attention layers').
        ModelParams::Qwen35(p) => json!({
            "layers": p.layers, "embedding": p.dim, "feed_forward": p.ffn, "heads": p.heads, "kv_heads": p.kv_heads,
            "head_dim": p.head_dim, "vocab": p.vocab, "context_train": p.context_train, "tied_output": p.tied_output,
        }),
    }
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
    let params = ModelParams::from_gguf(file).map(|p| hyperparameters(&p)).map_err(|e| e.to_string());
    let value = json!({
        "bytes": fact(bytes), "parameters": fact(parameters), "architecture": fact(architecture), "name": fact(name),
        "hyperparameters": fact(params), "quantization": quantization(file),
    });
    value.as_object().cloned().unwrap_or_default()
}

/// The KV cache of a session of `context` positions ([`ModelParams::kv_cache_layout`]) and its
/// order in words.
#[must_use]
pub fn kv_cache(file: &gguf::Gguf, context: u32) -> Value {
    let layout = ModelParams::from_gguf(file).map_err(|e| e.to_string()).and_then(|p| {
        let layout = p.kv_cache_layout(context);
        let mut value = serde_json::to_value(layout).map_err(|e| e.to_string())?;
        value["order"] = json!("[layer][position][kv_head][head_dim], row-major, little-endian");
        value["surfaces"] = json!(["k_cache", "v_cache"]);
        value["total_bytes"] = json!(2 * layout.surface_bytes);
        Ok(value)
    });
    fact(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gemma3_model_has_its_hyperparameters_file_type_and_kv_cache() {
        let config = gguf::TinyGemma3Config::default();
        let file = gguf::Gguf::parse(gguf::tiny_gemma3(&config)).unwrap();
        let (layers, kv_heads, head_dim) = (config.n_layers, config.n_kv_heads, config.head_dim);
        let params = ModelParams::from_gguf(&file).unwrap();
        let p = hyperparameters(&params);
        assert_eq!(p["layers"], layers);
        assert_eq!((&p["kv_heads"], &p["head_dim"]), (&json!(kv_heads), &json!(head_dim)));
        assert_eq!(p["sliding_window"], config.window);
        assert_eq!(p["context_train"], config.context_length);
        // [layer][position][kv_head][head_dim] f32: 4 bytes per element.
        let context = 64u64;
        let kv = &kv_cache(&file, 64)["value"];
        let position_stride = 4 * u64::from(kv_heads) * u64::from(head_dim);
        assert_eq!(kv["position_stride_bytes"], position_stride, "{kv}");
        assert_eq!(kv["layer_stride_bytes"], position_stride * context, "{kv}");
        assert_eq!(kv["total_bytes"], 2 * position_stride * context * u64::from(layers), "{kv}");
        assert_eq!(kv["element"], "f32");
    }

    #[test]
    fn k_quant_file_types_have_llama_cpp_names() {
        // llama.h: LLAMA_FTYPE_MOSTLY_Q4_K_M = 15, the type of Gemma 3 270M Q4_K_M.
        assert_eq!(file_type_name(15), Some("MOSTLY_Q4_K_M"));
        assert_eq!(file_type_name(18), Some("MOSTLY_Q6_K"));
        assert_eq!(file_type_name(4), None, "MOSTLY_Q4_1_SOME_F16 is no longer written");
    }
}
