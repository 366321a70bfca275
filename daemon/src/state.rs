//! What every handler shares: the queue to the generation thread, the counters, the served
//! models, the device, the limits and the keys.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::catalog::Catalog;
use crate::keys::ApiKeys;
use crate::metrics::{Metrics, QueueGauge};
use crate::worker::{DeviceInfo, Job};

/// Body limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    /// Bytes at most (`--max-body-bytes`).
    pub bytes: usize,
    /// The whole body must arrive within this (`--body-timeout`).
    pub timeout: Duration,
}

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct AppState {
    /// The generation queue.
    pub queue: mpsc::Sender<Job>,
    /// `--queue`.
    pub queue_capacity: usize,
    /// Counters and the generation thread's snapshot.
    pub metrics: Arc<Metrics>,
    /// The served models.
    pub catalog: Catalog,
    /// The device they run on.
    pub device: DeviceInfo,
    /// Request bodies at most (`--max-body-bytes`) and their deadline (`--body-timeout`).
    pub body_limits: BodyLimits,
    /// The API keys; none: the server is open.
    pub api_keys: ApiKeys,
    /// Makes response ids unique within the process.
    pub serial: AtomicU64,
    /// The host names requests may name.
    pub hosts: crate::guard::Hosts,
}

impl AppState {
    pub(crate) fn queue_gauge(&self) -> QueueGauge {
        let free = self.queue.capacity();
        QueueGauge { depth: self.queue_capacity.saturating_sub(free), capacity: self.queue_capacity }
    }
}
