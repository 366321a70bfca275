//! Dependency derivation: literal cases for every hazard kind and the edge cases of ranges, then
//! properties against a brute-force oracle that compares byte by byte.

use std::collections::BTreeSet;

use proptest::prelude::*;
use tape_core::deps::{
    Conflict, DepsError, EDGES_MAX, EFFECTS_MAX, Hazard, LAUNCHES_MAX, RangeOverlap, boundaries, conflict, dependencies,
};
use tape_core::{Access, AllocationId, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds};

use Access::{Read, ReadWrite, Write};

fn record(effects: Effects) -> LaunchRecord {
    LaunchRecord {
        artifact: ArtifactId { code_object_sha256: [0; 32], symbol: "k".into() },
        kernarg: vec![0; 8],
        geometry: Geometry { grid_work_items: [64, 1, 1], workgroup_work_items: [64, 1, 1] },
        lds: Lds::default(),
        wave_size: 32,
        pointers: vec![],
        effects,
    }
}

fn known(effects: &[Effect]) -> LaunchRecord {
    record(Effects::Known(effects.to_vec()))
}

fn unknown() -> LaunchRecord {
    record(Effects::Unknown)
}

fn fx(allocation: u32, offset_bytes: u64, len_bytes: u64, access: Access) -> Effect {
    Effect { allocation: AllocationId(allocation), offset_bytes, len_bytes, access }
}

fn witness(allocation: u32, offset_bytes: u64, len_bytes: u64) -> RangeOverlap {
    RangeOverlap { allocation: AllocationId(allocation), offset_bytes, len_bytes, earlier_effect: 0, later_effect: 0 }
}

fn hazards(tape: &[LaunchRecord], earlier: usize, later: usize) -> Vec<Hazard> {
    let deps = dependencies(tape).unwrap();
    deps.edge(earlier, later).map(|e| e.conflict.hazards().collect()).unwrap_or_default()
}

#[test]
fn read_after_write() {
    let tape = [known(&[fx(0, 0, 16, Write)]), known(&[fx(0, 8, 16, Read)])];
    assert_eq!(boundaries(&tape), Ok(vec![1]));
    assert_eq!(
        conflict(&tape[0], &tape[1]),
        Some(Conflict::Overlap {
            read_after_write: Some(witness(0, 8, 8)),
            write_after_read: None,
            write_after_write: None
        })
    );
    assert_eq!(hazards(&tape, 0, 1), [Hazard::ReadAfterWrite]);
}

#[test]
fn write_after_read() {
    let tape = [known(&[fx(0, 8, 16, Read)]), known(&[fx(0, 0, 12, Write)])];
    assert_eq!(boundaries(&tape), Ok(vec![1]));
    assert_eq!(hazards(&tape, 0, 1), [Hazard::WriteAfterRead]);
    assert_eq!(conflict(&tape[0], &tape[1]).unwrap().witness(Hazard::WriteAfterRead), Some(&witness(0, 8, 4)));
}

#[test]
fn write_after_write() {
    let tape = [known(&[fx(3, 0, 4, Write)]), known(&[fx(3, 0, 4, Write)])];
    assert_eq!(boundaries(&tape), Ok(vec![1]));
    assert_eq!(hazards(&tape, 0, 1), [Hazard::WriteAfterWrite]);
}

#[test]
fn read_write_on_both_sides_is_every_hazard() {
    let tape = [known(&[fx(0, 0, 4, ReadWrite)]), known(&[fx(0, 2, 4, ReadWrite)])];
    assert_eq!(hazards(&tape, 0, 1), [Hazard::ReadAfterWrite, Hazard::WriteAfterRead, Hazard::WriteAfterWrite]);
}

#[test]
fn witnesses_name_the_effects_that_overlap() {
    let tape = [
        known(&[fx(1, 0, 4, Read), fx(0, 0, 4, Write)]),
        known(&[fx(2, 0, 4, Write), fx(0, 0, 4, Write), fx(0, 3, 4, Read)]),
    ];
    let c = conflict(&tape[0], &tape[1]).unwrap();
    let w = |earlier_effect, later_effect, offset_bytes, len_bytes| RangeOverlap {
        allocation: AllocationId(0),
        offset_bytes,
        len_bytes,
        earlier_effect,
        later_effect,
    };
    assert_eq!(c.witness(Hazard::WriteAfterWrite), Some(&w(1, 1, 0, 4)));
    assert_eq!(c.witness(Hazard::ReadAfterWrite), Some(&w(1, 2, 3, 1)));
    assert_eq!(c.witness(Hazard::WriteAfterRead), None);
}

