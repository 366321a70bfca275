//! Disassembly of AMD command streams for people: PM4 dword streams and 64-byte AQL packets,
//! one block of text or one JSON object per packet, with register names and fields from the
//! family's register map, read from files a window at a time.
//!
//! Why a crate of its own rather than a feature of `pm4-encoding`: rendering needs `std`
//! (strings, JSON, files), while `pm4-encoding` is `no_std` without an allocator by contract, so
//! that runtimes can encode into caller storage; and the AQL view shows the PM4 packet an AMD
//! PM4-IB packet carries, so it needs both `pm4-encoding` and `aql-packets`, and `aql-packets`
//! already depends on `pm4-encoding`. Both encoding crates stay as they are; this one reads them
//! through their decoders and `pm4_encoding::disasm::Visitor`.
//!
//! - [`input`]: a file's dwords, little-endian binary or hex text, read on demand.
//! - `model`: what a decoded packet says, independent of how it is printed; `render`: text
//!   blocks and JSON objects.
//! - [`stream`]: a whole stream, a window at a time; [`window`]: what the PM4 and the AQL
//!   decoding of a stream share.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod aql;
pub mod input;
mod model;
mod render;
pub mod stream;
pub mod window;

pub use model::Naming;
pub use stream::disassemble;
pub use window::{Ended, Form, WriteError};
