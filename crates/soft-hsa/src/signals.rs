//! Signals: 64-bit values shared by the program's threads and the packet processors.
//!
//! A signal is a [`SignalCell`]: an atomic value and a condition variable that every change
//! notifies. The [`SignalRegistry`] maps handles to cells; it is locked only to look a handle up
//! (an `Arc` of the cell comes out), never while anyone waits, so a wait on one signal holds no
//! lock that a store to it, or any other runtime call, needs.
//!
//! A completion signal named by a packet is looked up in the same registry, so the packet
//! processor decrements exactly the cell the program waits on.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hal::SignalError;
use hsa_sys::HsaStatus;
use soft_device::signal::SignalTable;

use crate::lock;

/// Live signals at most (doorbells included).
pub const SIGNALS_MAX: usize = 16_384;
/// First signal handle; handles count up from here and are never reused.
pub(crate) const SIGNAL_HANDLE_BASE: u64 = 0x5000_0000_0000;
/// Longest single sleep of a waiter: a bound on how late a wait notices its deadline if a
/// notification were ever lost.
pub(crate) const WAIT_SLICE_MAX: Duration = Duration::from_millis(50);

/// One signal's value and its waiters' condition variable.
#[derive(Debug)]
pub(crate) struct SignalCell {
    value: AtomicI64,
    lock: Mutex<()>,
    changed: Condvar,
}

impl SignalCell {
    /// A signal with value `initial`.
    pub(crate) fn new(initial: i64) -> Self {
        Self { value: AtomicI64::new(initial), lock: Mutex::new(()), changed: Condvar::new() }
    }

    /// The value.
    pub(crate) fn load(&self, order: Ordering) -> i64 {
        self.value.load(order)
    }

    /// Stores `value` and wakes the waiters.
    pub(crate) fn store(&self, value: i64, order: Ordering) {
        self.value.store(value, order);
        self.notify();
    }

    /// Adds `amount` (wrapping) and wakes the waiters; returns the new value.
    pub(crate) fn add(&self, amount: i64, order: Ordering) -> i64 {
        let new = self.value.fetch_add(amount, order).wrapping_add(amount);
        self.notify();
        new
    }

    /// Wakes every waiter so it re-reads the value (and whatever else its predicate reads).
    pub(crate) fn notify(&self) {
        // Taking the lock orders this notification after a waiter's check under the same lock:
        // a waiter that saw the old value is already asleep and receives it.
        drop(lock(&self.lock));
        self.changed.notify_all();
    }

    /// Waits until `done(value)` holds or `deadline` passes (`None`: no deadline); returns the
    /// last value read (with acquire ordering).
    pub(crate) fn wait_until(&self, deadline: Option<Instant>, mut done: impl FnMut(i64) -> bool) -> i64 {
        loop {
            let value = self.value.load(Ordering::Acquire);
            if done(value) {
                return value;
            }
            let guard = lock(&self.lock);
            let value = self.value.load(Ordering::Acquire);
            if done(value) {
                return value;
            }
            let slice = match deadline {
                None => WAIT_SLICE_MAX,
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return value;
                    }
                    (deadline - now).min(WAIT_SLICE_MAX)
                }
            };
            // TIMEOUT: every sleep is at most WAIT_SLICE_MAX and the deadline is re-checked after
            // it, so a wait never outlives its deadline by more than one slice.
            drop(self.changed.wait_timeout(guard, slice).unwrap_or_else(std::sync::PoisonError::into_inner));
        }
    }
}

/// The live signals of a runtime, by handle.
#[derive(Debug)]
pub(crate) struct SignalRegistry {
    cells: Mutex<HashMap<u64, Arc<SignalCell>>>,
    next: AtomicU64,
}

impl Default for SignalRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl SignalRegistry {
    /// No signals.
    pub(crate) fn new() -> Self {
        Self { cells: Mutex::new(HashMap::new()), next: AtomicU64::new(SIGNAL_HANDLE_BASE) }
    }

