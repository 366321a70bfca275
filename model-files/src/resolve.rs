//! How a model argument (an alias or a `.gguf` path) resolves to a file: a catalogued alias to
//! its cached copy (verified, pulled on demand), a built-in alias to its generated file, a path
//! to itself.

use std::io;
use std::path::{Path, PathBuf};

use crate::cache::{NoCacheRoot, builtin_path, cache_root, model_path, write_atomically};
use crate::catalogue::{BuiltinModel, CatalogueEntry, builtin, lookup, model_aliases};
use crate::digest::{VerifyError, verify_file};
use crate::pull::{self, PullError, PullOptions};

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
        source: VerifyError,
    },
    /// Fetching on demand failed.
    #[error(transparent)]
    Pull(#[from] PullError),
    /// A built-in model could not be written into the cache.
    #[error("cannot write the built-in model {alias} to {}: {source}", path.display())]
    WriteBuiltin {
        /// Its alias.
        alias: &'static str,
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

impl From<NoCacheRoot> for ModelError {
    fn from(NoCacheRoot: NoCacheRoot) -> Self {
        Self::NoCacheRoot
    }
}

/// The built-in `model` in the cache under `root`, written there when it is missing or not the
/// built-in bytes.
///
/// # Errors
/// [`ModelError::WriteBuiltin`].
pub fn resolve_builtin(root: &Path, model: &BuiltinModel) -> Result<ResolvedModel, ModelError> {
    let path = builtin_path(root, model);
    let bytes = (model.bytes)();
    if std::fs::read(&path).is_ok_and(|cached| cached == bytes) {
        return Ok(ResolvedModel { entry: None, path, fetched: false });
    }
    let write = |path: &Path| -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        write_atomically(path, &bytes)
    };
    write(&path).map_err(|source| ModelError::WriteBuiltin { alias: model.alias, path: path.clone(), source })?;
    Ok(ResolvedModel { entry: None, path, fetched: false })
}

/// Resolves a model argument under the environment's cache root: a known alias to its cached
/// file (verified against the pinned size and SHA-256), a built-in alias
/// ([`crate::catalogue::BUILTINS`]) to its generated model (written into the cache on first use),
/// or a path to an existing `.gguf` file to itself. With `pull_if_missing`, a known alias that is not cached (or does not verify) is
/// fetched as `redline pull` would, with progress on stderr when it is a terminal.
///
/// # Errors
/// [`ModelError`]: unknown argument (the message lists the aliases), not pulled, damaged, no
/// cache root, the on-demand pull failed, or a built-in model could not be written.
pub fn resolve_model(arg: &str, pull_if_missing: bool) -> Result<ResolvedModel, ModelError> {
    if let Some(entry) = lookup(arg) {
        return resolve_alias(&cache_root()?, entry, pull_if_missing);
    }
    if let Some(model) = builtin(arg) {
        return resolve_builtin(&cache_root()?, model);
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
    let verdict = if path.exists() { Some(verify_file(&path, entry.gguf_bytes, entry.gguf_sha256)) } else { None };
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
    use crate::catalogue::DEFAULT_ALIAS;

    #[test]
    fn unknown_argument_lists_the_aliases() {
        let err = resolve_model("no-such-model", false).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ModelError::Unknown { .. }));
        assert!(
            text.contains("\"no-such-model\"")
                && text.contains("smollm2-135m, gemma-3-270m; built in: tiny, tiny-gemma3, tiny-lfm2, tiny-qwen35"),
            "{text}"
        );
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
        let first = resolve_builtin(&root, &crate::catalogue::TINY).unwrap();
        assert_eq!(first.path, root.join("models/tiny/tiny-llama.gguf"));
        let written = std::fs::read(&first.path).unwrap();
        assert_eq!(written, gguf::tiny_llama(&gguf::TinyLlamaConfig::default()));
        gguf::Gguf::open(&first.path).expect("the written file is a GGUF");
        std::fs::write(&first.path, b"GGUF damaged").unwrap();
        let again = resolve_builtin(&root, &crate::catalogue::TINY).unwrap();
        assert_eq!(std::fs::read(&again.path).unwrap(), written, "a damaged copy is replaced");
        let leftovers: Vec<_> =
            std::fs::read_dir(root.join("models/tiny")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, ["tiny-llama.gguf"], "no temporary file is left behind");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_built_in_gemma3_is_written_beside_the_tiny_llama() {
        let root = std::env::temp_dir().join(format!("redline-models-tiny-gemma3-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let gemma = resolve_builtin(&root, &crate::catalogue::TINY_GEMMA3).unwrap();
        assert_eq!(gemma.path, root.join("models/tiny-gemma3/tiny-gemma3.gguf"));
        assert_eq!(std::fs::read(&gemma.path).unwrap(), gguf::tiny_gemma3(&gguf::TinyGemma3Config::default()));
        let llama = resolve_builtin(&root, &crate::catalogue::TINY).unwrap();
        assert_ne!(llama.path, gemma.path);
        let qwen = resolve_builtin(&root, &crate::catalogue::TINY_QWEN35).unwrap();
        assert_eq!(qwen.path, root.join("models/tiny-qwen35/tiny-qwen35.gguf"));
        assert_eq!(std::fs::read(&qwen.path).unwrap(), gguf::tiny_qwen35(&gguf::TinyQwen35Config::default()));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_built_in_lfm2_is_written_beside_the_others() {
        let root = std::env::temp_dir().join(format!("redline-models-tiny-lfm2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let lfm2 = resolve_builtin(&root, &crate::catalogue::TINY_LFM2).unwrap();
        assert_eq!(lfm2.path, root.join("models/tiny-lfm2/tiny-lfm2.gguf"));
        assert_eq!(std::fs::read(&lfm2.path).unwrap(), gguf::tiny_lfm2(&gguf::TinyLfm2Config::default()));
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
