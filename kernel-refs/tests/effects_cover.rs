//! Declared effects contain every byte the CPU references touch, with the right access: every
//! reference runs on [`HostMemory`] behind a recording [`DeviceMemory`], and every recorded read
//! must lie in a declared read effect, every write in a declared write effect. For these
//! well-formed launches the effects are also tight: every declared byte is touched, except for
//! the extents [`conservative`] names, which cover more than one launch touches by design.

mod common;

use common::{Kernarg, Recorder, check_within};
use kernel_refs::effects::{self, ResolvedEffect};
use kernel_refs::launch::Launch;
use kernel_refs::memory::HostMemory;
use kernel_refs::registry::{KernelDef, kernel_defs};
use kernels::signature::ArgKind;

/// Bytes mapped behind every pointer argument.
const BUFFER_BYTES: u64 = 64 * 1024;

/// One launch of one kernel: scalar `u32` arguments by name, grid, work-group, and whether all
/// pointer arguments alias one buffer.
struct Case {
    scalars: &'static [(&'static str, u32)],
    grid_size_x: u32,
    workgroup_size_x: u16,
    aliased: bool,
}

const fn case(scalars: &'static [(&'static str, u32)], grid_size_x: u32, workgroup_size_x: u16) -> Case {
    Case { scalars, grid_size_x, workgroup_size_x, aliased: false }
}

