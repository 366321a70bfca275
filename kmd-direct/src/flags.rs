//! The DRM flag words that are sets of independent bits, as `bitflags` types over the
//! header-checked constants of [`crate::abi`].

use bitflags::bitflags;
use static_assertions::const_assert_eq;

use crate::abi::{
    AMDGPU_GEM_CREATE_CP_MQD_GFX9, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED, AMDGPU_GEM_CREATE_CPU_GTT_USWC,
    AMDGPU_GEM_CREATE_ENCRYPTED, AMDGPU_GEM_CREATE_EXPLICIT_SYNC, AMDGPU_GEM_CREATE_NO_CPU_ACCESS,
    AMDGPU_GEM_CREATE_PREEMPTIBLE, AMDGPU_GEM_CREATE_VM_ALWAYS_VALID, AMDGPU_GEM_CREATE_VRAM_CLEARED,
    AMDGPU_GEM_CREATE_VRAM_CONTIGUOUS, AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE, AMDGPU_GEM_DOMAIN_CPU,
    AMDGPU_GEM_DOMAIN_GDS, AMDGPU_GEM_DOMAIN_GTT, AMDGPU_GEM_DOMAIN_GWS, AMDGPU_GEM_DOMAIN_MASK,
    AMDGPU_GEM_DOMAIN_OA, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_IB_FLAG_CE, AMDGPU_IB_FLAG_EMIT_MEM_SYNC,
    AMDGPU_IB_FLAG_PREAMBLE, AMDGPU_IB_FLAG_PREEMPT, AMDGPU_IB_FLAG_RESET_GDS_MAX_WAVE_ID,
    AMDGPU_IB_FLAG_TC_WB_NOT_INVALIDATE, AMDGPU_IB_FLAGS_SECURE, AMDGPU_IDS_FLAGS_FUSION, AMDGPU_IDS_FLAGS_PREEMPTION,
    AMDGPU_IDS_FLAGS_TMZ, AMDGPU_VM_DELAY_UPDATE, AMDGPU_VM_MTYPE_MASK, AMDGPU_VM_PAGE_EXECUTABLE, AMDGPU_VM_PAGE_PRT,
    AMDGPU_VM_PAGE_READABLE, AMDGPU_VM_PAGE_WRITEABLE,
};

bitflags! {
    /// `AMDGPU_GEM_DOMAIN_*`: where a buffer object may be placed
    /// (`drm_amdgpu_gem_create_in::domains`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct GemDomains: u32 {
        /// `AMDGPU_GEM_DOMAIN_CPU`.
        const CPU = AMDGPU_GEM_DOMAIN_CPU;
        /// `AMDGPU_GEM_DOMAIN_GTT`.
        const GTT = AMDGPU_GEM_DOMAIN_GTT;
        /// `AMDGPU_GEM_DOMAIN_VRAM`.
        const VRAM = AMDGPU_GEM_DOMAIN_VRAM;
        /// `AMDGPU_GEM_DOMAIN_GDS`.
        const GDS = AMDGPU_GEM_DOMAIN_GDS;
        /// `AMDGPU_GEM_DOMAIN_GWS`.
        const GWS = AMDGPU_GEM_DOMAIN_GWS;
        /// `AMDGPU_GEM_DOMAIN_OA`.
        const OA = AMDGPU_GEM_DOMAIN_OA;
    }
}

// The header's mask is exactly the named domains.
const_assert_eq!(GemDomains::all().bits(), AMDGPU_GEM_DOMAIN_MASK);

bitflags! {
    /// `AMDGPU_GEM_CREATE_*`: allocation flags (`drm_amdgpu_gem_create_in::domain_flags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct GemCreateFlags: u64 {
        /// `AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED`.
        const CPU_ACCESS_REQUIRED = AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED;
        /// `AMDGPU_GEM_CREATE_NO_CPU_ACCESS`.
        const NO_CPU_ACCESS = AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
        /// `AMDGPU_GEM_CREATE_CPU_GTT_USWC`.
        const CPU_GTT_USWC = AMDGPU_GEM_CREATE_CPU_GTT_USWC;
        /// `AMDGPU_GEM_CREATE_VRAM_CLEARED`.
        const VRAM_CLEARED = AMDGPU_GEM_CREATE_VRAM_CLEARED;
        /// `AMDGPU_GEM_CREATE_VRAM_CONTIGUOUS`.
        const VRAM_CONTIGUOUS = AMDGPU_GEM_CREATE_VRAM_CONTIGUOUS;
        /// `AMDGPU_GEM_CREATE_VM_ALWAYS_VALID`: resident for every submission without a BO list.
        const VM_ALWAYS_VALID = AMDGPU_GEM_CREATE_VM_ALWAYS_VALID;
        /// `AMDGPU_GEM_CREATE_EXPLICIT_SYNC`.
        const EXPLICIT_SYNC = AMDGPU_GEM_CREATE_EXPLICIT_SYNC;
        /// `AMDGPU_GEM_CREATE_CP_MQD_GFX9`.
        const CP_MQD_GFX9 = AMDGPU_GEM_CREATE_CP_MQD_GFX9;
        /// `AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE`.
        const VRAM_WIPE_ON_RELEASE = AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE;
        /// `AMDGPU_GEM_CREATE_ENCRYPTED`.
        const ENCRYPTED = AMDGPU_GEM_CREATE_ENCRYPTED;
        /// `AMDGPU_GEM_CREATE_PREEMPTIBLE`.
        const PREEMPTIBLE = AMDGPU_GEM_CREATE_PREEMPTIBLE;
    }
}

