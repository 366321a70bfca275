//! The family table and the target table: everything that differs between GPU families and
//! between targets, as data.
//!
//! Families differ in register maps and field layouts (`reference/amd-reference.md` §2, §3, §9),
//! in cache-control bits, in how `DISPATCH_DIRECT` counts its dimensions and in how scratch is
//! addressed (§6). Each family module of [`crate::regs`] holds its row, a [`FamilyFacts`] value;
//! [`Family::facts`] is the one `match` on a family in the workspace. Targets are rows of
//! [`TARGETS`]: name, family, `EF_AMDGPU_MACH`, a PCI device id and wave sizes. Shared code reads a
//! field of a row; it never matches a family, compares targets or looks a register up by name.
//!
//! Adding a target of an existing family is one variant of [`Target`] and one row of [`TARGETS`]
//! (`docs/ARCHITECTURE.md`, "Adding a GPU target or family").

use core::fmt;
use core::str::FromStr;

use crate::bits::FieldDesc;
use crate::packet::GcrCntl;
use crate::regs::{self, RegisterInfo};

/// A hardware family with its own register recipe. Ordered oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// GFX10.3 (RDNA2): gfx1030.
    Gfx10_3,
    /// GFX11 / GFX11.5 (RDNA3, RDNA3.5): gfx1100, gfx1150, gfx1151.
    Gfx11,
    /// GFX12 / GC 12.0 (RDNA4): gfx1200, gfx1201.
    Gfx12,
}

impl Family {
    /// All families, oldest first.
    pub const ALL: [Family; 3] = [Family::Gfx10_3, Family::Gfx11, Family::Gfx12];

    /// The family's row of the family table. The one `match` on a family in the workspace.
    #[must_use]
    pub const fn facts(self) -> &'static FamilyFacts {
        match self {
            Family::Gfx10_3 => &regs::gfx10_3::FACTS,
            Family::Gfx11 => &regs::gfx11::FACTS,
            Family::Gfx12 => &regs::gfx12::FACTS,
        }
    }

    /// The name used in the reference table and in reports (`gfx10_3`, `gfx11`, `gfx12`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.facts().name
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a family addresses scratch (reference §6 "target properties").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlatScratch {
    /// Absolute flat scratch (gfx10.3): a kernel may ask for the 4-SGPR private-segment buffer
    /// and flat-scratch-init user SGPRs.
    Absolute,
    /// Architected flat scratch (gfx11, gfx12): `ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER` and
    /// `ENABLE_SGPR_FLAT_SCRATCH_INIT` must be 0 (reference §6, kernel_code_properties bits 0 and 5;
    /// "Initial SGPR order": "not supported with architected flat scratch").
    Architected,
}

/// A named group of bits a kernel descriptor must leave zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ZeroBits {
    /// LLVM's field names, joined (`PRIV, DEBUG_MODE`).
    pub names: &'static str,
    /// The bits.
    pub mask: u32,
}

/// The `COMPUTE_PGM_RSRC1/2/3` bits a kernel descriptor must leave zero on a family, beyond the
/// bits every family reserves (reference §3 "Kernel-descriptor view of RSRC1/2/3").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DescriptorZeroBits {
    /// RSRC1 bits.
    pub rsrc1: &'static [ZeroBits],
    /// RSRC2 bits.
    pub rsrc2: &'static [ZeroBits],
    /// RSRC3 bits (every bit outside the family's fields too).
    pub rsrc3: &'static [ZeroBits],
}