fn cases(kernel: &str) -> Vec<Case> {
    match kernel {
        "fill" | "copy" | "axpy" | "add" | "mul" | "scale" | "silu_mul" | "gelu_mul" | "sigmoid_mul" => vec![
            case(&[("n", 1000)], 1000, 256),
            case(&[("n", 1000)], 600, 64),
            case(&[("n", 5)], 1024, 1024),
            Case { aliased: true, ..case(&[("n", 500)], 500, 64) },
        ],
        "matvec" => vec![
            case(&[("rows", 300), ("cols", 20)], 300, 64),
            case(&[("rows", 300), ("cols", 20)], 100, 32),
            Case { aliased: true, ..case(&[("rows", 30), ("cols", 30)], 30, 8) },
        ],
        "block_sum" => vec![case(&[("n", 1000)], 1024, 128), case(&[("n", 10)], 2048, 256), case(&[("n", 3)], 4, 1)],
        "rmsnorm" => vec![
            case(&[("rows", 3), ("cols", 300)], 768, 256),
            case(&[("rows", 5), ("cols", 40)], 512, 256),
            case(&[("rows", 2), ("cols", 10)], 1024, 256),
            Case { aliased: true, ..case(&[("rows", 4), ("cols", 70)], 1024, 256) },
        ],
        "matvec_q4_1" | "matvec_q8_0" => vec![
            case(&[("rows", 40), ("cols", 96)], 40 * 32, 32),
            case(&[("rows", 40), ("cols", 1056)], 20 * 32, 32),
            Case { aliased: true, ..case(&[("rows", 4), ("cols", 64)], 128, 32) },
        ],
        "get_row_q8_0" => vec![
            case(&[("cols", 64), ("rows", 3)], 64, 32),
            case(&[("cols", 96), ("rows", 5)], 40, 16),
            Case { aliased: true, ..case(&[("cols", 32), ("rows", 1)], 32, 32) },
        ],
        "rope" | "rope_store" => vec![
            case(&[("pos", 3), ("heads", 4), ("head_dim", 8)], 16, 16),
            case(&[("pos", 0), ("heads", 9), ("head_dim", 64)], 200, 64),
        ],
        "kv_store" => vec![case(&[("pos", 2), ("width", 100)], 100, 64), case(&[("pos", 0), ("width", 192)], 128, 32)],
        "attention" => vec![
            case(&[("n", 20), ("heads", 6), ("kv_heads", 2), ("head_dim", 16), ("scores_stride", 20)], 6 * 64, 64),
            case(&[("n", 80), ("heads", 9), ("kv_heads", 3), ("head_dim", 64), ("scores_stride", 80)], 9 * 64, 64),
            Case {
                aliased: true,
                ..case(&[("n", 3), ("heads", 2), ("kv_heads", 1), ("head_dim", 8), ("scores_stride", 4)], 128, 64)
            },
        ],
        "matmul_q4_1" | "matmul_q8_0" => vec![
            case(&[("rows", 40), ("cols", 96), ("n", 5)], 40 * 32, 32),
            case(&[("rows", 12), ("cols", 1056), ("n", 9)], 12 * 32, 32),
            Case { aliased: true, ..case(&[("rows", 4), ("cols", 64), ("n", 3)], 128, 32) },
        ],
        "get_rows_q8_0" => vec![
            case(&[("cols", 64), ("rows", 3), ("n", 4)], 256, 64),
            case(&[("cols", 96), ("rows", 5), ("n", 3)], 200, 64),
            Case { aliased: true, ..case(&[("cols", 32), ("rows", 1), ("n", 2)], 64, 32) },
        ],
        "rope_rows" => vec![
            case(&[("pos0", 3), ("heads", 4), ("head_dim", 8), ("n", 3)], 48, 16),
            case(&[("pos0", 0), ("heads", 9), ("head_dim", 64), ("n", 2)], 600, 64),
        ],
        "attention_rows" => vec![
            case(
                &[("pos0", 5), ("n", 4), ("heads", 6), ("kv_heads", 2), ("head_dim", 16), ("scores_stride", 12)],
                4 * 6 * 64,
                64,
            ),
            case(
                &[("pos0", 0), ("n", 3), ("heads", 9), ("kv_heads", 3), ("head_dim", 64), ("scores_stride", 3)],
                3 * 9 * 64,
                64,
            ),
            Case {
                aliased: true,
                ..case(
                    &[("pos0", 1), ("n", 2), ("heads", 2), ("kv_heads", 1), ("head_dim", 8), ("scores_stride", 4)],
                    4 * 64,
                    64,
                )
            },
        ],
        // Module ggml_quants: 256 and 512 columns are whole blocks of every format.
        k if k.starts_with("matvec_") => vec![
            case(&[("rows", 12), ("cols", 256)], 12 * 32, 32),
            case(&[("rows", 12), ("cols", 1024)], 6 * 32, 32),
            Case { aliased: true, ..case(&[("rows", 2), ("cols", 256)], 64, 32) },
        ],
        k if k.starts_with("matmul_") => vec![
            case(&[("rows", 12), ("cols", 256), ("n", 5)], 12 * 32, 32),
            case(&[("rows", 6), ("cols", 512), ("n", 9)], 6 * 32, 32),
            Case { aliased: true, ..case(&[("rows", 2), ("cols", 256), ("n", 3)], 64, 32) },
        ],
        k if k.starts_with("get_rows_") => vec![
            case(&[("cols", 256), ("rows", 3), ("n", 4)], 1024, 256),
            case(&[("cols", 512), ("rows", 5), ("n", 3)], 1200, 64),
            Case { aliased: true, ..case(&[("cols", 256), ("rows", 1), ("n", 2)], 512, 256) },
        ],
        k if k.starts_with("get_row_") => vec![
            case(&[("cols", 256), ("rows", 3)], 256, 64),
            case(&[("cols", 512), ("rows", 5)], 300, 100),
            Case { aliased: true, ..case(&[("cols", 256), ("rows", 1)], 256, 256) },
        ],
        // Grids that cover every pair (a grid cut short leaves holes in the last head, which the
        // extent covers: tests/gemma.rs).
        "rope_neox" | "rope_neox_store" => vec![
            case(&[("pos", 3), ("heads", 4), ("head_dim", 8)], 16, 16),
            case(&[("pos", 0), ("heads", 9), ("head_dim", 64)], 288, 64),
        ],
        "rope_neox_rows" => vec![
            case(&[("pos0", 3), ("heads", 4), ("head_dim", 8), ("n", 3)], 48, 16),
            case(&[("pos0", 0), ("heads", 9), ("head_dim", 64), ("n", 2)], 576, 64),
        ],
        "attention_window" => vec![
            case(
                &[("first", 5), ("n", 20), ("heads", 6), ("kv_heads", 2), ("head_dim", 16), ("scores_stride", 15)],
                6 * 64,
                64,
            ),
            case(
                &[("first", 0), ("n", 80), ("heads", 9), ("kv_heads", 3), ("head_dim", 64), ("scores_stride", 80)],
                9 * 64,
                64,
            ),
            Case {
                aliased: true,
                ..case(
                    &[("first", 1), ("n", 3), ("heads", 2), ("kv_heads", 1), ("head_dim", 8), ("scores_stride", 4)],
                    128,
                    64,
                )
            },
        ],
        "attention_window_rows" => vec![
            case(
                &[
                    ("pos0", 5),
                    ("n", 4),
                    ("window", 3),
                    ("heads", 6),
                    ("kv_heads", 2),
                    ("head_dim", 16),
                    ("scores_stride", 3),
                ],
                4 * 6 * 64,
                64,
            ),
            case(
                &[
                    ("pos0", 0),
                    ("n", 3),
                    ("window", 8),
                    ("heads", 9),
                    ("kv_heads", 3),
                    ("head_dim", 64),
                    ("scores_stride", 3),
                ],
                3 * 9 * 64,
                64,
            ),
            Case {
                aliased: true,
                ..case(
                    &[
                        ("pos0", 1),
                        ("n", 2),
                        ("window", 2),
                        ("heads", 2),
                        ("kv_heads", 1),
                        ("head_dim", 8),
                        ("scores_stride", 4),
                    ],
                    4 * 64,
                    64,
                )
            },
        ],
        // Grids that cover every channel (one past the last is idle).
        "shortconv" => vec![
            case(&[("dim", 300), ("d_conv", 2)], 320, 64),
            case(&[("dim", 64), ("d_conv", 4)], 64, 32),
            Case { aliased: true, ..case(&[("dim", 40), ("d_conv", 2)], 64, 64) },
        ],
        "shortconv_rows" => vec![
            case(&[("dim", 300), ("d_conv", 2), ("n", 3)], 320, 64),
            case(&[("dim", 64), ("d_conv", 1), ("n", 5)], 64, 16),
            Case { aliased: true, ..case(&[("dim", 40), ("d_conv", 2), ("n", 2)], 64, 64) },
        ],
        // Grids that cover every channel, column, item or pair (a grid cut short touches less than
        // the extents, which do not follow it: tests/qwen35.rs).
        "ssm_conv_silu" => vec![
            case(&[("channels", 100), ("history", 3), ("n", 4)], 100, 64),
            case(&[("channels", 64), ("history", 1), ("n", 2)], 64, 32),
        ],
        "gated_delta_net" => vec![
            case(&[("v_heads", 4), ("k_heads", 2), ("head_dim", 8), ("n", 3)], 32, 32),
            case(&[("v_heads", 3), ("k_heads", 3), ("head_dim", 16), ("n", 1)], 48, 64),
        ],
        "split_halves" => vec![case(&[("half", 8), ("rows", 5)], 40, 16), case(&[("half", 3), ("rows", 7)], 21, 64)],
        "rope_partial" => vec![
            case(&[("pos0", 3), ("heads", 2), ("head_dim", 8), ("rot", 4), ("n", 3)], 12, 16),
            case(&[("pos0", 0), ("heads", 3), ("head_dim", 16), ("rot", 16), ("n", 2)], 48, 16),
        ],
        other => panic!("no effect cases for {other}: add some"),
    }
}

