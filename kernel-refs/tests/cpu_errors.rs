//! Bad kernarg bytes, bad addresses and launches a kernel does not support come back as typed
//! errors, before any store where the launch itself is at fault.

mod common;

use common::{Kernarg, SENTINEL, buffer, launch_1d, read_bits, segment_len, sentinel_buffer};
use kernel_refs::cpu::{self, KernelError};
use kernel_refs::launch::{KernargError, Launch};
use kernel_refs::memory::{FaultReason, HostMemory, MemoryFault};
use kernel_refs::registry::kernel_defs;
use kernels::signature;

const OUT: u64 = 0x10_0000;
const IN: u64 = 0x20_0000;

#[test]
fn every_reference_reports_a_short_kernarg_segment() {
    for kernel in kernel_defs() {
        let sig = kernel.signature;
        let wg = sig.max_flat_workgroup_size.min(256);
        let full = Kernarg::new(sig).group_size(wg).bytes();
        // The last byte the kernel reads: its last explicit argument or hidden_group_size_x.
        let explicit_end = sig.explicit_args.iter().map(|a| a.offset + a.size).max().unwrap();
        let read_end = sig.hidden_group_size_x.map_or(explicit_end, |h| explicit_end.max(h + 2));
        assert!(read_end <= segment_len(sig));
        for len in [0, 7, explicit_end - 1, read_end - 1] {
            let launch = Launch { dynamic_lds_bytes: 4096, ..launch_1d(&full[..len], 256, wg) };
            let result = (kernel.cpu)(&launch, &mut HostMemory::new());
            assert!(
                matches!(result, Err(KernelError::Kernarg(KernargError::OutOfRange { len: l, .. })) if l == len),
                "{} with {len} kernarg bytes: {result:?}",
                sig.name
            );
        }
    }
}

#[test]
fn an_unmapped_pointer_is_a_fault_naming_the_argument() {
    let mut memory = HostMemory::new();
    let k =
        Kernarg::new(&signature::FILL).ptr("out", 0xdead_0000).f32("value", 1.0).u32("n", 10).group_size(64).bytes();
    assert_eq!(
        cpu::fill(&launch_1d(&k, 64, 64), &mut memory),
        Err(KernelError::Memory {
            arg: "out",
            fault: MemoryFault { address: 0xdead_0000, len: 40, reason: FaultReason::Unmapped }
        })
    );
    // A null input pointer faults on the load; nothing is stored.
    sentinel_buffer(&mut memory, OUT, 10);
    let k = Kernarg::new(&signature::COPY).ptr("dst", OUT).ptr("src", 0).u32("n", 10).group_size(64).bytes();
    let err = cpu::copy(&launch_1d(&k, 64, 64), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "src", fault: MemoryFault { address: 0, .. } }), "{err}");
    assert!(read_bits(&memory, OUT, 10).iter().all(|&b| b == SENTINEL));
}

#[test]
fn a_buffer_too_short_faults_at_the_work_group_that_leaves_it() {
    // 100 elements mapped, n = 200: groups 0 and 1 (64 each) complete, group 1 ends at 128 > 100.
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 92); // 92 + 8 guard = 100 elements
    let k = Kernarg::new(&signature::FILL).ptr("out", OUT).f32("value", 2.0).u32("n", 200).group_size(64).bytes();
    let err = cpu::fill(&launch_1d(&k, 200, 64), &mut memory).unwrap_err();
    assert_eq!(
        err,
        KernelError::Memory {
            arg: "out",
            fault: MemoryFault {
                address: OUT + 4 * 64,
                len: 4 * 64,
                reason: FaultReason::OutOfBounds { base: OUT, size: 400 }
            }
        }
    );
    let bits = read_bits(&memory, OUT, 92);
    assert!(bits[..64].iter().all(|&b| b == 2.0f32.to_bits()), "the first work-group completed");
    assert!(bits[64..].iter().all(|&b| b == SENTINEL));
    // A row of matvec's matrix past the end of the mapping faults the same way.
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 4);
    buffer(&mut memory, IN, &[1.0; 8]);
    let k = Kernarg::new(&signature::MATVEC)
        .ptr("y", OUT)
        .ptr("a", IN)
        .ptr("x", IN)
        .u32("rows", 4)
        .u32("cols", 6)
        .group_size(4)
        .bytes();
    // Rows 0 and 1 fit the 16 mapped elements, row 2 (elements 12..18) runs past them.
    let err = cpu::matvec(&launch_1d(&k, 4, 4), &mut memory).unwrap_err();
    assert_eq!(
        err,
        KernelError::Memory {
            arg: "a",
            fault: MemoryFault { address: IN + 48, len: 24, reason: FaultReason::OutOfBounds { base: IN, size: 64 } }
        }
    );
    assert!(read_bits(&memory, OUT, 4).iter().all(|&b| b == SENTINEL), "the work-group stores after its loads");
}