/// The compute registers a dispatch writes and a command processor reads, with the fields shared
/// code needs, on one family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ComputeRegisters {
    /// `COMPUTE_DISPATCH_INITIATOR` (the last dword of `DISPATCH_DIRECT`).
    pub dispatch_initiator: RegisterInfo,
    /// `COMPUTE_PGM_LO` (entry >> 8).
    pub pgm_lo: RegisterInfo,
    /// `COMPUTE_PGM_HI` (entry >> 40).
    pub pgm_hi: RegisterInfo,
    /// `COMPUTE_PGM_RSRC1`.
    pub pgm_rsrc1: RegisterInfo,
    /// `COMPUTE_PGM_RSRC2`.
    pub pgm_rsrc2: RegisterInfo,
    /// `COMPUTE_PGM_RSRC3`.
    pub pgm_rsrc3: RegisterInfo,
    /// `COMPUTE_NUM_THREAD_X/Y/Z`.
    pub num_thread: [RegisterInfo; 3],
    /// `COMPUTE_USER_DATA_0..15` (reference §6: at most 16 user SGPRs are loaded from them).
    pub user_data: [RegisterInfo; 16],
    /// Registers the queue's owner programs and an IB never rewrites (`COMPUTE_TMPRING_SIZE`, the
    /// `COMPUTE_STATIC_THREAD_MGMT_SE*` masks that exist on the family).
    pub queue_owned: &'static [RegisterInfo],
    /// `COMPUTE_PGM_RSRC2.USER_SGPR`.
    pub rsrc2_user_sgpr: FieldDesc,
    /// `COMPUTE_PGM_RSRC2.LDS_SIZE`.
    pub rsrc2_lds_size: FieldDesc,
    /// `COMPUTE_NUM_THREAD_{X,Y,Z}.NUM_THREAD_FULL`.
    pub num_thread_full: [FieldDesc; 3],
    /// `COMPUTE_NUM_THREAD_{X,Y,Z}.NUM_THREAD_PARTIAL`.
    pub num_thread_partial: [FieldDesc; 3],
}

/// One row of the family table: every fact shared code needs that differs between families.
#[derive(Clone, Copy, Debug)]
pub struct FamilyFacts {
    /// The family.
    pub family: Family,
    /// The name used in the reference table and in reports (`gfx10_3`).
    pub name: &'static str,
    /// Every register this crate knows on the family, ordered by dword offset.
    pub registers: &'static [RegisterInfo],
    /// The compute registers of a dispatch.
    pub compute: ComputeRegisters,
    /// `GCR_CNTL` an `ACQUIRE_MEM` must set before a dispatch that reads what an earlier one
    /// wrote.
    pub consumer_acquire_gcr: GcrCntl,
    /// `GCR_CNTL` of a system-scope acquire (entry and terminal of an IB).
    pub system_acquire_gcr: GcrCntl,
    /// Whether `DISPATCH_DIRECT`'s `DIM_*` count work-items (`USE_THREAD_DIMENSIONS` = 1) rather
    /// than work-groups in this project's recipe.
    pub dims_in_work_items: bool,
    /// Bytes per unit of `COMPUTE_PGM_RSRC2.LDS_SIZE`.
    pub lds_encode_granule_bytes: u32,
    /// Bytes the hardware allocates LDS in.
    pub lds_alloc_granule_bytes: u32,
    /// Largest LDS size `LDS_SIZE` can encode.
    pub lds_size_max_bytes: u32,
    /// Bytes per unit of `COMPUTE_TMPRING_SIZE.WAVESIZE`.
    pub tmpring_wavesize_unit_bytes: u32,
    /// Largest scratch size per wave `WAVESIZE` can encode.
    pub tmpring_wavesize_max_bytes: u32,
    /// How scratch is addressed.
    pub flat_scratch: FlatScratch,
    /// Descriptor bits the family reserves.
    pub descriptor_zero_bits: DescriptorZeroBits,
}

impl FamilyFacts {
    /// Whether a kernel on this family may take the 4-SGPR private-segment buffer as user SGPRs
    /// (and a replay writes it): only with absolute flat scratch (reference §6).
    #[must_use]
    pub const fn private_segment_buffer(&self) -> bool {
        matches!(self.flat_scratch, FlatScratch::Absolute)
    }

