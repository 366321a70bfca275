//! AMD PM4 command packets for compute on gfx10.3, gfx11 and gfx12.
//!
//! - [`header`]: type-3 header encode/decode; type 0/1/2 recognition.
//! - [`opcode`]: `IT_OPCODE` values, with [`Opcode::Unknown`] for codes not named here.
//! - [`packet`]: one module per packet, each a validated `Repr` with `parse`, `buffer_len`, `emit`.
//! - [`regs`]: per-family register maps and typed register words.
//! - [`Writer`]: emits into caller storage with a capacity error, never a panic.
//! - [`Decoder`]: walks any `&[u32]` into typed packets or typed errors; never panics, always ends.
//! - [`disasm`]: the field [`disasm::Visitor`] every packet reports to.
//!
//! Every offset, opcode and field position comes from the project's reference table
//! (`reference/amd-reference.md`), vendored as test data and checked by the tests.
//! The crate is `no_std`, allocation-free and free of `unsafe`.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod bits;
pub mod decoder;
pub mod disasm;
pub mod family;
pub mod header;
pub mod opcode;
pub mod packet;
pub mod regs;
pub mod writer;

pub use decoder::{DecodeError, Decoded, Decoder};
pub use family::{Family, Target, UnknownTarget};
pub use header::{Header, HeaderError, HeaderFlags, ShaderType, Type3Header};
pub use opcode::Opcode;
pub use packet::{Emit, Packet, PacketError};
pub use writer::{CapacityError, Writer};
