//! The bit sets among the header's enums as `bitflags` flag types: [`bitflags::Flags`] for
//! [`AgentFeature`], [`QueueFeature`], [`AmdMemoryPoolGlobalFlag`] and [`AmdSignalAttribute`],
//! over the same header-checked constants, so that a word the runtime returns can be tested
//! (`contains`, `intersects`), listed by name (`iter_names`) and checked for unknown bits
//! (`from_bits`) without a second name for each bit.

use bitflags::{Flag, Flags};

use crate::{AgentFeature, AmdMemoryPoolGlobalFlag, AmdSignalAttribute, QueueFeature};

/// `impl Flags` for a `c_enums!` newtype whose enumerators are single bits.
macro_rules! flag_set {
    ($($ty:ident { $($flag:ident),+ $(,)? })+) => {$(
        impl Flags for $ty {
            const FLAGS: &'static [Flag<Self>] = &[$(Flag::new(stringify!($flag), Self::$flag)),+];
            type Bits = u32;

            fn bits(&self) -> u32 {
                self.0
            }

            fn from_bits_retain(bits: u32) -> Self {
                Self(bits)
            }
        }
    )+};
}

flag_set! {
    AgentFeature { KERNEL_DISPATCH, AGENT_DISPATCH }
    QueueFeature { KERNEL_DISPATCH, AGENT_DISPATCH }
    AmdMemoryPoolGlobalFlag { KERNARG_INIT, FINE_GRAINED, COARSE_GRAINED }
    AmdSignalAttribute { AMD_GPU_ONLY, IPC }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag is one bit of its enum and no two share one: the sets are sets of independent
    /// bits, as `Flags` assumes.
    fn independent_bits<F: Flags<Bits = u32>>() {
        let mut seen = 0u32;
        for flag in F::FLAGS {
            let bits = flag.value().bits();
            assert_eq!(bits.count_ones(), 1, "{} is one bit", flag.name());
            assert_eq!(seen & bits, 0, "{} shares a bit", flag.name());
            seen |= bits;
        }
        assert_eq!(F::all().bits(), seen);
    }

    #[test]
    fn every_set_is_of_independent_bits() {
        independent_bits::<AgentFeature>();
        independent_bits::<QueueFeature>();
        independent_bits::<AmdMemoryPoolGlobalFlag>();
        independent_bits::<AmdSignalAttribute>();
    }

    #[test]
    fn a_runtime_word_is_tested_named_and_checked_for_unknown_bits() {
        let kernarg = AmdMemoryPoolGlobalFlag::from_bits_retain(3);
        assert!(kernarg.contains(AmdMemoryPoolGlobalFlag::KERNARG_INIT));
        assert!(!kernarg.contains(AmdMemoryPoolGlobalFlag::COARSE_GRAINED));
        let names: Vec<&str> = kernarg.iter_names().map(|(name, _)| name).collect();
        assert_eq!(names, ["KERNARG_INIT", "FINE_GRAINED"]);
        assert_eq!(AmdSignalAttribute::from_bits(4), None, "bit 2 is not a signal attribute");
        assert_eq!(AmdSignalAttribute::from_bits(1), Some(AmdSignalAttribute::AMD_GPU_ONLY));
    }
}
