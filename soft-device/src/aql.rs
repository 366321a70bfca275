//! AQL queues of the soft device and their packet processor.
//!
//! A [`SimQueue`] is a power-of-two ring of 64-byte slots in sim device memory
//! ([`RegionKind::Ring`]), so packets reach it through the address space as they would through
//! mapped queue memory. The producer takes a write index and publishes a packet into its slot in
//! [`aql_packets::publish`] order ([`SimQueue::publish`]), then rings the doorbell with the write
//! index ([`SimQueue::ring_doorbell`]); [`SimQueue::process`] is the command processor: it runs
//! the packets from the read index up to the doorbell value, one at a time and in order.
//!
//! # Doorbell value
//! HSA producers store the id of the last packet they wrote into the doorbell signal, and the
//! command processor reads `write_dispatch_id` to know how far to go. The sim has no shared
//! `amd_queue_t`, so the doorbell value plays that role: it is one past the last packet the
//! producer released (the write index after publishing), and the processor runs every packet with
//! an id below it.
//!
//! # What the processor does per packet (see [`execute`])
//! The slot is decoded with [`aql_packets::decode()`]; anything it rejects is a [`QueueFault`]
//! (one variant per header case) that inactivates the queue. Then:
//! - KERNEL_DISPATCH runs through [`crate::exec::execute`] (see [`execute`] for the
//!   segment-size rules);
//! - BARRIER_AND / BARRIER_OR and the AMD barrier-value packet check their condition once: the
//!   sim runs nothing concurrently with the processor, so a condition that does not hold when the
//!   packet is reached can never become true and is a fault rather than a hang;
//! - the AMD PM4-IB packet calls the PM4 hook with `IB_BASE` and `IB_SIZE`;
//! - AGENT_DISPATCH is a fault (there is no agent).
//!
//! The barrier bit and fence scopes are validated by the decoder and recorded in the report; in
//! a processor that finishes every packet before starting the next, the barrier bit is always
//! honoured and every store is visible at system scope when a packet completes. Then the
//! completion signal (if any) is decremented by 1, the slot's header word is reset to
//! [`INVALID_HEADER_WORD`] and the read index advances.
//!
//! A slot that still reads `INVALID` below the doorbell is not ready: the processor stops there
//! (as the command processor waits on it) and reports it in [`ProcessReport::stalled_at`].

pub mod execute;

use aql_packets::{
    AmdFormat, AqlPacket, DecodeError, HeaderError, INVALID_HEADER_WORD, PACKET_SIZE, PacketControl, PacketSlot,
    PacketType, RingSize, SetupError,
};

use crate::exec::ExecutedDispatch;
use crate::loader::SoftKernels;
use crate::memory::{RegionKind, SimMemory};
use crate::signal::Signals;
use hal::MemoryFault;
use hal::{DeviceAllocation, FreeError, Pm4Error, QueueError, QueueFault};

/// The PM4 command processor as the packet processor calls it for a PM4-IB packet: sim memory,
/// the loaded code objects, `IB_BASE` (a VA) and `IB_SIZE` in dwords.
pub type Pm4Hook<'a> = dyn FnMut(&mut SimMemory, &SoftKernels, u64, u32) -> Result<(), Pm4Error> + 'a;

/// One completed packet, as the processor saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessedPacket {
    /// The packet's id (its write index).
    pub packet_id: u64,
    /// Its `TYPE`.
    pub packet_type: PacketType,
    /// The AMD format of a vendor packet.
    pub amd_format: Option<AmdFormat>,
    /// Barrier bit and fence scopes, as validated.
    pub control: PacketControl,
    /// The completion signal decremented (0 = none).
    pub completion_signal: u64,
}

/// What one [`SimQueue::process`] call did.
#[derive(Clone, Debug, Default)]
pub struct ProcessReport {
    /// Every completed packet, in order.
    pub packets: Vec<ProcessedPacket>,
    /// Every executed kernel dispatch, in order.
    pub dispatches: Vec<ExecutedDispatch>,
    /// The id of a slot below the doorbell that still read `INVALID`, where processing stopped.
    pub stalled_at: Option<u64>,
    /// When kept (`Some`), the kernel trace row of every executed kernel dispatch, in order,
    /// numbered 0 (the keeper numbers them).
    pub trace: Option<Vec<tape_core::census::trace::TraceRow>>,
    /// When set, where each such row goes instead, as soon as its dispatch has run and before
    /// the packet's completion signal is decremented (so a host that saw the signal sees the
    /// row): a runtime's process-wide trace.
    pub trace_sink: Option<fn(tape_core::census::trace::TraceRow)>,
}

/// One AQL queue: its ring in sim memory, indices, doorbell and fault state.
#[derive(Clone, Debug)]
pub struct SimQueue {
    ring: DeviceAllocation,
    size: RingSize,
    // INVARIANT: read_index <= doorbell <= write_index <= read_index + slots.
    write_index: u64,
    read_index: u64,
    doorbell: u64,
    fault: Option<QueueFault>,
    /// Whether [`SimQueue::process`] keeps the kernel trace rows of its dispatches.
    keep_trace: bool,
}

