use super::*;

fn small() -> GateSettings {
    GateSettings { window_rows: 4, confirm_rows: 3, rows_max: 30, ..GateSettings::default() }
}

fn run(settings: GateSettings, values: impl IntoIterator<Item = f64>) -> (GateStatus, usize) {
    let mut gate = Gate::new(settings).unwrap();
    for v in values {
        if gate.push(v).is_final() {
            break;
        }
    }
    (gate.status().clone(), gate.rows())
}

#[test]
fn flat_data_settles_after_two_windows_and_a_confirmation() {
    // ±0.1 % alternating noise around 100: spread 0.2 %, no trend.
    let values = (0..100).map(|i| if i % 2 == 0 { 100.1 } else { 99.9 });
    let (status, rows) = run(small(), values);
    assert_eq!(status, GateStatus::Passed { settled_start: 4, settled_end: 8 });
    assert_eq!(rows, 11, "2 windows of 4 + 3 confirmation rows");
    let (status, rows) = run(GateSettings::default(), std::iter::repeat(50.0));
    assert_eq!(status, GateStatus::Passed { settled_start: 10, settled_end: 20 });
    assert_eq!(rows, 30);
}

#[test]
fn a_steady_drift_is_rejected_until_it_stops() {
    // 0.2 %/row of upward drift for 20 rows, then flat.
    let values: Vec<f64> = (0..60).map(|i| 100.0 * (1.0 + 0.002 * f64::from(i.min(20)))).collect();
    let mut gate = Gate::new(small()).unwrap();
    for (i, v) in values.iter().enumerate() {
        let status = gate.push(*v).clone();
        if i < 20 {
            assert!(matches!(&status, GateStatus::Settling { .. }), "row {i}: {status:?}");
        }
        if let GateStatus::Settling { detail } = &status
            && (8..20).contains(&i)
        {
            assert!(detail.contains("slope") || detail.contains("drift"), "row {i}: {detail}");
        }
    }
    assert!(matches!(gate.status(), GateStatus::Passed { settled_start, .. } if *settled_start >= 20));
}

#[test]
fn slope_and_spread_and_drift_each_reject() {
    let limits = GateSettings { slope_max_pct: 0.05, spread_max_pct: 1.0, drift_max_pct: 0.5, ..small() };
    // Slope only: 0.1 %/row inside one window (spread 0.3 % is within 1 %).
    let mut gate = Gate::new(limits).unwrap();
    for v in [100.0, 100.0, 100.0, 100.0, 100.0, 100.1, 100.2, 100.3] {
        gate.push(v);
    }
    assert!(
        matches!(gate.status(), GateStatus::Settling { detail } if detail.contains("slope")),
        "{:?}",
        gate.status()
    );
    // Spread only: one 2 % outlier with no net slope.
    let mut gate = Gate::new(limits).unwrap();
    for v in [100.0, 100.0, 100.0, 100.0, 100.0, 98.0, 98.0, 100.0] {
        gate.push(v);
    }
    let status = gate.status().clone();
    assert!(
        matches!(&status, GateStatus::Settling { detail } if detail.contains("spread") || detail.contains("slope")),
        "{status:?}"
    );
    let mut gate = Gate::new(GateSettings { slope_max_pct: 100.0, ..limits }).unwrap();
    for v in [100.0, 100.0, 100.0, 100.0, 100.0, 102.0, 100.0, 100.0] {
        gate.push(v);
    }
    assert!(
        matches!(gate.status(), GateStatus::Settling { detail } if detail.contains("spread")),
        "{:?}",
        gate.status()
    );
    // Drift only: a 1 % step between two individually flat windows.
    let mut gate = Gate::new(limits).unwrap();
    for v in [100.0, 100.0, 100.0, 100.0, 101.0, 101.0, 101.0, 101.0] {
        gate.push(v);
    }
    assert!(
        matches!(gate.status(), GateStatus::Settling { detail } if detail.contains("drift")),
        "{:?}",
        gate.status()
    );
}

#[test]
fn a_confirmation_that_moves_sends_the_gate_back_to_settling() {
    let mut gate = Gate::new(small()).unwrap();
    for _ in 0..8 {
        gate.push(100.0);
    }
    assert_eq!(gate.status(), &GateStatus::Confirming { settled_start: 4, settled_end: 8 });
    for _ in 0..3 {
        gate.push(102.0);
    }
    assert!(matches!(gate.status(), GateStatus::Settling { detail } if detail.contains("confirmation")));
}

#[test]
fn the_gate_gives_up_after_rows_max() {
    // Alternating ±5 %: never within a 1 % spread.
    let (status, rows) = run(small(), (0..1000).map(|i| if i % 2 == 0 { 105.0 } else { 95.0 }));
    assert!(matches!(&status, GateStatus::GaveUp { detail } if detail.contains("30 rows")), "{status:?}");
    assert_eq!(rows, 30);
}

#[test]
fn unusable_settings_are_refused() {
    let base = GateSettings::default();
    assert_eq!(Gate::new(GateSettings { window_rows: 1, ..base }).unwrap_err(), GateSettingsError::Window(1));
    assert_eq!(Gate::new(GateSettings { confirm_rows: 0, ..base }).unwrap_err(), GateSettingsError::Confirm(0));
    assert_eq!(
        Gate::new(GateSettings { rows_max: 29, ..base }).unwrap_err(),
        GateSettingsError::RowsMax { rows_max: 29, needed: 30 }
    );
    assert!(matches!(
        Gate::new(GateSettings { spread_max_pct: -1.0, ..base }),
        Err(GateSettingsError::Limit { name: "spread_max_pct", .. })
    ));
}

#[test]
fn summaries_and_slopes() {
    assert_eq!(Summary::of(&[3.0, 1.0, 2.0]), Some(Summary { min: 1.0, median: 2.0, max: 3.0 }));
    assert_eq!(Summary::of(&[4.0, 1.0, 2.0, 3.0]), Some(Summary { min: 1.0, median: 2.5, max: 4.0 }));
    assert_eq!(Summary::of(&[]), None);
    assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
    assert!((slope(&[1.0, 3.0, 5.0, 7.0]) - 2.0).abs() < 1e-12);
    assert_eq!(slope(&[5.0]), 0.0);
}
