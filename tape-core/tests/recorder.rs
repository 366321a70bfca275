//! The recorder: captures of real kernels with their kernarg layouts, every check a launch must
//! pass, and the poisoning rule (after any error no tape comes out until `reset`).

mod recorder_fixture;

use kernarg_abi::layout::KERNARG_SEGMENT_MAX_BYTES;
use recorder_fixture::*;
use tape_core::recorder::{
    EFFECTS_PER_LAUNCH_MAX, EXTERNAL_LAUNCHES_MAX, EXTERNAL_NAME_BYTES_MAX, EXTERNAL_NAMES_MAX, ExternalError,
    GRID_WORK_ITEMS_MAX, LDS_BYTES_MAX, LaunchError, Operation, RECORDER_CAPACITY_MAX, RecordError, Recorder,
    SYMBOL_BYTES_MAX, WORKGROUP_WORK_ITEMS_MAX, check_launch,
};
use tape_core::tape::{ExternalCount, TapeError};
use tape_core::{Access, AllocationId, Effects, LaunchRecord};

/// A recorder with an open capture at `POSITION`.
fn open(capacity: usize) -> Recorder {
    let mut r = Recorder::new(capacity);
    r.begin(POSITION).unwrap();
    r
}

/// After `first` poisoned `r`: every call answers `Poisoned { first }`, and after `reset` a
/// whole capture records again.
fn assert_poisoned(r: &mut Recorder, first: &RecordError) {
    let poisoned = RecordError::Poisoned { first: Box::new(first.clone()) };
    assert_eq!(r.poisoned_by(), Some(first));
    assert!(!r.is_open());
    let f = fill();
    assert_eq!(r.finish().unwrap_err(), poisoned);
    assert_eq!(r.record(fill_launch(&f), &f.layout).unwrap_err(), poisoned);
    assert_eq!(r.record_external("token_embedding").unwrap_err(), poisoned);
    assert_eq!(r.begin(POSITION).unwrap_err(), poisoned);
    assert_eq!(r.finish().unwrap_err(), poisoned, "still poisoned after more calls");
    r.reset();
    assert_eq!(r.poisoned_by(), None);
    r.begin(3).unwrap();
    r.record(fill_launch(&f), &f.layout).unwrap();
    let tape = r.finish().unwrap();
    assert_eq!((tape.position(), tape.launches().len()), (3, 1));
}

/// Records `launch` of `kernel` into a fresh capture (after one good launch) and expects
/// `Launch { index: 1, error }` and the poison.
fn expect_launch_error(kernel: &Kernel, launch: LaunchRecord, error: LaunchError) {
    let f = fill();
    let mut r = open(4);
    r.record(fill_launch(&f), &f.layout).unwrap();
    let first = RecordError::Launch { index: 1, error };
    assert_eq!(r.record(launch, &kernel.layout).unwrap_err(), first);
    assert_poisoned(&mut r, &first);
}

#[test]
fn records_the_golden_capture() {
    let (f, a, b) = (fill(), axpy(), block_sum());
    let launches = [fill_launch(&f), axpy_launch(&a), block_sum_launch(&b, 1024)];
    let mut r = Recorder::new(3);
    assert_eq!(r.capacity_launches(), 3);
    r.begin(POSITION).unwrap();
    assert!(r.is_open());
    r.record(launches[0].clone(), &f.layout).unwrap();
    r.record_external("token_embedding").unwrap();
    r.record(launches[1].clone(), &a.layout).unwrap();
    r.record_external("token_embedding").unwrap();
    r.record_external("sampler").unwrap();
    r.record(launches[2].clone(), &b.layout).unwrap();
    assert_eq!(r.recorded_launches(), 3);
    let tape = r.finish().unwrap();
    assert!(!r.is_open());
    assert_eq!(tape.position(), POSITION);
    assert_eq!(tape.launches(), &launches);
    assert_eq!(
        tape.external(),
        &[
            ExternalCount { name: "token_embedding".into(), count: 2 },
            ExternalCount { name: "sampler".into(), count: 1 },
        ]
    );
    assert!(tape.bindings().is_empty());
    // The recorder is reusable after a finished capture.
    r.begin(POSITION + 1).unwrap();
    r.record(launches[0].clone(), &f.layout).unwrap();
    assert_eq!(r.finish().unwrap().position(), POSITION + 1);
}

