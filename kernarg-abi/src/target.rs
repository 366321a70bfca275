//! ELF identification of AMDGPU code objects: ABI versions, `EF_AMDGPU_MACH` processors and the
//! XNACK/SRAMECC target features of `e_flags`.
//!
//! Values: `reference/amd-reference.md` §7 (`EM_AMDGPU`, `ELFOSABI_AMDGPU_HSA`, the v5/v6 ABI
//! versions, the `EF_AMDGPU_MACH` mask and the supported processors, the v4 feature masks). The
//! v4 ABI version, the per-value feature encodings and the names of processors outside the
//! reference's table come from the reference's own source for those constants, LLVM 19's
//! `llvm/BinaryFormat/ELF.h` (`LLVM19_ELF_H` in the reference's source table).

use alloc::string::String;
use core::fmt;

use pm4_encoding::Target;

/// `e_machine` of AMDGPU code objects (reference §7).
pub const EM_AMDGPU: u16 = 224;
/// `EI_OSABI` of HSA code objects (reference §7).
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `EI_ABIVERSION` of code object v4 (LLVM 19 `ELF.h`, the reference's §7 source; not in the §7 table).
pub const ELFABIVERSION_AMDGPU_HSA_V4: u8 = 2;
/// `EI_ABIVERSION` of code object v5 (reference §7).
pub const ELFABIVERSION_AMDGPU_HSA_V5: u8 = 3;
/// `EI_ABIVERSION` of code object v6 (reference §7).
pub const ELFABIVERSION_AMDGPU_HSA_V6: u8 = 4;
/// Processor selection mask of `e_flags` (reference §7).
pub const EF_AMDGPU_MACH: u32 = 0x0ff;
/// XNACK selection mask of `e_flags` for v4+ (reference §7).
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// SRAMECC selection mask of `e_flags` for v4+ (reference §7).
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
/// Generic-processor version field of `e_flags` (v6; LLVM 19 `ELF.h`).
pub const EF_AMDGPU_GENERIC_VERSION: u32 = 0xff00_0000;
/// Note type of the code-object metadata note (reference §7).
pub const NT_AMDGPU_METADATA: u32 = 32;
/// Owner name of the code-object metadata note (reference §7).
pub const NOTE_OWNER_AMDGPU: &[u8] = b"AMDGPU";

/// Every `e_flags` bit this crate knows the meaning of; others make the flags [`TargetId::unknown_flags`].
const KNOWN_FLAGS: u32 =
    EF_AMDGPU_MACH | EF_AMDGPU_FEATURE_XNACK_V4 | EF_AMDGPU_FEATURE_SRAMECC_V4 | EF_AMDGPU_GENERIC_VERSION;

/// Code object versions this crate reads, from `EI_ABIVERSION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CodeObjectVersion {
    /// Code object v4 (`EI_ABIVERSION` 2).
    V4,
    /// Code object v5 (`EI_ABIVERSION` 3): hidden arguments such as `hidden_block_count_x`.
    V5,
    /// Code object v6 (`EI_ABIVERSION` 4): v5 plus generic processors.
    V6,
}

impl CodeObjectVersion {
    /// The version for an `EI_ABIVERSION` byte of an `ELFOSABI_AMDGPU_HSA` file; `None` for
    /// versions before v4 and unknown values.
    #[must_use]
    pub const fn from_abi_version(abi_version: u8) -> Option<Self> {
        match abi_version {
            ELFABIVERSION_AMDGPU_HSA_V4 => Some(Self::V4),
            ELFABIVERSION_AMDGPU_HSA_V5 => Some(Self::V5),
            ELFABIVERSION_AMDGPU_HSA_V6 => Some(Self::V6),
            _ => None,
        }
    }

    /// The `EI_ABIVERSION` byte.
    #[must_use]
    pub const fn abi_version(self) -> u8 {
        match self {
            Self::V4 => ELFABIVERSION_AMDGPU_HSA_V4,
            Self::V5 => ELFABIVERSION_AMDGPU_HSA_V5,
            Self::V6 => ELFABIVERSION_AMDGPU_HSA_V6,
        }
    }

    /// The code object version number (4, 5, 6).
    #[must_use]
    pub const fn number(self) -> u8 {
        match self {
            Self::V4 => 4,
            Self::V5 => 5,
            Self::V6 => 6,
        }
    }
}

impl fmt::Display for CodeObjectVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.number())
    }
}

/// The setting of a target feature (XNACK, SRAMECC) in a v4+ `e_flags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetFeature {
    /// The processor does not have the feature (field value 0).
    Unsupported,
    /// Code runs with the feature on or off (field value 1; no suffix in the target id).
    Any,
    /// Code requires the feature off (field value 2; `feature-`).
    Off,
    /// Code requires the feature on (field value 3; `feature+`).
    On,
}

