//! AQL queues of the HSA backend: creation with a fault-recording error callback, packet
//! publication into the runtime's ring, the doorbell, progress, and bounded signal waits.

use core::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use aql_packets::ring::BODY_SIZE;
use aql_packets::{PACKET_SIZE, PacketSlot};
use hsa_sys::{Agent, Hsa, HsaStatus, Queue, QueueType, Signal, SignalCondition, WaitState};

use super::discover::{check, runtime_status};
use hal::{BackendError, QueueError, QueueFault, QueueProgress};

/// Records the first status the runtime reports for a queue. ROCr calls this on one of its own
/// threads, so the slot is an atomic that lives (boxed, at a fixed address) until the queue is
/// destroyed.
unsafe extern "C" fn on_queue_error(status: HsaStatus, _source: *mut Queue, data: *mut c_void) {
    // SAFETY: `data` is the `AtomicU32` boxed in the `HsaQueue` that owns the queue; the box is
    // dropped only after `hsa_queue_destroy` returned, after which the runtime no longer calls.
    let slot = unsafe { &*data.cast::<AtomicU32>() };
    // Keep the first fault; later ones are consequences. A status of 0 (success) would read as
    // "no fault", so it is recorded as the generic error.
    let status = if status.is_success() { HsaStatus::ERROR.0 } else { status.0 };
    // ORDERING: release, paired with the device's acquire load of the slot in `HsaQueue::fault`.
    let _ = slot.compare_exchange(0, status, Ordering::AcqRel, Ordering::Acquire);
}

/// A runtime queue and its recorded fault.
#[derive(Debug)]
pub(super) struct HsaQueue {
    // INVARIANT: a queue `hsa_queue_create` returned and that is not destroyed yet.
    raw: *mut Queue,
    // INVARIANT: outlives `raw` (see `on_queue_error`); 0 means no fault.
    fault: Box<AtomicU32>,
    inactive: bool,
    // INVARIANT: the queue's write index. The queue is single-producer and this is its producer,
    // so every change of the index is one this value follows.
    write_index: u64,
    /// A read index the runtime reported: a lower bound of the current one (it only grows), so
    /// the ring is reloaded only when this one says it is full.
    read_index_seen: u64,
}

impl HsaQueue {
    /// `hsa_queue_create` of `slots` packets, single producer, with the fault callback.
    pub(super) fn create(hsa: &Hsa, agent: Agent, slots: u32) -> Result<Self, BackendError> {
        let fault = Box::new(AtomicU32::new(0));
        let mut raw: *mut Queue = core::ptr::null_mut();
        let data: *const AtomicU32 = &raw const *fault;
        // SAFETY: `raw` is a valid out-pointer; `data` points at the boxed slot, which the
        // returned `HsaQueue` keeps until after `hsa_queue_destroy`; `u32::MAX` means "unknown"
        // for both segment sizes (hsa.h).
        let status = unsafe {
            (hsa.fns().hsa_queue_create)(
                agent,
                slots,
                QueueType::SINGLE.0,
                Some(on_queue_error),
                data.cast_mut().cast(),
                u32::MAX,
                u32::MAX,
                &raw mut raw,
            )
        };
        check("hsa_queue_create", status)?;
        if raw.is_null() {
            return Err(BackendError::Call { call: "hsa_queue_create", status: runtime_status(HsaStatus::ERROR) });
        }
        let mut queue = Self { raw, fault, inactive: false, write_index: 0, read_index_seen: 0 };
        let QueueProgress { read_index, write_index } = queue.progress(hsa);
        (queue.write_index, queue.read_index_seen) = (write_index, read_index);
        Ok(queue)
    }

    fn header(&self) -> &Queue {
        // SAFETY: INVARIANT of `raw`: the runtime keeps the `hsa_queue_t` alive until destroy;
        // its fields read here (`base_address`, `size`, `doorbell_signal`, `id`) never change.
        unsafe { &*self.raw }
    }

    /// The runtime's queue id.
    pub(super) fn id(&self) -> u64 {
        self.header().id
    }

    /// The `hsa_queue_t` address (the object of a queue injection).
    pub(super) fn address(&self) -> u64 {
        // CAST: a usize address is at most 64 bits on every supported host.
        self.raw.expose_provenance() as u64
    }

