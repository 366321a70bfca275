//! One retained decode step of a GGUF model (any architecture [`language::load`] runs: `llama`,
//! `gemma3`) as an IB bundle (`redline lower --model`).
//!
//! On a soft device the model runs its ordinary forwards at positions `0..P-3`, is recorded at
//! `P-3, P-2, P-1` and calibrated into a tape ([`capture_tape`]), and takes the token of `P`
//! (its host preparation, the step's external boundary). The device's bytes at that moment are
//! the bundle's initial bytes; [`export::export`] patches the IB for `P` and computes the
//! expected bytes by relaunching the tape at `P`. Those expected bytes are then checked against
//! the model's own forward at `P` on the same device, so the bundle is the decode step at `P`.
//!
//! The prompt is fixed so that a bundle is reproducible: the model's BOS token
//! (`tokenizer.ggml.bos_token_id`, token 0 when the file names none) at position 0,
//! `(position * 7919) mod vocab` after it.

use std::path::Path;
use std::time::Instant;

use engine::funnel::Funnel;
use engine::model::FixedPrompt;
use engine::model::fixed_prompt::TOKEN_STRIDE;
use engine::model::language::{self, ModelParams};
use engine::replay::capture_tape;
use engine::workload::{StateKind, Surface, Workload as _};
use hal::Device;
use model_files::ModelError;
use pm4_encoding::Target;
use serde_json::{Value, json};
use soft_device::SimDevice;
use tape_core::tape::Tape;

use crate::Refused;
use crate::example::device_bytes;
use crate::export::{self, ExportOptions, Exported};

/// Positions recorded before the bundle's position: the tape is calibrated from three steps.
pub const RECORDED_STEPS: u32 = 3;

/// Launches a capture of one step may hold: a llama step is 4 + 18 launches per layer and a
/// gemma3 step 4 + 20, so this allows models of up to about 200 layers.
const CAPTURE_LAUNCHES_MAX: usize = 4096;

/// What `redline lower --model` asks for.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// `--model`: an alias or a path.
    pub model: &'a str,
    /// `--context`.
    pub context: Option<u32>,
    /// `--position`.
    pub position: u32,
    /// `--arch`.
    pub target: Target,
    /// `--va-base`.
    pub va_base: u64,
}

/// A model lowered into a bundle.
#[derive(Debug)]
pub struct Lowered {
    /// The calibrated tape (recorded at the three positions before the bundle's).
    pub tape: Tape,
    /// The bundle.
    pub exported: Exported,
    /// What the bundle is, for `DIR/model.json` and the report.
    pub description: Value,
}

/// Why a model could not be lowered for a reason of this machine (exit 2), not of the model.
#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    /// The model argument did not resolve (no such alias or file, the cache, a pull).
    #[error("--model {model}")]
    Resolve {
        /// The argument.
        model: String,
        /// Why (boxed: the error is large).
        source: Box<ModelError>,
    },
    /// The model file could not be read.
    #[error(transparent)]
    Read(gguf::GgufError),
}

/// Lowers the decode step at `request.position` of the model (see the module documentation).
///
/// # Errors
/// The outer error is a usage or I/O error (exit 2): an argument that is no alias and no file,
/// the cache, a pull, reading the file (but a file that changed while it was read, a short read,
/// is the file's fault: exit 1, by its [`gguf::GgufError`]). The inner one says why the model
/// cannot be lowered as asked (exit 1): a file that is not a GGUF, of an architecture no adapter
/// runs or one its adapter refuses, a position or context the model does not have, a failed
/// step.
pub fn lower(request: &Request<'_>) -> Result<Result<Lowered, Refused>, LowerError> {
    // An argument that names no model (no alias, no file) is a usage error, as for every command
    // that takes --model.
    let resolved = model_files::resolve_model(request.model, true)
        .map_err(|source| LowerError::Resolve { model: request.model.to_owned(), source: Box::new(source) })?;
    let file = match gguf::Gguf::open(&resolved.path) {
        Ok(file) => file,
        Err(e @ gguf::GgufError::Read(_)) => return Err(LowerError::Read(e)),
        Err(e) => return Ok(Err(Refused(format!("{}: {e}", resolved.path.display())))),
    };
    let params = match ModelParams::from_gguf(&file) {
        Ok(params) => params,
        Err(e) => return Ok(Err(Refused(format!("{}: {e}", resolved.path.display())))),
    };
    let context = request.context.unwrap_or_else(|| engine::model::default_context(&file));
    if let Err(message) = check_position(request.position, context, &params) {
        return Ok(Err(Refused(message)));
    }
    let bos = FixedPrompt::bos_of(&file, params.vocab());
    Ok(run(request, &resolved.path, &file, context, bos).map_err(Refused))
}