fn fill_kernarg(wg: u16) -> Vec<u8> {
    Kernarg::new(&signature::FILL).ptr("out", OUT).f32("value", 1.0).u32("n", 4).group_size(wg).bytes()
}

#[test]
fn geometry_the_kernels_do_not_support_is_refused() {
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 4);
    let k = fill_kernarg(64);
    let base = launch_1d(&k, 64, 64);
    let refused = |launch: Launch<'_>, memory: &mut HostMemory| cpu::fill(&launch, memory).unwrap_err();
    assert_eq!(
        refused(Launch { grid_size: [0, 1, 1], ..base }, &mut memory),
        KernelError::ZeroDimension { grid_size: [0, 1, 1], workgroup_size: [64, 1, 1] }
    );
    assert_eq!(
        refused(Launch { workgroup_size: [64, 0, 1], ..base }, &mut memory),
        KernelError::ZeroDimension { grid_size: [64, 1, 1], workgroup_size: [64, 0, 1] }
    );
    assert_eq!(
        refused(Launch { grid_size: [64, 2, 1], ..base }, &mut memory),
        KernelError::NotOneDimensional { grid_size: [64, 2, 1], workgroup_size: [64, 1, 1] }
    );
    assert!(matches!(
        refused(Launch { workgroup_size: [64, 1, 2], ..base }, &mut memory),
        KernelError::NotOneDimensional { .. }
    ));
    assert_eq!(
        refused(Launch { workgroup_size: [32, 1, 1], ..base }, &mut memory),
        KernelError::GroupSizeMismatch { kernarg: 64, dispatch: 32 }
    );
    let k = fill_kernarg(2048);
    assert_eq!(
        refused(launch_1d(&k, 4096, 2048), &mut memory),
        KernelError::WorkgroupTooLarge { workgroup_size_x: 2048, limit: 1024 }
    );
    assert!(read_bits(&memory, OUT, 4).iter().all(|&b| b == SENTINEL), "refused launches store nothing");
}

fn block_sum_kernarg(wg: u16) -> Vec<u8> {
    Kernarg::new(&signature::BLOCK_SUM).ptr("out", OUT).ptr("x", IN).u32("n", 8).group_size(wg).bytes()
}

#[test]
fn block_sum_preconditions_are_checked() {
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 4);
    buffer(&mut memory, IN, &[1.0; 8]);
    let k = block_sum_kernarg(6);
    let launch = Launch { dynamic_lds_bytes: 24, ..launch_1d(&k, 12, 6) };
    assert_eq!(
        cpu::block_sum(&launch, &mut memory),
        Err(KernelError::WorkgroupSizeNotPowerOfTwo { workgroup_size_x: 6 })
    );
    let k = block_sum_kernarg(4);
    let launch = Launch { dynamic_lds_bytes: 12, ..launch_1d(&k, 8, 4) };
    assert_eq!(
        cpu::block_sum(&launch, &mut memory),
        Err(KernelError::DynamicLdsTooSmall { required: 16, provided: 12 })
    );
    let launch = Launch { dynamic_lds_bytes: 16, ..launch_1d(&k, 10, 4) };
    assert_eq!(
        cpu::block_sum(&launch, &mut memory),
        Err(KernelError::PartialWorkgroup { grid_size_x: 10, workgroup_size_x: 4 })
    );
    assert!(read_bits(&memory, OUT, 4).iter().all(|&b| b == SENTINEL));
    let launch = Launch { dynamic_lds_bytes: 16, ..launch_1d(&k, 8, 4) };
    assert_eq!(cpu::block_sum(&launch, &mut memory), Ok(()));
    assert_eq!(&read_bits(&memory, OUT, 4)[..3], &[4.0f32.to_bits(), 4.0f32.to_bits(), SENTINEL]);
}

