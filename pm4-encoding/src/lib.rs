//! AMD PM4 command packets for compute on gfx10.3, gfx11 and gfx12.
//!
//! - [`header`]: type-3 header encode/decode; type 0/1/2 recognition.
//! - [`opcode`]: `IT_OPCODE` values, with [`Opcode::Unknown`] for codes not named here.
//! - [`packet`]: one module per packet, each a validated `Repr` with `parse`, `buffer_len`, `emit`.
//! - [`family`]: the family table ([`FamilyFacts`], one row per family) and the target table
//!   ([`family::TARGETS`]): the only `match` on a family or target in the workspace.
//! - [`regs`]: per-family register maps and typed register words.
//!   Control words such as `DISPATCH_INITIATOR` and `GCR_CNTL` are typed bit-field words (one
//!   getter and `with_` builder per field, a named field table the disassembler and the family
//!   maps share), not `bitflags` sets: they mix one-bit flags with multi-bit enumerated fields,
//!   and family-only bits stay in the raw word.
//!   The encoders hold no collection of their own (a packet is written into the caller's
//!   buffer), so there is no bounded list for `heapless` to type.
//! - [`policy`]: per-family command policy (consumer and system acquire `GCR_CNTL` bits, dispatch
//!   dimension semantics), read from the family modules.
//! - [`Writer`]: emits into caller storage with a capacity error, never a panic.
//! - [`Decoder`]: walks any `&[u32]` into typed packets or typed errors; never panics, always ends.
//! - [`disasm`]: the field [`disasm::Visitor`] every packet reports to.
//!
//! Every offset, opcode and field position comes from the project's reference table
//! (`reference/amd-reference.md` at the repository's top level, with its machine-readable twin
//! `reference/amd-reference.json`) and is checked by the tests.
//! The crate is `no_std`, allocation-free and free of `unsafe`.
//!
//! ```
//! use pm4_encoding::packet::{DispatchDirect, DispatchInitiator, Packet, SetShReg};
//! use pm4_encoding::regs::gfx12;
//! use pm4_encoding::{Decoder, Writer};
//!
//! // Program address (entry >> 8, entry >> 40) and one wave32 dispatch of 4 x 1 x 1 work-groups.
//! let entry: u64 = 0x7f00_0012_3400;
//! let pgm = [(entry >> 8) as u32, (entry >> 40) as u32];
//! let mut buf = [0u32; 16];
//! let mut w = Writer::new(&mut buf);
//! w.emit(&SetShReg::new(gfx12::COMPUTE_PGM_LO.dword, &pgm)?)?;
//! w.emit(&DispatchDirect::new(4, 1, 1, DispatchInitiator::typical(true)))?;
//! let len = w.finish();
//! assert_eq!(&buf[..len], &[0xC002_7600, 0x20C, 0x1234, 0x7F, 0xC003_1502, 4, 1, 1, 0x8045]);
//!
//! let packets: Vec<_> = Decoder::new(&buf[..len]).collect::<Result<_, _>>()?;
//! assert!(matches!(packets[1].packet, Packet::DispatchDirect(d) if d.dim_x == 4));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
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
pub mod policy;
pub mod regs;
pub mod writer;

pub use decoder::{DecodeError, Decoded, Decoder};
pub use family::{Family, FamilyFacts, Target, TargetFacts, UnknownTarget};
pub use header::{Header, HeaderError, HeaderFlags, ShaderType, Type3Header};
pub use opcode::Opcode;
pub use packet::{Emit, Packet, PacketError};
pub use writer::{CapacityError, Writer};