#[test]
fn reads_never_conflict() {
    let tape = [known(&[fx(0, 0, 16, Read)]), known(&[fx(0, 0, 16, Read)]), known(&[fx(0, 4, 4, Read)])];
    assert_eq!(boundaries(&tape), Ok(vec![]));
    assert_eq!(dependencies(&tape).unwrap().edge_count(), 0);
}

#[test]
fn disjoint_and_adjacent_ranges_do_not_conflict() {
    let tape = [known(&[fx(0, 0, 16, Write)]), known(&[fx(0, 16, 16, Write)]), known(&[fx(0, 32, 1, ReadWrite)])];
    assert_eq!(boundaries(&tape), Ok(vec![]));
    assert_eq!(conflict(&tape[0], &tape[1]), None);
}

#[test]
fn different_allocations_do_not_conflict() {
    let tape = [known(&[fx(0, 0, 16, Write)]), known(&[fx(1, 0, 16, Write)])];
    assert_eq!(boundaries(&tape), Ok(vec![]));
    assert_eq!(dependencies(&tape).unwrap().pairs().count(), 0);
}

#[test]
fn zero_length_ranges_touch_nothing() {
    let tape = [known(&[fx(0, 8, 0, Write)]), known(&[fx(0, 0, 16, ReadWrite)]), known(&[fx(0, 0, 0, Write)])];
    assert_eq!(boundaries(&tape), Ok(vec![]));
}

#[test]
fn ranges_at_the_top_of_the_address_space() {
    let tape = [known(&[fx(0, u64::MAX - 4, u64::MAX, Write)]), known(&[fx(0, u64::MAX - 1, 1, Read)])];
    assert_eq!(hazards(&tape, 0, 1), [Hazard::ReadAfterWrite]);
    let c = conflict(&tape[0], &tape[1]).unwrap();
    assert_eq!(c.witness(Hazard::ReadAfterWrite), Some(&witness(0, u64::MAX - 1, 1)));
}

#[test]
fn unknown_effects_are_ordered_against_everything() {
    let tape = [known(&[fx(0, 0, 4, Read)]), unknown(), known(&[]), known(&[fx(1, 0, 4, Read)])];
    assert_eq!(boundaries(&tape), Ok(vec![1, 2]));
    let deps = dependencies(&tape).unwrap();
    assert_eq!(deps.pairs().collect::<Vec<_>>(), [(0, 1), (1, 2), (1, 3)]);
    assert_eq!(deps.edge(0, 1).unwrap().conflict, Conflict::Unknown { earlier: false, later: true });
    assert_eq!(deps.edge(1, 3).unwrap().conflict, Conflict::Unknown { earlier: true, later: false });
    assert_eq!(hazards(&tape, 1, 2), [Hazard::Unknown]);
    assert_eq!(boundaries(&[unknown(), unknown()]), Ok(vec![1]));
}

#[test]
fn a_wait_covers_everything_before_it() {
    // 2 reads what 0 wrote, but the wait before 1 (forced by 1's read) already ordered 0.
    let tape = [known(&[fx(0, 0, 4, Write)]), known(&[fx(0, 0, 4, Read)]), known(&[fx(0, 0, 4, Read)])];
    assert_eq!(boundaries(&tape), Ok(vec![1]));
    let deps = dependencies(&tape).unwrap();
    assert_eq!(deps.pairs().collect::<Vec<_>>(), [(0, 1), (0, 2)]);
}

#[test]
fn direct_drops_transitively_implied_edges() {
    let tape = [known(&[fx(0, 0, 4, Write)]), known(&[fx(0, 0, 4, ReadWrite)]), known(&[fx(0, 0, 4, Read)])];
    let deps = dependencies(&tape).unwrap();
    assert_eq!(deps.pairs().collect::<Vec<_>>(), [(0, 1), (0, 2), (1, 2)]);
    assert_eq!(deps.direct(), [vec![], vec![0], vec![1]]);
}

#[test]
fn queries() {
    let tape = [known(&[fx(0, 0, 4, Write)]), known(&[]), known(&[fx(0, 0, 4, Read)])];
    let deps = dependencies(&tape).unwrap();
    assert_eq!(deps.launches(), 3);
    assert_eq!(deps.waits_of(1), Some(&[][..]));
    assert_eq!(deps.waits_of(2).unwrap().iter().map(|e| e.earlier).collect::<Vec<_>>(), [0]);
    assert_eq!(deps.waits_of(3), None);
    assert!(deps.edge(1, 2).is_none() && deps.edge(2, 0).is_none() && deps.edge(0, 9).is_none());
    assert_eq!(dependencies(&[]).unwrap().launches(), 0);
    assert_eq!(boundaries(&[]), Ok(vec![]));
}

