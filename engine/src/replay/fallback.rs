//! The fail-closed rows in words: every way the retained route gives up, and every
//! reconfiguration that drops a plan, as one fixed sentence followed by the detail
//! (`docs/ARCHITECTURE.md`, "The replay controller", "Failing closed"). The sentences are part
//! of the route proof's contract: the route proof, `/redline/status`, `generate --json` and the
//! bench report all show them verbatim.

use std::fmt;

use serde::Serialize;
use tape_core::recorder::RecordError;

/// The sentence of a preparation failure after a successful ordinary warm-up.
pub const PREPARATION_FAILED: &str =
    "Preparation failed after a successful ordinary warm-up; later forwards fall back.";
/// The sentence of a retained token that failed on the device.
pub const REPLAY_FAILED: &str = "Replay failed; this forward errored; later forwards fall back.";
/// The sentence of a manual (certification) shadow validation that found a difference.
pub const MANUAL_SHADOW_FAILED: &str = "Manual shadow validation failed.";
/// The sentence of an automatic shadow validation (backend `shadow`, or `auto` validated
/// first) that found a difference.
pub const SHADOW_FAILED: &str = "Shadow validation failed; later forwards fall back.";
/// The sentence of a model load, reset or swap that dropped the controller's tape and plan.
pub const RECONFIGURED: &str = "Model reconfiguration invalidated the old plan.";

/// Which part of a capture failed, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureFailure {
    /// The step launched more than the recorder holds.
    RecorderCapacity,
    /// The step's kernarg bytes exceed the recorder's limit.
    KernargCapacity,
    /// A launch is not a valid tape entry (geometry, kernarg blob, pointers, effects).
    InvalidLaunch,
    /// An external (unrecorded) launch is malformed.
    InvalidExternal,
    /// The step launched nothing.
    EmptyCapture,
    /// The recorder was misused or poisoned by an earlier error.
    Recorder,
    /// The recorded step itself failed.
    StepFailed,
    /// The recordings do not calibrate into bindings (a pointer moved, a value is not affine
    /// in the position, or consecutive pairs calibrate differently).
    Calibration,
    /// Consecutive calibrated recordings differ where no binding explains it.
    Stability,
    /// A value that follows the position is not declared by its owner, or not as declared.
    Declaration,
    /// A launch's declared effects leave out a range its kernel declares it touches (a store
    /// into state declared as a read, say): the dependency derivation cannot be trusted.
    UndeclaredEffect,
    /// Capture completeness (gate 2): the device's kernel trace of a recorded forward is not
    /// the tape's launches plus its named external launches ([`super::census`]).
    Census,
}

impl CaptureFailure {
    /// The capture failure's sentence.
    #[must_use]
    pub const fn sentence(self) -> &'static str {
        match self {
            CaptureFailure::RecorderCapacity => "Capture aborted: the recorder's launch capacity was exceeded.",
            CaptureFailure::KernargCapacity => {
                "Capture aborted: the capture's kernarg bytes exceed the recorder's limit."
            }
            CaptureFailure::InvalidLaunch => {
                "Capture aborted: capture contract broken: a launch is not a valid tape entry."
            }
            CaptureFailure::InvalidExternal => {
                "Capture aborted: capture contract broken: an external launch is invalid."
            }
            CaptureFailure::EmptyCapture => "Capture aborted: capture contract broken: the step launched nothing.",
            CaptureFailure::Recorder => "Capture aborted: the recorder refused the capture.",
            CaptureFailure::StepFailed => "Capture aborted: the recorded step failed.",
            CaptureFailure::Calibration => {
                "Capture aborted: capture contract broken: the recordings do not calibrate into bindings."
            }
            CaptureFailure::Stability => {
                "Capture aborted: capture contract broken: consecutive recordings are not stable."
            }
            CaptureFailure::Declaration => {
                "Capture aborted: capture contract broken: a value that follows the position is not declared by its owner, or not as declared."
            }
            CaptureFailure::UndeclaredEffect => {
                "Capture aborted: capture contract broken: a launch's declared effects leave out memory its kernel touches."
            }
            CaptureFailure::Census => {
                "Capture aborted: capture completeness (gate 2): the device's kernel trace of a recorded forward is not the tape's launches plus its named external launches."
            }
        }
    }

    /// The failure a recorder error names.
    #[must_use]
    pub fn of_record_error(error: &RecordError) -> Self {
        match error {
            RecordError::CapacityExceeded { .. } => CaptureFailure::RecorderCapacity,
            RecordError::KernargTotal { .. } => CaptureFailure::KernargCapacity,
            RecordError::Launch { .. } => CaptureFailure::InvalidLaunch,
            RecordError::Declared { .. } => CaptureFailure::Declaration,
            RecordError::Uncovered { .. } => CaptureFailure::UndeclaredEffect,
            RecordError::External(_) => CaptureFailure::InvalidExternal,
            RecordError::Tape(_) => CaptureFailure::EmptyCapture,
            RecordError::Poisoned { first } => Self::of_record_error(first),
            RecordError::NotOpen { .. } | RecordError::AlreadyOpen { .. } => CaptureFailure::Recorder,
        }
    }
}

