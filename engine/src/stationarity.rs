//! Benchmark statistics: the stationarity gate that decides when a series of row measurements
//! has settled, and min/median/max summaries.
//!
//! # The gate
//! Rows are pushed one at a time. Once two full windows of `window_rows` exist, the latest
//! window is *settled* when its least-squares slope is at most `slope_max_pct` of its median per
//! row, its spread `(max - min) / median` is at most `spread_max_pct`, and its median differs from
//! the previous window's median by at most `drift_max_pct`. The next `confirm_rows` rows must then
//! satisfy the same slope and spread limits and stay within the drift limit of the settled
//! window's median; otherwise settling starts over from the latest rows. A gate that has seen
//! `rows_max` rows without passing gives up.

use serde::{Deserialize, Serialize};

/// The gate's limits (percentages are of the window's median).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSettings {
    /// Rows per window.
    pub window_rows: usize,
    /// Largest |slope| per row, percent of the median.
    pub slope_max_pct: f64,
    /// Largest (max - min) / median, percent.
    pub spread_max_pct: f64,
    /// Largest change of the median between consecutive windows, percent.
    pub drift_max_pct: f64,
    /// Rows that must confirm a settled window.
    pub confirm_rows: usize,
    /// Rows after which the gate gives up.
    pub rows_max: usize,
}

impl Default for GateSettings {
    fn default() -> Self {
        Self {
            window_rows: 10,
            slope_max_pct: 0.05,
            spread_max_pct: 1.0,
            drift_max_pct: 0.5,
            confirm_rows: 10,
            rows_max: 120,
        }
    }
}

/// Why gate settings were refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GateSettingsError {
    /// A window needs two rows for a slope.
    #[error("window_rows {0}: at least 2")]
    Window(usize),
    /// Confirmation needs two rows for a slope.
    #[error("confirm_rows {0}: at least 2")]
    Confirm(usize),
    /// `rows_max` leaves no room for two windows and a confirmation.
    #[error("rows_max {rows_max}: at least 2 × window_rows + confirm_rows = {needed}")]
    RowsMax {
        /// Given.
        rows_max: usize,
        /// The fewest rows the gate can pass in.
        needed: usize,
    },
    /// A limit is negative or not finite.
    #[error("{name} {value}: a finite percentage ≥ 0")]
    Limit {
        /// The limit.
        name: &'static str,
        /// Given.
        value: f64,
    },
}

impl GateSettings {
    /// Checks the settings are usable.
    ///
    /// # Errors
    /// [`GateSettingsError`] naming the setting.
    pub fn validate(&self) -> Result<(), GateSettingsError> {
        if self.window_rows < 2 {
            return Err(GateSettingsError::Window(self.window_rows));
        }
        if self.confirm_rows < 2 {
            return Err(GateSettingsError::Confirm(self.confirm_rows));
        }
        let needed = 2 * self.window_rows + self.confirm_rows;
        if self.rows_max < needed {
            return Err(GateSettingsError::RowsMax { rows_max: self.rows_max, needed });
        }
        for (name, value) in [
            ("slope_max_pct", self.slope_max_pct),
            ("spread_max_pct", self.spread_max_pct),
            ("drift_max_pct", self.drift_max_pct),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(GateSettingsError::Limit { name, value });
            }
        }
        Ok(())
    }
}

/// Where the gate is.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum GateStatus {
    /// Not settled yet; `detail` says what failed last (or that rows are still missing).
    Settling {
        /// Why not settled.
        detail: String,
    },
    /// A window settled at rows `settled_start..settled_end`; confirmation rows are being taken.
    Confirming {
        /// First row of the settled window.
        settled_start: usize,
        /// One past its last row.
        settled_end: usize,
    },
    /// Settled and confirmed.
    Passed {
        /// First row of the settled window.
        settled_start: usize,
        /// One past its last row.
        settled_end: usize,
    },
    /// `rows_max` rows without passing.
    GaveUp {
        /// What failed last.
        detail: String,
    },
}

impl std::fmt::Display for GateStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GateStatus::Settling { detail } => write!(f, "settling: {detail}"),
            GateStatus::Confirming { settled_start, settled_end } => {
                write!(f, "confirming the window of rows {settled_start}..{settled_end}")
            }
            GateStatus::Passed { settled_start, settled_end } => {
                write!(f, "passed: settled at rows {settled_start}..{settled_end}")
            }
            GateStatus::GaveUp { detail } => write!(f, "gave up: {detail}"),
        }
    }
}

impl GateStatus {
    /// Whether the gate is finished (passed or gave up).
    #[must_use]
    pub fn is_final(&self) -> bool {
        matches!(self, GateStatus::Passed { .. } | GateStatus::GaveUp { .. })
    }
}

/// Slope, spread and median of a window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WindowStats {
    /// Median.
    pub median: f64,
    /// Least-squares slope per row, percent of the median.
    pub slope_pct: f64,
    /// (max - min) / median, percent.
    pub spread_pct: f64,
}

impl WindowStats {
    /// The statistics of `values` (at least one).
    ///
    /// # Panics
    /// When `values` is empty (a programmer error).
    #[must_use]
    pub fn of(values: &[f64]) -> Self {
        assert!(!values.is_empty(), "statistics of no values");
        let summary = Summary::of(values).unwrap_or_default();
        let median = summary.median;
        let pct = |x: f64| if median == 0.0 { f64::INFINITY } else { 100.0 * x / median };
        Self { median, slope_pct: pct(slope(values)), spread_pct: pct(summary.max - summary.min) }
    }
}