/// Extents declared larger than one launch touches, with the reason; their bytes need not all be
/// touched. `(kernel, argument, accesses)`.
fn conservative(kernel: &str, arg: &str, reads: bool) -> bool {
    match (kernel, arg) {
        // The row read depends on the token id, which is data: the whole table is declared.
        (k, "table") if k.starts_with("get_row") => true,
        // Extents start at the pointer: rows before `pos` of the table and of the caches are
        // declared but untouched.
        ("rope" | "rope_store" | "rope_rows", "table") | ("rope_store" | "kv_store", "cache") => true,
        // Scores are re-read only by the work-group that wrote them (the reference keeps them on
        // the host); rows are declared to scores_stride.
        ("attention", "scores") => reads,
        // Query row t touches pos0 + t + 1 floats of its scores row; rows are declared to
        // scores_stride.
        ("attention_rows", "scores") => true,
        // As rope_store's cache and the table of rope.
        ("rope_neox" | "rope_neox_store" | "rope_neox_rows", "table") | ("rope_neox_store", "cache") => true,
        // The caches are declared from their start whatever the window is (the effects do not
        // move with the position); positions before the window are not read.
        ("attention_window" | "attention_window_rows", "k_cache" | "v_cache") => true,
        // As attention's and attention_rows' scores.
        ("attention_window", "scores") => reads,
        ("attention_window_rows", "scores") => true,
        // The heads' elements past the rotated ones pass untouched; the table as rope's.
        ("rope_partial", "x" | "table") => true,
        _ => false,
    }
}

/// Marks the bytes of `effect` covered by accesses of the right kind; all must be covered.
fn assert_tight(effect: &ResolvedEffect, accesses: &[(u64, u64)], what: &str) {
    let mut touched = vec![false; usize::try_from(effect.bytes).unwrap()];
    for &(address, len) in accesses {
        for byte in address..address + len {
            if let Some(offset) = byte.checked_sub(effect.address).and_then(|o| usize::try_from(o).ok())
                && let Some(t) = touched.get_mut(offset)
            {
                *t = true;
            }
        }
    }
    let missing = touched.iter().filter(|t| !**t).count();
    assert_eq!(missing, 0, "{what}: {missing} of {} declared bytes untouched in {effect:x?}", effect.bytes);
}

