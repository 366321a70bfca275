//! The replay controller: which route each forward takes, and every way the retained route
//! fails closed (`docs/ARCHITECTURE.md`, "The replay controller").
//!
//! # States
//! `Hip` (retained route disabled), `Armed`, `RecordingWarmup`, `Captured`, `ShadowValidated`,
//! `Ready`, `Fallback { reason }`.
//!
//! # Automatic lifecycle
//! [`ReplayController::configure_model_default`] after a successful model load: `Armed` when the
//! admission predicate holds or the backend was asked for explicitly, else `Hip`. Then every
//! eligible forward ([`eligibility`]: the next sequential single-token continuation) runs
//! ordinarily while the funnel records it (`RecordingWarmup`) until
//! [`ReplayConfig::warmup_samples`] recordings exist; the bindings are calibrated from the first
//! two and must come out identical from every later consecutive pair, and consecutive recordings
//! must be stable (tape-core's stability check) → `Captured` → preparation → `Ready` (backend
//! `auto`). With [`ReplayConfig::validate_first`], or backend `shadow`, the next
//! [`ReplayConfig::shadow_positions`] eligible forwards run the shadow oracle (each keeps the
//! ordinary arm's result) → `Ready` for `auto`, `ShadowValidated` for `shadow`: the `shadow`
//! backend is a diagnostic and never routes a product forward through its plan. In `Ready`, an
//! eligible forward whose transport matches replays the plan; any other forward runs ordinarily.
//!
//! # Manual (certification) lifecycle
//! With [`ReplayConfig::manual_capture`], forwards never capture. [`ReplayController::observe_shadow`]
//! records a sample; the second call calibrates, prepares and runs the shadow oracle at
//! `shadow_positions` positions → `ShadowValidated`; [`ReplayController::install_prepared_plan`]
//! → `Ready` (refused for backend `shadow`).
//!
//! # Failing closed
//! Each row's reason is a fixed sentence followed by the detail ([`fallback`]).
//!
//! | failure | current forward | later forwards |
//! |---|---|---|
//! | preparation fails after a successful ordinary warm-up | succeeds (it ran ordinarily) | sticky `Fallback`, ordinary path |
//! | replay execution fails (fault, timeout) | returns an error; no same-token retry | sticky `Fallback` |
//! | recorder capacity or capture contract broken | capture aborted, nothing installed | sticky `Fallback` until reset |
//! | manual shadow validation fails | no route change | sticky `Fallback` |
//! | model reload / reset / reallocation | — | tape, bindings, plans, observations, fallback cleared; re-armed |
//!
//! [`ReplayController::reset_for_model`] is the only way out of `Fallback`.

use hal::Device;
use serde::Serialize;
use tape_core::tape::Tape;

use crate::funnel::Funnel;
use crate::shadow::{self, ShadowReport};
use crate::workload::{Workload, WorkloadError};
use lowering::plan::{PreparedPlan, ReplayError, prepare_with};

mod capture;
pub mod census;
pub mod config;
pub mod eligibility;
pub mod fallback;
mod proof;

pub use capture::{calibrate_samples, capture_tape};

pub use census::CensusProof;
pub use config::{Backend, ConfigError, ConfigFlags, ReplayConfig};
pub use eligibility::{Ineligible, Step};
pub use fallback::{CaptureError, CaptureFailure, FallbackProof, FallbackReason, Reconfiguration};
pub use proof::{Observations, RouteProof, SubmissionProof};

use eligibility::Sequence;

/// The controller's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum State {
    /// Ordinary launches only.
    Hip,
    /// The next eligible forward starts a capture.
    Armed,
    /// Recording warm-up forwards.
    RecordingWarmup {
        /// Recordings so far.
        samples: usize,
    },
    /// A calibrated, stable tape exists; no plan yet.
    Captured,
    /// The prepared plan passed the shadow oracle.
    ShadowValidated,
    /// Eligible forwards replay the prepared plan.
    Ready,
    /// Ordinary launches only, until [`ReplayController::reset_for_model`].
    Fallback {
        /// Why.
        reason: FallbackReason,
    },
}

