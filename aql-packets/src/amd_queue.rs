//! Byte offsets inside `amd_queue_t`, the 256-byte queue descriptor the packet processor and the
//! host share (reference §5 "amd_queue_t"; offsetof() against the HSA headers, x86-64).
//!
//! Only the fields a producer touches are named: the embedded `hsa_queue_t` fields that locate the
//! ring and the doorbell, the dispatch ids, and the inactive signal.

/// Size of `amd_queue_t`.
pub const SIZE: usize = 256;
/// Alignment of `amd_queue_t`.
pub const ALIGN: usize = 64;

/// `hsa_queue.base_address` (u64): the ring's first slot.
pub const HSA_QUEUE_BASE_ADDRESS: usize = 8;
/// `hsa_queue.doorbell_signal` (`hsa_signal_t`).
pub const HSA_QUEUE_DOORBELL_SIGNAL: usize = 16;
/// `hsa_queue.size` (u32): ring size in packets.
pub const HSA_QUEUE_SIZE: usize = 24;
/// `hsa_queue.id` (u64).
pub const HSA_QUEUE_ID: usize = 32;

/// `write_dispatch_id` (volatile u64): the next packet id a producer reserves.
pub const WRITE_DISPATCH_ID: usize = 56;
/// `read_dispatch_id` (volatile u64): the id of the packet the packet processor reads next.
pub const READ_DISPATCH_ID: usize = 128;
/// `queue_inactive_signal` (`hsa_signal_t`).
pub const QUEUE_INACTIVE_SIGNAL: usize = 192;
