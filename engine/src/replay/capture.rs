//! Capture outside the controller's lifecycle: recordings calibrated into a tape
//! ([`calibrate_samples`], which the controller's warm-up uses too) and a tape recorded at given
//! positions ([`capture_tape`], for tools and tests).

use hal::Device;
use tape_core::calibrate::{CalibrationError, Sample, calibrate_declared};
use tape_core::stability;
use tape_core::tape::Tape;

use super::{CaptureError, CaptureFailure};
use crate::funnel::Funnel;
use crate::workload::Workload;
use lowering::lower::{slot_by_artifact, with_hidden_grid_bindings};

/// The tape of a step from recordings of it at increasing positions (at least two), each carrying
/// the bindings its launches declared (the funnel records them): every recording must declare
/// the same bindings, and calibration confirms them (`tape_core::calibrate::calibrate_declared`:
/// a word that moves undeclared, or not as declared, refuses the capture by name); bindings
/// calibrated from the first two recordings must come out identical from every later
/// consecutive pair; the bindings the kernarg ABI implies for grid bindings are added
/// ([`with_hidden_grid_bindings`]); consecutive recordings with those bindings must be stable
/// (tape-core's stability check). Returns the last recording with the bindings.
///
/// # Errors
/// [`CaptureError`]: calibration or stability, with a detail naming the positions.
pub fn calibrate_samples<D: Device>(
    device: &D,
    workload: &dyn Workload,
    samples: Vec<Tape>,
) -> Result<Tape, CaptureError> {
    if samples.len() < 2 {
        return Err(CaptureError::new(
            CaptureFailure::Calibration,
            format!("{} recording(s): calibration needs at least two", samples.len()),
        ));
    }
    let rules = workload.grid_rules();
    let max = workload.max_position();
    let declared = samples[0].bindings().to_vec();
    if let Some(other) = samples.iter().find(|t| t.bindings() != declared.as_slice()) {
        return Err(CaptureError::new(
            CaptureFailure::Declaration,
            format!(
                "the recordings at positions {} and {} declare different bindings",
                samples[0].position(),
                other.position()
            ),
        ));
    }
    let mut first_bindings = None;
    for pair in samples.windows(2) {
        let bindings = calibrate_declared(sample(&pair[0]), sample(&pair[1]), &declared, rules, max).map_err(|e| {
            let failure = match e {
                CalibrationError::Undeclared { .. }
                | CalibrationError::DeclarationDisagrees { .. }
                | CalibrationError::BadDeclaration { .. } => CaptureFailure::Declaration,
                _ => CaptureFailure::Calibration,
            };
            let detail = format!("calibrating positions {} and {}: {e}", pair[0].position(), pair[1].position());
            CaptureError::new(failure, detail)
        })?;
        match &first_bindings {
            None => first_bindings = Some(bindings),
            Some(first) if *first != bindings => {
                return Err(CaptureError::new(
                    CaptureFailure::Calibration,
                    format!(
                        "the bindings calibrated from positions {} and {} differ from those of the first pair",
                        pair[0].position(),
                        pair[1].position()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    let mut bindings = first_bindings.unwrap_or_default();
    if let Some(last) = samples.last() {
        let position = last.position();
        let calibrated = last
            .clone()
            .with_bindings(bindings.clone())
            .map_err(|e| CaptureError::new(CaptureFailure::Calibration, format!("position {position}: {e}")))?;
        let lookup = slot_by_artifact(device.kernels());
        bindings = with_hidden_grid_bindings(&calibrated, &lookup)
            .map_err(|e| CaptureError::new(CaptureFailure::Calibration, e.to_string()))?;
    }
    let mut tapes = Vec::with_capacity(samples.len());
    for t in samples {
        let position = t.position();
        tapes.push(
            t.with_bindings(bindings.clone())
                .map_err(|e| CaptureError::new(CaptureFailure::Calibration, format!("position {position}: {e}")))?,
        );
    }
    for pair in tapes.windows(2) {
        let report = stability::compare(&pair[0], &pair[1]);
        if !report.is_stable() {
            let drifts: Vec<String> = report.drifts().iter().take(3).map(ToString::to_string).collect();
            return Err(CaptureError::new(
                CaptureFailure::Stability,
                format!(
                    "recordings at positions {} and {} are not stable: {}",
                    pair[0].position(),
                    pair[1].position(),
                    drifts.join("; ")
                ),
            ));
        }
    }
    tapes.pop().ok_or_else(|| CaptureError::new(CaptureFailure::Calibration, "no recording"))
}

/// Records the step at each of `positions` (ordinary launches, host preparation included) and
/// calibrates the recordings into a tape ([`calibrate_samples`]).
///
/// # Errors
/// A message naming what failed: a step, a recording, or calibration.
pub fn capture_tape<D: Device>(
    device: &mut D,
    funnel: &mut Funnel,
    workload: &mut dyn Workload,
    positions: &[u32],
) -> Result<Tape, String> {
    let mut samples = Vec::with_capacity(positions.len());
    for &position in positions {
        workload.prepare_step(device, funnel, position).map_err(|e| format!("position {position}: {e}"))?;
        funnel.begin_capture(position).map_err(|e| format!("position {position}: {e}"))?;
        if let Err(e) = workload.step(device, funnel, position) {
            funnel.abort_capture();
            return Err(format!("position {position}: {e}"));
        }
        samples.push(funnel.finish_capture().map_err(|e| format!("position {position}: {e}"))?);
    }
    calibrate_samples(device, workload, samples).map_err(|e| e.detail)
}

fn sample(t: &Tape) -> Sample<'_> {
    Sample { position: t.position(), launches: t.launches() }
}
