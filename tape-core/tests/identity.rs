//! Tape identity and the ordered sequence hash: a golden value pinned by a literal and by an
//! independent SHA-256 over the byte sequence `tape_core::hash` documents, invariance under
//! renumbered allocations and moved pointers, and sensitivity to every hashed field.

mod recorder_fixture;

use proptest::prelude::*;
use recorder_fixture::*;
use sha2::{Digest, Sha256};
use tape_core::binding::{Binding, BindingKind};
use tape_core::serial::{TapeData, validate};
use tape_core::tape::{ExternalCount, ReconcileError, TapeIdentity};
use tape_core::{Access, AllocationId, Effects};

/// The golden tape's sequence hash.
const GOLDEN_SEQUENCE_HASH: &str = "bb025177836b570969e4992acb047ebdf7b1579f209fdc9e6957d28f3a203970";

fn hash_of(data: &TapeData) -> [u8; 32] {
    validate(data.clone()).unwrap().identity().sequence_hash
}

/// The documented byte sequence of the golden tape, written out from the fixture's literals
/// (digests, geometry, the kernarg blobs `KernargLayout::build` makes, and the allocation
/// ordinals worked out by hand: x = 0, y = 1, sums = 2).
fn documented_golden_bytes() -> Vec<u8> {
    fn u32le(out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    fn u64le(out: &mut Vec<u8>, v: u64) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    struct Expected {
        sha: &'static str,
        symbol: &'static str,
        grid: u32,
        dynamic_lds: u32,
        blob: Vec<u8>,
        /// (kernarg offset, ordinal, offset in allocation)
        pointers: Vec<(u32, u32, u64)>,
        /// (ordinal, offset, len, access byte)
        effects: Vec<(u32, u64, u64, u8)>,
    }
    let (f, a, b) = (fill(), axpy(), block_sum());
    let n = u64::from(N);
    let launches = [
        Expected {
            sha: FILL_SHA256,
            symbol: "fill",
            grid: 1024,
            dynamic_lds: 0,
            blob: fill_launch(&f).kernarg,
            pointers: vec![(0, 0, 0)],
            effects: vec![(0, 0, 4 * n, 1)],
        },
        Expected {
            sha: AXPY_SHA256,
            symbol: "axpy",
            grid: 1024,
            dynamic_lds: 0,
            blob: axpy_launch(&a).kernarg,
            pointers: vec![(0, 1, 0), (8, 0, 0)],
            effects: vec![(1, 0, 4 * n, 2), (0, 0, 4 * n, 0)],
        },
        Expected {
            sha: BLOCK_SUM_SHA256,
            symbol: "block_sum",
            grid: 1024,
            dynamic_lds: 256,
            blob: block_sum_launch(&b, 1024).kernarg,
            pointers: vec![(0, 2, 64), (8, 1, 0)],
            effects: vec![(2, 64, 64, 1), (1, 0, 4 * n, 0)],
        },
    ];
    let mut out = Vec::new();
    out.extend_from_slice(b"redline.tape.sequence.v1\0");
    u32le(&mut out, 3);
    for l in launches {
        out.extend_from_slice(&hex_decode(l.sha));
        u32le(&mut out, u32::try_from(l.symbol.len()).unwrap());
        out.extend_from_slice(l.symbol.as_bytes());
        for v in [l.grid, 1, 1] {
            u32le(&mut out, v);
        }
        for v in [64u16, 1, 1] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        u32le(&mut out, 0); // static LDS: none of the three kernels has any
        u32le(&mut out, l.dynamic_lds);
        out.push(32);
        let mut blob = l.blob;
        for &(slot, _, _) in &l.pointers {
            let at = slot as usize;
            assert_ne!(blob[at..at + 8], [0; 8], "the fixture's pointer slot {slot} holds an address");
            blob[at..at + 8].fill(0);
        }
        u32le(&mut out, u32::try_from(blob.len()).unwrap());
        out.extend_from_slice(&blob);
        u32le(&mut out, u32::try_from(l.pointers.len()).unwrap());
        for (slot, ordinal, offset) in l.pointers {
            u32le(&mut out, slot);
            u32le(&mut out, ordinal);
            u64le(&mut out, offset);
        }
        out.push(0); // Known
        u32le(&mut out, u32::try_from(l.effects.len()).unwrap());
        for (ordinal, offset, len, access) in l.effects {
            u32le(&mut out, ordinal);
            u64le(&mut out, offset);
            u64le(&mut out, len);
            out.push(access);
        }
    }
    out
}

#[test]
fn golden_sequence_hash_is_pinned() {
    let identity = golden_tape().identity();
    assert_eq!(hex_encode(&identity.sequence_hash), GOLDEN_SEQUENCE_HASH);
}

#[test]
fn golden_sequence_hash_is_the_documented_byte_sequence() {
    let bytes = documented_golden_bytes();
    assert_eq!(hex_encode(&Sha256::digest(&bytes)), GOLDEN_SEQUENCE_HASH);
}

#[test]
fn golden_blobs_hold_the_arguments_at_the_signature_offsets() {
    // The blobs the documented bytes use, read back at the offsets the kernels crate declares.
    use kernels::signature::{axpy, block_sum as bs, fill as fl};
    let word = |blob: &[u8], at: usize| u32::from_le_bytes(blob[at..at + 4].try_into().unwrap());
    let addr = |blob: &[u8], at: usize| u64::from_le_bytes(blob[at..at + 8].try_into().unwrap());
    let tape = golden_tape();
    let [l0, l1, l2] = tape.launches() else { panic!("three launches") };
    assert_eq!(addr(&l0.kernarg, fl::OUT.offset), ADDR_X);
    assert_eq!(word(&l0.kernarg, fl::VALUE.offset), 1.5f32.to_bits());
    assert_eq!(word(&l0.kernarg, fl::N.offset), 1024);
    assert_eq!(addr(&l1.kernarg, axpy::Y.offset), ADDR_Y);
    assert_eq!(addr(&l1.kernarg, axpy::X.offset), ADDR_X);
    assert_eq!(word(&l1.kernarg, axpy::A.offset), 2.0f32.to_bits());
    assert_eq!(addr(&l2.kernarg, bs::OUT.offset), ADDR_SUMS + 64);
    assert_eq!(addr(&l2.kernarg, bs::X.offset), ADDR_Y);
    assert_eq!(word(&l2.kernarg, bs::N.offset), 1024);
    assert_eq!(bs::N.offset, 16, "the golden binding's offset");
}

#[test]
fn golden_identity_counts_and_display() {
    let identity = golden_tape().identity();
    assert_eq!(identity.dispatch_count, 3);
    assert_eq!(identity.unique_kernels, 3);
    assert_eq!(identity.external_launches, 1);
    assert_eq!(identity.compute_launches(), 4);
    assert_eq!(
        identity.to_string(),
        format!("dispatches=3 unique_kernels=3 external_launches=1 sequence_hash={GOLDEN_SEQUENCE_HASH}")
    );
}

#[test]
fn identity_serializes_its_hash_as_hex() {
    let identity = golden_tape().identity();
    let json = serde_json::to_value(identity).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "dispatch_count": 3,
            "unique_kernels": 3,
            "external_launches": 1,
            "sequence_hash": GOLDEN_SEQUENCE_HASH,
        })
    );
    assert_eq!(serde_json::from_value::<TapeIdentity>(json).unwrap(), identity);
}

