//! Shared by the integration tests: real kernels of the `kernels` crate with their kernarg
//! layouts, the three-launch golden tape recorded through the `Recorder`, and a strategy for
//! random valid tapes.
//!
//! Every value of the golden tape is a literal here (digests come from `objects/MANIFEST` and are
//! checked against the embedded bytes), so the golden tests can compute what they expect
//! independently of the code under test.
#![allow(dead_code, unreachable_pub)]

use kernarg_abi::KernargLayout;
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use proptest::prelude::*;
use sha2::{Digest, Sha256};
use tape_core::binding::{Binding, BindingKind};
use tape_core::recorder::Recorder;
use tape_core::serial::TapeData;
use tape_core::tape::{ExternalCount, Tape};
use tape_core::{Access, AllocationId, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};

/// The decode position the golden tape is recorded at.
pub const POSITION: u32 = 17;
/// `objects/MANIFEST` digests of the golden tape's code objects.
pub const FILL_SHA256: &str = "e4e61f22546d83ab28bb7f8a38497a9caf1c47aad8299cd6b2c26538b71e9d4a";
/// `gfx1100/axpy.co`.
pub const AXPY_SHA256: &str = "7dfae0dea0409244c15c7868d36016c8b02179a0de1b7e3efe8b99d4828d8a81";
/// `gfx1100/block_sum.co`.
pub const BLOCK_SUM_SHA256: &str = "b4e363e6f84092f8f4d721161122430fe4a67ba6fe65e44a0db2523ccee0a445";

/// Allocation ids and base addresses of the golden tape: `x` (filled, read by axpy), `y`
/// (axpy's output, block_sum's input) and `sums` (block_sum's output, used from byte 64).
pub const ALLOC_X: AllocationId = AllocationId(7);
/// `y`.
pub const ALLOC_Y: AllocationId = AllocationId(3);
/// `sums`.
pub const ALLOC_SUMS: AllocationId = AllocationId(11);
/// Base address of `x`.
pub const ADDR_X: u64 = 0x7f00_0010_0000;
/// Base address of `y`.
pub const ADDR_Y: u64 = 0x7f00_0020_0000;
/// Base address of `sums`.
pub const ADDR_SUMS: u64 = 0x7f00_0030_0000;
/// Elements of `x` and `y`.
pub const N: u32 = 1024;

pub fn hex_decode(hex: &str) -> Vec<u8> {
    assert_eq!(hex.len() % 2, 0);
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

pub fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn digest(hex: &str) -> [u8; 32] {
    hex_decode(hex).try_into().unwrap()
}

/// A kernel of an embedded code object, with its layout.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub artifact: ArtifactId,
    pub layout: KernargLayout,
    pub wave_size: u8,
    pub static_lds_bytes: u32,
}

/// The kernel `symbol` of `path` below `objects/`, its digest checked against `sha256`.
pub fn kernel(path: &str, sha256: &str, symbol: &str) -> Kernel {
    let artifact = kernels::artifact(path).unwrap_or_else(|| panic!("no artifact {path}"));
    assert_eq!(artifact.sha256, sha256, "{path}: manifest digest");
    assert_eq!(hex_encode(&Sha256::digest(artifact.bytes)), sha256, "{path}: embedded bytes");
    let code_object = kernarg_abi::read_any(artifact.bytes, None).unwrap();
    let k = code_object.kernel(symbol).unwrap_or_else(|| panic!("{path}: no kernel {symbol}"));
    Kernel {
        artifact: ArtifactId { code_object_sha256: digest(sha256), symbol: symbol.to_string() },
        layout: k.kernarg_layout().unwrap(),
        wave_size: u8::try_from(k.metadata.wavefront_size).unwrap(),
        static_lds_bytes: k.metadata.group_segment_fixed_size,
    }
}

pub fn fill() -> Kernel {
    kernel("gfx1100/fill.co", FILL_SHA256, "fill")
}

pub fn axpy() -> Kernel {
    kernel("gfx1100/axpy.co", AXPY_SHA256, "axpy")
}

pub fn block_sum() -> Kernel {
    kernel("gfx1100/block_sum.co", BLOCK_SUM_SHA256, "block_sum")
}

pub fn pointer(kernarg_offset: u32, allocation: AllocationId, offset_bytes: u64) -> PointerArg {
    PointerArg { kernarg_offset, allocation, offset_bytes }
}

pub fn effect(allocation: AllocationId, offset_bytes: u64, len_bytes: u64, access: Access) -> Effect {
    Effect { allocation, offset_bytes, len_bytes, access }
}