impl State {
    /// The state's name (`"ready"`, `"fallback"`, ...).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            State::Hip => "hip",
            State::Armed => "armed",
            State::RecordingWarmup { .. } => "recording_warmup",
            State::Captured => "captured",
            State::ShadowValidated => "shadow_validated",
            State::Ready => "ready",
            State::Fallback { .. } => "fallback",
        }
    }
}

/// The route one forward took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Ordinary launches.
    Ordinary,
    /// Ordinary launches, recorded.
    Recorded,
    /// Ordinary launches, then the shadow oracle's other arms.
    Shadow,
    /// The prepared plan.
    Retained,
}

/// What one forward did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ForwardReport {
    /// The position.
    pub position: u32,
    /// Whether the forward was eligible for the retained route.
    pub eligible: bool,
    /// Why not, when it was not.
    pub ineligible: Option<Ineligible>,
    /// The route taken.
    pub route: Route,
    /// Ordinary launches the funnel issued during the forward.
    pub ordinary_launches: u64,
    /// Retained submissions (plan replays) during the forward.
    pub retained_submissions: u64,
}

/// Why a forward failed.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The ordinary step failed.
    #[error("position {position}: {source}")]
    Workload {
        /// The position.
        position: u32,
        /// Why.
        source: Box<WorkloadError>,
    },
    /// The retained token failed; the controller is in `Fallback` and did not retry.
    #[error("position {position}: retained replay failed: {source}")]
    Replay {
        /// The position.
        position: u32,
        /// Why.
        source: ReplayError,
    },
    /// The shadow oracle could not run an arm (the controller is in `Fallback`).
    #[error("position {position}: shadow oracle: {source}")]
    Shadow {
        /// The position.
        position: u32,
        /// Why.
        source: Box<shadow::ShadowError>,
    },
}

/// Why a manual-lifecycle call was refused.
#[derive(Debug, thiserror::Error)]
pub enum ManualError {
    /// The call does not fit the controller's state.
    #[error("{operation} is not possible in state {state}")]
    WrongState {
        /// The call.
        operation: &'static str,
        /// The state.
        state: &'static str,
    },
    /// The backend is `shadow`, a diagnostic: its plan is never installed.
    #[error("install_prepared_plan: the shadow backend is a diagnostic and never routes product forwards")]
    ShadowIsDiagnostic,
    /// The recording's step failed.
    #[error(transparent)]
    Forward(Box<ForwardError>),
}

impl From<ForwardError> for ManualError {
    fn from(e: ForwardError) -> Self {
        ManualError::Forward(Box::new(e))
    }
}

/// The replay controller: see the module documentation.
#[derive(Debug)]
pub struct ReplayController {
    config: ReplayConfig,
    state: State,
    /// What `configure_model_default` decided, re-applied by `reset_for_model`.
    armed: bool,
    samples: Vec<Tape>,
    /// The device's kernel trace of each recorded sample's forward (gate 2's census).
    sample_traces: census::SampleTraces,
    /// The census of the captured tape.
    census: Option<CensusProof>,
    tape: Option<Tape>,
    plan: Option<PreparedPlan>,
    shadow_passed: u32,
    last_shadow: Option<ShadowReport>,
    last_eligible: Option<bool>,
    last_ineligible: Option<Ineligible>,
    sequence: Sequence,
    reconfiguration: Option<Reconfiguration>,
    observations: Observations,
}