#[test]
fn reconcile_compares_retained_plus_external_with_observed() {
    let identity = golden_tape().identity();
    assert_eq!(identity.reconcile(4), Ok(()));
    assert_eq!(identity.reconcile(3), Err(ReconcileError { retained: 3, external: 1, observed: 3 }));
    assert_eq!(identity.reconcile(5), Err(ReconcileError { retained: 3, external: 1, observed: 5 }));
    assert_eq!(
        ReconcileError { retained: 3, external: 1, observed: 5 }.to_string(),
        "5 compute launches observed, the tape accounts for 3 retained + 1 external"
    );
}

#[test]
fn unique_kernels_counts_code_object_and_symbol() {
    // elementwise.co holds `add` and `mul`: one digest, two kernels.
    let sha = "3be4cf60450e515e431070d0f8d60f10047b4ce75294d92cfc799d862ea36f3d";
    let (add, mul) = (kernel("gfx1100/elementwise.co", sha, "add"), kernel("gfx1100/elementwise.co", sha, "mul"));
    let f = fill();
    let mut data = golden_tape().into_data();
    let template = data.launches[0].clone();
    let as_kernel = |k: &recorder_fixture::Kernel| {
        let mut l = template.clone();
        l.artifact = k.artifact.clone();
        l
    };
    data.launches = vec![as_kernel(&f), as_kernel(&add), as_kernel(&mul), as_kernel(&add), as_kernel(&f)];
    data.bindings.clear();
    data.external = vec![
        ExternalCount { name: "token_embedding".into(), count: 1 },
        ExternalCount { name: "sampler".into(), count: 2 },
    ];
    let identity = validate(data).unwrap().identity();
    assert_eq!(identity.dispatch_count, 5);
    assert_eq!(identity.unique_kernels, 3);
    assert_eq!(identity.external_launches, 3);
}