#[test]
fn limits() {
    let many = vec![known(&[]); LAUNCHES_MAX + 1];
    let err = DepsError::TooManyLaunches { launches: LAUNCHES_MAX + 1, limit: LAUNCHES_MAX };
    assert_eq!(boundaries(&many), Err(err));
    assert_eq!(dependencies(&many), Err(err));
    assert_eq!(boundaries(&many[1..]), Ok(vec![]));
    let heavy = [known(&vec![fx(0, 0, 1, Read); EFFECTS_MAX]), known(&[fx(0, 0, 1, Write)])];
    assert_eq!(boundaries(&heavy), Err(DepsError::TooManyEffects { effects: EFFECTS_MAX + 1, limit: EFFECTS_MAX }));
    assert_eq!(boundaries(&heavy[..1]), Ok(vec![]));
    // 1025 undeclared launches: 524 800 pairs, past the edge limit only for the full DAG.
    let dense = vec![unknown(); 1025];
    assert!(dependencies(&dense[..1024]).is_ok());
    assert_eq!(dependencies(&dense), Err(DepsError::TooManyEdges { launch: 1024, limit: EDGES_MAX }));
    assert_eq!(boundaries(&dense).unwrap().len(), 1024);
}

// ---- properties ------------------------------------------------------------------------------

const ALLOCATIONS: u32 = 3;
const BYTES: u64 = 48;

fn access() -> impl Strategy<Value = Access> {
    prop::sample::select(vec![Read, Write, ReadWrite])
}

fn effect() -> impl Strategy<Value = Effect> {
    (0..ALLOCATIONS, 0..32u64, 0..12u64, access()).prop_map(|(a, o, l, acc)| fx(a, o, l, acc))
}

fn launch() -> impl Strategy<Value = LaunchRecord> {
    prop_oneof![
        1 => Just(unknown()),
        8 => prop::collection::vec(effect(), 0..4).prop_map(|e| record(Effects::Known(e))),
    ]
}

fn tape() -> impl Strategy<Value = Vec<LaunchRecord>> {
    prop::collection::vec(launch(), 0..10)
}

/// Written from the rule, byte by byte: the hazard kinds between `earlier` and `later`.
fn oracle(earlier: &LaunchRecord, later: &LaunchRecord) -> BTreeSet<&'static str> {
    let (Effects::Known(a), Effects::Known(b)) = (&earlier.effects, &later.effects) else {
        return BTreeSet::from(["unknown"]);
    };
    let touches = |e: &Effect, alloc: u32, byte: u64| {
        e.allocation == AllocationId(alloc) && e.offset_bytes <= byte && byte < e.offset_bytes + e.len_bytes
    };
    let mut kinds = BTreeSet::new();
    for ea in a {
        for eb in b {
            for alloc in 0..ALLOCATIONS {
                for byte in 0..BYTES {
                    if !(touches(ea, alloc, byte) && touches(eb, alloc, byte)) {
                        continue;
                    }
                    let (w0, r0) = (ea.access != Read, ea.access != Write);
                    let (w1, r1) = (eb.access != Read, eb.access != Write);
                    if w0 && r1 {
                        kinds.insert("raw");
                    }
                    if r0 && w1 {
                        kinds.insert("war");
                    }
                    if w0 && w1 {
                        kinds.insert("waw");
                    }
                }
            }
        }
    }
    kinds
}

fn oracle_pairs(tape: &[LaunchRecord]) -> Vec<(usize, usize)> {
    let mut pairs = vec![];
    for i in 0..tape.len() {
        for j in 0..i {
            if !oracle(&tape[j], &tape[i]).is_empty() {
                pairs.push((j, i));
            }
        }
    }
    pairs
}

fn ordered(pairs: &[(usize, usize)], bounds: &[usize]) -> bool {
    pairs.iter().all(|&(j, i)| bounds.iter().any(|&b| j < b && b <= i))
}

fn name(h: Hazard) -> &'static str {
    match h {
        Hazard::ReadAfterWrite => "raw",
        Hazard::WriteAfterRead => "war",
        Hazard::WriteAfterWrite => "waw",
        Hazard::Unknown => "unknown",
    }
}

