//! Why a bundle cannot be read, set up, written or run, and which of those are I/O errors.

use std::path::PathBuf;

use super::{Mismatch, SHOWN_CHARS_MAX};

/// Why a bundle cannot be read, set up or written. [`BundleError::is_io`] classifies it.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The bundle directory cannot be inspected (missing, permission).
    #[error("cannot open the bundle directory {}: {source}", infile::EscapedPath(path))]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bundle path names something other than a directory.
    #[error("{} is {kind}, not a bundle directory", infile::EscapedPath(path))]
    NotADirectory {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// A file of the bundle was not read: unreadable or not a regular file (I/O), or missing,
    /// over its limit or outside the bundle directory (invalid; a missing `manifest.json` is
    /// I/O).
    #[error("{at}: {source}")]
    Read {
        /// The manifest field that names the file (`regions[3].file`), or `manifest.json`.
        at: String,
        /// Why.
        source: infile::ReadError,
    },
    /// `manifest.json` is not JSON of this format.
    #[error("manifest.json: line {line}, column {column}: {message}")]
    Parse {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde found wrong, cut to a short prefix.
        message: String,
    },
    /// The manifest is well-formed but a field breaks a rule.
    #[error("manifest.json: {at}: {message}")]
    Invalid {
        /// The JSON path of the field (`patch_sites[2].rule`).
        at: String,
        /// The offending value and the rule it breaks.
        message: String,
    },
    /// A file's size is not the size the manifest gives it.
    #[error("{at} {file}: the file is {actual} bytes, but {what} is {declared} bytes")]
    SizeMismatch {
        /// The JSON path of the field naming the file.
        at: String,
        /// The file as the manifest names it.
        file: String,
        /// What declares the size (`region "x"`, `ib.size_dwords * 4`).
        what: String,
        /// The declared size.
        declared: u64,
        /// The file's size.
        actual: u64,
    },
    /// A vendor PM4-IB AQL packet calls another address than `ib.va`.
    #[error(
        "{file} packet {packet}: the PM4-IB packet calls the IB at {called:#x}, but ib.va is {manifest:#x}: they must agree"
    )]
    IbVa {
        /// The AQL file, quoted and cut.
        file: String,
        /// Index of the packet.
        packet: usize,
        /// The address the packet calls.
        called: u64,
        /// The manifest's `ib.va`.
        manifest: u64,
    },
    /// A file's content disagrees with the manifest (a code object that does not load where the
    /// manifest says, a patch site on the wrong IB dword, an AQL packet naming an unknown signal),
    /// or the device refuses what the manifest describes.
    #[error("{at}: {message}")]
    Content {
        /// The JSON path of the field concerned.
        at: String,
        /// The offending value and the rule it breaks.
        message: String,
    },
    /// A file could not be written.
    #[error("cannot write {}: {source}", infile::EscapedPath(path))]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl BundleError {
    /// True for usage and I/O errors (a missing or unreadable directory or manifest, an unreadable
    /// file, a path that is not a regular file, a failed write: exit 2 by the command-line rule),
    /// false for an invalid bundle (exit 1), which includes a file the manifest names but the
    /// bundle does not hold.
    #[must_use]
    pub fn is_io(&self) -> bool {
        match self {
            BundleError::Dir { .. } | BundleError::NotADirectory { .. } | BundleError::Write { .. } => true,
            BundleError::Read { at, source } => {
                // A file the manifest promises and the bundle lacks makes the bundle incomplete.
                let declared_but_absent = at != "manifest.json"
                    && matches!(source, infile::ReadError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound);
                !source.is_invalid_input() && !declared_but_absent
            }
            BundleError::Parse { .. }
            | BundleError::Invalid { .. }
            | BundleError::SizeMismatch { .. }
            | BundleError::IbVa { .. }
            | BundleError::Content { .. } => false,
        }
    }

    pub(super) fn parse(e: &serde_json::Error) -> Self {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full);
        let message = match message.char_indices().nth(4 * SHOWN_CHARS_MAX) {
            None => message.to_owned(),
            Some((cut, _)) => format!("{}…", &message[..cut]),
        };
        BundleError::Parse { line: e.line(), column: e.column(), message }
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The bundle cannot be read (exit 2, [`BundleError::is_io`]) or is invalid (exit 1).
    #[error("{0}")]
    Bundle(#[from] BundleError),
    /// The device faulted (exit 1).
    #[error("device fault: {0}")]
    Fault(String),
    /// Outputs differ from what was expected (exit 1).
    #[error("{} expected region(s) differ: {}", .0.len(), .0.iter().map(|m| format!("{} (sha256 {}{})", m.region, m.actual_sha256, m.first_difference.map_or(String::new(), |o| format!(", first difference at byte {o}")))).collect::<Vec<_>>().join("; "))]
    Mismatch(Vec<Mismatch>),
}

impl RunError {
    /// True for an I/O or usage error (exit 2); everything else exits 1.
    #[must_use]
    pub fn is_io(&self) -> bool {
        matches!(self, RunError::Bundle(e) if e.is_io())
    }
}
