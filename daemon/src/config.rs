//! What the server runs with.

use std::time::Duration;

use engine::admission::AdmissionRegistry;
use engine::replay::ReplayConfig;

use crate::keys::ApiKeys;

/// What the server runs with: the served models, the session every model gets, the device
/// opener (`F`: called once, on the generation thread, for an [`crate::OpenedDevice`] or the
/// message of why none opened), the address and the limits.
pub struct Config<F> {
    /// The `--model` arguments, in order: the first is loaded at startup.
    pub models: Vec<String>,
    /// KV-cache positions for every model (`None`: each model's default).
    pub context: Option<u32>,
    /// The replay configuration.
    pub replay: ReplayConfig,
    /// The admissions registry the default route is decided by.
    pub admissions: AdmissionRegistry,
    /// Opens the device, on the generation thread (a device stays on the thread that made it).
    pub open_device: F,
    /// The API keys; none: the server is open.
    pub api_keys: ApiKeys,
    /// The address to listen on.
    pub host: String,
    /// The port (0: any free port).
    pub port: u16,
    /// Requests that may wait while one generates.
    pub queue: usize,
    /// Request bodies at most, bytes.
    pub max_body_bytes: usize,
    /// The time a request head may take.
    pub header_timeout: Duration,
    /// The time a request body may take.
    pub body_timeout: Duration,
    /// Open connections at most.
    pub max_connections: usize,
    /// Prompt tokens at most (`None`: the context less one).
    pub max_prompt_tokens: Option<usize>,
    /// `max_tokens` at most (`None`: 512, or the context when smaller).
    pub max_tokens_limit: Option<u32>,
    /// A device fault armed once the first model is loaded (testing).
    pub inject_fault: Option<hal::Injection>,
    /// Whether a generation keeps the KV rows of the prompt prefix the device holds from the
    /// previous generation (`engine::model::Session::set_prefix_reuse`).
    pub prefix_reuse: bool,
    /// Host names (`Host` header, port aside) accepted beside the loopback ones when bound to a
    /// loopback address (`--allowed-host`); bound elsewhere, any host is accepted unless some
    /// are given.
    pub allowed_hosts: Vec<String>,
}

impl<F> std::fmt::Debug for Config<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("models", &self.models)
            .field("host", &self.host)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}
