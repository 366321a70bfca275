//! AQL queues of the HSA backend: a runtime queue ([`crate::ffi::Queue`]) with its recorded
//! fault as the HAL reports it, packet publication, the doorbell, progress, and bounded signal
//! waits.

use std::time::{Duration, Instant};

use aql_packets::PACKET_SIZE;
use hsa_sys::{Agent, SignalCondition};

use super::discover::runtime_status;
use crate::ffi::{self, QueueFull, Runtime, Signal};
use hal::{BackendError, QueueError, QueueFault, QueueProgress};

/// A runtime queue and whether it was inactivated.
#[derive(Debug)]
pub(super) struct HsaQueue {
    raw: ffi::Queue,
    inactive: bool,
}

impl HsaQueue {
    /// `hsa_queue_create` of `slots` packets, single producer, with the fault callback.
    pub(super) fn create(runtime: &Runtime, agent: Agent, slots: u32) -> Result<Self, BackendError> {
        Ok(Self { raw: ffi::Queue::create(runtime, agent, slots)?, inactive: false })
    }

    /// The `hsa_queue_t` address (the object of a queue injection).
    pub(super) fn address(&self) -> u64 {
        self.raw.address()
    }

    /// The fault the callback recorded, if any; the queue is inactivated the first time it is
    /// seen.
    pub(super) fn fault(&mut self) -> Option<QueueFault> {
        let status = self.raw.fault()?;
        self.inactivate();
        Some(QueueFault::Runtime { queue_id: self.raw.id(), status: runtime_status(status) })
    }

    /// The recorded fault as an error.
    pub(super) fn check_fault(&mut self) -> Result<(), QueueFault> {
        self.fault().map_or(Ok(()), Err)
    }

    /// `hsa_queue_inactivate`, once; a failure is ignored because the queue is unusable either way.
    pub(super) fn inactivate(&mut self) {
        if !self.inactive {
            self.raw.inactivate();
            self.inactive = true;
        }
    }

    /// The write index (relaxed: this device is the only producer) and the read index (acquire).
    pub(super) fn progress(&self) -> QueueProgress {
        QueueProgress { read_index: self.raw.load_read_index(), write_index: self.raw.load_write_index() }
    }

    /// Reserves the next slot and publishes `packet` into it (see [`ffi::Queue::write_packet`]);
    /// `slots` is the ring size the caller asked for. Returns the packet id.
    pub(super) fn write_packet(&mut self, packet: &[u8; PACKET_SIZE], slots: u32) -> Result<u64, QueueError> {
        self.check_fault()?;
        self.raw.write_packet(packet, slots).map_err(|QueueFull { write_index, read_index }| QueueError::Full {
            write_index,
            read_index,
            slots,
        })
    }

    /// Rings the doorbell with the id of the last packet written (nothing when none was).
    /// Returns the write index.
    pub(super) fn ring_doorbell(&mut self) -> Result<u64, QueueError> {
        self.check_fault()?;
        let write_index = self.raw.write_index();
        let Some(last) = write_index.checked_sub(1) else { return Ok(0) };
        // CAST: packet ids stay far below i64::MAX (2^63 packets).
        self.raw.ring_doorbell(i64::try_from(last).unwrap_or(i64::MAX));
        Ok(write_index)
    }

    /// `hsa_queue_destroy`; never waits for packets.
    pub(super) fn destroy(self) {
        self.raw.destroy();
    }
}

/// The HSA condition for an AQL one.
pub(super) fn hsa_condition(condition: aql_packets::SignalCondition) -> SignalCondition {
    SignalCondition(condition.to_u32())
}

/// The slice of one runtime wait: short enough to check the wall clock and faults often.
pub const WAIT_SLICE: Duration = Duration::from_millis(1);

/// Why [`wait`] returned without the condition holding.
#[derive(Debug)]
pub(super) enum WaitEnd<E> {
    /// The deadline passed; the last value read.
    Timeout(i64),
    /// `stop` returned an error.
    Stopped(E),
}

/// Waits until `value condition compare` holds, at most `timeout` of wall clock; after every
/// slice `stop` may end the wait with an error (a queue fault). Returns the value that satisfied
/// the condition.
pub(super) fn wait<E>(
    signal: &Signal,
    (condition, compare): (aql_packets::SignalCondition, i64),
    timeout: Duration,
    timestamp_hz: u64,
    mut stop: impl FnMut() -> Option<E>,
) -> Result<i64, WaitEnd<E>> {
    let slice_us = u64::try_from(WAIT_SLICE.as_micros()).unwrap_or(u64::MAX);
    let slice_ticks = timestamp_hz.saturating_mul(slice_us) / 1_000_000;
    let deadline = Instant::now() + timeout;
    loop {
        let value = signal.wait_acquire(hsa_condition(condition), compare, slice_ticks.max(1));
        if hal::signal_condition_holds(value, condition, compare) {
            return Ok(value);
        }
        if let Some(error) = stop() {
            return Err(WaitEnd::Stopped(error));
        }
        // TIMEOUT: `hsa_signal_wait_scacquire` treats its timeout as a hint and may return early
        // or late, so the bound is the wall clock, checked after every slice.
        if Instant::now() >= deadline {
            return Err(WaitEnd::Timeout(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_values() {
        assert_eq!(hsa_condition(aql_packets::SignalCondition::Eq), SignalCondition::EQ);
        assert_eq!(hsa_condition(aql_packets::SignalCondition::Gte), SignalCondition::GTE);
    }
}
