use super::*;
use crate::descriptor::KernelDescriptor;
use crate::metadata::{ArgMetadata, KernelMetadata};
use alloc::string::ToString;
use alloc::vec;
use pm4_encoding::Target;
use zerocopy::little_endian::{U16, U32};

/// `add.kd` of `tests/data/kernels-gfx1100.co` (`llvm-readelf-19 -x .rodata`, 0x12c0): kernarg_size
/// 20, entry offset 0x1240, RSRC1 0x60af0080, RSRC2 0x9e, kernel_code_properties 0x0408.
fn add_descriptor() -> KernelDescriptor {
    let mut bytes = [0u8; 64];
    bytes[8] = 0x14;
    bytes[16..18].copy_from_slice(&[0x40, 0x12]);
    bytes[48..52].copy_from_slice(&[0x80, 0x00, 0xaf, 0x60]);
    bytes[52] = 0x9e;
    bytes[56..58].copy_from_slice(&[0x08, 0x04]);
    KernelDescriptor::from_bytes(&bytes).unwrap()
}

fn arg(offset: u32, size: u32, kind: &str) -> ArgMetadata {
    ArgMetadata {
        name: None,
        type_name: None,
        offset,
        size,
        value_kind: ValueKind::parse(kind),
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

/// The `add` kernel's metadata (`llvm-readelf-19 --notes`).
fn add_metadata() -> KernelMetadata {
    KernelMetadata {
        name: "add".to_string(),
        symbol: "add.kd".to_string(),
        kernarg_segment_size: 20,
        kernarg_segment_align: 8,
        group_segment_fixed_size: 0,
        private_segment_fixed_size: 0,
        wavefront_size: 32,
        sgpr_count: 18,
        vgpr_count: 4,
        agpr_count: None,
        max_flat_workgroup_size: 1024,
        sgpr_spill_count: Some(0),
        vgpr_spill_count: Some(0),
        uses_dynamic_stack: false,
        workgroup_processor_mode: Some(true),
        uniform_work_group_size: Some(1),
        reqd_workgroup_size: None,
        kind: None,
        language: None,
        args: vec![arg(0, 8, "global_buffer"), arg(8, 8, "global_buffer"), arg(16, 4, "by_value")],
    }
}

fn add_kernel() -> Kernel {
    Kernel { metadata: add_metadata(), descriptor: add_descriptor(), descriptor_address: 0x12c0, entry_address: 0x2500 }
}

/// `add.kd` of each fixture `tests/data/kernels-<target>.co`: RSRC1, RSRC2 and
/// kernel_code_properties as `llvm-readelf-19 -x .rodata` shows them.
const ADD_KD: [(Target, u32, u32, u16); 5] = [
    (Target::Gfx1030, 0x60af_0040, 0x8c, 0x0409),
    (Target::Gfx1100, 0x60af_0080, 0x9e, 0x0408),
    (Target::Gfx1151, 0x60af_0000, 0x84, 0x0408),
    (Target::Gfx1200, 0x600f_0000, 0x84, 0x0408),
    (Target::Gfx1201, 0x600f_0000, 0x84, 0x0408),
];

/// `add.kd` of the fixture for `target` (one of [`ADD_KD`]).
fn add_kernel_for(target: Target) -> Kernel {
    let &(_, rsrc1, rsrc2, kcp) = ADD_KD.iter().find(|row| row.0 == target).expect("a fixture of the target");
    let mut k = add_kernel();
    k.descriptor.compute_pgm_rsrc1 = U32::new(rsrc1);
    k.descriptor.compute_pgm_rsrc2 = U32::new(rsrc2);
    k.descriptor.kernel_code_properties = U16::new(kcp);
    k
}

fn gfx(target: Target) -> TargetId {
    TargetId::from_e_flags(crate::target::target_mach(target))
}

fn codes(kernel: &Kernel, target: Target) -> Vec<&'static str> {
    let v = verdict(kernel, &gfx(target));
    assert_eq!(v.supported, v.reasons.is_empty());
    v.reasons.iter().map(Reason::code).collect()
}

fn with_kcp(kcp: u16) -> Kernel {
    let mut k = add_kernel();
    k.descriptor.kernel_code_properties = U16::new(kcp);
    k
}

#[test]
fn plain_kernel_is_supported_on_every_target() {
    for (t, ..) in ADD_KD {
        let v = verdict(&add_kernel_for(t), &gfx(t));
        assert!(v.supported, "{t}: {:?}", v.reasons);
    }
}

#[test]
fn scratch_from_any_source() {
    let mut k = add_kernel();
    k.descriptor.private_segment_fixed_size = U32::new(272);
    assert_eq!(codes(&k, Target::Gfx1100), ["private_segment"]);
    let mut k = add_kernel();
    k.metadata.private_segment_fixed_size = 16;
    assert_eq!(codes(&k, Target::Gfx1100), ["private_segment"]);
    let mut k = add_kernel_for(Target::Gfx1201);
    k.descriptor.compute_pgm_rsrc2 = U32::new(0x85);
    let v = verdict(&k, &gfx(Target::Gfx1201));
    assert_eq!(v.reasons, [Reason::PrivateSegment { descriptor_bytes: 0, metadata_bytes: 0, rsrc2_enable: true }]);
    assert_eq!(
        v.reasons[0].to_string(),
        "the kernel uses scratch (descriptor 0 bytes, metadata 0 bytes per work-item, ENABLE_PRIVATE_SEGMENT 1), \
         which a retained replay does not provide"
    );
}

#[test]
fn dynamic_stack() {
    assert_eq!(codes(&with_kcp(0x0408 | 1 << 11), Target::Gfx1100), ["dynamic_stack"]);
    let mut k = add_kernel();
    k.metadata.uses_dynamic_stack = true;
    assert_eq!(
        verdict(&k, &gfx(Target::Gfx1100)).reasons,
        [Reason::DynamicStack { descriptor: false, metadata: true }]
    );
}

#[test]
fn user_sgprs_are_named() {
    // Each block with the kernarg pointer; RSRC2 0x9e says 15 user SGPRs, enough for all.
    for (bit, code) in [
        (1, "dispatch_ptr"),
        (2, "queue_ptr"),
        (4, "dispatch_id"),
        (5, "flat_scratch_init"),
        (6, "private_segment_size"),
    ] {
        assert_eq!(codes(&with_kcp(0x0408 | 1 << bit), Target::Gfx1100), [code], "bit {bit}");
    }
    let v = verdict(&with_kcp(0x040a), &gfx(Target::Gfx1151));
    assert_eq!(
        v.reasons[0].to_string(),
        "the kernel enables the dispatch ptr user SGPR, which a retained replay does not provide"
    );
    // The private-segment buffer is replayed on gfx10.3 (absolute flat scratch) only: gfx11 and
    // gfx12 have architected flat scratch, where the block must not be enabled (reference §6).
    let buffer = with_kcp(0x0409);
    assert!(codes(&buffer, Target::Gfx1030).is_empty());
    assert_eq!(codes(&buffer, Target::Gfx1100), ["private_segment_buffer"]);
    assert_eq!(codes(&buffer, Target::Gfx1151), ["private_segment_buffer"]);
    let mut buffer = add_kernel_for(Target::Gfx1200);
    buffer.descriptor.kernel_code_properties = U16::new(0x0409);
    buffer.descriptor.compute_pgm_rsrc2 = U32::new(0x8c);
    assert_eq!(codes(&buffer, Target::Gfx1200), ["private_segment_buffer"]);
}

#[test]
fn user_sgpr_counts() {
    // Buffer + kernarg pointer = 6, but RSRC2.USER_SGPR = 2 (0x84 as on gfx1151), on gfx1030
    // where the buffer itself is allowed.
    let mut k = with_kcp(0x0409);
    k.descriptor.compute_pgm_rsrc2 = U32::new(0x84);
    assert_eq!(verdict(&k, &gfx(Target::Gfx1030)).reasons, [Reason::UserSgprCount { rsrc2: 2, layout: 6 }]);
    // Larger is fine (gfx1100's 15).
    assert!(codes(&add_kernel(), Target::Gfx1100).is_empty());
    // Everything enabled: 4 + 5 * 2 + 1 = 15 plus 3 preloaded dwords = 18 > 16.
    let mut k = with_kcp(0x047f);
    k.descriptor.kernarg_preload = U16::new(3);
    k.descriptor.compute_pgm_rsrc2 = U32::new(18 << 1);
    assert_eq!(
        codes(&k, Target::Gfx1100),
        [
            "private_segment_buffer",
            "dispatch_ptr",
            "queue_ptr",
            "dispatch_id",
            "flat_scratch_init",
            "private_segment_size",
            "kernarg_preload",
            "user_sgpr_overflow"
        ]
    );
}

#[test]
fn kernarg_pointer_required_when_there_are_arguments() {
    assert_eq!(
        verdict(&with_kcp(0x0400), &gfx(Target::Gfx1100)).reasons,
        [Reason::KernargPtrMissing { segment_size: 20, args: 3 }]
    );
    let mut k = with_kcp(0x0400);
    k.metadata.args.clear();
    k.metadata.kernarg_segment_size = 0;
    k.descriptor.kernarg_size = U32::new(0);
    assert!(codes(&k, Target::Gfx1100).is_empty());
}

#[test]
fn descriptor_metadata_inconsistencies() {
    let mut k = add_kernel();
    k.descriptor.kernarg_size = U32::new(24);
    assert_eq!(
        verdict(&k, &gfx(Target::Gfx1100)).reasons,
        [Reason::KernargSizeMismatch { descriptor: 24, metadata: 20 }]
    );
    // A zero descriptor kernarg_size means "unspecified".
    k.descriptor.kernarg_size = U32::new(0);
    assert!(codes(&k, Target::Gfx1100).is_empty());
    let mut k = add_kernel();
    k.descriptor.group_segment_fixed_size = U32::new(64);
    assert_eq!(codes(&k, Target::Gfx1100), ["group_segment_mismatch"]);
    let mut k = add_kernel();
    k.metadata.wavefront_size = 64;
    assert_eq!(
        verdict(&k, &gfx(Target::Gfx1100)).reasons,
        [Reason::WavefrontSizeMismatch { metadata: 64, wave32: true }]
    );
    assert_eq!(codes(&with_kcp(0x0008), Target::Gfx1100), ["wavefront_size_mismatch"]);
    let mut k = with_kcp(0x0008);
    k.metadata.wavefront_size = 64;
    assert!(codes(&k, Target::Gfx1030).is_empty());
    let mut k = add_kernel();
    k.metadata.workgroup_processor_mode = Some(false);
    assert_eq!(verdict(&k, &gfx(Target::Gfx1100)).reasons, [Reason::WgpModeMismatch { metadata: false, rsrc1: true }]);
}

#[test]
fn reserved_bytes_and_bits() {
    let mut k = add_kernel();
    k.descriptor.reserved1[3] = 1;
    k.descriptor.compute_pgm_rsrc1 = U32::new(0x60af_0080 | 1 << 20);
    let v = verdict(&k, &gfx(Target::Gfx1100));
    assert_eq!(codes(&k, Target::Gfx1100), ["descriptor_reserved_bytes", "descriptor_reserved_bits"]);
    assert_eq!(v.reasons[0].to_string(), "descriptor reserved1 (bytes 24..44) is not zero");
    assert_eq!(v.reasons[1].to_string(), "descriptor COMPUTE_PGM_RSRC1 sets PRIV bits 0x100000, which must be zero");
    // A gfx11 RSRC1 (DX10_CLAMP [21] and IEEE_MODE [23] set) read as gfx12 sets WG_RR_EN and
    // DISABLE_PERF, which a gfx12 descriptor must leave zero.
    assert_eq!(
        verdict(&add_kernel(), &gfx(Target::Gfx1200)).reasons,
        [
            Reason::ReservedBits(ReservedBits { word: "COMPUTE_PGM_RSRC1", field: "WG_RR_EN", bits: 1 << 21 }),
            Reason::ReservedBits(ReservedBits { word: "COMPUTE_PGM_RSRC1", field: "DISABLE_PERF", bits: 1 << 23 }),
        ]
    );
    assert!(codes(&add_kernel_for(Target::Gfx1200), Target::Gfx1200).is_empty());
}

#[test]
fn argument_kinds() {
    let mut k = add_kernel();
    k.metadata.kernarg_segment_size = 96;
    k.metadata.args.push(arg(24, 8, "hidden_global_offset_x"));
    k.metadata.args.push(arg(72, 8, "hidden_printf_buffer"));
    k.metadata.args.push(arg(80, 8, "hidden_tool_correlation_id"));
    k.metadata.args.push(arg(88, 4, "hidden_dynamic_lds_size"));
    k.descriptor.kernarg_size = U32::new(96);
    let v = verdict(&k, &gfx(Target::Gfx1100));
    assert_eq!(
        v.reasons,
        [
            Reason::UnsupportedHiddenArg { index: 4, kind: ValueKind::HiddenPrintfBuffer },
            Reason::UnknownValueKind { index: 5, kind: "hidden_tool_correlation_id".into() },
        ]
    );
    assert_eq!(
        v.reasons[0].to_string(),
        "argument 4 is hidden_printf_buffer, a runtime service pointer a retained replay cannot provide"
    );
    for kind in [
        "hidden_hostcall_buffer",
        "hidden_heap_v1",
        "hidden_multigrid_sync_arg",
        "hidden_default_queue",
        "hidden_completion_action",
        "hidden_queue_ptr",
    ] {
        let mut k = add_kernel();
        k.metadata.kernarg_segment_size = 32;
        k.descriptor.kernarg_size = U32::new(32);
        k.metadata.args.push(arg(24, 8, kind));
        assert_eq!(codes(&k, Target::Gfx1100), ["unsupported_hidden_arg"], "{kind}");
    }
}

#[test]
fn layout_kind_and_target() {
    let mut k = add_kernel();
    k.metadata.args[2].offset = 4;
    assert_eq!(codes(&k, Target::Gfx1100), ["kernarg_layout"]);
    let mut k = add_kernel();
    k.metadata.kind = Some("init".into());
    assert_eq!(codes(&k, Target::Gfx1100), ["kernel_kind"]);
    k.metadata.kind = Some("normal".into());
    assert!(codes(&k, Target::Gfx1100).is_empty());
    let v = verdict(&add_kernel(), &TargetId::from_e_flags(0x046));
    assert_eq!(v.reasons, [Reason::UnsupportedTarget { name: "gfx1101", mach: 0x46 }]);
    assert_eq!(v.reasons[0].to_string(), "target gfx1101 (EF_AMDGPU_MACH 0x46) is not a supported target");
    let v = verdict(&add_kernel(), &TargetId::from_e_flags(0x041 | 0x1000));
    assert_eq!(v.reasons, [Reason::UnknownTargetFlags { flags: 0x1000 }]);
}

#[test]
fn codes_are_distinct() {
    let reasons = [
        Reason::UnsupportedTarget { name: "", mach: 0 },
        Reason::UnknownTargetFlags { flags: 0 },
        Reason::PrivateSegment { descriptor_bytes: 0, metadata_bytes: 0, rsrc2_enable: false },
        Reason::DynamicStack { descriptor: false, metadata: false },
        Reason::UserSgpr(UserSgpr::PrivateSegmentBuffer),
        Reason::UserSgpr(UserSgpr::DispatchPtr),
        Reason::UserSgpr(UserSgpr::QueuePtr),
        Reason::UserSgpr(UserSgpr::KernargSegmentPtr),
        Reason::UserSgpr(UserSgpr::DispatchId),
        Reason::UserSgpr(UserSgpr::FlatScratchInit),
        Reason::UserSgpr(UserSgpr::PreloadedKernargs),
        Reason::UserSgpr(UserSgpr::PrivateSegmentSize),
        Reason::KernargPreload { length: 0, offset: 0 },
        Reason::UserSgprOverflow { total: 0 },
        Reason::UserSgprCount { rsrc2: 0, layout: 0 },
        Reason::KernargSizeMismatch { descriptor: 0, metadata: 0 },
        Reason::GroupSegmentMismatch { descriptor: 0, metadata: 0 },
        Reason::WavefrontSizeMismatch { metadata: 0, wave32: false },
        Reason::WgpModeMismatch { metadata: false, rsrc1: false },
        Reason::ReservedBytes(crate::descriptor::ReservedBytes { field: "", offset: 0, size: 0 }),
        Reason::ReservedBits(crate::descriptor::ReservedBits { word: "", field: "", bits: 0 }),
        Reason::UnknownValueKind { index: 0, kind: String::new() },
        Reason::UnsupportedHiddenArg { index: 0, kind: ValueKind::HiddenNone },
        Reason::KernargPtrMissing { segment_size: 0, args: 0 },
        Reason::KernargLayout(LayoutError::SegmentAlign { align: 0 }),
        Reason::KernelKind { kind: String::new() },
    ];
    let mut codes: Vec<&str> = reasons.iter().map(Reason::code).collect();
    let n = codes.len();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), n);
    assert!(reasons.iter().all(|r| !r.to_string().is_empty()));
}
