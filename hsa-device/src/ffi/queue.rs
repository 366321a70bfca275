//! Signals and AQL queues: creation, the fault callback, packet publication into the runtime's
//! ring, the doorbell and the indices.

use core::ffi::c_void;
use core::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use aql_packets::ring::BODY_SIZE;
use aql_packets::{PACKET_SIZE, PacketSlot};
use hal::BackendError;
use hsa_sys::{Agent, HsaStatus, QueueType, SignalCondition, WaitState};

use super::Runtime;
use crate::discover::{check, runtime_status};

/// An HSA signal this crate created.
#[derive(Debug)]
pub(crate) struct Signal {
    runtime: Runtime,
    // INVARIANT: a signal `hsa_signal_create` returned under `runtime`, destroyed only by
    // `destroy`, which consumes this value.
    raw: hsa_sys::Signal,
}

impl Signal {
    /// `hsa_signal_create` with `initial` and no consumer list.
    pub(crate) fn create(runtime: &Runtime, initial: i64) -> Result<Self, BackendError> {
        let mut raw = hsa_sys::Signal::default();
        // SAFETY: no consumers list (0, null); `raw` is a valid out-pointer.
        let status = unsafe { (runtime.hsa().fns().hsa_signal_create)(initial, 0, core::ptr::null(), &raw mut raw) };
        check("hsa_signal_create", status)?;
        Ok(Self { runtime: runtime.clone(), raw })
    }

    /// The raw handle, as packets name the signal.
    pub(crate) fn handle(&self) -> u64 {
        self.raw.handle
    }

    /// `hsa_signal_load_scacquire`.
    pub(crate) fn load_acquire(&self) -> i64 {
        // SAFETY: INVARIANT of `raw`: a live signal; the load has no other precondition.
        unsafe { (self.runtime.hsa().fns().hsa_signal_load_scacquire)(self.raw) }
    }

    /// `hsa_signal_store_relaxed`.
    pub(crate) fn store_relaxed(&self, value: i64) {
        // SAFETY: INVARIANT of `raw`: a live signal; the store has no other precondition.
        unsafe { (self.runtime.hsa().fns().hsa_signal_store_relaxed)(self.raw, value) }
    }

    /// `hsa_signal_add_relaxed`.
    pub(crate) fn add_relaxed(&self, value: i64) {
        // SAFETY: INVARIANT of `raw`: a live signal; the add has no other precondition.
        unsafe { (self.runtime.hsa().fns().hsa_signal_add_relaxed)(self.raw, value) }
    }

    /// `hsa_signal_subtract_relaxed`.
    pub(crate) fn subtract_relaxed(&self, value: i64) {
        // SAFETY: INVARIANT of `raw`: a live signal; the subtraction has no other precondition.
        unsafe { (self.runtime.hsa().fns().hsa_signal_subtract_relaxed)(self.raw, value) }
    }

    /// `hsa_signal_wait_scacquire` with a blocked wait state and `timeout_hint` timestamp ticks
    /// (a hint: the runtime may return early or late). Returns the value it observed.
    pub(crate) fn wait_acquire(&self, condition: SignalCondition, compare: i64, timeout_hint: u64) -> i64 {
        // SAFETY: INVARIANT of `raw`: a live signal; the wait has no other precondition.
        unsafe {
            (self.runtime.hsa().fns().hsa_signal_wait_scacquire)(
                self.raw,
                condition,
                compare,
                timeout_hint,
                WaitState::BLOCKED,
            )
        }
    }

    /// `hsa_signal_destroy`.
    pub(crate) fn destroy(self) -> Result<(), BackendError> {
        // SAFETY: INVARIANT of `raw`: a live signal of `runtime`; `self` is consumed, so it is
        // destroyed once and never used again by the host.
        check("hsa_signal_destroy", unsafe { (self.runtime.hsa().fns().hsa_signal_destroy)(self.raw) })
    }
}

