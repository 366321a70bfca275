//! Property tests of tape serialization: random valid tapes round-trip through JSON and the
//! binary form to an equal tape with an equal identity, no input makes decoding panic, and the
//! binary decoder reads exactly what postcard's deserializer reads (random plain data over the
//! full range of every field, mutated and cut tapes, arbitrary payloads).

mod recorder_fixture;

use proptest::prelude::*;
use recorder_fixture::*;
use tape_core::binding::{Binding, BindingKind};
use tape_core::serial::{
    DecodeError, DecodeErrorKind, SerialError, TAPE_FORMAT_VERSION, TAPE_MAGIC, TapeData, validate,
};
use tape_core::tape::{ExternalCount, Tape};
use tape_core::{Access, AllocationId, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};

/// What postcard's own deserializer makes of a binary tape's payload (the header is assumed
/// intact): the data, if the whole payload is one `TapeData`.
fn postcard_data(bin: &[u8]) -> Option<TapeData> {
    let (data, rest) = postcard::take_from_bytes::<TapeData>(bin.get(8..)?).ok()?;
    rest.is_empty().then_some(data)
}

/// The hand decoder and postcard agree on `bin` (a binary tape with an intact header): the same
/// data, or both refuse; the decoder may refuse early only what validation refuses.
fn agrees_with_postcard(bin: &[u8]) -> Result<(), TestCaseError> {
    match (TapeData::from_binary(bin), postcard_data(bin)) {
        (Ok(ours), Some(theirs)) => prop_assert_eq!(ours, theirs),
        (Err(_), None) => {}
        (Ok(ours), None) => prop_assert!(false, "decoded {ours:?}, postcard refuses"),
        (
            Err(SerialError::Decode(DecodeError {
                kind: DecodeErrorKind::TooMany { .. } | DecodeErrorKind::PointersPastKernarg { .. },
                ..
            })),
            Some(theirs),
        ) => prop_assert!(validate(theirs).is_err(), "refused early, but the tape is valid"),
        (Err(e), Some(_)) => prop_assert!(false, "refused ({e}), postcard decodes"),
    }
    Ok(())
}

fn arb_access() -> impl Strategy<Value = Access> {
    prop_oneof![Just(Access::Read), Just(Access::Write), Just(Access::ReadWrite)]
}

/// Plain launch data, unchecked, every field over its whole range.
fn arb_raw_launch() -> impl Strategy<Value = LaunchRecord> {
    let effect =
        (any::<u32>(), any::<u64>(), any::<u64>(), arb_access()).prop_map(|(a, offset_bytes, len_bytes, access)| {
            Effect { allocation: AllocationId(a), offset_bytes, len_bytes, access }
        });
    let effects = prop_oneof![Just(Effects::Unknown), proptest::collection::vec(effect, 0..4).prop_map(Effects::Known)];
    let pointer = (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(kernarg_offset, a, offset_bytes)| PointerArg {
        kernarg_offset,
        allocation: AllocationId(a),
        offset_bytes,
    });
    (
        (any::<[u8; 32]>(), any::<String>(), proptest::collection::vec(any::<u8>(), 0..40)),
        (any::<[u32; 3]>(), any::<[u16; 3]>(), any::<u32>(), any::<u32>(), any::<u8>()),
        proptest::collection::vec(pointer, 0..4),
        effects,
    )
        .prop_map(|((sha, symbol, kernarg), (grid, wg, lds_s, lds_d, wave), pointers, effects)| LaunchRecord {
            artifact: ArtifactId { code_object_sha256: sha, symbol },
            kernarg,
            geometry: Geometry { grid_work_items: grid, workgroup_work_items: wg },
            lds: Lds { static_bytes: lds_s, dynamic_bytes: lds_d },
            wave_size: wave,
            pointers,
            effects,
        })
}

fn arb_raw_binding() -> impl Strategy<Value = Binding> {
    let kind = prop_oneof![
        (any::<u32>(), any::<i64>()).prop_map(|(offset, addend)| BindingKind::KernargU32 { offset, addend }),
        (any::<u8>(), any::<i64>(), any::<u32>(), any::<u32>()).prop_map(|(axis, addend, divisor, max_workgroups)| {
            BindingKind::GridAxis { axis, addend, divisor, max_workgroups }
        }),
        (any::<u32>(), any::<u8>(), any::<i64>(), any::<u32>(), any::<u32>()).prop_map(
            |(offset, axis, addend, divisor, max_workgroups)| BindingKind::KernargGridWorkgroups {
                offset,
                axis,
                addend,
                divisor,
                max_workgroups
            }
        ),
        (any::<u32>(), any::<i64>()).prop_map(|(offset, addend)| BindingKind::KernargU32Clamped { offset, addend }),
    ];
    (any::<String>(), any::<u32>(), kind).prop_map(|(name, launch, kind)| Binding { name, launch, kind })
}

/// Plain tape data, unchecked (most of it is not a valid tape).
fn arb_raw_data() -> impl Strategy<Value = TapeData> {
    let external = (any::<String>(), any::<u32>()).prop_map(|(name, count)| ExternalCount { name, count });
    (
        any::<u32>(),
        proptest::collection::vec(arb_raw_launch(), 0..4),
        proptest::collection::vec(external, 0..3),
        proptest::collection::vec(arb_raw_binding(), 0..3),
    )
        .prop_map(|(position, launches, external, bindings)| TapeData { position, launches, external, bindings })
}