/// A 1-D launch of `kernel` with `args`, `grid` work-items in groups of 64.
pub fn launch(
    kernel: &Kernel,
    args: &[ArgValue],
    grid: u32,
    dynamic_lds_bytes: u32,
    pointers: Vec<PointerArg>,
    effects: Effects,
) -> LaunchRecord {
    let geometry = DispatchGeometry { grid_size: [grid, 1, 1], workgroup_size: [64, 1, 1], dims: 1, dynamic_lds_bytes };
    LaunchRecord {
        artifact: kernel.artifact.clone(),
        kernarg: kernel.layout.build(args, &geometry).unwrap(),
        geometry: Geometry { grid_work_items: [grid, 1, 1], workgroup_work_items: [64, 1, 1] },
        lds: Lds { static_bytes: kernel.static_lds_bytes, dynamic_bytes: dynamic_lds_bytes },
        wave_size: kernel.wave_size,
        pointers,
        effects,
    }
}

/// `fill(x, 1.5, N)`.
pub fn fill_launch(k: &Kernel) -> LaunchRecord {
    let args = [ArgValue::Pointer(ADDR_X), ArgValue::F32(1.5), ArgValue::U32(N)];
    let effects = Effects::Known(vec![effect(ALLOC_X, 0, 4 * u64::from(N), Access::Write)]);
    launch(k, &args, N, 0, vec![pointer(0, ALLOC_X, 0)], effects)
}

/// `axpy(y, x, 2.0, N)`.
pub fn axpy_launch(k: &Kernel) -> LaunchRecord {
    let args = [ArgValue::Pointer(ADDR_Y), ArgValue::Pointer(ADDR_X), ArgValue::F32(2.0), ArgValue::U32(N)];
    let effects = Effects::Known(vec![
        effect(ALLOC_Y, 0, 4 * u64::from(N), Access::ReadWrite),
        effect(ALLOC_X, 0, 4 * u64::from(N), Access::Read),
    ]);
    launch(k, &args, N, 0, vec![pointer(0, ALLOC_Y, 0), pointer(8, ALLOC_X, 0)], effects)
}

/// `block_sum(sums + 64, y, n)` over `n` elements, one sum per 64-wide work-group, 256 bytes of
/// dynamic LDS.
pub fn block_sum_launch(k: &Kernel, n: u32) -> LaunchRecord {
    let args = [ArgValue::Pointer(ADDR_SUMS + 64), ArgValue::Pointer(ADDR_Y), ArgValue::U32(n)];
    let groups = n.div_ceil(64);
    let effects = Effects::Known(vec![
        effect(ALLOC_SUMS, 64, 4 * u64::from(groups), Access::Write),
        effect(ALLOC_Y, 0, 4 * u64::from(n), Access::Read),
    ]);
    launch(k, &args, groups * 64, 256, vec![pointer(0, ALLOC_SUMS, 64), pointer(8, ALLOC_Y, 0)], effects)
}

/// The golden tape's bindings: block_sum's `n` (kernarg offset 16) and its grid follow the
/// position with `n = position + 1007`.
pub fn golden_bindings() -> Vec<Binding> {
    vec![
        Binding { name: "block_sum.n".into(), launch: 2, kind: BindingKind::KernargU32 { offset: 16, addend: 1007 } },
        Binding {
            name: "block_sum.grid".into(),
            launch: 2,
            kind: BindingKind::GridAxis { axis: 0, addend: 1007, divisor: 64, max_workgroups: 64 },
        },
    ]
}

/// The golden tape at `position` (block_sum over `position + 1007` elements), recorded through a
/// `Recorder`, without bindings.
pub fn recorded_at(position: u32) -> Tape {
    let (f, a, b) = (fill(), axpy(), block_sum());
    let mut recorder = Recorder::new(8);
    recorder.begin(position).unwrap();
    recorder.record_external("token_embedding").unwrap();
    recorder.record(fill_launch(&f), &f.layout).unwrap();
    recorder.record(axpy_launch(&a), &a.layout).unwrap();
    recorder.record(block_sum_launch(&b, position + 1007), &b.layout).unwrap();
    recorder.finish().unwrap()
}

/// The three-launch golden tape: position 17, fill → axpy → block_sum, one external launch, two
/// bindings.
pub fn golden_tape() -> Tape {
    recorded_at(POSITION).with_bindings(golden_bindings()).unwrap()
}

/// Applies `f` to every allocation id of `data`.
pub fn map_allocations(data: &mut TapeData, f: impl Fn(AllocationId) -> AllocationId) {
    for launch in &mut data.launches {
        for p in &mut launch.pointers {
            p.allocation = f(p.allocation);
        }
        if let Effects::Known(effects) = &mut launch.effects {
            for e in effects {
                e.allocation = f(e.allocation);
            }
        }
    }
}

/// Rewrites the address bytes of every pointer slot with `f(old address)`.
pub fn map_addresses(data: &mut TapeData, f: impl Fn(u64) -> u64) {
    for launch in &mut data.launches {
        for p in &launch.pointers {
            let at = usize::try_from(p.kernarg_offset).unwrap();
            let old = u64::from_le_bytes(launch.kernarg[at..at + 8].try_into().unwrap());
            let new = f(old);
            assert_ne!(new, 0);
            launch.kernarg[at..at + 8].copy_from_slice(&new.to_le_bytes());
        }
    }
}

