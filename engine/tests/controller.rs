//! The replay controller on the soft device: the automatic and manual lifecycles over every
//! built-in example on every family, with both transports. The fail-closed rows, the
//! eligibility rules and the `shadow` backend are checked on every backend by the conformance
//! suite (`tests/src/route.rs`).

use engine::examples::{self, EXAMPLES};
use engine::funnel::{DeclaredArg, Funnel, Kernel, Launch, Rule, Use};
use engine::plan::Transport;
use engine::replay::{
    Backend, CaptureFailure, FallbackReason, ForwardError, ReplayConfig, ReplayController, Route, State, Step,
};
use engine::workload::{GUARD_BYTES, Surface, Workload, WorkloadError};
use hal::Device;
use kernarg_abi::layout::ArgValue;
use pm4_encoding::Target;
use soft_device::SimDevice;

const TARGETS: [Target; 3] = [Target::Gfx1030, Target::Gfx1100, Target::Gfx1201];

struct Run {
    device: SimDevice,
    funnel: Funnel,
    workload: Box<dyn Workload>,
    controller: ReplayController,
}

fn run(target: Target, example: &str, config: ReplayConfig) -> Run {
    let mut device = SimDevice::new(target);
    let workload = examples::example(example, &mut device).unwrap();
    let mut controller = ReplayController::new(config);
    controller.configure_model_default(true);
    Run { device, funnel: Funnel::new(4096), workload, controller }
}

impl Run {
    fn forward(&mut self, position: u32, step: Step) -> Result<engine::replay::ForwardReport, ForwardError> {
        self.controller.forward(&mut self.device, &mut self.funnel, self.workload.as_mut(), position, step)
    }

    /// A prompt step at 0, then continuations at `positions`: their routes.
    fn decode(&mut self, positions: std::ops::Range<u32>) -> Vec<Route> {
        assert_eq!(self.forward(0, Step::Prompt).unwrap().route, Route::Ordinary);
        positions
            .map(|p| self.forward(p, Step::Continuation).unwrap_or_else(|e| panic!("position {p}: {e}")).route)
            .collect()
    }

    fn surfaces(&mut self) -> Vec<Vec<u8>> {
        let surfaces: Vec<Surface> = self.workload.surfaces().to_vec();
        surfaces.iter().map(|s| s.snapshot(&mut self.device).unwrap()).collect()
    }
}

fn config(backend: Backend, transport: Transport) -> ReplayConfig {
    ReplayConfig { backend, transport, explicit: true, ..ReplayConfig::default() }
}

/// The ordinary-only reference: the same example stepped through `positions` with backend hip.
fn reference(target: Target, example: &str, positions: &[u32]) -> Vec<Vec<u8>> {
    let mut r = run(target, example, config(Backend::Hip, Transport::Pm4));
    assert_eq!(r.controller.state(), &State::Hip);
    for &p in positions {
        assert_eq!(r.forward(p, Step::Continuation).unwrap().route, Route::Ordinary);
    }
    r.surfaces()
}

