//! What `llvm-readelf-19` prints for every fixture of `tests/data/` (`-h`, `--notes`, `--symbols`
//! and the `.rodata` bytes of each `.kd`), copied by hand as the expected values of
//! `code_objects.rs`.

use kernarg_abi::CodeObjectVersion;
use pm4_encoding::Target;

mod gfx10_3;
mod gfx11;
mod gfx12;
mod other;
/// One kernel as llvm-readelf-19 shows it.
pub(crate) struct K {
    pub(crate) name: &'static str,
    /// `.kd` symbol value.
    pub(crate) kd: u64,
    /// Function symbol value (the entry).
    pub(crate) entry: u64,
    pub(crate) kernarg: u32,
    pub(crate) group: u32,
    pub(crate) private: u32,
    pub(crate) wave: u32,
    pub(crate) sgpr: u32,
    pub(crate) vgpr: u32,
    pub(crate) rsrc1: u32,
    pub(crate) rsrc2: u32,
    pub(crate) rsrc3: u32,
    pub(crate) kcp: u32,
}

/// One fixture: `-h` (ABI version, flags), `--notes` root keys and its kernels.
pub(crate) struct F {
    pub(crate) file: &'static str,
    pub(crate) version: CodeObjectVersion,
    pub(crate) target: Option<Target>,
    pub(crate) mach: u32,
    pub(crate) name: &'static str,
    pub(crate) metadata_version: [u32; 2],
    pub(crate) metadata_target: &'static str,
    pub(crate) kernels: &'static [K],
}

/// Every fixture, by family.
pub(crate) const FIXTURES: [&[F]; 4] = [gfx10_3::FIXTURES, gfx11::FIXTURES, gfx12::FIXTURES, other::FIXTURES];
