//! Route configuration: command-line flags first, then `REDLINE_REPLAY_*` environment variables,
//! then defaults. An unknown value is an error that lists the accepted ones, never a silent
//! default (`docs/ARCHITECTURE.md`, "The replay controller").

use std::time::Duration;

use serde::Serialize;

use lowering::plan::Transport;

/// `REDLINE_REPLAY_BACKEND`.
pub const ENV_BACKEND: &str = "REDLINE_REPLAY_BACKEND";
/// `REDLINE_REPLAY_TRANSPORT`.
pub const ENV_TRANSPORT: &str = "REDLINE_REPLAY_TRANSPORT";
/// `REDLINE_REPLAY_MANUAL_CAPTURE`.
pub const ENV_MANUAL_CAPTURE: &str = "REDLINE_REPLAY_MANUAL_CAPTURE";

/// Which route the controller may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Ordinary launches only: the controller stays in `Hip`.
    Hip,
    /// The retained route once a capture is prepared.
    Auto,
    /// A diagnostic: the shadow oracle validates the prepared plan at
    /// [`ReplayConfig::shadow_positions`] eligible forwards and the controller stops in
    /// `ShadowValidated`. It never routes product forwards: every forward's result is the
    /// ordinary path's, and its plan is never installed.
    Shadow,
}

impl Backend {
    /// Accepted spellings.
    pub const ACCEPTED: [&str; 3] = ["hip", "auto", "shadow"];

    /// The spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Hip => "hip",
            Backend::Auto => "auto",
            Backend::Shadow => "shadow",
        }
    }
}

/// Why a configuration value was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: unknown value {value:?}; accepted values: {}", accepted.join(", "))]
pub struct ConfigError {
    /// The flag or environment variable.
    pub source_name: String,
    /// The value given.
    pub value: String,
    /// What is accepted.
    pub accepted: Vec<&'static str>,
}

/// Values given on the command line (`None` = not given).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigFlags {
    /// `--replay-backend`.
    pub backend: Option<String>,
    /// `--transport`.
    pub transport: Option<String>,
    /// `--manual-capture`.
    pub manual_capture: Option<String>,
}

/// The controller's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReplayConfig {
    /// The route asked for.
    pub backend: Backend,
    /// Whether the backend was asked for explicitly (a flag or the environment): an explicit
    /// `auto` or `shadow` arms the controller even where the admission predicate does not hold.
    pub explicit: bool,
    /// How retained tokens are submitted.
    pub transport: Transport,
    /// Captures only through the manual/certification path.
    pub manual_capture: bool,
    /// Backend `auto` only: the shadow oracle validates the prepared plan at
    /// [`ReplayConfig::shadow_positions`] eligible forwards (each forward's result the ordinary
    /// arm's) before the route is `Ready`.
    pub validate_first: bool,
    /// Launches a capture may hold.
    pub capacity_launches: usize,
    /// Recorded warm-up forwards before preparation (at least 2: bindings are calibrated from
    /// two, and a third cross-checks them).
    pub warmup_samples: usize,
    /// Positions the shadow oracle checks before a `shadow` route is Ready.
    pub shadow_positions: u32,
    /// The longest a retained token may take on the device.
    #[serde(serialize_with = "serialize_duration_ms")]
    pub timeout: Duration,
}

fn serialize_duration_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(d.as_millis())
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            backend: Backend::Auto,
            explicit: false,
            transport: Transport::Pm4,
            manual_capture: false,
            validate_first: false,
            capacity_launches: 4096,
            warmup_samples: 3,
            shadow_positions: 8,
            timeout: Duration::from_secs(10),
        }
    }
}

fn pick<'a>(flag: Option<&'a str>, env: Option<&'a str>, flag_name: &str, env_name: &str) -> Option<(&'a str, String)> {
    match (flag, env) {
        (Some(v), _) => Some((v, flag_name.to_owned())),
        (None, Some(v)) => Some((v, env_name.to_owned())),
        (None, None) => None,
    }
}

fn unknown(source_name: String, value: &str, accepted: &[&'static str]) -> ConfigError {
    ConfigError { source_name, value: value.to_owned(), accepted: accepted.to_vec() }
}

impl ReplayConfig {
    /// Whether eligible forwards of a captured, prepared tape run the shadow oracle before any
    /// route change: backend `shadow`, or `auto` with [`ReplayConfig::validate_first`], outside
    /// the manual lifecycle.
    #[must_use]
    pub fn validates(&self) -> bool {
        !self.manual_capture
            && (self.backend == Backend::Shadow || (self.backend == Backend::Auto && self.validate_first))
    }

    /// The configuration from `flags`, then the environment as `env` reads it, then defaults.
    ///
    /// # Errors
    /// [`ConfigError`] for the first unknown value, naming where it came from.
    pub fn resolve(flags: &ConfigFlags, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        let backend_env = env(ENV_BACKEND);
        if let Some((value, source)) =
            pick(flags.backend.as_deref(), backend_env.as_deref(), "--replay-backend", ENV_BACKEND)
        {
            config.backend = match value {
                "hip" => Backend::Hip,
                "auto" => Backend::Auto,
                "shadow" => Backend::Shadow,
                _ => return Err(unknown(source, value, &Backend::ACCEPTED)),
            };
            config.explicit = true;
        }
        let transport_env = env(ENV_TRANSPORT);
        if let Some((value, source)) =
            pick(flags.transport.as_deref(), transport_env.as_deref(), "--transport", ENV_TRANSPORT)
        {
            config.transport = match value {
                "pm4" => Transport::Pm4,
                "aql" => Transport::Aql,
                _ => return Err(unknown(source, value, &["pm4", "aql"])),
            };
        }
        let manual_env = env(ENV_MANUAL_CAPTURE);
        if let Some((value, source)) =
            pick(flags.manual_capture.as_deref(), manual_env.as_deref(), "--manual-capture", ENV_MANUAL_CAPTURE)
        {
            config.manual_capture = match value {
                "1" | "true" | "on" => true,
                "0" | "false" | "off" => false,
                _ => return Err(unknown(source, value, &["1", "true", "on", "0", "false", "off"])),
            };
        }
        Ok(config)
    }

    /// [`ReplayConfig::resolve`] with the process environment. A variable that is set but not
    /// valid Unicode is an unknown value.
    ///
    /// # Errors
    /// As [`ReplayConfig::resolve`].
    pub fn from_flags_and_env(flags: &ConfigFlags) -> Result<Self, ConfigError> {
        Self::resolve(flags, |name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }
}
