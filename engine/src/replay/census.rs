//! Capture completeness (gate 2): the recorded forwards reconciled against the device's own
//! kernel trace.
//!
//! The recorder's counts cannot show a launch that bypassed it (`compute launches = retained
//! dispatches + external launches` would hold for a smaller, self-consistent tape). So while the
//! controller records a warm-up forward it also asks the device to keep a kernel trace of what
//! its packet processor ran ([`hal::Device::begin_kernel_trace`]), and once the recordings are
//! calibrated into a tape each recorded position's trace must be exactly the tape's launches at
//! that position plus the launches the tape names as external, kernel by kernel (symbol, grid,
//! work-group, LDS) and in order ([`tape_core::census::reconcile_forward`]). A difference is a
//! capture failure ([`CaptureFailure::Census`]) naming the position and the first launch that
//! differs: the route never reaches `Ready`.
//!
//! A device that keeps no trace in the process (a real ROCr runtime) gives no census here: the
//! proof says so ([`CensusProof::trace`]), and `redline census` reconciles a tape with a
//! rocprofv3 trace taken from outside.

use serde::Serialize;
use tape_core::census::trace::TraceRow;
use tape_core::census::{PositionCensus, reconcile_forward};
use tape_core::tape::Tape;

use super::{CaptureError, CaptureFailure};

/// The census of a captured tape, as the route proof shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CensusProof {
    /// Who made the trace (the device's packet processor), or why there is none.
    pub trace: String,
    /// Every recorded position: its compute launches (from the trace), the tape's retained
    /// dispatches and external launches, and the verdict.
    pub positions: Vec<PositionCensus>,
}

impl CensusProof {
    /// Whether every position reconciled (vacuously, with no trace).
    #[must_use]
    pub fn reconciled(&self) -> bool {
        self.positions.iter().all(PositionCensus::reconciled)
    }
}

/// A recorded forward's trace and who made it; `None` when the device kept none.
type Traced = Option<(&'static str, Vec<TraceRow>)>;

/// The trace of each recorded warm-up forward, with its producer.
#[derive(Clone, Debug, Default)]
pub(crate) struct SampleTraces {
    traces: Vec<(u32, Traced)>,
}

impl SampleTraces {
    /// The trace of the forward recorded at `position` (`None`: the device kept none).
    pub(crate) fn push(&mut self, position: u32, trace: Traced) {
        self.traces.push((position, trace));
    }

    pub(crate) fn clear(&mut self) {
        self.traces.clear();
    }

    /// Reconciles every recorded forward with `tape`.
    ///
    /// # Errors
    /// [`CaptureFailure::Census`] naming the first position that does not reconcile and how.
    pub(crate) fn reconcile(self, tape: &Tape) -> Result<CensusProof, CaptureError> {
        let mut producer = None;
        let mut positions = Vec::with_capacity(self.traces.len());
        for (position, trace) in self.traces {
            let Some((by, rows)) = trace else {
                return Ok(CensusProof {
                    trace: "none: this device keeps no kernel trace in the process; reconcile a rocprofv3 \
                            trace of ordinary forwards with `redline census`"
                        .to_owned(),
                    positions: Vec::new(),
                });
            };
            producer.get_or_insert(by);
            let census = reconcile_forward(tape, position, &rows);
            if !census.reconciled() {
                return Err(CaptureError::new(
                    CaptureFailure::Census,
                    format!("gate 2 (capture completeness): position {position}: {}", verdict(&census)),
                ));
            }
            positions.push(census);
        }
        Ok(CensusProof { trace: producer.unwrap_or("no recorded forward").to_owned(), positions })
    }
}

/// What a position's census found, in words.
fn verdict(census: &PositionCensus) -> String {
    use tape_core::census::Verdict;
    let counts = format!(
        "{} compute launches in the device's trace, {} retained dispatches + {} external launches in the tape",
        census.compute_launches, census.retained_dispatches, census.external_launches
    );
    match &census.verdict {
        Verdict::Reconciled => format!("reconciled ({counts})"),
        Verdict::Differs { difference } => format!("{difference} ({counts})"),
        Verdict::ExternalMissing { missing } => {
            format!("{} external launch(es) of {} missing from the trace ({counts})", missing.missing, missing.name)
        }
        Verdict::NotCertified { reason } => format!("not a certified position: {reason}"),
    }
}
