//! What a bench produces and what its parts share: the rows of each arm, the setup made before
//! the first row, where the report goes, and the finished bench.

use std::path::Path;

use pm4_encoding::Target;
use serde_json::Value;

use super::arm::RowRecord;
use super::device::DeviceRecord;
use super::plot::{PlotArm, PlotData};
use crate::admission::AdmissionDecision;
use crate::model::GenerateOptions;
use crate::replay::ReplayConfig;
use crate::stationarity::GateStatus;

/// Arm names, in schedule order.
pub const ARMS: [&str; 2] = ["hip", "auto"];

/// A row with its place in the run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PhaseRow {
    /// Row index within the arm.
    pub index: usize,
    /// `warmup`, `gate` or `timed`.
    pub phase: &'static str,
    /// The measurement.
    #[serde(flatten)]
    pub record: RowRecord,
}

/// One arm's run.
#[derive(Debug)]
pub struct ArmRun {
    /// `hip` or `auto`.
    pub name: &'static str,
    /// The controller configuration.
    pub config: ReplayConfig,
    /// Every row.
    pub rows: Vec<PhaseRow>,
    /// The gate's final status.
    pub gate: GateStatus,
    /// Index of the first gate row.
    pub gate_first_row: usize,
    /// Route proof after warm-up and gate.
    pub lifecycle_proof: Value,
    /// Route proof after the timed rows.
    pub timed_proof: Value,
    /// The captured tape's fact after the timed rows ([`super::tape_record::fact`]).
    pub tape: Value,
    /// The session's admission decision.
    pub admission: AdmissionDecision,
}

/// What the bench set up before its first row.
#[derive(Debug)]
pub struct Setup {
    /// The model file.
    pub model_path: String,
    /// Its SHA-256.
    pub model_sha256: String,
    /// The prompt's token ids.
    pub prompt: Vec<u32>,
    /// Generation options per row.
    pub options: GenerateOptions,
    /// The architecture.
    pub target: Target,
    /// The device kind and why it was chosen.
    pub device: (String, String),
    /// The admission decision for this model and device.
    pub admission: AdmissionDecision,
    /// The device's facts.
    pub device_record: DeviceRecord,
    /// The model's facts beyond path and digest.
    pub model_record: serde_json::Map<String, Value>,
    /// The KV cache's layout fact.
    pub kv_cache: Value,
}

/// Where the report goes and when the bench started.
#[derive(Clone, Copy, Debug)]
pub struct Destination<'a> {
    /// The start, RFC 3339 UTC.
    pub utc: &'a str,
    /// The report file, which holds the predeclared promotion rule before the first timed row
    /// and the full report at the end (`None`: no file, as for `redline golden`).
    pub report: Option<&'a Path>,
    /// The plot file.
    pub plot: Option<&'a Path>,
}

/// A finished bench.
#[derive(Debug)]
pub struct Outcome {
    /// When it started, RFC 3339 UTC.
    pub utc: String,
    /// The JSON report.
    pub report: Value,
    /// The plot's data.
    pub plot: PlotData,
}

impl Outcome {
    /// The report's `valid`.
    #[must_use]
    pub fn valid(&self) -> bool {
        self.report["valid"] == Value::Bool(true)
    }
}

impl ArmRun {
    /// The arm's points on the plot.
    #[must_use]
    pub fn plot(&self) -> PlotArm {
        let settled = match self.gate {
            GateStatus::Passed { settled_start, settled_end } => {
                Some((self.gate_first_row + settled_start, self.gate_first_row + settled_end))
            }
            _ => None,
        };
        let rows = self.rows.iter().map(|r| (r.index, r.phase, r.record.tok_s)).collect();
        PlotArm { name: self.name.to_owned(), rows, settled }
    }
}