/// Refuses a position the bundle cannot be made for, naming the position and the context.
fn check_position(position: u32, context: u32, params: &ModelParams) -> Result<(), String> {
    let trained = params.context_train();
    if context == 0 || context > trained {
        return Err(format!(
            "--context {context} is outside 1..={trained}, the context the model was trained for \
             ({}.context_length)",
            params.architecture()
        ));
    }
    if position < RECORDED_STEPS {
        return Err(format!(
            "position {position} is too early: the tape is recorded at the {RECORDED_STEPS} positions before the \
             bundle's, so --position must be at least {RECORDED_STEPS}"
        ));
    }
    if position >= context {
        return Err(format!(
            "position {position} is past the context of {context} positions (the KV cache holds positions \
             0..={}); pass a larger --context (at most {trained}) or a smaller --position",
            context - 1
        ));
    }
    Ok(())
}

fn run(request: &Request<'_>, path: &Path, file: &gguf::Gguf, context: u32, bos: u32) -> Result<Lowered, String> {
    let position = request.position;
    let mut device = SimDevice::new(request.target);
    let started = Instant::now();
    eprintln!("lower: loading {} onto a soft {} (context {context}) ...", path.display(), request.target);
    let mut model = language::load(&mut device, file, context).map_err(|e| format!("{}: {e}", path.display()))?;
    let (vocab, architecture) = (model.vocab(), model.architecture());
    let mut prompt = FixedPrompt::new(model.as_mut(), bos);
    let mut funnel = Funnel::new(CAPTURE_LAUNCHES_MAX);
    let (tape, recorded) = record(&mut device, &mut funnel, &mut prompt, position)?;

    eprintln!(
        "lower: exporting the bundle for position {position} (the ordinary path at {position} gives the expected bytes) ..."
    );
    let options = ExportOptions { target: request.target, position, va_base: request.va_base };
    let exported = export::export(&tape, options, &mut device_bytes(&mut device)).map_err(|e| e.to_string())?;

    eprintln!("lower: checking the expected bytes against the model's own step at position {position} ...");
    let token = prompt.token(position);
    let surfaces = surface_names(prompt.surfaces(), &exported);
    ordinary_forward(&mut device, &mut funnel, &mut prompt, position)?;
    let checked = check_against_device(&mut device, &exported, position)?;
    eprintln!("lower: done in {:.1} s", started.elapsed().as_secs_f64());
    let description = json!({
        "model": path.display().to_string(),
        "architecture": architecture,
        "context": context,
        "position": position,
        "recorded_positions": recorded,
        "token": token,
        "prompt": format!("position 0: token {bos} (BOS); position p > 0: (p * {TOKEN_STRIDE}) mod {vocab}"),
        "surfaces": surfaces,
        "checked_against_model_step": checked,
    });
    Ok(Lowered { tape, exported, description })
}

