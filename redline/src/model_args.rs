//! The arguments of the commands that run a model as a session (`generate`, `serve`): the
//! model, the device, the KV-cache size and the replay route, checked and opened in one place.
//! `generate` takes one `--model` ([`ModelArgs`]); `serve` repeats it over the same
//! [`DeviceArgs`] and [`SessionArgs`].

use std::path::PathBuf;
use std::str::FromStr;

use crate::exit::InvalidInput as _;
use crate::select::DeviceKind;
use anyhow::{Context as _, Result};
use engine::admission::{AdmissionDecision, AdmissionRegistry};
use engine::model::{ModelFile, Session, open_model};
use engine::replay::{ConfigFlags, ReplayConfig};
use pm4_encoding::Target;

use model_files::ResolvedModel;

/// The device a model runs on (`--device`, `--arch`).
#[derive(Debug, Clone, clap::Args)]
pub struct DeviceArgs {
    /// `sim` (the soft device), `hsa` (an AMD GPU through ROCr: an error when the runtime or a
    /// GPU is missing), or `auto` (the soft device, saying whether a GPU was found).
    #[arg(id = "device", long = "device", value_name = "DEVICE", default_value = "auto")]
    pub name: String,
    /// The soft device's architecture.
    #[arg(long, default_value = "gfx1100")]
    pub arch: String,
}

impl DeviceArgs {
    /// `--device`, parsed.
    ///
    /// # Errors
    /// Not a device kind; the message lists the accepted ones.
    pub fn kind(&self) -> Result<DeviceKind> {
        DeviceKind::from_str(&self.name).map_err(|e| anyhow::anyhow!("--device: {e}"))
    }

    /// `--arch`, parsed.
    ///
    /// # Errors
    /// Not a supported architecture.
    pub fn target(&self) -> Result<Target> {
        Target::from_str(&self.arch).map_err(|e| anyhow::anyhow!("--arch: {e}"))
    }
}

/// The model and the device it runs on (`generate`, `bench`, `golden`).
#[derive(Debug, Clone, clap::Args)]
pub struct ModelDevice {
    /// A model alias (`redline models`: smollm2-135m, gemma-3-270m; `tiny`, `tiny-gemma3`,
    /// `tiny-lfm2` and `tiny-qwen35` are built in) or a path to a `.gguf` file (llama, gemma3,
    /// lfm2 or qwen35). An alias not yet pulled is pulled first.
    #[arg(long, default_value = model_files::DEFAULT_ALIAS)]
    pub model: String,
    /// The device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// The KV-cache size and the replay route of a session (`generate`, `serve`).
#[derive(Debug, Clone, clap::Args)]
pub struct SessionArgs {
    /// KV-cache positions, the most a prompt and its new tokens may take, up to the model's
    /// trained context [default: 1024, or the trained context when shorter].
    #[arg(long)]
    pub context: Option<u32>,
    /// `hip` (ordinary launches), `auto` (retained), `shadow` (validate, then retained);
    /// default from REDLINE_REPLAY_BACKEND, else auto.
    #[arg(long)]
    pub replay_backend: Option<String>,
    /// `pm4` or `aql`; default from REDLINE_REPLAY_TRANSPORT, else pm4.
    #[arg(long)]
    pub transport: Option<String>,
    /// The admissions registry deciding whether the retained route is armed by default
    /// [default: registry/admissions.json as built into the binary]. An explicit
    /// --replay-backend (or REDLINE_REPLAY_BACKEND) arms it regardless.
    #[arg(long)]
    pub admissions: Option<PathBuf>,
}

/// The model, its device and its replay route (`generate`).
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// The model and the device.
    #[command(flatten)]
    pub model: ModelDevice,
    /// The KV cache and the replay route.
    #[command(flatten)]
    pub session: SessionArgs,
}

