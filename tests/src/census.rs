//! Capture completeness (gate 2) on every backend: the device's own kernel trace of each
//! recorded forward (its packet processor's, never the recorder's) reconciles with the tape at
//! every recorded position, and a recording that is not what ran fails gate 2 by name and never
//! reaches `Ready`: a launch issued around the recorder, a launch recorded twice, two launches
//! recorded swapped. The tiny llama (`gguf::tiny_llama`) is the model.

use engine::funnel::{Funnel, Kernel, Launch, RecordingFault, Use};
use engine::model::LanguageModel;
use engine::model::language;
use engine::replay::{Backend, CaptureFailure, FallbackReason, ReplayConfig, ReplayController, State, Step};
use engine::workload::{GUARD_BYTES, Surface, Workload, WorkloadError};
use hal::Device;
use kernarg_abi::layout::ArgValue;
use tape_core::census::Verdict;

/// Forwards run: a prompt step at 0, then continuations, enough to reach `Ready` on a route
/// that reconciles (three recorded warm-ups).
const POSITIONS: u32 = 8;

fn tiny<D: Device>(device: &mut D) -> Box<dyn LanguageModel> {
    let file = gguf::Gguf::parse(gguf::tiny_llama(&gguf::TinyLlamaConfig::default())).unwrap();
    language::load(device, &file, 64).unwrap()
}

fn controller() -> ReplayController {
    let mut controller =
        ReplayController::new(ReplayConfig { backend: Backend::Auto, explicit: true, ..ReplayConfig::default() });
    controller.configure_model_default(true);
    controller
}

/// The forwards at `0..POSITIONS` of `workload` through `funnel`.
fn decode<D: Device>(device: &mut D, funnel: &mut Funnel, workload: &mut dyn Workload) -> ReplayController {
    let mut controller = controller();
    for position in 0..POSITIONS {
        let step = if position == 0 { Step::Prompt } else { Step::Continuation };
        controller.forward(device, funnel, workload, position, step).unwrap();
    }
    controller
}

/// The tiny model reaches `Ready` with a census of every recorded position, each reconciled:
/// the trace's compute launches are the tape's retained dispatches plus its external launches.
pub fn the_census_reconciles_every_recorded_position<D: Device>(device: &mut D) {
    let mut model = tiny(device);
    let mut funnel = Funnel::new(8192);
    let controller = decode(device, &mut funnel, model.as_mut());
    let proof = controller.route_proof();
    assert_eq!(proof.state, "ready", "{:?}", proof.fallback_reason);
    let census = proof.census.expect("a census once the tape is captured");
    assert!(census.trace.contains("packet processor"), "{}", census.trace);
    let tape = proof.tape.unwrap();
    let positions: Vec<u32> = census.positions.iter().map(|p| p.position).collect();
    assert_eq!(positions, [1, 2, 3], "the three recorded warm-ups");
    for p in &census.positions {
        assert_eq!(p.verdict, Verdict::Reconciled, "position {}", p.position);
        assert_eq!(p.retained_dispatches, tape.dispatch_count);
        assert_eq!(p.external_launches, tape.external_launches);
        assert_eq!(p.compute_launches, u64::from(tape.dispatch_count) + u64::from(tape.external_launches));
    }
    assert!(census.reconciled());
}

/// The controller fell back for gate 2 naming `position` and `kernel`, and never replayed.
fn assert_gate_2(controller: &ReplayController, position: u32, kernel: &str, what: &str) {
    let proof = controller.route_proof();
    let State::Fallback { reason } = controller.state() else {
        panic!("{what}: state {}, not a fallback", proof.state);
    };
    let FallbackReason::CaptureAborted { failure, detail } = reason else { panic!("{what}: {reason}") };
    assert_eq!(*failure, CaptureFailure::Census, "{what}: {detail}");
    assert!(detail.contains("gate 2") && detail.contains(&format!("position {position}:")), "{what}: {detail}");
    assert!(detail.contains(kernel), "{what}: {detail} names {kernel}");
    assert_eq!(proof.observations.retained, 0, "{what}");
    assert!(proof.census.is_none(), "{what}: no census of a tape that was refused");
}