impl TargetFeature {
    /// Decodes the two-bit field under `mask` (`EF_AMDGPU_FEATURE_XNACK_V4` or
    /// `EF_AMDGPU_FEATURE_SRAMECC_V4`): 0 unsupported, 1 any, 2 off, 3 on (LLVM 19 `ELF.h`).
    /// A zero mask reads as unsupported.
    #[must_use]
    pub const fn from_flags(e_flags: u32, mask: u32) -> Self {
        let field = match (e_flags & mask).checked_shr(mask.trailing_zeros()) {
            Some(v) => v & 0b11,
            None => 0,
        };
        match field {
            0 => Self::Unsupported,
            1 => Self::Any,
            2 => Self::Off,
            _ => Self::On,
        }
    }

    /// The target-id suffix sign: `Some('+')` for on, `Some('-')` for off, `None` otherwise.
    #[must_use]
    pub const fn sign(self) -> Option<char> {
        match self {
            Self::On => Some('+'),
            Self::Off => Some('-'),
            Self::Unsupported | Self::Any => None,
        }
    }
}

/// The processor and features a code object was built for, from `e_flags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// The supported target, or `None` for every other processor (known or not).
    pub target: Option<Target>,
    /// Raw `EF_AMDGPU_MACH` value.
    pub mach: u32,
    /// LLVM's processor name (`gfx1100`, `gfx90a`, `gfx11-generic`), or `"unknown"`.
    pub name: &'static str,
    /// XNACK setting.
    pub xnack: TargetFeature,
    /// SRAMECC setting.
    pub sramecc: TargetFeature,
    /// Generic-processor version (`EF_AMDGPU_GENERIC_VERSION`), 0 when not set.
    pub generic_version: u8,
    /// `e_flags` bits outside every known field (0 for code objects LLVM 19 writes).
    pub unknown_flags: u32,
}

impl TargetId {
    /// Decodes a v4+ `e_flags` word.
    #[must_use]
    pub const fn from_e_flags(e_flags: u32) -> Self {
        let mach = e_flags & EF_AMDGPU_MACH;
        // CAST: the generic version is the top byte.
        #[allow(clippy::cast_possible_truncation)]
        let generic_version = ((e_flags & EF_AMDGPU_GENERIC_VERSION) >> 24) as u8;
        Self {
            target: supported_target(mach),
            mach,
            name: mach_name(mach),
            xnack: TargetFeature::from_flags(e_flags, EF_AMDGPU_FEATURE_XNACK_V4),
            sramecc: TargetFeature::from_flags(e_flags, EF_AMDGPU_FEATURE_SRAMECC_V4),
            generic_version,
            unknown_flags: e_flags & !KNOWN_FLAGS,
        }
    }

    /// Whether `target_id` (`gfx90a:sramecc-:xnack+`, optionally behind an
    /// `amdgcn-amd-amdhsa--` triple) names this processor with the same feature settings. A
    /// feature without a suffix matches [`TargetFeature::Any`] and [`TargetFeature::Unsupported`].
    #[must_use]
    pub fn matches_target_id(&self, target_id: &str) -> bool {
        let id = strip_triple(target_id);
        let mut parts = id.split(':');
        if parts.next() != Some(self.name) {
            return false;
        }
        let (mut xnack, mut sramecc) = (None, None);
        for feature in parts {
            let Some(sign) = feature.chars().last() else { return false };
            let setting = match sign {
                '+' => TargetFeature::On,
                '-' => TargetFeature::Off,
                _ => return false,
            };
            let slot = match &feature[..feature.len() - 1] {
                "xnack" => &mut xnack,
                "sramecc" => &mut sramecc,
                _ => return false,
            };
            if slot.replace(setting).is_some() {
                return false;
            }
        }
        let agrees = |given: Option<TargetFeature>, actual: TargetFeature| match given {
            Some(setting) => setting == actual,
            None => matches!(actual, TargetFeature::Any | TargetFeature::Unsupported),
        };
        agrees(xnack, self.xnack) && agrees(sramecc, self.sramecc)
    }

    /// The target id as LLVM spells it: the processor, then `:sramecc±` and `:xnack±` where set.
    #[must_use]
    pub fn to_target_id(&self) -> String {
        use core::fmt::Write;
        let mut s = String::from(self.name);
        for (name, feature) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            if let Some(sign) = feature.sign() {
                // PANIC: writing to a String cannot fail.
                let _ = write!(s, ":{name}{sign}");
            }
        }
        s
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_target_id())
    }
}

/// Strips an `arch-vendor-os-env-` prefix (`amdgcn-amd-amdhsa--`) from a target id, if present.
pub(crate) fn strip_triple(s: &str) -> &str {
    match s.match_indices('-').nth(3) {
        Some((i, _)) if s.starts_with("amdgcn-") => &s[i + 1..],
        _ => s,
    }
}

/// The supported target for an `EF_AMDGPU_MACH` value (the target table's `mach` column).
#[must_use]
pub const fn supported_target(mach: u32) -> Option<Target> {
    Target::from_mach(mach)
}

/// The `EF_AMDGPU_MACH` value of a supported target (the target table's `mach` column).
#[must_use]
pub const fn target_mach(target: Target) -> u32 {
    target.facts().mach
}