/// A capture that failed: which part, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct CaptureError {
    /// Which part failed.
    pub failure: CaptureFailure,
    /// Why, naming the positions and the launch.
    pub detail: String,
}

impl CaptureError {
    /// A failure of `failure` with `detail`.
    pub fn new(failure: CaptureFailure, detail: impl Into<String>) -> Self {
        Self { failure, detail: detail.into() }
    }
}

/// Why the controller fell back to ordinary launches for good (until a reset).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FallbackReason {
    /// A capture was aborted: recorder capacity, a launch that is not a valid tape entry,
    /// calibration or stability failure.
    CaptureAborted {
        /// Which part of the capture failed.
        failure: CaptureFailure,
        /// Why.
        detail: String,
    },
    /// Preparation failed after a successful ordinary warm-up.
    PreparationFailed {
        /// Why.
        detail: String,
    },
    /// A retained token failed on the device.
    ReplayFailed {
        /// The token's position.
        position: u32,
        /// Why.
        detail: String,
    },
    /// The shadow oracle found the routes different, or could not run.
    ShadowMismatch {
        /// Whether the validation was the manual (certification) one.
        manual: bool,
        /// Why.
        detail: String,
    },
}

impl FallbackReason {
    /// A capture abort from `error`.
    #[must_use]
    pub fn capture(error: CaptureError) -> Self {
        FallbackReason::CaptureAborted { failure: error.failure, detail: error.detail }
    }

    /// The row's fixed sentence.
    #[must_use]
    pub const fn sentence(&self) -> &'static str {
        match self {
            FallbackReason::CaptureAborted { failure, .. } => failure.sentence(),
            FallbackReason::PreparationFailed { .. } => PREPARATION_FAILED,
            FallbackReason::ReplayFailed { .. } => REPLAY_FAILED,
            FallbackReason::ShadowMismatch { manual: true, .. } => MANUAL_SHADOW_FAILED,
            FallbackReason::ShadowMismatch { manual: false, .. } => SHADOW_FAILED,
        }
    }

    /// The detail that follows the sentence.
    #[must_use]
    pub fn detail(&self) -> String {
        match self {
            FallbackReason::CaptureAborted { detail, .. }
            | FallbackReason::PreparationFailed { detail }
            | FallbackReason::ShadowMismatch { detail, .. } => detail.clone(),
            FallbackReason::ReplayFailed { position, detail } => format!("position {position}: {detail}"),
        }
    }

    /// The row's name (`capture_aborted`, `preparation_failed`, ...).
    #[must_use]
    pub const fn kind(&self) -> &'static str {
        match self {
            FallbackReason::CaptureAborted { .. } => "capture_aborted",
            FallbackReason::PreparationFailed { .. } => "preparation_failed",
            FallbackReason::ReplayFailed { .. } => "replay_failed",
            FallbackReason::ShadowMismatch { .. } => "shadow_mismatch",
        }
    }
}

/// The sentence, then `Detail:` and the detail.
impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Detail: {}", self.sentence(), self.detail())
    }
}

/// A fallback as the route proof shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FallbackProof {
    /// The row (`capture_aborted`, `preparation_failed`, `replay_failed`, `shadow_mismatch`).
    pub kind: &'static str,
    /// The capture failure's name, for `capture_aborted`.
    pub capture_failure: Option<CaptureFailure>,
    /// The row's fixed sentence.
    pub sentence: &'static str,
    /// What went wrong.
    pub detail: String,
}

impl From<&FallbackReason> for FallbackProof {
    fn from(reason: &FallbackReason) -> Self {
        Self {
            kind: reason.kind(),
            capture_failure: match reason {
                FallbackReason::CaptureAborted { failure, .. } => Some(*failure),
                _ => None,
            },
            sentence: reason.sentence(),
            detail: reason.detail(),
        }
    }
}

/// The last model load, reset or swap that reconfigured the controller, as the route proof
/// shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reconfiguration {
    /// Reconfigurations since the controller was made (survives the resets it counts).
    pub count: u64,
    /// [`RECONFIGURED`].
    pub sentence: &'static str,
    /// What was reconfigured and what the old plan was.
    pub detail: String,
}

impl fmt::Display for Reconfiguration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Detail: {}", self.sentence, self.detail)
    }
}
