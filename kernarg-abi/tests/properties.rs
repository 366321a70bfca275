//! Property tests: the readers never panic on arbitrary or mutated input; kernarg blobs carry the
//! geometry's hidden values; layouts, user SGPR layouts and descriptors keep their invariants.

mod common;

use kernarg_abi::bundle;
use kernarg_abi::descriptor::KernelDescriptor;
use kernarg_abi::layout::{ArgValue, DispatchGeometry, KernargLayout};
use kernarg_abi::metadata::{ArgMetadata, KernelMetadata, ValueKind};
use kernarg_abi::sgpr::{UserSgpr, UserSgprLayout};
use kernarg_abi::{parse_metadata, read, read_any};
use pm4_encoding::{Family, Target};
use proptest::prelude::*;
use zerocopy::IntoBytes;

/// One edit of a byte string.
#[derive(Clone, Debug)]
enum Mutation {
    /// XOR the byte at `index % len` with `mask`.
    Flip { index: usize, mask: u8 },
    /// Overwrite 8 bytes at `index % len` with a little-endian value (lengths, offsets, counts).
    Word { index: usize, value: u64 },
    /// Insert bytes at `index % (len + 1)`.
    Insert { index: usize, bytes: Vec<u8> },
    /// Keep the first `index % (len + 1)` bytes.
    Truncate { index: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1..=u8::MAX).prop_map(|(index, mask)| Mutation::Flip { index, mask }),
        2 => (any::<usize>(), prop_oneof![any::<u64>(), 0..4096u64, Just(u64::MAX)])
            .prop_map(|(index, value)| Mutation::Word { index, value }),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(index, bytes)| Mutation::Insert { index, bytes }),
        1 => any::<usize>().prop_map(|index| Mutation::Truncate { index }),
    ]
}

fn apply(bytes: &mut Vec<u8>, mutations: &[Mutation]) {
    for m in mutations {
        match m {
            Mutation::Flip { index, mask } if !bytes.is_empty() => {
                let i = index % bytes.len();
                bytes[i] ^= mask;
            }
            Mutation::Word { index, value } if !bytes.is_empty() => {
                let i = index % bytes.len();
                let end = (i + 8).min(bytes.len());
                bytes[i..end].copy_from_slice(&value.to_le_bytes()[..end - i]);
            }
            Mutation::Insert { index, bytes: b } => {
                let i = index % (bytes.len() + 1);
                bytes.splice(i..i, b.iter().copied());
            }
            Mutation::Truncate { index } => {
                let keep = index % (bytes.len() + 1);
                bytes.truncate(keep);
            }
            _ => {}
        }
    }
}

/// The metadata note descriptor of `kernels-gfx1100.co`: the note sits at file offset 0x238
/// (`llvm-readelf-19 -S`), with a 7-byte name padded to 8 after the 12-byte header.
fn metadata_bytes() -> Vec<u8> {
    let co = common::fixture("kernels-gfx1100.co");
    let descsz = u32::from_le_bytes(co[0x238 + 4..0x238 + 8].try_into().unwrap()) as usize;
    co[0x238 + 20..0x238 + 20 + descsz].to_vec()
}