#[test]
fn golden_blobs_match_their_layouts_sizes() {
    for (k, len) in [(fill(), 272), (axpy(), 280), (block_sum(), 280)] {
        assert_eq!(k.layout.segment_size(), len, "{}", k.artifact.symbol);
        assert_eq!((k.wave_size, k.static_lds_bytes), (32, 0), "{}", k.artifact.symbol);
    }
}

#[test]
fn capacity_is_enforced_and_poisons() {
    let f = fill();
    let mut r = open(2);
    r.record(fill_launch(&f), &f.layout).unwrap();
    r.record(fill_launch(&f), &f.layout).unwrap();
    let first = RecordError::CapacityExceeded { capacity: 2 };
    assert_eq!(r.record(fill_launch(&f), &f.layout).unwrap_err(), first);
    assert_poisoned(&mut r, &first);
}

#[test]
#[should_panic(expected = "recorder capacity 0 outside")]
fn zero_capacity_is_a_programming_error() {
    let _ = Recorder::new(0);
}

#[test]
#[should_panic(expected = "outside 1..=65536")]
fn capacity_above_the_maximum_is_a_programming_error() {
    let _ = Recorder::new(RECORDER_CAPACITY_MAX + 1);
}

#[test]
fn the_maximum_capacity_is_accepted() {
    assert_eq!(RECORDER_CAPACITY_MAX, 65_536);
    assert_eq!(Recorder::new(RECORDER_CAPACITY_MAX).capacity_launches(), 65_536);
}

#[test]
fn calls_outside_a_capture_poison() {
    let f = fill();
    for (operation, call) in [
        (
            Operation::Record,
            &(|r: &mut Recorder| r.record(fill_launch(&fill()), &fill().layout).map(drop))
                as &dyn Fn(&mut Recorder) -> Result<(), RecordError>,
        ),
        (Operation::RecordExternal, &|r: &mut Recorder| r.record_external("x")),
        (Operation::Finish, &|r: &mut Recorder| r.finish().map(drop)),
    ] {
        let mut r = Recorder::new(4);
        let first = RecordError::NotOpen { operation };
        assert_eq!(call(&mut r).unwrap_err(), first);
        assert_eq!(first.to_string(), format!("{operation} without an open capture"));
        assert_poisoned(&mut r, &first);
    }
    // Also after a finished capture.
    let mut r = open(4);
    r.record(fill_launch(&f), &f.layout).unwrap();
    r.finish().unwrap();
    let first = RecordError::NotOpen { operation: Operation::Record };
    assert_eq!(r.record(fill_launch(&f), &f.layout).unwrap_err(), first);
    assert_poisoned(&mut r, &first);
}

#[test]
fn begin_while_open_poisons() {
    let mut r = open(4);
    let first = RecordError::AlreadyOpen { position: POSITION };
    assert_eq!(r.begin(99).unwrap_err(), first);
    assert_poisoned(&mut r, &first);
}

#[test]
fn an_empty_capture_is_no_tape() {
    let mut r = open(4);
    r.record_external("token_embedding").unwrap();
    let first = RecordError::Tape(TapeError::Empty);
    assert_eq!(r.finish().unwrap_err(), first);
    assert_poisoned(&mut r, &first);
}

#[test]
fn a_failed_launch_leaves_no_partial_tape() {
    let (f, a) = (fill(), axpy());
    let mut r = open(8);
    r.record(fill_launch(&f), &f.layout).unwrap();
    r.record(axpy_launch(&a), &a.layout).unwrap();
    let mut bad = fill_launch(&f);
    bad.wave_size = 16;
    assert!(r.record(bad, &f.layout).is_err());
    // The two good launches are gone for good.
    assert!(matches!(r.finish(), Err(RecordError::Poisoned { .. })));
    assert_eq!(r.recorded_launches(), 0);
}

#[test]
fn kernarg_length_must_be_the_segment_size() {
    let f = fill();
    let mut short = fill_launch(&f);
    short.kernarg.truncate(271);
    expect_launch_error(&f, short, LaunchError::KernargLength { len: 271, segment_size: 272 });
    let mut long = fill_launch(&f);
    long.kernarg.extend_from_slice(&[0; 8]);
    expect_launch_error(&f, long, LaunchError::KernargLength { len: 280, segment_size: 272 });
}

