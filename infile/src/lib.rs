//! Opening the files a parser is given, so that no input can make the reader block, read without
//! bound or leave the directory it was declared inside.
//!
//! Every entry point opens the path once (non-blocking, so a FIFO cannot stall the open), asks
//! the opened file what it is, refuses anything that is not a regular file, and compares its size
//! with the caller's [`Limit`] before reading a byte. [`read`] then reads at most the limit, so a
//! file that grows while it is read is refused too. [`read_inside`] also resolves symlinks and
//! holds the result to a bundle directory. Errors name the file, what it is, its size and the
//! limit; [`ReadError::is_invalid_input`] tells an input that breaks a format rule (too large,
//! outside its bundle, changed while it was read) from an I/O or usage error (missing,
//! unreadable, not a regular file).
//!
//! - [`snapshot`] is the trusted loader of model files: one open, the first bytes judged before
//!   anything large is read, then a copy of exactly the file's bytes into a sealed memfd, hashed
//!   as it is copied; everything afterwards comes from that snapshot.
//! - [`escape`](mod@escape) shows input-controlled text (paths, symbols, metadata strings) on a
//!   terminal with its control characters spelled out.
//!
//! The crate's one `unsafe` block is the read-only mapping of a sealed snapshot
//! ([`snapshot`]'s `sys` module), with its proof there.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod escape;
pub mod snapshot;

pub use escape::{Escaped, EscapedPath, escape, escape_lines, escape_path};
pub use snapshot::{Backing, Opened, Snapshot, SnapshotOptions, memory_budget};

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// The largest input a format accepts, in bytes, with the format's name for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// What the file is read as ("tape", "code object", ...).
    pub what: &'static str,
    /// The most bytes accepted.
    pub bytes: u64,
}

impl Limit {
    /// A limit of `bytes` for files read as `what`.
    #[must_use]
    pub const fn new(what: &'static str, bytes: u64) -> Self {
        Self { what, bytes }
    }
}

/// `n` mebibytes.
#[must_use]
pub const fn mib(n: u64) -> u64 {
    n << 20
}

/// `n` gibibytes.
#[must_use]
pub const fn gib(n: u64) -> u64 {
    n << 30
}

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The operating system refused to open, inspect or read the file.
    #[error("cannot read {}: {error}", EscapedPath(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error (part of this error's message, so not its source).
        error: std::io::Error,
    },
    /// The path names something other than a regular file (after following symlinks).
    #[error("{} is {kind}, not a regular file", EscapedPath(path))]
    NotRegular {
        /// The path given.
        path: PathBuf,
        /// What it is ("a directory", "a character device", ...).
        kind: &'static str,
    },
    /// The file is larger than its format allows.
    #[error("{} is {size} bytes, over the {} limit of {} bytes", EscapedPath(path), limit.what, limit.bytes)]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size (or, for a file that grew while read, more than the limit).
        size: u64,
        /// The limit it broke.
        limit: Limit,
    },
    /// A path declared to be inside a directory resolves outside it.
    #[error(
        "{} resolves to {}, outside the bundle directory {}",
        EscapedPath(path),
        EscapedPath(resolved),
        EscapedPath(root)
    )]
    OutsideRoot {
        /// The path as declared (joined to the root).
        path: PathBuf,
        /// Where its symlinks lead.
        resolved: PathBuf,
        /// The directory it must stay inside.
        root: PathBuf,
    },
    /// The file ended before the size it had when it was opened: it was truncated while it was
    /// read.
    #[error(
        "short read of {}: it ended at byte {read} of the {expected} it had when it was opened (truncated while it was read)",
        EscapedPath(path)
    )]
    ShortRead {
        /// The file.
        path: PathBuf,
        /// Its size when it was opened.
        expected: u64,
        /// The bytes there were.
        read: u64,
    },
    /// The file has more bytes than it had when it was opened: it grew while it was read.
    #[error("{} grew while it was read: it had {expected} bytes when it was opened", EscapedPath(path))]
    Grew {
        /// The file.
        path: PathBuf,
        /// Its size when it was opened.
        expected: u64,
    },
    /// The file's size or modification time moved while it was read.
    #[error("{} changed while it was read ({detail})", EscapedPath(path))]
    Changed {
        /// The file.
        path: PathBuf,
        /// What differs.
        detail: String,
    },
    /// A snapshot of the file would not fit the memory this machine allows one
    /// ([`memory_budget`]); refused before anything was copied.
    #[error(
        "{} is {size} bytes, more than the {budget} bytes a snapshot may hold on this machine (half of its memory)",
        EscapedPath(path)
    )]
    OverBudget {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The budget.
        budget: u64,
    },
}

