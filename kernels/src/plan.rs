//! What gets built: every kernel module for every supported target, plus the test fixtures
//! (scratch, dispatch pointer, wave64, code-object v4, an offload bundle). One list, used by the
//! `build-kernels` tool and by the rebuild test.

use pm4_encoding::Target;

/// Kernel modules (`hip/<name>.hip`), built for every target.
pub const MODULES: &[&str] = &[
    "fill",
    "copy",
    "axpy",
    "elementwise",
    "scale",
    "rmsnorm",
    "matvec",
    "block_sum",
    "quant",
    "llama",
    "prefill",
    "ggml_quants",
    "gemma",
    "lfm2",
    "qwen35",
];

/// Flags every compile uses: device-only HIP without ROCm headers or device libraries, one
/// unbundled code object, no per-build random CUID (reproducible), no FMA contraction (the CPU
/// references compute the same separate multiply and add).
pub const COMMON_FLAGS: &[&str] = &[
    "-x",
    "hip",
    "-nogpulib",
    "-nogpuinc",
    "--cuda-device-only",
    "-fuse-cuid=none",
    "-O3",
    "-std=c++17",
    "-ffp-contract=off",
];

/// How an artifact differs from a plain module build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Code object v5 (clang-19's default), wave32.
    Plain,
    /// `-mwavefrontsize64`.
    Wave64,
    /// `-mcode-object-version=4`.
    CodeObjectV4,
}

/// One file of `objects/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    /// Path below `objects/`.
    pub path: String,
    /// Source below `hip/`.
    pub source: String,
    /// Targets: one for a code object, several for an offload bundle.
    pub targets: Vec<Target>,
    /// Flags besides [`COMMON_FLAGS`].
    pub variant: Variant,
    /// An offload bundle (several targets in one file) instead of a single code object.
    pub bundle: bool,
}

impl Artifact {
    /// The clang arguments after the compiler name, without the output path.
    #[must_use]
    pub fn args(&self, hip_dir: &str) -> Vec<String> {
        let mut args: Vec<String> = COMMON_FLAGS.iter().map(|s| (*s).to_owned()).collect();
        for t in &self.targets {
            args.push(format!("--offload-arch={}", t.name()));
        }
        if !self.bundle {
            args.push("--no-gpu-bundle-output".to_owned());
        }
        match self.variant {
            Variant::Plain => {}
            Variant::Wave64 => args.push("-mwavefrontsize64".to_owned()),
            Variant::CodeObjectV4 => args.push("-mcode-object-version=4".to_owned()),
        }
        args.push(format!("-I{hip_dir}"));
        args.push(format!("{hip_dir}/{}", self.source));
        args
    }
}

fn single(path: String, source: &str, target: Target, variant: Variant) -> Artifact {
    Artifact { path, source: source.to_owned(), targets: vec![target], variant, bundle: false }
}

/// Every artifact, in manifest order.
#[must_use]
pub fn artifacts() -> Vec<Artifact> {
    let mut out = Vec::new();
    for target in Target::ALL {
        for module in MODULES {
            out.push(single(
                format!("{}/{module}.co", target.name()),
                &format!("{module}.hip"),
                target,
                Variant::Plain,
            ));
        }
    }
    for target in Target::ALL {
        let t = target.name();
        out.push(single(format!("fixtures/{t}/scratch.co"), "fixtures/scratch.hip", target, Variant::Plain));
        out.push(single(format!("fixtures/{t}/dispatch_ptr.co"), "fixtures/dispatch_ptr.hip", target, Variant::Plain));
        out.push(single(format!("fixtures/{t}/axpy-wave64.co"), "axpy.hip", target, Variant::Wave64));
        out.push(single(format!("fixtures/{t}/fill-v4.co"), "fill.hip", target, Variant::CodeObjectV4));
    }
    out.push(Artifact {
        path: "fixtures/fill.bundle".to_owned(),
        source: "fill.hip".to_owned(),
        targets: Target::ALL.to_vec(),
        variant: Variant::Plain,
        bundle: true,
    });
    out
}