#[test]
fn renumbered_allocations_keep_the_hash() {
    let base = golden_tape().into_data();
    let mut renumbered = base.clone();
    map_allocations(&mut renumbered, |AllocationId(id)| {
        AllocationId(match id {
            7 => 0,
            3 => 4_000_000_000,
            11 => 7,
            other => panic!("unexpected allocation {other}"),
        })
    });
    assert_ne!(renumbered, base);
    assert_eq!(hash_of(&renumbered), hash_of(&base));
}

#[test]
fn moved_pointers_keep_the_hash() {
    let base = golden_tape().into_data();
    let mut moved = base.clone();
    map_addresses(&mut moved, |a| a ^ 0x0000_5a00_0000_0000);
    assert_ne!(moved, base);
    assert_eq!(hash_of(&moved), hash_of(&base));
}

#[test]
fn position_bindings_and_external_counts_are_not_hashed() {
    let base = golden_tape().into_data();
    let golden = hash_of(&base);
    let mut other = base.clone();
    other.bindings.clear();
    assert_eq!(hash_of(&other), golden);
    other.external = vec![ExternalCount { name: "something_else".into(), count: 9 }];
    assert_eq!(hash_of(&other), golden);
    other.position = 1_000_000;
    assert_eq!(hash_of(&other), golden);
}

fn known(d: &mut TapeData, i: usize) -> &mut Vec<tape_core::Effect> {
    let Effects::Known(e) = &mut d.launches[i].effects else { unreachable!() };
    e
}