impl ReadError {
    /// True when the file breaks a rule of its format (over the size limit, outside its bundle)
    /// or changed while it was read (a short read, growth, a write), false for I/O and usage
    /// errors (missing, unreadable, not a regular file, too large for this machine's memory).
    #[must_use]
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Self::TooLarge { .. }
                | Self::OutsideRoot { .. }
                | Self::ShortRead { .. }
                | Self::Grew { .. }
                | Self::Changed { .. }
        )
    }

    /// The same error about `path` (the name a user or a manifest gave, rather than where its
    /// symlinks lead); an [`OutsideRoot`](Self::OutsideRoot) error keeps both already.
    #[must_use]
    pub fn about(self, path: &Path) -> Self {
        let path = path.to_owned();
        match self {
            Self::Io { error, .. } => Self::Io { path, error },
            Self::NotRegular { kind, .. } => Self::NotRegular { path, kind },
            Self::TooLarge { size, limit, .. } => Self::TooLarge { path, size, limit },
            Self::ShortRead { expected, read, .. } => Self::ShortRead { path, expected, read },
            Self::Grew { expected, .. } => Self::Grew { path, expected },
            Self::Changed { detail, .. } => Self::Changed { path, detail },
            Self::OverBudget { size, budget, .. } => Self::OverBudget { path, size, budget },
            other @ Self::OutsideRoot { .. } => other,
        }
    }

    /// The file the error is about.
    #[must_use]
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::NotRegular { path, .. }
            | Self::TooLarge { path, .. }
            | Self::OutsideRoot { path, .. }
            | Self::ShortRead { path, .. }
            | Self::Grew { path, .. }
            | Self::Changed { path, .. }
            | Self::OverBudget { path, .. } => path,
        }
    }
}

/// What a file's metadata says it is, for messages ("a directory", "a character device", ...).
#[must_use]
pub fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "neither a file nor a directory"
    }
}

/// Opens `path` for reading without blocking (a FIFO with no writer does not stall the open),
/// checks that it is a regular file and that its size is within `limit`; returns the file and
/// its size. Nothing has been read.
///
/// # Errors
/// [`ReadError::Io`], [`ReadError::NotRegular`] or [`ReadError::TooLarge`].
pub fn open(path: &Path, limit: Limit) -> Result<(File, u64), ReadError> {
    let io = |error| ReadError::Io { path: path.to_owned(), error };
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular { path: path.to_owned(), kind: kind(&meta) });
    }
    let size = meta.len();
    if size > limit.bytes {
        return Err(ReadError::TooLarge { path: path.to_owned(), size, limit });
    }
    Ok((file, size))
}

/// Reads the whole of `path` when it is a regular file of at most `limit` bytes ([`open`]); a
/// file that grows past the limit while it is read is refused.
///
/// # Errors
/// As [`open`], and [`ReadError::Io`] for a failed read.
pub fn read(path: &Path, limit: Limit) -> Result<Vec<u8>, ReadError> {
    let (file, size) = open(path, limit)?;
    read_opened(path, file, size, limit)
}

fn read_opened(path: &Path, file: File, size: u64, limit: Limit) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| ReadError::Io { path: path.to_owned(), error })?;
    let read = bytes.len() as u64;
    if read > limit.bytes {
        return Err(ReadError::TooLarge { path: path.to_owned(), size: read, limit });
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text; a file that is not UTF-8 is an [`ReadError::Io`] of kind
/// `InvalidData` naming the byte offset where the text stops being UTF-8.
///
/// # Errors
/// As [`read`].
pub fn read_to_string(path: &Path, limit: Limit) -> Result<String, ReadError> {
    let bytes = read(path, limit)?;
    String::from_utf8(bytes).map_err(|e| ReadError::Io {
        path: path.to_owned(),
        error: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text at byte offset {}", e.utf8_error().valid_up_to()),
        ),
    })
}

/// Resolves `relative` against the directory `root` with every symlink followed, and requires
/// the result to stay inside `root` (also resolved). Returns the joined path (for messages) and
/// the resolved one.
///
/// # Errors
/// [`ReadError::Io`] when the path does not resolve (missing, a dangling link),
/// [`ReadError::OutsideRoot`] when it leaves `root`.
pub fn resolve_inside(root: &Path, relative: &Path) -> Result<(PathBuf, PathBuf), ReadError> {
    let joined = root.join(relative);
    let root_real = root.canonicalize().map_err(|error| ReadError::Io { path: root.to_owned(), error })?;
    let resolved = joined.canonicalize().map_err(|error| ReadError::Io { path: joined.clone(), error })?;
    if !resolved.starts_with(&root_real) {
        // A link to something that is not a regular file is reported as that (an I/O-class
        // error), a regular file elsewhere as leaving the bundle.
        if let Ok(meta) = std::fs::metadata(&resolved)
            && !meta.is_file()
        {
            return Err(ReadError::NotRegular { path: joined, kind: kind(&meta) });
        }
        return Err(ReadError::OutsideRoot { path: joined, resolved, root: root_real });
    }
    Ok((joined, resolved))
}

