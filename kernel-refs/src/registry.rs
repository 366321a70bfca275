//! Which CPU reference runs which kernel of which embedded code object, keyed by
//! `(code-object SHA-256, kernel name)`, with the kernel's effects and argument layout.
//!
//! The kernels, their signatures and effects, and which code object holds which module are
//! `kernels::catalog`'s; this module adds one CPU reference per catalogued kernel
//! ([`REFERENCES`]) and indexes them by the digests of the embedded code objects. Registered:
//! every catalogued kernel of every catalogued code object (every module code object and the
//! wave64 `axpy` fixture).

use std::collections::BTreeMap;

use kernels::catalog;
use kernels::effects::EffectsDecl;
use kernels::signature::{self, ArgDecl, Signature};
use kernels::{EmbeddedArtifact, parse_sha256_hex};

use crate::cpu::{self, CpuReference};

/// The CPU reference of one catalogued kernel, named by the kernel's signature.
#[derive(Clone, Copy, Debug)]
pub struct Reference {
    /// The kernel's signature (one of `kernels::signature`'s statics, as the catalogue names it).
    pub signature: &'static Signature,
    /// Its CPU reference.
    pub cpu: CpuReference,
}

const fn reference_of(signature: &'static Signature, cpu: CpuReference) -> Reference {
    Reference { signature, cpu }
}

