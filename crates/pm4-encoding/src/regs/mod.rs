//! Register windows and the per-family register maps.
//!
//! Offsets and fields: `reference/amd-reference.md` §1–§3. Each family module declares the
//! registers that exist on that family and nothing else: a register absent on a family (the SE4–SE7
//! masks and DISPATCH_INTERLEAVE on gfx10.3, for example) is simply not in its table, never aliased.

use crate::bits::FieldDesc;
use crate::family::Family;

pub mod gfx10_3;
pub mod gfx11;
pub mod gfx12;

/// First dword of the SH (persistent state) window; SET_SH_REG offsets are relative to it.
/// Source: reference §1 (`PACKET3_SET_SH_REG_START`).
pub const SH_REG_BASE: u32 = 0x2C00;
/// One past the last dword of the SH window (reference §1).
pub const SH_REG_END: u32 = 0x3000;
/// First dword of the UCONFIG window; SET_UCONFIG_REG offsets are relative to it (reference §1).
pub const UCONFIG_REG_BASE: u32 = 0xC000;
/// One past the last UCONFIG dword. Mesa's bound (byte 0x40000), the wider of the two sources in
/// reference §9, so that streams from producers using Mesa's window still decode.
pub const UCONFIG_REG_END: u32 = 0x1_0000;

/// A register of a family's map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegisterInfo {
    /// Hardware name (`COMPUTE_PGM_RSRC2`).
    pub name: &'static str,
    /// Absolute dword offset (`0x2E13`).
    pub dword: u32,
    /// Named fields; empty when the whole word is one value (`COMPUTE_PGM_LO`, `COMPUTE_USER_DATA_n`).
    pub fields: &'static [FieldDesc],
}

impl RegisterInfo {
    /// Offset relative to the SH window (the value SET_SH_REG carries), if the register is in it.
    #[must_use]
    pub const fn sh_offset(self) -> Option<u16> {
        if self.dword >= SH_REG_BASE && self.dword < SH_REG_END {
            // CAST: < 0x400 by the check above.
            #[allow(clippy::cast_possible_truncation)]
            Some((self.dword - SH_REG_BASE) as u16)
        } else {
            None
        }
    }
}

/// Every register this crate knows on `family`, ordered by dword offset.
#[must_use]
pub fn registers(family: Family) -> &'static [RegisterInfo] {
    match family {
        Family::Gfx10_3 => gfx10_3::REGISTERS,
        Family::Gfx11 => gfx11::REGISTERS,
        Family::Gfx12 => gfx12::REGISTERS,
    }
}

/// The register at absolute dword `dword` on `family`.
#[must_use]
pub fn lookup(family: Family, dword: u32) -> Option<&'static RegisterInfo> {
    let table = registers(family);
    table.binary_search_by_key(&dword, |r| r.dword).ok().map(|i| &table[i])
}

/// The register called `name` on `family`.
#[must_use]
pub fn by_name(family: Family, name: &str) -> Option<&'static RegisterInfo> {
    registers(family).iter().find(|r| r.name == name)
}
