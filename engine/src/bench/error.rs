//! Why a bench could not run. A [`BenchError`] is the caller's fault or this machine's (a flag,
//! a file, a worker process): `redline bench` exits 2 with it, or 1 when the model file it
//! names is invalid (its [`gguf::GgufError`] is in the chain). A model or device that cannot
//! run is not an error of the bench but its result, [`Unrunnable`].

use std::error::Error;
use std::io;
use std::path::{Path, PathBuf};

use crate::admission::load::LoadError;
use crate::model::SessionError;
use crate::replay::ConfigError;
use crate::stationarity::GateSettingsError;

/// The model or the device could not run the bench: the message (`redline bench` exits 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unrunnable(pub String);

/// A worker process that does not answer as the protocol says.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The binary to run as a worker was not found.
    #[error("locating the redline binary")]
    Locate(#[source] io::Error),
    /// The worker did not start.
    #[error("spawning a bench worker")]
    Spawn(#[source] io::Error),
    /// The worker's standard input or output was not piped.
    #[error("worker {0}")]
    Pipe(&'static str),
    /// The worker failed before its ready line.
    #[error("the worker did not start")]
    Start(#[source] Box<WorkerError>),
    /// The worker ended.
    #[error("the bench worker exited")]
    Exited,
    /// Reading from the worker failed.
    #[error(transparent)]
    Read(io::Error),
    /// A line that is not JSON.
    #[error("a bench worker line")]
    Line(#[source] serde_json::Error),
    /// The worker reported an error.
    #[error("bench worker: {0}")]
    Reported(String),
    /// The worker's input is closed.
    #[error("the bench worker's input is closed")]
    Closed,
    /// Writing a command failed.
    #[error("writing to the bench worker")]
    Write(#[source] io::Error),
    /// Flushing a command failed.
    #[error(transparent)]
    Flush(io::Error),
    /// A row that is not a row.
    #[error("the worker's row")]
    Row(#[source] serde_json::Error),
}

/// Why a bench could not run (see the module documentation).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A parameter that cannot be used, or a model and prompt that do not fit: the message.
    #[error("{0}")]
    Usage(String),
    /// The stationarity gate's settings.
    #[error("stationarity gate")]
    GateSettings(#[source] GateSettingsError),
    /// A gate that could not start.
    #[error(transparent)]
    Gate(GateSettingsError),
    /// The model argument did not resolve.
    #[error("--model {model}")]
    Model {
        /// The argument.
        model: String,
        /// Why (boxed: the error is large).
        source: Box<model_files::ModelError>,
    },
    /// The model file could not be read or is not a GGUF file.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: Box<Path>,
        /// Why (not boxed, so that the exit code sees it in the chain).
        source: gguf::GgufError,
    },
    /// The bytes read are not the model the bench names: an alias's file is not its pinned
    /// digest, or a worker's snapshot is not the one the bench measured ([`OpenError`], in the
    /// chain for the exit code).
    #[error(transparent)]
    Identity(#[from] crate::model::OpenError),
    /// The model's tokenizer or a session could not start (boxed: it is the largest).
    #[error(transparent)]
    Session(Box<SessionError>),
    /// The admissions registry did not load.
    #[error(transparent)]
    Admissions(#[from] LoadError),
    /// An arm's replay configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A worker process.
    #[error(transparent)]
    Worker(#[from] WorkerError),
    /// Arming a fault on a device.
    #[error(transparent)]
    Inject(#[from] hal::BackendError),
    /// A value that does not serialize.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A file operation on the report.
    #[error("{what} {}", path.display())]
    File {
        /// The operation (`creating`, `writing`).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// Standard input or output.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<SessionError> for BenchError {
    fn from(error: SessionError) -> Self {
        Self::Session(Box::new(error))
    }
}

/// `error` and its sources, joined by `: `, as a one-line message (a worker reports its setup
/// failure this way, and an arm that could not start).
#[must_use]
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
