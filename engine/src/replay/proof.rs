//! What a route proof records: the counts of what forwards did, the plan's submission identity
//! as shown, and the proof itself ([`RouteProof`]).

use serde::Serialize;
use tape_core::tape::TapeIdentity;

use super::census::CensusProof;
use super::config::ReplayConfig;
use super::eligibility::Ineligible;
use super::fallback::{FallbackProof, Reconfiguration};
use crate::shadow::ShadowReport;
use lowering::plan::{SubmissionIdentity, Transport};

/// Counts of what forwards did since the last reset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Observations {
    /// Forwards with eligibility set.
    pub eligible_forwards: u64,
    /// Forwards without.
    pub ineligible_forwards: u64,
    /// Forwards that ran ordinarily without recording.
    pub ordinary: u64,
    /// Forwards that ran ordinarily while recording.
    pub recorded: u64,
    /// Forwards that ran the shadow oracle.
    pub shadow: u64,
    /// Forwards that replayed the plan.
    pub retained: u64,
    /// Fallbacks entered.
    pub fallbacks: u64,
    /// Positions replayed, in order (the first [`Observations::POSITIONS_MAX`]).
    pub replay_positions: Vec<u32>,
    /// Ordinary launches issued by forwards counted as retained: must be 0.
    pub ordinary_launches_in_retained_forwards: u64,
    /// Retained submissions made by forwards counted as ordinary or recorded: must be 0.
    pub retained_submissions_in_ordinary_forwards: u64,
}

impl Observations {
    /// Replay positions kept, at most.
    pub const POSITIONS_MAX: usize = 1 << 16;
}

/// The serializable record of which route a run took and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RouteProof {
    /// The configuration asked for.
    pub request: ReplayConfig,
    /// The prepared plan's transport, if one is installed.
    pub transport: Option<Transport>,
    /// Whether the last forward was eligible.
    pub last_eligible: Option<bool>,
    /// Why the last forward was not eligible, when it was not.
    pub last_ineligible: Option<Ineligible>,
    /// The controller's state name.
    pub state: &'static str,
    /// In `Fallback`: the row's fixed sentence, then `Detail:` and the detail.
    pub fallback_reason: Option<String>,
    /// In `Fallback`: the row, its sentence and its detail apart.
    pub fallback: Option<FallbackProof>,
    /// The last model load, reset or swap that reconfigured the controller.
    pub reconfiguration: Option<Reconfiguration>,
    /// The tape's identity, once captured.
    pub tape: Option<TapeIdentity>,
    /// The plan's submission identity, once prepared.
    pub submission: Option<SubmissionProof>,
    /// The last shadow oracle run.
    pub shadow: Option<ShadowReport>,
    /// Counts and observed replay positions.
    pub observations: Observations,
    /// Capture completeness (gate 2): the recorded forwards' launches reconciled against the
    /// device's own kernel trace, per position; `None` until a tape is captured.
    pub census: Option<CensusProof>,
}

/// [`SubmissionIdentity`] as the route proof shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SubmissionProof {
    /// `pm4` or `aql`.
    pub transport: Transport,
    /// Dispatches per token.
    pub dispatches: usize,
    /// AQL packets per token.
    pub packets: u32,
    /// The plan's queue id.
    pub queue_id: u32,
    /// Queues used.
    pub queues: u32,
    /// Wait-free phases.
    pub phases: usize,
    /// PM4 dwords (0 for AQL).
    pub pm4_dwords: usize,
}

impl From<SubmissionIdentity> for SubmissionProof {
    fn from(s: SubmissionIdentity) -> Self {
        Self {
            transport: s.transport,
            dispatches: s.dispatches,
            packets: s.packets_per_token,
            queue_id: s.queue.0.get(),
            queues: s.queues,
            phases: s.phases,
            pm4_dwords: s.pm4_dwords,
        }
    }
}
