//! Which CPU reference, effects and argument layout belong to which kernel of which embedded
//! code object, keyed by `(code-object SHA-256, kernel name)`.
//!
//! Registered: every kernel of every module code object (`gfxNNNN/<module>.co`) and of the
//! fixture variants in [`FIXTURE_VARIANTS`] (the wave64 `axpy`). The other fixtures (scratch,
//! dispatch pointer, code object v4, the offload bundle) have no reference: the v4 `fill` reads
//! its work-group size from the dispatch packet, not from the kernarg segment.

use std::collections::BTreeMap;
use std::str::FromStr;

use pm4_encoding::Target;

use crate::EmbeddedArtifact;
use crate::cpu::{self, CpuReference};
use crate::effects::{self, EffectsDecl};
use crate::signature::{self, ArgDecl, Signature};

/// A kernel's signature, CPU reference and effects.
#[derive(Clone, Copy, Debug)]
pub struct KernelDef {
    /// Kernarg layout and launch facts.
    pub signature: &'static Signature,
    /// The CPU reference.
    pub cpu: CpuReference,
    /// Declared effects.
    pub effects: &'static EffectsDecl,
}

/// The kernels of one module (`hip/<module>.hip`).
#[derive(Clone, Copy, Debug)]
pub struct ModuleDecl {
    /// Module name, as in [`crate::plan::MODULES`].
    pub module: &'static str,
    /// Every kernel the module's code object defines.
    pub kernels: &'static [KernelDef],
}

const fn def(signature: &'static Signature, cpu: CpuReference, effects: &'static EffectsDecl) -> KernelDef {
    KernelDef { signature, cpu, effects }
}

/// Every module with CPU references and the kernels it defines: the one list of kernel names
/// per module.
pub static MODULES: &[ModuleDecl] = &[
    ModuleDecl { module: "fill", kernels: &[def(&signature::FILL, cpu::fill, &effects::FILL)] },
    ModuleDecl { module: "copy", kernels: &[def(&signature::COPY, cpu::copy, &effects::COPY)] },
    ModuleDecl { module: "axpy", kernels: &[def(&signature::AXPY, cpu::axpy, &effects::AXPY)] },
    ModuleDecl {
        module: "elementwise",
        kernels: &[def(&signature::ADD, cpu::add, &effects::ADD), def(&signature::MUL, cpu::mul, &effects::MUL)],
    },
    ModuleDecl { module: "scale", kernels: &[def(&signature::SCALE, cpu::scale, &effects::SCALE)] },
    ModuleDecl { module: "rmsnorm", kernels: &[def(&signature::RMSNORM, cpu::rmsnorm, &effects::RMSNORM)] },
    ModuleDecl { module: "matvec", kernels: &[def(&signature::MATVEC, cpu::matvec, &effects::MATVEC)] },
    ModuleDecl { module: "block_sum", kernels: &[def(&signature::BLOCK_SUM, cpu::block_sum, &effects::BLOCK_SUM)] },
    ModuleDecl {
        module: "quant",
        kernels: &[
            def(&signature::MATVEC_Q4_1, cpu::matvec_q4_1, &effects::MATVEC_Q4_1),
            def(&signature::MATVEC_Q8_0, cpu::matvec_q8_0, &effects::MATVEC_Q8_0),
            def(&signature::GET_ROW_Q8_0, cpu::get_row_q8_0, &effects::GET_ROW_Q8_0),
        ],
    },
    ModuleDecl {
        module: "llama",
        kernels: &[
            def(&signature::ROPE, cpu::rope, &effects::ROPE),
            def(&signature::ROPE_STORE, cpu::rope_store, &effects::ROPE_STORE),
            def(&signature::KV_STORE, cpu::kv_store, &effects::KV_STORE),
            def(&signature::ATTENTION, cpu::attention, &effects::ATTENTION),
            def(&signature::SILU_MUL, cpu::silu_mul, &effects::SILU_MUL),
        ],
    },
    ModuleDecl {
        module: "prefill",
        kernels: &[
            def(&signature::MATMUL_Q4_1, cpu::matmul_q4_1, &effects::MATMUL_Q4_1),
            def(&signature::MATMUL_Q8_0, cpu::matmul_q8_0, &effects::MATMUL_Q8_0),
            def(&signature::GET_ROWS_Q8_0, cpu::get_rows_q8_0, &effects::GET_ROWS_Q8_0),
            def(&signature::ROPE_ROWS, cpu::rope_rows, &effects::ROPE_ROWS),
            def(&signature::ATTENTION_ROWS, cpu::attention_rows, &effects::ATTENTION_ROWS),
        ],
    },
];

/// Fixture code objects (`fixtures/gfxNNNN/<stem>.co`) that are a module built with other flags:
/// `(stem, module)`.
pub static FIXTURE_VARIANTS: &[(&str, &str)] = &[("axpy-wave64", "axpy")];

/// The module whose kernels the code object at `path` (below `objects/`) holds, when it has CPU
/// references.
#[must_use]
pub fn module_of(path: &str) -> Option<&'static ModuleDecl> {
    let is_target = |dir: &str| Target::from_str(dir).is_ok();
    let module = match path.split('/').collect::<Vec<_>>().as_slice() {
        [target, file] if is_target(target) => file.strip_suffix(".co")?,
        ["fixtures", target, file] if is_target(target) => {
            let stem = file.strip_suffix(".co")?;
            FIXTURE_VARIANTS.iter().find(|(s, _)| *s == stem)?.1
        }
        _ => return None,
    };
    MODULES.iter().find(|m| m.module == module)
}

