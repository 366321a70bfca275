//! The code-object verdict and the PM4 lowering agree: every kernel the verdict admits on a
//! target is lowered for that target's family, and among descriptors that differ only in their
//! user SGPRs the lowering builds exactly the ones the verdict admits. Both read the same column
//! of the family table (whether the family has absolute flat scratch, so a private-segment buffer
//! may be passed; reference §6), so a family row that one side reads and the other ignores fails
//! here.

use kernarg_abi::sgpr::UserSgpr;
use kernarg_abi::{CodeObject, Kernel, KernelDescriptor, UserSgprLayout, verdict};
use lowering::ib_builder::{self, IbBuildError, IbDispatch};
use pm4_encoding::Target;
use zerocopy::IntoBytes;

/// Byte offsets in the 64-byte kernel descriptor (reference §6): `compute_pgm_rsrc2` and
/// `kernel_code_properties`.
const RSRC2_OFFSET: usize = 52;
const KCP_OFFSET: usize = 56;
/// `kernel_code_properties` bits 0..=6: the user-SGPR enables (reference §6).
const USER_SGPR_ENABLES: u16 = 0x7f;

/// One dispatch of `descriptor` at an aligned entry, lowered for `target`'s family.
fn lower_one(target: Target, descriptor: &KernelDescriptor) -> Result<usize, IbBuildError> {
    let dispatch = IbDispatch {
        entry_va: 0x7f00_0010_0000,
        descriptor,
        kernarg_va: 0x7f00_0020_0000,
        grid_work_items: [256, 1, 1],
        workgroup_work_items: [64, 1, 1],
        dynamic_lds_bytes: 0,
        wait_before: false,
    };
    let mut out = vec![0u32; 256];
    ib_builder::build(target.family(), &[dispatch], &mut out)
}

/// Every code object the project builds (`kernels`) and the ABI fixtures of `kernarg-abi`.
fn code_objects() -> Vec<(String, CodeObject)> {
    let mut out: Vec<(String, CodeObject)> = kernels::artifacts()
        .iter()
        .filter(|a| a.path.ends_with(".co"))
        .map(|a| (a.path.to_owned(), kernarg_abi::read(a.bytes).unwrap_or_else(|e| panic!("{}: {e}", a.path))))
        .collect();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernarg-abi/tests/data");
    let mut paths: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap_or_else(|e| panic!("{}: {e}", fixtures.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "co"))
        .collect();
    paths.sort();
    for path in paths {
        let bytes = std::fs::read(&path).unwrap();
        out.push((path.display().to_string(), kernarg_abi::read(&bytes).unwrap()));
    }
    out
}

#[test]
fn every_admitted_kernel_is_lowered_on_its_target() {
    let mut admitted = std::collections::BTreeMap::<Target, usize>::new();
    let mut refused = 0;
    for (path, co) in code_objects() {
        for kernel in &co.kernels {
            let v = verdict(kernel, &co.target);
            if !v.supported {
                refused += 1;
                continue;
            }
            // INVARIANT: the verdict refuses every code object without a supported target.
            let target = co.target.target.expect("admitted kernels have a supported target");
            let lowered = lower_one(target, &kernel.descriptor);
            assert!(lowered.is_ok(), "{path}: {} admitted on {target} but not lowered: {lowered:?}", kernel.name());
            *admitted.entry(target).or_default() += 1;
        }
    }
    for target in Target::ALL {
        assert!(admitted.get(&target).copied().unwrap_or(0) > 0, "no admitted kernel exercised {target}");
    }
    // The fixtures include kernels the verdict refuses (gfx90a, a private-segment buffer there).
    assert!(refused > 0);
}

/// The `fill` kernel of `target`, as built by `kernels`.
fn fill(target: Target) -> Kernel {
    let artifact = kernels::artifact(&format!("{target}/fill.co")).expect("fill is built for every target");
    let co = kernarg_abi::read(artifact.bytes).expect("fill reads");
    co.kernels.into_iter().next().expect("one kernel")
}

/// `kernel` with user-SGPR enables `enables` and `RSRC2.USER_SGPR` set to what the layout needs.
fn with_user_sgprs(kernel: &Kernel, target: Target, enables: u16) -> Kernel {
    let mut bytes: [u8; 64] = kernel.descriptor.as_bytes().try_into().expect("64-byte descriptor");
    let kcp = u16::from_le_bytes([bytes[KCP_OFFSET], bytes[KCP_OFFSET + 1]]) & !USER_SGPR_ENABLES | enables;
    bytes[KCP_OFFSET..KCP_OFFSET + 2].copy_from_slice(&kcp.to_le_bytes());
    let probe = KernelDescriptor::from_bytes(&bytes).expect("64 bytes");
    let total = u32::from(UserSgprLayout::new(&probe, target.family()).total());
    // RSRC2.USER_SGPR [5:1] (reference §3).
    let rsrc2 = u32::from_le_bytes(bytes[RSRC2_OFFSET..RSRC2_OFFSET + 4].try_into().expect("4 bytes"));
    let rsrc2 = rsrc2 & !(0x1f << 1) | (total.min(0x1f) << 1);
    bytes[RSRC2_OFFSET..RSRC2_OFFSET + 4].copy_from_slice(&rsrc2.to_le_bytes());
    let mut out = kernel.clone();
    out.descriptor = KernelDescriptor::from_bytes(&bytes).expect("64 bytes");
    out
}

#[test]
fn user_sgprs_are_lowered_exactly_where_the_verdict_admits_them() {
    for target in Target::ALL {
        let base = fill(target);
        let id = kernarg_abi::TargetId::from_e_flags(target.facts().mach);
        for enables in 0..=USER_SGPR_ENABLES {
            // The kernarg pointer (bit 3) is always there: fill has arguments.
            let kernel = with_user_sgprs(&base, target, enables | 1 << 3);
            let admitted = verdict(&kernel, &id).supported;
            let lowered = lower_one(target, &kernel.descriptor).is_ok();
            assert_eq!(admitted, lowered, "{target}: user-SGPR enables {enables:#04x}");
        }
    }
}

#[test]
fn the_private_segment_buffer_goes_with_absolute_flat_scratch() {
    // Reference §6: ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER must be 0 with architected flat scratch
    // (gfx11, gfx12); gfx10.3 has absolute flat scratch and takes it.
    for target in Target::ALL {
        let kernel = with_user_sgprs(&fill(target), target, 1 | 1 << 3);
        let id = kernarg_abi::TargetId::from_e_flags(target.facts().mach);
        let v = verdict(&kernel, &id);
        let expected = target.family().facts().private_segment_buffer();
        assert_eq!(v.supported, expected, "{target}: {:?}", v.reasons);
        if !expected {
            assert!(v.reasons.contains(&kernarg_abi::Reason::UserSgpr(UserSgpr::PrivateSegmentBuffer)), "{target}");
            assert!(matches!(
                lower_one(target, &kernel.descriptor),
                Err(IbBuildError::UnsupportedUserSgpr { block: UserSgpr::PrivateSegmentBuffer, .. })
            ));
        }
    }
    assert!(Target::ALL.iter().any(|t| t.family().facts().private_segment_buffer()));
    assert!(Target::ALL.iter().any(|t| !t.family().facts().private_segment_buffer()));
}