// ---- random valid tapes ----

/// One random launch plus what a binding may use: a free kernarg word and whether the grid on x
/// is whole.
fn arb_launch() -> impl Strategy<Value = (LaunchRecord, Option<u32>, Option<(u32, u32)>)> {
    let shape = (
        any::<[u8; 32]>(),
        "[a-z_][a-z0-9_]{0,15}",
        [1u32..=4096, 1u32..=4, 1u32..=4],
        (1u16..=64, 1u16..=4, 1u16..=4),
        (0u32..=32768, 0u32..=32768, prop_oneof![Just(32u8), Just(64u8)]),
    );
    let blob = (0usize..6, 0usize..8).prop_flat_map(|(slots, tail)| {
        (
            proptest::collection::vec(any::<u8>(), slots * 8 + tail),
            proptest::collection::vec(any::<bool>(), slots),
            proptest::collection::vec((0u32..5, any::<u32>(), 1u64..u64::MAX), slots),
        )
    });
    let effects = proptest::option::of(proptest::collection::vec(
        (any::<prop::sample::Index>(), any::<u32>(), 1u32..=u32::MAX, 0u8..3),
        0..4,
    ));
    let grid_binding = proptest::option::of((1u32..=64, 1u32..=128));
    (shape, blob, effects, grid_binding).prop_map(
        |((sha, symbol, grid, wg, (lds_s, lds_d, wave)), (mut kernarg, is_pointer, ptrs), effects, grid_binding)| {
            let mut pointers = Vec::new();
            let mut free_word = None;
            for (slot, (&p, &(alloc, offset, addr))) in is_pointer.iter().zip(&ptrs).enumerate() {
                let at = slot * 8;
                if p {
                    kernarg[at..at + 8].copy_from_slice(&addr.to_le_bytes());
                    pointers.push(pointer(u32::try_from(at).unwrap(), AllocationId(alloc), u64::from(offset)));
                } else {
                    free_word = Some(u32::try_from(at + 2).unwrap());
                }
            }
            let effects = match effects {
                None => Effects::Unknown,
                Some(_) if pointers.is_empty() => Effects::Known(vec![]),
                Some(list) => Effects::Known(
                    list.into_iter()
                        .map(|(pick, offset, len, access)| {
                            let access = [Access::Read, Access::Write, Access::ReadWrite][usize::from(access)];
                            effect(pick.get(&pointers).allocation, u64::from(offset), u64::from(len), access)
                        })
                        .collect(),
                ),
            };
            let mut grid = grid;
            if let Some((groups, _)) = grid_binding {
                grid[0] = groups * u32::from(wg.0);
            }
            let launch = LaunchRecord {
                artifact: ArtifactId { code_object_sha256: sha, symbol },
                kernarg,
                geometry: Geometry { grid_work_items: grid, workgroup_work_items: [wg.0, wg.1, wg.2] },
                lds: Lds { static_bytes: lds_s, dynamic_bytes: lds_d },
                wave_size: wave,
                pointers,
                effects,
            };
            (launch, free_word, grid_binding)
        },
    )
}

/// Random tapes that are valid by construction, bindings included.
pub fn arb_tape_data() -> impl Strategy<Value = TapeData> {
    let external = proptest::collection::btree_map("[a-z]{1,8}", 1u32..100, 0..4);
    (any::<u32>(), proptest::collection::vec(arb_launch(), 1..6), external, any::<bool>()).prop_map(
        |(position, launches, external, bind)| {
            let mut bindings = Vec::new();
            let mut records = Vec::new();
            for (index, (launch, free_word, grid_binding)) in launches.into_iter().enumerate() {
                let owner = u32::try_from(index).unwrap();
                if let (true, Some(offset)) = (bind, free_word) {
                    let at = usize::try_from(offset).unwrap();
                    let word = u32::from_le_bytes(launch.kernarg[at..at + 4].try_into().unwrap());
                    let addend = i64::from(word) - i64::from(position);
                    let kind = BindingKind::KernargU32 { offset, addend };
                    bindings.push(Binding { name: format!("l{index}.word"), launch: owner, kind });
                }
                if let (true, Some((groups, divisor))) = (bind, grid_binding) {
                    let addend = i64::from(groups) * i64::from(divisor) - i64::from(position);
                    let kind = BindingKind::GridAxis { axis: 0, addend, divisor, max_workgroups: groups + 3 };
                    bindings.push(Binding { name: format!("l{index}.grid"), launch: owner, kind });
                }
                records.push(launch);
            }
            let external = external.into_iter().map(|(name, count)| ExternalCount { name, count }).collect();
            TapeData { position, launches: records, external, bindings }
        },
    )
}