/// Everything a caller may do with untrusted bytes; must never panic.
fn exercise(bytes: &[u8]) {
    if let Ok(co) = read(bytes) {
        for k in &co.kernels {
            let _ = kernarg_abi::verdict(k, &co.target);
            if let Ok(layout) = k.kernarg_layout() {
                let _ = layout.build(&[], &DispatchGeometry::linear(64, 64));
            }
            for f in Family::ALL {
                let _ = k.user_sgpr_layout(f);
                let _ = k.descriptor.reserved_bits(f);
            }
        }
    }
    let _ = read_any(bytes, None);
    let _ = read_any(bytes, Some(Target::Gfx1100));
    let _ = bundle::entries(bytes);
    let _ = bundle::select(bytes, Target::Gfx1201);
    let _ = parse_metadata(bytes);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        exercise(&bytes);
        // The same bytes behind each magic.
        for magic in [&b"\x7fELF\x02\x01\x01\x40\x03"[..], &bundle::BUNDLE_MAGIC[..], b"CCOB"] {
            let mut b = magic.to_vec();
            b.extend_from_slice(&bytes);
            exercise(&b);
        }
    }

    #[test]
    fn mutated_code_objects_never_panic(
        file in prop::sample::select(common::CODE_OBJECTS.to_vec()),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = common::fixture(file);
        apply(&mut bytes, &mutations);
        exercise(&bytes);
    }

    #[test]
    fn mutated_bundles_never_panic(mutations in prop::collection::vec(mutation(), 1..6)) {
        let mut bytes = common::fixture(common::BUNDLE);
        // Mutate the header region most of the time: that is where the structure is.
        let header: Vec<Mutation> = mutations
            .into_iter()
            .map(|m| match m {
                Mutation::Flip { index, mask } => Mutation::Flip { index: index % 0xc8, mask },
                Mutation::Word { index, value } => Mutation::Word { index: index % 0xc8, value },
                other => other,
            })
            .collect();
        apply(&mut bytes, &header);
        exercise(&bytes);
        for e in bundle::entries(&bytes).unwrap_or_default() {
            exercise(e.bytes);
        }
    }

    #[test]
    fn mutated_metadata_never_panics(mutations in prop::collection::vec(mutation(), 1..6)) {
        let mut bytes = metadata_bytes();
        apply(&mut bytes, &mutations);
        let _ = parse_metadata(&bytes);
    }

    #[test]
    fn hostile_messagepack_prefixes(
        prefix in prop::collection::vec(prop::sample::select(vec![
            0x80u8, 0x81, 0x8f, 0x90, 0x91, 0x9f, 0xdc, 0xdd, 0xde, 0xdf, 0xd9, 0xda, 0xdb, 0xc4, 0xc5, 0xc6,
            0xc7, 0xc8, 0xc9, 0xd4, 0xd8, 0xcf, 0xd3, 0xc1, 0xa1, 0xff, 0x00,
        ]), 0..64),
        tail in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = prefix;
        bytes.extend_from_slice(&tail);
        let _ = parse_metadata(&bytes);
    }

    #[test]
    fn blob_carries_the_geometry(
        explicit in prop::collection::vec(prop::sample::select(vec![1u32, 2, 4, 8, 16]), 0..6),
        dims in 1u8..=3,
        grid in [1u32..=1 << 24, 1u32..=1 << 16, 1u32..=1 << 12],
        workgroup in [1u16..=1024, 1u16..=1024, 1u16..=64],
        dynamic_lds_bytes in any::<u32>(),
        fill in any::<u8>(),
    ) {
        // Explicit by-value arguments packed at their size's alignment, then LLVM's v5 hidden
        // block (reference §7 offsets) at the next multiple of 8.
        let mut args = Vec::new();
        let mut offset = 0u32;
        for &size in &explicit {
            offset = offset.next_multiple_of(size.min(8));
            args.push(arg(offset, size, ValueKind::ByValue));
            offset += size;
        }
        let base = offset.next_multiple_of(8);
        let hidden: [(u32, u32, ValueKind); 13] = [
            (0, 4, ValueKind::HiddenBlockCountX),
            (4, 4, ValueKind::HiddenBlockCountY),
            (8, 4, ValueKind::HiddenBlockCountZ),
            (12, 2, ValueKind::HiddenGroupSizeX),
            (14, 2, ValueKind::HiddenGroupSizeY),
            (16, 2, ValueKind::HiddenGroupSizeZ),
            (18, 2, ValueKind::HiddenRemainderX),
            (20, 2, ValueKind::HiddenRemainderY),
            (22, 2, ValueKind::HiddenRemainderZ),
            (40, 8, ValueKind::HiddenGlobalOffsetX),
            (64, 2, ValueKind::HiddenGridDims),
            (72, 8, ValueKind::HiddenPrintfBuffer),
            (120, 4, ValueKind::HiddenDynamicLdsSize),
        ];
        for (at, size, kind) in hidden {
            args.push(arg(base + at, size, kind));
        }
        let segment = base + 256;
        let layout = KernargLayout::new(&metadata(segment, args)).unwrap();
        let mut g = DispatchGeometry { grid_size: grid, workgroup_size: workgroup, dims, dynamic_lds_bytes };
        for axis in usize::from(dims)..3 {
            g.grid_size[axis] = 1;
            g.workgroup_size[axis] = 1;
        }
        let values: Vec<ArgValue> = explicit.iter().map(|&s| ArgValue::Bytes(vec![fill; s as usize])).collect();
        let blob = layout.build(&values, &g).unwrap();
        prop_assert_eq!(blob.len(), segment as usize);
        let b = base as usize;
        let u32_at = |at: usize| u32::from_le_bytes(blob[b + at..b + at + 4].try_into().unwrap());
        let u16_at = |at: usize| u16::from_le_bytes(blob[b + at..b + at + 2].try_into().unwrap());
        for axis in 0..3 {
            let (n, w) = (g.grid_size[axis], u32::from(g.workgroup_size[axis]));
            prop_assert_eq!(u32_at(4 * axis), n / w, "block count {}", axis);
            prop_assert_eq!(u16_at(12 + 2 * axis), g.workgroup_size[axis]);
            prop_assert_eq!(u32::from(u16_at(18 + 2 * axis)), n % w, "remainder {}", axis);
            // Full groups plus the partial one cover the grid exactly.
            prop_assert_eq!(u32_at(4 * axis) * w + u32::from(u16_at(18 + 2 * axis)), n);
        }
        prop_assert_eq!(u16_at(64), u16::from(dims));
        prop_assert_eq!(u32_at(120), dynamic_lds_bytes);
        // Explicit bytes in place; everything else zero.
        let mut covered = vec![false; blob.len()];
        for a in layout.explicit_args() {
            for i in a.offset as usize..(a.offset + a.size) as usize {
                prop_assert_eq!(blob[i], fill);
                covered[i] = true;
            }
        }
        for at in [0usize, 4, 8, 12, 14, 16, 18, 20, 22, 64, 120] {
            let width = if at < 12 || at == 120 { 4 } else { 2 };
            covered[b + at..b + at + width].iter_mut().for_each(|c| *c = true);
        }
        for (i, c) in covered.iter().enumerate() {
            if !c {
                prop_assert_eq!(blob[i], 0, "byte {} not zero", i);
            }
        }
    }

    #[test]
    fn layout_accepts_exactly_the_valid_lists(
        segment in 0u32..128,
        raw in prop::collection::vec((0u32..128, 0u32..17, 0usize..4), 0..8),
    ) {
        let kinds = [ValueKind::ByValue, ValueKind::GlobalBuffer, ValueKind::HiddenBlockCountX, ValueKind::HiddenGridDims];
        let args: Vec<ArgMetadata> = raw.iter().map(|&(o, s, k)| arg(o, s, kinds[k].clone())).collect();
        let result = KernargLayout::new(&metadata(segment, args.clone()));
        // Independent statement of the rules.
        let mut end = 0u32;
        let mut valid = true;
        for a in &args {
            let natural = if a.size == 0 { 1 } else { (1u32 << a.size.trailing_zeros()).min(8) };
            let align = if a.value_kind == ValueKind::ByValue { 1 } else { natural };
            let size_ok = match a.value_kind {
                ValueKind::HiddenBlockCountX => a.size == 4,
                ValueKind::HiddenGridDims => a.size == 2,
                _ => true,
            };
            valid &= a.offset >= end && a.offset + a.size <= segment && a.offset % align == 0 && size_ok;
            end = a.offset + a.size;
        }
        prop_assert_eq!(result.is_ok(), valid, "{:?}", result);
        if let Ok(layout) = result {
            prop_assert_eq!(layout.args().len(), args.len());
            for w in layout.args().windows(2) {
                prop_assert!(w[0].offset + w[0].size <= w[1].offset);
            }
            if let Ok(blob) = layout.build(&[], &DispatchGeometry::linear(1, 1)) {
                prop_assert_eq!(blob.len(), segment as usize);
            }
        }
    }

    #[test]
    fn user_sgpr_blocks_are_dense_and_ordered(kcp in any::<u16>(), preload in any::<u16>(), rsrc2 in any::<u32>()) {
        let mut bytes = [0u8; 64];
        bytes[52..56].copy_from_slice(&rsrc2.to_le_bytes());
        bytes[56..58].copy_from_slice(&kcp.to_le_bytes());
        bytes[58..60].copy_from_slice(&preload.to_le_bytes());
        let d = KernelDescriptor::from_bytes(&bytes).unwrap();
        for family in Family::ALL {
            let l = UserSgprLayout::new(&d, family);
            let mut next = 0u8;
            let mut order = Vec::new();
            for b in l.blocks() {
                prop_assert_eq!(b.first, next);
                prop_assert!(b.count > 0);
                next += b.count;
                order.push(b.kind);
            }
            prop_assert_eq!(l.total(), next);
            let mut sorted = order.clone();
            sorted.sort();
            prop_assert_eq!(&order, &sorted);
            // Expected sizes from reference §6 for the enable bits.
            let sizes = [(0, 4u8), (1, 2), (2, 2), (3, 2), (4, 2), (5, 2)];
            let mut expected: u8 = sizes.iter().filter(|(bit, _)| kcp & (1 << bit) != 0).map(|(_, n)| n).sum();
            expected += (preload & 0x7f) as u8 + u8::from(kcp & (1 << 6) != 0);
            prop_assert_eq!(l.total(), expected);
            prop_assert_eq!(l.rsrc2_user_sgpr(), ((rsrc2 >> 1) & 0x1f) as u8);
            let kernarg = l.block(UserSgpr::KernargSegmentPtr).map(|b| b.first);
            prop_assert_eq!(l.kernarg_ptr_sgpr(), kernarg);
            prop_assert_eq!(kernarg.is_some(), kcp & (1 << 3) != 0);
        }
    }

    #[test]
    fn descriptor_fields_at_reference_offsets(bytes in prop::array::uniform32(any::<u8>()), tail in prop::array::uniform32(any::<u8>())) {
        let mut all = [0u8; 64];
        all[..32].copy_from_slice(&bytes);
        all[32..].copy_from_slice(&tail);
        let d = KernelDescriptor::from_bytes(&all).unwrap();
        let u32_at = |o: usize| u32::from_le_bytes(all[o..o + 4].try_into().unwrap());
        prop_assert_eq!(d.as_bytes(), &all[..]);
        prop_assert_eq!(d.group_segment_fixed_size(), u32_at(0));
        prop_assert_eq!(d.private_segment_fixed_size(), u32_at(4));
        prop_assert_eq!(d.kernarg_size(), u32_at(8));
        prop_assert_eq!(d.kernel_code_entry_byte_offset(), i64::from_le_bytes(all[16..24].try_into().unwrap()));
        prop_assert_eq!(d.compute_pgm_rsrc3(), u32_at(44));
        prop_assert_eq!(d.compute_pgm_rsrc1(), u32_at(48));
        prop_assert_eq!(d.compute_pgm_rsrc2(), u32_at(52));
        prop_assert_eq!(d.kernel_code_properties().raw(), u32::from(u16::from_le_bytes([all[56], all[57]])));
        prop_assert_eq!(d.kernarg_preload().raw(), u32::from(u16::from_le_bytes([all[58], all[59]])));
        let reserved_nonzero = [12..16, 24..44, 60..64].iter().filter(|r| all[(*r).clone()].iter().any(|&b| b != 0)).count();
        prop_assert_eq!(d.nonzero_reserved_bytes().len(), reserved_nonzero);
        for f in Family::ALL {
            prop_assert_eq!(d.rsrc2(f).user_sgpr(), ((u32_at(52) >> 1) & 0x1f) as u8);
        }
    }
}

