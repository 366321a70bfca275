//! Signals: 64-bit values shared by the program's threads and the packet processors.
//!
//! A signal is a [`SignalCell`]: an atomic value, a count of its sleeping waiters and a condition
//! variable. A store or an add with nobody asleep is one atomic and a fence, as a store into an
//! `amd_signal_t` is on ROCr; only a change that a waiter may be asleep for takes the cell's lock
//! and wakes it (a futex call).
//!
//! The [`SignalRegistry`] maps handles to cells through a table of [`SIGNALS_MAX`] slots, one
//! read-write lock each: a handle names its slot, so a lookup reads one slot under its read lock
//! (no table-wide lock, no hashing), and the cell is used under that lock or an `Arc` of it comes
//! out. No slot lock is held while anyone waits, so a wait on one signal holds no lock that a
//! store to it, or any other runtime call, needs.
//!
//! A completion signal named by a packet is looked up in the same registry, so the packet
//! processor decrements exactly the cell the program waits on.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering, fence};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use hal::SignalError;
use hsa_sys::HsaStatus;
use soft_device::signal::SignalTable;

use crate::lock;

/// Live signals at most (doorbells included). A power of two: a handle's low bits are its slot.
pub const SIGNALS_MAX: usize = 1 << SLOT_BITS;
/// Bits of a handle that name its slot.
const SLOT_BITS: u32 = 14;
/// First signal handle. A handle is this plus a serial number (counting up from 0, one per
/// created signal) shifted past the slot bits, plus its slot: never reused, and nonzero.
pub(crate) const SIGNAL_HANDLE_BASE: u64 = 0x5000_0000_0000;
/// Longest single sleep of a waiter: a bound on how late a wait notices its deadline if a
/// notification were ever lost.
pub(crate) const WAIT_SLICE_MAX: Duration = Duration::from_millis(50);

/// One signal's value and its waiters' condition variable.
#[derive(Debug)]
pub(crate) struct SignalCell {
    value: AtomicI64,
    /// Waiters between announcing themselves and waking: a change notifies only when this is
    /// nonzero (see [`SignalCell::changed`]).
    sleepers: AtomicU32,
    lock: Mutex<()>,
    changed: Condvar,
}

impl SignalCell {
    /// A signal with value `initial`.
    pub(crate) fn new(initial: i64) -> Self {
        Self {
            value: AtomicI64::new(initial),
            sleepers: AtomicU32::new(0),
            lock: Mutex::new(()),
            changed: Condvar::new(),
        }
    }

    /// The value.
    pub(crate) fn load(&self, order: Ordering) -> i64 {
        self.value.load(order)
    }

    /// Stores `value` and wakes the waiters asleep on the signal.
    pub(crate) fn store(&self, value: i64, order: Ordering) {
        self.value.store(value, order);
        self.changed();
    }

    /// Adds `amount` (wrapping) and wakes the waiters asleep on the signal; returns the new value.
    pub(crate) fn add(&self, amount: i64, order: Ordering) -> i64 {
        let new = self.value.fetch_add(amount, order).wrapping_add(amount);
        self.changed();
        new
    }

    /// After a change of the value: wakes the waiters when one may be asleep.
    fn changed(&self) {
        // ORDERING: SeqCst fence between the change above and the load of `sleepers`, paired with
        // the fence between a waiter's increment of `sleepers` and its load of the value in
        // `wait_until`: of the two loads at least one sees the other side's write, so either this
        // change sees the sleeper and notifies, or the sleeper sees the new value and does not
        // sleep.
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) != 0 {
            self.notify();
        }
    }

    /// Waiters asleep on the signal now (or about to be).
    #[cfg(test)]
    pub(crate) fn sleepers(&self) -> u32 {
        self.sleepers.load(Ordering::SeqCst)
    }

    /// Wakes every waiter so it re-reads the value (and whatever else its predicate reads); for
    /// a change of state other than the value, whether or not anyone is asleep.
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
            self.sleepers.fetch_add(1, Ordering::Relaxed);
            // ORDERING: SeqCst fence after announcing this sleeper, paired with the fence in
            // `changed`: a change not seen below is one whose writer sees the sleeper.
            fence(Ordering::SeqCst);
            let guard = lock(&self.lock);
            let value = self.value.load(Ordering::Acquire);
            if !done(value) {
                // TIMEOUT: every sleep is at most WAIT_SLICE_MAX and the deadline is re-checked
                // after it, so a wait never outlives its deadline by more than one slice.
                drop(self.changed.wait_timeout(guard, slice).unwrap_or_else(std::sync::PoisonError::into_inner));
            } else {
                drop(guard);
            }
            self.sleepers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A live signal in its slot.
