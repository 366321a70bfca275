//! The report's facts about what ran: the device (product, PCI identity, runtime, driver, GPU
//! clock policy), the model (size, parameters, architecture, quantization) and its KV cache.
//! Facts follow [`super::facts`]: a value, or `null` and why.

use std::collections::BTreeMap;
use std::path::Path;

use engine::model::{KvCacheLayout, LlamaParams};
use hal::Device as _;
use hsa_device::HsaDevice;
use serde_json::{Value, json};
use soft_device::SimDevice;

use super::facts::{fact, known, unknown};
use crate::select::AnyDevice;

/// The device facts of the report's `device`, and the two that live elsewhere in it.
#[derive(Debug)]
pub struct DeviceRecord {
    /// `product`, `agent`, `pci`, `runtime`, `driver`.
    pub fields: serde_json::Map<String, Value>,
    /// `clocks.gpu`.
    pub gpu_clock: Value,
    /// The HSA agent index (`topology`).
    pub agent_index: Value,
    /// The GPUs the backend sees and drives ([`hal::Topology`]), for `topology`.
    pub gpus: Value,
}

/// The facts of a chosen device.
#[must_use]
pub fn device(device: &AnyDevice) -> DeviceRecord {
    let mut record = match device {
        AnyDevice::Sim(sim) => soft(sim),
        AnyDevice::Hsa(hsa) => hsa_record(hsa),
    };
    let topology = device.topology();
    record.gpus = json!({"visible": topology.gpus_visible, "used_per_device": topology.gpus_used});
    record
}

fn soft(sim: &SimDevice) -> DeviceRecord {
    let arch = sim.target().name();
    let fields = json!({
        "product": known(format!("Redline soft device (SimDevice, {arch})")),
        "agent": unknown("the soft device is not an HSA agent"),
        "pci": unknown("the soft device is a CPU model inside this process: there is no PCI device"),
        "runtime": known(json!({
            "kind": "soft device", "crate": soft_device::CRATE_NAME, "version": soft_device::CRATE_VERSION,
            "arch": arch, "in_process": true,
        })),
        "driver": unknown("the soft device runs inside this process on the host CPU: there is no kernel driver"),
    });
    DeviceRecord {
        fields: fields.as_object().cloned().unwrap_or_default(),
        gpu_clock: unknown(
            "the soft device has no GPU clock: it runs the kernels' CPU references on the host CPU (see host.cpu_model \
             and clocks.cpu_governor)",
        ),
        agent_index: unknown("the soft device is not an HSA agent"),
        gpus: Value::Null,
    }
}

fn file_sha256(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    model_files::digest::sha256_reader(std::io::BufReader::new(file))
        .map(|(digest, _)| digest)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn hsa_record(device: &HsaDevice) -> DeviceRecord {
    let id = device.identity();
    let library = device.runtime().library_path();
    let build = id.build_version.clone().unwrap_or_else(|e| format!("build version unknown: {e}"));
    let spec = id.spec_version.map(|(major, minor)| format!("{major}.{minor}"));
    let runtime = known(json!({
        "kind": if id.software_runtime { "software HSA runtime (soft-hsa)" } else { "HSA runtime (ROCr)" },
        "library_path": library.display().to_string(), "library_sha256": fact(file_sha256(library)),
        "spec_version": fact(spec), "build_version": fact(id.build_version.clone()),
        "software": id.software_runtime,
    }));
    let pci_address = match (id.pci_domain, id.pci_bdfid) {
        (Ok(domain), Ok(bdfid)) => Ok(hsa_device::pci_address(domain, bdfid)),
        (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
    };
    let (pci, driver, gpu_clock) = if id.software_runtime {
        let chip = id.chip_id.map_or_else(|e| e.to_string(), |c| format!("{c:#06x}"));
        (
            unknown(format!(
                "the software HSA runtime ({build}) presents no PCI device: its location {} and chip id {chip} are \
                 placeholders",
                pci_address.as_deref().unwrap_or("(unreported)")
            )),
            unknown(format!(
                "the software HSA runtime ({build}) runs over the soft device in this process: no kernel driver"
            )),
            unknown(format!("the software HSA runtime ({build}) has no GPU clock")),
        )
    } else {
        let pci = pci_address.clone().and_then(|address| {
            let chip = id.chip_id.map_err(|e| e.to_string())?;
            Ok(json!({"address": address, "device_id": format!("{chip:#06x}")}))
        });
        let clock = pci_address.and_then(|address| {
            let path = format!("/sys/bus/pci/devices/{address}/power_dpm_force_performance_level");
            std::fs::read_to_string(&path)
                .map(|level| json!({"power_dpm_force_performance_level": level.trim(), "source": path}))
                .map_err(|e| format!("{path}: {e}"))
        });
        (fact(pci), fact(amdgpu_driver()), fact(clock))
    };
    let fields = json!({
        "product": fact(id.product.map_err(|e| e.to_string())),
        "agent": known(json!({
            "index": 0, "isa": device.isa(), "name": fact(id.name), "vendor": fact(id.vendor), "uuid": fact(id.uuid),
        })),
        "pci": pci, "runtime": runtime, "driver": driver,
    });
    DeviceRecord {
        fields: fields.as_object().cloned().unwrap_or_default(),
        gpu_clock,
        agent_index: known(0),
        gpus: Value::Null,
    }
}

/// The amdgpu kernel module's version (DKMS builds) or source version (in-tree builds).
fn amdgpu_driver() -> Result<Value, String> {
    let dir = Path::new("/sys/module/amdgpu");
    if !dir.is_dir() {
        return Err("/sys/module/amdgpu does not exist: the amdgpu kernel module is not loaded".to_owned());
    }
    for (file, key) in [("version", "version"), ("srcversion", "srcversion")] {
        if let Ok(text) = std::fs::read_to_string(dir.join(file)) {
            return Ok(json!({"module": "amdgpu", key: text.trim(), "source": dir.join(file).display().to_string()}));
        }
    }
    Err("/sys/module/amdgpu has neither version nor srcversion".to_owned())
}

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
