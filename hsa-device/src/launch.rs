//! The ordinary launch path of the HSA backend: asynchronous, in-order launches as a HIP stream
//! makes them.
//!
//! One queue of [`LaunchPath::QUEUE_SLOTS`] slots, one kernarg ring of
//! [`LaunchPath::KERNARG_RING_BYTES`] in the kernarg pool (slots aligned to
//! [`LaunchPath::KERNARG_SLOT_ALIGN`]) and one completion signal that counts the launches not
//! completed: it is incremented before each packet is published and every packet decrements it.
//! A launch copies its kernarg segment into a fresh slot of the ring, publishes one
//! KERNEL_DISPATCH packet with the barrier bit and system-scope acquire and release, rings the
//! doorbell and returns. Kernarg bytes and ring slots are reused only after the launches that used
//! them completed, and only those are waited for.

use std::collections::VecDeque;
use std::time::Duration;

use aql_packets::{KernelDispatch, SignalCondition};
use hal::{BackendError, LaunchError, QueueError};
use hsa_sys::Agent;

use super::queue::{self, HsaQueue, WaitEnd};
use crate::ffi::{HostBlock, Runtime, Signal, SystemPool};

/// Kernarg bytes of one launch, in flight.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    /// The launch's sequence number (1 for the first launch of the path).
    seq: u64,
    /// Its kernarg bytes `[start, end)` in the ring.
    start: u64,
    end: u64,
}

/// The queue, completion signal and kernarg ring of the ordinary path.
#[derive(Debug)]
pub(super) struct LaunchPath {
    queue: HsaQueue,
    /// Launches published and not completed.
    signal: Signal,
    /// KERNARG_RING_BYTES of kernarg-pool memory, freed only by `destroy`.
    ring: HostBlock,
    /// Offset of the next free ring byte.
    cursor: u64,
    /// Launches published (the sequence number of the last one).
    published: u64,
    /// Kernarg ranges of launches that may not have completed, oldest first.
    in_flight: VecDeque<InFlight>,
    /// The last launch a host wait covered: launches up to it were waited for.
    waited_through: u64,
    /// Host waits that covered a launch no earlier wait had: [`hal::DeviceStats::waits`].
    waits: u64,
}

impl LaunchPath {
    /// Slots of the launch queue.
    pub(super) const QUEUE_SLOTS: u32 = 4096;
    /// Bytes of the kernarg ring.
    pub(super) const KERNARG_RING_BYTES: u64 = 4 << 20;
    /// Alignment of every kernarg slot (HIP aligns segments to at least 16 bytes).
    pub(super) const KERNARG_SLOT_ALIGN: u64 = 64;
    /// Kernarg bytes of one launch at most.
    pub(super) const KERNARG_BYTES_MAX: usize = 64 * 1024;
    /// A wait for launches gives up when none of them completed for this long.
    pub(super) const STALL_TIMEOUT: Duration = Duration::from_secs(30);

    /// Creates the queue, the signal and the ring.
    pub(super) fn create(runtime: &Runtime, agent: Agent, kernarg_pool: SystemPool) -> Result<Self, BackendError> {
        let queue = HsaQueue::create(runtime, agent, Self::QUEUE_SLOTS)?;
        let signal = match Signal::create(runtime, 0) {
            Ok(signal) => signal,
            Err(error) => {
                queue.destroy();
                return Err(error);
            }
        };
        match HostBlock::allocate(runtime, kernarg_pool, Self::KERNARG_RING_BYTES, agent) {
            Ok(ring) => {
                let (cursor, published, in_flight) = (0, 0, VecDeque::new());
                Ok(Self { queue, signal, ring, cursor, published, in_flight, waited_through: 0, waits: 0 })
            }
            Err(error) => {
                queue.destroy();
                // Created above, named by no packet.
                let _ = signal.destroy();
                Err(error)
            }
        }
    }

    /// Inactivates and destroys the queue, then frees the signal and the ring (the queue that
    /// could name the signal and read the ring is gone first).
    pub(super) fn destroy(mut self) {
        self.queue.inactivate();
        self.queue.destroy();
        let _ = self.signal.destroy();
        let _ = self.ring.free();
    }

    /// The launch queue's fault, as a launch error.
    pub(super) fn fault(&mut self) -> Option<LaunchError> {
        self.queue.fault().map(|fault| LaunchError::Queue(Box::new(fault)))
    }

    /// Launches published and not completed.
    fn outstanding(&self) -> u64 {
        u64::try_from(self.signal.load_acquire()).unwrap_or(0)
    }

    /// Host waits that covered a launch no earlier wait had, over this path's life: whatever
    /// made the host wait (the end of a forward, a full ring, kernarg bytes still in use), since
    /// every wait of the path is [`Self::wait_completed`].
    pub(super) fn waits(&self) -> u64 {
        self.waits
    }

