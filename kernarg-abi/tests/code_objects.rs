//! The reader against code objects clang-19 built (`tests/data/README.md`). Every expected value
//! was copied from `llvm-readelf-19 -h`, `--syms`, `--notes` and `-x .rodata` output for the
//! fixture (descriptor words from the `.rodata` hex dump at the `.kd` symbol's value); none comes
//! from this crate.

mod common;
mod readelf_expected;

use common::fixture;
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use kernarg_abi::metadata::{AddressSpace, ValueKind};
use kernarg_abi::sgpr::{UserSgpr, UserSgprCount};
use kernarg_abi::{ReadError, TargetFeature, read, read_any, verdict};
use pm4_encoding::{Family, Target};
use readelf_expected::FIXTURES;

#[test]
fn every_fixture_matches_llvm_readelf() {
    // Every ELF file of tests/data (the bundle is checked separately).
    assert_eq!(FIXTURES.iter().map(|g| g.len()).sum::<usize>(), 9);
    for f in FIXTURES.iter().copied().flatten() {
        let co = read(&fixture(f.file)).unwrap_or_else(|e| panic!("{}: {e}", f.file));
        assert_eq!(co.version, f.version, "{}", f.file);
        assert_eq!(co.target.target, f.target, "{}", f.file);
        assert_eq!((co.target.mach, co.target.name), (f.mach, f.name), "{}", f.file);
        assert_eq!(co.metadata_version, f.metadata_version, "{}", f.file);
        assert_eq!(co.metadata_target, f.metadata_target, "{}", f.file);
        assert_eq!(co.kernels.len(), f.kernels.len(), "{}", f.file);
        for (k, e) in co.kernels.iter().zip(f.kernels) {
            let at = format!("{} {}", f.file, e.name);
            let m = &k.metadata;
            assert_eq!(m.name, e.name, "{at}");
            assert_eq!(m.symbol, format!("{}.kd", e.name), "{at}");
            assert_eq!((k.descriptor_address, k.entry_address), (e.kd, e.entry), "{at}");
            assert_eq!(
                (m.kernarg_segment_size, m.group_segment_fixed_size, m.private_segment_fixed_size),
                (e.kernarg, e.group, e.private),
                "{at}"
            );
            assert_eq!((m.wavefront_size, m.sgpr_count, m.vgpr_count), (e.wave, e.sgpr, e.vgpr), "{at}");
            let d = &k.descriptor;
            assert_eq!(
                (d.compute_pgm_rsrc1(), d.compute_pgm_rsrc2(), d.compute_pgm_rsrc3()),
                (e.rsrc1, e.rsrc2, e.rsrc3),
                "{at}"
            );
            assert_eq!(d.kernel_code_properties().raw(), e.kcp, "{at}");
            // Descriptor sizes agree with the metadata in every clang-19 fixture.
            assert_eq!(
                (d.kernarg_size(), d.group_segment_fixed_size(), d.private_segment_fixed_size()),
                (e.kernarg, e.group, e.private),
                "{at}"
            );
            assert_eq!(d.kernarg_preload().raw(), 0, "{at}");
            assert!(d.nonzero_reserved_bytes().is_empty(), "{at}");
        }
    }
}

