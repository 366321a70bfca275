//! The consecutive-register-write layout shared by `SET_SH_REG` and `SET_UCONFIG_REG`.
//!
//! Body (reference §4 "SET_SH_REG", "SET_UCONFIG_REG"): dw0 `REG_OFFSET` `[15:0]` relative to the
//! packet's window base, `VMID_SHIFT` `[27:23]`, `INDEX` `[31:28]`; dw1.. one value per consecutive
//! register. The two packets differ only in opcode and window (reference §1), so both are
//! [`RegWrite`] with a different [`RegWindow`]: [`super::SetShReg`] and [`super::SetUconfigReg`].

use core::marker::PhantomData;

use crate::disasm::Visitor;
use crate::family::Family;
use crate::header::{HeaderFlags, MAX_BODY_DWORDS, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, NO_FLAGS, PacketError};

mod field {
    pub(super) const CONTROL: usize = 0;
    pub(super) const FIRST_VALUE: usize = 1;
    /// The offset word and at least one value.
    pub(super) const MIN_BODY_DWORDS: usize = 2;
}

crate::bitfield32! {
    /// Body dword 0 of a register write: where the values go.
    pub struct RegWriteControl {
        /// First register, in dwords from the window base.
        [15:0] reg_offset, with_reg_offset = "REG_OFFSET";
        /// VMID shift (newer Linux `nvd.h`); 0 in practice.
        [27:23] vmid_shift, with_vmid_shift = "VMID_SHIFT";
        /// Write mode; 0 by default (Linux: 1 = `INSERT_VMID`).
        [31:28] index, with_index = "INDEX";
    }
}

/// The register window of a register-write packet: its opcode and absolute dword bounds.
///
/// Implemented here for the SH and UCONFIG windows; the other `SET_*_REG` packets share the
/// layout, so a caller can implement it for them too (the decoder types only these two).
pub trait RegWindow {
    /// The packet's opcode.
    const OPCODE: Opcode;
    /// First absolute dword of the window; `REG_OFFSET` counts from here.
    const BASE: u32;
    /// One past the last absolute dword of the window.
    const END: u32;
}

/// A validated consecutive-register write into window `W`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegWrite<'a, W: RegWindow> {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// Body dword 0: `REG_OFFSET`, `VMID_SHIFT`, `INDEX`.
    pub control: RegWriteControl,
    /// The values, for registers `first_dword()`, `first_dword() + 1`, ...; never empty.
    pub values: &'a [u32],
    window: PhantomData<W>,
}

impl<'a, W: RegWindow> RegWrite<'a, W> {
    /// Writes `values` to consecutive registers from absolute dword `first_dword`, with `INDEX` 0
    /// and default header flags.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] when `values` is empty or too long for one packet;
    /// [`PacketError::RegisterOutsideWindow`] when the registers leave `W`'s window.
    #[inline(always)]
    pub fn new(first_dword: u32, values: &'a [u32]) -> Result<Self, PacketError> {
        check_body_len::<W>(1 + values.len())?;
        check_window::<W>(first_dword, values.len())?;
        let Ok(offset) = u16::try_from(first_dword - W::BASE) else {
            // Only a window wider than REG_OFFSET's 16 bits gets here.
            return Err(PacketError::FieldValue {
                opcode: W::OPCODE,
                field: "REG_OFFSET",
                value: first_dword - W::BASE,
            });
        };
        Ok(Self {
            flags: NO_FLAGS,
            control: RegWriteControl::from_raw(0).with_reg_offset(u32::from(offset)),
            values,
            window: PhantomData,
        })
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] when the body has no value or more dwords than a packet holds;
    /// [`PacketError::RegisterOutsideWindow`] when the registers leave `W`'s window.
    pub fn parse(header: Type3Header, body: &'a [u32]) -> Result<Self, PacketError> {
        check_body_len::<W>(body.len())?;
        let control = RegWriteControl::from_raw(body[field::CONTROL]);
        let values = &body[field::FIRST_VALUE..];
        check_window::<W>(W::BASE.saturating_add(control.reg_offset()), values.len())?;
        Ok(Self { flags: header.flags(), control, values, window: PhantomData })
    }

    /// Absolute dword of the first register written.
    #[must_use]
    pub fn first_dword(&self) -> u32 {
        W::BASE.saturating_add(self.control.reg_offset())
    }

    /// `(absolute dword, value)` of every register written.
    pub fn registers(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let first = self.first_dword();
        // Wrapping: a hand-edited `control` must not make visiting panic.
        self.values.iter().zip(0u32..).map(move |(&value, i)| (first.wrapping_add(i), value))
    }

    /// Reports the offset word, then every register write, named from `family`'s map.
    pub fn visit(&self, family: Family, v: &mut dyn Visitor) {
        v.word("CONTROL", self.control.raw(), RegWriteControl::FIELDS);
        for (dword, value) in self.registers() {
            v.register(dword, value, crate::regs::lookup(family, dword));
        }
    }
}

/// `BodyLength` unless `1 < body_dwords <= MAX_BODY_DWORDS`.
#[inline(always)]
fn check_body_len<W: RegWindow>(body_dwords: usize) -> Result<(), PacketError> {
    let expected = if body_dwords < field::MIN_BODY_DWORDS {
        field::MIN_BODY_DWORDS
    } else if body_dwords > MAX_BODY_DWORDS {
        MAX_BODY_DWORDS
    } else {
        return Ok(());
    };
    Err(PacketError::BodyLength { opcode: W::OPCODE, expected, found: body_dwords })
}

/// `RegisterOutsideWindow` unless dwords `first..first + len` lie in `W`'s window.
#[inline(always)]
fn check_window<W: RegWindow>(first: u32, len: usize) -> Result<(), PacketError> {
    let end = u32::try_from(len).ok().and_then(|len| first.checked_add(len));
    match end {
        Some(end) if first >= W::BASE && end <= W::END => Ok(()),
        _ => Err(PacketError::RegisterOutsideWindow {
            opcode: W::OPCODE,
            first,
            end: end.unwrap_or(u32::MAX),
            window_start: W::BASE,
            window_end: W::END,
        }),
    }
}

impl<W: RegWindow> Emit for RegWrite<'_, W> {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        1 + field::FIRST_VALUE + self.values.len()
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch (caught by the split and the
        // equal-length copy), or a hand-edited `values` that is empty or too long for COUNT, is a
        // programmer error.
        assert!((1..MAX_BODY_DWORDS).contains(&self.values.len()), "a register write carries 1..=0x3FFF values");
        let (head, values) = out.split_at_mut(1 + field::FIRST_VALUE);
        head[0] = Type3Header::with_flags(W::OPCODE, field::FIRST_VALUE + self.values.len(), self.flags).encode();
        head[1 + field::CONTROL] = self.control.raw();
        super::copy_dwords(values, self.values);
    }
}