#[test]
fn every_example_on_every_family_reaches_ready_through_shadow_validation_and_replays_bit_exact() {
    for target in TARGETS {
        for (example, _) in EXAMPLES {
            for transport in [Transport::Pm4, Transport::Aql] {
                let what = format!("{target} {example} {transport:?}");
                let validated = ReplayConfig { validate_first: true, ..config(Backend::Auto, transport) };
                let mut r = run(target, example, validated);
                assert_eq!(r.controller.state(), &State::Armed, "{what}");
                assert_eq!(r.forward(0, Step::Prompt).unwrap().route, Route::Ordinary, "{what}");
                let positions: Vec<u32> = (1..25).collect();
                let mut routes = Vec::new();
                for &p in &positions {
                    let report = r.forward(p, Step::Continuation).unwrap_or_else(|e| panic!("{what}: {e}"));
                    routes.push(report.route);
                    match report.route {
                        Route::Retained => assert_eq!(report.ordinary_launches, 0, "{what}"),
                        Route::Recorded | Route::Ordinary => assert_eq!(report.retained_submissions, 0, "{what}"),
                        Route::Shadow => assert_eq!(report.retained_submissions, 1, "{what}"),
                    }
                }
                // 3 recorded warm-ups, 8 shadow-validated positions, then the retained route.
                assert_eq!(&routes[..3], &[Route::Recorded; 3], "{what}");
                assert_eq!(&routes[3..11], &[Route::Shadow; 8], "{what}");
                assert!(routes[11..].iter().all(|&r| r == Route::Retained), "{what}: {routes:?}");
                let proof = r.controller.route_proof();
                assert_eq!(proof.state, "ready", "{what}");
                assert_eq!(proof.fallback_reason, None, "{what}");
                assert_eq!(proof.transport, Some(transport), "{what}");
                let shadow = proof.shadow.as_ref().unwrap();
                assert!(shadow.is_exact(), "{what}: {shadow:?}");
                assert_eq!(proof.observations.shadow, 8, "{what}");
                assert_eq!(proof.observations.replay_positions, positions[11..].to_vec(), "{what}");
                assert_eq!(proof.observations.ordinary_launches_in_retained_forwards, 0, "{what}");
                assert_eq!(proof.observations.retained_submissions_in_ordinary_forwards, 0, "{what}");
                let tape = proof.tape.unwrap();
                let submission = proof.submission.unwrap();
                assert_eq!(usize::try_from(tape.dispatch_count).unwrap(), submission.dispatches, "{what}");
                match transport {
                    Transport::Pm4 => {
                        assert_eq!(submission.packets, 1, "{what}");
                        assert!(submission.pm4_dwords > 0, "{what}");
                    }
                    Transport::Aql => {
                        assert_eq!(u64::from(submission.packets), u64::from(tape.dispatch_count), "{what}")
                    }
                }
                // The whole run's state equals the ordinary-only run's, bit for bit.
                let all: Vec<u32> = (0..25).collect();
                assert_eq!(r.surfaces(), reference(target, example, &all), "{what}");
                let json = serde_json::to_value(&proof).unwrap();
                assert_eq!(json["state"], "ready");
                assert_eq!(json["request"]["backend"], "auto");
                assert_eq!(json["request"]["validate_first"], true);
            }
        }
    }
}

#[test]
fn auto_backend_is_ready_right_after_the_warm_up_and_ineligible_forwards_stay_ordinary() {
    let mut r = run(Target::Gfx1100, "window", config(Backend::Auto, Transport::Pm4));
    let mut positions = Vec::new();
    for p in 0..13u32 {
        // Every fourth forward is a prompt step (a new prompt token), the rest continue.
        let step = if p % 4 == 0 { Step::Prompt } else { Step::Continuation };
        let report = r.forward(p, step).unwrap();
        positions.push(p);
        let expected = match p {
            _ if step == Step::Prompt => Route::Ordinary,
            1..=3 => Route::Recorded,
            _ => Route::Retained,
        };
        assert_eq!(report.route, expected, "position {p}");
        assert_eq!(report.eligible, step == Step::Continuation, "position {p}");
    }
    let proof = r.controller.route_proof();
    assert_eq!(proof.state, "ready");
    assert_eq!(proof.observations.replay_positions, vec![5, 6, 7, 9, 10, 11]);
    assert_eq!(proof.observations.ineligible_forwards, 4);
    assert_eq!(r.surfaces(), reference(Target::Gfx1100, "window", &positions));
}

#[test]
fn a_controller_without_admission_or_explicit_request_stays_hip() {
    let mut c = ReplayController::new(ReplayConfig::default());
    c.configure_model_default(false);
    assert_eq!(c.state(), &State::Hip);
    c.configure_model_default(true);
    assert_eq!(c.state(), &State::Armed);
    let mut explicit = ReplayController::new(config(Backend::Auto, Transport::Pm4));
    explicit.configure_model_default(false);
    assert_eq!(explicit.state(), &State::Armed, "an explicit request arms without admission");
    let mut hip = ReplayController::new(config(Backend::Hip, Transport::Pm4));
    hip.configure_model_default(true);
    assert_eq!(hip.state(), &State::Hip);
}

#[test]
fn manual_lifecycle_validates_then_installs() {
    let manual = ReplayConfig { manual_capture: true, ..config(Backend::Auto, Transport::Pm4) };
    let mut r = run(Target::Gfx1030, "window", manual);
    assert!(r.controller.install_prepared_plan().is_err(), "nothing to install yet");
    assert!(r.controller.observe_shadow(&mut r.device, &mut r.funnel, r.workload.as_mut(), 0).unwrap().is_none());
    let report = r.controller.observe_shadow(&mut r.device, &mut r.funnel, r.workload.as_mut(), 1).unwrap().unwrap();
    assert!(report.is_exact(), "{report:?}");
    assert_eq!(report.positions, (2..=9).collect::<Vec<u32>>());
    assert_eq!(r.controller.state(), &State::ShadowValidated);
    assert_eq!(r.forward(10, Step::Prompt).unwrap().route, Route::Ordinary, "validated is not installed");
    r.controller.install_prepared_plan().unwrap();
    for p in 11..15 {
        assert_eq!(r.forward(p, Step::Continuation).unwrap().route, Route::Retained);
    }
}

