//! The replay controller's route rules on a backend: every fail-closed row with its exact
//! sentence, the eligibility rules (prompt tokens, repeated and skipped positions, positions past
//! a binding's calibrated maximum), a new sequence over a valid plan, and the `shadow` backend as
//! a diagnostic. Each body drives the built-in examples through the controller on the backend
//! under test and checks the state it leaves against an ordinary-only run on a second device of
//! the same backend.

use engine::examples;
use engine::funnel::{Funnel, Kernel, Launch, Use};
use engine::plan::Transport;
use engine::replay::{
    Backend, CaptureFailure, FallbackReason, ForwardError, ForwardReport, Ineligible, ReplayConfig, ReplayController,
    Route, State, Step,
};
use engine::workload::{GUARD_BYTES, Surface, Workload, WorkloadError};
use hal::{Device, FaultInjection, Injection};
use kernarg_abi::layout::ArgValue;
use tape_core::binding::BindingKind;
use tape_core::calibrate::GridRule;

/// The sentences of the fail-closed rows, written out here as the contract states them (not
/// taken from the code under test).
const PREPARATION_FAILED: &str = "Preparation failed after a successful ordinary warm-up; later forwards fall back.";
const REPLAY_FAILED: &str = "Replay failed; this forward errored; later forwards fall back.";
const MANUAL_SHADOW_FAILED: &str = "Manual shadow validation failed.";
const RECONFIGURED: &str = "Model reconfiguration invalidated the old plan.";
const CAPACITY: &str = "Capture aborted: the recorder's launch capacity was exceeded.";
/// The bound of a retained token's wait where a hang is injected.
const HANG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
const CONTRACT: &str = "Capture aborted: capture contract broken: the recordings do not calibrate into bindings.";

/// A workload, its funnel and a controller on a borrowed device.
struct Run<'d, D: Device> {
    device: &'d mut D,
    funnel: Funnel,
    workload: Box<dyn Workload>,
    controller: ReplayController,
    steps: Vec<(u32, Step)>,
}

fn config(backend: Backend, transport: Transport) -> ReplayConfig {
    ReplayConfig { backend, transport, explicit: true, ..ReplayConfig::default() }
}

impl<'d, D: Device> Run<'d, D> {
    fn new(device: &'d mut D, workload: Box<dyn Workload>, config: ReplayConfig) -> Self {
        let mut controller = ReplayController::new(config);
        controller.configure_model_default(true);
        Self { device, funnel: Funnel::new(4096), workload, controller, steps: Vec::new() }
    }

    fn example(device: &'d mut D, name: &str, config: ReplayConfig) -> Self {
        let workload = examples::example(name, device).unwrap();
        Self::new(device, workload, config)
    }

    fn step(&mut self, position: u32, step: Step) -> Result<ForwardReport, ForwardError> {
        self.steps.push((position, step));
        self.controller.forward(self.device, &mut self.funnel, self.workload.as_mut(), position, step)
    }

    /// A prompt step at `position`.
    fn prompt(&mut self, position: u32) -> ForwardReport {
        self.step(position, Step::Prompt).unwrap()
    }

    /// A continuation at `position`.
    fn next(&mut self, position: u32) -> Result<ForwardReport, ForwardError> {
        self.step(position, Step::Continuation)
    }

    fn route(&mut self, position: u32) -> Route {
        self.next(position).unwrap_or_else(|e| panic!("position {position}: {e}")).route
    }

    fn surfaces(&mut self) -> Vec<Vec<u8>> {
        let surfaces: Vec<Surface> = self.workload.surfaces().to_vec();
        surfaces.iter().map(|s| s.snapshot(&mut *self.device).unwrap()).collect()
    }

    fn fallback(&self) -> FallbackReason {
        match self.controller.state() {
            State::Fallback { reason } => reason.clone(),
            other => panic!("expected a fallback, found {other:?}"),
        }
    }

    /// Asserts the route proof's fallback: its sentence exactly, then `Detail:` and a detail
    /// containing `detail`.
    fn assert_fallback(&self, sentence: &str, detail: &str) {
        let proof = self.controller.route_proof();
        let text = proof.fallback_reason.as_deref().unwrap_or_else(|| panic!("no fallback: {proof:?}"));
        assert!(text.starts_with(&format!("{sentence} Detail: ")), "{text}");
        assert!(text.contains(detail), "{text}");
        let fallback = proof.fallback.unwrap();
        assert_eq!(fallback.sentence, sentence);
        assert!(fallback.detail.contains(detail), "{}", fallback.detail);
        let json = serde_json::to_value(self.controller.route_proof()).unwrap();
        assert_eq!(json["fallback"]["sentence"], sentence);
        assert_eq!(json["state"], "fallback");
    }
}