/// What [`DeviceArgs`] and [`SessionArgs`] name, checked: everything but the model.
#[derive(Debug)]
pub struct SessionSetup {
    /// `--device`.
    pub kind: DeviceKind,
    /// `--arch`.
    pub target: Target,
    /// The replay configuration from the flags and the environment.
    pub config: ReplayConfig,
    /// The admissions registry.
    pub admissions: AdmissionRegistry,
}

impl SessionArgs {
    /// Checks the device and route arguments and loads the admissions registry.
    ///
    /// # Errors
    /// An argument that does not parse, naming the flag; an unreadable registry.
    pub fn check(&self, device: &DeviceArgs) -> Result<SessionSetup> {
        let kind = device.kind()?;
        let target = device.target()?;
        let config = ReplayConfig::from_flags_and_env(&ConfigFlags {
            backend: self.replay_backend.clone(),
            transport: self.transport.clone(),
            manual_capture: None,
        })?;
        let admissions = engine::admission::load::load(self.admissions.as_deref()).context("--admissions")?;
        Ok(SessionSetup { kind, target, config, admissions })
    }

    /// Resolves `model` (pulling an alias on first use), opens it through the trusted loader
    /// ([`gguf::Gguf::open`]: a sealed snapshot, hashed as it is copied), checks its
    /// hyperparameters and tensor inventory and checks `--context` against it
    /// ([`engine::model::open_model`]).
    ///
    /// # Errors
    /// A model that cannot be fetched or read (exit 2); a file that is not a valid GGUF or not
    /// a model of an architecture this build runs (llama, gemma3), naming the path and the key
    /// or tensor, or one that changed while it was read (a short read), naming the file
    /// (invalid input, exit 1); a context the model cannot take (usage, exit 2).
    pub fn open_model(&self, model: &str) -> Result<ModelFile> {
        Ok(open_model(model, self.context, |path| Ok(gguf::Gguf::open(path)?))?)
    }
}

/// What [`ModelArgs`] name, checked, with the model file open.
#[derive(Debug)]
pub struct OpenedModel {
    /// `--device`.
    pub kind: DeviceKind,
    /// `--arch`.
    pub target: Target,
    /// The replay configuration from the flags and the environment.
    pub config: ReplayConfig,
    /// The admissions registry.
    pub admissions: AdmissionRegistry,
    /// The model file, pulled when it was an alias not yet fetched.
    pub resolved: ResolvedModel,
    /// The opened GGUF, parsed from its sealed snapshot.
    pub file: gguf::Gguf,
    /// The SHA-256 of the bytes parsed ([`ModelFile::sha256`]).
    pub sha256: String,
    /// KV-cache positions.
    pub context: u32,
}

impl ModelArgs {
    /// Checks the arguments, resolves the model (pulling an alias on first use) and opens it.
    ///
    /// # Errors
    /// An argument that does not parse, naming the flag; a model that cannot be fetched or read;
    /// a model file that is invalid ([`SessionArgs::open_model`]).
    pub fn open(&self) -> Result<OpenedModel> {
        let SessionSetup { kind, target, config, admissions } = self.session.check(&self.model.device)?;
        let ModelFile { resolved, file, sha256, context, .. } = self.session.open_model(&self.model.model)?;
        Ok(OpenedModel { kind, target, config, admissions, resolved, file, sha256, context })
    }
}

/// Starts a session of `file` on `device` ([`Session::with_admission`]): its tokenizer, its
/// weights checked finite and uploaded, a KV cache of `context` positions. A fault of the model
/// file (tokenizer metadata, hyperparameters, tensors, weights) is marked as invalid input
/// ([`crate::exit`]: exit 1); a device error is not.
///
/// # Errors
/// The [`engine::model::SessionError`].
pub fn start_session<D: hal::Device>(
    device: D,
    file: &gguf::Gguf,
    context: u32,
    config: ReplayConfig,
    admission: AdmissionDecision,
) -> Result<Session<D>> {
    match Session::with_admission(device, file, context, config, admission) {
        Ok(session) => Ok(session),
        Err(error) if error.is_invalid_input() => Err(error).invalid(),
        Err(error) => Err(error.into()),
    }
}
