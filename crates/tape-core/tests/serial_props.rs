//! Property tests of tape serialization: random valid tapes round-trip through JSON and the
//! binary form to an equal tape with an equal identity, and no input makes decoding panic.

mod recorder_fixture;

use proptest::prelude::*;
use recorder_fixture::*;
use tape_core::serial::{TAPE_FORMAT_VERSION, TAPE_MAGIC, validate};
use tape_core::tape::Tape;

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