/// The surfaces of an ordinary-only run of `make`'s workload through `steps` on `reference`.
fn reference<D: Device>(
    reference: &mut D,
    make: &dyn Fn(&mut D) -> Box<dyn Workload>,
    steps: &[(u32, Step)],
) -> Vec<Vec<u8>> {
    let workload = make(reference);
    let mut r = Run::new(reference, workload, config(Backend::Hip, Transport::Pm4));
    for &(position, step) in steps {
        assert_eq!(r.step(position, step).unwrap().route, Route::Ordinary);
    }
    r.surfaces()
}

fn chain<D: Device>(device: &mut D) -> Box<dyn Workload> {
    examples::example("chain", device).unwrap()
}

/// A Ready chain: a prompt step at 0, warm-ups at 1..=3, the plan installed at 3.
fn ready<D: Device>(device: &mut D, config: ReplayConfig) -> Run<'_, D> {
    let mut r = Run::example(device, "chain", config);
    assert_eq!(r.prompt(0).route, Route::Ordinary);
    for p in 1..=3 {
        assert_eq!(r.route(p), Route::Recorded, "position {p}");
    }
    assert_eq!(r.controller.state(), &State::Ready);
    r
}

/// Row 1: preparation fails after a successful ordinary warm-up. The warm-up forward succeeds
/// with the ordinary path's result; later forwards run ordinarily; the sentence is exact.
pub fn preparation_failure_is_worded_and_sticky<D: Device + FaultInjection>(device: &mut D, second: &mut D) {
    let mut r = Run::example(device, "chain", config(Backend::Auto, Transport::Pm4));
    r.prompt(0);
    assert_eq!(r.route(1), Route::Recorded);
    assert_eq!(r.route(2), Route::Recorded);
    r.device.inject(Injection::IbAllocation).unwrap();
    let report = r.next(3).expect("the warm-up forward ran ordinarily and succeeds");
    assert_eq!(report.route, Route::Recorded);
    assert!(matches!(r.fallback(), FallbackReason::PreparationFailed { .. }));
    r.assert_fallback(PREPARATION_FAILED, "injected");
    assert!(r.controller.plan().is_none());
    let steps = r.steps.clone();
    assert_eq!(r.surfaces(), reference(second, &chain, &steps), "the warm-up forward's output is the ordinary one");
    for p in 4..8 {
        assert_eq!(r.route(p), Route::Ordinary, "sticky at {p}");
    }
    let steps = r.steps.clone();
    second.reset();
    assert_eq!(r.surfaces(), reference(second, &chain, &steps));
}

/// Row 2: a retained token fails on the device (a queue fault, a hang that times out). The
/// forward is an error, nothing is retried, later forwards run ordinarily; the sentence is exact.
pub fn replay_failure_is_worded_and_sticky<D: Device + FaultInjection>(device: &mut D) {
    for injection in [Injection::QueueFault, Injection::Hang] {
        for transport in [Transport::Pm4, Transport::Aql] {
            let what = format!("{injection:?} {transport:?}");
            device.reset();
            // A hang is a timed-out wait: bounded short here, far above a chain token's time.
            let mut r = ready(device, ReplayConfig { timeout: HANG_TIMEOUT, ..config(Backend::Auto, transport) });
            assert_eq!(r.route(4), Route::Retained, "{what}");
            let submitted = r.controller.plan().unwrap().submitted();
            let launches = r.funnel.launches();
            r.device.inject(injection).unwrap();
            let err = r.next(5).expect_err(&what);
            assert!(matches!(err, ForwardError::Replay { position: 5, .. }), "{what}: {err}");
            assert_eq!(r.controller.plan().unwrap().submitted(), submitted + 1, "{what}: exactly one submission");
            assert_eq!(r.funnel.launches(), launches, "{what}: no same-token retry on the ordinary path");
            r.assert_fallback(REPLAY_FAILED, "position 5");
            for p in 6..9 {
                assert_eq!(r.route(p), Route::Ordinary, "{what}: sticky at {p}");
            }
            assert_eq!(r.controller.observations().fallbacks, 1, "{what}");
        }
    }
}

