//! SHA-256 digests of files and streams, and the check of a file against a pinned size and
//! digest (through the trusted loader's reads: `infile::Opened`).

use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// A downloaded or cached file that is not what the catalogue pins.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The file could not be read: missing or unreadable, not a regular file, or changed while
    /// it was read (a short read, growth, a write), each naming the file.
    #[error(transparent)]
    Read(#[from] infile::ReadError),
    /// Wrong size.
    #[error("{} is {actual} bytes, expected {expected}", path.display())]
    Size {
        /// The file.
        path: PathBuf,
        /// The pinned size.
        expected: u64,
        /// Its size.
        actual: u64,
    },
    /// Wrong SHA-256.
    #[error("{} has SHA-256 {actual}, expected {expected}", path.display())]
    Digest {
        /// The file.
        path: PathBuf,
        /// The pinned digest.
        expected: String,
        /// Its digest.
        actual: String,
    },
}

/// SHA-256 (lowercase hex) and length of everything `reader` yields.
///
/// # Errors
/// The reader's I/O error.
pub fn sha256_reader(mut reader: impl io::Read) -> io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += u64::try_from(n).unwrap_or(u64::MAX);
    }
    Ok((hex(&hasher.finalize()), total))
}

/// Bytes as lowercase hex (digests).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks that the file at `path` is `expected_bytes` long (checked first, from the opened
/// descriptor: cheap) and hashes to `expected_sha256` (lowercase hex). The file is opened once
/// as the model loader opens it (non-blocking, a regular file) and hashed through that
/// descriptor ([`infile::Opened::sha256`]): exactly its size in bytes, refused if it ends sooner,
/// grows or is written while it is read.
///
/// # Errors
/// [`VerifyError`] naming the file and the expected and actual values.
pub fn verify_file(path: &Path, expected_bytes: u64, expected_sha256: &str) -> Result<(), VerifyError> {
    let opened = infile::Opened::open(path, infile::Limit::new("pinned file", u64::MAX))?;
    let actual = opened.size();
    if actual != expected_bytes {
        return Err(VerifyError::Size { path: path.to_path_buf(), expected: expected_bytes, actual });
    }
    let digest = hex(&opened.sha256()?);
    check_digest(path, expected_sha256, digest)
}

fn check_digest(path: &Path, expected: &str, actual: String) -> Result<(), VerifyError> {
    if actual == expected {
        return Ok(());
    }
    Err(VerifyError::Digest { path: path.to_path_buf(), expected: expected.to_owned(), actual })
}