#[test]
fn the_wrong_layout_is_caught() {
    // axpy's blob against fill's layout: different segment size.
    let (f, a) = (fill(), axpy());
    expect_launch_error(&f, axpy_launch(&a), LaunchError::KernargLength { len: 280, segment_size: 272 });
    // block_sum's blob against axpy's layout: both 280 bytes with global_buffer arguments at 0
    // and 8, so only a pointer list that disagrees with the slots is caught; here one is missing.
    let b = block_sum();
    let mut l = block_sum_launch(&b, 1024);
    l.pointers.truncate(1);
    l.effects = Effects::Known(vec![effect(ALLOC_SUMS, 64, 64, Access::Write)]);
    expect_launch_error(&a, l, LaunchError::PointerMissing { kernarg_offset: 8 });
}

#[test]
fn every_global_buffer_needs_exactly_one_pointer() {
    let a = axpy();
    let mut missing = axpy_launch(&a);
    missing.pointers.remove(0);
    missing.effects = Effects::Known(vec![effect(ALLOC_X, 0, 4, Access::Read)]);
    expect_launch_error(&a, missing, LaunchError::PointerMissing { kernarg_offset: 0 });

    let mut duplicate = axpy_launch(&a);
    duplicate.pointers.insert(1, pointer(0, ALLOC_Y, 8));
    expect_launch_error(&a, duplicate, LaunchError::PointersUnsorted { kernarg_offset: 0, previous: 0 });

    let mut unsorted = axpy_launch(&a);
    unsorted.pointers.swap(0, 1);
    expect_launch_error(&a, unsorted, LaunchError::PointersUnsorted { kernarg_offset: 0, previous: 8 });
}

#[test]
fn a_pointer_must_sit_at_a_global_buffer() {
    let f = fill();
    // Offset 16 is hidden_block_count_x (16 = 1024 / 64, non-zero): 8-aligned and inside the
    // blob, so only the layout can tell it is no pointer.
    let mut extra = fill_launch(&f);
    extra.pointers.push(pointer(16, AllocationId(99), 0));
    expect_launch_error(&f, extra, LaunchError::PointerNotAtSlot { kernarg_offset: 16 });
}

#[test]
fn pointer_slots_are_aligned_inside_and_non_null() {
    let f = fill();
    let mut null = fill_launch(&f);
    null.kernarg[..8].fill(0);
    expect_launch_error(&f, null, LaunchError::NullPointer { kernarg_offset: 0 });

    let mut misaligned = fill_launch(&f);
    misaligned.pointers[0].kernarg_offset = 4;
    expect_launch_error(&f, misaligned, LaunchError::PointerMisaligned { kernarg_offset: 4 });

    let mut outside = fill_launch(&f);
    outside.pointers[0].kernarg_offset = 272;
    expect_launch_error(&f, outside, LaunchError::PointerOutsideKernarg { kernarg_offset: 272, kernarg_len: 272 });

    let mut far = fill_launch(&f);
    far.pointers[0].kernarg_offset = u32::MAX - 7;
    expect_launch_error(&f, far, LaunchError::PointerOutsideKernarg { kernarg_offset: u32::MAX - 7, kernarg_len: 272 });
}

