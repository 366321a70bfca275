//! The runtime's state: one per process, started by the first `hsa_init`, reference counted, and
//! torn down by the `hsa_shut_down` that drops the last reference.
//!
//! # Locks
//! - [`Runtime::core`]: the soft device (address space, kernel table, loaded code) and the
//!   runtime's allocation and code-object tables. A packet processor holds it while one packet
//!   runs; host calls that touch device memory take it for their copy.
//! - [`CURRENT`]'s read-write lock: written by the first `hsa_init` and the last `hsa_shut_down`
//!   only, read by every entry point (the signal functions for the length of their call).
//! - A signal slot's read-write lock, read to use or look a handle up, written to create or
//!   destroy it (see [`crate::signals`]).
//! - [`Runtime::queues`]: the queue table, never held while a processor thread is joined.
//!
//! Order: `CURRENT`, then `core`, then a signal slot, then one signal's lock; the queue table is never taken
//! with another lock held. No lock is held while a program callback runs.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Instant;

use hsa_sys::HsaStatus;
use pm4_encoding::Target;
use soft_device::clock::GpuClock;
use soft_device::loader::SoftKernels;
use soft_device::memory::SimMemory;

use crate::abi::host::VaReservation;
use crate::agents::{self, Agents, ISA_ENV, TIMESTAMP_FREQUENCY_HZ};
use crate::code::CodeState;
use crate::lock;
use crate::pools::PoolState;
use crate::queue::{self, QueueEntry};
use crate::signals::SignalRegistry;

/// Bytes of address space reserved for device memory. The soft device never hands a VA out twice,
/// so this bounds the bytes allocated over the runtime's life, not at once (that bound is
/// [`SimMemory::TOTAL_BYTES_MAX`]).
pub const VA_RESERVATION_BYTES: usize = 64 << 30;
/// Environment variable that, when set to `1`, makes the runtime print every queue fault to
/// standard error (the status the error callback receives does not say which check failed).
pub const LOG_ENV: &str = "REDLINE_SOFT_HSA_LOG";

/// What the soft device holds, behind [`Runtime::core`].
#[derive(Debug)]
pub(crate) struct Core {
    /// The GPU address space: device memory in the reserved range, system memory mapped at its
    /// host addresses.
    pub(crate) memory: SimMemory,
    /// Every loaded kernel, with the CPU reference the soft device runs it through.
    pub(crate) kernels: SoftKernels,
    /// GPU clock of the command processors' timestamps: from the runtime's start, so that it
    /// counts the ticks `HSA_SYSTEM_INFO_TIMESTAMP` counts.
    pub(crate) clock: GpuClock,
    /// Allocations by pool.
    pub(crate) pools: PoolState,
    /// Code object readers and executables.
    pub(crate) code: CodeState,
}

/// One started runtime.
#[derive(Debug)]
pub(crate) struct Runtime {
    /// The CPU agent and the GPU agents of the configured targets.
    pub(crate) agents: Agents,
    started: Instant,
    /// The soft device and the tables of memory and code.
    pub(crate) core: Mutex<Core>,
    /// Every signal (doorbells included).
    pub(crate) signals: SignalRegistry,
    /// Every queue, by the address of its `hsa_queue_t`.
    pub(crate) queues: Mutex<BTreeMap<u64, QueueEntry>>,
    /// Whether queue faults are printed ([`LOG_ENV`]).
    pub(crate) log_faults: bool,
    // INVARIANT: outlives every device VA the runtime handed out (dropped with the runtime).
    _reservation: VaReservation,
}

impl Runtime {
    fn start(targets: Vec<Target>) -> Result<Self, HsaStatus> {
        let reservation = VaReservation::new(VA_RESERVATION_BYTES).ok_or(HsaStatus::ERROR_OUT_OF_RESOURCES)?;
        let started = Instant::now();
        let memory = SimMemory::with_va_range(reservation.base(), reservation.end());
        let core = Core {
            memory,
            kernels: SoftKernels::new(),
            clock: GpuClock::since(started),
            pools: PoolState::default(),
            code: CodeState::default(),
        };
        Ok(Self {
            agents: Agents::new(targets),
            started,
            core: Mutex::new(core),
            signals: SignalRegistry::new(),
            queues: Mutex::new(BTreeMap::new()),
            log_faults: std::env::var(LOG_ENV).as_deref() == Ok("1"),
            _reservation: reservation,
        })
    }

