//! The census against the golden tape (fill → axpy → block_sum, one external launch, a grid
//! binding `ceil((position + 1007) / 64)` work-groups of 64 on block_sum): traces written by hand
//! as rocprofv3 lines, split into forwards and reconciled launch by launch.

mod recorder_fixture;

use recorder_fixture::*;
use tape_core::census::trace::{TraceRow, header_line, parse};
use tape_core::census::{CensusError, LaunchKey, Verdict, census};

/// One rocprofv3 line for `kernel` with a 1-D `grid` in groups of 64, static LDS 0.
fn row(dispatch_id: u64, kernel: &str, grid: u32) -> TraceRow {
    TraceRow {
        kind: "KERNEL_DISPATCH".into(),
        agent_id: "Agent 1".into(),
        queue_id: 1,
        stream_id: 0,
        thread_id: 9,
        dispatch_id,
        kernel_id: 0,
        kernel_name: kernel.into(),
        correlation_id: dispatch_id,
        start_timestamp_ns: 10 * dispatch_id,
        end_timestamp_ns: 10 * dispatch_id + 5,
        lds_block_size_bytes: 0,
        scratch_size_bytes: 0,
        vgpr_count: 0,
        accum_vgpr_count: 0,
        sgpr_count: 0,
        workgroup_size: [64, 1, 1],
        grid_size: [grid, 1, 1],
    }
}

/// The dispatches of one ordinary forward at `position`: the external embedding first, then the
/// tape's three launches (block_sum over `position + 1007` elements).
fn forward(first_id: u64, position: u32) -> Vec<TraceRow> {
    vec![
        row(first_id, "token_embedding", 64),
        row(first_id + 1, "fill", 1024),
        row(first_id + 2, "axpy", 1024),
        row(first_id + 3, "block_sum", (position + 1007).div_ceil(64) * 64),
    ]
}

/// Through the CSV text, as the census reads a file.
fn through_csv(rows: &[TraceRow]) -> Vec<TraceRow> {
    let mut text = header_line();
    for r in rows {
        r.write_line(&mut text);
    }
    parse(&text).unwrap()
}

#[test]
fn forwards_at_three_positions_reconcile_with_their_counts() {
    let tape = golden_tape();
    // A preamble dispatch, then forwards at 17, 18, 19 (block_sum grows to 17 groups at 18).
    let mut rows = vec![row(0, "warmup", 64)];
    for (k, p) in (17..20).enumerate() {
        rows.extend(forward(1 + 4 * k as u64, p));
    }
    let c = census(&tape, &through_csv(&rows), 17).unwrap();
    assert_eq!(c.anchor, "fill");
    assert_eq!(c.preamble_launches, 1);
    let got: Vec<_> = c
        .positions
        .iter()
        .map(|p| (p.position, p.compute_launches, p.retained_dispatches, p.external_launches))
        .collect();
    // Each forward: its embedding (pulled in before the anchor), fill, axpy, block_sum.
    assert_eq!(got, [(17, 4, 3, 1), (18, 4, 3, 1), (19, 4, 3, 1)]);
    assert!(c.positions.iter().all(|p| p.reconciled()), "{:?}", c.positions);
    assert_eq!((c.certified(), c.first_mismatch()), (3, None));
}

#[test]
fn external_launches_are_counted_by_name() {
    let tape = golden_tape();
    // No embedding at all: every retained launch is there, the external one is missing.
    let c = census(&tape, &forward(0, 17)[1..], 17).unwrap();
    assert!(
        matches!(&c.positions[0].verdict, Verdict::ExternalMissing { missing } if missing.name == "token_embedding" && missing.missing == 1),
        "{:?}",
        c.positions[0]
    );
    // Two embeddings where the tape names one: the second is a difference.
    let mut rows = forward(0, 17);
    rows.push(row(4, "token_embedding", 64));
    let c = census(&tape, &rows, 17).unwrap();
    let Verdict::Differs { difference } = &c.positions[0].verdict else { panic!("{:?}", c.positions[0]) };
    assert_eq!((difference.launch, difference.expected.as_ref()), (4, None));
    assert_eq!(
        difference.to_string(),
        "launch 4: the tape has no more launches, the trace token_embedding grid [64, 1, 1] work-group [64, 1, 1] LDS 0 B (Dispatch_Id 4)"
    );
}

