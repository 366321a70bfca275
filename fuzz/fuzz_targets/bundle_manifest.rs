//! Any bytes as an IB bundle's manifest.json: a typed error or a validated manifest, never a panic;
//! an accepted manifest serializes and re-reads to the same manifest.
#![no_main]

use soft_device::bundle::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(manifest) = serde_json::from_slice::<Manifest>(data) else { return };
    if manifest.validate().is_ok() {
        let text = serde_json::to_vec(&manifest).expect("serializes");
        let again: Manifest = serde_json::from_slice(&text).expect("re-reads");
        assert_eq!(again, manifest);
    }
});
