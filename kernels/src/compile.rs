//! Compiling the plan with clang-19 and the digest manifest. Only the `build-kernels` tool and the
//! rebuild test use this; nothing at build or run time needs clang.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::plan::Artifact;

/// The manifest file below the crate root.
pub const MANIFEST_PATH: &str = "objects/MANIFEST";

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The compiler could not be started.
    #[error("cannot run {compiler}: {source} (install clang-19, or set REDLINE_CLANG)")]
    Spawn {
        /// The compiler command.
        compiler: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The compiler failed.
    #[error("{compiler} failed for {path} ({status}):\n{stderr}")]
    Failed {
        /// The compiler command.
        compiler: String,
        /// The artifact.
        path: String,
        /// Exit status.
        status: std::process::ExitStatus,
        /// What it printed.
        stderr: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The compiler: `$REDLINE_CLANG`, else `clang-19`.
#[must_use]
pub fn compiler() -> String {
    std::env::var("REDLINE_CLANG").unwrap_or_else(|_| "clang-19".to_owned())
}

/// The compiler's first `--version` line.
///
/// # Errors
/// [`CompileError::Spawn`] when it cannot be run.
pub fn compiler_version() -> Result<String, CompileError> {
    let cc = compiler();
    let out = Command::new(&cc)
        .arg("--version")
        .output()
        .map_err(|source| CompileError::Spawn { compiler: cc.clone(), source })?;
    Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_owned())
}

/// Compiles one artifact from `hip_dir` into `out_root/<artifact path>`.
///
/// # Errors
/// [`CompileError`] when clang cannot run or fails, or the output directory cannot be made.
pub fn compile(artifact: &Artifact, hip_dir: &Path, out_root: &Path) -> Result<PathBuf, CompileError> {
    let out = out_root.join(&artifact.path);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|source| CompileError::Io { path: dir.to_owned(), source })?;
    }
    let cc = compiler();
    let output = Command::new(&cc)
        .args(artifact.args(&hip_dir.to_string_lossy()))
        .arg("-o")
        .arg(&out)
        .output()
        .map_err(|source| CompileError::Spawn { compiler: cc.clone(), source })?;
    if !output.status.success() {
        return Err(CompileError::Failed {
            compiler: cc,
            path: artifact.path.clone(),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(out)
}

/// Lower-case hex SHA-256 of `bytes`.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// `(sha256, path)` rows of a manifest, in file order; comment and blank lines skipped.
#[must_use]
pub fn parse_manifest(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once("  ").map(|(d, p)| (d.to_owned(), p.trim().to_owned())))
        .collect()
}

/// The manifest text for `rows` built by `compiler_version`.
#[must_use]
pub fn format_manifest(compiler_version: &str, rows: &[(String, String)]) -> String {
    let mut s = String::from(
        "# Redline kernel code objects: SHA-256 and path below objects/.\n\
         # Written by `cargo run -p kernels --bin build-kernels`; checked by tests/rebuild.rs.\n",
    );
    let _ = writeln!(s, "# compiler: {compiler_version}");
    for (digest, path) in rows {
        let _ = writeln!(s, "{digest}  {path}");
    }
    s
}

/// Builds every artifact of the plan into `out_root`, calling `progress` before each, and returns
/// the manifest rows.
///
/// # Errors
/// The first [`CompileError`].
pub fn build_all(
    hip_dir: &Path,
    out_root: &Path,
    mut progress: impl FnMut(usize, usize, &Artifact),
) -> Result<Vec<(String, String)>, CompileError> {
    let plan = crate::plan::artifacts();
    let mut rows = Vec::with_capacity(plan.len());
    for (i, artifact) in plan.iter().enumerate() {
        progress(i + 1, plan.len(), artifact);
        let out = compile(artifact, hip_dir, out_root)?;
        let bytes = std::fs::read(&out).map_err(|source| CompileError::Io { path: out.clone(), source })?;
        rows.push((sha256_hex(&bytes), artifact.path.clone()));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc() {
        // FIPS 180-2 test vector.
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn manifest_round_trip() {
        let rows = vec![("ab".repeat(32), "gfx1030/fill.co".to_owned())];
        let text = format_manifest("clang version X", &rows);
        assert!(text.contains("# compiler: clang version X"));
        assert_eq!(parse_manifest(&text), rows);
    }
}