/// Row 3: the recorder's capacity is exceeded. The capture is aborted, the forward itself ran
/// ordinarily, nothing is installed, later forwards run ordinarily; the failure is named.
pub fn recorder_capacity_is_named_and_sticky<D: Device>(device: &mut D, second: &mut D) {
    let mut r = Run::example(device, "chain", config(Backend::Auto, Transport::Pm4));
    r.funnel = Funnel::new(2);
    r.prompt(0);
    assert_eq!(r.route(1), Route::Recorded, "the forward itself ran ordinarily");
    assert!(matches!(r.fallback(), FallbackReason::CaptureAborted { failure: CaptureFailure::RecorderCapacity, .. }));
    r.assert_fallback(CAPACITY, "capacity of 2 launches");
    let json = serde_json::to_value(r.controller.route_proof()).unwrap();
    assert_eq!(json["fallback"]["capture_failure"], "recorder_capacity");
    assert!(r.controller.tape().is_none() && r.controller.plan().is_none());
    for p in 2..6 {
        assert_eq!(r.route(p), Route::Ordinary);
    }
    let steps = r.steps.clone();
    assert_eq!(r.surfaces(), reference(second, &chain, &steps));
}

/// A step that moves a pointer with the position: the capture contract (pointers fixed) is
/// broken, and calibration refuses it.
struct MovingPointer {
    fill: Kernel,
    surfaces: Vec<Surface>,
}

impl MovingPointer {
    fn boxed<D: Device>(device: &mut D) -> Box<dyn Workload> {
        let bytes = kernels::artifact(&format!("{}/fill.co", device.target())).unwrap().bytes;
        let fill = Kernel::load_all(device, bytes, &["fill"]).unwrap().remove(0);
        let surfaces = vec![Surface::allocate(device, "out", 64, GUARD_BYTES).unwrap()];
        Box::new(Self { fill, surfaces })
    }
}

impl Workload for MovingPointer {
    fn name(&self) -> &str {
        "moving-pointer"
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        let base = self.surfaces[0].va;
        let va = base + 4 * u64::from(position % 16);
        let args = [ArgValue::Pointer(va), ArgValue::F32(1.0), ArgValue::U32(1)];
        funnel.launch(device, &Launch::linear(&self.fill, &args, 1, 1, &[Use::write(base, 64)]))?;
        Ok(())
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn max_position(&self) -> u32 {
        64
    }
}

/// Row 3 again: the capture contract is broken (a pointer moves with the position).
pub fn a_broken_capture_contract_is_named_and_sticky<D: Device>(device: &mut D, second: &mut D) {
    let workload = MovingPointer::boxed(device);
    let mut r = Run::new(device, workload, config(Backend::Auto, Transport::Pm4));
    r.prompt(0);
    for p in 1..=3 {
        assert_eq!(r.route(p), Route::Recorded);
    }
    assert!(matches!(r.fallback(), FallbackReason::CaptureAborted { failure: CaptureFailure::Calibration, .. }));
    r.assert_fallback(CONTRACT, "calibrating positions 1 and 2");
    assert!(r.controller.plan().is_none());
    assert_eq!(r.route(4), Route::Ordinary);
    let steps = r.steps.clone();
    assert_eq!(r.surfaces(), reference(second, &|d: &mut D| MovingPointer::boxed(d), &steps));
}

/// A step that does host work of its own (an undeclared host input): calibration cannot see
/// it, the shadow oracle does.
struct HostWriteInStep {
    inner: Box<dyn Workload>,
}

impl Workload for HostWriteInStep {
    fn name(&self) -> &str {
        "host-write-in-step"
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        // The chain's input `x`, written by the host inside the step: the retained route (which
        // skips the step) never sees it.
        let x = self.inner.surfaces()[1].va;
        // CAST: small exact values.
        #[allow(clippy::cast_precision_loss)]
        let value = position as f32;
        device.write(x, &value.to_le_bytes())?;
        self.inner.step(device, funnel, position)
    }

    fn surfaces(&self) -> &[Surface] {
        self.inner.surfaces()
    }