#[test]
fn configuration_comes_from_flags_then_environment_and_refuses_unknown_values() {
    use engine::replay::ConfigFlags;
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    };
    let c = ReplayConfig::resolve(&ConfigFlags::default(), env(&[])).unwrap();
    assert_eq!((c.backend, c.explicit, c.transport, c.manual_capture), (Backend::Auto, false, Transport::Pm4, false));
    let c = ReplayConfig::resolve(
        &ConfigFlags::default(),
        env(&[
            ("REDLINE_REPLAY_BACKEND", "shadow"),
            ("REDLINE_REPLAY_TRANSPORT", "aql"),
            ("REDLINE_REPLAY_MANUAL_CAPTURE", "1"),
        ]),
    )
    .unwrap();
    assert_eq!((c.backend, c.explicit, c.transport, c.manual_capture), (Backend::Shadow, true, Transport::Aql, true));
    let flags = ConfigFlags { backend: Some("hip".into()), transport: Some("pm4".into()), manual_capture: None };
    let c = ReplayConfig::resolve(&flags, env(&[("REDLINE_REPLAY_BACKEND", "shadow")])).unwrap();
    assert_eq!(c.backend, Backend::Hip, "flags win over the environment");
    for (name, value, accepted) in [
        ("REDLINE_REPLAY_BACKEND", "retained", "hip, auto, shadow"),
        ("REDLINE_REPLAY_TRANSPORT", "pm5", "pm4, aql"),
        ("REDLINE_REPLAY_MANUAL_CAPTURE", "yes", "1, true, on, 0, false, off"),
    ] {
        let pairs: &'static [(&'static str, &'static str)] = Box::leak(Box::new([(name, value)]));
        let err = ReplayConfig::resolve(&ConfigFlags::default(), env(pairs)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(name) && text.contains(value) && text.contains(accepted), "{text}");
    }
    let flags = ConfigFlags { transport: Some("PM4".into()), ..ConfigFlags::default() };
    let err = ReplayConfig::resolve(&flags, env(&[])).unwrap_err();
    assert_eq!(err.source_name, "--transport");
}

/// A step with more bound words than the plan's mailbox line holds: 40 `fill`s whose `n` each
/// follow the position with their own addend, writing `n` floats of a 64-float row each. Each
/// `n` is declared (`row{i}.fill.n`), but the launch `undeclared`, when set.
struct ManyBindings {
    fill: Kernel,
    surfaces: Vec<Surface>,
    undeclared: Option<u32>,
    /// The launch whose store is declared as a read.
    read_only: Option<u32>,
}

impl ManyBindings {
    const LAUNCHES: u32 = 40;
    const ROW: u32 = 64;
}

