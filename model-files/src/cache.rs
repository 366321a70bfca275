//! Where models are cached: `$REDLINE_HOME`, else `$XDG_CACHE_HOME/redline`, else
//! `$HOME/.cache/redline`, with each catalogued model under `models/<alias>/`.

use std::io;
use std::path::{Path, PathBuf};

use crate::catalogue::{BuiltinModel, CatalogueEntry, TINY};

/// Overrides the cache root.
pub const HOME_ENV: &str = "REDLINE_HOME";

/// Neither `REDLINE_HOME`, `XDG_CACHE_HOME` nor `HOME` gives an absolute directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no cache directory: set REDLINE_HOME (or XDG_CACHE_HOME or HOME) to an absolute path")]
pub struct NoCacheRoot;

/// The cache root from the environment: `$REDLINE_HOME`, else `$XDG_CACHE_HOME/redline`, else
/// `$HOME/.cache/redline`.
///
/// # Errors
/// [`NoCacheRoot`] when none is set to an absolute path.
pub fn cache_root() -> Result<PathBuf, NoCacheRoot> {
    let var = |name| std::env::var_os(name).map(PathBuf::from);
    cache_root_from(var(HOME_ENV), var("XDG_CACHE_HOME"), var("HOME"))
}

/// [`cache_root`] from given values. Empty and relative values count as unset, as the XDG base
/// directory specification says of `XDG_CACHE_HOME` (a relative cache would move with the
/// working directory).
///
/// # Errors
/// [`NoCacheRoot`] when none is usable.
pub fn cache_root_from(
    redline_home: Option<PathBuf>,
    xdg_cache_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Result<PathBuf, NoCacheRoot> {
    let usable = |p: Option<PathBuf>| p.filter(|p| p.is_absolute());
    usable(redline_home)
        .or_else(|| usable(xdg_cache_home).map(|p| p.join("redline")))
        .or_else(|| usable(home).map(|p| p.join(".cache").join("redline")))
        .ok_or(NoCacheRoot)
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

/// Where a built-in model is cached: `<root>/models/<alias>/<file>`.
#[must_use]
pub fn builtin_path(root: &Path, model: &BuiltinModel) -> PathBuf {
    root.join("models").join(model.alias).join(model.file)
}

/// Where the built-in tiny llama is cached: `<root>/models/tiny/tiny-llama.gguf`.
#[must_use]
pub fn tiny_path(root: &Path) -> PathBuf {
    builtin_path(root, &TINY)
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
        assert!(matches!(cache_root_from(p(""), None, p("relative")), Err(NoCacheRoot)));
    }
}