/// A ring slot in sim memory, written in [`aql_packets::publish`] order. The sim is single
/// threaded, so plain writes are the release store; a fault is kept for the caller.
struct MemorySlot<'a> {
    memory: &'a mut SimMemory,
    va: u64,
    fault: Option<MemoryFault>,
}

impl PacketSlot for MemorySlot<'_> {
    fn write_body(&mut self, body: &[u8; aql_packets::ring::BODY_SIZE]) {
        if let Err(f) = self.memory.write(self.va + HEADER_WORD_BYTES, body) {
            self.fault.get_or_insert(f);
        }
    }

    fn store_header_word_release(&mut self, word: u32) {
        // ORDERING: single-threaded sim; the processor only reads the slot after the doorbell.
        if let Err(f) = self.memory.write(self.va, &word.to_le_bytes()) {
            self.fault.get_or_insert(f);
        }
    }
}

/// Bytes of the header word (`aql_packets::ring::HEADER_WORD_SIZE`) as a VA offset.
const HEADER_WORD_BYTES: u64 = 4;

impl SimQueue {
    /// Ring slots at most (a 4 MiB ring).
    pub const RING_SLOTS_MAX: u32 = 1 << 16;

    /// A queue of `size` slots, all `INVALID`, with its ring allocated in `memory`.
    ///
    /// # Errors
    /// [`QueueError::RingTooLarge`] over [`Self::RING_SLOTS_MAX`], [`QueueError::Allocate`].
    pub fn new(memory: &mut SimMemory, size: RingSize) -> Result<Self, QueueError> {
        if size.slots() > Self::RING_SLOTS_MAX {
            return Err(QueueError::RingTooLarge { slots: size.slots(), limit: Self::RING_SLOTS_MAX });
        }
        let ring = memory.allocate_kind(size.byte_len(), SimMemory::GRANULE_BYTES, RegionKind::Ring)?;
        let queue = Self { ring, size, write_index: 0, read_index: 0, doorbell: 0, fault: None, keep_trace: false };
        for id in 0..u64::from(size.slots()) {
            memory.write(queue.slot_va(id), &INVALID_HEADER_WORD.to_le_bytes()).map_err(QueueError::RingMemory)?;
        }
        Ok(queue)
    }

    /// Frees the ring.
    ///
    /// # Errors
    /// [`FreeError::NotLive`] when the ring is no longer allocated (after a memory reset).
    pub fn release(self, memory: &mut SimMemory) -> Result<(), FreeError> {
        memory.free_kind(self.ring, RegionKind::Ring)
    }

    /// The ring's allocation.
    #[must_use]
    pub fn ring(&self) -> DeviceAllocation {
        self.ring
    }

    /// Slots of the ring.
    #[must_use]
    pub fn size(&self) -> RingSize {
        self.size
    }

    /// Id of the next packet to publish.
    #[must_use]
    pub fn write_index(&self) -> u64 {
        self.write_index
    }

    /// Id of the next packet to process.
    #[must_use]
    pub fn read_index(&self) -> u64 {
        self.read_index
    }

    /// The last doorbell value.
    #[must_use]
    pub fn doorbell(&self) -> u64 {
        self.doorbell
    }