/// The witness lies inside both effects it names, and their accesses make its hazard.
fn check_witness(tape: &[LaunchRecord], j: usize, i: usize, hazard: Hazard, w: &RangeOverlap) {
    let (Effects::Known(a), Effects::Known(b)) = (&tape[j].effects, &tape[i].effects) else {
        panic!("witness on an unknown launch");
    };
    let (ea, eb) = (a[w.earlier_effect], b[w.later_effect]);
    assert!(w.len_bytes > 0);
    for e in [ea, eb] {
        assert_eq!(e.allocation, w.allocation);
        assert!(e.offset_bytes <= w.offset_bytes && w.offset_bytes + w.len_bytes <= e.offset_bytes + e.len_bytes);
    }
    let ok = match hazard {
        Hazard::ReadAfterWrite => ea.access.writes() && eb.access.reads(),
        Hazard::WriteAfterRead => ea.access.reads() && eb.access.writes(),
        Hazard::WriteAfterWrite => ea.access.writes() && eb.access.writes(),
        Hazard::Unknown => false,
    };
    assert!(ok, "{hazard:?} witnessed by {ea:?} and {eb:?}");
}

proptest! {
    /// (a) every conflicting pair has a boundary between them.
    #[test]
    fn every_conflict_is_ordered(tape in tape()) {
        let bounds = boundaries(&tape).unwrap();
        prop_assert!(ordered(&oracle_pairs(&tape), &bounds));
        prop_assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(bounds.iter().all(|&b| 1 <= b && b < tape.len()));
    }

    /// (b) every boundary is needed, and no placement has fewer (brute force over all subsets).
    #[test]
    fn boundaries_are_minimal(tape in tape()) {
        let pairs = oracle_pairs(&tape);
        let bounds = boundaries(&tape).unwrap();
        for k in 0..bounds.len() {
            let mut fewer = bounds.clone();
            fewer.remove(k);
            prop_assert!(!ordered(&pairs, &fewer), "boundary {} of {:?} is redundant", bounds[k], bounds);
        }
        let candidates: Vec<usize> = (1..tape.len()).collect();
        for mask in 0u32..(1 << candidates.len()) {
            let subset: Vec<usize> =
                candidates.iter().enumerate().filter(|(n, _)| mask >> n & 1 == 1).map(|(_, &b)| b).collect();
            prop_assert!(subset.len() >= bounds.len() || !ordered(&pairs, &subset));
        }
    }

    /// (c) an unknown launch is fenced on both sides.
    #[test]
    fn unknown_is_fenced(tape in tape()) {
        let bounds = boundaries(&tape).unwrap();
        for (u, l) in tape.iter().enumerate() {
            if l.effects != Effects::Unknown {
                continue;
            }
            prop_assert!(u == 0 || bounds.contains(&u));
            prop_assert!(u + 1 == tape.len() || bounds.contains(&(u + 1)));
        }
    }

    /// (d) the DAG holds exactly the oracle's pairs, with the oracle's hazard kinds and valid
    /// witnesses.
    #[test]
    fn dependencies_match_the_oracle(tape in tape()) {
        let deps = dependencies(&tape).unwrap();
        prop_assert_eq!(deps.launches(), tape.len());
        prop_assert_eq!(deps.pairs().collect::<Vec<_>>(), oracle_pairs(&tape));
        for (j, i) in deps.pairs() {
            let edge = deps.edge(j, i).unwrap();
            let kinds: BTreeSet<_> = edge.conflict.hazards().map(name).collect();
            prop_assert_eq!(&kinds, &oracle(&tape[j], &tape[i]));
            prop_assert_eq!(Some(edge.conflict), conflict(&tape[j], &tape[i]));
            for h in edge.conflict.hazards() {
                if let Some(w) = edge.conflict.witness(h) {
                    check_witness(&tape, j, i, h, w);
                } else {
                    prop_assert_eq!(h, Hazard::Unknown);
                }
            }
        }
    }

    /// The reduction keeps exactly the edges no longer path implies, and loses no ordering.
    #[test]
    fn direct_is_the_transitive_reduction(tape in tape()) {
        let deps = dependencies(&tape).unwrap();
        let n = tape.len();
        let edge = |j: usize, i: usize| deps.edge(j, i).is_some();
        // reach[j][i]: a path j ⇝ i of one or more edges.
        let mut reach = vec![vec![false; n]; n];
        for i in 0..n {
            for j in (0..i).rev() {
                reach[j][i] = edge(j, i) || (j + 1..i).any(|k| reach[j][k] && edge(k, i));
            }
        }
        let direct = deps.direct();
        prop_assert_eq!(direct.len(), n);
        for (i, kept) in direct.iter().enumerate() {
            let expected: Vec<usize> =
                (0..i).filter(|&j| edge(j, i) && !(j + 1..i).any(|k| reach[j][k] && edge(k, i))).collect();
            prop_assert_eq!(kept, &expected);
        }
    }
}
