//! `AMDGPU_FAMILY_*` from `amdgpu_drm.h`, decoded.
//!
//! The installed header (libdrm 2.4.114) ends at Yellow Carp; the families of gfx11 and gfx12
//! parts come from newer headers and decode here as [`Family::Other`] until the header that
//! defines them is the one transcribed.

use crate::abi::{
    AMDGPU_FAMILY_AI, AMDGPU_FAMILY_CI, AMDGPU_FAMILY_CZ, AMDGPU_FAMILY_KV, AMDGPU_FAMILY_NV, AMDGPU_FAMILY_RV,
    AMDGPU_FAMILY_SI, AMDGPU_FAMILY_UNKNOWN, AMDGPU_FAMILY_VGH, AMDGPU_FAMILY_VI, AMDGPU_FAMILY_YC,
};

/// A GPU family id (`drm_amdgpu_info_device::family`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `AMDGPU_FAMILY_UNKNOWN`.
    Unknown,
    /// `AMDGPU_FAMILY_SI`.
    Si,
    /// `AMDGPU_FAMILY_CI`.
    Ci,
    /// `AMDGPU_FAMILY_KV`.
    Kv,
    /// `AMDGPU_FAMILY_VI`.
    Vi,
    /// `AMDGPU_FAMILY_CZ`.
    Cz,
    /// `AMDGPU_FAMILY_AI`.
    Ai,
    /// `AMDGPU_FAMILY_RV`.
    Rv,
    /// `AMDGPU_FAMILY_NV`.
    Nv,
    /// `AMDGPU_FAMILY_VGH`.
    Vgh,
    /// `AMDGPU_FAMILY_YC`.
    Yc,
    /// A value the installed header does not define.
    Other(u32),
}

impl Family {
    /// Decodes a raw family id; never fails.
    #[must_use]
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            AMDGPU_FAMILY_UNKNOWN => Self::Unknown,
            AMDGPU_FAMILY_SI => Self::Si,
            AMDGPU_FAMILY_CI => Self::Ci,
            AMDGPU_FAMILY_KV => Self::Kv,
            AMDGPU_FAMILY_VI => Self::Vi,
            AMDGPU_FAMILY_CZ => Self::Cz,
            AMDGPU_FAMILY_AI => Self::Ai,
            AMDGPU_FAMILY_RV => Self::Rv,
            AMDGPU_FAMILY_NV => Self::Nv,
            AMDGPU_FAMILY_VGH => Self::Vgh,
            AMDGPU_FAMILY_YC => Self::Yc,
            other => Self::Other(other),
        }
    }

    /// The raw family id.
    #[must_use]
    pub fn raw(self) -> u32 {
        match self {
            Self::Unknown => AMDGPU_FAMILY_UNKNOWN,
            Self::Si => AMDGPU_FAMILY_SI,
            Self::Ci => AMDGPU_FAMILY_CI,
            Self::Kv => AMDGPU_FAMILY_KV,
            Self::Vi => AMDGPU_FAMILY_VI,
            Self::Cz => AMDGPU_FAMILY_CZ,
            Self::Ai => AMDGPU_FAMILY_AI,
            Self::Rv => AMDGPU_FAMILY_RV,
            Self::Nv => AMDGPU_FAMILY_NV,
            Self::Vgh => AMDGPU_FAMILY_VGH,
            Self::Yc => AMDGPU_FAMILY_YC,
            Self::Other(raw) => raw,
        }
    }

    /// The family's name with the chips the header's comment lists for it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Si => "SI (Hainan, Oland, Verde, Pitcairn, Tahiti)",
            Self::Ci => "CI (Bonaire, Hawaii)",
            Self::Kv => "KV (Kaveri, Kabini, Mullins)",
            Self::Vi => "VI (Iceland, Tonga)",
            Self::Cz => "CZ (Carrizo, Stoney)",
            Self::Ai => "AI (Vega10)",
            Self::Rv => "RV (Raven)",
            Self::Nv => "NV (Navi10)",
            Self::Vgh => "VGH (Van Gogh)",
            Self::Yc => "YC (Yellow Carp)",
            Self::Other(_) => "not defined by the installed amdgpu_drm.h",
        }
    }
}

impl core::fmt::Display for Family {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Other(raw) => write!(f, "family {raw} ({})", self.name()),
            _ => f.write_str(self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_header_family_round_trips_and_others_stay_raw() {
        for raw in [0, 110, 120, 125, 130, 135, 141, 142, 143, 144, 146] {
            let family = Family::from_raw(raw);
            assert!(!matches!(family, Family::Other(_)), "{raw}");
            assert_eq!(family.raw(), raw);
        }
        assert_eq!(Family::from_raw(145), Family::Other(145));
        assert_eq!(Family::from_raw(145).raw(), 145);
        assert_eq!(Family::Nv.to_string(), "NV (Navi10)");
    }
}
