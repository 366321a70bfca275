//! The shadow oracle: from one primed state, run a position three ways and compare every declared
//! state surface bit for bit (`docs/ARCHITECTURE.md`, "What the system does": execution-preserving).
//!
//! The arms, each from the same primed state (the surfaces are restored before each):
//! 1. **ordinary** — the workload's step through the [`Funnel`] (one AQL dispatch per launch);
//! 2. **relaunch** — the tape's exact recorded kernarg blobs, with the bindings' values for the
//!    position written into a copy of each bound blob, launched one by one through the ordinary
//!    device path (no workload code runs);
//! 3. **retained** — the prepared plan's replay.
//!
//! Every [`Surface`] of the workload is read whole, guard regions included, after each arm. The
//! oracle passes at a position when the three snapshots of every surface are identical and no
//! guard byte lost its pattern. The state then moves on to what the ordinary arm produced (it is
//! written back after the retained arm), so a run over several positions checks a real sequence
//! of steps, and a forward the oracle ran has the ordinary path's result whatever the other arms
//! did. The host work of
//! [`Workload::prepare_step`] runs once per position, before the snapshot, for all arms.

use serde::Serialize;
use tape_core::tape::Tape;

use crate::funnel::Funnel;
use crate::workload::{Surface, Workload, WorkloadError};
use hal::{Device, LaunchRequest};
use lowering::lower::slot_by_artifact;
use lowering::plan::{PreparedPlan, ReplayError};

/// The three arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    /// The workload's step.
    Ordinary,
    /// The recorded blobs relaunched.
    Relaunch,
    /// The prepared plan.
    Retained,
}

/// A difference the oracle found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The position.
    pub position: u32,
    /// The surface.
    pub surface: String,
    /// The arm that differs from the ordinary arm (or whose guard was hit).
    pub arm: Arm,
    /// Offset of the first differing byte in the surface's allocation (guards included).
    pub offset: u64,
    /// Whether the byte lies in a guard region.
    pub in_guard: bool,
}

/// What a shadow run found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShadowReport {
    /// Positions compared, in order.
    pub positions: Vec<u32>,
    /// Surfaces compared per position.
    pub surfaces: usize,
    /// Bytes compared per arm and position, guards included.
    pub bytes_per_arm: u64,
    /// Differences, at most one per surface, arm and position.
    pub divergences: Vec<Divergence>,
    /// The sequence-state surfaces compared ([`Surface::state`]), by name, in order.
    pub state_surfaces: Vec<String>,
}

impl ShadowReport {
    /// Whether all three arms agreed everywhere.
    #[must_use]
    pub fn is_exact(&self) -> bool {
        self.divergences.is_empty() && !self.positions.is_empty()
    }

    /// The sequence-state surfaces of `surfaces` (a workload's [`Workload::surfaces`]) this
    /// run did not compare, by name: a parity claim about a model's state holds only when this
    /// is empty.
    #[must_use]
    pub fn uncovered_state<'a>(&self, surfaces: &'a [Surface]) -> Vec<&'a str> {
        surfaces
            .iter()
            .filter(|s| s.state.is_some() && !self.state_surfaces.contains(&s.name))
            .map(|s| s.name.as_str())
            .collect()
    }
}

/// Why the oracle could not run an arm.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    /// The ordinary arm (or the host preparation) failed.
    #[error("position {position}: ordinary arm: {source}")]
    Ordinary {
        /// The position.
        position: u32,
        /// Why.
        source: WorkloadError,
    },
    /// A relaunched blob failed.
    #[error("position {position}: relaunch of launch {launch}: {message}")]
    Relaunch {
        /// The position.
        position: u32,
        /// The launch.
        launch: usize,
        /// Why.
        message: String,
    },
    /// The retained arm failed.
    #[error("position {position}: retained arm: {source}")]
    Retained {
        /// The position.
        position: u32,
        /// Why.
        source: ReplayError,
    },
    /// A surface could not be read or restored.
    #[error("position {position}: surface {surface}: {message}")]
    Surface {
        /// The position.
        position: u32,
        /// The surface.
        surface: String,
        /// Why.
        message: String,
    },
}

/// Runs the oracle at each of `positions` in order (see the module documentation).
///
/// # Errors
/// [`ShadowError`] when an arm cannot run at all; a run whose arms differ is a report with
/// divergences, not an error.
pub fn run<D: Device>(
    device: &mut D,
    funnel: &mut Funnel,
    workload: &mut dyn Workload,
    tape: &Tape,
    plan: &mut PreparedPlan,
    positions: &[u32],
    timeout: std::time::Duration,
) -> Result<ShadowReport, ShadowError> {
    let surfaces: Vec<Surface> = workload.surfaces().to_vec();
    run_over(device, funnel, workload, tape, plan, positions, timeout, &surfaces)
}

