//! Typed PM4 packets: one module per packet, each with a validated `Repr` (`parse`, `buffer_len`,
//! `emit`), and the [`Packet`] sum the decoder yields.

use crate::disasm::Visitor;
use crate::family::Family;
use crate::header::{HeaderFlags, ShaderType, Type3Header};
use crate::opcode::Opcode;

/// Declares the value enum of a packet field: one variant per value the reference table names,
/// plus `Unknown(raw)`, so that a decoded word always has a typed view.
macro_rules! field_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident($raw:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal => $hw:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value the reference table does not name; the raw value.
            Unknown($raw),
        }

        impl $name {
            /// Every named value, in table order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )* ];

            /// The value for `raw`; a value without a name becomes `Unknown(raw)`.
            #[must_use]
            pub const fn from_raw(raw: $raw) -> Self {
                match raw {
                    $( $value => $name::$variant, )*
                    other => $name::Unknown(other),
                }
            }

            /// The raw value.
            #[must_use]
            pub const fn raw(self) -> $raw {
                match self {
                    $( $name::$variant => $value, )*
                    $name::Unknown(raw) => raw,
                }
            }

            /// The name the reference table gives the value, `None` for `Unknown`.
            #[must_use]
            pub const fn name(self) -> Option<&'static str> {
                match self {
                    $( $name::$variant => Some($hw), )*
                    $name::Unknown(_) => None,
                }
            }
        }
    };
}

pub mod acquire_mem;
pub mod copy_data;
pub mod dispatch_direct;
pub mod dispatch_indirect;
pub mod event_write;
pub mod indirect_buffer;
pub mod nop;
pub mod reg_write;
pub mod release_mem;
pub mod set_sh_reg;
pub mod set_uconfig_reg;
pub mod wait_reg_mem;
pub mod write_data;

pub use acquire_mem::{AcquireMem, GcrCntl};
pub use copy_data::CopyData;
pub use dispatch_direct::{DispatchDirect, DispatchInitiator};
pub use dispatch_indirect::DispatchIndirect;
pub use event_write::{EventType, EventWrite};
pub use indirect_buffer::IndirectBuffer;
pub use nop::Nop;
pub use release_mem::ReleaseMem;
pub use set_sh_reg::SetShReg;
pub use set_uconfig_reg::SetUconfigReg;
pub use wait_reg_mem::WaitRegMem;
pub use write_data::WriteData;

/// No header flag set (`SHADER_TYPE` = graphics): what Linux and ROCr emit for most packets.
pub(crate) const NO_FLAGS: HeaderFlags =
    HeaderFlags { shader_type: ShaderType::Graphics, predicate: false, reset_filter_cam: false };

/// Splits a 64-bit address or value into its low and high dwords, in body order.
#[inline]
pub(crate) const fn split_u64(value: u64) -> (u32, u32) {
    // CAST: the low dword is the truncation; the high dword is exactly 32 bits after the shift.
    #[allow(clippy::cast_possible_truncation)]
    (value as u32, (value >> 32) as u32)
}