/// Records the first status the runtime reports for a queue. ROCr calls this on one of its own
/// threads, so the slot is an atomic that lives (boxed, at a fixed address) until the queue is
/// destroyed.
///
/// # Safety
/// `data` must point at the `AtomicU32` of the live [`Queue`] the runtime reports for.
unsafe extern "C" fn on_queue_error(status: HsaStatus, _source: *mut hsa_sys::Queue, data: *mut c_void) {
    // SAFETY: `data` is the `AtomicU32` boxed in the `Queue` that owns the queue (given to
    // `hsa_queue_create` by `Queue::create`); the box is dropped only after `hsa_queue_destroy`
    // returned, after which the runtime no longer calls.
    let slot = unsafe { &*data.cast::<AtomicU32>() };
    // Keep the first fault; later ones are consequences. A status of 0 (success) would read as
    // "no fault", so it is recorded as the generic error.
    let status = if status.is_success() { HsaStatus::ERROR.0 } else { status.0 };
    // ORDERING: release, paired with the device's acquire load of the slot in `Queue::fault`.
    let _ = slot.compare_exchange(0, status, Ordering::AcqRel, Ordering::Acquire);
}

/// The ring was full: the write index and the read index that said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueFull {
    /// The write index.
    pub(crate) write_index: u64,
    /// The read index last loaded.
    pub(crate) read_index: u64,
}

/// A runtime queue this crate created (single producer: this value), with its recorded fault.
#[derive(Debug)]
pub(crate) struct Queue {
    runtime: Runtime,
    // INVARIANT: a queue `hsa_queue_create` returned under `runtime`, not destroyed yet (`destroy`
    // consumes this value).
    raw: NonNull<hsa_sys::Queue>,
    // INVARIANT: outlives `raw` (see `on_queue_error`); 0 means no fault.
    fault: Box<AtomicU32>,
    // INVARIANT: the queue's write index. The queue is single-producer and this value is its
    // producer, so every change of the index is one this value follows.
    write_index: u64,
    /// A read index the runtime reported: a lower bound of the current one (it only grows), so
    /// the ring is reloaded only when this one says it is full.
    read_index_seen: u64,
}

