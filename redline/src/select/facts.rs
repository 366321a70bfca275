//! The bench report's facts about the device that ran (product, PCI identity, runtime, driver,
//! GPU clock policy): only device selection knows which backend it holds. Facts follow
//! `engine::bench::facts`: a value, or `null` and why.

use std::path::Path;

use engine::bench::DeviceRecord;
use engine::bench::facts::{fact, known, unknown};
use hal::Device as _;
use hsa_device::HsaDevice;
use serde_json::{Value, json};
use soft_device::SimDevice;

use super::device::AnyDevice;

/// The facts of a chosen device.
#[must_use]
pub(crate) fn device(device: &AnyDevice) -> DeviceRecord {
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
