//! `redline profile`: the attribution-only dispatch profiler (README, "`redline profile`").
//!
//! [`run`] loads a model on a device, drives the replay controller the ordinary way (position 0
//! a prompt step, then continuations of the fixed prompt of [`FixedPrompt`]) until it has
//! recorded, calibrated and prepared its tape and replayed one token from it (`Ready`), and
//! takes that certified tape. It then prepares an instrumented copy of it beside the certified
//! plan ([`lowering::profile`]: GPU-clock timestamps before the first dispatch and after every
//! dispatch, in objects of its own), runs it for the requested tokens at the positions after the
//! controller's last one, each after the step's host preparation, and reads the timestamps.
//! Finally the controller takes the next position itself: it must replay it (route `Retained`,
//! state `Ready`, the same tape identity as before), and its logits must be the instrumented
//! body's at the same position, bit for bit.
//!
//! What the numbers are and are not is [`DISCLAIMER`]; [`report`] turns the timestamps into spans.

use std::time::Duration;

use gguf::Gguf;
use hal::Device;
use lowering::profile::InstrumentedIb;
use lowering::profile::plan::{InstrumentedPlan, ProfileError as PlanError, Timestamps};
use tape_core::tape::{Tape, TapeIdentity};

use crate::funnel::Funnel;
use crate::model::language::{self, LanguageModel};
use crate::model::{FixedPrompt, LoadError};
use crate::replay::{Backend, ForwardError, ReplayConfig, ReplayController, Route, Step, SubmissionProof};
use crate::workload::WorkloadError;

pub mod report;
pub mod svg;

pub use lowering::profile::Instrument;
pub use report::{Profile, build};

/// What every report of the profiler says, in its own words, beside both identities.
pub const DISCLAIMER: &str = "Attribution only. The profiled body is an instrumented copy of the certified tape, not \
     the certified tape: GPU-clock timestamps (COPY_DATA) were inserted before its first dispatch and after every \
     dispatch, so it has more dwords and another sequence hash than the certified body (both are printed). Each span \
     includes the boundary packets before its dispatch (waits, cache acquires) and its register writes. This is not \
     route proof and not kernel timing.";

/// Continuations the controller may take to reach `Ready` and replay once, at most.
const READY_POSITIONS_MAX: u32 = 32;

/// What to profile.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    /// KV-cache positions of the model.
    pub context: u32,
    /// Tokens the instrumented body runs.
    pub tokens: u32,
    /// How the body is instrumented.
    pub instrument: Instrument,
    /// The longest one token may take.
    pub timeout: Duration,
}

/// Why a profile was not made.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The model did not load (boxed: the error is large).
    #[error(transparent)]
    Load(Box<LoadError>),
    /// Too few positions for the warm-up and the tokens.
    #[error(
        "--context {context} leaves no room for the warm-up and {tokens} profiled tokens (it needs at least {needed})"
    )]
    Context {
        /// The context.
        context: u32,
        /// Tokens asked for.
        tokens: u32,
        /// Positions needed.
        needed: u32,
    },
    /// An ordinary or retained forward failed (boxed: the error is large).
    #[error(transparent)]
    Forward(Box<ForwardError>),
    /// The host preparation of a profiled position failed.
    #[error("position {position}: {source}")]
    Prepare {
        /// The position.
        position: u32,
        /// Why.
        source: WorkloadError,
    },
    /// The controller did not reach the retained route.
    #[error("the retained route was not reached after {positions} positions: state {state}{}", reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default())]
    NotReady {
        /// Positions run.
        positions: u32,
        /// The controller's state.
        state: &'static str,
        /// Its fallback reason.
        reason: Option<String>,
    },
    /// The instrumented body could not be prepared or run (boxed: the error is large).
    #[error("the instrumented body: {0}")]
    Plan(Box<PlanError>),
}

impl From<LoadError> for ProfileError {
    fn from(error: LoadError) -> Self {
        Self::Load(Box::new(error))
    }
}

impl From<ForwardError> for ProfileError {
    fn from(error: ForwardError) -> Self {
        Self::Forward(Box::new(error))
    }
}

impl From<PlanError> for ProfileError {
    fn from(error: PlanError) -> Self {
        Self::Plan(Box::new(error))
    }
}

/// The certified route before and after profiling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteCheck {
    /// The controller's tape identity before profiling.
    pub before: TapeIdentity,
    /// After.
    pub after: Option<TapeIdentity>,
    /// The certified plan's submission identity before.
    pub submission_before: SubmissionProof,
    /// After.
    pub submission_after: Option<SubmissionProof>,
    /// The controller's state after its forward at the first profiled position.
    pub state_after: &'static str,
    /// The route that forward took.
    pub route_after: Route,
    /// Whether its logits are the instrumented body's at that position, bit for bit.
    pub logits_match: bool,
}

/// What [`run`] measured, before [`build`] makes spans of it.
#[derive(Debug)]
pub struct Measured {
    /// The certified tape.
    pub tape: Tape,
    /// The instrumented body.
    pub body: InstrumentedIb,
    /// The certified body's dwords on this device.
    pub certified_dwords: usize,
    /// The GPU clock's rate.
    pub timestamp_frequency_hz: u64,
    /// One run per profiled token.
    pub runs: Vec<Timestamps>,
    /// The certified route before and after.
    pub route: RouteCheck,
    /// The model's architecture.
    pub architecture: &'static str,
}

