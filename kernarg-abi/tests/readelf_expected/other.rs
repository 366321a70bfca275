//! Expected values for the non-RDNA (gfx90a) fixtures (see `mod.rs`).

use kernarg_abi::CodeObjectVersion;

use super::{F, K};

pub(crate) const FIXTURES: &[F] = &[F {
    file: "add-gfx90a-xnack.co",
    version: CodeObjectVersion::V5,
    target: None,
    mach: 0x3f,
    name: "gfx90a",
    metadata_version: [1, 2],
    metadata_target: "amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+",
    kernels: &[K {
        name: "add",
        kd: 0x580,
        entry: 0x1600,
        kernarg: 20,
        group: 0,
        private: 0,
        wave: 64,
        sgpr: 11,
        vgpr: 6,
        rsrc1: 0x00af0040,
        rsrc2: 0x8c,
        rsrc3: 0x1,
        kcp: 0x0009,
    }],
}];