    /// Whether `gcr` sets every bit [`Self::consumer_acquire_gcr`] requires.
    #[must_use]
    pub const fn invalidates_consumer_caches(&self, gcr: GcrCntl) -> bool {
        let required = self.consumer_acquire_gcr.raw();
        gcr.raw() & required == required
    }
}

/// A supported GPU target (`gfxNNNN`). Anything else fails closed at parse time. Each variant has
/// its row in [`TARGETS`], at the variant's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// Navi21 class, GFX10.3.
    Gfx1030,
    /// Navi31 class, GFX11.
    Gfx1100,
    /// Strix Point class, GFX11.5.
    Gfx1150,
    /// Strix Halo class, GFX11.5.
    Gfx1151,
    /// Navi44 class, GFX12.
    Gfx1200,
    /// Navi48 class, GFX12.
    Gfx1201,
}

/// Wave sizes a target runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WaveSizes {
    /// Wave32 (the RDNA default).
    pub wave32: bool,
    /// Wave64 (LLVM's `wavefrontsize64` feature).
    pub wave64: bool,
}

/// Every RDNA target runs wave32 and wave64 (LLVM AMDGPUUsage, processor table: `wavefrontsize64`
/// is a feature of every gfx10.3, gfx11 and gfx12 processor; wave32 is their default).
const RDNA_WAVES: WaveSizes = WaveSizes { wave32: true, wave64: true };

/// One row of the target table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetFacts {
    /// The target.
    pub target: Target,
    /// The `gfxNNNN` name.
    pub name: &'static str,
    /// The family whose register recipe the target uses.
    pub family: Family,
    /// `EF_AMDGPU_MACH_AMDGCN_*` of its code objects (reference §7; LLVM 19 `ELF.h` for the
    /// values outside the §7 table).
    pub mach: u32,
    /// A PCI device id of a product of the target (libdrm's `data/amdgpu.ids`), reported as the
    /// HSA agent's chip id by the soft HSA runtime.
    pub pci_device_id: u16,
    /// Wave sizes.
    pub wave_sizes: WaveSizes,
}

/// The target table, in [`Target`] order (checked at compile time).
pub const TARGETS: [TargetFacts; 6] = [
    TargetFacts {
        target: Target::Gfx1030,
        name: "gfx1030",
        family: Family::Gfx10_3,
        mach: 0x036,
        pci_device_id: 0x73bf,
        wave_sizes: RDNA_WAVES,
    },
    TargetFacts {
        target: Target::Gfx1100,
        name: "gfx1100",
        family: Family::Gfx11,
        mach: 0x041,
        pci_device_id: 0x744c,
        wave_sizes: RDNA_WAVES,
    },
    TargetFacts {
        target: Target::Gfx1150,
        name: "gfx1150",
        family: Family::Gfx11,
        mach: 0x043,
        pci_device_id: 0x150e,
        wave_sizes: RDNA_WAVES,
    },
    TargetFacts {
        target: Target::Gfx1151,
        name: "gfx1151",
        family: Family::Gfx11,
        mach: 0x04a,
        pci_device_id: 0x1586,
        wave_sizes: RDNA_WAVES,
    },
    TargetFacts {
        target: Target::Gfx1200,
        name: "gfx1200",
        family: Family::Gfx12,
        mach: 0x048,
        pci_device_id: 0x7590,
        wave_sizes: RDNA_WAVES,
    },
    TargetFacts {
        target: Target::Gfx1201,
        name: "gfx1201",
        family: Family::Gfx12,
        mach: 0x04e,
        pci_device_id: 0x7550,
        wave_sizes: RDNA_WAVES,
    },
];