fn rmsnorm_kernarg(rows: u32, cols: u32) -> Vec<u8> {
    Kernarg::new(&signature::RMSNORM)
        .ptr("out", OUT)
        .ptr("x", IN)
        .ptr("weight", IN)
        .u32("rows", rows)
        .u32("cols", cols)
        .f32("eps", 1e-5)
        .bytes()
}

#[test]
fn rmsnorm_preconditions_are_checked() {
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 8);
    buffer(&mut memory, IN, &[1.0; 8]);
    let k = rmsnorm_kernarg(2, 4);
    assert_eq!(
        cpu::rmsnorm(&launch_1d(&k, 256, 128), &mut memory),
        Err(KernelError::WorkgroupSizeRequired { workgroup_size_x: 128, required: 256 })
    );
    assert_eq!(
        cpu::rmsnorm(&launch_1d(&k, 512, 512), &mut memory),
        Err(KernelError::WorkgroupTooLarge { workgroup_size_x: 512, limit: 256 })
    );
    // The second (partial) group has row 1 < rows to normalize.
    assert_eq!(
        cpu::rmsnorm(&launch_1d(&k, 300, 256), &mut memory),
        Err(KernelError::PartialWorkgroup { grid_size_x: 300, workgroup_size_x: 256 })
    );
    let k = rmsnorm_kernarg(1, u32::MAX);
    assert_eq!(
        cpu::rmsnorm(&launch_1d(&k, 256, 256), &mut memory),
        Err(KernelError::ColumnLoopWraps { cols: u32::MAX, limit: u32::MAX - 255 })
    );
    assert!(read_bits(&memory, OUT, 8).iter().all(|&b| b == SENTINEL));
    // A partial group past the last row returns at once, as the kernel does.
    let k = rmsnorm_kernarg(1, 4);
    assert_eq!(cpu::rmsnorm(&launch_1d(&k, 300, 256), &mut memory), Ok(()));
    // No columns: the kernel touches no memory, so even unmapped pointers are fine.
    let k = Kernarg::new(&signature::RMSNORM)
        .ptr("out", 8)
        .ptr("x", 8)
        .ptr("weight", 8)
        .u32("rows", 9)
        .u32("cols", 0)
        .bytes();
    assert_eq!(cpu::rmsnorm(&launch_1d(&k, 9 * 256, 256), &mut HostMemory::new()), Ok(()));
}

fn quant_kernarg(rows: u32, cols: u32) -> Vec<u8> {
    Kernarg::new(&signature::MATVEC_Q4_1)
        .ptr("y", OUT)
        .ptr("w", IN)
        .ptr("x", IN)
        .u32("rows", rows)
        .u32("cols", cols)
        .bytes()
}

#[test]
fn quantised_launch_preconditions_are_typed_errors_before_any_store() {
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 4);
    buffer(&mut memory, IN, &[1.0; 64]);
    let k = quant_kernarg(4, 100);
    for cpu in [cpu::matvec_q4_1, cpu::matvec_q8_0] {
        assert_eq!(
            cpu(&launch_1d(&k, 128, 32), &mut memory),
            Err(KernelError::ColsNotBlockMultiple { cols: 100, block: 32 })
        );
        assert_eq!(
            cpu(&launch_1d(&quant_kernarg(4, 64), 256, 64), &mut memory),
            Err(KernelError::WorkgroupTooLarge { workgroup_size_x: 64, limit: 32 })
        );
        assert_eq!(
            cpu(&launch_1d(&quant_kernarg(4, 64), 64, 16), &mut memory),
            Err(KernelError::WorkgroupSizeRequired { workgroup_size_x: 16, required: 32 })
        );
        assert_eq!(
            cpu(&launch_1d(&quant_kernarg(4, 64), 100, 32), &mut memory),
            Err(KernelError::PartialWorkgroup { grid_size_x: 100, workgroup_size_x: 32 })
        );
    }
    // A Q4_1 row of two blocks is 40 bytes and 288 bytes are mapped: 8 rows (320 bytes) fault
    // on w, naming it, before any row is stored.
    let err = cpu::matvec_q4_1(&launch_1d(&quant_kernarg(8, 64), 8 * 32, 32), &mut memory).unwrap_err();
    assert!(matches!(err, KernelError::Memory { arg: "w", .. }), "{err}");
    assert!(read_bits(&memory, OUT, 4).iter().all(|&b| b == SENTINEL), "nothing stored");

    let k = Kernarg::new(&signature::GET_ROW_Q8_0)
        .ptr("out", OUT)
        .ptr("table", IN)
        .ptr("token", IN)
        .u32("cols", 33)
        .u32("rows", 1)
        .group_size(64)
        .bytes();
    assert_eq!(
        cpu::get_row_q8_0(&launch_1d(&k, 64, 64), &mut memory),
        Err(KernelError::ColsNotBlockMultiple { cols: 33, block: 32 })
    );
}