    /// Whether the queue accepts and processes packets (no fault recorded).
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.fault.is_none()
    }

    /// The fault that inactivated the queue.
    #[must_use]
    pub fn fault(&self) -> Option<&QueueFault> {
        self.fault.as_ref()
    }

    /// VA of packet `packet_id`'s slot.
    #[must_use]
    pub fn slot_va(&self, packet_id: u64) -> u64 {
        self.ring.va + self.size.slot_byte_offset(packet_id)
    }

    /// Takes the next write index and publishes `packet` into its slot (body, then header
    /// word). Returns the packet id.
    ///
    /// # Errors
    /// [`QueueError::Fault`] on an inactive queue, [`QueueError::Full`] when no slot is free,
    /// [`QueueError::RingMemory`] when the ring is gone; nothing is published then.
    pub fn publish(&mut self, memory: &mut SimMemory, packet: &[u8; PACKET_SIZE]) -> Result<u64, QueueError> {
        if let Some(fault) = &self.fault {
            return Err(QueueError::Fault(fault.clone()));
        }
        let (write_index, read_index) = (self.write_index, self.read_index);
        if self.size.is_full(write_index, read_index) {
            return Err(QueueError::Full { write_index, read_index, slots: self.size.slots() });
        }
        let mut slot = MemorySlot { memory, va: self.slot_va(write_index), fault: None };
        aql_packets::publish(&mut slot, packet);
        if let Some(fault) = slot.fault {
            return Err(QueueError::RingMemory(fault));
        }
        self.write_index += 1;
        Ok(write_index)
    }

    /// Rings the doorbell: packets with ids below `write_index` are released to the processor.
    ///
    /// # Errors
    /// [`QueueError::Doorbell`] for a value below the previous one or above the write index.
    pub fn ring_doorbell(&mut self, write_index: u64) -> Result<(), QueueError> {
        if write_index < self.doorbell || write_index > self.write_index {
            return Err(QueueError::Doorbell {
                value: write_index,
                doorbell: self.doorbell,
                write_index: self.write_index,
            });
        }
        // ORDERING: the doorbell follows every header store it releases (single-threaded sim).
        self.doorbell = write_index;
        Ok(())
    }

    /// Whether [`SimQueue::process`] keeps a kernel trace row of every dispatch it executes in
    /// its report ([`ProcessReport::trace`]).
    pub fn set_keep_trace(&mut self, keep: bool) {
        self.keep_trace = keep;
    }

    /// Runs the packets from the read index up to the doorbell, in order.
    ///
    /// # Errors
    /// The fault that inactivated the queue: recorded now (the read index stays at the faulting
    /// packet, later packets do not run) or at an earlier call (nothing runs).
    pub fn process(
        &mut self,
        memory: &mut SimMemory,
        objects: &SoftKernels,
        signals: &mut Signals,
        pm4: &mut Pm4Hook<'_>,
    ) -> Result<ProcessReport, QueueFault> {
        if let Some(fault) = &self.fault {
            return Err(fault.clone());
        }
        let mut report = ProcessReport { trace: self.keep_trace.then(Vec::new), ..ProcessReport::default() };
        // Bounded: doorbell - read_index <= slots (invariant).
        while self.read_index < self.doorbell {
            let packet_id = self.read_index;
            let packet = match self.read_packet(memory, packet_id) {
                Ok(AqlPacket::Invalid) => {
                    report.stalled_at = Some(packet_id);
                    break;
                }
                Ok(packet) => packet,
                Err(fault) => return Err(self.inactivate(fault)),
            };
            // The soft device is agent 1 of its trace (agent 0 would be the host), its queue
            // named by its ring's VA.
            let site = crate::trace::TraceSite { agent: 1, queue_id: self.ring.va };
            if let Err(fault) = execute::packet(site, packet_id, &packet, memory, objects, signals, pm4, &mut report) {
                return Err(self.inactivate(fault));
            }
            let reset = memory.write(self.slot_va(packet_id), &INVALID_HEADER_WORD.to_le_bytes());
            if let Err(fault) = reset {
                return Err(self.inactivate(QueueFault::Ring { packet_id, fault }));
            }
            self.read_index += 1;
        }
        Ok(report)
    }

    /// Clears a recorded fault and drops every unprocessed packet (their slots become
    /// `INVALID`), returning the fault. The ordinary launch path uses this to keep its internal
    /// queue usable after a failed launch, which HIP reports per launch as well.
    pub(crate) fn recover(&mut self, memory: &mut SimMemory) -> Option<QueueFault> {
        for id in self.read_index..self.write_index {
            // A ring that is gone faults again at the next use.
            let _ = memory.write(self.slot_va(id), &INVALID_HEADER_WORD.to_le_bytes());
        }
        self.read_index = self.write_index;
        self.doorbell = self.write_index;
        self.fault.take()
    }

    fn read_packet(&self, memory: &SimMemory, packet_id: u64) -> Result<AqlPacket, QueueFault> {
        let mut bytes = [0u8; PACKET_SIZE];
        memory.read(self.slot_va(packet_id), &mut bytes).map_err(|fault| QueueFault::Ring { packet_id, fault })?;
        aql_packets::decode(&bytes).map_err(|e| decode_fault(packet_id, e))
    }

    /// Inactivates the queue with `fault` at its read index, as a packet fault would.
    pub(crate) fn inject_fault(&mut self) -> QueueFault {
        let packet_id = self.read_index;
        self.inactivate(crate::SoftFault::Injected.queue(packet_id))
    }

    fn inactivate(&mut self, fault: QueueFault) -> QueueFault {
        self.fault = Some(fault.clone());
        fault
    }
}

/// The queue fault for a slot the decoder rejects: the header and setup cases get their own
/// variants, the rest stays a [`QueueFault::InvalidPacket`]. Packet processors outside this crate
/// (the soft HSA runtime's) report their decoding failures with it too.
#[must_use]
pub fn decode_fault(packet_id: u64, error: DecodeError) -> QueueFault {
    match error {
        DecodeError::Header(HeaderError::UnknownPacketType { packet_type }) => {
            QueueFault::InvalidPacketType { packet_id, packet_type }
        }
        DecodeError::Header(HeaderError::InvalidFenceScope { field, value }) => {
            QueueFault::InvalidFenceScope { packet_id, field, value }
        }
        DecodeError::Header(HeaderError::ReservedBits { bits }) => QueueFault::ReservedHeaderBits { packet_id, bits },
        DecodeError::Setup(SetupError::InvalidDimensions { dimensions }) => {
            QueueFault::InvalidDimensions { packet_id, dimensions }
        }
        DecodeError::Setup(SetupError::ReservedBits { bits }) => QueueFault::ReservedSetupBits { packet_id, bits },
        DecodeError::UnsupportedAmdFormat { format } => {
            QueueFault::UnsupportedVendorFormat { packet_id, format: format.to_u8() }
        }
        source => QueueFault::InvalidPacket { packet_id, source },
    }
}