// INVARIANT: `Target::facts` indexes `TARGETS` by the variant's index; a row out of order, or a
// `mach` that two rows share, does not compile.
const _: () = {
    let mut i = 0;
    while i < TARGETS.len() {
        assert!(TARGETS[i].target as usize == i, "TARGETS is not in Target order");
        let mut j = i + 1;
        while j < TARGETS.len() {
            assert!(TARGETS[i].mach != TARGETS[j].mach, "two targets share an EF_AMDGPU_MACH");
            j += 1;
        }
        i += 1;
    }
};

impl Target {
    /// All supported targets, in table order.
    pub const ALL: [Target; TARGETS.len()] = {
        let mut all = [Target::Gfx1030; TARGETS.len()];
        let mut i = 0;
        while i < TARGETS.len() {
            all[i] = TARGETS[i].target;
            i += 1;
        }
        all
    };

    /// The target's row of [`TARGETS`].
    #[must_use]
    pub const fn facts(self) -> &'static TargetFacts {
        &TARGETS[self as usize]
    }

    /// The family whose register recipe this target uses.
    #[must_use]
    pub const fn family(self) -> Family {
        self.facts().family
    }

    /// The `gfxNNNN` name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.facts().name
    }

    /// The supported target whose code objects carry `EF_AMDGPU_MACH` value `mach`.
    #[must_use]
    pub const fn from_mach(mach: u32) -> Option<Target> {
        let mut i = 0;
        while i < TARGETS.len() {
            if TARGETS[i].mach == mach {
                return Some(TARGETS[i].target);
            }
            i += 1;
        }
        None
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A target string that is not one of the supported `gfxNNNN` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unsupported GPU target (supported: {})", SupportedTargets)]
pub struct UnknownTarget;

/// The names of [`TARGETS`], comma-separated, for messages.
#[derive(Clone, Copy, Debug)]
pub struct SupportedTargets;

impl fmt::Display for SupportedTargets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, row) in TARGETS.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(row.name)?;
        }
        Ok(())
    }
}

impl FromStr for Target {
    type Err = UnknownTarget;

    /// Parses an exact, lower-case `gfxNNNN` name. Feature suffixes (`:xnack-`) are not accepted
    /// here: target-id parsing belongs to the code-object reader.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Target::ALL.into_iter().find(|t| t.name() == s).ok_or(UnknownTarget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn parse_targets() {
        assert_eq!("gfx1030".parse(), Ok(Target::Gfx1030));
        assert_eq!("gfx1151".parse::<Target>().map(Target::family), Ok(Family::Gfx11));
        assert_eq!("gfx1201".parse::<Target>().map(Target::family), Ok(Family::Gfx12));
        for bad in ["", "gfx", "gfx900", "gfx1101", "GFX1100", "gfx1100:xnack-", " gfx1030"] {
            assert_eq!(bad.parse::<Target>(), Err(UnknownTarget), "{bad:?}");
        }
    }

    #[test]
    fn every_row_parses_back_and_names_its_family() {
        for row in TARGETS {
            assert_eq!(row.name.parse::<Target>(), Ok(row.target));
            assert_eq!(Target::from_mach(row.mach), Some(row.target));
            assert_eq!(row.target.facts().family.facts().family, row.family);
        }
        assert_eq!(Target::from_mach(0x053), None, "a generic processor is not a target");
    }

    #[test]
    fn unknown_target_lists_the_table() {
        let message = UnknownTarget.to_string();
        for row in TARGETS {
            assert!(message.contains(row.name), "{message}");
        }
    }

    #[test]
    fn families_are_ordered() {
        assert!(Family::Gfx10_3 < Family::Gfx11 && Family::Gfx11 < Family::Gfx12);
    }

    #[test]
    fn each_family_row_is_its_own() {
        for family in Family::ALL {
            assert_eq!(family.facts().family, family);
        }
        // Reference §6 target properties: absolute flat scratch on gfx1030 only.
        assert!(Family::Gfx10_3.facts().private_segment_buffer());
        assert!(!Family::Gfx11.facts().private_segment_buffer());
        assert!(!Family::Gfx12.facts().private_segment_buffer());
    }
}
