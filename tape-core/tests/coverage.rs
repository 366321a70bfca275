//! `coverage::uncovered` against a byte-by-byte model: a kernel range is covered exactly when
//! every byte of it lies in a declared range of its allocation granting the access it needs.

use proptest::prelude::*;
use tape_core::coverage::uncovered;
use tape_core::record::{Access, AllocationId, Effect, Effects};

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![Just(Access::Read), Just(Access::Write), Just(Access::ReadWrite)]
}

fn effect() -> impl Strategy<Value = Effect> {
    (0u32..3, 0u64..48, 0u64..24, access()).prop_map(|(a, offset_bytes, len_bytes, access)| Effect {
        allocation: AllocationId(a),
        offset_bytes,
        len_bytes,
        access,
    })
}

/// Whether byte `at` of `allocation` may be accessed with `needed` under `declared`.
fn granted(declared: &[Effect], allocation: AllocationId, at: u64, needed: Access) -> bool {
    declared.iter().any(|d| {
        let permits = if needed == Access::Read { d.access.reads() } else { d.access.writes() };
        d.allocation == allocation && permits && d.offset_bytes <= at && at < d.offset_bytes + d.len_bytes
    })
}

fn model(declared: &[Effect], kernel: &[Effect]) -> Option<(usize, Access)> {
    kernel.iter().enumerate().find_map(|(i, e)| {
        let needs = [(e.access.reads(), Access::Read), (e.access.writes(), Access::Write)];
        needs.into_iter().filter(|&(n, _)| n).find_map(|(_, needed)| {
            let all =
                (e.offset_bytes..e.offset_bytes + e.len_bytes).all(|b| granted(declared, e.allocation, b, needed));
            (!all).then_some((i, needed))
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn uncovered_agrees_with_the_byte_model(
        declared in proptest::collection::vec(effect(), 0..6),
        kernel in proptest::collection::vec(effect(), 0..4),
    ) {
        let got = uncovered(&Effects::Known(declared.clone()), &kernel).map(|u| (u.index, u.missing));
        prop_assert_eq!(got, model(&declared, &kernel));
        prop_assert_eq!(uncovered(&Effects::Unknown, &kernel), None);
    }
}
