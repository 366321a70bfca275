//! Served model files, read and never mapped.
//!
//! A mapped file that another process truncates kills the process that touches the lost pages
//! (SIGBUS), and one rewritten in place changes bytes under a validated layout. So `serve`
//! reads each model file into memory through a descriptor it opens once at startup, hashes
//! those bytes, parses and checks them, uploads them to the device and drops them. The loaded
//! model is then a snapshot on the device: a request for it is answered by the bytes that were
//! hashed, whatever has happened to the file since. The file is read again only to load the
//! model again (a model switch), through the same descriptor: a file that has changed since
//! startup (its size, its modification time, or its SHA-256) is refused with a
//! [`ModelFileError`], the model is reported broken on `/redline/status`, and the server goes
//! on serving the others.

use std::fs::File;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use model_files::digest::hex;

/// What tells a changed file without reading it: its size and modification time. (Not its
/// change time, which moves when the file is unlinked or renamed over, leaving the bytes this
/// descriptor reads as they were.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified_ns: i128,
}

impl Stamp {
    fn of(file: &File) -> std::io::Result<Self> {
        let meta = file.metadata()?;
        let ns = |s: i64, ns: i64| i128::from(s) * 1_000_000_000 + i128::from(ns);
        Ok(Self { size: meta.len(), modified_ns: ns(meta.mtime(), meta.mtime_nsec()) })
    }
}

/// Why a served model file cannot be read again.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ModelFileError {
    /// The file is not what the server opened.
    #[error("the model file {path} has changed since the server opened it ({detail}); restart the server to serve it")]
    Changed {
        /// The file.
        path: PathBuf,
        /// What differs.
        detail: String,
    },
    /// Reading it failed.
    #[error("reading the model file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// Its bytes do not fit in memory.
    #[error("the model file {path} is {size} bytes, more than this process can hold in memory")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// Opening it failed, or it is over the GGUF limit.
    #[error(transparent)]
    Open(infile::ReadError),
}

impl ModelFileError {
    /// The error as a boxed error whose own type is the one that says what failed (an
    /// [`infile::ReadError`] for an open that failed), so that the exit code can tell a file over
    /// its limit (invalid input) from one that cannot be read.
    pub(crate) fn boxed(self) -> Box<dyn std::error::Error + Send + Sync> {
        match self {
            Self::Open(error) => Box::new(error),
            other => Box::new(other),
        }
    }
}

/// A served model's file: the descriptor opened at startup, and what it held then.
#[derive(Debug)]
pub(crate) struct ModelSource {
    path: PathBuf,
    file: File,
    stamp: Stamp,
    sha256: String,
}

impl ModelSource {
    /// Opens `path` (a regular file of at most the GGUF limit), reads it whole and hashes it.
    ///
    /// # Errors
    /// The file cannot be opened or read; [`infile::ReadError`] in the chain says which.
    pub(crate) fn open(path: &Path) -> Result<(Self, Vec<u8>), ModelFileError> {
        let (file, _) =
            infile::open(path, infile::Limit::new("GGUF model", gguf::MAX_FILE_BYTES)).map_err(ModelFileError::Open)?;
        let io = |source| ModelFileError::Io { path: path.to_owned(), source };
        let stamp = Stamp::of(&file).map_err(io)?;
        let bytes = read_all(path, &file, stamp.size)?;
        let sha256 = hex(&Sha256::digest(&bytes));
        Ok((Self { path: path.to_owned(), file, stamp, sha256 }, bytes))
    }

    /// The file's SHA-256 at startup, lowercase hex.
    pub(crate) fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The bytes again, exactly those hashed at startup.
    ///
    /// # Errors
    /// [`ModelFileError`]: the file changed (size, times or digest), or reading failed.
    pub(crate) fn reread(&self) -> Result<Vec<u8>, ModelFileError> {
        self.check()?;
        let bytes = read_all(&self.path, &self.file, self.stamp.size)?;
        let sha256 = hex(&Sha256::digest(&bytes));
        if sha256 != self.sha256 {
            return Err(self.changed(format!("its SHA-256 was {} and is now {sha256}", self.sha256)));
        }
        // A write during the read that left size and digest alike would still show here.
        self.check()?;
        Ok(bytes)
    }

    /// Whether the file still looks as it did at startup (one `fstat`, no read).
    ///
    /// # Errors
    /// [`ModelFileError::Changed`] naming what differs; [`ModelFileError::Io`].
    pub(crate) fn check(&self) -> Result<(), ModelFileError> {
        let now = Stamp::of(&self.file).map_err(|source| ModelFileError::Io { path: self.path.clone(), source })?;
        if now.size != self.stamp.size {
            return Err(self.changed(format!("it was {} bytes and is now {}", self.stamp.size, now.size)));
        }
        if now != self.stamp {
            return Err(self.changed("its modification time moved: it was written to".to_owned()));
        }
        Ok(())
    }

    fn changed(&self, detail: String) -> ModelFileError {
        ModelFileError::Changed { path: self.path.clone(), detail }
    }
}

/// Reads the first `size` bytes of `file` from offset 0; a file that ends sooner has shrunk.
fn read_all(path: &Path, file: &File, size: u64) -> Result<Vec<u8>, ModelFileError> {
    let too_large = || ModelFileError::TooLarge { path: path.to_owned(), size };
    let len = usize::try_from(size).map_err(|_| too_large())?;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| too_large())?;
    bytes.resize(len, 0);
    let mut done = 0;
    while done < len {
        let offset = u64::try_from(done).unwrap_or(u64::MAX);
        match file.read_at(&mut bytes[done..], offset) {
            Ok(0) => {
                return Err(ModelFileError::Changed {
                    path: path.to_owned(),
                    detail: format!("it was {size} bytes and ends at byte {done} now"),
                });
            }
            Ok(n) => done += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => return Err(ModelFileError::Io { path: path.to_owned(), source }),
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("redline-model-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_file_reads_back_until_it_is_truncated_or_rewritten() {
        let path = scratch("a.gguf", &[7u8; 4096]);
        let (source, bytes) = ModelSource::open(&path).unwrap();
        assert_eq!(bytes, [7u8; 4096]);
        assert_eq!(source.sha256(), hex(&Sha256::digest([7u8; 4096])));
        assert_eq!(source.reread().unwrap(), bytes);
        source.check().unwrap();

        // Truncated in place: the descriptor sees the new size.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(100).unwrap();
        let error = source.reread().unwrap_err().to_string();
        assert!(error.contains("it was 4096 bytes and is now 100"), "{error}");
        assert!(error.contains(&path.display().to_string()), "{error}");

        // Same size, other bytes: the digest tells, whatever the clock's granularity.
        let path = scratch("b.gguf", &[1u8; 64]);
        let (source, _) = ModelSource::open(&path).unwrap();
        std::fs::write(&path, [2u8; 64]).unwrap();
        let error = source.reread().unwrap_err().to_string();
        assert!(error.contains("changed since the server opened it"), "{error}");
        // And, once the file's times have moved on (a coarse clock tick at most), one fstat.
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::write(&path, [1u8; 64]).unwrap();
        assert!(matches!(source.check(), Err(ModelFileError::Changed { .. })));
    }

    #[test]
    fn a_file_replaced_by_rename_is_still_the_one_opened() {
        let path = scratch("c.gguf", &[3u8; 128]);
        let (source, bytes) = ModelSource::open(&path).unwrap();
        let other = scratch("c.new", &[4u8; 10]);
        std::fs::rename(&other, &path).unwrap();
        // The descriptor holds the old file, which nobody changed.
        assert_eq!(source.reread().unwrap(), bytes);
    }
}