    /// The soft device, locked.
    pub(crate) fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    /// `HSA_SYSTEM_INFO_TIMESTAMP`: ticks of [`TIMESTAMP_FREQUENCY_HZ`] since the runtime started.
    pub(crate) fn timestamp(&self) -> u64 {
        let nanos = self.started.elapsed().as_nanos();
        let ticks = nanos / u128::from(1_000_000_000 / TIMESTAMP_FREQUENCY_HZ);
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }
}

/// The process's `hsa_init` references, taken by `hsa_init` and `hsa_shut_down` only.
static REFERENCES: Mutex<u32> = Mutex::new(0);
/// The started runtime, set by the first reference and cleared by the last: every other entry
/// point only reads it (a read lock, which the signal functions take on every call, and which
/// never waits for another reader).
static CURRENT: RwLock<Option<Arc<Runtime>>> = RwLock::new(None);

/// `hsa_init`: starts the runtime at the first reference (reading [`ISA_ENV`]), counts later ones.
pub(crate) fn init() -> HsaStatus {
    let mut references = lock(&REFERENCES);
    if *references > 0 {
        return match references.checked_add(1) {
            Some(more) => {
                *references = more;
                HsaStatus::SUCCESS
            }
            None => HsaStatus::ERROR_REFCOUNT_OVERFLOW,
        };
    }
    let value = std::env::var(ISA_ENV);
    let targets = match value.as_deref() {
        Ok(names) => agents::targets_from_env(Some(names)),
        Err(std::env::VarError::NotPresent) => agents::targets_from_env(None),
        Err(std::env::VarError::NotUnicode(raw)) => {
            Err(agents::TargetError { value: raw.to_string_lossy().into_owned() })
        }
    };
    let targets = match targets {
        Ok(targets) => targets,
        Err(error) => {
            // The status alone cannot say which value was refused; the message can.
            eprintln!("soft-hsa: hsa_init: {error}");
            return HsaStatus::ERROR_INVALID_ISA_NAME;
        }
    };
    match Runtime::start(targets) {
        Ok(runtime) => {
            *CURRENT.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(runtime));
            *references = 1;
            HsaStatus::SUCCESS
        }
        Err(status) => status,
    }
}

/// `hsa_shut_down`: drops one reference; the last one stops every queue and frees everything.
pub(crate) fn shut_down() -> HsaStatus {
    let runtime = {
        let mut references = lock(&REFERENCES);
        match *references {
            0 => return HsaStatus::ERROR_NOT_INITIALIZED,
            1 => {
                *references = 0;
                CURRENT.write().unwrap_or_else(PoisonError::into_inner).take()
            }
            n => {
                *references = n - 1;
                return HsaStatus::SUCCESS;
            }
        }
    };
    if let Some(runtime) = runtime {
        // Outside the reference lock: a processor thread finishing its packet may still call into
        // the runtime through a program callback.
        queue::destroy_all(&runtime);
    }
    HsaStatus::SUCCESS
}

/// The started runtime.
///
/// # Errors
/// `HSA_STATUS_ERROR_NOT_INITIALIZED` when no `hsa_init` reference is held.
pub(crate) fn current() -> Result<Arc<Runtime>, HsaStatus> {
    CURRENT.read().unwrap_or_else(PoisonError::into_inner).clone().ok_or(HsaStatus::ERROR_NOT_INITIALIZED)
}

/// `f` of the started runtime, under the read lock of [`CURRENT`] (no reference counted): for
/// calls that never wait.
///
/// # Errors
/// `HSA_STATUS_ERROR_NOT_INITIALIZED` when no `hsa_init` reference is held.
pub(crate) fn with_current<R>(f: impl FnOnce(&Runtime) -> R) -> Result<R, HsaStatus> {
    CURRENT.read().unwrap_or_else(PoisonError::into_inner).as_deref().map(f).ok_or(HsaStatus::ERROR_NOT_INITIALIZED)
}