/// Profiles the model in `file` on `device` (module documentation). `progress` receives a line
/// at each stage.
///
/// # Errors
/// [`ProfileError`].
pub fn run<D: Device>(
    device: &mut D,
    file: &Gguf,
    request: &Request,
    progress: &mut dyn FnMut(&str),
) -> Result<Measured, ProfileError> {
    let needed = READY_POSITIONS_MAX + request.tokens + 1;
    if request.context < needed {
        return Err(ProfileError::Context { context: request.context, tokens: request.tokens, needed });
    }
    progress("loading the model");
    let mut model = language::load(device, file, request.context)?;
    let bos = FixedPrompt::bos_of(file, model.vocab());
    let config = ReplayConfig { backend: Backend::Auto, explicit: true, ..ReplayConfig::default() };
    let mut controller = ReplayController::new(config.clone());
    controller.configure_model_default(true);
    let mut funnel = Funnel::new(config.capacity_launches);
    progress("recording, calibrating and preparing the retained route");
    let first = reach_ready(device, &mut funnel, &mut controller, model.as_mut(), bos)?;
    // PANIC: reach_ready returns only once a plan replayed, so the tape and plan exist.
    let tape = controller.tape().expect("a Ready controller has a tape").clone();
    let before = tape.identity();
    let submission_before = controller.plan().expect("a Ready controller has a plan").submission_identity().into();
    progress("preparing the instrumented body");
    let mut plan = InstrumentedPlan::prepare(device, &tape, request.instrument)?;
    let measured = profile_tokens(device, &mut funnel, &mut plan, model.as_mut(), bos, first, request, progress);
    let (runs, instrumented_logits) = match measured {
        Ok(measured) => measured,
        Err(error) => {
            plan.release(device);
            return Err(error);
        }
    };
    progress("checking the certified route at the first profiled position");
    let mut prompt = FixedPrompt::new(model.as_mut(), bos);
    let report = controller.forward(device, &mut funnel, &mut prompt, first, Step::Continuation)?;
    let logits = model.logits(device).map_err(|source| ProfileError::Prepare { position: first, source })?;
    let route = RouteCheck {
        before,
        after: controller.tape().map(Tape::identity),
        submission_before,
        submission_after: controller.plan().map(|p| p.submission_identity().into()),
        state_after: controller.state().name(),
        route_after: report.route,
        logits_match: bits(&logits) == bits(&instrumented_logits),
    };
    let body = plan.body().clone();
    let certified_dwords = plan.certified_dwords();
    plan.release(device);
    Ok(Measured {
        tape,
        body,
        certified_dwords,
        timestamp_frequency_hz: device.timestamp_frequency_hz(),
        runs,
        route,
        architecture: model.architecture(),
    })
}

/// Runs the controller from position 0 until it has replayed one token; returns the next
/// position.
fn reach_ready<D: Device>(
    device: &mut D,
    funnel: &mut Funnel,
    controller: &mut ReplayController,
    model: &mut dyn LanguageModel,
    bos: u32,
) -> Result<u32, ProfileError> {
    let mut prompt = FixedPrompt::new(model, bos);
    for position in 0..=READY_POSITIONS_MAX {
        let step = if position == 0 { Step::Prompt } else { Step::Continuation };
        let report = controller.forward(device, funnel, &mut prompt, position, step)?;
        if report.route == Route::Retained {
            return Ok(position + 1);
        }
        if controller.state().name() == "fallback" || controller.state().name() == "hip" {
            break;
        }
    }
    let proof = controller.route_proof();
    Err(ProfileError::NotReady {
        positions: READY_POSITIONS_MAX + 1,
        state: controller.state().name(),
        reason: proof.fallback_reason,
    })
}

/// The instrumented body at `first..first + tokens`, each after its host preparation; returns
/// the runs and the logits of the first.
#[allow(clippy::too_many_arguments)]
fn profile_tokens<D: Device>(
    device: &mut D,
    funnel: &mut Funnel,
    plan: &mut InstrumentedPlan,
    model: &mut dyn LanguageModel,
    bos: u32,
    first: u32,
    request: &Request,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Timestamps>, Vec<f32>), ProfileError> {
    let mut runs = Vec::with_capacity(usize::try_from(request.tokens).unwrap_or(0));
    let mut first_logits = Vec::new();
    for position in first..first + request.tokens {
        progress(&format!("instrumented token at position {position}"));
        {
            let mut prompt = FixedPrompt::new(&mut *model, bos);
            crate::workload::Workload::prepare_step(&mut prompt, device, funnel, position)
                .map_err(|source| ProfileError::Prepare { position, source })?;
        }
        runs.push(plan.run(device, position, request.timeout)?);
        if position == first {
            first_logits = model.logits(device).map_err(|source| ProfileError::Prepare { position, source })?;
        }
    }
    Ok((runs, first_logits))
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}