    /// Creates a signal with value `initial`; returns its handle and cell.
    ///
    /// # Errors
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES` at [`SIGNALS_MAX`].
    pub(crate) fn create(&self, initial: i64) -> Result<(u64, Arc<SignalCell>), HsaStatus> {
        let mut cells = lock(&self.cells);
        if cells.len() >= SIGNALS_MAX {
            return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
        }
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        let cell = Arc::new(SignalCell::new(initial));
        cells.insert(handle, Arc::clone(&cell));
        Ok((handle, cell))
    }

    /// The cell of `handle`, if it is live.
    pub(crate) fn get(&self, handle: u64) -> Option<Arc<SignalCell>> {
        lock(&self.cells).get(&handle).cloned()
    }

    /// Destroys `handle`; a waiter that holds its cell finishes its wait on it.
    ///
    /// # Errors
    /// `HSA_STATUS_ERROR_INVALID_SIGNAL` when it is not live.
    pub(crate) fn destroy(&self, handle: u64) -> Result<(), HsaStatus> {
        lock(&self.cells).remove(&handle).map(drop).ok_or(HsaStatus::ERROR_INVALID_SIGNAL)
    }
}

/// The registry as the soft device's packet processor sees it ([`SignalTable`]).
#[derive(Debug)]
pub(crate) struct SharedSignals<'a>(pub &'a SignalRegistry);

impl SignalTable for SharedSignals<'_> {
    fn load_raw(&self, handle: u64) -> Result<i64, SignalError> {
        let cell = self.0.get(handle).ok_or(SignalError::Unknown { handle })?;
        Ok(cell.load(Ordering::Acquire))
    }

    fn subtract_raw(&mut self, handle: u64, amount: i64) -> Result<i64, SignalError> {
        let cell = self.0.get(handle).ok_or(SignalError::Unknown { handle })?;
        // ORDERING: release, after the packet's memory effects (stored under the runtime's
        // memory lock and with relaxed atomics into host memory): a program that waits for the
        // decrement with acquire ordering sees them.
        Ok(cell.add(amount.wrapping_neg(), Ordering::AcqRel))
    }
}

/// Whether `value condition compare` holds, for a raw `hsa_signal_condition_t`; `None` for a
/// value that is not a condition.
pub(crate) fn condition_holds(condition: u32, value: i64, compare: i64) -> Option<bool> {
    let condition = aql_packets::SignalCondition::from_u32(condition)?;
    Some(hal::signal_condition_holds(value, condition, compare))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_count_up_and_destroyed_ones_are_gone() {
        let registry = SignalRegistry::new();
        let (a, _) = registry.create(3).unwrap();
        let (b, _) = registry.create(0).unwrap();
        assert_eq!((a, b), (SIGNAL_HANDLE_BASE, SIGNAL_HANDLE_BASE + 1));
        registry.destroy(a).unwrap();
        assert_eq!(registry.destroy(a), Err(HsaStatus::ERROR_INVALID_SIGNAL));
        assert!(registry.get(a).is_none());
        let mut shared = SharedSignals(&registry);
        assert_eq!(shared.load_raw(a), Err(SignalError::Unknown { handle: a }));
        assert_eq!(shared.subtract_raw(b, 1), Ok(-1));
    }

    #[test]
    fn a_waiter_wakes_on_a_store_from_another_thread() {
        let cell = Arc::new(SignalCell::new(1));
        let other = Arc::clone(&cell);
        let storer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            other.store(0, Ordering::Release);
        });
        let start = Instant::now();
        let value = cell.wait_until(Some(start + Duration::from_secs(10)), |v| v == 0);
        assert_eq!(value, 0);
        assert!(start.elapsed() < Duration::from_secs(5));
        storer.join().unwrap();
    }

    #[test]
    fn a_wait_gives_up_at_its_deadline() {
        let cell = SignalCell::new(5);
        let start = Instant::now();
        assert_eq!(cell.wait_until(Some(start + Duration::from_millis(30)), |v| v == 0), 5);
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(30) && waited < Duration::from_millis(30) + 2 * WAIT_SLICE_MAX);
    }

    #[test]
    fn conditions_follow_the_header() {
        assert_eq!(condition_holds(0, 4, 4), Some(true));
        assert_eq!(condition_holds(2, -1, 0), Some(true));
        assert_eq!(condition_holds(3, -1, 0), Some(false));
        assert_eq!(condition_holds(9, 0, 0), None);
    }
}
