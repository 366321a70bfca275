//! Declared effects contain every byte the CPU references touch, with the right access: every
//! reference runs on [`HostMemory`] behind a recording [`DeviceMemory`], and every recorded read
//! must lie in a declared read effect, every write in a declared write effect. For these
//! well-formed launches the effects are also tight: every declared byte is touched.

mod common;

use common::{Kernarg, Recorder, check_within};
use kernels::effects::{self, ResolvedEffect};
use kernels::launch::Launch;
use kernels::memory::HostMemory;
use kernels::registry::{KernelDef, MODULES};
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
        "fill" | "copy" | "axpy" | "add" | "mul" | "scale" => vec![
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
        other => panic!("no effect cases for {other}: add some"),
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
        if effect.access.reads() {
            assert_tight(effect, &recorder.reads.borrow(), &format!("{what} reads"));
        }
        if effect.access.writes() {
            assert_tight(effect, &recorder.writes, &format!("{what} writes"));
        }
    }
}

#[test]
fn recorded_accesses_lie_in_declared_effects() {
    let mut runs = 0;
    for kernel in MODULES.iter().flat_map(|m| m.kernels) {
        for case in cases(kernel.signature.name) {
            run_case(kernel, &case);
            runs += 1;
        }
    }
    assert_eq!(runs, 6 * 4 + 3 + 3 + 4);
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