#[test]
fn wave_size_geometry_and_lds_are_checked() {
    let f = fill();
    let with = |change: &dyn Fn(&mut LaunchRecord)| {
        let mut l = fill_launch(&f);
        change(&mut l);
        l
    };
    expect_launch_error(&f, with(&|l| l.wave_size = 48), LaunchError::WaveSize { wave_size: 48 });
    expect_launch_error(&f, with(&|l| l.wave_size = 0), LaunchError::WaveSize { wave_size: 0 });
    for axis in 0..3u8 {
        let i = usize::from(axis);
        expect_launch_error(&f, with(&|l| l.geometry.grid_work_items[i] = 0), LaunchError::ZeroGridAxis { axis });
        expect_launch_error(
            &f,
            with(&|l| l.geometry.workgroup_work_items[i] = 0),
            LaunchError::ZeroWorkgroupAxis { axis },
        );
    }
    expect_launch_error(
        &f,
        with(&|l| l.geometry.workgroup_work_items = [64, 4, 5]),
        LaunchError::WorkgroupTooLarge { work_items: 1280, limit: WORKGROUP_WORK_ITEMS_MAX },
    );
    expect_launch_error(
        &f,
        with(&|l| l.geometry.workgroup_work_items = [u16::MAX; 3]),
        LaunchError::WorkgroupTooLarge { work_items: 65535u64.pow(3), limit: 1024 },
    );
    // 1024 work-items is the maximum, accepted.
    let ok = with(&|l| l.geometry.workgroup_work_items = [256, 2, 2]);
    assert_eq!(check_launch(&ok), Ok(()));
    // The grid: at most 2^32 - 1 work-items over all three axes, whatever each axis holds.
    assert_eq!(GRID_WORK_ITEMS_MAX, u64::from(u32::MAX));
    let max = u32::MAX;
    expect_launch_error(
        &f,
        with(&|l| l.geometry.grid_work_items = [max; 3]),
        LaunchError::GridTooLarge { grid: [max; 3], work_items: u128::from(max).pow(3), limit: GRID_WORK_ITEMS_MAX },
    );
    expect_launch_error(
        &f,
        with(&|l| l.geometry.grid_work_items = [1 << 16, 1, 1 << 16]),
        LaunchError::GridTooLarge { grid: [1 << 16, 1, 1 << 16], work_items: 1 << 32, limit: GRID_WORK_ITEMS_MAX },
    );
    let at_limit = with(&|l| l.geometry.grid_work_items = [max, 1, 1]);
    assert_eq!(check_launch(&at_limit), Ok(()));
    let error = LaunchError::GridTooLarge { grid: [max; 3], work_items: u128::from(max).pow(3), limit: 4_294_967_295 };
    let message = error.to_string();
    for part in
        ["grid_work_items [4294967295, 4294967295, 4294967295]", &u128::from(max).pow(3).to_string(), "4294967295"]
    {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    expect_launch_error(
        &f,
        with(&|l| l.lds = tape_core::Lds { static_bytes: 200_000, dynamic_bytes: 61_633 }),
        LaunchError::LdsTooLarge { static_bytes: 200_000, dynamic_bytes: 61_633, limit: LDS_BYTES_MAX },
    );
    expect_launch_error(
        &f,
        with(&|l| l.lds = tape_core::Lds { static_bytes: u32::MAX, dynamic_bytes: u32::MAX }),
        LaunchError::LdsTooLarge { static_bytes: u32::MAX, dynamic_bytes: u32::MAX, limit: 261_632 },
    );
    let at_limit = with(&|l| l.lds = tape_core::Lds { static_bytes: 200_000, dynamic_bytes: 61_632 });
    assert_eq!(check_launch(&at_limit), Ok(()));
}

#[test]
fn symbols_are_bounded() {
    let f = fill();
    let mut empty = fill_launch(&f);
    empty.artifact.symbol.clear();
    expect_launch_error(&f, empty, LaunchError::SymbolEmpty);
    let mut long = fill_launch(&f);
    long.artifact.symbol = "s".repeat(SYMBOL_BYTES_MAX + 1);
    expect_launch_error(&f, long, LaunchError::SymbolTooLong { len: 4097, limit: 4096 });
    let mut at_limit = fill_launch(&f);
    at_limit.artifact.symbol = "s".repeat(SYMBOL_BYTES_MAX);
    assert_eq!(check_launch(&at_limit), Ok(()));
}

#[test]
fn kernarg_blobs_are_bounded_before_the_layout_is_consulted() {
    let f = fill();
    let mut huge = fill_launch(&f);
    huge.kernarg.resize(KERNARG_SEGMENT_MAX_BYTES as usize + 1, 0);
    expect_launch_error(&f, huge, LaunchError::KernargTooLarge { len: (1 << 20) + 1, limit: 1 << 20 });
}

#[test]
fn effects_are_checked() {
    let a = axpy();
    let with = |effects: Effects| {
        let mut l = axpy_launch(&a);
        l.effects = effects;
        l
    };
    expect_launch_error(
        &a,
        with(Effects::Known(vec![effect(ALLOC_Y, u64::MAX, 1, Access::Read)])),
        LaunchError::EffectOverflow { index: 0, offset_bytes: u64::MAX, len_bytes: 1 },
    );
    expect_launch_error(
        &a,
        with(Effects::Known(vec![effect(ALLOC_Y, 0, 4, Access::Read), effect(ALLOC_SUMS, 0, 4, Access::Write)])),
        LaunchError::EffectAllocation { index: 1, allocation: 11 },
    );
    expect_launch_error(
        &a,
        with(Effects::Known(vec![effect(ALLOC_Y, 0, 4, Access::Read); EFFECTS_PER_LAUNCH_MAX + 1])),
        LaunchError::TooManyEffects { count: 257, limit: 256 },
    );
    // An empty effect orders the launch against nothing: refused, by index.
    expect_launch_error(
        &a,
        with(Effects::Known(vec![effect(ALLOC_Y, 0, 4, Access::Read), effect(ALLOC_X, 8, 0, Access::Write)])),
        LaunchError::EffectEmpty { index: 1 },
    );
    // At the limit, one byte long and ending exactly at u64::MAX: accepted.
    let mut ok = vec![effect(ALLOC_Y, 0, 1, Access::Read); EFFECTS_PER_LAUNCH_MAX - 1];
    ok.push(effect(ALLOC_X, u64::MAX - 4, 4, Access::Write));
    assert_eq!(check_launch(&with(Effects::Known(ok))), Ok(()));
    assert_eq!(check_launch(&with(Effects::Unknown)), Ok(()));
}

#[test]
fn external_names_are_bounded_in_length_and_number() {
    let mut r = open(4);
    assert_eq!(r.record_external("").unwrap_err(), RecordError::External(ExternalError::NameEmpty));
    let mut r = open(4);
    let long = "n".repeat(EXTERNAL_NAME_BYTES_MAX + 1);
    let first = RecordError::External(ExternalError::NameTooLong { len: 65, limit: 64 });
    assert_eq!(r.record_external(&long).unwrap_err(), first);
    assert_poisoned(&mut r, &first);

    let mut r = open(4);
    for i in 0..EXTERNAL_NAMES_MAX {
        r.record_external(&format!("name{i}")).unwrap();
    }
    r.record_external("name0").unwrap(); // a known name is still counted
    let first = RecordError::External(ExternalError::TooManyNames { limit: 64 });
    assert_eq!(r.record_external("one_more").unwrap_err(), first);
    assert_poisoned(&mut r, &first);
}

#[test]
fn external_launches_are_bounded_in_total() {
    let f = fill();
    let mut r = open(4);
    r.record(fill_launch(&f), &f.layout).unwrap();
    for i in 0..EXTERNAL_LAUNCHES_MAX {
        r.record_external(if i % 2 == 0 { "even" } else { "odd" }).unwrap();
    }
    let first = RecordError::External(ExternalError::TooManyLaunches { limit: 65_536 });
    assert_eq!(r.record_external("even").unwrap_err(), first);
    assert_poisoned(&mut r, &first);

    let mut r = open(4);
    r.record(fill_launch(&f), &f.layout).unwrap();
    for _ in 0..EXTERNAL_LAUNCHES_MAX {
        r.record_external("embedding").unwrap();
    }
    let tape = r.finish().unwrap();
    assert_eq!(tape.external(), &[ExternalCount { name: "embedding".into(), count: 65_536 }]);
    assert_eq!(tape.identity().external_launches, 65_536);
}

#[test]
fn errors_name_the_offending_values() {
    let e = RecordError::Launch { index: 4, error: LaunchError::KernargLength { len: 271, segment_size: 272 } };
    assert_eq!(e.to_string(), "launch 4: kernarg blob of 271 bytes, the layout's segment is 272 bytes");
    let p = RecordError::Poisoned { first: Box::new(RecordError::CapacityExceeded { capacity: 2 }) };
    assert_eq!(
        p.to_string(),
        "the recorder is poisoned by an earlier error: capture exceeds the recorder's capacity of 2 launches"
    );
}

#[test]
fn a_decoded_tape_can_be_checked_against_its_layouts_again() {
    use std::collections::BTreeMap;
    let (f, a, b) = (fill(), axpy(), block_sum());
    let tape = tape_core::tape::Tape::from_binary(&golden_tape().to_binary()).unwrap();
    let layouts: BTreeMap<_, _> = [&f, &a, &b].into_iter().map(|k| (k.artifact.clone(), k.layout.clone())).collect();
    assert_eq!(tape.check_layouts(|artifact| layouts.get(artifact)), Ok(()));

    // fill's layout for every launch: axpy's blob is 8 bytes longer.
    assert_eq!(
        tape.check_layouts(|_| Some(&f.layout)),
        Err(TapeError::Launch { index: 1, error: LaunchError::KernargLength { len: 280, segment_size: 272 } })
    );
    let missing = layouts.iter().filter(|(k, _)| k.symbol != "axpy").collect::<BTreeMap<_, _>>();
    assert_eq!(
        tape.check_layouts(|artifact| missing.get(artifact).copied()),
        Err(TapeError::MissingLayout { index: 1, artifact: a.artifact.clone() })
    );
    assert_eq!(
        TapeError::MissingLayout { index: 1, artifact: a.artifact.clone() }.to_string(),
        format!("launch 1: no kernarg layout for `axpy` in code object {AXPY_SHA256}")
    );
}