/// Copies `src` into `dst` (equal lengths).
///
/// Register writes carry a few values, and a call to `memcpy` costs more than copying them, so
/// short slices are copied inline without a loop (which the compiler would turn back into a
/// `memcpy` call): 1..=3 dwords as the first, middle and last dword, 4..=8 as two overlapping
/// four-dword blocks. Longer slices go to `copy_from_slice`.
///
/// PANIC: asserts equal lengths (the callers size `dst` from `src`).
#[inline(always)]
pub(crate) fn copy_dwords(dst: &mut [u32], src: &[u32]) {
    assert_eq!(dst.len(), src.len(), "copy between slices of different lengths");
    match src.len() {
        0 => {}
        n @ 1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        n @ 4..=8 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// Joins a low and a high dword into a 64-bit address or value.
#[inline]
pub(crate) fn join_u64(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | (u64::from(hi) << 32)
}

/// `Err(FieldValue)` naming `field` when the low dword of `address` has any of `align_mask` set.
pub(crate) const fn check_aligned(
    opcode: Opcode,
    field: &'static str,
    address: u64,
    align_mask: u32,
) -> Result<(), PacketError> {
    let misaligned = split_u64(address).0 & align_mask;
    if misaligned == 0 { Ok(()) } else { Err(PacketError::FieldValue { opcode, field, value: misaligned }) }
}

/// Why a packet body is not a valid instance of its packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    /// The body length does not match the packet's layout.
    #[error("{opcode} body has {found} dwords, expected {expected}")]
    BodyLength {
        /// The packet.
        opcode: Opcode,
        /// What the layout allows: the exact length of a fixed-size packet; for a variable-length
        /// packet the minimum when the body is too short, the maximum when it is too long.
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
    /// `NOP`.
    Nop(Nop<'a>),
    /// `SET_SH_REG`.
    SetShReg(SetShReg<'a>),
    /// `SET_UCONFIG_REG`.
    SetUconfigReg(SetUconfigReg<'a>),
    /// `DISPATCH_DIRECT`.
    DispatchDirect(DispatchDirect),
    /// `DISPATCH_INDIRECT`.
    DispatchIndirect(DispatchIndirect),
    /// `ACQUIRE_MEM`.
    AcquireMem(AcquireMem),
    /// `RELEASE_MEM`.
    ReleaseMem(ReleaseMem),
    /// `EVENT_WRITE`.
    EventWrite(EventWrite),
    /// `WAIT_REG_MEM`.
    WaitRegMem(WaitRegMem),
    /// `WRITE_DATA`.
    WriteData(WriteData<'a>),
    /// `COPY_DATA`.
    CopyData(CopyData),
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
        Opcode::Nop => Packet::Nop(Nop::parse(header, body)?),
        Opcode::SetShReg => Packet::SetShReg(SetShReg::parse(header, body)?),
        Opcode::SetUconfigReg => Packet::SetUconfigReg(SetUconfigReg::parse(header, body)?),
        Opcode::DispatchDirect => Packet::DispatchDirect(DispatchDirect::parse(header, body)?),
        Opcode::DispatchIndirect => Packet::DispatchIndirect(DispatchIndirect::parse(header, body)?),
        Opcode::AcquireMem => Packet::AcquireMem(AcquireMem::parse(header, body)?),
        Opcode::ReleaseMem => Packet::ReleaseMem(ReleaseMem::parse(header, body)?),
        Opcode::EventWrite => Packet::EventWrite(EventWrite::parse(header, body)?),
        Opcode::WaitRegMem => Packet::WaitRegMem(WaitRegMem::parse(header, body)?),
        Opcode::WriteData => Packet::WriteData(WriteData::parse(header, body)?),
        Opcode::CopyData => Packet::CopyData(CopyData::parse(header, body)?),
        Opcode::IndirectBuffer => Packet::IndirectBuffer(IndirectBuffer::parse(header, body)?),
        _ => Packet::Other { header, body },
    })
}

impl Packet<'_> {
    /// The opcode, for type-3 packets.
    #[must_use]
    pub fn opcode(&self) -> Option<Opcode> {
        match self {
            Packet::Nop(_) => Some(Opcode::Nop),
            Packet::SetShReg(_) => Some(Opcode::SetShReg),
            Packet::SetUconfigReg(_) => Some(Opcode::SetUconfigReg),
            Packet::DispatchDirect(_) => Some(Opcode::DispatchDirect),
            Packet::DispatchIndirect(_) => Some(Opcode::DispatchIndirect),
            Packet::AcquireMem(_) => Some(Opcode::AcquireMem),
            Packet::ReleaseMem(_) => Some(Opcode::ReleaseMem),
            Packet::EventWrite(_) => Some(Opcode::EventWrite),
            Packet::WaitRegMem(_) => Some(Opcode::WaitRegMem),
            Packet::WriteData(_) => Some(Opcode::WriteData),
            Packet::CopyData(_) => Some(Opcode::CopyData),
            Packet::IndirectBuffer(_) => Some(Opcode::IndirectBuffer),
            Packet::Other { header, .. } => Some(header.opcode),
            Packet::Type0 { .. } | Packet::Type2 => None,
        }
    }

    /// Reports every field to `v`, naming registers and family-specific bits from `family`'s map.
    pub fn visit(&self, family: Family, v: &mut dyn Visitor) {
        match *self {
            Packet::Nop(ref p) => p.visit(v),
            Packet::SetShReg(ref p) => p.visit(family, v),
            Packet::SetUconfigReg(ref p) => p.visit(family, v),
            Packet::DispatchDirect(ref p) => p.visit(family, v),
            Packet::DispatchIndirect(ref p) => p.visit(family, v),
            Packet::AcquireMem(ref p) => p.visit(v),
            Packet::ReleaseMem(ref p) => p.visit(v),
            Packet::EventWrite(ref p) => p.visit(v),
            Packet::WaitRegMem(ref p) => p.visit(v),
            Packet::WriteData(ref p) => p.visit(family, v),
            Packet::CopyData(ref p) => p.visit(v),
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
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        match self {
            Packet::Nop(p) => p.buffer_len(),
            Packet::SetShReg(p) => p.buffer_len(),
            Packet::SetUconfigReg(p) => p.buffer_len(),
            Packet::DispatchDirect(p) => p.buffer_len(),
            Packet::DispatchIndirect(p) => p.buffer_len(),
            Packet::AcquireMem(p) => p.buffer_len(),
            Packet::ReleaseMem(p) => p.buffer_len(),
            Packet::EventWrite(p) => p.buffer_len(),
            Packet::WaitRegMem(p) => p.buffer_len(),
            Packet::WriteData(p) => p.buffer_len(),
            Packet::CopyData(p) => p.buffer_len(),
            Packet::IndirectBuffer(p) => p.buffer_len(),
            Packet::Other { body, .. } => 1 + body.len(),
            Packet::Type0 { values, .. } => 1 + values.len(),
            Packet::Type2 => 1,
        }
    }

    /// PANIC: every arm asserts that `out` is exactly the packet's length (the typed packets in
    /// their own `emit`, the raw ones through the indexing and `copy_from_slice` below), so no
    /// second `buffer_len` dispatch is needed here.
    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        match self {
            Packet::Nop(p) => p.emit(out),
            Packet::SetShReg(p) => p.emit(out),
            Packet::SetUconfigReg(p) => p.emit(out),
            Packet::DispatchDirect(p) => p.emit(out),
            Packet::DispatchIndirect(p) => p.emit(out),
            Packet::AcquireMem(p) => p.emit(out),
            Packet::ReleaseMem(p) => p.emit(out),
            Packet::EventWrite(p) => p.emit(out),
            Packet::WaitRegMem(p) => p.emit(out),
            Packet::WriteData(p) => p.emit(out),
            Packet::CopyData(p) => p.emit(out),
            Packet::IndirectBuffer(p) => p.emit(out),
            Packet::Other { header, body } => {
                let (first, rest) = out.split_first_mut().expect("output slice must match the packet length");
                *first = header.encode();
                rest.copy_from_slice(body);
            }
            Packet::Type0 { base_reg, values } => {
                // Type-0 header: [29:16] COUNT = values - 1, [15:0] register (reference §4).
                let count = u32::try_from(values.len() - 1).expect("type-0 packet too long");
                let (first, rest) = out.split_first_mut().expect("output slice must match the packet length");
                *first = (count << 16) | u32::from(*base_reg);
                rest.copy_from_slice(values);
            }
            Packet::Type2 => {
                let [word] = out else { panic!("output slice must match the packet length") };
                *word = crate::header::TYPE2_FILLER;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::copy_dwords;
    use std::vec::Vec;

    // Every length class of the inline copy (empty, 1..=3, 4..=8, longer) copies every dword once
    // to its own place and nothing else.
    #[test]
    fn copy_dwords_every_length() {
        for n in 0..=20u32 {
            let src: Vec<u32> = (1..=n).collect();
            let mut dst = std::vec![0; src.len()];
            copy_dwords(&mut dst, &src);
            assert_eq!(dst, src, "length {n}");
        }
    }

    #[test]
    #[should_panic(expected = "different lengths")]
    fn copy_dwords_checks_lengths() {
        copy_dwords(&mut [0; 3], &[1, 2]);
    }
}

/// A visitor that records what packets report, for the unit tests.
#[cfg(test)]
pub(crate) mod test_util {
    use crate::bits::FieldDesc;
    use crate::disasm::Visitor;
    use crate::regs::RegisterInfo;
    use std::vec::Vec;

    /// One reported item.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub(crate) enum Item {
        Field(&'static str, u64),
        Enum(&'static str, u64, Option<&'static str>),
        Word(&'static str, u32),
        Register(u32, u32),
        Payload(&'static str, Vec<u32>),
    }

    #[derive(Default)]
    pub(crate) struct Recorder {
        pub(crate) items: Vec<Item>,
        /// The field table of every reported word, by name.
        pub(crate) tables: Vec<(&'static str, &'static [FieldDesc])>,
    }

    impl Visitor for Recorder {
        fn field(&mut self, name: &'static str, value: u64) {
            self.items.push(Item::Field(name, value));
        }
        fn enum_field(&mut self, name: &'static str, value: u64, symbol: Option<&'static str>) {
            self.items.push(Item::Enum(name, value, symbol));
        }
        fn word(&mut self, name: &'static str, raw: u32, fields: &'static [FieldDesc]) {
            self.items.push(Item::Word(name, raw));
            self.tables.push((name, fields));
        }
        fn register(&mut self, dword: u32, value: u32, _info: Option<&'static RegisterInfo>) {
            self.items.push(Item::Register(dword, value));
        }
        fn payload(&mut self, name: &'static str, words: &[u32]) {
            self.items.push(Item::Payload(name, words.to_vec()));
        }
    }
}
