//! A model file opened for a session (`redline generate`, `redline serve`): the model argument
//! resolved (an alias pulled on first use), the file read through the trusted loader (a sealed
//! snapshot, `infile::snapshot`) and parsed, its digest taken from that snapshot (and held to the
//! catalogue's pin for an alias), its hyperparameters and tensor inventory checked, and the
//! KV-cache positions it gets.

use std::error::Error;
use std::path::{Path, PathBuf};

use gguf::Gguf;
use model_files::{ModelError, ResolvedModel};

use super::context::{ContextError, check_context, default_context};
use super::language::ModelParams;
use super::params::ParamsError;

/// One model file, resolved and open, with the KV-cache positions it gets.
#[derive(Debug)]
pub struct ModelFile {
    /// The model file, pulled when it was an alias not yet fetched.
    pub resolved: ResolvedModel,
    /// The opened GGUF, parsed from its sealed snapshot.
    pub file: Gguf,
    /// The SHA-256 of the bytes parsed (lowercase hex), taken as the snapshot was copied: the
    /// digest admission and reports name.
    pub sha256: String,
    /// Its hyperparameters, checked by its architecture's adapter ([`ModelParams::from_gguf`]).
    pub params: ModelParams,
    /// KV-cache positions: the context asked for, checked against the file, or its default.
    pub context: u32,
}

/// Why a model file could not be opened for a session.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The model argument did not resolve (unknown, not fetched, the cache).
    #[error("--model {model}")]
    Resolve {
        /// The argument.
        model: String,
        /// Why (boxed: the error is large).
        source: Box<ModelError>,
    },
    /// The file could not be read or parsed: the reader's own error, whose kind says whether
    /// the file or this machine is at fault.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The reader's error.
        source: Box<dyn Error + Send + Sync>,
    },
    /// The file is a GGUF but not a model of an architecture this build runs, or one whose
    /// hyperparameters or tensors its adapter refuses.
    #[error("{}", path.display())]
    Params {
        /// The file.
        path: PathBuf,
        /// Which key or tensor, and why (boxed: the error is large).
        source: Box<ParamsError>,
    },
    /// The context asked for is one the model cannot take.
    #[error(transparent)]
    Context(ContextError),
    /// An alias's file, verified against its pinned digest when it resolved, held other bytes
    /// when it was read for use (it was written to in between).
    #[error(
        "{}: the bytes read have SHA-256 {actual}, not the {expected} pinned for '{alias}': the file changed after \
         it was verified; `redline pull --force {alias}` fetches it again",
        infile::EscapedPath(path)
    )]
    NotPinned {
        /// The file.
        path: PathBuf,
        /// The alias.
        alias: &'static str,
        /// The pinned digest.
        expected: &'static str,
        /// The digest of the bytes read.
        actual: String,
    },
    /// The reader handed back a file that was not read through the loader, so no digest names
    /// its bytes.
    #[error("{}: the model was not read through the loader", infile::EscapedPath(path))]
    NoDigest {
        /// The file.
        path: PathBuf,
    },
}

impl OpenError {
    /// Whether the model file is at fault (its hyperparameters or tensors), as opposed to the
    /// argument, the context asked for or this machine. A read error's kind is its own to tell.
    #[must_use]
    pub const fn is_invalid_input(&self) -> bool {
        matches!(self, Self::Params { .. } | Self::NotPinned { .. })
    }
}

/// Resolves `model` (pulling an alias on first use), reads it with `read` (which must read it
/// through the loader: [`Gguf::open`] or [`Gguf::load`]), takes its digest from the snapshot
/// (an alias's must be the pinned one), checks its hyperparameters and tensor inventory
/// ([`ModelParams::from_gguf`]) and checks `context` against it (its default when `None`).
///
/// # Errors
/// [`OpenError`], naming the argument or the path.
pub fn open_model(
    model: &str,
    context: Option<u32>,
    read: impl FnOnce(&Path) -> Result<Gguf, Box<dyn Error + Send + Sync>>,
) -> Result<ModelFile, OpenError> {
    let resolved = model_files::resolve_model(model, true)
        .map_err(|source| OpenError::Resolve { model: model.to_owned(), source: Box::new(source) })?;
    let file = read(&resolved.path).map_err(|source| OpenError::Read { path: resolved.path.clone(), source })?;
    let sha256 = snapshot_digest(&resolved, &file)?;
    let params = ModelParams::from_gguf(&file)
        .map_err(|source| OpenError::Params { path: resolved.path.clone(), source: Box::new(source) })?;
    let context = match context {
        Some(context) => check_context(&file, context).map_err(OpenError::Context)?,
        None => default_context(&file),
    };
    Ok(ModelFile { resolved, file, sha256, params, context })
}

/// The digest a model file is known by: its snapshot's ([`Gguf::sha256`], the digest of exactly
/// the bytes parsed), which for an alias must be the catalogue's pin (the file was verified when
/// it resolved, and read again for use).
///
/// # Errors
/// [`OpenError::NotPinned`] when an alias's bytes are not the pinned ones;
/// [`OpenError::NoDigest`] for a file not read through the loader.
pub fn snapshot_digest(resolved: &ResolvedModel, file: &Gguf) -> Result<String, OpenError> {
    let sha256 = file.sha256().ok_or_else(|| OpenError::NoDigest { path: resolved.path.clone() })?;
    match resolved.entry {
        Some(entry) if entry.gguf_sha256 != sha256 => Err(OpenError::NotPinned {
            path: resolved.path.clone(),
            alias: entry.alias,
            expected: entry.gguf_sha256,
            actual: sha256,
        }),
        _ => Ok(sha256),
    }
}
