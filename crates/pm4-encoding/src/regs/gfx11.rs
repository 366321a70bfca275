//! Register map of the gfx11 family.

use super::RegisterInfo;

/// Every register of this family, ordered by dword offset.
pub static REGISTERS: &[RegisterInfo] = &[];