    /// Waits until launch `seq` (and every earlier one) completed. The wait ends at a fault of the
    /// queue, or when no launch completed for [`Self::STALL_TIMEOUT`]. Counted in
    /// [`Self::waits`] when it covers a launch no earlier wait did (whether or not the launch had
    /// completed already, so that the count does not depend on the GPU's timing).
    pub(super) fn wait_completed(&mut self, timestamp_hz: u64, seq: u64) -> Result<(), LaunchError> {
        // Completed launches = published - outstanding >= seq  <=>  outstanding < published - seq + 1.
        let Some(bound) = self.published.checked_sub(seq).map(|n| n + 1) else { return Ok(()) };
        if seq > self.waited_through {
            self.waited_through = seq;
            self.waits += 1;
        }
        let compare = i64::try_from(bound).unwrap_or(i64::MAX);
        let (signal, path_queue) = (&self.signal, &mut self.queue);
        let mut last = i64::MAX;
        loop {
            // TIMEOUT: each wait is bounded; it is repeated only while launches keep completing,
            // so a hung dispatch ends it after STALL_TIMEOUT without progress.
            let condition = (SignalCondition::Lt, compare);
            match queue::wait(signal, condition, Self::STALL_TIMEOUT, timestamp_hz, || path_queue.fault()) {
                Ok(_) => return Ok(()),
                Err(WaitEnd::Stopped(fault)) => return Err(LaunchError::Queue(Box::new(fault))),
                Err(WaitEnd::Timeout(value)) if value < last => last = value,
                Err(WaitEnd::Timeout(_)) => {
                    let timeout = Self::STALL_TIMEOUT;
                    return Err(BackendError::Timeout { call: "ordinary launch completion", timeout }.into());
                }
            }
        }
    }

    /// Waits until every launch completed.
    pub(super) fn wait_all(&mut self, timestamp_hz: u64) -> Result<(), LaunchError> {
        self.wait_completed(timestamp_hz, self.published)?;
        self.in_flight.clear();
        Ok(())
    }

    /// Forgets the kernarg ranges of launches that completed.
    fn prune(&mut self) {
        let completed = self.published.saturating_sub(self.outstanding());
        while self.in_flight.front().is_some_and(|launch| launch.seq <= completed) {
            self.in_flight.pop_front();
        }
    }

    /// A ring offset for `size` kernarg bytes, after the launches that used them completed.
    fn reserve(&mut self, timestamp_hz: u64, size: u64) -> Result<u64, LaunchError> {
        let mut start = self.cursor.next_multiple_of(Self::KERNARG_SLOT_ALIGN);
        if start + size > Self::KERNARG_RING_BYTES {
            start = 0;
        }
        let end = start + size;
        let needed = self.in_flight.iter().filter(|l| l.start < end && start < l.end).map(|l| l.seq).max();
        if let Some(seq) = needed {
            self.wait_completed(timestamp_hz, seq)?;
            self.prune();
        }
        self.cursor = end;
        Ok(start)
    }

    /// Publishes one launch: `dispatch` (checked, with its kernarg address to be filled) with the
    /// kernarg bytes `kernarg`, then rings the doorbell. Does not wait for anything but the reuse
    /// of a ring slot or kernarg bytes.
    ///
    /// # Errors
    /// The launch queue's fault or a stalled wait; the path is unusable afterwards.
    pub(super) fn publish(
        &mut self,
        timestamp_hz: u64,
        mut dispatch: KernelDispatch,
        kernarg: &[u8],
    ) -> Result<(), LaunchError> {
        assert!(kernarg.len() <= Self::KERNARG_BYTES_MAX, "kernarg segment checked against the limit");
        self.prune();
        // The packet with id `published` reuses the slot of packet `published - QUEUE_SLOTS`,
        // which is launch `published - QUEUE_SLOTS + 1`.
        if let Some(seq) = (self.published + 1).checked_sub(u64::from(Self::QUEUE_SLOTS)) {
            self.wait_completed(timestamp_hz, seq)?;
        }
        // CAST: at most KERNARG_BYTES_MAX, lossless.
        let offset = self.reserve(timestamp_hz, kernarg.len() as u64)?;
        // `reserve` placed `kernarg.len()` bytes inside the ring, and the launches that read them
        // before have completed, so nothing reads them now.
        self.ring.write(offset, kernarg);
        dispatch.kernarg_address = self.ring.va() + offset;
        dispatch.completion_signal = self.signal.handle();
        let packet = dispatch.emit();
        // ORDERING: the increment precedes the packet's release store of its header, so the
        // packet processor's decrement never reaches the signal first.
        self.signal.add_relaxed(1);
        let published = self
            .queue
            .write_packet(packet.as_array(), Self::QUEUE_SLOTS)
            .and_then(|_| self.queue.ring_doorbell().map(drop));
        if let Err(error) = published {
            // Nothing was published that would decrement it.
            self.signal.subtract_relaxed(1);
            return Err(queue_launch_error(error));
        }
        self.published += 1;
        // CAST: at most KERNARG_BYTES_MAX, lossless.
        let end = offset + kernarg.len() as u64;
        self.in_flight.push_back(InFlight { seq: self.published, start: offset, end });
        Ok(())
    }
}

/// A queue error of the launch path as a launch error.
fn queue_launch_error(error: QueueError) -> LaunchError {
    match error {
        QueueError::Fault(fault) => LaunchError::Queue(Box::new(fault)),
        QueueError::Backend(backend) => LaunchError::Backend(backend),
        other => LaunchError::Backend(BackendError::Unsupported {
            backend: "HSA",
            operation: if matches!(other, QueueError::Full { .. }) { "a launch into a full queue" } else { "launch" },
        }),
    }
}

const _: () = assert!(LaunchPath::KERNARG_RING_BYTES.is_multiple_of(LaunchPath::KERNARG_SLOT_ALIGN));