    /// Slots of the runtime's ring.
    pub(super) fn ring_slots(&self) -> u32 {
        self.header().size
    }

    /// The fault the callback recorded, if any; the queue is inactivated the first time it is
    /// seen.
    pub(super) fn fault(&mut self, hsa: &Hsa) -> Option<QueueFault> {
        let status = self.fault.load(Ordering::Acquire);
        if status == 0 {
            return None;
        }
        self.inactivate(hsa);
        Some(QueueFault::Runtime { queue_id: self.id(), status: runtime_status(HsaStatus(status)) })
    }

    /// The recorded fault as an error.
    pub(super) fn check_fault(&mut self, hsa: &Hsa) -> Result<(), QueueFault> {
        self.fault(hsa).map_or(Ok(()), Err)
    }

    /// `hsa_queue_inactivate`, once; a failure is ignored because the queue is unusable either way.
    pub(super) fn inactivate(&mut self, hsa: &Hsa) {
        if !self.inactive {
            // SAFETY: INVARIANT of `raw`.
            let _ = unsafe { (hsa.fns().hsa_queue_inactivate)(self.raw) };
            self.inactive = true;
        }
    }

    /// The write index (relaxed: this device is the only producer) and the read index (acquire).
    pub(super) fn progress(&self, hsa: &Hsa) -> QueueProgress {
        // SAFETY: INVARIANT of `raw`; the index loads have no other precondition.
        unsafe {
            QueueProgress {
                read_index: (hsa.fns().hsa_queue_load_read_index_scacquire)(self.raw),
                write_index: (hsa.fns().hsa_queue_load_write_index_relaxed)(self.raw),
            }
        }
    }

    /// Reserves the next slot and publishes `packet` into it: body first, then the header word
    /// in one release store (`aql_packets::publish`). `slots` is the ring size the caller asked
    /// for (at most the runtime's): the queue is full when that many packets are not taken yet.
    /// Returns the packet id. The runtime's read index is loaded only when the last one loaded
    /// says the ring is full.
    pub(super) fn write_packet(
        &mut self,
        hsa: &Hsa,
        packet: &[u8; PACKET_SIZE],
        slots: u32,
    ) -> Result<u64, QueueError> {
        self.check_fault(hsa)?;
        let capacity = u64::from(slots.min(self.ring_slots()));
        if self.write_index.wrapping_sub(self.read_index_seen) >= capacity {
            // SAFETY: INVARIANT of `raw`; the load has no other precondition.
            self.read_index_seen = unsafe { (hsa.fns().hsa_queue_load_read_index_scacquire)(self.raw) };
            if self.write_index.wrapping_sub(self.read_index_seen) >= capacity {
                let (write_index, read_index) = (self.write_index, self.read_index_seen);
                return Err(QueueError::Full { write_index, read_index, slots });
            }
        }
        // SAFETY: INVARIANT of `raw`. Single producer: this device is the only writer, so the
        // index reserved is the one checked above.
        let id = unsafe { (hsa.fns().hsa_queue_add_write_index_scacq_screl)(self.raw, 1) };
        self.write_index = id.wrapping_add(1);
        let slot_index = id % u64::from(self.ring_slots());
        // CAST: slot_index < size <= u32::MAX, and the ring is size * 64 bytes in memory.
        let offset = usize::try_from(slot_index).unwrap_or(usize::MAX) * PACKET_SIZE;
        // SAFETY: `base_address` is the 64-byte aligned ring of `size` packets (hsa.h), so the slot
        // at `offset` lies inside it; the reservation above makes it this producer's alone, and
        // the read index check means the processor has taken the packet that was there.
        let mut slot = unsafe { RingSlot::new(self.header().base_address.cast::<u8>().add(offset)) };
        aql_packets::publish(&mut slot, packet);
        Ok(id)
    }