fn arg(offset: u32, size: u32, value_kind: ValueKind) -> ArgMetadata {
    ArgMetadata {
        name: None,
        type_name: None,
        offset,
        size,
        value_kind,
        address_space: None,
        access: None,
        actual_access: None,
        pointee_align: None,
        is_const: false,
        is_restrict: false,
        is_volatile: false,
        is_pipe: false,
    }
}

fn metadata(segment: u32, args: Vec<ArgMetadata>) -> KernelMetadata {
    KernelMetadata {
        name: "k".into(),
        symbol: "k.kd".into(),
        kernarg_segment_size: segment,
        kernarg_segment_align: 8,
        group_segment_fixed_size: 0,
        private_segment_fixed_size: 0,
        wavefront_size: 32,
        sgpr_count: 0,
        vgpr_count: 0,
        agpr_count: None,
        max_flat_workgroup_size: 1024,
        sgpr_spill_count: None,
        vgpr_spill_count: None,
        uses_dynamic_stack: false,
        workgroup_processor_mode: None,
        uniform_work_group_size: None,
        reqd_workgroup_size: None,
        kind: None,
        language: None,
        args,
    }
}

#[test]
fn fixture_metadata_bytes_parse() {
    // The slice `metadata_bytes` mutates is the real note: it parses to the six kernels.
    let m = parse_metadata(&metadata_bytes()).unwrap();
    let names: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["add", "dims", "dyn_lds", "dispatch_ptr", "scratch", "by_value"]);
}