    fn max_position(&self) -> u32 {
        self.inner.max_position()
    }
}

/// Row 4: manual shadow validation finds a difference. No route changes, the plan cannot be
/// installed, later forwards run ordinarily; the sentence is exact.
pub fn manual_shadow_failure_is_worded_and_changes_no_route<D: Device>(device: &mut D) {
    let inner = chain(device);
    let manual = ReplayConfig { manual_capture: true, ..config(Backend::Auto, Transport::Pm4) };
    let mut r = Run::new(device, Box::new(HostWriteInStep { inner }), manual);
    r.prompt(0);
    assert_eq!(r.route(1), Route::Ordinary, "manual capture: forwards never capture");
    let first = r.controller.observe_shadow(r.device, &mut r.funnel, r.workload.as_mut(), 2).unwrap();
    assert!(first.is_none());
    let report = r.controller.observe_shadow(r.device, &mut r.funnel, r.workload.as_mut(), 3).unwrap().unwrap();
    assert!(!report.is_exact());
    assert!(report.divergences.iter().any(|d| d.surface == "x"), "{report:?}");
    r.assert_fallback(MANUAL_SHADOW_FAILED, "surface x");
    assert!(r.controller.install_prepared_plan().is_err());
    // An eligible continuation after the oracle's positions: ordinary, the fallback is sticky.
    let after = report.positions.last().unwrap() + 1;
    r.prompt(after - 1);
    let report = r.next(after).unwrap();
    assert!(report.eligible);
    assert_eq!(report.route, Route::Ordinary);
    assert_eq!(r.controller.observations().retained, 0);
}

/// Row 5: a model reload or swap. The old plan is released and the route proof says so in the
/// sentence; the controller is re-armed, and the reloaded workload reaches the retained route
/// again with no stale-plan error.
pub fn reconfiguration_is_worded_and_re_arms<D: Device + FaultInjection>(device: &mut D, second: &mut D) {
    let mut r = ready(device, config(Backend::Auto, Transport::Pm4));
    assert_eq!(r.route(4), Route::Retained);
    r.device.inject(Injection::QueueFault).unwrap();
    assert!(r.next(5).is_err());
    assert!(matches!(r.controller.state(), State::Fallback { .. }));

    // The model is reloaded: the device's allocations are gone, the workload is rebuilt.
    r.controller.reset_for_model(r.device, "model chain reloaded");
    r.device.reset();
    let proof = r.controller.route_proof();
    let reconfiguration = proof.reconfiguration.as_ref().unwrap();
    assert_eq!(reconfiguration.sentence, RECONFIGURED);
    assert_eq!(reconfiguration.count, 1);
    assert!(
        reconfiguration.detail.starts_with("model chain reloaded; old plan: the pm4 plan of"),
        "{reconfiguration:?}"
    );
    assert_eq!(reconfiguration.to_string(), format!("{RECONFIGURED} Detail: {}", reconfiguration.detail));
    assert_eq!(proof.fallback_reason, None);
    assert_eq!(proof.state, "armed");
    assert!(r.controller.tape().is_none() && r.controller.plan().is_none());
    assert_eq!(r.controller.observations(), &engine::replay::Observations::default());

    r.workload = chain(r.device);
    r.steps.clear();
    r.prompt(0);
    let routes: Vec<Route> = (1..8).map(|p| r.route(p)).collect();
    assert_eq!(routes[..3], [Route::Recorded; 3]);
    assert_eq!(routes[3..], [Route::Retained; 4]);
    let steps = r.steps.clone();
    assert_eq!(r.surfaces(), reference(second, &chain, &steps));

    // A second reconfiguration over a Ready plan releases it.
    r.controller.reset_for_model(r.device, "model chain swapped");
    let reconfiguration = r.controller.route_proof().reconfiguration.unwrap();
    assert_eq!(reconfiguration.count, 2);
    assert!(reconfiguration.detail.contains("(released)"), "{reconfiguration:?}");
}

/// Eligibility is decided before the forward: the last prompt token, a repeated position and a
/// skipped position run ordinarily and say why; a new sequence over a valid plan keeps it; the
/// results equal the ordinary path's throughout.
pub fn only_the_next_continuation_replays<D: Device>(device: &mut D, second: &mut D) {
    let mut r = ready(device, config(Backend::Auto, Transport::Pm4));
    assert_eq!(r.route(4), Route::Retained);
    let report = r.next(4).unwrap();
    assert_eq!(report.route, Route::Ordinary, "a repeated position");
    assert_eq!(report.ineligible, Some(Ineligible::NotNext { position: 4, expected: Some(5) }));
    assert_eq!(r.route(5), Route::Retained);
    let report = r.next(7).unwrap();
    assert_eq!(report.route, Route::Ordinary, "a skipped position");
    assert_eq!(report.ineligible, Some(Ineligible::NotNext { position: 7, expected: Some(6) }));
    let proof = r.controller.route_proof();
    assert_eq!(proof.last_eligible, Some(false));
    assert_eq!(proof.last_ineligible, Some(Ineligible::NotNext { position: 7, expected: Some(6) }));
    assert_eq!(r.route(8), Route::Retained);

    // A new request: prompt steps from 0, the last prompt token included, then continuations.
    r.controller.begin_sequence();
    for p in 0..3 {
        let report = r.step(p, Step::Prompt).unwrap();
        assert_eq!(report.route, Route::Ordinary, "prompt token {p}");
        assert_eq!(report.ineligible, Some(Ineligible::Prompt { position: p }));
    }
    assert_eq!(r.route(3), Route::Retained, "the plan is still valid after a new sequence began");
    r.controller.begin_sequence();
    let report = r.next(4).unwrap();
    assert_eq!(report.ineligible, Some(Ineligible::NotNext { position: 4, expected: None }));
    assert_eq!(r.controller.state(), &State::Ready);
    assert_eq!(r.controller.observations().fallbacks, 0);
    assert_eq!(r.controller.observations().replay_positions, vec![4, 5, 8, 3]);
    let steps = r.steps.clone();
    assert_eq!(r.surfaces(), reference(second, &chain, &steps));
}

/// `window` with a calibration maximum below its own: the tape's grid binding is calibrated for
/// positions up to `max`, and the workload still runs past it.
struct Calibrated {
    inner: Box<dyn Workload>,
    max: u32,
}

impl Workload for Calibrated {
    fn name(&self) -> &str {
        "window-calibrated"
    }

