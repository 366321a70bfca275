//! Served model files, read through the trusted loader and never mapped.
//!
//! A mapped file that another process truncates kills the process that touches the lost pages
//! (SIGBUS), and one rewritten in place changes bytes under a validated layout. So `serve` opens
//! each model file once at startup and reads it through that descriptor with the loader
//! (`infile::snapshot`, [`gguf::Gguf::load`]): the header judged first, then exactly the file's
//! bytes copied into a sealed snapshot while they are hashed, parsed from the snapshot, checked,
//! uploaded to the device and dropped. The loaded model is then a snapshot on the device: a
//! request for it is answered by the bytes that were hashed, whatever has happened to the file
//! since. The file is read again only to load the model again (a model switch), through the same
//! descriptor and into a new snapshot: a file that has changed since startup (its size, its
//! modification time, or the SHA-256 of the new snapshot), or that changes while it is copied (a
//! short read), is refused with a [`ModelFileError`] naming it, the model is reported broken on
//! `/redline/status`, and the server goes on serving the others. Only the snapshot being loaded
//! is held, never every served model's.

use std::path::{Path, PathBuf};

use gguf::{Gguf, GgufError};
use infile::{EscapedPath, Opened, SnapshotOptions};

/// Why a served model file cannot be read again.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ModelFileError {
    /// The file is not what the server opened.
    #[error(
        "the model file {} has changed since the server opened it ({detail}); restart the server to serve it",
        EscapedPath(path)
    )]
    Changed {
        /// The file.
        path: PathBuf,
        /// What differs.
        detail: String,
    },
    /// Reading or parsing it failed (a short read names the file and where it ended).
    #[error("reading the model file {}: {source}", EscapedPath(path))]
    Load {
        /// The file.
        path: PathBuf,
        /// The loader's or the parser's error.
        source: GgufError,
    },
}

/// A served model's file: the descriptor opened at startup, and the digest of what it held then.
#[derive(Debug)]
pub(crate) struct ModelSource {
    opened: Opened,
    sha256: String,
}

impl ModelSource {
    /// Opens `path` (a regular file of at most the GGUF limit) and loads it ([`Gguf::load`]).
    ///
    /// # Errors
    /// The loader's or the parser's [`GgufError`], whose kind says whether the file is at fault.
    pub(crate) fn open(path: &Path) -> Result<(Self, Gguf), GgufError> {
        let opened = Opened::open(path, gguf::LIMIT)?;
        let file = Gguf::load(&opened, &SnapshotOptions::default())?;
        // INVARIANT: `Gguf::load` parses a snapshot, which has a digest.
        let sha256 = file.sha256().unwrap_or_default();
        Ok((Self { opened, sha256 }, file))
    }

    /// The model loaded again from a new snapshot through the same descriptor: exactly the bytes
    /// hashed at startup.
    ///
    /// # Errors
    /// [`ModelFileError`]: the file changed (size, times or digest), or reading it failed.
    pub(crate) fn reload(&self) -> Result<Gguf, ModelFileError> {
        self.check()?;
        let file = Gguf::load(&self.opened, &SnapshotOptions::default())
            .map_err(|source| ModelFileError::Load { path: self.opened.path().to_owned(), source })?;
        let sha256 = file.sha256().unwrap_or_default();
        if sha256 != self.sha256 {
            return Err(self.changed(format!("its SHA-256 was {} and is now {sha256}", self.sha256)));
        }
        Ok(file)
    }

    /// Whether the file still looks as it did at startup (one `fstat`, no read).
    ///
    /// # Errors
    /// [`ModelFileError::Changed`] naming what differs; [`ModelFileError::Load`] when the file
    /// cannot be inspected.
    pub(crate) fn check(&self) -> Result<(), ModelFileError> {
        match self.opened.check_unchanged() {
            Ok(()) => Ok(()),
            Err(infile::ReadError::Changed { detail, .. }) => Err(self.changed(detail)),
            Err(error) => Err(ModelFileError::Load { path: self.opened.path().to_owned(), source: error.into() }),
        }
    }

    fn changed(&self, detail: String) -> ModelFileError {
        ModelFileError::Changed { path: self.opened.path().to_owned(), detail }
    }
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

    fn tiny(seed: u64) -> Vec<u8> {
        gguf::tiny_llama(&gguf::TinyLlamaConfig { seed, ..gguf::TinyLlamaConfig::default() })
    }

    #[test]
    fn a_file_loads_again_until_it_is_truncated_or_rewritten() {
        let bytes = tiny(1);
        let path = scratch("a.gguf", &bytes);
        let (source, file) = ModelSource::open(&path).unwrap();
        assert!(file.as_bytes() == bytes.as_slice());
        assert_eq!(Some(source.sha256.clone()), file.sha256());
        assert!(source.reload().unwrap().as_bytes() == bytes.as_slice());
        source.check().unwrap();

        // Truncated in place: the descriptor sees the new size.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(100).unwrap();
        let error = source.reload().unwrap_err().to_string();
        assert!(error.contains(&format!("it was {} bytes and is now 100", bytes.len())), "{error}");
        assert!(error.contains(&path.display().to_string()), "{error}");

        // Same size, other bytes: the digest tells, whatever the clock's granularity.
        let path = scratch("b.gguf", &tiny(2));
        let (source, _) = ModelSource::open(&path).unwrap();
        std::fs::write(&path, tiny(3)).unwrap();
        let error = source.reload().unwrap_err().to_string();
        assert!(error.contains("changed since the server opened it"), "{error}");
        // And, once the file's times have moved on (a coarse clock tick at most), one fstat.
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::write(&path, tiny(2)).unwrap();
        assert!(matches!(source.check(), Err(ModelFileError::Changed { .. })));
    }

    #[test]
    fn a_file_replaced_by_rename_is_still_the_one_opened() {
        let bytes = tiny(4);
        let path = scratch("c.gguf", &bytes);
        let (source, _) = ModelSource::open(&path).unwrap();
        let other = scratch("c.new", &tiny(5));
        std::fs::rename(&other, &path).unwrap();
        // The descriptor holds the old file, which nobody changed.
        assert!(source.reload().unwrap().as_bytes() == bytes.as_slice());
    }
}