impl Queue {
    /// `hsa_queue_create` of `slots` packets, single producer, with the fault callback.
    pub(crate) fn create(runtime: &Runtime, agent: Agent, slots: u32) -> Result<Self, BackendError> {
        let fault = Box::new(AtomicU32::new(0));
        let mut raw: *mut hsa_sys::Queue = core::ptr::null_mut();
        let data: *const AtomicU32 = &raw const *fault;
        // SAFETY: `raw` is a valid out-pointer; `data` points at the boxed slot, which the
        // returned `Queue` keeps until after `hsa_queue_destroy`; `u32::MAX` means "unknown" for
        // both segment sizes (hsa.h).
        let status = unsafe {
            (runtime.hsa().fns().hsa_queue_create)(
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
        let raw = NonNull::new(raw)
            .ok_or(BackendError::Call { call: "hsa_queue_create", status: runtime_status(HsaStatus::ERROR) })?;
        let mut queue = Self { runtime: runtime.clone(), raw, fault, write_index: 0, read_index_seen: 0 };
        (queue.write_index, queue.read_index_seen) = (queue.load_write_index(), queue.load_read_index());
        Ok(queue)
    }

    fn header(&self) -> &hsa_sys::Queue {
        // SAFETY: INVARIANT of `raw`: the runtime keeps the `hsa_queue_t` alive until destroy; its
        // fields read here (`base_address`, `size`, `doorbell_signal`, `id`) never change.
        unsafe { self.raw.as_ref() }
    }

    /// The runtime's queue id.
    pub(crate) fn id(&self) -> u64 {
        self.header().id
    }

    /// The `hsa_queue_t` address (the object of a queue injection).
    pub(crate) fn address(&self) -> u64 {
        // CAST: a usize address is at most 64 bits on every supported host.
        self.raw.as_ptr().expose_provenance() as u64
    }

    /// Slots of the runtime's ring.
    pub(crate) fn ring_slots(&self) -> u32 {
        self.header().size
    }

    /// The first status the fault callback recorded, if any.
    pub(crate) fn fault(&self) -> Option<HsaStatus> {
        // ORDERING: acquire, paired with the callback's release.
        let status = self.fault.load(Ordering::Acquire);
        (status != 0).then_some(HsaStatus(status))
    }

    /// `hsa_queue_inactivate`; a failure is ignored because the queue is unusable either way.
    pub(crate) fn inactivate(&self) {
        // SAFETY: INVARIANT of `raw`: a live queue.
        let _ = unsafe { (self.runtime.hsa().fns().hsa_queue_inactivate)(self.raw.as_ptr()) };
    }

    /// `hsa_queue_load_read_index_scacquire`.
    pub(crate) fn load_read_index(&self) -> u64 {
        // SAFETY: INVARIANT of `raw`: a live queue; the load has no other precondition.
        unsafe { (self.runtime.hsa().fns().hsa_queue_load_read_index_scacquire)(self.raw.as_ptr()) }
    }

    /// `hsa_queue_load_write_index_relaxed` (relaxed: this value is the only producer).
    pub(crate) fn load_write_index(&self) -> u64 {
        // SAFETY: INVARIANT of `raw`: a live queue; the load has no other precondition.
        unsafe { (self.runtime.hsa().fns().hsa_queue_load_write_index_relaxed)(self.raw.as_ptr()) }
    }

    /// The write index as this producer last moved it.
    pub(crate) fn write_index(&self) -> u64 {
        self.write_index
    }

    /// `hsa_queue_add_write_index_scacq_screl` by one: reserves the next packet id.
    fn reserve(&mut self) -> u64 {
        // SAFETY: INVARIANT of `raw`: a live queue; the addition has no other precondition.
        let id = unsafe { (self.runtime.hsa().fns().hsa_queue_add_write_index_scacq_screl)(self.raw.as_ptr(), 1) };
        self.write_index = id.wrapping_add(1);
        id
    }

    /// Reserves the next slot and publishes `packet` into it: body first, then the header word
    /// in one release store (`aql_packets::publish`). `slots` is the ring size the caller asked
    /// for (at most the runtime's): the queue is full when that many packets are not taken yet.
    /// Returns the packet id. The runtime's read index is loaded only when the last one loaded
    /// says the ring is full.
    pub(crate) fn write_packet(&mut self, packet: &[u8; PACKET_SIZE], slots: u32) -> Result<u64, QueueFull> {
        let ring_slots = self.ring_slots();
        let capacity = u64::from(slots.min(ring_slots));
        if self.write_index.wrapping_sub(self.read_index_seen) >= capacity {
            self.read_index_seen = self.load_read_index();
            if self.write_index.wrapping_sub(self.read_index_seen) >= capacity {
                return Err(QueueFull { write_index: self.write_index, read_index: self.read_index_seen });
            }
        }
        // Single producer: this value is the only writer, so the id reserved is the one checked
        // above, and the processor has taken the packet that was in its slot.
        let id = self.reserve();
        let slot_index = id % u64::from(ring_slots);
        // CAST: slot_index < size <= u32::MAX, and the ring is size * 64 bytes in memory.
        let offset = usize::try_from(slot_index).unwrap_or(usize::MAX) * PACKET_SIZE;
        // SAFETY: `base_address` is the 64-byte aligned ring of `size` packets of the live queue
        // (hsa.h), so the slot at `offset` lies inside it; the reservation makes it this
        // producer's alone, and the read index check above means the processor has taken the
        // packet that was there.
        let mut slot = unsafe { RingSlot::new(self.header().base_address.cast::<u8>().add(offset)) };
        aql_packets::publish(&mut slot, packet);
        Ok(id)
    }

    /// Stores `value` (the id of the last packet written) to the queue's doorbell signal with
    /// release.
    pub(crate) fn ring_doorbell(&self, value: i64) {
        // ORDERING: every header word was stored with release before this; the doorbell store
        // is itself a release, so the packet processor woken by it sees the published packets.
        // SAFETY: the doorbell signal belongs to the live queue (INVARIANT of `raw`).
        unsafe { (self.runtime.hsa().fns().hsa_signal_store_screlease)(self.header().doorbell_signal, value) }
    }

    /// `hsa_queue_destroy`; never waits for packets.
    pub(crate) fn destroy(self) {
        // SAFETY: INVARIANT of `raw`; `self` is consumed, so the queue is destroyed once, and the
        // fault slot is dropped (with `self`) only after the call returns.
        let _ = unsafe { (self.runtime.hsa().fns().hsa_queue_destroy)(self.raw.as_ptr()) };
    }
}

/// One 64-byte slot of a runtime ring, written as [`aql_packets::publish`] orders it.
struct RingSlot {
    // INVARIANT: 64-byte aligned, 64 writable bytes reserved by this producer, not read by the
    // packet processor until its header word is valid.
    ptr: *mut u8,
}

impl RingSlot {
    /// # Safety
    /// `ptr` must be a 64-byte aligned ring slot this producer has reserved, which the packet
    /// processor does not read until its header word is valid.
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
}