    fn prepare_step(
        &mut self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        position: u32,
    ) -> Result<(), WorkloadError> {
        self.inner.prepare_step(device, funnel, position)
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        self.inner.step(device, funnel, position)
    }

    fn surfaces(&self) -> &[Surface] {
        self.inner.surfaces()
    }

    fn grid_rules(&self) -> &[GridRule] {
        self.inner.grid_rules()
    }

    fn max_position(&self) -> u32 {
        self.max
    }
}

/// A position past a binding's calibrated maximum is refused by name before the forward and
/// runs ordinarily: the retained route never replays the wrong geometry.
pub fn a_position_past_the_calibrated_maximum_is_refused_by_name<D: Device>(device: &mut D, second: &mut D) {
    // `window`'s history grid is ceil((position + 1) / 64) work-groups: 2 at most up to 127.
    const MAX: u32 = 100;
    let make = |d: &mut D| -> Box<dyn Workload> {
        Box::new(Calibrated { inner: examples::example("window", d).unwrap(), max: MAX })
    };
    let workload = make(device);
    let mut r = Run::new(device, workload, config(Backend::Auto, Transport::Pm4));
    r.prompt(90);
    for p in 91..=93 {
        assert_eq!(r.route(p), Route::Recorded, "position {p}");
    }
    assert_eq!(r.controller.state(), &State::Ready);
    let grid = r
        .controller
        .tape()
        .unwrap()
        .bindings()
        .iter()
        .find(|b| matches!(b.kind, BindingKind::GridAxis { .. }))
        .map(|b| b.name.clone())
        .expect("window has a grid binding");
    for p in 94..=127 {
        assert_eq!(r.route(p), Route::Retained, "position {p} is within the calibrated grid");
    }
    let report = r.next(128).unwrap();
    assert_eq!(report.route, Route::Ordinary);
    match &report.ineligible {
        Some(Ineligible::PastCalibratedMax { position: 128, binding, detail }) => {
            assert_eq!(binding, &grid);
            assert!(detail.contains("exceeds the maximum 2"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    let text = report.ineligible.as_ref().unwrap().to_string();
    assert!(text.contains(&format!("calibrated maximum of binding {grid}")), "{text}");
    assert_eq!(r.route(129), Route::Ordinary);
    assert_eq!(r.controller.state(), &State::Ready, "a refusal is not a failure");
    let steps = r.steps.clone();
    assert_eq!(r.surfaces(), reference(second, &make, &steps));
}

/// The `shadow` backend is a diagnostic: it validates the plan and stops in `ShadowValidated`;
/// no forward's result comes from the retained route, and its plan cannot be installed. `auto`
/// validated first (`validate_first`) is Ready after the same validation.
pub fn the_shadow_backend_never_routes_product_forwards<D: Device>(device: &mut D, second: &mut D) {
    let positions = 12u32;
    let mut r = Run::example(device, "chain", config(Backend::Shadow, Transport::Pm4));
    r.prompt(0);
    let routes: Vec<Route> = (1..=positions + 4).map(|p| r.route(p)).collect();
    assert_eq!(routes[..3], [Route::Recorded; 3]);
    assert_eq!(routes[3..11], [Route::Shadow; 8]);
    assert!(routes[11..].iter().all(|&x| x == Route::Ordinary), "{routes:?}");
    assert_eq!(r.controller.state(), &State::ShadowValidated);
    assert!(r.controller.route_proof().shadow.unwrap().is_exact());
    assert!(matches!(r.controller.install_prepared_plan(), Err(engine::replay::ManualError::ShadowIsDiagnostic)));
    assert_eq!(r.controller.observations().retained, 0);
    let steps = r.steps.clone();
    assert_eq!(r.surfaces(), reference(second, &chain, &steps));

    second.reset();
    let validated = ReplayConfig { validate_first: true, ..config(Backend::Auto, Transport::Pm4) };
    let mut r = Run::example(second, "chain", validated);
    r.prompt(0);
    let routes: Vec<Route> = (1..=positions + 4).map(|p| r.route(p)).collect();
    assert_eq!(routes[..3], [Route::Recorded; 3]);
    assert_eq!(routes[3..11], [Route::Shadow; 8]);
    assert!(routes[11..].iter().all(|&x| x == Route::Retained), "{routes:?}");
    assert_eq!(r.controller.state(), &State::Ready);
}

/// Replay is valid over a model's whole context: the tiny llama's tape, captured near the start,
/// passes the shadow oracle (all three arms, every surface, bit for bit) at positions spread over
/// its context up to the last; a position past the context is refused by name, before anything
/// runs, and leaves the route as it was.
pub fn shadow_parity_over_the_whole_context<D: Device>(device: &mut D) {
    use engine::model::Llama;
    let model_config = gguf::TinyLlamaConfig::default();
    let context = model_config.context_length;
    let file = gguf::Gguf::parse(gguf::tiny_llama(&model_config)).unwrap();
    let mut model = Llama::load(device, &file, context).unwrap();
    assert_eq!(model.max_position(), context - 1);
    let mut controller = ReplayController::new(config(Backend::Auto, Transport::Pm4));
    controller.configure_model_default(true);
    let mut funnel = Funnel::new(4096);
    for position in 0..8u32 {
        model.set_token(40 + position).unwrap();
        let step = if position < 4 { Step::Prompt } else { Step::Continuation };
        controller.forward(device, &mut funnel, &mut model, position, step).unwrap();
    }
    assert_eq!(controller.state(), &State::Ready);
    let tape = controller.tape().unwrap().clone();
    let mut plan = lowering::plan::prepare(device, &tape).unwrap();
    let positions = [8, context / 4, context / 2, 3 * context / 4, context - 1];
    let report =
        engine::shadow::run(device, &mut funnel, &mut model, &tape, &mut plan, &positions, crate::TIMEOUT).unwrap();
    assert_eq!(report.positions, positions);
    assert_eq!(report.surfaces, model.surfaces().len());
    assert!(report.is_exact(), "{:?}", report.divergences);
    // Every position-bound word took its value at the last position.
    assert!(!tape.bindings().is_empty());
    for binding in tape.bindings() {
        binding.kind.value_at(context - 1).unwrap_or_else(|e| panic!("{}: {e}", binding.name));
    }
    plan.release(device).unwrap();

    let err = controller.forward(device, &mut funnel, &mut model, context, Step::Continuation).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("position {context} is beyond the workload's maximum {}", context - 1)), "{text}");
    assert_eq!(controller.state(), &State::Ready, "a refused position is not a route failure");
}

/// The sliding window on every backend: the tiny gemma3 (a window of 8 keys on five of its seven
/// layers, every matrix type), its tape captured at positions where the window's first key is 0,
/// passes the shadow oracle (every surface, bit for bit) at positions on both sides of the
/// window's start and up to the end of its context; the first keys are the declared
/// `max(0, position - 7)` bindings.
pub fn gemma3_shadow_parity_across_the_window<D: Device>(device: &mut D) {
    use engine::model::{Gemma3, LanguageModel};
    let model_config = gguf::TinyGemma3Config { context_length: 256, ..gguf::TinyGemma3Config::default() };
    let (context, window) = (model_config.context_length, model_config.window);
    let file = gguf::Gguf::parse(gguf::tiny_gemma3(&model_config)).unwrap();
    let mut model = Gemma3::load_model(device, &file, context).unwrap();
    let mut controller = ReplayController::new(config(Backend::Auto, Transport::Pm4));
    controller.configure_model_default(true);
    let mut funnel = Funnel::new(8192);
    for position in 0..6u32 {
        model.set_token(6 + position).unwrap();
        let step = if position < 2 { Step::Prompt } else { Step::Continuation };
        controller.forward(device, &mut funnel, &mut model, position, step).unwrap();
    }
    assert_eq!(controller.state(), &State::Ready);
    let tape = controller.tape().unwrap().clone();
    assert!(tape.position() < window - 1, "recorded at {}", tape.position());
    let first_keys = tape.bindings().iter().filter(|b| b.name.ends_with(".attention.first")).count();
    assert_eq!(first_keys, 6, "one declared first key per sliding layer");
    let mut plan = lowering::plan::prepare(device, &tape).unwrap();
    let positions = [window - 1, window, window + 1, 2 * window + 3, context / 2, context - 1];
    let report =
        engine::shadow::run(device, &mut funnel, &mut model, &tape, &mut plan, &positions, crate::TIMEOUT).unwrap();
    assert_eq!(report.positions, positions);
    assert_eq!(report.surfaces, model.surfaces().len());
    assert!(report.is_exact(), "{:?}", report.divergences);
    plan.release(device).unwrap();
}

/// A batched prefill is the prompt run step by step, bit for bit: the tiny llama's 37-token
/// prompt in passes of 16, 16 and 5 tokens leaves the same logits and the same K and V caches as
/// 37 prompt steps on a second device; each pass is one ineligible, ordinary forward naming its
/// last position; the continuation after it is eligible and the route records, prepares and
/// replays as after a step-by-step prompt, with the same logits at every decode step.
pub fn batched_prefill_is_the_prompt_step_by_step<D: Device>(device: &mut D, second: &mut D) {
    use engine::model::Llama;
    let model_config = gguf::TinyLlamaConfig::default();
    let file = gguf::Gguf::parse(gguf::tiny_llama(&model_config)).unwrap();
    let prompt: Vec<u32> = (0..37).map(|i| (i * 7 + 3) % 200).collect();
    let surface = |model: &Llama, device: &mut D, name: &str| {
        let s = model.surfaces().iter().find(|s| s.name == name).unwrap();
        let mut bytes = vec![0u8; usize::try_from(s.bytes).unwrap()];
        device.read(s.va, &mut bytes).unwrap();
        bytes
    };
    let mut arms = Vec::new();
    for (device, batched) in [(&mut *device, true), (&mut *second, false)] {
        let mut model = Llama::load(device, &file, model_config.context_length).unwrap();
        let mut controller = ReplayController::new(config(Backend::Auto, Transport::Pm4));
        controller.configure_model_default(true);
        let mut funnel = Funnel::new(4096);
        if batched {
            for (i, pass) in prompt.chunks(16).enumerate() {
                let first = u32::try_from(i * 16).unwrap();
                let report = controller.prefill(device, &mut funnel, &mut model, first, pass).unwrap();
                let last = first + u32::try_from(pass.len()).unwrap() - 1;
                assert_eq!((report.route, report.eligible, report.position), (Route::Ordinary, false, last));
                assert_eq!(report.ineligible, Some(Ineligible::Prompt { position: last }));
                assert!(report.ordinary_launches > 0);
            }
            assert_eq!(controller.observations().ineligible_forwards, 3, "one forward per pass");
        } else {
            for (position, &token) in (0u32..).zip(&prompt) {
                model.set_token(token).unwrap();
                controller.forward(device, &mut funnel, &mut model, position, Step::Prompt).unwrap();
            }
        }
        let mut logits = vec![model.logits(device).unwrap()];
        let caches = [surface(&model, device, "k_cache"), surface(&model, device, "v_cache")];
        let mut routes = Vec::new();
        for position in 37..45u32 {
            let last = logits.last().unwrap();
            let argmax = (0..last.len()).max_by(|&a, &b| last[a].total_cmp(&last[b])).unwrap();
            model.set_token(u32::try_from(argmax).unwrap()).unwrap();
            let report = controller.forward(device, &mut funnel, &mut model, position, Step::Continuation).unwrap();
            assert!(report.eligible, "position {position} follows the prompt: {:?}", report.ineligible);
            routes.push(report.route);
            logits.push(model.logits(device).unwrap());
        }
        assert_eq!(controller.state(), &State::Ready);
        arms.push((logits, caches, routes));
    }
    let bits =
        |l: &Vec<Vec<f32>>| l.iter().map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()).collect::<Vec<_>>();
    let (batched, stepped) = (&arms[0], &arms[1]);
    assert!(bits(&batched.0) == bits(&stepped.0), "logits differ between batched and step-by-step prefill");
    assert!(batched.1 == stepped.1, "the KV caches differ between batched and step-by-step prefill");
    assert_eq!(batched.2, stepped.2);
    assert!(batched.2.contains(&Route::Retained), "{:?}", batched.2);
}

/// Sequence state on every backend: the tiny `lfm2` (short convolutions of 3 taps: 2 previous
/// inputs per channel) and the tiny `qwen35` (DeltaNet convolutions of 4 taps and recurrent
/// state matrices), each captured into a tape and prepared, then from a new sequence (its state
/// zeroed) the shadow oracle at positions 0 to 7, consecutive so that the state carries the
/// sequence, through the positions where the convolution's history fills and the ones after:
/// every surface bit for bit on all three arms, every state surface the model declares among
/// the compared ones, and the state non-zero after the run (the steps did write it).
pub fn sequence_state_parity_through_the_convolution_window<D: Device>(device: &mut D) {
    use engine::model::language;
    use engine::workload::StateKind;
    let lfm2 = gguf::tiny_lfm2(&gguf::TinyLfm2Config { context_length: 64, ..gguf::TinyLfm2Config::default() });
    let qwen35 = gguf::tiny_qwen35(&gguf::TinyQwen35Config { context_length: 64, ..gguf::TinyQwen35Config::default() });
    /// A family: its architecture, a tiny model's bytes, and its state surfaces with their kinds.
    type Family = (&'static str, Vec<u8>, &'static [(&'static str, StateKind)]);
    let families: [Family; 2] = [
        ("lfm2", lfm2, &[("conv_state", StateKind::Convolution)]),
        ("qwen35", qwen35, &[("conv_state", StateKind::Convolution), ("recurrent_state", StateKind::Recurrent)]),
    ];
    for (architecture, bytes, states) in families {
        device.reset();
        let file = gguf::Gguf::parse(bytes).unwrap();
        let mut model = language::load(device, &file, 64).unwrap();
        assert_eq!(model.architecture(), architecture);
        let declared: Vec<(&str, StateKind)> =
            model.surfaces().iter().filter_map(|s| Some((s.name.as_str(), s.state?))).collect();
        assert_eq!(declared, states, "{architecture}: its state surfaces");
        let mut controller = ReplayController::new(config(Backend::Auto, Transport::Pm4));
        controller.configure_model_default(true);
        let mut funnel = Funnel::new(8192);
        for position in 0..6u32 {
            model.set_token(5 + 3 * position).unwrap();
            let step = if position < 2 { Step::Prompt } else { Step::Continuation };
            controller.forward(device, &mut funnel, model.as_mut(), position, step).unwrap();
        }
        assert_eq!(controller.state(), &State::Ready, "{architecture}");
        let tape = controller.tape().unwrap().clone();
        let mut plan = lowering::plan::prepare(device, &tape).unwrap();
        model.reset_state(device).unwrap();
        let positions: Vec<u32> = (0..8).collect();
        let report =
            engine::shadow::run(device, &mut funnel, model.as_mut(), &tape, &mut plan, &positions, crate::TIMEOUT)
                .unwrap();
        assert_eq!(report.positions, positions, "{architecture}");
        assert!(report.is_exact(), "{architecture}: {:?}", report.divergences);
        assert!(report.uncovered_state(model.surfaces()).is_empty(), "{architecture}: {:?}", report.state_surfaces);
        let state: Vec<String> = states.iter().map(|(name, _)| (*name).to_owned()).collect();
        assert_eq!(report.state_surfaces, state, "{architecture}");
        for surface in model.surfaces().iter().filter(|s| s.state.is_some()) {
            let mut bytes = vec![0u8; usize::try_from(surface.bytes).unwrap()];
            device.read(surface.va, &mut bytes).unwrap();
            assert!(bytes.iter().any(|&b| b != 0), "{architecture}: {} was written", surface.name);
        }
        plan.release(device).unwrap();
    }
}
