//! Signals of the soft device: 64-bit signed values named by non-zero handles.
//!
//! A handle is what an AQL packet carries in `completion_signal` or `dep_signal` (0 there means
//! "no signal", so no signal has handle 0). Handles count up from 1 and are never reused within
//! one [`Signals`] table, so a packet naming a destroyed signal faults instead of reaching a newer
//! one. The packet processor decrements a packet's completion signal by 1 when the packet
//! completes, as the command processor does.

use std::collections::BTreeMap;
use std::num::NonZeroU64;

use hal::{SignalError, SignalHandle};

/// What the packet processor needs of a signal table: the value of a signal a packet names, and
/// the decrement of a completion signal. [`Signals`] is the soft device's own; a runtime built on
/// the soft device (the soft HSA runtime) implements it over signals it shares with its host
/// threads.
pub trait SignalTable {
    /// The value of the signal with raw handle `handle` (as a packet names it).
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when it is not live (0 included).
    fn load_raw(&self, handle: u64) -> Result<i64, SignalError>;

    /// Subtracts `amount` from the value of the signal with raw handle `handle`, wrapping as the
    /// hardware's atomic subtract does; returns the new value.
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when it is not live.
    fn subtract_raw(&mut self, handle: u64, amount: i64) -> Result<i64, SignalError>;
}

impl SignalTable for Signals {
    fn load_raw(&self, handle: u64) -> Result<i64, SignalError> {
        Signals::load_raw(self, handle)
    }

    fn subtract_raw(&mut self, handle: u64, amount: i64) -> Result<i64, SignalError> {
        Signals::subtract_raw(self, handle, amount)
    }
}

/// The live signals of one device.
#[derive(Clone, Debug)]
pub struct Signals {
    values: BTreeMap<u64, i64>,
    /// Raw handle of the next signal; only grows.
    next: NonZeroU64,
}

impl Default for Signals {
    fn default() -> Self {
        Self::new()
    }
}

impl Signals {
    /// Live signals at most (ROCr's own limit is memory; this bounds the sim's table).
    pub const SIGNALS_MAX: usize = 4096;

    /// No signals.
    #[must_use]
    pub fn new() -> Self {
        Self { values: BTreeMap::new(), next: NonZeroU64::MIN }
    }

    /// Creates a signal with value `initial`.
    ///
    /// # Errors
    /// [`SignalError::TooMany`] when [`Self::SIGNALS_MAX`] signals are live.
    pub fn create(&mut self, initial: i64) -> Result<SignalHandle, SignalError> {
        if self.values.len() >= Self::SIGNALS_MAX {
            return Err(SignalError::TooMany { limit: Self::SIGNALS_MAX });
        }
        let handle = self.next;
        // 2^64 creations are out of reach; saturating keeps the type total.
        self.next = handle.saturating_add(1);
        self.values.insert(handle.get(), initial);
        Ok(SignalHandle(handle))
    }

    /// Creates a signal with a given raw handle (an IB bundle names its completion signals by
    /// handle); later [`Signals::create`] handles stay above every handle used.
    ///
    /// # Errors
    /// [`SignalError::HandleInUse`] for 0 or a live handle, [`SignalError::TooMany`] at the limit.
    pub fn create_at(&mut self, handle: u64, initial: i64) -> Result<SignalHandle, SignalError> {
        if self.values.len() >= Self::SIGNALS_MAX {
            return Err(SignalError::TooMany { limit: Self::SIGNALS_MAX });
        }
        let Some(raw) = NonZeroU64::new(handle) else { return Err(SignalError::HandleInUse { handle }) };
        if self.values.contains_key(&handle) {
            return Err(SignalError::HandleInUse { handle });
        }
        self.values.insert(handle, initial);
        if raw >= self.next {
            self.next = raw.saturating_add(1);
        }
        Ok(SignalHandle(raw))
    }

    /// Destroys a signal.
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when it is not live.
    pub fn destroy(&mut self, signal: SignalHandle) -> Result<(), SignalError> {
        self.values.remove(&signal.get()).map(drop).ok_or(SignalError::Unknown { handle: signal.get() })
    }

    /// The value of the signal with raw handle `handle` (as a packet names it).
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when it is not live (0 included).
    pub fn load_raw(&self, handle: u64) -> Result<i64, SignalError> {
        self.values.get(&handle).copied().ok_or(SignalError::Unknown { handle })
    }

    /// The signal's value.
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when it is not live.
    pub fn load(&self, signal: SignalHandle) -> Result<i64, SignalError> {
        self.load_raw(signal.get())
    }

    /// Sets the signal's value.
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when it is not live.
    pub fn store(&mut self, signal: SignalHandle, value: i64) -> Result<(), SignalError> {
        *self.slot(signal.get())? = value;
        Ok(())
    }

    /// Subtracts `amount` from the value of the signal with raw handle `handle`, wrapping as the
    /// hardware's atomic subtract does; returns the new value.
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when it is not live.
    pub fn subtract_raw(&mut self, handle: u64, amount: i64) -> Result<i64, SignalError> {
        let value = self.slot(handle)?;
        *value = value.wrapping_sub(amount);
        Ok(*value)
    }

    /// Subtracts `amount` from the signal's value (wrapping); returns the new value.
    ///
    /// # Errors
    /// [`SignalError::Unknown`] when it is not live.
    pub fn subtract(&mut self, signal: SignalHandle, amount: i64) -> Result<i64, SignalError> {
        self.subtract_raw(signal.get(), amount)
    }

    /// Live signals.
    #[must_use]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no signal is live.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Destroys every signal; handles keep counting up (a handle from before is never live again).
    pub fn clear(&mut self) {
        self.values.clear();
    }

    fn slot(&mut self, handle: u64) -> Result<&mut i64, SignalError> {
        self.values.get_mut(&handle).ok_or(SignalError::Unknown { handle })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_start_at_one_and_are_not_reused() {
        let mut s = Signals::new();
        let a = s.create(5).unwrap();
        assert_eq!(a.get(), 1);
        s.destroy(a).unwrap();
        let b = s.create(0).unwrap();
        assert_eq!(b.get(), 2);
        assert_eq!(s.load(a), Err(SignalError::Unknown { handle: 1 }));
        assert_eq!(s.load_raw(0), Err(SignalError::Unknown { handle: 0 }));
        assert_eq!(s.destroy(a), Err(SignalError::Unknown { handle: 1 }));
    }

    #[test]
    fn store_subtract_wrap() {
        let mut s = Signals::new();
        let a = s.create(1).unwrap();
        assert_eq!(s.subtract(a, 1), Ok(0));
        s.store(a, i64::MIN).unwrap();
        assert_eq!(s.subtract(a, 1), Ok(i64::MAX));
        assert_eq!(s.load(a), Ok(i64::MAX));
    }

    #[test]
    fn bounded() {
        let mut s = Signals::new();
        for _ in 0..Signals::SIGNALS_MAX {
            s.create(0).unwrap();
        }
        assert_eq!(s.create(0), Err(SignalError::TooMany { limit: Signals::SIGNALS_MAX }));
        assert_eq!(s.len(), Signals::SIGNALS_MAX);
    }
}
