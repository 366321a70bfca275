//! The builtin registry holds exactly the catalogued kernels of the embedded code objects, each
//! with its CPU reference, and finds them by (code-object digest, kernel name).

use kernel_refs::cpu::{self, CpuReference};
use kernel_refs::registry::Registry;
use kernels::catalog;

#[test]
fn builtin_registry_covers_every_module_code_object_and_nothing_else() {
    let registry = Registry::builtin();
    // 22 kernels, 42 of module ggml_quants, 6 of module gemma, 2 of module lfm2 and 5 of module
    // qwen35 per target of the target table, plus one wave64 axpy fixture per target.
    assert_eq!(registry.len(), (22 + 42 + 6 + 2 + 5 + 1) * pm4_encoding::Target::ALL.len());
    for artifact in kernels::artifacts() {
        let module = catalog::module_of(artifact.path);
        let registered: Vec<_> = registry.entries().filter(|e| e.path == artifact.path).collect();
        match module {
            Some(m) => {
                let names: Vec<&str> = registered.iter().map(|e| e.name).collect();
                assert_eq!(names, m.kernels.iter().map(|k| k.signature.name).collect::<Vec<_>>());
                // Each entry carries the catalogue's own signature and effects, and the digest of
                // the code object it was registered for.
                for (entry, decl) in registered.iter().zip(m.kernels) {
                    let what = format!("{} {}", artifact.path, entry.name);
                    assert!(std::ptr::eq(entry.signature, decl.signature), "{what}");
                    assert!(std::ptr::eq(entry.effects, decl.effects), "{what}");
                    assert!(std::ptr::eq(entry.explicit_args, decl.signature.explicit_args), "{what}");
                    assert_eq!(entry.module, m.module, "{what}");
                    assert_eq!(Some(entry.sha256), kernels::parse_sha256_hex(artifact.sha256), "{what}");
                }
            }
            None => assert!(registered.is_empty(), "{} must not be registered", artifact.path),
        }
    }
}

fn same_fn(a: CpuReference, b: CpuReference) -> bool {
    std::ptr::fn_addr_eq(a, b)
}

#[test]
fn lookups_are_by_digest_and_name() {
    let registry = Registry::builtin();
    let sha = |path| kernels::artifact(path).unwrap().sha256;

    let fill = registry.get_hex(sha("gfx1100/fill.co"), "fill").unwrap();
    assert_eq!((fill.name, fill.module, fill.path), ("fill", "fill", "gfx1100/fill.co"));
    assert!(same_fn(fill.cpu, cpu::fill));
    assert_eq!(
        fill.explicit_args.iter().map(|a| (a.name, a.offset, a.size)).collect::<Vec<_>>(),
        [("out", 0, 8), ("value", 8, 4), ("n", 12, 4)]
    );
    assert_eq!(fill.effects.kernel, "fill");

    let digest = kernels::parse_sha256_hex(sha("gfx1201/elementwise.co")).unwrap();
    let mul = registry.get(&digest, "mul").unwrap();
    assert_eq!((mul.module, mul.effects.kernel), ("elementwise", "mul"));
    assert!(same_fn(mul.cpu, cpu::mul));
    assert!(same_fn(registry.get(&digest, "add").unwrap().cpu, cpu::add));

    let wave64 = registry.get_hex(sha("fixtures/gfx1030/axpy-wave64.co"), "axpy").unwrap();
    assert_eq!(wave64.module, "axpy");
    assert!(same_fn(wave64.cpu, cpu::axpy));

    let quant = kernels::parse_sha256_hex(sha("gfx1030/quant.co")).unwrap();
    assert!(same_fn(registry.get(&quant, "matvec_q4_1").unwrap().cpu, cpu::matvec_q4_1));
    assert!(same_fn(registry.get(&quant, "get_row_q8_0").unwrap().cpu, cpu::get_row_q8_0));
    let prefill = registry.get_hex(sha("gfx1151/prefill.co"), "matmul_q4_1").unwrap();
    assert_eq!((prefill.module, prefill.effects.kernel), ("prefill", "matmul_q4_1"));
    assert!(same_fn(prefill.cpu, cpu::matmul_q4_1));
    let attention = registry.get_hex(sha("gfx1200/llama.co"), "attention").unwrap();
    assert_eq!((attention.module, attention.effects.kernel), ("llama", "attention"));
    assert!(same_fn(attention.cpu, cpu::attention));

    // Upper-case hex finds the same entry.
    assert!(registry.get_hex(&sha("gfx1151/rmsnorm.co").to_uppercase(), "rmsnorm").is_some());

    // Unknown pairs.
    assert!(registry.get_hex(sha("gfx1100/fill.co"), "copy").is_none());
    assert!(registry.get_hex(sha("gfx1100/fill.co"), "").is_none());
    assert!(registry.get_hex(sha("fixtures/gfx1100/fill-v4.co"), "fill").is_none());
    assert!(registry.get_hex(sha("fixtures/gfx1100/scratch.co"), "uses_scratch").is_none());
    assert!(registry.get(&[0u8; 32], "fill").is_none());
    assert!(registry.get_hex("not hex", "fill").is_none());
}