/// Least-squares slope of `values` over their index (0 for fewer than two values).
#[must_use]
pub fn slope(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    // CAST: row counts are far below 2^52, exact in f64.
    #[allow(clippy::cast_precision_loss)]
    let xs = (0..n).map(|i| i as f64);
    #[allow(clippy::cast_precision_loss)]
    let mean_x = (n - 1) as f64 / 2.0;
    #[allow(clippy::cast_precision_loss)]
    let mean_y = values.iter().sum::<f64>() / n as f64;
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in xs.zip(values) {
        num += (x - mean_x) * (y - mean_y);
        den += (x - mean_x) * (x - mean_x);
    }
    num / den
}

/// Minimum, median and maximum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Smallest.
    pub min: f64,
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Largest.
    pub max: f64,
}

impl Summary {
    /// The summary of `values`, `None` when empty or when a value is not finite.
    #[must_use]
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 { sorted[n / 2] } else { f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]) };
        Some(Self { min: sorted[0], median, max: sorted[n - 1] })
    }
}

/// The stationarity gate over a series of row values.
#[derive(Clone, Debug)]
pub struct Gate {
    settings: GateSettings,
    values: Vec<f64>,
    /// The settled window being confirmed.
    settled: Option<(usize, usize)>,
    status: GateStatus,
}

impl Gate {
    /// A gate with no rows.
    ///
    /// # Errors
    /// [`GateSettingsError`] when the settings are unusable.
    pub fn new(settings: GateSettings) -> Result<Self, GateSettingsError> {
        settings.validate()?;
        Ok(Self {
            settings,
            values: Vec::new(),
            settled: None,
            status: GateStatus::Settling { detail: "no rows yet".into() },
        })
    }

    /// The settings.
    #[must_use]
    pub const fn settings(&self) -> &GateSettings {
        &self.settings
    }

    /// The status after the last row.
    #[must_use]
    pub const fn status(&self) -> &GateStatus {
        &self.status
    }

    /// Rows pushed.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.values.len()
    }

    /// Pushes one row's value and returns the new status. Rows after a final status are
    /// ignored.
    pub fn push(&mut self, value: f64) -> &GateStatus {
        if self.status.is_final() {
            return &self.status;
        }
        self.values.push(value);
        let status = match self.settled {
            Some(window) => self.confirm(window),
            None => self.settle(),
        };
        self.status = match status {
            GateStatus::Settling { detail } if self.values.len() >= self.settings.rows_max => {
                GateStatus::GaveUp { detail: format!("{} rows without settling; last: {detail}", self.values.len()) }
            }
            GateStatus::Confirming { .. } if self.values.len() >= self.settings.rows_max => GateStatus::GaveUp {
                detail: format!("{} rows: no room left to confirm the settled window", self.values.len()),
            },
            other => other,
        };
        &self.status
    }

    /// Checks `values` against the slope and spread limits.
    fn check_window(&self, what: &str, values: &[f64]) -> Result<WindowStats, String> {
        let stats = WindowStats::of(values);
        if !stats.slope_pct.is_finite() || stats.slope_pct.abs() > self.settings.slope_max_pct {
            return Err(format!(
                "{what}: |slope| {:.4} %/row > {} %",
                stats.slope_pct.abs(),
                self.settings.slope_max_pct
            ));
        }
        if !stats.spread_pct.is_finite() || stats.spread_pct > self.settings.spread_max_pct {
            return Err(format!("{what}: spread {:.3} % > {} %", stats.spread_pct, self.settings.spread_max_pct));
        }
        Ok(stats)
    }

    fn check_drift(&self, what: &str, before: f64, after: f64) -> Result<(), String> {
        let drift_pct = 100.0 * (after - before).abs() / before.abs();
        if !drift_pct.is_finite() || drift_pct > self.settings.drift_max_pct {
            return Err(format!("{what}: median drift {drift_pct:.3} % > {} %", self.settings.drift_max_pct));
        }
        Ok(())
    }

    fn settle(&mut self) -> GateStatus {
        let (w, n) = (self.settings.window_rows, self.values.len());
        if n < 2 * w {
            return GateStatus::Settling { detail: format!("{n} of {} rows for two windows", 2 * w) };
        }
        let previous = WindowStats::of(&self.values[n - 2 * w..n - w]);
        let result = self
            .check_window("window", &self.values[n - w..])
            .and_then(|latest| self.check_drift("window", previous.median, latest.median));
        match result {
            Ok(()) => {
                self.settled = Some((n - w, n));
                GateStatus::Confirming { settled_start: n - w, settled_end: n }
            }
            Err(detail) => GateStatus::Settling { detail },
        }
    }

    fn confirm(&mut self, (start, end): (usize, usize)) -> GateStatus {
        let n = self.values.len();
        if n < end + self.settings.confirm_rows {
            return GateStatus::Confirming { settled_start: start, settled_end: end };
        }
        let settled = WindowStats::of(&self.values[start..end]);
        let result = self
            .check_window("confirmation", &self.values[end..])
            .and_then(|c| self.check_drift("confirmation", settled.median, c.median));
        self.settled = None;
        match result {
            Ok(()) => GateStatus::Passed { settled_start: start, settled_end: end },
            Err(detail) => GateStatus::Settling { detail },
        }
    }
}

#[cfg(test)]
mod tests;
