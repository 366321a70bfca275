//! Typed PM4 packets: one module per packet, each with a validated `Repr` (`parse`, `buffer_len`,
//! `emit`), and the [`Packet`] sum the decoder yields.

use crate::disasm::Visitor;
use crate::family::Family;
use crate::header::Type3Header;
use crate::opcode::Opcode;

pub mod indirect_buffer;

pub use indirect_buffer::IndirectBuffer;

/// Why a packet body is not a valid instance of its packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    /// The body length does not match the packet's layout.
    #[error("{opcode} body has {found} dwords, expected {expected}")]
    BodyLength {
        /// The packet.
        opcode: Opcode,
        /// What the layout needs (the minimum for variable-length packets).
        expected: usize,
        /// What the header announced.
        found: usize,
    },
    /// A register write that leaves the packet's register window.
    #[error("{opcode} writes dwords {first:#x}..{end:#x}, outside its window {window_start:#x}..{window_end:#x}")]
    RegisterOutsideWindow {
        /// The packet.
        opcode: Opcode,
        /// First absolute dword written.
        first: u32,
        /// One past the last absolute dword written.
        end: u32,
        /// Window start (absolute dword).
        window_start: u32,
        /// Window end (absolute dword, exclusive).
        window_end: u32,
    },
    /// A field holds a value the packet does not allow.
    #[error("{opcode} field {field} has invalid value {value:#x}")]
    FieldValue {
        /// The packet.
        opcode: Opcode,
        /// Hardware field name.
        field: &'static str,
        /// The offending value.
        value: u32,
    },
}

/// A packet that can be written into caller storage.
pub trait Emit {
    /// Total dwords (header included) that [`Emit::emit`] writes.
    fn buffer_len(&self) -> usize;

    /// Writes the packet into `out`.
    ///
    /// PANIC: asserts `out.len() == self.buffer_len()`; callers (the [`crate::Writer`]) check
    /// capacity first, so a mismatch is a programmer error.
    fn emit(&self, out: &mut [u32]);
}

/// A decoded packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet<'a> {
    /// `INDIRECT_BUFFER`.
    IndirectBuffer(IndirectBuffer),
    /// A type-3 packet this crate does not type; its body is kept raw.
    Other {
        /// The header.
        header: Type3Header,
        /// Body dwords.
        body: &'a [u32],
    },
    /// A type-0 packet: consecutive register writes from `base_reg` (absolute dword).
    Type0 {
        /// First register.
        base_reg: u16,
        /// Values.
        values: &'a [u32],
    },
    /// A type-2 one-dword filler.
    Type2,
}

/// Parses a type-3 body according to its opcode.
///
/// # Errors
/// [`PacketError`] when the body does not fit the opcode's layout.
pub fn parse(header: Type3Header, body: &[u32]) -> Result<Packet<'_>, PacketError> {
    Ok(match header.opcode {
        Opcode::IndirectBuffer => Packet::IndirectBuffer(IndirectBuffer::parse(header, body)?),
        _ => Packet::Other { header, body },
    })
}

impl Packet<'_> {
    /// The opcode, for type-3 packets.
    #[must_use]
    pub fn opcode(&self) -> Option<Opcode> {
        match self {
            Packet::IndirectBuffer(_) => Some(Opcode::IndirectBuffer),
            Packet::Other { header, .. } => Some(header.opcode),
            Packet::Type0 { .. } | Packet::Type2 => None,
        }
    }

    /// Reports every field to `v`, naming registers and family-specific bits from `family`'s map.
    pub fn visit(&self, family: Family, v: &mut dyn Visitor) {
        let _ = family;
        match *self {
            Packet::IndirectBuffer(ref p) => p.visit(v),
            Packet::Other { body, .. } => v.payload("BODY", body),
            Packet::Type0 { base_reg, values } => {
                for (reg, value) in (u32::from(base_reg)..).zip(values) {
                    v.register(reg, *value, crate::regs::lookup(family, reg));
                }
            }
            Packet::Type2 => {}
        }
    }
}

impl Emit for Packet<'_> {
    fn buffer_len(&self) -> usize {
        match self {
            Packet::IndirectBuffer(p) => p.buffer_len(),
            Packet::Other { body, .. } => 1 + body.len(),
            Packet::Type0 { values, .. } => 1 + values.len(),
            Packet::Type2 => 1,
        }
    }

    fn emit(&self, out: &mut [u32]) {
        assert_eq!(out.len(), self.buffer_len(), "output slice must match the packet length");
        match self {
            Packet::IndirectBuffer(p) => p.emit(out),
            Packet::Other { header, body } => {
                out[0] = header.encode();
                out[1..].copy_from_slice(body);
            }
            Packet::Type0 { base_reg, values } => {
                // Type-0 header: [29:16] COUNT = values - 1, [15:0] register (reference §4).
                let count = u32::try_from(values.len() - 1).expect("type-0 packet too long");
                out[0] = (count << 16) | u32::from(*base_reg);
                out[1..].copy_from_slice(values);
            }
            Packet::Type2 => out[0] = crate::header::TYPE2_FILLER,
        }
    }
}