#[test]
fn expected_verdicts() {
    // (fixture, kernel, reason codes).
    let cases: &[(&str, &str, &[&str])] = &[
        ("kernels-gfx1030.co", "scratch", &["private_segment", "flat_scratch_init"]),
        ("kernels-gfx1030-wave64.co", "scratch", &["private_segment", "flat_scratch_init"]),
        ("kernels-gfx1100.co", "scratch", &["private_segment"]),
        ("kernels-gfx1100-v4.co", "scratch", &["private_segment"]),
        ("kernels-gfx1100-v6.co", "scratch", &["private_segment"]),
        ("kernels-gfx1151.co", "scratch", &["private_segment"]),
        ("kernels-gfx1200.co", "scratch", &["private_segment"]),
        ("kernels-gfx1201.co", "scratch", &["private_segment"]),
        // Under v4 the work-group size comes from the dispatch packet.
        ("kernels-gfx1100-v4.co", "dims", &["dispatch_ptr"]),
        ("add-gfx90a-xnack.co", "add", &["unsupported_target", "private_segment_buffer"]),
    ];
    for file in common::CODE_OBJECTS {
        let co = read(&fixture(file)).unwrap();
        for k in &co.kernels {
            let v = verdict(k, &co.target);
            let codes: Vec<&str> = v.reasons.iter().map(|r| r.code()).collect();
            let expected: &[&str] = cases
                .iter()
                .find(|(f, n, _)| *f == file && *n == k.name())
                .map(|c| c.2)
                .unwrap_or(if k.name() == "dispatch_ptr" { &["dispatch_ptr"] } else { &[] });
            assert_eq!(codes, expected, "{file} {}", k.name());
            assert_eq!(v.supported, expected.is_empty());
        }
    }
}

#[test]
fn scratch_kernel_reason_text() {
    let co = read(&fixture("kernels-gfx1201.co")).unwrap();
    let v = verdict(co.kernel("scratch").unwrap(), &co.target);
    assert!(!v.supported);
    assert_eq!(
        v.reasons[0].to_string(),
        "the kernel uses scratch (descriptor 272 bytes, metadata 272 bytes per work-item, ENABLE_PRIVATE_SEGMENT 1), \
         which a retained replay does not provide"
    );
}

#[test]
fn wave64_kernels() {
    let co = read(&fixture("kernels-gfx1030-wave64.co")).unwrap();
    for k in &co.kernels {
        assert_eq!(k.metadata.wavefront_size, 64, "{}", k.name());
        assert_eq!(k.descriptor.kernel_code_properties().enable_wavefront_size32(), 0, "{}", k.name());
    }
    assert!(verdict(co.kernel("add").unwrap(), &co.target).supported);
    let wave32 = read(&fixture("kernels-gfx1030.co")).unwrap();
    assert_eq!(wave32.kernel("add").unwrap().descriptor.kernel_code_properties().enable_wavefront_size32(), 1);
}

#[test]
fn user_sgpr_layouts_per_family() {
    // gfx1030 add: kernel_code_properties 0x0409 = private segment buffer + kernarg pointer;
    // RSRC2 0x8c = USER_SGPR 6.
    let co = read(&fixture("kernels-gfx1030.co")).unwrap();
    let l = co.kernel("add").unwrap().user_sgpr_layout(Family::Gfx10_3);
    let kinds: Vec<(UserSgpr, u8, u8)> = l.blocks().iter().map(|b| (b.kind, b.first, b.count)).collect();
    assert_eq!(kinds, [(UserSgpr::PrivateSegmentBuffer, 0, 4), (UserSgpr::KernargSegmentPtr, 4, 2)]);
    assert_eq!((l.kernarg_ptr_sgpr(), l.total(), l.rsrc2_count()), (Some(4), 6, UserSgprCount::Exact));
    // gfx1100 add: 0x0408, RSRC2 0x9e = USER_SGPR 15 (LLVM's workaround count).
    let co = read(&fixture("kernels-gfx1100.co")).unwrap();
    let l = co.kernel("add").unwrap().user_sgpr_layout(Family::Gfx11);
    assert_eq!((l.kernarg_ptr_sgpr(), l.total()), (Some(0), 2));
    assert_eq!(l.rsrc2_count(), UserSgprCount::Larger { rsrc2: 15, layout: 2 });
    // gfx1201 dispatch_ptr: 0x040a, RSRC2 0x88 = USER_SGPR 4.
    let co = read(&fixture("kernels-gfx1201.co")).unwrap();
    let l = co.kernel("dispatch_ptr").unwrap().user_sgpr_layout(Family::Gfx12);
    let kinds: Vec<(UserSgpr, u8)> = l.blocks().iter().map(|b| (b.kind, b.first)).collect();
    assert_eq!(kinds, [(UserSgpr::DispatchPtr, 0), (UserSgpr::KernargSegmentPtr, 2)]);
    assert_eq!(l.rsrc2_count(), UserSgprCount::Exact);
}