/// One change of one hashed field per entry, each still a valid tape.
fn single_field_changes() -> Vec<(&'static str, TapeData)> {
    let mut base = golden_tape().into_data();
    base.bindings.clear();
    let mut out: Vec<(&'static str, TapeData)> = Vec::new();
    let mut change = |what: &'static str, f: &dyn Fn(&mut TapeData)| {
        let mut d = base.clone();
        f(&mut d);
        assert_ne!(d, base, "{what}: no change");
        out.push((what, d));
    };
    change("artifact digest", &|d| d.launches[0].artifact.code_object_sha256[31] ^= 1);
    change("symbol", &|d| d.launches[1].artifact.symbol.push('2'));
    change("grid x", &|d| d.launches[0].geometry.grid_work_items[0] = 2048);
    change("grid y", &|d| d.launches[0].geometry.grid_work_items[1] = 2);
    change("grid z", &|d| d.launches[0].geometry.grid_work_items[2] = 2);
    change("work-group x", &|d| d.launches[2].geometry.workgroup_work_items[0] = 32);
    change("work-group y", &|d| d.launches[2].geometry.workgroup_work_items[1] = 2);
    change("work-group z", &|d| d.launches[2].geometry.workgroup_work_items[2] = 2);
    change("static LDS", &|d| d.launches[1].lds.static_bytes = 16);
    change("dynamic LDS", &|d| d.launches[2].lds.dynamic_bytes = 512);
    change("wave size", &|d| d.launches[0].wave_size = 64);
    change("kernarg byte", &|d| d.launches[0].kernarg[8] ^= 0x40);
    change("kernarg length", &|d| d.launches[0].kernarg.push(0));
    change("pointer slot", &|d| d.launches[0].pointers[0].kernarg_offset = 16);
    change("pointer offset", &|d| d.launches[1].pointers[1].offset_bytes = 4);
    change("pointer allocation", &|d| {
        // sums becomes an alias of x: the ordinals, not the ids, change.
        d.launches[2].pointers[0].allocation = ALLOC_X;
        let Effects::Known(e) = &mut d.launches[2].effects else { unreachable!() };
        e[0].allocation = ALLOC_X;
    });
    change("pointer removed", &|d| {
        d.launches[1].pointers.remove(1);
        let Effects::Known(e) = &mut d.launches[1].effects else { unreachable!() };
        e.remove(1);
    });
    change("effect offset", &|d| known(d, 0)[0].offset_bytes = 4);
    change("effect length", &|d| known(d, 0)[0].len_bytes = 8);
    change("effect access", &|d| known(d, 0)[0].access = Access::ReadWrite);
    change("effect order", &|d| known(d, 1).swap(0, 1));
    change("effect removed", &|d| known(d, 1).truncate(1));
    change("effects unknown", &|d| d.launches[0].effects = Effects::Unknown);
    change("effects known but empty", &|d| known(d, 0).clear());
    change("launch order", &|d| d.launches.swap(0, 1));
    change("launch removed", &|d| drop(d.launches.pop()));
    change("launch repeated", &|d| d.launches.push(d.launches[0].clone()));
    out
}

#[test]
fn every_hashed_field_changes_the_hash() {
    let mut base = golden_tape().into_data();
    base.bindings.clear();
    let golden = hash_of(&base);
    let mut seen = vec![("golden", golden)];
    for (what, data) in single_field_changes() {
        let hash = hash_of(&data);
        assert_ne!(hash, golden, "{what}");
        if let Some((other, _)) = seen.iter().find(|(_, h)| *h == hash) {
            panic!("{what} and {other} hash alike");
        }
        seen.push((what, hash));
    }
    assert_eq!(seen.len(), 28);
}

#[test]
fn same_kernels_with_bindings_attached_keep_the_hash() {
    let bound = golden_tape();
    let unbound = recorded_at(POSITION);
    assert!(unbound.bindings().is_empty());
    assert_eq!(bound.identity(), unbound.identity());
    let rebound = unbound
        .with_bindings(vec![Binding {
            name: "fill.n".into(),
            launch: 0,
            kind: BindingKind::KernargU32 { offset: 12, addend: 1007 },
        }])
        .unwrap();
    assert_eq!(rebound.identity(), bound.identity());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn hash_ignores_allocation_ids_and_addresses(
        data in arb_tape_data(),
        salt in 1u32..,
        xor in 1u64..,
    ) {
        let before = hash_of(&data);
        let mut moved = data.clone();
        // A bijection on ids (xor with a constant) and on addresses; 0 stays off limits.
        map_allocations(&mut moved, |AllocationId(id)| AllocationId(id ^ salt));
        map_addresses(&mut moved, |a| if a ^ xor == 0 { a } else { a ^ xor });
        prop_assert_eq!(hash_of(&moved), before);
    }
}
