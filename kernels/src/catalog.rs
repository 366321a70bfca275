//! The kernel catalogue: which kernels every module's code object defines, each with its
//! signature and declared effects, and which checked-in code objects hold which module.
//!
//! Catalogued: every module code object (`gfxNNNN/<module>.co`) and the fixture variants in
//! [`FIXTURE_VARIANTS`] (the wave64 `axpy`). The other fixtures (scratch, dispatch pointer,
//! code object v4, the offload bundle) are not: they exist to exercise the code-object reader and
//! the verdict, and the v4 `fill` reads its work-group size from the dispatch packet, not from the
//! kernarg segment as the module's signature says.
//!
//! This is data only. What runs a catalogued kernel on a CPU (its reference, keyed by code-object
//! digest and kernel name) is `kernel_refs::registry`, which the soft device uses.

use std::str::FromStr;

use pm4_encoding::Target;

use crate::effects::{self, EffectsDecl};
use crate::signature::{self, Signature};

/// A kernel's signature and effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDecl {
    /// Kernarg layout and launch facts.
    pub signature: &'static Signature,
    /// Declared effects.
    pub effects: &'static EffectsDecl,
}

/// The kernels of one module (`hip/<module>.hip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleDecl {
    /// Module name, as in [`crate::plan::MODULES`].
    pub module: &'static str,
    /// Every kernel the module's code object defines.
    pub kernels: &'static [KernelDecl],
}

impl ModuleDecl {
    /// The module's kernel called `name`.
    #[must_use]
    pub fn kernel(&self, name: &str) -> Option<&'static KernelDecl> {
        self.kernels.iter().find(|k| k.signature.name == name)
    }
}

const fn decl(signature: &'static Signature, effects: &'static EffectsDecl) -> KernelDecl {
    KernelDecl { signature, effects }
}

/// `&[decl(&signature::X, &effects::X), ...]` for kernels whose signature and effects share a
/// name.
macro_rules! decls {
    ($($kernel:ident),* $(,)?) => {
        &[$(decl(&signature::$kernel, &effects::$kernel)),*]
    };
}