#[test]
fn dims_hidden_arguments_and_blob() {
    let co = read(&fixture("kernels-gfx1151.co")).unwrap();
    let k = co.kernel("dims").unwrap();
    // llvm-readelf-19 --notes: global_buffer at 0, then the hidden block from offset 8.
    let args: Vec<(u32, u32, &str)> =
        k.metadata.args.iter().map(|a| (a.offset, a.size, a.value_kind.as_str())).collect();
    assert_eq!(
        args,
        [
            (0, 8, "global_buffer"),
            (8, 4, "hidden_block_count_x"),
            (12, 4, "hidden_block_count_y"),
            (16, 4, "hidden_block_count_z"),
            (20, 2, "hidden_group_size_x"),
            (22, 2, "hidden_group_size_y"),
            (24, 2, "hidden_group_size_z"),
            (26, 2, "hidden_remainder_x"),
            (28, 2, "hidden_remainder_y"),
            (30, 2, "hidden_remainder_z"),
            (48, 8, "hidden_global_offset_x"),
            (56, 8, "hidden_global_offset_y"),
            (64, 8, "hidden_global_offset_z"),
            (72, 2, "hidden_grid_dims"),
        ]
    );
    assert_eq!(k.metadata.args[0].address_space, Some(AddressSpace::Global));
    let layout = k.kernarg_layout().unwrap();
    let g = DispatchGeometry { grid_size: [300, 5, 1], workgroup_size: [128, 2, 1], dims: 2, dynamic_lds_bytes: 0 };
    let blob = layout.build(&[ArgValue::Pointer(0x1000)], &g).unwrap();
    assert_eq!(blob.len(), 264);
    // 300 = 2 * 128 + 44; 5 = 2 * 2 + 1.
    assert_eq!(&blob[8..20], &[2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(&blob[20..32], &[128, 0, 2, 0, 1, 0, 44, 0, 1, 0, 0, 0]);
    assert_eq!(&blob[72..74], &[2, 0]);
}

#[test]
fn dynamic_lds_kernel() {
    for file in ["kernels-gfx1030.co", "kernels-gfx1100.co", "kernels-gfx1200.co"] {
        let co = read(&fixture(file)).unwrap();
        let k = co.kernel("dyn_lds").unwrap();
        // 16 floats of static LDS; the `extern __shared__` array adds no metadata (LLVM 19 emits
        // no hidden_dynamic_lds_size), so the dispatch supplies the dynamic part.
        assert_eq!((k.metadata.group_segment_fixed_size, k.descriptor.group_segment_fixed_size()), (64, 64));
        let args: Vec<(u32, u32, &ValueKind)> =
            k.metadata.args.iter().map(|a| (a.offset, a.size, &a.value_kind)).collect();
        assert_eq!(args, [(0, 8, &ValueKind::GlobalBuffer), (8, 1, &ValueKind::ByValue), (16, 8, &ValueKind::ByValue)]);
        assert!(verdict(k, &co.target).supported, "{file}");
        let mut g = DispatchGeometry::linear(256, 64);
        g.dynamic_lds_bytes = 256;
        let blob = k
            .kernarg_layout()
            .unwrap()
            .build(&[ArgValue::Pointer(0x2000), ArgValue::I8(3), ArgValue::F64(0.5)], &g)
            .unwrap();
        assert_eq!(blob, [0, 0x20, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f]);
    }
}

#[test]
fn by_value_struct_at_odd_offset() {
    let co = read(&fixture("kernels-gfx1100.co")).unwrap();
    let k = co.kernel("by_value").unwrap();
    let args: Vec<(u32, u32)> = k.metadata.args.iter().map(|a| (a.offset, a.size)).collect();
    assert_eq!(args, [(0, 1), (1, 2), (4, 4), (8, 8), (16, 8)]);
    assert!(k.kernarg_layout().is_ok());
}

#[test]
fn gfx90a_target_features() {
    let co = read(&fixture("add-gfx90a-xnack.co")).unwrap();
    assert_eq!((co.target.xnack, co.target.sramecc), (TargetFeature::On, TargetFeature::Off));
    assert_eq!(co.target.to_string(), "gfx90a:sramecc-:xnack+");
    // gfx90a has matrix instructions: .agpr_count is emitted (llvm-readelf-19 --notes: 0).
    assert_eq!(co.kernels[0].metadata.agpr_count, Some(0));
    for file in ["kernels-gfx1030.co", "kernels-gfx1100.co", "kernels-gfx1201.co"] {
        let co = read(&fixture(file)).unwrap();
        assert_eq!((co.target.xnack, co.target.sramecc), (TargetFeature::Unsupported, TargetFeature::Unsupported));
        assert_eq!(co.kernels[0].metadata.agpr_count, None);
    }
}

#[test]
fn bundle_with_two_targets() {
    let bytes = fixture(common::BUNDLE);
    assert!(kernarg_abi::bundle::is_bundle(&bytes));
    // xxd of the bundle: host entry (offset 0x1000, size 0), then gfx1100 at 0x1000 and gfx1201
    // at 0x2000, each 3592 bytes.
    let entries = kernarg_abi::bundle::entries(&bytes).unwrap();
    let summary: Vec<(&str, u64, usize)> = entries.iter().map(|e| (e.triple, e.offset, e.bytes.len())).collect();
    assert_eq!(
        summary,
        [
            ("host-x86_64-unknown-linux--", 0x1000, 0),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", 0x1000, 3592),
            ("hipv4-amdgcn-amd-amdhsa--gfx1201", 0x2000, 3592),
        ]
    );
    for t in [Target::Gfx1100, Target::Gfx1201] {
        let elf = kernarg_abi::bundle::select(&bytes, t).unwrap();
        assert_eq!(&elf[..4], b"\x7fELF");
        let co = read_any(&bytes, Some(t)).unwrap();
        assert_eq!(co.target.target, Some(t));
        assert_eq!(co.kernels.len(), 1);
        // llvm-readelf-19 --syms on the unbundled entry: add.kd = 0x580, add = 0x1600.
        assert_eq!((co.kernels[0].descriptor_address, co.kernels[0].entry_address), (0x580, 0x1600));
        assert!(verdict(&co.kernels[0], &co.target).supported);
    }
    assert!(matches!(
        kernarg_abi::bundle::select(&bytes, Target::Gfx1030),
        Err(kernarg_abi::bundle::BundleError::TargetNotFound { target: Target::Gfx1030, .. })
    ));
    assert!(matches!(read_any(&bytes, Some(Target::Gfx1151)), Err(ReadError::Bundle(_))));
    let err = read_any(&bytes, None).unwrap_err();
    assert_eq!(
        err,
        ReadError::TargetRequired {
            available: vec![
                "hipv4-amdgcn-amd-amdhsa--gfx1100".to_string(),
                "hipv4-amdgcn-amd-amdhsa--gfx1201".to_string()
            ]
        }
    );
}

#[test]
fn read_any_on_elf_files() {
    let bytes = fixture("kernels-gfx1200.co");
    assert_eq!(read_any(&bytes, None).unwrap(), read(&bytes).unwrap());
    assert_eq!(read_any(&bytes, Some(Target::Gfx1200)).unwrap().target.target, Some(Target::Gfx1200));
    assert_eq!(
        read_any(&bytes, Some(Target::Gfx1201)),
        Err(ReadError::TargetMismatch { requested: Target::Gfx1201, found: "gfx1200".into() })
    );
}