/// [`run`] over the given `surfaces` instead of every surface of the workload: each arm starts
/// from their snapshot and only they are compared. A surface left out is neither restored nor
/// compared, so whatever it holds leaks from one arm into the next; this is how a test shows
/// that the oracle needs each of a model's surfaces ([`ShadowReport::uncovered_state`] names
/// the sequence state left out).
///
/// # Errors
/// As [`run`].
#[allow(clippy::too_many_arguments)]
pub fn run_over<D: Device>(
    device: &mut D,
    funnel: &mut Funnel,
    workload: &mut dyn Workload,
    tape: &Tape,
    plan: &mut PreparedPlan,
    positions: &[u32],
    timeout: std::time::Duration,
    surfaces: &[Surface],
) -> Result<ShadowReport, ShadowError> {
    let mut report = ShadowReport {
        positions: Vec::with_capacity(positions.len()),
        surfaces: surfaces.len(),
        bytes_per_arm: surfaces.iter().map(|s| s.allocation.size).sum(),
        divergences: Vec::new(),
        state_surfaces: surfaces.iter().filter(|s| s.state.is_some()).map(|s| s.name.clone()).collect(),
    };
    for &position in positions {
        workload.prepare_step(device, funnel, position).map_err(|source| ShadowError::Ordinary { position, source })?;
        let primed = snapshot(device, surfaces, position)?;

        workload.step(device, funnel, position).map_err(|source| ShadowError::Ordinary { position, source })?;
        let ordinary = snapshot(device, surfaces, position)?;

        restore(device, surfaces, &primed, position)?;
        relaunch(device, tape, position)?;
        let relaunched = snapshot(device, surfaces, position)?;

        restore(device, surfaces, &primed, position)?;
        plan.replay(device, position, timeout).map_err(|source| ShadowError::Retained { position, source })?;
        let retained = snapshot(device, surfaces, position)?;

        for (i, surface) in surfaces.iter().enumerate() {
            if let Some(offset) = surface.guard_violation(&ordinary[i]) {
                report.divergences.push(divergence(position, surface, Arm::Ordinary, offset));
            }
            for (arm, bytes) in [(Arm::Relaunch, &relaunched[i]), (Arm::Retained, &retained[i])] {
                let first = bytes.iter().zip(&ordinary[i]).position(|(a, b)| a != b);
                let guard = surface.guard_violation(bytes);
                if let Some(offset) = first.map(|o| u64::try_from(o).unwrap_or(u64::MAX)).or(guard) {
                    report.divergences.push(divergence(position, surface, arm, offset));
                }
            }
        }
        // The forward's result is the ordinary arm's, not the retained arm's.
        restore(device, surfaces, &ordinary, position)?;
        report.positions.push(position);
    }
    Ok(report)
}

fn divergence(position: u32, surface: &Surface, arm: Arm, offset: u64) -> Divergence {
    let in_guard = offset < surface.guard || offset >= surface.guard + surface.bytes;
    Divergence { position, surface: surface.name.clone(), arm, offset, in_guard }
}

fn snapshot<D: Device>(device: &mut D, surfaces: &[Surface], position: u32) -> Result<Vec<Vec<u8>>, ShadowError> {
    surfaces
        .iter()
        .map(|s| {
            s.snapshot(device).map_err(|e| ShadowError::Surface {
                position,
                surface: s.name.clone(),
                message: e.to_string(),
            })
        })
        .collect()
}

fn restore<D: Device>(
    device: &mut D,
    surfaces: &[Surface],
    primed: &[Vec<u8>],
    position: u32,
) -> Result<(), ShadowError> {
    for (s, bytes) in surfaces.iter().zip(primed) {
        device.write(s.allocation.va, bytes).map_err(|e| ShadowError::Surface {
            position,
            surface: s.name.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// The relaunch arm: every recorded blob, with the bound words and grids for `position`,
/// through the device's ordinary launch path.
pub fn relaunch<D: Device>(device: &mut D, tape: &Tape, position: u32) -> Result<(), ShadowError> {
    let fail = |launch: usize, message: String| ShadowError::Relaunch { position, launch, message };
    let kds: Vec<u64> = {
        let lookup = slot_by_artifact(device.kernels());
        tape.launches()
            .iter()
            .enumerate()
            .map(|(i, l)| {
                lookup(&l.artifact)
                    .map(|slot| slot.loaded.kd_va)
                    .ok_or_else(|| fail(i, format!("kernel {} is not loaded", l.artifact.symbol)))
            })
            .collect::<Result<_, _>>()?
    };
    for (i, (record, &kd)) in tape.launches().iter().zip(&kds).enumerate() {
        let mut kernarg = record.kernarg.clone();
        let mut grid = record.geometry.grid_work_items;
        for b in tape.bindings().iter().filter(|b| usize::try_from(b.launch).ok() == Some(i)) {
            let value = b.kind.value_at(position).map_err(|e| fail(i, format!("binding {}: {e}", b.name)))?;
            match b.kind.kernarg_offset() {
                Some(offset) => {
                    let at = usize::try_from(offset).unwrap_or(usize::MAX);
                    let word = kernarg
                        .get_mut(at..at.saturating_add(4))
                        .ok_or_else(|| fail(i, format!("binding {} lies outside the blob", b.name)))?;
                    word.copy_from_slice(&value.to_le_bytes());
                }
                None => {
                    if let tape_core::binding::BindingKind::GridAxis { axis, .. } = b.kind {
                        let axis = usize::from(axis.min(2));
                        let wg = u32::from(record.geometry.workgroup_work_items[axis]);
                        grid[axis] = value
                            .checked_mul(wg)
                            .ok_or_else(|| fail(i, format!("binding {}: grid overflows", b.name)))?;
                    }
                }
            }
        }
        let request = LaunchRequest {
            kernel_object: kd,
            grid_work_items: grid,
            workgroup_work_items: record.geometry.workgroup_work_items,
            dynamic_lds_bytes: record.lds.dynamic_bytes,
            kernarg: &kernarg,
        };
        device.launch(&request).map_err(|e| fail(i, e.to_string()))?;
    }
    Ok(())
}
