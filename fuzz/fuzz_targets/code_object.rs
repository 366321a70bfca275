//! Any bytes, as an ELF code object or a clang offload bundle: a typed result, never a panic; what
//! is accepted yields per-kernel layouts and verdicts without panicking either.
#![no_main]

use kernarg_abi::{KernargLayout, bundle, read_any, verdict};
use libfuzzer_sys::fuzz_target;
use pm4_encoding::Target;

fuzz_target!(|data: &[u8]| {
    if bundle::is_bundle(data) {
        let _ = bundle::entries(data);
    }
    for target in [None, Some(Target::Gfx1100)] {
        if let Ok(co) = read_any(data, target) {
            for kernel in &co.kernels {
                let _ = KernargLayout::new(&kernel.metadata);
                let _ = verdict(kernel, &co.target);
            }
        }
    }
});