impl Workload for ManyBindings {
    fn name(&self) -> &str {
        "many-bindings"
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        let base = self.surfaces[0].va;
        for i in 0..Self::LAUNCHES {
            let row = base + 4 * u64::from(i * Self::ROW);
            // CAST: small exact values.
            #[allow(clippy::cast_precision_loss)]
            let value = i as f32 + 0.5;
            // n = position + i % 7 + 1: a different addend per launch, at most ROW at max_position.
            let args = [ArgValue::Pointer(row), ArgValue::F32(value), ArgValue::U32(position + i % 7 + 1)];
            let bytes = 4 * u64::from(Self::ROW);
            let uses = [if self.read_only == Some(i) { Use::read(row, bytes) } else { Use::write(row, bytes) }];
            let name = format!("row{i}.fill.n");
            let declared = [DeclaredArg { name: &name, arg: 2, rule: Rule::Offset { addend: i64::from(i % 7 + 1) } }];
            let declared = if self.undeclared == Some(i) { &[][..] } else { &declared[..] };
            funnel.launch(device, &Launch::linear(&self.fill, &args, Self::ROW, 64, &uses).declaring(declared))?;
        }
        Ok(())
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn max_position(&self) -> u32 {
        Self::ROW - 7
    }
}

#[test]
fn more_bindings_than_the_mailbox_holds_replay_bit_exact_on_both_transports() {
    let build = |device: &mut SimDevice| -> Box<dyn Workload> {
        let bytes = kernels::artifact(&format!("{}/fill.co", device.target())).unwrap().bytes;
        let fill = Kernel::load_all(device, bytes, &["fill"]).unwrap().remove(0);
        let floats = u64::from(ManyBindings::LAUNCHES * ManyBindings::ROW);
        let surfaces = vec![Surface::allocate(device, "rows", 4 * floats, GUARD_BYTES).unwrap()];
        Box::new(ManyBindings { fill, surfaces, undeclared: None, read_only: None })
    };
    for transport in [Transport::Pm4, Transport::Aql] {
        let mut device = SimDevice::new(Target::Gfx1201);
        let workload = build(&mut device);
        let mut r = Run {
            device,
            funnel: Funnel::new(64),
            workload,
            controller: ReplayController::new(config(Backend::Auto, transport)),
        };
        r.controller.configure_model_default(true);
        let routes = r.decode(1..20);
        assert_eq!(routes[..3], [Route::Recorded; 3], "{transport:?}");
        assert!(
            routes[3..].iter().all(|&x| x == Route::Retained),
            "{transport:?}: {routes:?} {:?}",
            r.controller.state()
        );
        let plan = r.controller.plan().unwrap();
        assert_eq!(plan.patch_sites().len(), 40, "one site per launch");

        let mut reference_device = SimDevice::new(Target::Gfx1201);
        let mut reference = build(&mut reference_device);
        let mut funnel = Funnel::new(64);
        for p in 0..20 {
            reference.step(&mut reference_device, &mut funnel, p).unwrap();
        }
        let expected = reference.surfaces()[0].snapshot(&mut reference_device).unwrap();
        assert_eq!(r.surfaces()[0], expected, "{transport:?}");
    }
}

/// A launch whose position-dependent argument is left undeclared: the capture is refused, the
/// controller falls back for good, and the reason names the launch, its kernel, the word and its
/// two values.
#[test]
fn an_undeclared_position_word_refuses_the_capture_by_name() {
    let mut device = SimDevice::new(Target::Gfx1100);
    let bytes = kernels::artifact(&format!("{}/fill.co", device.target())).unwrap().bytes;
    let fill = Kernel::load_all(&mut device, bytes, &["fill"]).unwrap().remove(0);
    let floats = u64::from(ManyBindings::LAUNCHES * ManyBindings::ROW);
    let surfaces = vec![Surface::allocate(&mut device, "rows", 4 * floats, GUARD_BYTES).unwrap()];
    let workload = Box::new(ManyBindings { fill, surfaces, undeclared: Some(12), read_only: None });
    let mut r = Run {
        device,
        funnel: Funnel::new(64),
        workload,
        controller: ReplayController::new(config(Backend::Auto, Transport::Pm4)),
    };
    r.controller.configure_model_default(true);
    let routes = r.decode(1..8);
    assert!(routes.iter().all(|&x| x != Route::Retained), "{routes:?}");
    let State::Fallback { reason: FallbackReason::CaptureAborted { failure, detail } } = r.controller.state() else {
        panic!("{:?}", r.controller.state())
    };
    assert_eq!(*failure, CaptureFailure::Declaration);
    // Launch 12, fill's n at kernarg offset 12: 12 % 7 + 1 = 6 past the position (1 → 7, 2 → 8).
    assert!(
        detail.contains("launch 12 (fill): kernarg word at 12 went 7 -> 8 between positions 1 and 2")
            && detail.contains("no binding declares it"),
        "{detail}"
    );
}

/// A sliding window: `fill(row, 2.5, n = max(0, position + 1 - WINDOW))` writes the keys that
/// have left the window. Calibrated at positions 1 to 3, where `n` is 0 in every recording, the
/// declared rule keeps it bound, and the retained route crosses the window's start (position
/// `WINDOW`) bit-exact with the ordinary one on both transports.
struct SlidingWindow {
    fill: Kernel,
    surfaces: Vec<Surface>,
}

impl SlidingWindow {
    const WINDOW: u32 = 8;
    const ROW: u32 = 64;
}

impl Workload for SlidingWindow {
    fn name(&self) -> &str {
        "sliding-window"
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        let row = self.surfaces[0].va;
        let n = (position + 1).saturating_sub(Self::WINDOW);
        let args = [ArgValue::Pointer(row), ArgValue::F32(2.5), ArgValue::U32(n)];
        let uses = [Use::write(row, 4 * u64::from(Self::ROW))];
        let rule = Rule::Clamped { addend: 1 - i64::from(Self::WINDOW) };
        let declared = [DeclaredArg { name: "window.first_key", arg: 2, rule }];
        funnel
            .launch(device, &Launch::linear(&self.fill, &args, Self::ROW, 64, &uses).declaring(&declared))
            .map_err(WorkloadError::from)
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn max_position(&self) -> u32 {
        Self::ROW + Self::WINDOW - 2
    }
}

#[test]
fn a_declared_clamped_word_replays_past_the_calibration_window() {
    let build = |device: &mut SimDevice| -> Box<dyn Workload> {
        let bytes = kernels::artifact(&format!("{}/fill.co", device.target())).unwrap().bytes;
        let fill = Kernel::load_all(device, bytes, &["fill"]).unwrap().remove(0);
        let surfaces = vec![Surface::allocate(device, "row", 4 * u64::from(SlidingWindow::ROW), GUARD_BYTES).unwrap()];
        Box::new(SlidingWindow { fill, surfaces })
    };
    for transport in [Transport::Pm4, Transport::Aql] {
        let mut device = SimDevice::new(Target::Gfx1201);
        let workload = build(&mut device);
        let mut r = Run {
            device,
            funnel: Funnel::new(64),
            workload,
            controller: ReplayController::new(config(Backend::Auto, transport)),
        };
        r.controller.configure_model_default(true);
        let positions = 1..40;
        let routes = r.decode(positions.clone());
        assert_eq!(routes[..3], [Route::Recorded; 3], "{transport:?}");
        assert!(routes[3..].iter().all(|&x| x == Route::Retained), "{transport:?}: {routes:?}");
        let plan = r.controller.plan().unwrap();
        assert_eq!(plan.patch_sites().len(), 1, "the window's word is patched although it was 0 in every recording");

        let mut reference_device = SimDevice::new(Target::Gfx1201);
        let mut reference = build(&mut reference_device);
        let mut funnel = Funnel::new(64);
        for p in std::iter::once(0).chain(positions.clone()) {
            reference.step(&mut reference_device, &mut funnel, p).unwrap();
        }
        let expected = reference.surfaces()[0].snapshot(&mut reference_device).unwrap();
        // 39 + 1 - 8 = 32 keys have left the window: 32 floats hold 2.5.
        let written = expected.chunks(4).filter(|w| *w == 2.5f32.to_le_bytes()).count();
        assert_eq!(written, 32);
        assert_eq!(r.surfaces()[0], expected, "{transport:?}");
    }
}

/// A launch whose store is declared as a read (the tape's dependency derivation would order
/// nothing by it): the capture is refused against the kernel's own declared effects, by launch,
/// kernel and argument, and the controller falls back for good. With the store declared, the
/// same workload reaches the retained route (above).
#[test]
fn a_store_left_out_of_the_declared_effects_refuses_the_capture_by_name() {
    let mut device = SimDevice::new(Target::Gfx1100);
    let bytes = kernels::artifact(&format!("{}/fill.co", device.target())).unwrap().bytes;
    let fill = Kernel::load_all(&mut device, bytes, &["fill"]).unwrap().remove(0);
    let floats = u64::from(ManyBindings::LAUNCHES * ManyBindings::ROW);
    let surfaces = vec![Surface::allocate(&mut device, "rows", 4 * floats, GUARD_BYTES).unwrap()];
    let workload = Box::new(ManyBindings { fill, surfaces, undeclared: None, read_only: Some(5) });
    let mut r = Run {
        device,
        funnel: Funnel::new(64),
        workload,
        controller: ReplayController::new(config(Backend::Auto, Transport::Pm4)),
    };
    r.controller.configure_model_default(true);
    let routes = r.decode(1..8);
    assert!(routes.iter().all(|&x| x != Route::Retained), "{routes:?}");
    let State::Fallback { reason: FallbackReason::CaptureAborted { failure, detail } } = r.controller.state() else {
        panic!("{:?}", r.controller.state())
    };
    assert_eq!(*failure, CaptureFailure::UndeclaredEffect);
    // Launch 5 stores n = position + 5 % 7 + 1 = 7 floats at position 1: 28 bytes, at row 5.
    let offset = GUARD_BYTES + 4 * 5 * u64::from(ManyBindings::ROW);
    assert!(
        detail.contains(&format!("launch 5 (fill): argument out may write 28 bytes at offset {offset}")),
        "{detail}"
    );
}