/// The ordinary path up to `position`, its last three steps recorded into a tape, and the host
/// preparation of `position`; returns the tape and the recorded positions.
fn record(
    device: &mut SimDevice,
    funnel: &mut Funnel,
    prompt: &mut FixedPrompt<'_>,
    position: u32,
) -> Result<(Tape, Vec<u32>), String> {
    // PANIC: check_position refused positions below RECORDED_STEPS.
    let first_recorded = position - RECORDED_STEPS;
    if first_recorded > 0 {
        eprintln!("lower: running the ordinary path at positions 0..={} ...", first_recorded - 1);
    }
    for p in 0..first_recorded {
        ordinary_step(device, funnel, prompt, p)?;
    }
    let recorded: Vec<u32> = (first_recorded..position).collect();
    eprintln!("lower: recording positions {recorded:?} and calibrating the tape ...");
    let tape = capture_tape(device, funnel, prompt, &recorded)?;
    prompt.prepare_step(device, funnel, position).map_err(|e| format!("position {position}: {e}"))?;
    device.finish().map_err(|e| format!("position {position}: {e}"))?;
    Ok((tape, recorded))
}

/// One ordinary forward: host preparation, the step's launches, and the wait for them.
fn ordinary_step(
    device: &mut SimDevice,
    funnel: &mut Funnel,
    prompt: &mut FixedPrompt<'_>,
    position: u32,
) -> Result<(), String> {
    prompt.prepare_step(device, funnel, position).map_err(|e| format!("position {position}: {e}"))?;
    ordinary_forward(device, funnel, prompt, position)
}

/// The step's launches at `position` and the wait for them (the token is already prepared).
fn ordinary_forward(
    device: &mut SimDevice,
    funnel: &mut Funnel,
    prompt: &mut FixedPrompt<'_>,
    position: u32,
) -> Result<(), String> {
    prompt.step(device, funnel, position).map_err(|e| format!("position {position}: {e}"))?;
    device.finish().map_err(|e| format!("position {position}: {e}"))
}

/// Which bundle region holds each of the model's state surfaces (by the allocation's VA).
fn surface_names(surfaces: &[Surface], exported: &Exported) -> Vec<Value> {
    surfaces
        .iter()
        .filter_map(|s| {
            let region = exported.manifest.regions.iter().find(|r| r.va.0 == s.allocation.va)?;
            Some(json!({
                "surface": s.name,
                "region": region.name,
                "offset_bytes": s.va - s.allocation.va,
                "bytes": s.bytes,
                "state": s.state.map(StateKind::as_str),
            }))
        })
        .collect()
}

/// Compares every expected region of the bundle with the device after the model's own step, over
/// the bytes the tape reaches (the rest of a region is padding past the model's allocation);
/// returns how many were compared.
fn check_against_device(device: &mut SimDevice, exported: &Exported, position: u32) -> Result<usize, String> {
    let manifest = &exported.manifest;
    for expected in &manifest.expected {
        let region = manifest.regions.iter().find(|r| r.name == expected.region);
        let want = exported.files.iter().find(|(f, _)| *f == expected.file).map(|(_, b)| b);
        let (Some(region), Some(want)) = (region, want) else {
            return Err(format!("the bundle names expected bytes of {} it does not hold", expected.region));
        };
        let extent = exported
            .regions
            .iter()
            .find(|r| r.va == region.va.0)
            .map_or(want.len(), |r| usize::try_from(r.extent).unwrap_or(usize::MAX).min(want.len()));
        let (want, padding) = want.split_at(extent);
        if padding.iter().any(|&b| b != 0) {
            return Err(format!("region {} holds bytes past the {extent} the tape reaches", region.name));
        }
        let mut got = vec![0u8; want.len()];
        device.read(region.va.0, &mut got).map_err(|e| format!("reading {}: {e}", region.name))?;
        // Slice equality first: it is a memcmp, where a byte loop over the weights is not.
        if got != *want {
            let at = got.iter().zip(want.iter()).position(|(a, b)| a != b).unwrap_or(got.len());
            return Err(format!(
                "region {} after the model's own step at position {position} differs from the bundle's expected \
                 bytes at byte {at}",
                region.name
            ));
        }
    }
    Ok(manifest.expected.len())
}
