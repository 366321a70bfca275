//! GPU families and targets.
//!
//! Families differ in register maps and field layouts (`reference/amd-reference.md` §2, §3, §9);
//! shared code asks a [`Family`], it never compares target names.

use core::fmt;
use core::str::FromStr;

/// A hardware family with its own register recipe. Ordered oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// GFX10.3 (RDNA2): gfx1030.
    Gfx10_3,
    /// GFX11 / GFX11.5 (RDNA3): gfx1100, gfx1151.
    Gfx11,
    /// GFX12 / GC 12.0 (RDNA4): gfx1200, gfx1201.
    Gfx12,
}

impl Family {
    /// All families, oldest first.
    pub const ALL: [Family; 3] = [Family::Gfx10_3, Family::Gfx11, Family::Gfx12];

    /// The name used in the reference table and in reports (`gfx10_3`, `gfx11`, `gfx12`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Family::Gfx10_3 => "gfx10_3",
            Family::Gfx11 => "gfx11",
            Family::Gfx12 => "gfx12",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A supported GPU target (`gfxNNNN`). Anything else fails closed at parse time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// Navi21 class, GFX10.3.
    Gfx1030,
    /// Navi31 class, GFX11.
    Gfx1100,
    /// Strix Halo class, GFX11.5.
    Gfx1151,
    /// Navi44 class, GFX12.
    Gfx1200,
    /// Navi48 class, GFX12.
    Gfx1201,
}

impl Target {
    /// All supported targets.
    pub const ALL: [Target; 5] = [Target::Gfx1030, Target::Gfx1100, Target::Gfx1151, Target::Gfx1200, Target::Gfx1201];

    /// The family whose register recipe this target uses.
    #[must_use]
    pub const fn family(self) -> Family {
        match self {
            Target::Gfx1030 => Family::Gfx10_3,
            Target::Gfx1100 | Target::Gfx1151 => Family::Gfx11,
            Target::Gfx1200 | Target::Gfx1201 => Family::Gfx12,
        }
    }

    /// The `gfxNNNN` name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Target::Gfx1030 => "gfx1030",
            Target::Gfx1100 => "gfx1100",
            Target::Gfx1151 => "gfx1151",
            Target::Gfx1200 => "gfx1200",
            Target::Gfx1201 => "gfx1201",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A target string that is not one of the supported `gfxNNNN` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unsupported GPU target (supported: gfx1030, gfx1100, gfx1151, gfx1200, gfx1201)")]
pub struct UnknownTarget;

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
    fn families_are_ordered() {
        assert!(Family::Gfx10_3 < Family::Gfx11 && Family::Gfx11 < Family::Gfx12);
    }
}
