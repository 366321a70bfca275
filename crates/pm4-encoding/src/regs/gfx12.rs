//! Register map of the gfx12 family.

use super::RegisterInfo;

/// Every register of this family, ordered by dword offset.
pub static REGISTERS: &[RegisterInfo] = &[];
