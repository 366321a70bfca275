use super::*;
use crate::metadata::ArgMetadata;
use alloc::string::ToString;

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

pub(crate) fn kernel(segment_size: u32, args: Vec<ArgMetadata>) -> KernelMetadata {
    KernelMetadata {
        name: "k".to_string(),
        symbol: "k.kd".to_string(),
        kernarg_segment_size: segment_size,
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

/// The `dims` kernel of `llvm-readelf-19 --notes tests/data/kernels-gfx1100.co`.
fn dims_kernel() -> KernelMetadata {
    kernel(
        264,
        vec![
            arg(0, 8, "global_buffer"),
            arg(8, 4, "hidden_block_count_x"),
            arg(12, 4, "hidden_block_count_y"),
            arg(16, 4, "hidden_block_count_z"),
            arg(20, 2, "hidden_group_size_x"),
            arg(22, 2, "hidden_group_size_y"),
            arg(24, 2, "hidden_group_size_z"),
            arg(26, 2, "hidden_remainder_x"),
            arg(28, 2, "hidden_remainder_y"),
            arg(30, 2, "hidden_remainder_z"),
            arg(48, 8, "hidden_global_offset_x"),
            arg(56, 8, "hidden_global_offset_y"),
            arg(64, 8, "hidden_global_offset_z"),
            arg(72, 2, "hidden_grid_dims"),
        ],
    )
}

fn u32_at(blob: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(blob[at..at + 4].try_into().unwrap())
}

fn u16_at(blob: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(blob[at..at + 2].try_into().unwrap())
}

#[test]
fn dims_blob_1d_with_partial_group() {
    let layout = KernargLayout::new(&dims_kernel()).unwrap();
    assert_eq!((layout.segment_size(), layout.segment_align()), (264, 8));
    assert_eq!(layout.explicit_args().count(), 1);
    assert_eq!(layout.offset_of(&ValueKind::HiddenGridDims), Some(72));
    let blob = layout.build(&[ArgValue::Pointer(0x7f12_3456_7800)], &DispatchGeometry::linear(1000, 64)).unwrap();
    assert_eq!(blob.len(), 264);
    assert_eq!(&blob[..8], &[0x00, 0x78, 0x56, 0x34, 0x12, 0x7f, 0x00, 0x00]);
    // 1000 work-items in groups of 64: 15 full groups (960) and a partial group of 40.
    assert_eq!((u32_at(&blob, 8), u32_at(&blob, 12), u32_at(&blob, 16)), (15, 1, 1));
    assert_eq!((u16_at(&blob, 20), u16_at(&blob, 22), u16_at(&blob, 24)), (64, 1, 1));
    assert_eq!((u16_at(&blob, 26), u16_at(&blob, 28), u16_at(&blob, 30)), (40, 0, 0));
    assert_eq!(u16_at(&blob, 72), 1);
    // Global offsets, the reserved gaps and the tail are zero.
    assert!(blob[32..72].iter().all(|&b| b == 0));
    assert!(blob[74..].iter().all(|&b| b == 0));
}

#[test]
fn three_d_blob_with_dynamic_lds() {
    let mut m = dims_kernel();
    m.args.push(arg(80, 8, "hidden_hostcall_buffer"));
    m.args.push(arg(128, 4, "hidden_dynamic_lds_size"));
    let layout = KernargLayout::new(&m).unwrap();
    let geometry =
        DispatchGeometry { grid_size: [100, 30, 7], workgroup_size: [16, 8, 2], dims: 3, dynamic_lds_bytes: 4096 };
    let blob = layout.build(&[ArgValue::U64(u64::MAX)], &geometry).unwrap();
    // 100 / 16 = 6 r 4; 30 / 8 = 3 r 6; 7 / 2 = 3 r 1.
    assert_eq!((u32_at(&blob, 8), u32_at(&blob, 12), u32_at(&blob, 16)), (6, 3, 3));
    assert_eq!((u16_at(&blob, 20), u16_at(&blob, 22), u16_at(&blob, 24)), (16, 8, 2));
    assert_eq!((u16_at(&blob, 26), u16_at(&blob, 28), u16_at(&blob, 30)), (4, 6, 1));
    assert_eq!(u16_at(&blob, 72), 3);
    assert_eq!(u32_at(&blob, 128), 4096);
    // The hostcall pointer stays zero.
    assert!(blob[80..88].iter().all(|&b| b == 0));
    // Exact multiples leave no remainder; a grid smaller than its group has no full group.
    let exact = DispatchGeometry { grid_size: [64, 16, 4], workgroup_size: [16, 8, 2], dims: 3, dynamic_lds_bytes: 0 };
    let blob = layout.build(&[ArgValue::U64(0)], &exact).unwrap();
    assert_eq!((u32_at(&blob, 8), u32_at(&blob, 12), u32_at(&blob, 16)), (4, 2, 2));
    assert_eq!((u16_at(&blob, 26), u16_at(&blob, 28), u16_at(&blob, 30)), (0, 0, 0));
    let small = layout.build(&[ArgValue::U64(0)], &DispatchGeometry::linear(5, 64)).unwrap();
    assert_eq!((u32_at(&small, 8), u16_at(&small, 26)), (0, 5));
}

#[test]
fn explicit_values_in_order_and_sized() {
    // clang-19's `by_value(char c, C2 p, int i, F2 f, float* o)`: a 2-byte struct at offset 1.
    let m = kernel(
        24,
        vec![
            arg(0, 1, "by_value"),
            arg(1, 2, "by_value"),
            arg(4, 4, "by_value"),
            arg(8, 8, "by_value"),
            arg(16, 8, "global_buffer"),
        ],
    );
    let layout = KernargLayout::new(&m).unwrap();
    let values = [
        ArgValue::I8(-2),
        ArgValue::Bytes(vec![0xaa, 0xbb]),
        ArgValue::F32(1.0),
        ArgValue::Bytes(vec![1, 2, 3, 4, 5, 6, 7, 8]),
        ArgValue::Pointer(0x1122_3344_5566_7788),
    ];
    let blob = layout.build(&values, &DispatchGeometry::linear(1, 1)).unwrap();
    assert_eq!(
        blob,
        [
            0xfe, 0xaa, 0xbb, 0x00, 0x00, 0x00, 0x80, 0x3f, 1, 2, 3, 4, 5, 6, 7, 8, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33,
            0x22, 0x11
        ]
    );
    assert_eq!(
        layout.build(&values[..4], &DispatchGeometry::linear(1, 1)),
        Err(BlobError::ArgCount { expected: 5, found: 4 })
    );
    let mut wrong = values.to_vec();
    wrong[2] = ArgValue::F64(1.0);
    assert_eq!(
        layout.build(&wrong, &DispatchGeometry::linear(1, 1)),
        Err(BlobError::ArgSize { explicit_index: 2, arg_index: 2, name: None, expected: 4, found: 8 })
    );
    let mut named = m.clone();
    named.args[4].name = Some("out".to_string());
    let mut wrong = values.to_vec();
    wrong[4] = ArgValue::U32(0);
    let err = KernargLayout::new(&named).unwrap().build(&wrong, &DispatchGeometry::linear(1, 1)).unwrap_err();
    assert_eq!(err.to_string(), "explicit argument 4 (metadata argument 4 `out`) is 8 bytes, value is 4");
}

#[test]
fn layout_errors() {
    let err = |args: Vec<ArgMetadata>, size: u32| KernargLayout::new(&kernel(size, args)).unwrap_err();
    assert_eq!(
        err(vec![arg(0, 8, "global_buffer"), arg(4, 4, "by_value")], 16),
        LayoutError::Overlap { index: 1, offset: 4, previous_end: 8 }
    );
    assert_eq!(
        err(vec![arg(8, 8, "global_buffer"), arg(0, 4, "by_value")], 16),
        LayoutError::Overlap { index: 1, offset: 0, previous_end: 16 }
    );
    assert_eq!(
        err(vec![arg(8, 8, "global_buffer")], 12),
        LayoutError::OutsideSegment { index: 0, offset: 8, size: 8, segment_size: 12 }
    );
    assert_eq!(
        err(vec![arg(u32::MAX, 2, "by_value")], 12),
        LayoutError::OutsideSegment { index: 0, offset: u32::MAX, size: 2, segment_size: 12 }
    );
    assert_eq!(
        err(vec![arg(4, 8, "global_buffer")], 16),
        LayoutError::Misaligned { index: 0, kind: ValueKind::GlobalBuffer, offset: 4, align: 8 }
    );
    assert_eq!(
        err(vec![arg(10, 4, "hidden_block_count_x")], 16),
        LayoutError::Misaligned { index: 0, kind: ValueKind::HiddenBlockCountX, offset: 10, align: 4 }
    );
    assert_eq!(
        err(vec![arg(8, 8, "hidden_block_count_x")], 16),
        LayoutError::HiddenSize { index: 0, kind: ValueKind::HiddenBlockCountX, size: 8, expected: 4 }
    );
    assert_eq!(
        err(vec![], KERNARG_SEGMENT_MAX_BYTES + 1),
        LayoutError::SegmentTooLarge { size: KERNARG_SEGMENT_MAX_BYTES + 1, limit: KERNARG_SEGMENT_MAX_BYTES }
    );
    let mut m = kernel(8, vec![]);
    m.kernarg_segment_align = 12;
    assert_eq!(KernargLayout::new(&m), Err(LayoutError::SegmentAlign { align: 12 }));
    m.kernarg_segment_align = 0;
    assert_eq!(KernargLayout::new(&m), Err(LayoutError::SegmentAlign { align: 0 }));
    // A 12-byte dynamic shared pointer would need 4-byte alignment; unknown kinds and by_value
    // none; zero-sized arguments are allowed anywhere inside.
    assert!(
        KernargLayout::new(&kernel(
            16,
            vec![arg(3, 1, "by_value"), arg(5, 3, "future_kind"), arg(8, 0, "hidden_none")]
        ))
        .is_ok()
    );
}

#[test]
fn geometry_errors() {
    let layout = KernargLayout::new(&dims_kernel()).unwrap();
    let build = |g: DispatchGeometry| layout.build(&[ArgValue::Pointer(0)], &g);
    let base = DispatchGeometry::linear(64, 64);
    assert_eq!(build(DispatchGeometry { dims: 0, ..base }), Err(BlobError::Geometry(GeometryError::Dims { dims: 0 })));
    assert_eq!(build(DispatchGeometry { dims: 4, ..base }), Err(BlobError::Geometry(GeometryError::Dims { dims: 4 })));
    assert_eq!(
        build(DispatchGeometry { workgroup_size: [0, 1, 1], ..base }),
        Err(BlobError::Geometry(GeometryError::ZeroWorkgroupSize { axis: 0 }))
    );
    assert_eq!(
        build(DispatchGeometry { grid_size: [0, 1, 1], ..base }),
        Err(BlobError::Geometry(GeometryError::ZeroGridSize { axis: 0 }))
    );
    assert_eq!(
        build(DispatchGeometry { grid_size: [64, 2, 1], ..base }),
        Err(BlobError::Geometry(GeometryError::UnusedAxis { axis: 1, dims: 1, grid: 2, workgroup: 1 }))
    );
    let two_d = DispatchGeometry { grid_size: [64, 2, 1], workgroup_size: [64, 0, 1], dims: 2, dynamic_lds_bytes: 0 };
    assert_eq!(build(two_d), Err(BlobError::Geometry(GeometryError::ZeroWorkgroupSize { axis: 1 })));
    assert_eq!(two_d.block_count(), [1, 0, 1]);
    assert_eq!(two_d.remainder(), [0, 0, 0]);
}

#[test]
fn hidden_sizes_follow_the_reference_table() {
    // reference §7 "LLVM code object V5 hidden-argument layout" sizes.
    let table: [(&str, u32); 22] = [
        ("hidden_block_count_x", 4),
        ("hidden_block_count_y", 4),
        ("hidden_block_count_z", 4),
        ("hidden_group_size_x", 2),
        ("hidden_group_size_y", 2),
        ("hidden_group_size_z", 2),
        ("hidden_remainder_x", 2),
        ("hidden_remainder_y", 2),
        ("hidden_remainder_z", 2),
        ("hidden_global_offset_x", 8),
        ("hidden_global_offset_y", 8),
        ("hidden_global_offset_z", 8),
        ("hidden_grid_dims", 2),
        ("hidden_printf_buffer", 8),
        ("hidden_hostcall_buffer", 8),
        ("hidden_multigrid_sync_arg", 8),
        ("hidden_heap_v1", 8),
        ("hidden_default_queue", 8),
        ("hidden_completion_action", 8),
        ("hidden_dynamic_lds_size", 4),
        ("hidden_private_base", 4),
        ("hidden_shared_base", 4),
    ];
    for (kind, size) in table {
        assert_eq!(hidden_size(&ValueKind::parse(kind)), Some(size), "{kind}");
    }
    assert_eq!(hidden_size(&ValueKind::HiddenQueuePtr), Some(8));
    assert_eq!(hidden_size(&ValueKind::HiddenNone), None);
    assert_eq!(hidden_size(&ValueKind::ByValue), None);
}
