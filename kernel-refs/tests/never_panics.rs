//! Random kernarg bytes and launch geometries never panic a CPU reference: each returns `Ok` or a
//! typed error. Where the effects resolve, every access a reference attempted (faulting ones
//! included) lies inside them.

mod common;

use common::{Recorder, check_within, segment_len};
use kernel_refs::effects;
use kernel_refs::launch::Launch;
use kernel_refs::memory::HostMemory;
use kernel_refs::registry::{KernelDef, kernel_defs};
use kernels::signature::ArgKind;
use proptest::prelude::*;

/// Mapped allocations: `(base, bytes)`.
const MAPPED: [(u64, u64); 3] = [(0x1_0000, 64 * 1024), (0x4_0000, 64 * 1024), (0x8_0000, 4096)];

/// Pointers the patched cases choose from: mostly allocation starts, then addresses near
/// allocation ends, null, unmapped and the top of the address space.
const POINTERS: [u64; 12] = [
    0x1_0000,
    0x4_0000,
    0x1_0000,
    0x4_0000,
    0x1_0000,
    0x4_0000,
    0x8_0000,
    0x8_0000 + 4000,
    0x4_0000 + 65532,
    0,
    0x7_0000,
    u64::MAX - 3,
];

const ROUND_GRID: u16 = 1 << 14;
const SET_GROUP_SIZE: u16 = 1 << 15;

fn kernels() -> Vec<KernelDef> {
    kernel_defs().collect()
}

#[derive(Clone, Debug)]
struct Case {
    kernel: usize,
    kernarg: Vec<u8>,
    grid_size: [u32; 3],
    workgroup_size: [u16; 3],
    dynamic_lds_bytes: u32,
    /// Bit i < 14 set: explicit argument i is replaced by a plausible value (a pointer from
    /// [`POINTERS`], a small count); [`ROUND_GRID`]: the grid is rounded down to whole
    /// work-groups; [`SET_GROUP_SIZE`]: `hidden_group_size_x` is set to the dispatch's.
    patch_mask: u16,
    patch_seed: u64,
}

fn mostly_one_u32() -> impl Strategy<Value = u32> {
    prop_oneof![30 => Just(1u32), 1 => any::<u32>()]
}

fn mostly_one_u16() -> impl Strategy<Value = u16> {
    prop_oneof![30 => Just(1u16), 1 => any::<u16>()]
}

fn case() -> impl Strategy<Value = Case> {
    let grid_x = prop_oneof![3 => 1..5000u32, 1 => any::<u32>()];
    let wg_x = prop_oneof![
        2 => Just(256u16),
        3 => prop::sample::select(vec![1u16, 2, 3, 32, 64, 96, 128, 1024]),
        1 => any::<u16>(),
    ];
    let lds = prop_oneof![Just(65536u32), any::<u32>()];
    (
        0..kernels().len(),
        prop::collection::vec(any::<u8>(), 0..320),
        (grid_x, mostly_one_u32(), mostly_one_u32()),
        (wg_x, mostly_one_u16(), mostly_one_u16()),
        lds,
        prop_oneof![Just(0xffffu16), any::<u16>()],
        any::<u64>(),
    )
        .prop_map(|(kernel, kernarg, (gx, gy, gz), (wx, wy, wz), dynamic_lds_bytes, patch_mask, patch_seed)| {
            Case {
                kernel,
                kernarg,
                grid_size: [gx, gy, gz],
                workgroup_size: [wx, wy, wz],
                dynamic_lds_bytes,
                patch_mask,
                patch_seed,
            }
        })
}

/// Applies the case's patches to its kernarg bytes.
fn patched_kernarg(kernel: &KernelDef, case: &Case) -> Vec<u8> {
    let sig = kernel.signature;
    let mut kernarg = case.kernarg.clone();
    let mut seed = case.patch_seed;
    if case.patch_mask & SET_GROUP_SIZE != 0 {
        kernarg.resize(kernarg.len().max(segment_len(sig)), 0);
        if let Some(offset) = sig.hidden_group_size_x {
            kernarg[offset..offset + 2].copy_from_slice(&case.workgroup_size[0].to_le_bytes());
        }
    }
    assert!(sig.explicit_args.len() <= 14, "{}: widen the patch mask", sig.name);
    for (i, arg) in sig.explicit_args.iter().enumerate() {
        if case.patch_mask & (1 << i) == 0 || arg.offset + arg.size > kernarg.len() {
            continue;
        }
        let value: Vec<u8> = match arg.kind {
            ArgKind::GlobalBuffer => POINTERS[usize::try_from(seed).unwrap() % POINTERS.len()].to_le_bytes().to_vec(),
            ArgKind::U32 => {
                let small = if seed.is_multiple_of(3) { seed % 20 } else { seed % 3000 };
                u32::try_from(small).unwrap().to_le_bytes().to_vec()
            }
            ArgKind::F32 => continue,
        };
        seed = seed.rotate_right(7) ^ 0x9e37_79b9_7f4a_7c15;
        kernarg[arg.offset..arg.offset + arg.size].copy_from_slice(&value);
    }
    kernarg
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn references_never_panic_and_stay_inside_their_effects(case in case()) {
        let kernel = kernels()[case.kernel];
        let kernarg = patched_kernarg(&kernel, &case);
        let mut grid_size = case.grid_size;
        let workgroup_x = u32::from(case.workgroup_size[0]);
        if case.patch_mask & ROUND_GRID != 0 && workgroup_x != 0 {
            grid_size[0] = (grid_size[0] - grid_size[0] % workgroup_x).max(workgroup_x);
        }
        let launch = Launch {
            kernarg: &kernarg,
            grid_size,
            workgroup_size: case.workgroup_size,
            dynamic_lds_bytes: case.dynamic_lds_bytes,
        };
        let mut memory = HostMemory::new();
        for (base, bytes) in MAPPED {
            memory.allocate(base, bytes).unwrap();
        }
        let mut recorder = Recorder::new(&mut memory);
        // Ok or a typed error; a panic fails the property.
        let _ = (kernel.cpu)(&launch, &mut recorder);
        if let Ok(resolved) = effects::resolve(kernel.effects, &launch)
            && let Err(e) = check_within(&resolved, &recorder)
        {
            prop_assert!(false, "{}: {}", kernel.signature.name, e);
        }
    }
}