#[test]
fn a_grid_that_does_not_follow_the_position_is_named() {
    let tape = golden_tape();
    let mut rows = forward(0, 17);
    // At 18 block_sum must have 17 groups; this one kept 16.
    rows.extend(forward(4, 17));
    let c = census(&tape, &through_csv(&rows), 17).unwrap();
    assert!(c.positions[0].reconciled());
    let Verdict::Differs { difference } = &c.positions[1].verdict else { panic!("{:?}", c.positions[1]) };
    assert_eq!(difference.launch, 3);
    assert_eq!(difference.expected.as_ref().map(|k| k.grid_work_items), Some([1088, 1, 1]));
    assert_eq!(difference.found.as_ref().map(|k| k.grid_work_items), Some([1024, 1, 1]));
    assert_eq!(difference.dispatch_id, Some(7));
    assert_eq!(c.first_mismatch().map(|p| p.position), Some(18));
}

#[test]
fn a_launch_around_the_recorder_is_caught_at_its_place() {
    let tape = golden_tape();
    let mut rows = forward(0, 17);
    // A dispatch of a kernel the tape neither retains nor names as external.
    rows.insert(2, row(50, "scale", 1024));
    // Dispatch ids in issue order.
    for (i, r) in rows.iter_mut().enumerate() {
        r.dispatch_id = i as u64;
    }
    let c = census(&tape, &rows, 17).unwrap();
    let Verdict::Differs { difference } = &c.positions[0].verdict else { panic!("{:?}", c.positions[0]) };
    assert_eq!(difference.launch, 2);
    assert_eq!(difference.found.as_ref().map(|k| k.symbol.as_str()), Some("scale"));
    assert_eq!(difference.expected.as_ref().map(|k| k.symbol.as_str()), Some("axpy"));
    assert_eq!(c.positions[0].compute_launches, 5);
}

#[test]
fn swapped_launches_are_caught_at_the_first() {
    let tape = golden_tape();
    let mut rows = forward(0, 17);
    rows.swap(2, 3);
    for (i, r) in rows.iter_mut().enumerate() {
        r.dispatch_id = i as u64;
    }
    let c = census(&tape, &rows, 17).unwrap();
    let Verdict::Differs { difference } = &c.positions[0].verdict else { panic!("{:?}", c.positions[0]) };
    assert_eq!((difference.launch, difference.found.as_ref().map(|k| k.symbol.as_str())), (2, Some("block_sum")));
    assert_eq!(difference.expected.as_ref().map(|k| k.symbol.as_str()), Some("axpy"));
}

#[test]
fn rows_are_taken_in_dispatch_order() {
    let tape = golden_tape();
    let mut rows = forward(0, 17);
    rows.reverse();
    let c = census(&tape, &rows, 17).unwrap();
    assert!(c.positions[0].reconciled(), "{:?}", c.positions);
}

#[test]
fn unsplittable_traces_are_refused() {
    let tape = golden_tape();
    assert_eq!(census(&tape, &[row(0, "axpy", 1024)], 0), Err(CensusError::NoForward { symbol: "fill".into() }));
    let key = LaunchKey::of_row(&row(0, "fill", 1024));
    assert_eq!(key.to_string(), "fill grid [1024, 1, 1] work-group [64, 1, 1] LDS 0 B");
}

#[test]
fn a_position_without_binding_values_is_not_certified() {
    let tape = golden_tape();
    // block_sum's grid is at most 64 groups: position 3090 would need 65.
    let c = census(&tape, &forward(0, 3090), 3090).unwrap();
    assert!(matches!(c.positions[0].verdict, Verdict::NotCertified { .. }), "{:?}", c.positions[0]);
    assert_eq!(c.certified(), 0);
}