/// LLVM's name of an `EF_AMDGPU_MACH_AMDGCN_*` value (LLVM 19 `ELF.h`), `"unknown"` otherwise.
#[must_use]
pub const fn mach_name(mach: u32) -> &'static str {
    match mach {
        0x020 => "gfx600",
        0x021 => "gfx601",
        0x022 => "gfx700",
        0x023 => "gfx701",
        0x024 => "gfx702",
        0x025 => "gfx703",
        0x026 => "gfx704",
        0x028 => "gfx801",
        0x029 => "gfx802",
        0x02a => "gfx803",
        0x02b => "gfx810",
        0x02c => "gfx900",
        0x02d => "gfx902",
        0x02e => "gfx904",
        0x02f => "gfx906",
        0x030 => "gfx908",
        0x031 => "gfx909",
        0x032 => "gfx90c",
        0x033 => "gfx1010",
        0x034 => "gfx1011",
        0x035 => "gfx1012",
        0x036 => "gfx1030",
        0x037 => "gfx1031",
        0x038 => "gfx1032",
        0x039 => "gfx1033",
        0x03a => "gfx602",
        0x03b => "gfx705",
        0x03c => "gfx805",
        0x03d => "gfx1035",
        0x03e => "gfx1034",
        0x03f => "gfx90a",
        0x040 => "gfx940",
        0x041 => "gfx1100",
        0x042 => "gfx1013",
        0x043 => "gfx1150",
        0x044 => "gfx1103",
        0x045 => "gfx1036",
        0x046 => "gfx1101",
        0x047 => "gfx1102",
        0x048 => "gfx1200",
        0x04a => "gfx1151",
        0x04b => "gfx941",
        0x04c => "gfx942",
        0x04e => "gfx1201",
        0x051 => "gfx9-generic",
        0x052 => "gfx10-1-generic",
        0x053 => "gfx10-3-generic",
        0x054 => "gfx11-generic",
        0x055 => "gfx1152",
        0x059 => "gfx12-generic",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_machs_round_trip_and_name_the_target() {
        for t in Target::ALL {
            assert_eq!(supported_target(target_mach(t)), Some(t));
            assert_eq!(mach_name(target_mach(t)), t.name());
        }
        // Generic processors are known names but not supported targets (reference §7 values).
        assert_eq!(mach_name(0x053), "gfx10-3-generic");
        assert_eq!(supported_target(0x054), None);
        assert_eq!(mach_name(0x0ff), "unknown");
    }

    #[test]
    fn e_flags_literals() {
        // llvm-readelf-19 -h prints "Flags: 0xB3F, gfx90a, xnack+, sramecc-" for the gfx90a fixture.
        let id = TargetId::from_e_flags(0xB3F);
        assert_eq!((id.mach, id.name, id.target), (0x3F, "gfx90a", None));
        assert_eq!((id.xnack, id.sramecc), (TargetFeature::On, TargetFeature::Off));
        assert_eq!(id.to_target_id(), "gfx90a:sramecc-:xnack+");
        assert!(id.matches_target_id("amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+"));
        assert!(id.matches_target_id("gfx90a:xnack+:sramecc-"));
        assert!(!id.matches_target_id("gfx90a:xnack+"));
        assert!(!id.matches_target_id("gfx90a"));

        let id = TargetId::from_e_flags(0x41);
        assert_eq!(id.target, Some(Target::Gfx1100));
        assert_eq!((id.xnack, id.sramecc), (TargetFeature::Unsupported, TargetFeature::Unsupported));
        assert!(id.matches_target_id("amdgcn-amd-amdhsa--gfx1100"));
        assert!(!id.matches_target_id("amdgcn-amd-amdhsa--gfx1101"));
        assert!(!id.matches_target_id("gfx1100:xnack-"));
        assert!(!id.matches_target_id("gfx1100:bogus+"));
        assert!(!id.matches_target_id("gfx1100:xnack"));
        assert!(!id.matches_target_id("gfx1100:"));

        let any = TargetId::from_e_flags(0x41 | 0x100 | 0x400);
        assert_eq!((any.xnack, any.sramecc), (TargetFeature::Any, TargetFeature::Any));
        assert_eq!(TargetId::from_e_flags(0x41 | 0x1000).unknown_flags, 0x1000);
        assert_eq!(TargetId::from_e_flags(0x0300_0054).generic_version, 3);
        assert_eq!(TargetFeature::from_flags(u32::MAX, 0), TargetFeature::Unsupported);
    }

    #[test]
    fn abi_versions() {
        assert_eq!(CodeObjectVersion::from_abi_version(2), Some(CodeObjectVersion::V4));
        assert_eq!(CodeObjectVersion::from_abi_version(3), Some(CodeObjectVersion::V5));
        assert_eq!(CodeObjectVersion::from_abi_version(4), Some(CodeObjectVersion::V6));
        for v in [0, 1, 5, 255] {
            assert_eq!(CodeObjectVersion::from_abi_version(v), None);
        }
    }
}