/// One registered kernel of one code object.
#[derive(Clone, Copy, Debug)]
pub struct KernelEntry {
    /// Kernel symbol name.
    pub name: &'static str,
    /// Module (`hip/<module>.hip`).
    pub module: &'static str,
    /// The code object's path below `objects/`.
    pub path: &'static str,
    /// The code object's SHA-256.
    pub sha256: [u8; 32],
    /// The CPU reference.
    pub cpu: CpuReference,
    /// Declared effects.
    pub effects: &'static EffectsDecl,
    /// Explicit arguments: name, offset and size in the kernarg segment.
    pub explicit_args: &'static [ArgDecl],
    /// The whole signature, hidden group-size offset and launch limits included.
    pub signature: &'static Signature,
}

/// Kernels by code-object digest and name.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    /// Entries per digest (a code object holds few kernels).
    by_digest: BTreeMap<[u8; 32], Vec<KernelEntry>>,
}

impl Registry {
    /// Every kernel of every embedded code object that has CPU references.
    ///
    /// # Panics
    /// When an embedded manifest digest is not 64 hex digits (a build error, checked by tests).
    #[must_use]
    pub fn builtin() -> Self {
        Self::from_artifacts(crate::artifacts())
    }

    /// Every kernel of every artifact in `artifacts` that has CPU references.
    ///
    /// # Panics
    /// When an artifact's digest is not 64 hex digits.
    #[must_use]
    pub fn from_artifacts(artifacts: &'static [EmbeddedArtifact]) -> Self {
        let mut by_digest: BTreeMap<[u8; 32], Vec<KernelEntry>> = BTreeMap::new();
        for artifact in artifacts {
            let Some(module) = module_of(artifact.path) else { continue };
            // PANIC: manifest digests are written by `compile::sha256_hex`; a malformed one is a
            // build error, not input.
            let sha256 = parse_sha256_hex(artifact.sha256)
                .unwrap_or_else(|| panic!("{}: malformed SHA-256 {:?}", artifact.path, artifact.sha256));
            let entries = by_digest.entry(sha256).or_default();
            for kernel in module.kernels {
                let name = kernel.signature.name;
                if entries.iter().any(|e| e.name == name) {
                    continue; // The same bytes under another path: already registered.
                }
                entries.push(KernelEntry {
                    name,
                    module: module.module,
                    path: artifact.path,
                    sha256,
                    cpu: kernel.cpu,
                    effects: kernel.effects,
                    explicit_args: kernel.signature.explicit_args,
                    signature: kernel.signature,
                });
            }
        }
        Self { by_digest }
    }

    /// The kernel `name` of the code object with digest `sha256`.
    #[must_use]
    pub fn get(&self, sha256: &[u8; 32], name: &str) -> Option<&KernelEntry> {
        self.by_digest.get(sha256)?.iter().find(|e| e.name == name)
    }

    /// [`Registry::get`] with the digest as 64 hex digits (either case).
    #[must_use]
    pub fn get_hex(&self, sha256_hex: &str, name: &str) -> Option<&KernelEntry> {
        self.get(&parse_sha256_hex(sha256_hex)?, name)
    }

    /// Every entry, by digest then in module order.
    pub fn entries(&self) -> impl Iterator<Item = &KernelEntry> {
        self.by_digest.values().flatten()
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_digest.values().map(Vec::len).sum()
    }

    /// Whether nothing is registered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }
}

/// A SHA-256 written as 64 hex digits (either case).
#[must_use]
pub fn parse_sha256_hex(hex: &str) -> Option<[u8; 32]> {
    let (pairs, rest) = hex.as_bytes().as_chunks::<2>();
    if pairs.len() != 32 || !rest.is_empty() {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16);
    let mut out = [0u8; 32];
    for (byte, &[hi, lo]) in out.iter_mut().zip(pairs) {
        // CAST: two hex digits are at most 0xff.
        #[allow(clippy::cast_possible_truncation)]
        let value = (digit(hi)? * 16 + digit(lo)?) as u8;
        *byte = value;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digests_parse_exactly() {
        let hex = "00ff10A0".repeat(8);
        let parsed = parse_sha256_hex(&hex).unwrap();
        assert_eq!(&parsed[..4], &[0x00, 0xff, 0x10, 0xa0]);
        assert_eq!(parse_sha256_hex(&hex[1..]), None);
        assert_eq!(parse_sha256_hex(&format!("{}0", &hex)), None);
        assert_eq!(parse_sha256_hex(&hex.replace('A', "g")), None);
        assert_eq!(parse_sha256_hex(""), None);
    }

    #[test]
    fn paths_map_to_modules() {
        let module = |p| module_of(p).map(|m| m.module);
        assert_eq!(module("gfx1100/elementwise.co"), Some("elementwise"));
        assert_eq!(module("fixtures/gfx1201/axpy-wave64.co"), Some("axpy"));
        assert_eq!(module("fixtures/gfx1201/fill-v4.co"), None);
        assert_eq!(module("fixtures/gfx1030/scratch.co"), None);
        assert_eq!(module("fixtures/fill.bundle"), None);
        assert_eq!(module("gfx9999/fill.co"), None);
        assert_eq!(module("gfx1100/unknown.co"), None);
        assert_eq!(module("gfx1100/fill.bundle"), None);
    }

    #[test]
    fn every_planned_module_has_references() {
        let planned: Vec<&str> = crate::plan::MODULES.to_vec();
        let registered: Vec<&str> = MODULES.iter().map(|m| m.module).collect();
        assert_eq!(planned, registered);
    }
}
