//! What the tests against the soft HSA runtime share: loading `libsoft_hsa.so`, the target it
//! presents, code objects and kernarg blobs, and one lock (the runtime is one per process, and an
//! injected allocation failure is the pool's next allocation, whichever test makes it).

#![allow(dead_code, reason = "each test file uses a part")]

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use hal::{Device, LoadedCodeObject};
use hsa_device::HsaDevice;
use hsa_sys::Hsa;
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use pm4_encoding::Target;

/// The runtime library cargo built for this test binary (a dev-dependency's cdylib), loaded by
/// path. Missing, it is a failure, never a skip: the dev-dependency makes cargo build it.
pub(crate) fn runtime() -> Arc<Hsa> {
    static RUNTIME: OnceLock<Arc<Hsa>> = OnceLock::new();
    Arc::clone(RUNTIME.get_or_init(|| {
        let path = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
        let hsa =
            Hsa::load_from(std::slice::from_ref(&path)).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        Arc::new(hsa)
    }))
}

/// Serialises the tests of one binary.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The value of `REDLINE_SOFT_HSA_ISA` this process runs with (unset: empty).
pub(crate) fn isa_env() -> String {
    std::env::var(soft_hsa::ISA_ENV).unwrap_or_default()
}

/// The targets of the GPU agents the runtime presents in this process, or `None` when the
/// environment names an unsupported one (the runtime then refuses to start).
pub(crate) fn targets() -> Option<Vec<Target>> {
    match isa_env().as_str() {
        "" => Some(vec![soft_hsa::DEFAULT_TARGET]),
        names => names.split(',').map(|name| name.trim().parse().ok()).collect(),
    }
}

/// The target of the first GPU agent (the one [`open`] opens).
pub(crate) fn target() -> Option<Target> {
    targets().map(|targets| targets[0])
}

/// An open device on the soft runtime.
pub(crate) fn open() -> HsaDevice {
    HsaDevice::open(runtime(), 0).unwrap_or_else(|error| panic!("HsaDevice::open: {error}"))
}

/// The bytes of `module` for the device's target, loaded.
pub(crate) fn load(device: &mut HsaDevice, module: &str) -> (Vec<u8>, LoadedCodeObject) {
    let path = format!("{}/{module}.co", device.target());
    let bytes = kernels::artifact(&path).unwrap_or_else(|| panic!("no artifact {path}")).bytes.to_vec();
    let loaded = device.load_code_object(&bytes).unwrap_or_else(|error| panic!("{path}: {error}"));
    (bytes, loaded)
}

/// The kernarg blob of `kernel` in `code_object`, built from its own metadata.
pub(crate) fn kernarg(
    target: Target,
    code_object: &[u8],
    kernel: &str,
    args: &[ArgValue],
    geometry: &DispatchGeometry,
) -> Vec<u8> {
    let co = kernarg_abi::read_any(code_object, Some(target)).unwrap();
    co.kernel(kernel).unwrap().kernarg_layout().unwrap().build(args, geometry).unwrap()
}

/// `values` as little-endian bytes.
pub(crate) fn bytes_of(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// `count` floats read from the device.
pub(crate) fn f32s(device: &mut HsaDevice, va: u64, count: usize) -> Vec<f32> {
    let mut bytes = vec![0u8; 4 * count];
    device.read(va, &mut bytes).unwrap();
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}
