//! Register windows and the per-family register maps.
//!
//! Offsets and fields: `reference/amd-reference.md` §1–§3. The maps of all families are declared
//! once, in [`columns`]: one row per register, one cell per family, `-` where a family does not
//! have the register (the SE4–SE7 masks and DISPATCH_INTERLEAVE on gfx10.3, for example), which is
//! then simply not in its table, never aliased. Each family module re-exports its column.
//!
//! Each family module also holds the typed words (`ComputePgmRsrc2`, ...) of its registers: words
//! whose fields differ between families are declared per family, words that are the same everywhere
//! come from one private module and are re-exported by each family that has the register. Each
//! family module ends with its row of the family table (`FACTS`, a
//! [`crate::family::FamilyFacts`]); the functions below read fields of that row.

use crate::bits::FieldDesc;
use crate::family::Family;

/// Declares every family's register constants and table from rows of per-family cells (see
/// [`columns`]): `NAME = [cell], [cell], [cell];` for gfx10.3, gfx11, gfx12, each cell
/// `dword`, `dword: Word` (the family module's typed word of the register) or `-` (absent).
/// For each family it generates a module of `columns` with the constants (the identifier is the
/// `name` string, so the two cannot drift apart) and `TABLE`, the present cells sorted by dword.
macro_rules! register_columns {
    ( $( $(#[$meta:meta])* $name:ident = [$($a:tt)+], [$($b:tt)+], [$($c:tt)+]; )* ) => {
        register_columns!(@family gfx10_3, $( $(#[$meta])* $name [$($a)+] )*);
        register_columns!(@family gfx11, $( $(#[$meta])* $name [$($b)+] )*);
        register_columns!(@family gfx12, $( $(#[$meta])* $name [$($c)+] )*);
    };
    (@family $family:ident, $( $(#[$meta:meta])* $name:ident [$($cell:tt)+] )*) => {
        #[doc = concat!("The `", stringify!($family), "` column of the register map.")]
        pub mod $family {
            $( register_columns!(@constant $family, $(#[$meta])* $name [$($cell)+]); )*

            const ROWS: &[Option<$crate::regs::RegisterInfo>] =
                &[$( register_columns!(@present $name [$($cell)+]) ),*];
            const LEN: usize = $crate::regs::present_count(ROWS);
            const SORTED: [$crate::regs::RegisterInfo; LEN] = $crate::regs::sorted_present(ROWS);
            /// Every register of this family, ordered by dword offset.
            pub const TABLE: &[$crate::regs::RegisterInfo] = &SORTED;

            // INVARIANT: `lookup` binary-searches the table; a table with a duplicate dword or
            // outside the SH window does not compile.
            const _: () = assert!($crate::regs::is_sh_table(TABLE), "register table not strictly ascending in the SH window");
        }
    };
    (@constant $family:ident, $(#[$meta:meta])* $name:ident [-]) => {};
    (@constant $family:ident, $(#[$meta:meta])* $name:ident [$dword:literal $(: $word:ident)?]) => {
        #[doc = concat!("`", stringify!($name), "`, absolute dword `", stringify!($dword), "`.")]
        $(#[$meta])*
        pub const $name: $crate::regs::RegisterInfo = $crate::regs::RegisterInfo {
            name: stringify!($name),
            dword: $dword,
            fields: register_columns!(@fields $family $($word)?),
        };
    };
    (@fields $family:ident) => { &[] };
    (@fields $family:ident $word:ident) => { <$crate::regs::$family::$word>::FIELDS };
    (@present $name:ident [-]) => { None };
    (@present $name:ident [$($cell:tt)+]) => { Some($name) };
}

/// Declares a family module's row of the family table, `FACTS`, from the module's register
/// constants, typed words and unit constants; only what cannot be read from those is given.
macro_rules! family_facts {
    (
        family: $family:expr,
        name: $name:literal,
        flat_scratch: $flat_scratch:expr,
        queue_owned: [$($queue_owned:ident),* $(,)?],
        descriptor_zero_bits: $zero:expr $(,)?
    ) => {
        /// This family's row of the family table ([`crate::family::FamilyFacts`]).
        pub const FACTS: $crate::family::FamilyFacts = $crate::family::FamilyFacts {
            family: $family,
            name: $name,
            registers: TABLE,
            compute: $crate::family::ComputeRegisters {
                dispatch_initiator: COMPUTE_DISPATCH_INITIATOR,
                pgm_lo: COMPUTE_PGM_LO,
                pgm_hi: COMPUTE_PGM_HI,
                pgm_rsrc1: COMPUTE_PGM_RSRC1,
                pgm_rsrc2: COMPUTE_PGM_RSRC2,
                pgm_rsrc3: COMPUTE_PGM_RSRC3,
                num_thread: [COMPUTE_NUM_THREAD_X, COMPUTE_NUM_THREAD_Y, COMPUTE_NUM_THREAD_Z],
                user_data: [
                    COMPUTE_USER_DATA_0, COMPUTE_USER_DATA_1, COMPUTE_USER_DATA_2, COMPUTE_USER_DATA_3,
                    COMPUTE_USER_DATA_4, COMPUTE_USER_DATA_5, COMPUTE_USER_DATA_6, COMPUTE_USER_DATA_7,
                    COMPUTE_USER_DATA_8, COMPUTE_USER_DATA_9, COMPUTE_USER_DATA_10, COMPUTE_USER_DATA_11,
                    COMPUTE_USER_DATA_12, COMPUTE_USER_DATA_13, COMPUTE_USER_DATA_14, COMPUTE_USER_DATA_15,
                ],
                queue_owned: &[$($queue_owned),*],
                rsrc2_user_sgpr: $crate::bits::field(ComputePgmRsrc2::FIELDS, "USER_SGPR"),
                rsrc2_lds_size: $crate::bits::field(ComputePgmRsrc2::FIELDS, "LDS_SIZE"),
                num_thread_full: [
                    $crate::bits::field(ComputeNumThreadX::FIELDS, "NUM_THREAD_FULL"),
                    $crate::bits::field(ComputeNumThreadY::FIELDS, "NUM_THREAD_FULL"),
                    $crate::bits::field(ComputeNumThreadZ::FIELDS, "NUM_THREAD_FULL"),
                ],
                num_thread_partial: [
                    $crate::bits::field(ComputeNumThreadX::FIELDS, "NUM_THREAD_PARTIAL"),
                    $crate::bits::field(ComputeNumThreadY::FIELDS, "NUM_THREAD_PARTIAL"),
                    $crate::bits::field(ComputeNumThreadZ::FIELDS, "NUM_THREAD_PARTIAL"),
                ],
            },
            consumer_acquire_gcr: CONSUMER_ACQUIRE_GCR,
            system_acquire_gcr: SYSTEM_ACQUIRE_GCR,
            dims_in_work_items: DISPATCH_DIMS_IN_WORK_ITEMS,
            lds_encode_granule_bytes: LDS_ENCODE_GRANULE_BYTES,
            lds_alloc_granule_bytes: LDS_ALLOC_GRANULE_BYTES,
            // The field's all-ones value times its unit, from the family's own word.
            lds_size_max_bytes: ComputePgmRsrc2::from_raw(u32::MAX).lds_size() * LDS_ENCODE_GRANULE_BYTES,
            tmpring_wavesize_unit_bytes: TMPRING_WAVESIZE_UNIT_BYTES,
            tmpring_wavesize_max_bytes: ComputeTmpringSize::from_raw(u32::MAX).wavesize()
                * TMPRING_WAVESIZE_UNIT_BYTES,
            flat_scratch: $flat_scratch,
            descriptor_zero_bits: $zero,
        };
    };
}

pub mod columns;
mod common;
pub mod gfx10_3;
pub mod gfx11;
pub mod gfx12;
mod typed;
mod words;

pub use typed::{Rsrc1, Rsrc2, Rsrc3};
pub use words::{NumThread, num_thread_split, num_thread_word, rsrc2_split, rsrc2_with_lds_size};

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
    family.facts().registers
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

/// The number of present cells of a register column.
pub(crate) const fn present_count(rows: &[Option<RegisterInfo>]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        if rows[i].is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The present cells of a register column, sorted by dword (insertion sort: tens of rows, once,
/// at compile time).
///
/// PANIC: `N` is [`present_count`] of `rows` (a compile-time error otherwise).
pub(crate) const fn sorted_present<const N: usize>(rows: &[Option<RegisterInfo>]) -> [RegisterInfo; N] {
    const NONE: RegisterInfo = RegisterInfo { name: "", dword: 0, fields: &[] };
    let mut out = [NONE; N];
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        if let Some(info) = rows[i] {
            let mut j = n;
            while j > 0 && out[j - 1].dword > info.dword {
                out[j] = out[j - 1];
                j -= 1;
            }
            out[j] = info;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "column length");
    out
}

/// Whether `table` is strictly ascending by dword (sorted, no duplicates) and inside the SH window.
pub(crate) const fn is_sh_table(table: &[RegisterInfo]) -> bool {
    let mut i = 0;
    while i < table.len() {
        let dword = table[i].dword;
        if dword < SH_REG_BASE || dword >= SH_REG_END || (i > 0 && table[i - 1].dword >= dword) {
            return false;
        }
        i += 1;
    }
    true
}

/// Bytes per unit of `COMPUTE_PGM_RSRC2.LDS_SIZE` on `family` (512 on every supported family).
/// Source: reference §3 "Other register semantics" and §9 "LDS_SIZE granularity on gfx12"
/// (Mesa `lds_encode_granularity`).
#[must_use]
pub const fn lds_encode_granule_bytes(family: Family) -> u32 {
    family.facts().lds_encode_granule_bytes
}

/// Bytes the hardware actually allocates LDS in on `family` (1024 on GFX10.3 and later).
/// Source: reference §3 "Other register semantics", §9 (Mesa `lds_alloc_granularity`).
#[must_use]
pub const fn lds_alloc_granule_bytes(family: Family) -> u32 {
    family.facts().lds_alloc_granule_bytes
}

/// Largest LDS size in bytes that `COMPUTE_PGM_RSRC2.LDS_SIZE` can encode on `family`
/// (the field's all-ones value times [`lds_encode_granule_bytes`]; reference §3).
#[must_use]
pub const fn lds_size_max_bytes(family: Family) -> u32 {
    family.facts().lds_size_max_bytes
}

/// Bytes per unit of `COMPUTE_TMPRING_SIZE.WAVESIZE` on `family`: 1024 on gfx10.3, 256 on gfx11
/// and gfx12. Source: reference §3 "Other register semantics" (Mesa `ac_get_scratch_tmpring_size`,
/// LLVM `S_00B860_WAVESIZE_*`).
#[must_use]
pub const fn tmpring_wavesize_unit_bytes(family: Family) -> u32 {
    family.facts().tmpring_wavesize_unit_bytes
}

/// Largest scratch size per wave in bytes that `COMPUTE_TMPRING_SIZE.WAVESIZE` can encode on
/// `family` (the field is 13, 15 or 18 bits wide on gfx10.3, gfx11, gfx12; reference §3).
#[must_use]
pub const fn tmpring_wavesize_max_bytes(family: Family) -> u32 {
    family.facts().tmpring_wavesize_max_bytes
}

/// An LDS size that `COMPUTE_PGM_RSRC2.LDS_SIZE` cannot encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error(
    "LDS size of {requested_bytes} bytes exceeds the {limit_bytes}-byte limit of COMPUTE_PGM_RSRC2.LDS_SIZE on {family}"
)]
pub struct LdsSizeTooLarge {
    /// The family asked for.
    pub family: Family,
    /// The requested LDS size in bytes.
    pub requested_bytes: u32,
    /// [`lds_size_max_bytes`] of `family`.
    pub limit_bytes: u32,
}

/// The `COMPUTE_PGM_RSRC2.LDS_SIZE` value for `lds_bytes` of LDS on `family`: the size rounded up
/// to whole [`lds_encode_granule_bytes`] granules (reference §3, §9).
///
/// # Errors
/// [`LdsSizeTooLarge`] when the rounded size does not fit the field.
pub const fn lds_size_field(family: Family, lds_bytes: u32) -> Result<u32, LdsSizeTooLarge> {
    if lds_bytes > lds_size_max_bytes(family) {
        return Err(LdsSizeTooLarge { family, requested_bytes: lds_bytes, limit_bytes: lds_size_max_bytes(family) });
    }
    Ok(lds_bytes.div_ceil(lds_encode_granule_bytes(family)))
}

/// A per-wave scratch size that `COMPUTE_TMPRING_SIZE.WAVESIZE` cannot encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error(
    "scratch size of {requested_bytes} bytes per wave exceeds the {limit_bytes}-byte limit of COMPUTE_TMPRING_SIZE.WAVESIZE on {family}"
)]
pub struct ScratchWaveSizeTooLarge {
    /// The family asked for.
    pub family: Family,
    /// The requested scratch size per wave in bytes.
    pub requested_bytes: u32,
    /// [`tmpring_wavesize_max_bytes`] of `family`.
    pub limit_bytes: u32,
}

/// The `COMPUTE_TMPRING_SIZE.WAVESIZE` value for `bytes_per_wave` of scratch on `family`: the size
/// rounded up to whole [`tmpring_wavesize_unit_bytes`] units (reference §3).
///
/// # Errors
/// [`ScratchWaveSizeTooLarge`] when the rounded size does not fit the field.
pub const fn tmpring_wavesize_field(family: Family, bytes_per_wave: u32) -> Result<u32, ScratchWaveSizeTooLarge> {
    if bytes_per_wave > tmpring_wavesize_max_bytes(family) {
        return Err(ScratchWaveSizeTooLarge {
            family,
            requested_bytes: bytes_per_wave,
            limit_bytes: tmpring_wavesize_max_bytes(family),
        });
    }
    Ok(bytes_per_wave.div_ceil(tmpring_wavesize_unit_bytes(family)))
}
