//! Declared effects resolved for one launch: the byte ranges a kernel may touch, from its
//! declaration ([`crate::effects`]) evaluated over the launch's kernarg bytes and geometry. The
//! soft device resolves them before it runs a kernel's CPU reference, and lets the reference touch
//! nothing else; the engine's launch funnel resolves them while it records a capture, and refuses
//! a launch whose declared uses do not cover them.

use crate::effects::{EffectsDecl, Extent};
use crate::signature::{ArgDecl, ArgKind};

use crate::launch::{ArgRead, KernargError, Launch};

pub use crate::effects::Access;

/// An effect of one launch: a byte range and how it is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResolvedEffect {
    /// Index of the pointer argument.
    pub arg_index: usize,
    /// The pointer's value: the first byte of the range.
    pub address: u64,
    /// Length of the range; may be 0.
    pub bytes: u64,
    /// How the kernel uses the range.
    pub access: Access,
}

/// Why [`resolve`] could not compute a launch's effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// An argument lies outside the kernarg segment.
    #[error(transparent)]
    Kernarg(#[from] KernargError),
    /// The declaration names an argument index the kernel does not have.
    #[error("argument index {arg_index} is out of range for {count} explicit arguments")]
    NoSuchArgument {
        /// The index.
        arg_index: usize,
        /// The kernel's explicit argument count.
        count: usize,
    },
    /// The declaration uses an argument of the wrong kind.
    #[error("argument {arg_index} is a {found:?}, the declaration needs a {expected:?}")]
    WrongArgumentKind {
        /// The index.
        arg_index: usize,
        /// What the declaration needs.
        expected: ArgKind,
        /// What the argument is.
        found: ArgKind,
    },
    /// The extent counts work-groups of size 0.
    #[error("the extent counts work-groups, but the work-group size in x is 0")]
    ZeroWorkgroupSize,
    /// The extent of argument `arg_index` does not fit 64 bits.
    #[error("the extent of argument {arg_index} overflows 64 bits")]
    ExtentOverflow {
        /// The pointer argument.
        arg_index: usize,
    },
    /// The range of argument `arg_index` runs past the end of the address space.
    #[error("argument {arg_index}: {bytes} bytes at {address:#x} run past the end of the address space")]
    AddressOverflow {
        /// The pointer argument.
        arg_index: usize,
        /// The pointer.
        address: u64,
        /// The extent.
        bytes: u64,
    },
}

/// The byte ranges `decl` declares for `launch`, in declaration order. Arguments are read from the
/// launch's kernarg bytes; nothing else about the launch is validated here.
///
/// # Errors
/// [`ResolveError`] for a short kernarg segment, a declaration that does not fit its arguments,
/// or an extent or range that overflows 64 bits.
pub fn resolve(decl: &EffectsDecl, launch: &Launch<'_>) -> Result<Vec<ResolvedEffect>, ResolveError> {
    decl.effects
        .iter()
        .map(|effect| {
            let arg_index = effect.arg_index;
            let address = arg(decl.args, arg_index, ArgKind::GlobalBuffer)?.read_ptr(launch.kernarg)?;
            let bytes = eval(&effect.bytes, decl.args, launch)?.ok_or(ResolveError::ExtentOverflow { arg_index })?;
            if bytes > 0 && address.checked_add(bytes).is_none() {
                return Err(ResolveError::AddressOverflow { arg_index, address, bytes });
            }
            Ok(ResolvedEffect { arg_index, address, bytes, access: effect.access })
        })
        .collect()
}

