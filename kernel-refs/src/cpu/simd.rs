//! The vector instruction sets the CPU references use where this machine has them, detected at
//! run time. A vector path performs exactly the scalar path's `f32` operations in the same order
//! (each multiply and add rounded on its own, and a fused multiply-add exactly where the scalar
//! path's [`f32::mul_add`] is one, as in the quantised products), only several independent ones
//! at once, so it gives the same bits; each is tested against its scalar path.

/// A vector instruction set.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX2, FMA and F16C (256-bit registers).
    Avx2,
    /// AVX-512 F (512-bit registers), with AVX2, FMA and F16C.
    Avx512,
}

#[cfg(target_arch = "x86_64")]
impl Isa {
    /// Every vector instruction set the references know, widest first.
    pub(crate) const ALL: [Isa; 2] = [Isa::Avx512, Isa::Avx2];

    /// Whether this machine has it.
    pub(crate) fn available(self) -> bool {
        let avx2 = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c");
        match self {
            Isa::Avx2 => avx2,
            Isa::Avx512 => avx2 && std::arch::is_x86_feature_detected!("avx512f"),
        }
    }

    /// The widest one this machine has.
    pub(crate) fn widest() -> Option<Isa> {
        Isa::ALL.into_iter().find(|isa| isa.available())
    }
}

/// `body()`, inlined into a function compiled for `isa` where this machine has it, so that the
/// body's loops vectorise to that instruction set's registers; compiled for the baseline the
/// crate is built for otherwise (`None`, or an instruction set this machine lacks). The body's
/// `f32` operations round the same whichever it is compiled for: Rust never contracts a multiply
/// and an add into a fused multiply-add ([`f32::mul_add`] is one, rounded once, on every path), and the vector forms of `+`, `-`, `*`, `/`, comparisons
/// and selects are the scalar ones lane by lane. One thing is not fixed by the source, on any
/// path: when both operands of a commutative `+` or `*` are NaN, which payload the result carries
/// depends on the operand order the compiler picks; the result is a NaN either way. Give the
/// closure `#[inline(always)]`.
#[inline(always)]
pub(crate) fn compiled_for<R>(isa: Option<Isa>, body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx2,fma,f16c")]
        fn avx512<R>(body: impl FnOnce() -> R) -> R {
            body()
        }
        #[target_feature(enable = "avx2,fma,f16c")]
        fn avx2<R>(body: impl FnOnce() -> R) -> R {
            body()
        }
        match isa {
            Some(isa @ Isa::Avx512) if isa.available() => {
                #[allow(unsafe_code)]
                // SAFETY: `avx512` requires only the CPU features it is compiled for, and
                // `isa.available()` detected all of them on this machine.
                return unsafe { avx512(body) };
            }
            Some(isa @ Isa::Avx2) if isa.available() => {
                #[allow(unsafe_code)]
                // SAFETY: as for `avx512` above, with AVX2, FMA and F16C.
                return unsafe { avx2(body) };
            }
            _ => {}
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    if let Some(isa) = isa {
        match isa {}
    }
    body()
}

/// No vector instruction set on this architecture: every reference takes its scalar path.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {}

#[cfg(not(target_arch = "x86_64"))]
impl Isa {
    /// None.
    pub(crate) const ALL: [Isa; 0] = [];

    /// Never called: there is no value.
    pub(crate) fn available(self) -> bool {
        match self {}
    }

    /// None.
    pub(crate) fn widest() -> Option<Isa> {
        None
    }
}

/// The vector instruction sets this machine has, for tests that hold each vector path to its
/// scalar path. Under `CI=true` an x86-64 machine without AVX2 fails them rather than leave the
/// vector paths unchecked.
#[cfg(test)]
pub(crate) fn available_for_tests() -> Vec<Isa> {
    let isas: Vec<Isa> = Isa::ALL.into_iter().filter(|isa| isa.available()).collect();
    if cfg!(target_arch = "x86_64") && std::env::var("CI").as_deref() == Ok("true") {
        assert!(!isas.is_empty(), "CI=true: this x86-64 machine has no AVX2, the vector paths go unchecked");
    }
    isas
}

/// Asks the caches for the lines of `bytes[at..at + len]` (those inside `bytes`), ahead of the
/// vector paths' reads: a hint that changes no value.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse")]
pub(crate) fn prefetch(bytes: &[u8], at: usize, len: usize) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    let end = bytes.len().min(at.saturating_add(len));
    for offset in (at..end).step_by(64) {
        _mm_prefetch::<_MM_HINT_T0>(bytes[offset..].as_ptr().cast());
    }
}

/// The `x` values the vector paths' property tests draw: mostly small numbers, sometimes any
/// bit pattern (NaN, infinities, subnormals) or `-0.0`.
#[cfg(test)]
pub(crate) fn test_value() -> impl proptest::strategy::Strategy<Value = f32> {
    use proptest::prelude::*;
    prop_oneof![
        8 => -4.0f32..4.0,
        1 => any::<u32>().prop_map(f32::from_bits),
        1 => Just(-0.0f32),
    ]
}