/// A clean capture of the tiny model on `device` (which is reset after it).
fn clean_tape<D: Device>(device: &mut D) -> tape_core::tape::Tape {
    let mut model = tiny(device);
    let mut funnel = Funnel::new(8192);
    let tape = engine::replay::capture_tape(device, &mut funnel, model.as_mut(), &[1, 2]).unwrap();
    drop(model);
    device.reset();
    tape
}

/// Each capture's first launch that no binding names recorded twice (a copy of a launch whose
/// kernarg words follow the position would fail calibration first): the tape has one more
/// launch than ran.
pub fn a_launch_recorded_twice_fails_gate_2_by_name<D: Device>(device: &mut D) {
    let tape = clean_tape(device);
    let bound: Vec<usize> = tape.bindings().iter().map(|b| usize::try_from(b.launch).unwrap()).collect();
    let launch = (0..tape.launches().len()).find(|i| !bound.contains(i)).unwrap();
    let symbol = tape.launches()[launch].artifact.symbol.clone();
    let mut model = tiny(device);
    let mut funnel = Funnel::new(8192);
    funnel.inject_recording_fault(RecordingFault::RecordedTwice { launch });
    let controller = decode(device, &mut funnel, model.as_mut());
    assert_gate_2(&controller, 1, &symbol, "a launch recorded twice");
}

/// Two launches of different kernels recorded in swapped order.
pub fn swapped_launches_fail_gate_2_by_name<D: Device>(device: &mut D) {
    let tape = clean_tape(device);
    let symbol = |i: usize| tape.launches()[i].artifact.symbol.clone();
    // The first adjacent pair of different kernels.
    let at = (0..tape.launches().len() - 1).find(|&i| symbol(i) != symbol(i + 1)).unwrap();
    let (first, second) = (symbol(at), symbol(at + 1));
    let mut model = tiny(device);
    let mut funnel = Funnel::new(8192);
    funnel.inject_recording_fault(RecordingFault::Swapped { launch: at });
    let controller = decode(device, &mut funnel, model.as_mut());
    assert_gate_2(&controller, 1, &first, "swapped launches");
    let State::Fallback { reason } = controller.state() else { unreachable!() };
    assert!(reason.to_string().contains(&second), "{reason}");
}

/// The tiny model with one more launch per step, issued through a funnel of its own that never
/// records: the step's recording misses it, the device runs it.
struct AroundTheRecorder {
    model: Box<dyn LanguageModel>,
    side: Funnel,
    fill: Kernel,
    scratch: Surface,
}

impl Workload for AroundTheRecorder {
    fn name(&self) -> &str {
        "tiny llama with a launch around the recorder"
    }

    fn prepare_step(
        &mut self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        position: u32,
    ) -> Result<(), WorkloadError> {
        self.model.prepare_step(device, funnel, position)
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        self.model.step(device, funnel, position)?;
        let args = [ArgValue::Pointer(self.scratch.va), ArgValue::F32(1.0), ArgValue::U32(64)];
        let uses = [Use::write(self.scratch.va, self.scratch.bytes)];
        self.side.launch(device, &Launch::linear(&self.fill, &args, 64, 64, &uses))?;
        Ok(())
    }

    fn surfaces(&self) -> &[Surface] {
        self.model.surfaces()
    }

    fn max_position(&self) -> u32 {
        self.model.max_position()
    }

    fn grid_rules(&self) -> &[tape_core::calibrate::GridRule] {
        self.model.grid_rules()
    }
}

/// A launch the device runs that the recorder never sees: the trace has one more dispatch.
pub fn a_launch_around_the_recorder_fails_gate_2_by_name<D: Device>(device: &mut D) {
    let model = tiny(device);
    let bytes = kernels::artifact(&format!("{}/fill.co", device.target())).unwrap().bytes;
    let fill = Kernel::load_all(device, bytes, &["fill"]).unwrap().remove(0);
    let scratch = Surface::allocate(device, "scratch", 256, GUARD_BYTES).unwrap();
    let mut workload = AroundTheRecorder { model, side: Funnel::new(16), fill, scratch };
    let mut funnel = Funnel::new(8192);
    let controller = decode(device, &mut funnel, &mut workload);
    assert_gate_2(&controller, 1, "fill", "a launch around the recorder");
}