fn with_header(payload: &[u8]) -> Vec<u8> {
    let mut out = TAPE_MAGIC.to_vec();
    out.extend_from_slice(&TAPE_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_tapes_round_trip(data in arb_tape_data()) {
        let tape = validate(data.clone()).expect("the strategy makes valid tapes");
        prop_assert_eq!(tape.clone().into_data(), data);

        let json = serde_json::to_string(&tape).unwrap();
        let from_json: Tape = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&from_json, &tape);
        prop_assert_eq!(from_json.identity(), tape.identity());

        let bin = tape.to_binary();
        let from_bin = Tape::from_binary(&bin).unwrap();
        prop_assert_eq!(&from_bin, &tape);
        prop_assert_eq!(from_bin.identity(), tape.identity());
        prop_assert_eq!(from_bin.to_binary(), bin, "the binary form is canonical");
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Tape::from_binary(&bytes);
        let _ = Tape::from_binary(&with_header(&bytes));
        agrees_with_postcard(&with_header(&bytes))?;
    }

    #[test]
    fn raw_data_decodes_as_postcard_decodes_it(data in arb_raw_data(), cut in any::<prop::sample::Index>()) {
        let bin = with_header(&postcard::to_allocvec(&data).unwrap());
        let crowded = data.launches.iter().any(|l| l.pointers.len() > l.kernarg.len() / 8);
        if !crowded {
            prop_assert_eq!(TapeData::from_binary(&bin).unwrap(), data);
        }
        agrees_with_postcard(&bin)?;
        agrees_with_postcard(&bin[..8 + cut.index(bin.len() - 7)])?;
    }

    #[test]
    fn mutated_binaries_never_panic(
        data in arb_tape_data(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bin = validate(data).unwrap().to_binary();
        for (at, byte) in edits {
            let i = at.index(bin.len());
            bin[i] = byte;
        }
        let _ = Tape::from_binary(&bin);
        let _ = Tape::from_binary(&bin[..cut.index(bin.len() + 1)]);
        bin[..8].copy_from_slice(&with_header(&[]));
        agrees_with_postcard(&bin)?;
        agrees_with_postcard(&bin[..8 + cut.index(bin.len() - 7)])?;
    }

    #[test]
    fn mutated_json_never_panics(
        data in arb_tape_data(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), "[0-9a-zA-Z\\[\\]{}\",:-]"), 1..6),
    ) {
        let mut json = serde_json::to_string(&validate(data).unwrap()).unwrap().into_bytes();
        for (at, text) in edits {
            let i = at.index(json.len());
            json[i] = text.as_bytes()[0];
        }
        if let Ok(text) = std::str::from_utf8(&json) {
            let _ = serde_json::from_str::<Tape>(text);
        }
    }
}

#[test]
fn golden_binary_truncated_at_every_length_is_rejected() {
    let bin = golden_tape().to_binary();
    for len in 0..bin.len() {
        assert!(Tape::from_binary(&bin[..len]).is_err(), "length {len}");
    }
    assert!(Tape::from_binary(&bin).is_ok());
}

#[test]
fn golden_binary_with_every_byte_flipped_never_panics() {
    let bin = golden_tape().to_binary();
    for i in 0..bin.len() {
        for bit in [0x01u8, 0x80] {
            let mut mutated = bin.clone();
            mutated[i] ^= bit;
            let _ = Tape::from_binary(&mutated);
            if i >= 8 {
                agrees_with_postcard(&mutated).unwrap();
            }
        }
    }
}

#[test]
fn the_strategy_covers_bindings_effects_and_aliasing() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use tape_core::Effects;
    use tape_core::binding::BindingKind;

    let mut runner = TestRunner::deterministic();
    let strategy = arb_tape_data();
    let (mut kernarg, mut grid, mut unknown, mut external, mut aliased) = (0, 0, 0, 0, 0);
    for _ in 0..200 {
        let data = strategy.new_tree(&mut runner).unwrap().current();
        kernarg += data.bindings.iter().filter(|b| matches!(b.kind, BindingKind::KernargU32 { .. })).count();
        grid += data.bindings.iter().filter(|b| matches!(b.kind, BindingKind::GridAxis { .. })).count();
        unknown += data.launches.iter().filter(|l| l.effects == Effects::Unknown).count();
        external += usize::from(!data.external.is_empty());
        let pointers: Vec<_> = data.launches.iter().flat_map(|l| &l.pointers).map(|p| p.allocation).collect();
        let distinct: std::collections::BTreeSet<_> = pointers.iter().collect();
        aliased += usize::from(distinct.len() < pointers.len());
    }
    for (what, n) in [("kernarg bindings", kernarg), ("grid bindings", grid), ("unknown effects", unknown)] {
        assert!(n >= 20, "{what}: {n}");
    }
    assert!(external >= 20 && aliased >= 20, "external {external}, aliased {aliased}");
}