#[derive(Debug)]
struct Entry {
    handle: u64,
    cell: Arc<SignalCell>,
}

/// The live signals of a runtime, by handle.
#[derive(Debug)]
pub(crate) struct SignalRegistry {
    /// One slot per live signal at most; a handle's low [`SLOT_BITS`] bits name its slot.
    slots: Box<[RwLock<Option<Entry>>]>,
    /// Free slots; the last one is taken first (at the start, slot 0).
    free: Mutex<Vec<u32>>,
    /// Serial number of the next signal.
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
        let slots = (0..SIGNALS_MAX).map(|_| RwLock::new(None)).collect();
        let free = (0..1u32 << SLOT_BITS).rev().collect();
        Self { slots, free: Mutex::new(free), next: AtomicU64::new(0) }
    }

    /// The slot `handle` names, if it can name one.
    fn slot(&self, handle: u64) -> Option<&RwLock<Option<Entry>>> {
        let offset = handle.checked_sub(SIGNAL_HANDLE_BASE)?;
        let index = usize::try_from(offset & ((1 << SLOT_BITS) - 1)).ok()?;
        self.slots.get(index)
    }

    /// Creates a signal with value `initial`; returns its handle and cell.
    ///
    /// # Errors
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES` at [`SIGNALS_MAX`].
    pub(crate) fn create(&self, initial: i64) -> Result<(u64, Arc<SignalCell>), HsaStatus> {
        let index = lock(&self.free).pop().ok_or(HsaStatus::ERROR_OUT_OF_RESOURCES)?;
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        let handle = serial
            .checked_shl(SLOT_BITS)
            .filter(|shifted| shifted >> SLOT_BITS == serial)
            .and_then(|shifted| (shifted | u64::from(index)).checked_add(SIGNAL_HANDLE_BASE));
        let Some(handle) = handle else {
            // 2^50 signals created: no handle is left that was never used.
            lock(&self.free).push(index);
            return Err(HsaStatus::ERROR_OUT_OF_RESOURCES);
        };
        let cell = Arc::new(SignalCell::new(initial));
        let slot = &self.slots[usize::try_from(index).unwrap_or(usize::MAX)];
        *slot.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(Entry { handle, cell: Arc::clone(&cell) });
        Ok((handle, cell))
    }

    /// `f` of the cell of `handle`, under its slot's read lock (for calls that do not wait);
    /// `None` when it is not live.
    pub(crate) fn with<R>(&self, handle: u64, f: impl FnOnce(&SignalCell) -> R) -> Option<R> {
        let slot = self.slot(handle)?.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.as_ref().filter(|entry| entry.handle == handle).map(|entry| f(&entry.cell))
    }

    /// The cell of `handle`, if it is live.
    pub(crate) fn get(&self, handle: u64) -> Option<Arc<SignalCell>> {
        let slot = self.slot(handle)?.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.as_ref().filter(|entry| entry.handle == handle).map(|entry| Arc::clone(&entry.cell))
    }

    /// Destroys `handle`; a waiter that holds its cell finishes its wait on it.
    ///
    /// # Errors
    /// `HSA_STATUS_ERROR_INVALID_SIGNAL` when it is not live.
    pub(crate) fn destroy(&self, handle: u64) -> Result<(), HsaStatus> {
        let Some(slot) = self.slot(handle) else { return Err(HsaStatus::ERROR_INVALID_SIGNAL) };
        let mut slot = slot.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.as_ref().is_none_or(|entry| entry.handle != handle) {
            return Err(HsaStatus::ERROR_INVALID_SIGNAL);
        }
        *slot = None;
        drop(slot);
        // CAST: the slot of a live handle is below SIGNALS_MAX = 2^14.
        let index = ((handle - SIGNAL_HANDLE_BASE) & ((1 << SLOT_BITS) - 1)) as u32;
        lock(&self.free).push(index);
        Ok(())
    }
}

/// The registry as the soft device's packet processor sees it ([`SignalTable`]).
#[derive(Debug)]
pub(crate) struct SharedSignals<'a>(pub &'a SignalRegistry);

impl SignalTable for SharedSignals<'_> {
    fn load_raw(&self, handle: u64) -> Result<i64, SignalError> {
        self.0.with(handle, |cell| cell.load(Ordering::Acquire)).ok_or(SignalError::Unknown { handle })
    }

    fn subtract_raw(&mut self, handle: u64, amount: i64) -> Result<i64, SignalError> {
        // ORDERING: release, after the packet's memory effects (stored under the runtime's
        // memory lock and with relaxed atomics into host memory): a program that waits for the
        // decrement with acquire ordering sees them.
        self.0
            .with(handle, |cell| cell.add(amount.wrapping_neg(), Ordering::AcqRel))
            .ok_or(SignalError::Unknown { handle })
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
    fn handles_name_their_slot_and_are_never_reused() {
        let registry = SignalRegistry::new();
        let (a, _) = registry.create(3).unwrap();
        let (b, _) = registry.create(0).unwrap();
        assert_eq!((a, b), (SIGNAL_HANDLE_BASE, SIGNAL_HANDLE_BASE + (1 << SLOT_BITS) + 1));
        registry.destroy(a).unwrap();
        assert_eq!(registry.destroy(a), Err(HsaStatus::ERROR_INVALID_SIGNAL));
        assert!(registry.get(a).is_none());
        // Slot 0 again, under a new serial number: the old handle stays dead.
        let (c, _) = registry.create(7).unwrap();
        assert_eq!(c, SIGNAL_HANDLE_BASE + (2 << SLOT_BITS));
        assert!(registry.get(a).is_none());
        assert_eq!(registry.with(c, |cell| cell.load(Ordering::Relaxed)), Some(7));
        assert_eq!(registry.with(0, |_| ()), None, "below the base");
        assert_eq!(registry.with(u64::MAX, |_| ()), None);
        let mut shared = SharedSignals(&registry);
        assert_eq!(shared.load_raw(a), Err(SignalError::Unknown { handle: a }));
        assert_eq!(shared.subtract_raw(b, 1), Ok(-1));
    }

    #[test]
    fn the_table_holds_signals_max_and_a_destroyed_slot_is_taken_again() {
        let registry = SignalRegistry::new();
        let handles: Vec<u64> = (0..SIGNALS_MAX).map(|i| registry.create(i as i64).unwrap().0).collect();
        assert_eq!(registry.create(0).map(|(h, _)| h), Err(HsaStatus::ERROR_OUT_OF_RESOURCES));
        for (i, &handle) in handles.iter().enumerate() {
            assert_eq!(registry.with(handle, |cell| cell.load(Ordering::Relaxed)), Some(i as i64));
        }
        registry.destroy(handles[100]).unwrap();
        let (again, _) = registry.create(-5).unwrap();
        assert_eq!((again - SIGNAL_HANDLE_BASE) & ((1 << SLOT_BITS) - 1), 100);
        assert_ne!(again, handles[100]);
    }

    #[test]
    fn a_change_with_nobody_asleep_takes_no_lock() {
        let cell = SignalCell::new(1);
        // Held by this thread: a store or add that took it would never return.
        let held = lock(&cell.lock);
        cell.store(0, Ordering::Release);
        assert_eq!(cell.add(-1, Ordering::AcqRel), -1);
        drop(held);
        assert_eq!(cell.load(Ordering::Acquire), -1);
    }

    #[test]
    fn no_wake_up_is_lost_between_two_threads_playing_ping_pong() {
        // Each side waits with no deadline for the other's store. A lost wake-up leaves a side
        // asleep until its slice ends (WAIT_SLICE_MAX), so a race that loses them shows as
        // rounds that take slices; 1,000 rounds without one take a small fraction of 40 slices.
        const ROUNDS: i64 = 1_000;
        let ping = Arc::new(SignalCell::new(0));
        let pong = Arc::new(SignalCell::new(0));
        let (ping2, pong2) = (Arc::clone(&ping), Arc::clone(&pong));
        let start = Instant::now();
        let other = std::thread::spawn(move || {
            for round in 1..=ROUNDS {
                ping2.wait_until(None, |v| v == round);
                pong2.store(round, Ordering::Release);
            }
        });
        for round in 1..=ROUNDS {
            ping.store(round, Ordering::Release);
            pong.wait_until(None, |v| v == round);
        }
        other.join().unwrap();
        let took = start.elapsed();
        assert!(took < WAIT_SLICE_MAX * 40, "{ROUNDS} rounds took {took:?}: wake-ups were lost");
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