/// Every catalogued kernel's CPU reference, in catalogue order.
pub static REFERENCES: &[Reference] = &[
    reference_of(&signature::FILL, cpu::fill),
    reference_of(&signature::COPY, cpu::copy),
    reference_of(&signature::AXPY, cpu::axpy),
    reference_of(&signature::ADD, cpu::add),
    reference_of(&signature::MUL, cpu::mul),
    reference_of(&signature::SCALE, cpu::scale),
    reference_of(&signature::RMSNORM, cpu::rmsnorm),
    reference_of(&signature::MATVEC, cpu::matvec),
    reference_of(&signature::BLOCK_SUM, cpu::block_sum),
    reference_of(&signature::MATVEC_Q4_1, cpu::matvec_q4_1),
    reference_of(&signature::MATVEC_Q8_0, cpu::matvec_q8_0),
    reference_of(&signature::GET_ROW_Q8_0, cpu::get_row_q8_0),
    reference_of(&signature::ROPE, cpu::rope),
    reference_of(&signature::ROPE_STORE, cpu::rope_store),
    reference_of(&signature::KV_STORE, cpu::kv_store),
    reference_of(&signature::ATTENTION, cpu::attention),
    reference_of(&signature::SILU_MUL, cpu::silu_mul),
    reference_of(&signature::MATMUL_Q4_1, cpu::matmul_q4_1),
    reference_of(&signature::MATMUL_Q8_0, cpu::matmul_q8_0),
    reference_of(&signature::GET_ROWS_Q8_0, cpu::get_rows_q8_0),
    reference_of(&signature::ROPE_ROWS, cpu::rope_rows),
    reference_of(&signature::ATTENTION_ROWS, cpu::attention_rows),
    reference_of(&signature::MATVEC_Q4_0, cpu::ggml::matvec_q4_0),
    reference_of(&signature::MATMUL_Q4_0, cpu::ggml::matmul_q4_0),
    reference_of(&signature::GET_ROW_Q4_0, cpu::ggml::get_row_q4_0),
    reference_of(&signature::GET_ROWS_Q4_0, cpu::ggml::get_rows_q4_0),
    reference_of(&signature::GET_ROW_Q4_1, cpu::ggml::get_row_q4_1),
    reference_of(&signature::GET_ROWS_Q4_1, cpu::ggml::get_rows_q4_1),
    reference_of(&signature::MATVEC_Q5_0, cpu::ggml::matvec_q5_0),
    reference_of(&signature::MATMUL_Q5_0, cpu::ggml::matmul_q5_0),
    reference_of(&signature::GET_ROW_Q5_0, cpu::ggml::get_row_q5_0),
    reference_of(&signature::GET_ROWS_Q5_0, cpu::ggml::get_rows_q5_0),
    reference_of(&signature::MATVEC_Q5_1, cpu::ggml::matvec_q5_1),
    reference_of(&signature::MATMUL_Q5_1, cpu::ggml::matmul_q5_1),
    reference_of(&signature::GET_ROW_Q5_1, cpu::ggml::get_row_q5_1),
    reference_of(&signature::GET_ROWS_Q5_1, cpu::ggml::get_rows_q5_1),
    reference_of(&signature::MATVEC_Q2_K, cpu::ggml::matvec_q2_k),
    reference_of(&signature::MATMUL_Q2_K, cpu::ggml::matmul_q2_k),
    reference_of(&signature::GET_ROW_Q2_K, cpu::ggml::get_row_q2_k),
    reference_of(&signature::GET_ROWS_Q2_K, cpu::ggml::get_rows_q2_k),
    reference_of(&signature::MATVEC_Q3_K, cpu::ggml::matvec_q3_k),
    reference_of(&signature::MATMUL_Q3_K, cpu::ggml::matmul_q3_k),
    reference_of(&signature::GET_ROW_Q3_K, cpu::ggml::get_row_q3_k),
    reference_of(&signature::GET_ROWS_Q3_K, cpu::ggml::get_rows_q3_k),
    reference_of(&signature::MATVEC_Q4_K, cpu::ggml::matvec_q4_k),
    reference_of(&signature::MATMUL_Q4_K, cpu::ggml::matmul_q4_k),
    reference_of(&signature::GET_ROW_Q4_K, cpu::ggml::get_row_q4_k),
    reference_of(&signature::GET_ROWS_Q4_K, cpu::ggml::get_rows_q4_k),
    reference_of(&signature::MATVEC_Q5_K, cpu::ggml::matvec_q5_k),
    reference_of(&signature::MATMUL_Q5_K, cpu::ggml::matmul_q5_k),
    reference_of(&signature::GET_ROW_Q5_K, cpu::ggml::get_row_q5_k),
    reference_of(&signature::GET_ROWS_Q5_K, cpu::ggml::get_rows_q5_k),
    reference_of(&signature::MATVEC_Q6_K, cpu::ggml::matvec_q6_k),
    reference_of(&signature::MATMUL_Q6_K, cpu::ggml::matmul_q6_k),
    reference_of(&signature::GET_ROW_Q6_K, cpu::ggml::get_row_q6_k),
    reference_of(&signature::GET_ROWS_Q6_K, cpu::ggml::get_rows_q6_k),
    reference_of(&signature::MATVEC_F16, cpu::ggml::matvec_f16),
    reference_of(&signature::MATMUL_F16, cpu::ggml::matmul_f16),
    reference_of(&signature::GET_ROW_F16, cpu::ggml::get_row_f16),
    reference_of(&signature::GET_ROWS_F16, cpu::ggml::get_rows_f16),
    reference_of(&signature::MATVEC_BF16, cpu::ggml::matvec_bf16),
    reference_of(&signature::MATMUL_BF16, cpu::ggml::matmul_bf16),
    reference_of(&signature::GET_ROW_BF16, cpu::ggml::get_row_bf16),
    reference_of(&signature::GET_ROWS_BF16, cpu::ggml::get_rows_bf16),
    reference_of(&signature::ROPE_NEOX, cpu::rope_neox),
    reference_of(&signature::ROPE_NEOX_STORE, cpu::rope_neox_store),
    reference_of(&signature::ROPE_NEOX_ROWS, cpu::rope_neox_rows),
    reference_of(&signature::ATTENTION_WINDOW, cpu::attention_window),
    reference_of(&signature::ATTENTION_WINDOW_ROWS, cpu::attention_window_rows),
    reference_of(&signature::GELU_MUL, cpu::gelu_mul),
    reference_of(&signature::SHORTCONV, cpu::shortconv),
    reference_of(&signature::SHORTCONV_ROWS, cpu::shortconv_rows),
    reference_of(&signature::SSM_CONV_SILU, cpu::ssm_conv_silu),
    reference_of(&signature::GATED_DELTA_NET, cpu::gated_delta_net),
    reference_of(&signature::SPLIT_HALVES, cpu::split_halves),
    reference_of(&signature::ROPE_PARTIAL, cpu::rope_partial),
    reference_of(&signature::SIGMOID_MUL, cpu::sigmoid_mul),
];