    /// Rings the doorbell with the id of the last packet written (nothing when none was).
    /// Returns the write index.
    pub(super) fn ring_doorbell(&mut self, hsa: &Hsa) -> Result<u64, QueueError> {
        self.check_fault(hsa)?;
        let write_index = self.write_index;
        let Some(last) = write_index.checked_sub(1) else { return Ok(0) };
        // CAST: packet ids stay far below i64::MAX (2^63 packets).
        let value = i64::try_from(last).unwrap_or(i64::MAX);
        // ORDERING: every header word was stored with release before this; the doorbell store
        // is itself a release, so the packet processor woken by it sees the published packets.
        // SAFETY: the doorbell signal belongs to the live queue.
        unsafe { (hsa.fns().hsa_signal_store_screlease)(self.header().doorbell_signal, value) };
        Ok(write_index)
    }

    /// `hsa_queue_destroy`; never waits for packets.
    pub(super) fn destroy(self, hsa: &Hsa) {
        // SAFETY: INVARIANT of `raw`; `self` is consumed, so the queue is destroyed once, and the
        // fault slot is dropped only after the call returns.
        let _ = unsafe { (hsa.fns().hsa_queue_destroy)(self.raw) };
        drop(self.fault);
    }
}

/// One 64-byte slot of a runtime ring, written as [`aql_packets::publish`] orders it.
struct RingSlot {
    // INVARIANT: 64-byte aligned, 64 writable bytes, not read by the packet processor until its
    // header word is valid.
    ptr: *mut u8,
}

impl RingSlot {
    /// # Safety
    /// `ptr` must be a 64-byte aligned ring slot this producer has reserved.
    unsafe fn new(ptr: *mut u8) -> Self {
        Self { ptr }
    }
}

impl PacketSlot for RingSlot {
    fn write_body(&mut self, body: &[u8; BODY_SIZE]) {
        // SAFETY: INVARIANT of `ptr`: bytes 4..64 of the slot are writable and nobody reads them
        // before the header word below is stored.
        unsafe { core::ptr::copy_nonoverlapping(body.as_ptr(), self.ptr.add(PACKET_SIZE - BODY_SIZE), BODY_SIZE) };
    }

    fn store_header_word_release(&mut self, word: u32) {
        // SAFETY: the slot is 64-byte aligned, so its first 4 bytes are an aligned u32 that only
        // atomics touch from here on (the packet processor reads it atomically too).
        let header = unsafe { AtomicU32::from_ptr(self.ptr.cast::<u32>()) };
        // ORDERING: release, after the body: a processor that sees the valid TYPE sees the body.
        header.store(word, Ordering::Release);
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
    hsa: &Hsa,
    signal: Signal,
    (condition, compare): (aql_packets::SignalCondition, i64),
    timeout: Duration,
    timestamp_hz: u64,
    mut stop: impl FnMut() -> Option<E>,
) -> Result<i64, WaitEnd<E>> {
    let slice_us = u64::try_from(WAIT_SLICE.as_micros()).unwrap_or(u64::MAX);
    let slice_ticks = timestamp_hz.saturating_mul(slice_us) / 1_000_000;
    let deadline = Instant::now() + timeout;
    loop {
        // SAFETY: `signal` is a live signal of this device; the wait has no other precondition.
        let value = unsafe {
            (hsa.fns().hsa_signal_wait_scacquire)(
                signal,
                hsa_condition(condition),
                compare,
                slice_ticks.max(1),
                WaitState::BLOCKED,
            )
        };
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

    #[repr(C, align(64))]
    struct Aligned([u8; PACKET_SIZE]);

    #[test]
    fn ring_slots_receive_the_packet_body_and_header_word() {
        let mut ring = Aligned([0; PACKET_SIZE]);
        let packet: [u8; PACKET_SIZE] = core::array::from_fn(|i| u8::try_from(i).unwrap_or(0) + 1);
        // SAFETY: a 64-byte aligned, exclusively borrowed slot that no packet processor reads.
        let mut slot = unsafe { RingSlot::new(ring.0.as_mut_ptr()) };
        aql_packets::publish(&mut slot, &packet);
        assert_eq!(ring.0, packet);
    }

    #[test]
    fn conditions_keep_their_values() {
        assert_eq!(hsa_condition(aql_packets::SignalCondition::Eq), SignalCondition::EQ);
        assert_eq!(hsa_condition(aql_packets::SignalCondition::Gte), SignalCondition::GTE);
    }
}