fn run_case(kernel: &KernelDef, case: &Case) {
    let sig = kernel.signature;
    let mut memory = HostMemory::new();
    let mut kernarg = Kernarg::new(sig).group_size(case.workgroup_size_x);
    for (i, arg) in (1u64..).zip(sig.explicit_args) {
        kernarg = match arg.kind {
            ArgKind::GlobalBuffer => {
                let base = if case.aliased { 0x10_0000 } else { 0x10_0000 * i };
                if memory.allocation(base).is_none() {
                    memory.allocate(base, BUFFER_BYTES).unwrap();
                }
                kernarg.ptr(arg.name, base)
            }
            ArgKind::U32 => {
                let (_, value) = case.scalars.iter().find(|(n, _)| *n == arg.name).expect("scalar in case");
                kernarg.u32(arg.name, *value)
            }
            ArgKind::F32 => kernarg.f32(arg.name, 0.5),
        };
    }
    let kernarg = kernarg.bytes();
    let launch = Launch {
        kernarg: &kernarg,
        grid_size: [case.grid_size_x, 1, 1],
        workgroup_size: [case.workgroup_size_x, 1, 1],
        dynamic_lds_bytes: 4 * u32::from(case.workgroup_size_x),
    };
    let what = format!("{} {:?} grid {} wg {}", sig.name, case.scalars, case.grid_size_x, case.workgroup_size_x);
    let resolved = effects::resolve(kernel.effects, &launch).unwrap();
    let mut recorder = Recorder::new(&mut memory);
    (kernel.cpu)(&launch, &mut recorder).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(!recorder.writes.is_empty(), "{what}: the case must store something");
    check_within(&resolved, &recorder).unwrap_or_else(|e| panic!("{what}: {e}"));
    for effect in &resolved {
        let name = sig.explicit_args[effect.arg_index].name;
        if effect.access.reads() && !conservative(sig.name, name, true) {
            assert_tight(effect, &recorder.reads.borrow(), &format!("{what} reads"));
        }
        if effect.access.writes() && !conservative(sig.name, name, false) {
            assert_tight(effect, &recorder.writes, &format!("{what} writes"));
        }
    }
}

#[test]
fn recorded_accesses_lie_in_declared_effects() {
    let mut runs = 0;
    for kernel in kernel_defs() {
        for case in cases(kernel.signature.name) {
            run_case(&kernel, &case);
            runs += 1;
        }
    }
    // Element-wise (7 kernels x 4), matvec, block_sum, rmsnorm, the quantised matvecs (2 x 3),
    // get_row_q8_0, rope and rope_store (2 x 2), kv_store, attention, then the prefill kernels:
    // the matmuls (2 x 3), get_rows_q8_0, rope_rows, attention_rows; then module ggml_quants:
    // 10 matvecs, 10 matmuls, 11 get_rows and 11 get_row (3 each).
    // then module gemma: gelu_mul (4), rope_neox and rope_neox_store (2 x 2), rope_neox_rows,
    // attention_window, attention_window_rows; then module lfm2: shortconv, shortconv_rows; then
    // module qwen35: ssm_conv_silu, gated_delta_net, split_halves and rope_partial (2 each),
    // sigmoid_mul (4).
    assert_eq!(
        runs,
        7 * 4
            + 3
            + 3
            + 4
            + 2 * 3
            + 3
            + 2 * 2
            + 2
            + 3
            + 2 * 3
            + 3
            + 2
            + 3
            + 42 * 3
            + 4
            + 2 * 2
            + 2
            + 3
            + 3
            + 3
            + 3
            + 4 * 2
            + 4
    );
}

#[test]
fn an_access_outside_the_effects_is_caught() {
    // The checker itself: a read past a declared read range and a write into a read-only range fail.
    let effects = [
        ResolvedEffect { arg_index: 0, address: 0x1000, bytes: 16, access: effects::Access::Write },
        ResolvedEffect { arg_index: 1, address: 0x2000, bytes: 16, access: effects::Access::Read },
    ];
    let mut memory = HostMemory::new();
    let mut recorder = Recorder::new(&mut memory);
    recorder.reads.borrow_mut().push((0x2000, 16));
    recorder.writes.push((0x1000, 16));
    assert!(check_within(&effects, &recorder).is_ok());
    recorder.reads.borrow_mut().push((0x2004, 16));
    assert!(check_within(&effects, &recorder).is_err());
    recorder.reads.borrow_mut().pop();
    recorder.writes.push((0x2000, 4));
    assert!(check_within(&effects, &recorder).is_err());
    recorder.writes.pop();
    recorder.reads.borrow_mut().push((0x1000, 4));
    assert!(check_within(&effects, &recorder).is_err(), "a write-only range is not a read effect");
}