fn rope_kernarg(heads: u32, head_dim: u32) -> Vec<u8> {
    Kernarg::new(&signature::ROPE)
        .ptr("x", OUT)
        .ptr("table", IN)
        .u32("pos", 0)
        .u32("heads", heads)
        .u32("head_dim", head_dim)
        .group_size(64)
        .bytes()
}

#[test]
fn rope_and_attention_preconditions_are_typed_errors() {
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, OUT, 64);
    buffer(&mut memory, IN, &[1.0; 64]);
    assert_eq!(
        cpu::rope(&launch_1d(&rope_kernarg(2, 7), 64, 64), &mut memory),
        Err(KernelError::OddHeadDim { head_dim: 7 })
    );
    assert_eq!(
        cpu::rope(&launch_1d(&rope_kernarg(1 << 16, 1 << 16), 64, 64), &mut memory),
        Err(KernelError::HeadElementsOverflow { heads: 1 << 16, head_dim: 1 << 16 })
    );

    let attention = |n: u32, heads: u32, kv_heads: u32, stride: u32| {
        Kernarg::new(&signature::ATTENTION)
            .ptr("out", OUT)
            .ptr("q", IN)
            .ptr("k_cache", IN)
            .ptr("v_cache", IN)
            .ptr("scores", OUT)
            .u32("n", n)
            .u32("heads", heads)
            .u32("kv_heads", kv_heads)
            .u32("head_dim", 4)
            .u32("scores_stride", stride)
            .f32("scale", 0.5)
            .bytes()
    };
    let run = |k: &[u8], memory: &mut HostMemory| cpu::attention(&launch_1d(k, 9 * 64, 64), memory);
    assert_eq!(run(&attention(2, 9, 0, 4), &mut memory), Err(KernelError::KvHeadsMismatch { heads: 9, kv_heads: 0 }));
    assert_eq!(run(&attention(2, 9, 2, 4), &mut memory), Err(KernelError::KvHeadsMismatch { heads: 9, kv_heads: 2 }));
    assert_eq!(run(&attention(0, 9, 3, 4), &mut memory), Err(KernelError::NoPositions));
    assert_eq!(
        run(&attention(5, 9, 3, 4), &mut memory),
        Err(KernelError::ScoresStrideTooSmall { n: 5, scores_stride: 4 })
    );
    assert_eq!(
        run(&attention(u32::MAX, 9, 3, u32::MAX), &mut memory),
        Err(KernelError::StridedLoopWraps { arg: "n", count: u32::MAX, limit: u32::MAX - 63 })
    );
    assert_eq!(
        cpu::attention(&launch_1d(&attention(2, 9, 3, 4), 9 * 32, 32), &mut memory),
        Err(KernelError::WorkgroupSizeRequired { workgroup_size_x: 32, required: 64 })
    );
    // With no head to handle (heads = 0) the shape is not checked and nothing is touched.
    assert_eq!(run(&attention(0, 0, 0, 0), &mut memory), Ok(()));
    assert!(read_bits(&memory, OUT, 64).iter().all(|&b| b == SENTINEL), "refused launches store nothing");
}