/// Every module and the kernels it defines: the one list of kernel names per module.
pub static MODULES: &[ModuleDecl] = &[
    ModuleDecl { module: "fill", kernels: &[decl(&signature::FILL, &effects::FILL)] },
    ModuleDecl { module: "copy", kernels: &[decl(&signature::COPY, &effects::COPY)] },
    ModuleDecl { module: "axpy", kernels: &[decl(&signature::AXPY, &effects::AXPY)] },
    ModuleDecl {
        module: "elementwise",
        kernels: &[decl(&signature::ADD, &effects::ADD), decl(&signature::MUL, &effects::MUL)],
    },
    ModuleDecl { module: "scale", kernels: &[decl(&signature::SCALE, &effects::SCALE)] },
    ModuleDecl { module: "rmsnorm", kernels: &[decl(&signature::RMSNORM, &effects::RMSNORM)] },
    ModuleDecl { module: "matvec", kernels: &[decl(&signature::MATVEC, &effects::MATVEC)] },
    ModuleDecl { module: "block_sum", kernels: &[decl(&signature::BLOCK_SUM, &effects::BLOCK_SUM)] },
    ModuleDecl {
        module: "quant",
        kernels: &[
            decl(&signature::MATVEC_Q4_1, &effects::MATVEC_Q4_1),
            decl(&signature::MATVEC_Q8_0, &effects::MATVEC_Q8_0),
            decl(&signature::GET_ROW_Q8_0, &effects::GET_ROW_Q8_0),
        ],
    },
    ModuleDecl {
        module: "llama",
        kernels: &[
            decl(&signature::ROPE, &effects::ROPE),
            decl(&signature::ROPE_STORE, &effects::ROPE_STORE),
            decl(&signature::KV_STORE, &effects::KV_STORE),
            decl(&signature::ATTENTION, &effects::ATTENTION),
            decl(&signature::SILU_MUL, &effects::SILU_MUL),
        ],
    },
    ModuleDecl {
        module: "prefill",
        kernels: &[
            decl(&signature::MATMUL_Q4_1, &effects::MATMUL_Q4_1),
            decl(&signature::MATMUL_Q8_0, &effects::MATMUL_Q8_0),
            decl(&signature::GET_ROWS_Q8_0, &effects::GET_ROWS_Q8_0),
            decl(&signature::ROPE_ROWS, &effects::ROPE_ROWS),
            decl(&signature::ATTENTION_ROWS, &effects::ATTENTION_ROWS),
        ],
    },
    ModuleDecl {
        module: "ggml_quants",
        kernels: decls![
            MATVEC_Q4_0,
            MATMUL_Q4_0,
            GET_ROW_Q4_0,
            GET_ROWS_Q4_0,
            GET_ROW_Q4_1,
            GET_ROWS_Q4_1,
            MATVEC_Q5_0,
            MATMUL_Q5_0,
            GET_ROW_Q5_0,
            GET_ROWS_Q5_0,
            MATVEC_Q5_1,
            MATMUL_Q5_1,
            GET_ROW_Q5_1,
            GET_ROWS_Q5_1,
            MATVEC_Q2_K,
            MATMUL_Q2_K,
            GET_ROW_Q2_K,
            GET_ROWS_Q2_K,
            MATVEC_Q3_K,
            MATMUL_Q3_K,
            GET_ROW_Q3_K,
            GET_ROWS_Q3_K,
            MATVEC_Q4_K,
            MATMUL_Q4_K,
            GET_ROW_Q4_K,
            GET_ROWS_Q4_K,
            MATVEC_Q5_K,
            MATMUL_Q5_K,
            GET_ROW_Q5_K,
            GET_ROWS_Q5_K,
            MATVEC_Q6_K,
            MATMUL_Q6_K,
            GET_ROW_Q6_K,
            GET_ROWS_Q6_K,
            MATVEC_F16,
            MATMUL_F16,
            GET_ROW_F16,
            GET_ROWS_F16,
            MATVEC_BF16,
            MATMUL_BF16,
            GET_ROW_BF16,
            GET_ROWS_BF16,
        ],
    },
    ModuleDecl {
        module: "gemma",
        kernels: &[
            decl(&signature::ROPE_NEOX, &effects::ROPE_NEOX),
            decl(&signature::ROPE_NEOX_STORE, &effects::ROPE_NEOX_STORE),
            decl(&signature::ROPE_NEOX_ROWS, &effects::ROPE_NEOX_ROWS),
            decl(&signature::ATTENTION_WINDOW, &effects::ATTENTION_WINDOW),
            decl(&signature::ATTENTION_WINDOW_ROWS, &effects::ATTENTION_WINDOW_ROWS),
            decl(&signature::GELU_MUL, &effects::GELU_MUL),
        ],
    },
    ModuleDecl {
        module: "lfm2",
        kernels: &[
            decl(&signature::SHORTCONV, &effects::SHORTCONV),
            decl(&signature::SHORTCONV_ROWS, &effects::SHORTCONV_ROWS),
        ],
    },
    ModuleDecl {
        module: "qwen35",
        kernels: decls![SSM_CONV_SILU, GATED_DELTA_NET, SPLIT_HALVES, ROPE_PARTIAL, SIGMOID_MUL],
    },
];

/// Fixture code objects (`fixtures/gfxNNNN/<stem>.co`) that are a module built with other flags:
/// `(stem, module)`.
pub static FIXTURE_VARIANTS: &[(&str, &str)] = &[("axpy-wave64", "axpy")];

/// The module whose kernels the code object at `path` (below `objects/`) holds, when it is
/// catalogued.
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn every_planned_module_is_catalogued() {
        let planned: Vec<&str> = crate::plan::MODULES.to_vec();
        let catalogued: Vec<&str> = MODULES.iter().map(|m| m.module).collect();
        assert_eq!(planned, catalogued);
    }

    #[test]
    fn kernels_are_found_by_name_and_their_effects_name_them() {
        let quant = MODULES.iter().find(|m| m.module == "quant").unwrap();
        assert_eq!(quant.kernel("get_row_q8_0").map(|k| k.signature.name), Some("get_row_q8_0"));
        assert!(quant.kernel("fill").is_none());
        for kernel in MODULES.iter().flat_map(|m| m.kernels) {
            assert_eq!(kernel.effects.kernel, kernel.signature.name);
            assert_eq!(kernel.effects.args, kernel.signature.explicit_args, "{}", kernel.effects.kernel);
        }
    }
}
