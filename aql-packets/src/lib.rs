//! HSA AQL packets and AMD vendor packets, as 64-byte zerocopy structs with typed views, a
//! decoder, ring arithmetic and the publication order.
//!
//! - [`header`]: the 16-bit AQL header, the kernel-dispatch `setup` field, packet types, fence
//!   scopes, AMD vendor formats and signal conditions.
//! - One module per packet family, each with the `#[repr(C)]` struct as it sits in a queue slot
//!   (little-endian field types, compile-time asserts of size, alignment and every offset), a
//!   typed value with public fields, and `new`/`parse` between them:
//!   [`kernel_dispatch`], [`barrier`] (AND and OR), [`agent_dispatch`], [`vendor`] (PM4-IB,
//!   barrier-value).
//! - [`decode()`]: any 64 bytes to an [`AqlPacket`] or a [`DecodeError`]; never panics.
//! - [`ring`]: [`RingSize`], slot indices and offsets, and [`publish`].
//! - [`amd_queue`]: offsets inside the shared `amd_queue_t` descriptor.
//!
//! Every offset and value comes from `reference/amd-reference.md` §5 (at the repository's top
//! level, with its machine-readable twin `reference/amd-reference.json`) and is checked by
//! `tests/reference.rs`.
//!
//! # Publication order
//!
//! A producer writes a packet into a ring slot that the packet processor (the GPU's command
//! processor) may be polling at the same moment. The packet processor treats a slot whose header
//! `TYPE` is `INVALID` as not ready and waits on it; the first time it sees any other type it
//! reads the whole packet. Hence:
//!
//! 1. The body (bytes 4..64) is written first, while the slot still says `INVALID`.
//! 2. The header becomes visible last, with release ordering, so every body byte is visible
//!    before a valid `TYPE` is.
//! 3. The header is written atomically, in one store: a torn header could show a valid `TYPE`
//!    with stale barrier or fence bits.
//! 4. The 16 bits after the header (`setup` for a kernel dispatch, the AMD format for vendor
//!    packets) share that 32-bit word and go in the same store; written earlier, they would be a
//!    body write into the word the packet processor is polling, written later they could be read
//!    stale.
//!
//! [`publish`] encodes that order once: it hands bytes 4..64 to [`PacketSlot::write_body`], then
//! the little-endian header word (header in bits `[15:0]`) to
//! [`PacketSlot::store_header_word_release`], which the caller implements as one 32-bit release
//! store. This crate has no atomics and no `unsafe`; the daemon implements [`PacketSlot`] over
//! mapped queue memory. Slots are reset with [`INVALID_HEADER_WORD`] before reuse.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

/// Size of every AQL packet and queue slot.
pub const PACKET_SIZE: usize = 64;

/// Inherent byte views shared by every 64-byte packet struct.
macro_rules! packet_bytes {
    ($ty:ident) => {
        impl $ty {
            /// Views 64 bytes (a queue slot, a snapshot) as this packet; every byte pattern is a
            /// value of the struct, validation happens in `parse`.
            #[must_use]
            pub fn from_array(bytes: &[u8; $crate::PACKET_SIZE]) -> &Self {
                zerocopy::transmute_ref!(bytes)
            }

            /// The packet's bytes, in slot order.
            #[must_use]
            pub fn as_array(&self) -> &[u8; $crate::PACKET_SIZE] {
                zerocopy::transmute_ref!(self)
            }

            /// The first 32-bit word (header in bits `[15:0]`), the word [`crate::publish`] stores
            /// last.
            #[must_use]
            pub fn header_word(&self) -> u32 {
                $crate::ring::split_for_publish(self.as_array()).1
            }
        }
    };
}
pub(crate) use packet_bytes;

pub mod agent_dispatch;
pub mod amd_queue;
pub mod barrier;
pub mod decode;
pub mod header;
pub mod kernel_dispatch;
pub mod ring;
pub mod vendor;

pub use agent_dispatch::{AgentDispatch, AgentDispatchPacket};
pub use barrier::{Barrier, BarrierAndPacket, BarrierOrPacket};
pub use decode::{AqlPacket, DecodeError, decode, decode_slice};
pub use header::{
    AmdFormat, Dimensions, FenceScope, Header, HeaderError, PacketControl, PacketType, SetupError, SignalCondition,
};
pub use kernel_dispatch::{KernelDispatch, KernelDispatchError, KernelDispatchPacket};
pub use ring::{INVALID_HEADER_WORD, PacketSlot, RingSize, RingSizeError, publish, split_for_publish};
pub use vendor::{AmdBarrierValue, AmdBarrierValuePacket, AmdPm4Ib, AmdPm4IbError, AmdPm4IbPacket, AmdVendorHeader};
