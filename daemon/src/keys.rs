//! API keys (`--api-key`, `REDLINE_API_KEY`, `--api-key-file`), kept as SHA-256 digests: a key
//! is compared by its digest against every configured key's, in time that depends on neither
//! key's bytes.

use std::path::PathBuf;

use sha2::{Digest as _, Sha256};

/// A key file's size at most.
pub(crate) const KEY_FILE_MAX_BYTES: u64 = 1 << 20;

/// A key's length at most.
const KEY_MAX_BYTES: usize = 512;

/// A key that cannot be a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// An empty key.
    #[error("an API key must not be empty")]
    Empty,
    /// A key over [`KEY_MAX_BYTES`].
    #[error("an API key is {0} bytes; at most {KEY_MAX_BYTES}")]
    TooLong(usize),
    /// A character a header cannot carry as it was configured.
    #[error("an API key may hold visible ASCII characters only; character {c:?} at byte {at} is not")]
    NotVisible {
        /// The character.
        c: char,
        /// Its byte offset.
        at: usize,
    },
}

/// What is wrong in a key file.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// Its bytes are not text.
    #[error("not UTF-8 at byte {0}")]
    NotUtf8(usize),
    /// A line that is not a key.
    #[error("line {line}")]
    Line {
        /// 1-based.
        line: usize,
        /// Why.
        source: KeyError,
    },
    /// No line is a key.
    #[error("no key in the file (one key a line; blank lines and # comments are skipped)")]
    NoKey,
}

/// Why the API keys could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// A key given as a flag (or in `REDLINE_API_KEY`).
    #[error("--api-key (or REDLINE_API_KEY)")]
    Flag(#[source] KeyError),
    /// `REDLINE_API_KEY` is not text.
    #[error("REDLINE_API_KEY is not valid UTF-8")]
    EnvNotUnicode,
    /// A key file could not be read (its own error says whether it is too large).
    #[error("--api-key-file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: infile::ReadError,
    },
    /// A key file holds something that is not a key.
    #[error("--api-key-file {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: KeyFileError,
    },
}

/// The accepted keys, as digests; empty when the server is open.
#[derive(Debug, Clone, Default)]
pub struct ApiKeys {
    digests: Vec<[u8; 32]>,
}

impl ApiKeys {
    /// The keys of `--api-key` (each flag; `REDLINE_API_KEY` when none is given) and of each
    /// `--api-key-file` (one key a line; blank lines and lines starting with `#` skipped).
    ///
    /// # Errors
    /// An empty or malformed key (naming the flag, or the file and line), an unreadable file or
    /// one with no key, a `REDLINE_API_KEY` that is not text.
    pub fn configured(flags: &[String], files: &[PathBuf]) -> Result<Self, KeysError> {
        if flags.is_empty() {
            return match std::env::var("REDLINE_API_KEY") {
                Ok(key) => Self::load(&[key], files),
                Err(std::env::VarError::NotPresent) => Self::load(&[], files),
                Err(std::env::VarError::NotUnicode(_)) => Err(KeysError::EnvNotUnicode),
            };
        }
        Self::load(flags, files)
    }

    /// The keys of `flags` and of each file in `files`.
    ///
    /// # Errors
    /// As [`ApiKeys::configured`].
    pub fn load(flags: &[String], files: &[PathBuf]) -> Result<Self, KeysError> {
        let mut keys = Self::default();
        for key in flags {
            keys.add(key).map_err(KeysError::Flag)?;
        }
        for path in files {
            let bytes = infile::read(path, infile::Limit::new("API key file", KEY_FILE_MAX_BYTES))
                .map_err(|source| KeysError::Read { path: path.clone(), source })?;
            keys.add_file(&bytes).map_err(|source| KeysError::File { path: path.clone(), source })?;
        }
        Ok(keys)
    }

    fn add_file(&mut self, bytes: &[u8]) -> Result<(), KeyFileError> {
        let text = std::str::from_utf8(bytes).map_err(|e| KeyFileError::NotUtf8(e.valid_up_to()))?;
        let before = self.digests.len();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self.add(line).map_err(|source| KeyFileError::Line { line: index + 1, source })?;
        }
        if self.digests.len() == before {
            return Err(KeyFileError::NoKey);
        }
        Ok(())
    }

    fn add(&mut self, key: &str) -> Result<(), KeyError> {
        if key.is_empty() {
            return Err(KeyError::Empty);
        }
        if key.len() > KEY_MAX_BYTES {
            return Err(KeyError::TooLong(key.len()));
        }
        // A key travels in a header: visible ASCII only, so no key can be sent differently
        // from how it was configured.
        if let Some((at, c)) = key.char_indices().find(|&(_, c)| !c.is_ascii_graphic()) {
            return Err(KeyError::NotVisible { c, at });
        }
        self.digests.push(Sha256::digest(key.as_bytes()).into());
        Ok(())
    }

    /// Whether any key is required.
    #[must_use]
    pub fn required(&self) -> bool {
        !self.digests.is_empty()
    }

    /// Whether `key` is one of the keys; every configured key is compared, each in full.
    pub(crate) fn accepts(&self, key: &[u8]) -> bool {
        let given: [u8; 32] = Sha256::digest(key).into();
        self.digests.iter().fold(false, |found, digest| found | equal(digest, &given))
    }
}

/// Equality of two digests in time independent of where they differ.
fn equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // An optimiser cannot turn the fold above into an early exit once the result is observed
    // only here.
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_flags_and_files_and_their_errors() {
        let dir = std::env::temp_dir().join(format!("redline-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("keys");
        std::fs::write(&file, "# team keys\n\n  sk-two  \nsk-three\n").unwrap();
        let keys = ApiKeys::load(&["sk-one".to_owned()], std::slice::from_ref(&file)).unwrap();
        for key in ["sk-one", "sk-two", "sk-three"] {
            assert!(keys.accepts(key.as_bytes()), "{key}");
        }
        for key in ["", "sk-on", "sk-one ", "SK-ONE", "# team keys"] {
            assert!(!keys.accepts(key.as_bytes()), "{key:?}");
        }
        assert!(!ApiKeys::default().required());

        let error = |flags: &[&str], text: Option<&str>| {
            let files: Vec<_> =
                text.map(|t| std::fs::write(&file, t).map(|()| file.clone()).unwrap()).into_iter().collect();
            let flags: Vec<String> = flags.iter().map(|s| (*s).to_owned()).collect();
            format!("{:#}", anyhow::Error::new(ApiKeys::load(&flags, &files).unwrap_err()))
        };
        assert!(error(&[""], None).contains("must not be empty"));
        assert!(error(&["a b"], None).contains("character ' ' at byte 1"));
        assert!(error(&[], Some("# none\n\n")).contains("no key in the file"));
        let bad_line = error(&[], Some("good\nbad\u{7}key\n"));
        assert!(bad_line.contains("line 2") && bad_line.contains(&file.display().to_string()), "{bad_line}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