impl ReplayController {
    /// A controller in `Hip` until [`ReplayController::configure_model_default`].
    #[must_use]
    pub fn new(config: ReplayConfig) -> Self {
        Self {
            config,
            state: State::Hip,
            armed: false,
            samples: Vec::new(),
            sample_traces: census::SampleTraces::default(),
            census: None,
            tape: None,
            plan: None,
            shadow_passed: 0,
            last_shadow: None,
            last_eligible: None,
            last_ineligible: None,
            sequence: Sequence::default(),
            reconfiguration: None,
            observations: Observations::default(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ReplayConfig {
        &self.config
    }

    /// The state.
    #[must_use]
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The counters.
    #[must_use]
    pub fn observations(&self) -> &Observations {
        &self.observations
    }

    /// The captured tape.
    #[must_use]
    pub fn tape(&self) -> Option<&Tape> {
        self.tape.as_ref()
    }

    /// The prepared plan.
    #[must_use]
    pub fn plan(&self) -> Option<&PreparedPlan> {
        self.plan.as_ref()
    }

    /// After a successful model load: `Armed` when `admitted` (the admission predicate) holds
    /// or the backend was asked for explicitly, `Hip` when the backend is `hip` or neither holds.
    pub fn configure_model_default(&mut self, admitted: bool) {
        self.armed = self.config.backend != Backend::Hip && (admitted || self.config.explicit);
        self.state = if self.armed { State::Armed } else { State::Hip };
    }

    /// Model load, reset or swap: the plan is released, tape, samples, observations and the
    /// fallback reason are dropped, and the controller is re-armed as `configure_model_default`
    /// last decided. The device's allocation identities restart with its own reset; a plan
    /// from before is stale there by epoch. The route proof's `reconfiguration` then says
    /// [`fallback::RECONFIGURED`], with `why` (what was reconfigured) and what the old plan was
    /// as the detail.
    pub fn reset_for_model<D: Device>(&mut self, device: &mut D, why: &str) {
        let old = match (self.plan.take(), &self.state) {
            (Some(plan), _) => {
                let identity = plan.submission_identity();
                // Best effort: a plan of an earlier epoch owns nothing any more.
                let released = match plan.release(device) {
                    Ok(()) => "released".to_owned(),
                    Err(e) => format!("released with an error: {e}"),
                };
                format!("the {} plan of {} dispatches ({released})", identity.transport.name(), identity.dispatches)
            }
            (None, State::Fallback { reason }) => format!("no plan; the fallback is cleared ({})", reason.kind()),
            (None, _) if self.tape.is_some() => "a tape without a plan".to_owned(),
            (None, _) => "no plan had been prepared".to_owned(),
        };
        let count = self.reconfiguration.as_ref().map_or(0, |r| r.count) + 1;
        self.reconfiguration = Some(Reconfiguration {
            count,
            sentence: fallback::RECONFIGURED,
            detail: format!("{why}; old plan: {old}"),
        });
        self.drop_samples();
        self.sample_traces.clear();
        self.census = None;
        self.tape = None;
        self.shadow_passed = 0;
        self.last_shadow = None;
        self.last_eligible = None;
        self.last_ineligible = None;
        self.sequence.restart();
        self.observations = Observations::default();
        self.state = if self.armed { State::Armed } else { State::Hip };
    }

    /// A new sequence starts (a new request, from a reset KV cache): the next forward continues
    /// nothing, so it is not eligible. A plan that is still valid stays installed.
    pub fn begin_sequence(&mut self) {
        self.sequence.restart();
    }

    /// Prompt tokens `tokens` at positions `first..first + tokens.len()` as one batched pass of
    /// ordinary launches ([`Workload::prefill`]). A prompt is never eligible: the pass counts as
    /// one ineligible, ordinary forward whose [`Ineligible::Prompt`] names its last position, and
    /// the sequence moves on past it, so that the continuation after it is the next one.
    ///
    /// # Errors
    /// [`ForwardError::Workload`] (at `first`) for an empty or over-long pass and for the
    /// workload's errors.
    pub fn prefill<D: Device>(
        &mut self,
        device: &mut D,
        funnel: &mut Funnel,
        workload: &mut dyn Workload,
        first: u32,
        tokens: &[u32],
    ) -> Result<ForwardReport, ForwardError> {
        let fail = |source: WorkloadError| ForwardError::Workload { position: first, source: Box::new(source) };
        let n = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
        if n == 0 || n > workload.prefill_chunk() {
            return Err(fail(WorkloadError::Init(format!(
                "a prefill pass of {n} tokens is outside 1..={} (the workload's prefill chunk)",
                workload.prefill_chunk()
            ))));
        }
        let last = first.checked_add(n - 1).ok_or_else(|| {
            fail(WorkloadError::Position { position: u32::MAX, max_position: workload.max_position() })
        })?;
        let ineligible = self.sequence.decide(last, Step::Prompt, self.tape.as_ref()).err();
        self.last_eligible = Some(false);
        self.last_ineligible.clone_from(&ineligible);
        self.observations.ineligible_forwards += 1;
        let launches_before = funnel.launches();
        workload.prefill(device, funnel, first, tokens).map_err(fail)?;
        self.observations.ordinary += 1;
        let ordinary_launches = funnel.launches() - launches_before;
        Ok(ForwardReport {
            position: last,
            eligible: false,
            ineligible,
            route: Route::Ordinary,
            ordinary_launches,
            retained_submissions: 0,
        })
    }

    fn fall_back(&mut self, reason: FallbackReason) {
        self.observations.fallbacks += 1;
        self.state = State::Fallback { reason };
    }

    /// One forward at `position`. `step` is what the adapter knows of it; whether it is
    /// eligible for the retained route the controller decides before it runs
    /// ([`eligibility`]): the next sequential single-token continuation, at a position every
    /// binding of the tape has a value for.
    ///
    /// # Errors
    /// [`ForwardError`]: the ordinary step failed, or the retained token failed (the controller
    /// is then in `Fallback`; the token is not retried).
    pub fn forward<D: Device>(
        &mut self,
        device: &mut D,
        funnel: &mut Funnel,
        workload: &mut dyn Workload,
        position: u32,
        step: Step,
    ) -> Result<ForwardReport, ForwardError> {
        let decision = self.sequence.decide(position, step, self.tape.as_ref());
        let eligible = decision.is_ok();
        let ineligible = decision.err();
        self.last_eligible = Some(eligible);
        self.last_ineligible.clone_from(&ineligible);
        if eligible {
            self.observations.eligible_forwards += 1;
        } else {
            self.observations.ineligible_forwards += 1;
        }
        workload
            .prepare_step(device, funnel, position)
            .map_err(|source| ForwardError::Workload { position, source: Box::new(source) })?;
        let launches_before = funnel.launches();
        let submitted_before = self.plan.as_ref().map_or(0, PreparedPlan::submitted);
        let route = match self.state {
            State::Ready
                if eligible
                    && self
                        .plan
                        .as_ref()
                        .is_some_and(|p| p.submission_identity().transport == self.config.transport) =>
            {
                self.retained(device, position)?;
                Route::Retained
            }
            State::Armed | State::RecordingWarmup { .. } if eligible && !self.config.manual_capture => {
                self.recorded(device, funnel, workload, position)?;
                Route::Recorded
            }
            State::Captured if eligible && self.config.validates() && self.plan.is_some() => {
                self.shadow_forward(device, funnel, workload, position)?;
                Route::Shadow
            }
            _ => {
                workload
                    .step(device, funnel, position)
                    .map_err(|source| ForwardError::Workload { position, source: Box::new(source) })?;
                Route::Ordinary
            }
        };
        let ordinary_launches = funnel.launches() - launches_before;
        // A plan installed during this forward (the last warm-up) starts at 0.
        let retained_submissions =
            self.plan.as_ref().map_or(0, PreparedPlan::submitted).saturating_sub(submitted_before);
        if matches!(route, Route::Ordinary | Route::Recorded) {
            self.observations.retained_submissions_in_ordinary_forwards += retained_submissions;
        }
        match route {
            Route::Retained => {
                self.observations.retained += 1;
                self.observations.ordinary_launches_in_retained_forwards += ordinary_launches;
                if self.observations.replay_positions.len() < Observations::POSITIONS_MAX {
                    self.observations.replay_positions.push(position);
                }
            }
            Route::Ordinary => self.observations.ordinary += 1,
            Route::Recorded => self.observations.recorded += 1,
            Route::Shadow => self.observations.shadow += 1,
        }
        Ok(ForwardReport { position, eligible, ineligible, route, ordinary_launches, retained_submissions })
    }

    fn retained<D: Device>(&mut self, device: &mut D, position: u32) -> Result<(), ForwardError> {
        // PANIC: the caller matched `Ready` with a plan.
        let plan = self.plan.as_mut().expect("a Ready controller has a plan");
        match plan.replay(device, position, self.config.timeout) {
            Ok(_) => Ok(()),
            Err(source) => {
                self.fall_back(FallbackReason::ReplayFailed { position, detail: source.to_string() });
                Err(ForwardError::Replay { position, source })
            }
        }
    }

    /// A recorded ordinary forward; after the last warm-up sample, calibration and preparation.
    fn recorded<D: Device>(
        &mut self,
        device: &mut D,
        funnel: &mut Funnel,
        workload: &mut dyn Workload,
        position: u32,
    ) -> Result<(), ForwardError> {
        if self.record_sample(device, funnel, workload, position)?
            && self.samples.len() >= self.config.warmup_samples.max(2)
        {
            if let Err(error) = self.finish_warmup(device, workload) {
                self.drop_samples();
                self.fall_back(FallbackReason::capture(error));
                return Ok(());
            }
            self.install(device);
        }
        Ok(())
    }

    /// Runs the step at `position` while recording it; returns whether a sample was added. A
    /// capture that cannot start or finish is aborted (sticky fallback, samples dropped; the step
    /// still runs ordinarily); a failing step is the forward's error.
    fn record_sample<D: Device>(
        &mut self,
        device: &mut D,
        funnel: &mut Funnel,
        workload: &mut dyn Workload,
        position: u32,
    ) -> Result<bool, ForwardError> {
        let workload_error = |source| ForwardError::Workload { position, source: Box::new(source) };
        if let Err(e) = funnel.begin_capture(position) {
            funnel.abort_capture();
            self.drop_samples();
            self.fall_back(FallbackReason::capture(CaptureError::new(
                CaptureFailure::of_record_error(&e),
                format!("position {position}: {e}"),
            )));
            return workload.step(device, funnel, position).map(|()| false).map_err(workload_error);
        }
        // The device's own record of what ran, for the census: made where the packets run.
        let traced = device.begin_kernel_trace();
        if let Err(source) = workload.step(device, funnel, position) {
            funnel.abort_capture();
            let _ = device.take_kernel_trace();
            self.drop_samples();
            self.fall_back(FallbackReason::capture(CaptureError::new(
                CaptureFailure::StepFailed,
                format!("position {position}: {source}"),
            )));
            return Err(workload_error(source));
        }
        let recorded = funnel.finish_capture();
        let trace = match device.take_kernel_trace() {
            Ok(rows) => traced.zip(rows),
            Err(e) => {
                self.drop_samples();
                self.fall_back(FallbackReason::capture(CaptureError::new(
                    CaptureFailure::Census,
                    format!("position {position}: the device's kernel trace of the recorded forward: {e}"),
                )));
                return Ok(false);
            }
        };
        match recorded {
            Ok(tape) => {
                self.samples.push(tape);
                self.sample_traces.push(position, trace);
                self.state = State::RecordingWarmup { samples: self.samples.len() };
                Ok(true)
            }
            Err(e) => {
                self.drop_samples();
                self.fall_back(FallbackReason::capture(CaptureError::new(
                    CaptureFailure::of_record_error(&e),
                    format!("position {position}: {e}"),
                )));
                Ok(false)
            }
        }
    }

    /// Drops the warm-up's recordings and their traces.
    fn drop_samples(&mut self) {
        self.samples.clear();
        self.sample_traces.clear();
    }

    /// Calibrates the samples into the tape (`Captured`), or says why not.
    /// The census (gate 2) reconciles every recorded forward's kernel trace with the tape first.
    fn finish_warmup<D: Device>(&mut self, device: &D, workload: &dyn Workload) -> Result<(), CaptureError> {
        let samples = std::mem::take(&mut self.samples);
        let traces = std::mem::take(&mut self.sample_traces);
        let tape = calibrate_samples(device, workload, samples)?;
        self.census = Some(traces.reconcile(&tape)?);
        self.tape = Some(tape);
        self.state = State::Captured;
        Ok(())
    }

    /// Prepares the captured tape: `Ready` (auto), or stays `Captured` awaiting shadow
    /// validation (shadow, auto validated first, manual); a failure is a sticky fallback.
    fn install<D: Device>(&mut self, device: &mut D) {
        // PANIC: called right after `finish_warmup` succeeded.
        let tape = self.tape.as_ref().expect("a captured tape");
        match prepare_with(device, tape, self.config.transport) {
            Ok(plan) => {
                self.plan = Some(plan);
                if self.config.backend == Backend::Auto && !self.config.manual_capture && !self.config.validate_first {
                    self.state = State::Ready;
                }
            }
            Err(e) => self.fall_back(FallbackReason::PreparationFailed { detail: e.to_string() }),
        }
    }

    /// A validating forward (backend `shadow`, or `auto` validated first): the oracle at
    /// `position`, the forward's result the ordinary arm's. Enough passes make an `auto` route
    /// `Ready`; the `shadow` backend is a diagnostic and stops in `ShadowValidated`, its later
    /// forwards ordinary.
    fn shadow_forward<D: Device>(
        &mut self,
        device: &mut D,
        funnel: &mut Funnel,
        workload: &mut dyn Workload,
        position: u32,
    ) -> Result<(), ForwardError> {
        let report = self.run_shadow(device, funnel, workload, &[position])?;
        if report.is_exact() {
            self.shadow_passed += 1;
            if self.shadow_passed >= self.config.shadow_positions {
                self.state = if self.config.backend == Backend::Auto { State::Ready } else { State::ShadowValidated };
            }
        } else {
            self.fall_back(FallbackReason::ShadowMismatch { manual: false, detail: divergence_summary(&report) });
        }
        Ok(())
    }

    fn run_shadow<D: Device>(
        &mut self,
        device: &mut D,
        funnel: &mut Funnel,
        workload: &mut dyn Workload,
        positions: &[u32],
    ) -> Result<ShadowReport, ForwardError> {
        let (Some(tape), Some(plan)) = (self.tape.as_ref(), self.plan.as_mut()) else {
            unreachable!("the shadow oracle runs only with a tape and a plan")
        };
        match shadow::run(device, funnel, workload, tape, plan, positions, self.config.timeout) {
            Ok(report) => {
                self.last_shadow = Some(report.clone());
                Ok(report)
            }
            Err(source) => {
                let position = positions.first().copied().unwrap_or(0);
                let manual = self.config.manual_capture;
                self.fall_back(FallbackReason::ShadowMismatch { manual, detail: source.to_string() });
                Err(ForwardError::Shadow { position, source: Box::new(source) })
            }
        }
    }

    /// Manual lifecycle: the first call records the step at `position`; the second records it
    /// again (at a later position), calibrates, prepares, and runs the shadow oracle at the
    /// next [`ReplayConfig::shadow_positions`] positions → `ShadowValidated`, or a sticky
    /// `Fallback` when the oracle finds a difference (the routes do not change either way until
    /// [`ReplayController::install_prepared_plan`]). Returns the oracle's report after the
    /// second call.
    ///
    /// # Errors
    /// [`ManualError`]: wrong state, or the recorded step failed.
    pub fn observe_shadow<D: Device>(
        &mut self,
        device: &mut D,
        funnel: &mut Funnel,
        workload: &mut dyn Workload,
        position: u32,
    ) -> Result<Option<ShadowReport>, ManualError> {
        match self.state {
            State::Armed | State::RecordingWarmup { .. } => {}
            ref other => return Err(ManualError::WrongState { operation: "observe_shadow", state: other.name() }),
        }
        workload
            .prepare_step(device, funnel, position)
            .map_err(|source| ForwardError::Workload { position, source: Box::new(source) })?;
        self.record_sample(device, funnel, workload, position)?;
        if self.samples.len() < 2 {
            return Ok(None);
        }
        if let Err(error) = self.finish_warmup(device, workload) {
            self.drop_samples();
            self.fall_back(FallbackReason::capture(error));
            return Ok(None);
        }
        self.install(device);
        if self.plan.is_none() {
            return Ok(None);
        }
        let count = self.config.shadow_positions.max(1);
        let positions: Vec<u32> = (1..=count).filter_map(|i| position.checked_add(i)).collect();
        let report = self.run_shadow(device, funnel, workload, &positions)?;
        if report.is_exact() {
            self.state = State::ShadowValidated;
        } else {
            self.fall_back(FallbackReason::ShadowMismatch { manual: true, detail: divergence_summary(&report) });
        }
        Ok(Some(report))
    }

    /// Manual lifecycle: `ShadowValidated` → `Ready`.
    ///
    /// # Errors
    /// [`ManualError::ShadowIsDiagnostic`] when the backend is `shadow` (a diagnostic: it
    /// never routes product forwards); [`ManualError::WrongState`] in any state but
    /// `ShadowValidated`.
    pub fn install_prepared_plan(&mut self) -> Result<(), ManualError> {
        if self.config.backend == Backend::Shadow {
            return Err(ManualError::ShadowIsDiagnostic);
        }
        if self.state != State::ShadowValidated {
            return Err(ManualError::WrongState { operation: "install_prepared_plan", state: self.state.name() });
        }
        self.state = State::Ready;
        Ok(())
    }

    /// The route proof as of now.
    #[must_use]
    pub fn route_proof(&self) -> RouteProof {
        RouteProof {
            request: self.config.clone(),
            transport: self.plan.as_ref().map(|p| p.submission_identity().transport),
            last_eligible: self.last_eligible,
            last_ineligible: self.last_ineligible.clone(),
            state: self.state.name(),
            fallback_reason: match &self.state {
                State::Fallback { reason } => Some(reason.to_string()),
                _ => None,
            },
            fallback: match &self.state {
                State::Fallback { reason } => Some(reason.into()),
                _ => None,
            },
            reconfiguration: self.reconfiguration.clone(),
            tape: self.tape.as_ref().map(Tape::identity),
            submission: self.plan.as_ref().map(|p| p.submission_identity().into()),
            shadow: self.last_shadow.clone(),
            observations: self.observations.clone(),
            census: self.census.clone(),
        }
    }
}

fn divergence_summary(report: &ShadowReport) -> String {
    if report.positions.is_empty() {
        return "no position was compared".into();
    }
    let shown: Vec<String> = report
        .divergences
        .iter()
        .take(4)
        .map(|d| {
            format!(
                "position {} surface {} arm {:?} first differs at byte {}{}",
                d.position,
                d.surface,
                d.arm,
                d.offset,
                if d.in_guard { " (guard)" } else { "" }
            )
        })
        .collect();
    format!("{} divergence(s): {}", report.divergences.len(), shown.join("; "))
}
