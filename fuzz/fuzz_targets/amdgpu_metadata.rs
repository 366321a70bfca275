//! Any bytes as the NT_AMDGPU_METADATA MessagePack document: a typed result, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kernarg_abi::parse_metadata(data);
});