/// [`read`] of `relative` inside the directory `root`: symlinks are followed and must not lead
/// out of `root` ([`resolve_inside`]).
///
/// # Errors
/// As [`resolve_inside`] and [`read`].
pub fn read_inside(root: &Path, relative: &Path, limit: Limit) -> Result<Vec<u8>, ReadError> {
    let (joined, resolved) = resolve_inside(root, relative)?;
    let (file, size) = open(&resolved, limit).map_err(|e| e.about(&joined))?;
    read_opened(&joined, file, size, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("infile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    const SMALL: Limit = Limit::new("test input", 16);

    #[test]
    fn reads_a_small_regular_file() {
        let dir = scratch("small");
        let path = dir.join("a.bin");
        std::fs::write(&path, b"0123456789abcdef").unwrap();
        assert_eq!(read(&path, SMALL).unwrap(), b"0123456789abcdef");
        assert_eq!(read_to_string(&path, SMALL).unwrap(), "0123456789abcdef");
    }

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let dir = scratch("irregular");
        for (path, kind) in [(Path::new("/dev/zero"), "a character device"), (dir.as_path(), "a directory")] {
            let err = read(path, SMALL).unwrap_err();
            assert!(matches!(err, ReadError::NotRegular { kind: k, .. } if k == kind), "{err}");
            assert!(!err.is_invalid_input());
            assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
        }
        let link = dir.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(read(&link, SMALL), Err(ReadError::NotRegular { kind: "a character device", .. })));
    }

    #[test]
    fn a_fifo_without_a_writer_does_not_block() {
        let dir = scratch("fifo");
        let fifo = dir.join("pipe");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        assert!(matches!(read(&fifo, SMALL), Err(ReadError::NotRegular { kind: "a FIFO", .. })));
    }

    #[test]
    fn a_file_over_the_limit_is_refused_before_reading() {
        let dir = scratch("large");
        let path = dir.join("big.bin");
        // Sparse: the size is there, the bytes are not (reading it would take a while).
        File::create(&path).unwrap().set_len(gib(64)).unwrap();
        let err = read(&path, Limit::new("tape", mib(256))).unwrap_err();
        assert!(err.is_invalid_input());
        let msg = err.to_string();
        assert!(msg.contains("68719476736 bytes") && msg.contains("tape limit of 268435456 bytes"), "{msg}");
        let path17 = dir.join("seventeen");
        std::fs::write(&path17, [0u8; 17]).unwrap();
        assert!(matches!(read(&path17, SMALL), Err(ReadError::TooLarge { size: 17, .. })));
    }

    #[test]
    fn missing_files_are_io_errors() {
        let err = read(Path::new("/nonexistent/redline-infile"), SMALL).unwrap_err();
        assert!(matches!(&err, ReadError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound));
        assert_eq!(err.to_string().matches("No such file").count(), 1, "the cause is said once: {err}");
        assert!(std::error::Error::source(&err).is_none());
        assert!(!err.is_invalid_input());
    }

    #[test]
    fn bundle_paths_stay_inside_the_bundle() {
        let dir = scratch("bundle");
        let bundle = dir.join("b");
        std::fs::create_dir_all(bundle.join("regions")).unwrap();
        std::fs::write(bundle.join("regions/a.bin"), b"abc").unwrap();
        std::fs::write(dir.join("secret"), b"outside").unwrap();
        std::os::unix::fs::symlink("a.bin", bundle.join("regions/inner")).unwrap();
        std::os::unix::fs::symlink("../../secret", bundle.join("regions/escape")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", bundle.join("regions/zero")).unwrap();
        assert_eq!(read_inside(&bundle, Path::new("regions/a.bin"), SMALL).unwrap(), b"abc");
        assert_eq!(read_inside(&bundle, Path::new("regions/inner"), SMALL).unwrap(), b"abc");
        let err = read_inside(&bundle, Path::new("regions/escape"), SMALL).unwrap_err();
        assert!(matches!(err, ReadError::OutsideRoot { .. }) && err.is_invalid_input(), "{err}");
        assert!(err.to_string().contains("regions/escape"), "{err}");
        let err = read_inside(&bundle, Path::new("regions/zero"), SMALL).unwrap_err();
        assert!(matches!(err, ReadError::NotRegular { kind: "a character device", .. }), "{err}");
        assert!(err.to_string().contains("regions/zero"), "{err}");
        let err = read_inside(&bundle, Path::new("../secret"), SMALL).unwrap_err();
        assert!(matches!(err, ReadError::OutsideRoot { .. }), "{err}");
        let err = read_inside(&bundle, Path::new("regions/missing"), SMALL).unwrap_err();
        assert!(matches!(err, ReadError::Io { .. }), "{err}");
    }
}