/// Explicit argument `arg_index`, which must be of kind `expected`.
fn arg(args: &'static [ArgDecl], arg_index: usize, expected: ArgKind) -> Result<&'static ArgDecl, ResolveError> {
    let a = args.get(arg_index).ok_or(ResolveError::NoSuchArgument { arg_index, count: args.len() })?;
    if a.kind != expected {
        return Err(ResolveError::WrongArgumentKind { arg_index, expected, found: a.kind });
    }
    Ok(a)
}

/// The value of `extent` for `launch`; `Ok(None)` when it overflows 64 bits.
///
/// # Errors
/// [`ResolveError`] for a short kernarg segment, an argument index that is not a `u32`
/// argument, or [`Extent::WorkgroupCountX`] with a work-group size of 0.
pub fn eval(extent: &Extent, args: &'static [ArgDecl], launch: &Launch<'_>) -> Result<Option<u64>, ResolveError> {
    Ok(match *extent {
        Extent::Const(value) => Some(value),
        Extent::Arg(index) => Some(arg(args, index, ArgKind::U32)?.read_u32(launch.kernarg)?.into()),
        Extent::GridSizeX => Some(launch.grid_size[0].into()),
        Extent::WorkgroupSizeX => Some(launch.workgroup_size[0].into()),
        Extent::WorkgroupCountX => Some(launch.workgroup_count_x().ok_or(ResolveError::ZeroWorkgroupSize)?.into()),
        Extent::Mul(a, b) => match (eval(a, args, launch)?, eval(b, args, launch)?) {
            (Some(a), Some(b)) => a.checked_mul(b),
            _ => None,
        },
        Extent::Min(a, b) => match (eval(a, args, launch)?, eval(b, args, launch)?) {
            (Some(a), Some(b)) => Some(a.min(b)),
            // The other side bounds the minimum.
            (Some(v), None) | (None, Some(v)) => Some(v),
            (None, None) => None,
        },
        Extent::Add(a, b) => match (eval(a, args, launch)?, eval(b, args, launch)?) {
            (Some(a), Some(b)) => a.checked_add(b),
            _ => None,
        },
        Extent::Div(a, divisor) => eval(a, args, launch)?.and_then(|a| a.checked_div(divisor)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::{BLOCK_SUM, EffectDecl, FILL, KV_STORE, MATVEC};
    use Access::{Read, Write};
    use Extent::{Add, Arg, Const, Div};

    fn kernarg_fill(out: u64, n: u32) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&out.to_le_bytes());
        k[12..].copy_from_slice(&n.to_le_bytes());
        k
    }

    #[test]
    fn resolves_extents_for_a_launch() {
        let k = kernarg_fill(0x1000, 100);
        let mut launch =
            Launch { kernarg: &k, grid_size: [64, 1, 1], workgroup_size: [32, 1, 1], dynamic_lds_bytes: 0 };
        let expect = |bytes| Ok(vec![ResolvedEffect { arg_index: 0, address: 0x1000, bytes, access: Write }]);
        assert_eq!(resolve(&FILL, &launch), expect(256));
        launch.grid_size[0] = 1000;
        assert_eq!(resolve(&FILL, &launch), expect(400));
        let k = kernarg_fill(0, 0);
        launch.kernarg = &k;
        assert_eq!(
            resolve(&FILL, &launch),
            Ok(vec![ResolvedEffect { arg_index: 0, address: 0, bytes: 0, access: Write }])
        );
    }

    #[test]
    fn sums_and_quotients_resolve_and_overflow() {
        // kv_store, pos 3, width 10, grid 8: 4 * (3 * 10 + min(10, 8)) = 152 bytes of cache.
        let mut k = [0u8; 24];
        k[..8].copy_from_slice(&0x1000u64.to_le_bytes());
        k[8..16].copy_from_slice(&0x2000u64.to_le_bytes());
        k[16..20].copy_from_slice(&3u32.to_le_bytes());
        k[20..24].copy_from_slice(&10u32.to_le_bytes());
        let launch = Launch { kernarg: &k, grid_size: [8, 1, 1], workgroup_size: [8, 1, 1], dynamic_lds_bytes: 0 };
        let resolved = resolve(&KV_STORE, &launch).unwrap();
        assert_eq!((resolved[0].bytes, resolved[1].bytes), (152, 32));
        // floor(10 / 4) = 2; a zero divisor and a sum past 2^64 do not resolve.
        assert_eq!(eval(&Div(&Arg(3), 4), KV_STORE.args, &launch), Ok(Some(2)));
        assert_eq!(eval(&Div(&Arg(3), 0), KV_STORE.args, &launch), Ok(None));
        assert_eq!(eval(&Add(&Const(u64::MAX), &Const(1)), KV_STORE.args, &launch), Ok(None));
        assert_eq!(eval(&Add(&Const(u64::MAX - 1), &Const(1)), KV_STORE.args, &launch), Ok(Some(u64::MAX)));
    }

    #[test]
    fn resolution_errors_are_typed() {
        let k = kernarg_fill(u64::MAX - 3, 2);
        let launch = Launch { kernarg: &k, grid_size: [64, 1, 1], workgroup_size: [0, 1, 1], dynamic_lds_bytes: 0 };
        assert_eq!(
            resolve(&FILL, &launch),
            Err(ResolveError::AddressOverflow { arg_index: 0, address: u64::MAX - 3, bytes: 8 })
        );
        assert_eq!(
            resolve(&FILL, &Launch { kernarg: &k[..15], ..launch }),
            Err(ResolveError::Kernarg(KernargError::OutOfRange { offset: 12, size: 4, len: 15 }))
        );
        let mut k = [0u8; 24];
        k[16..20].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(resolve(&BLOCK_SUM, &Launch { kernarg: &k, ..launch }), Err(ResolveError::ZeroWorkgroupSize));
        let mut k = [0xffu8; 32];
        k[..24].fill(0);
        let big =
            Launch { kernarg: &k, grid_size: [u32::MAX, 1, 1], workgroup_size: [256, 1, 1], dynamic_lds_bytes: 0 };
        // 4 * (2^32 - 1) * (2^32 - 1) does not fit 64 bits.
        assert_eq!(resolve(&MATVEC, &big), Err(ResolveError::ExtentOverflow { arg_index: 1 }));
        const WRONG_KIND: &[EffectDecl] =
            &[EffectDecl { arg_index: 1, arg_name: "value", access: Read, bytes: Const(4) }];
        const NO_SUCH_ARG: &[EffectDecl] =
            &[EffectDecl { arg_index: 7, arg_name: "out", access: Read, bytes: Const(4) }];
        let bad = EffectsDecl { kernel: "bad", args: FILL.args, effects: WRONG_KIND };
        assert!(matches!(resolve(&bad, &launch), Err(ResolveError::WrongArgumentKind { arg_index: 1, .. })));
        let bad = EffectsDecl { kernel: "bad", args: FILL.args, effects: NO_SUCH_ARG };
        assert_eq!(resolve(&bad, &launch), Err(ResolveError::NoSuchArgument { arg_index: 7, count: 3 }));
    }
}