/// The CPU reference of the kernel whose signature is `signature` (the same static, not an
/// equal one).
#[must_use]
pub fn reference(signature: &'static Signature) -> Option<CpuReference> {
    REFERENCES.iter().find(|r| std::ptr::eq(r.signature, signature)).map(|r| r.cpu)
}

/// A catalogued kernel with its CPU reference.
#[derive(Clone, Copy, Debug)]
pub struct KernelDef {
    /// Kernarg layout and launch facts.
    pub signature: &'static Signature,
    /// The CPU reference.
    pub cpu: CpuReference,
    /// Declared effects.
    pub effects: &'static EffectsDecl,
}

/// Every catalogued kernel that has a CPU reference (all of them: tested), in catalogue order.
pub fn kernel_defs() -> impl Iterator<Item = KernelDef> {
    catalog::MODULES
        .iter()
        .flat_map(|m| m.kernels)
        .filter_map(|k| Some(KernelDef { signature: k.signature, cpu: reference(k.signature)?, effects: k.effects }))
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
    /// Every catalogued kernel of every embedded code object that has a CPU reference.
    ///
    /// # Panics
    /// When an embedded manifest digest is not 64 hex digits (a build error, checked by tests).
    #[must_use]
    pub fn builtin() -> Self {
        Self::from_artifacts(kernels::artifacts())
    }

    /// Every catalogued kernel of every artifact in `artifacts` that has a CPU reference.
    ///
    /// # Panics
    /// When an artifact's digest is not 64 hex digits.
    #[must_use]
    pub fn from_artifacts(artifacts: &'static [EmbeddedArtifact]) -> Self {
        let mut by_digest: BTreeMap<[u8; 32], Vec<KernelEntry>> = BTreeMap::new();
        for artifact in artifacts {
            let Some(module) = catalog::module_of(artifact.path) else { continue };
            // PANIC: manifest digests are written by `kernels::compile::sha256_hex`; a malformed
            // one is a build error, not input (`kernels` tests every embedded digest).
            let sha256 = parse_sha256_hex(artifact.sha256)
                .unwrap_or_else(|| panic!("{}: malformed SHA-256 {:?}", artifact.path, artifact.sha256));
            let entries = by_digest.entry(sha256).or_default();
            for kernel in module.kernels {
                let Some(cpu) = reference(kernel.signature) else { continue };
                let name = kernel.signature.name;
                if entries.iter().any(|e| e.name == name) {
                    continue; // The same bytes under another path: already registered.
                }
                entries.push(KernelEntry {
                    name,
                    module: module.module,
                    path: artifact.path,
                    sha256,
                    cpu,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogued_kernel_has_exactly_one_reference_and_nothing_else_has_one() {
        let catalogued: Vec<&'static Signature> =
            catalog::MODULES.iter().flat_map(|m| m.kernels).map(|k| k.signature).collect();
        for signature in &catalogued {
            let count = REFERENCES.iter().filter(|r| std::ptr::eq(r.signature, *signature)).count();
            assert_eq!(count, 1, "{}", signature.name);
        }
        assert_eq!(REFERENCES.len(), catalogued.len());
        let in_order: Vec<&str> = REFERENCES.iter().map(|r| r.signature.name).collect();
        assert_eq!(in_order, catalogued.iter().map(|s| s.name).collect::<Vec<_>>());
        assert_eq!(kernel_defs().count(), catalogued.len());
    }

    #[test]
    fn references_are_found_by_their_signature() {
        assert!(reference(&signature::FILL).is_some_and(|f| std::ptr::fn_addr_eq(f, cpu::fill as CpuReference)));
        let copy_of_fill: &'static Signature = Box::leak(Box::new(signature::FILL));
        assert!(reference(copy_of_fill).is_none(), "an equal signature is not the catalogued one");
    }
}