bitflags! {
    /// `AMDGPU_VM_PAGE_*` and `AMDGPU_VM_DELAY_UPDATE`: GPU mapping flags
    /// (`drm_amdgpu_gem_va::flags`).
    ///
    /// The memory type (`AMDGPU_VM_MTYPE_*`, bits 5 to 8) is one value, not a set of bits; it
    /// travels in the same word: `VmPageFlags::READABLE | VmPageFlags::mtype(AMDGPU_VM_MTYPE_UC)`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct VmPageFlags: u32 {
        /// `AMDGPU_VM_DELAY_UPDATE`.
        const DELAY_UPDATE = AMDGPU_VM_DELAY_UPDATE;
        /// `AMDGPU_VM_PAGE_READABLE`.
        const READABLE = AMDGPU_VM_PAGE_READABLE;
        /// `AMDGPU_VM_PAGE_WRITEABLE`.
        const WRITEABLE = AMDGPU_VM_PAGE_WRITEABLE;
        /// `AMDGPU_VM_PAGE_EXECUTABLE`.
        const EXECUTABLE = AMDGPU_VM_PAGE_EXECUTABLE;
        /// `AMDGPU_VM_PAGE_PRT`.
        const PRT = AMDGPU_VM_PAGE_PRT;
        /// The memory type field (`AMDGPU_VM_MTYPE_MASK`), so its bits survive `&`, `!` and `-`.
        const _ = AMDGPU_VM_MTYPE_MASK;
    }
}

impl VmPageFlags {
    /// The word holding one `AMDGPU_VM_MTYPE_*` value.
    ///
    /// # Panics
    ///
    /// When `mtype` has bits outside `AMDGPU_VM_MTYPE_MASK` (a programmer error).
    #[must_use]
    pub const fn mtype(mtype: u32) -> Self {
        assert!(mtype & !AMDGPU_VM_MTYPE_MASK == 0, "not an AMDGPU_VM_MTYPE_* value");
        Self::from_bits_retain(mtype)
    }
}

bitflags! {
    /// `AMDGPU_IB_FLAG_*`: flags of one IB (`drm_amdgpu_cs_chunk_ib::flags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct IbFlags: u32 {
        /// `AMDGPU_IB_FLAG_CE`.
        const CE = AMDGPU_IB_FLAG_CE;
        /// `AMDGPU_IB_FLAG_PREAMBLE`.
        const PREAMBLE = AMDGPU_IB_FLAG_PREAMBLE;
        /// `AMDGPU_IB_FLAG_PREEMPT`.
        const PREEMPT = AMDGPU_IB_FLAG_PREEMPT;
        /// `AMDGPU_IB_FLAG_TC_WB_NOT_INVALIDATE`.
        const TC_WB_NOT_INVALIDATE = AMDGPU_IB_FLAG_TC_WB_NOT_INVALIDATE;
        /// `AMDGPU_IB_FLAG_RESET_GDS_MAX_WAVE_ID`.
        const RESET_GDS_MAX_WAVE_ID = AMDGPU_IB_FLAG_RESET_GDS_MAX_WAVE_ID;
        /// `AMDGPU_IB_FLAGS_SECURE`.
        const SECURE = AMDGPU_IB_FLAGS_SECURE;
        /// `AMDGPU_IB_FLAG_EMIT_MEM_SYNC`.
        const EMIT_MEM_SYNC = AMDGPU_IB_FLAG_EMIT_MEM_SYNC;
    }
}

bitflags! {
    /// `AMDGPU_IDS_FLAGS_*`: device flags (`drm_amdgpu_info_device::ids_flags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct IdsFlags: u64 {
        /// `AMDGPU_IDS_FLAGS_FUSION`: an APU.
        const FUSION = AMDGPU_IDS_FLAGS_FUSION;
        /// `AMDGPU_IDS_FLAGS_PREEMPTION`.
        const PREEMPTION = AMDGPU_IDS_FLAGS_PREEMPTION;
        /// `AMDGPU_IDS_FLAGS_TMZ`: trusted memory zone.
        const TMZ = AMDGPU_IDS_FLAGS_TMZ;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::AMDGPU_VM_MTYPE_UC;

    #[test]
    fn flags_carry_the_header_bits() {
        assert_eq!((GemDomains::GTT | GemDomains::VRAM).bits(), 0x6);
        assert_eq!(GemCreateFlags::VM_ALWAYS_VALID.bits(), 1 << 6);
        let va = VmPageFlags::READABLE | VmPageFlags::EXECUTABLE | VmPageFlags::mtype(AMDGPU_VM_MTYPE_UC);
        assert_eq!(va.bits(), (1 << 1) | (1 << 3) | (4 << 5));
        assert_eq!((va - VmPageFlags::EXECUTABLE).bits(), (1 << 1) | (4 << 5));
        assert_eq!(IbFlags::all().bits(), 0x7f);
        assert_eq!(IdsFlags::from_bits_retain(0x5), IdsFlags::FUSION | IdsFlags::TMZ);
    }
}
