//! The retained route on lfm2 models, on the soft device. The tiny lfm2 (`gguf::tiny_lfm2`:
//! four convolution blocks with `l_cache` 3, two attention blocks) and the published LFM2-350M
//! shape (`gguf::shaped_lfm2`, random weights):
//!
//! - the route reaches Ready and replays: in lockstep with an ordinary-only arm over a token
//!   sequence, every surface (activations, KV caches, the convolution state, logits) is bit for
//!   bit the ordinary arm's at the checked positions (recorded at 2 to 4, shadow-validated at 8,
//!   replayed at 13, 40 and 127, the last of the context); LFM2-350M's shape reaches Ready and
//!   its retained forwards give the ordinary route's greedy tokens;
//! - the shadow oracle, from a new sequence, is bit-exact on every surface (logits, KV caches,
//!   the convolution state) at 8 positions, among them 2, 3 and 4: the first positions whose
//!   convolution window holds only the sequence's own inputs (`l_cache - 1`, `l_cache`,
//!   `l_cache + 1`);
//! - the oracle needs the convolution state: run over every surface but `conv_state`, its arms
//!   start from different states and diverge, and the report names `conv_state` as uncovered;
//! - `reset_state` zeroes the convolution state (read back) and leaves the KV cache, and a
//!   sequence after it is bit for bit a freshly loaded model's.

use engine::funnel::Funnel;
use engine::model::{LanguageModel, Lfm2};
use engine::plan::Transport;
use engine::replay::{Backend, ReplayConfig, ReplayController, Route, State, Step};
use engine::workload::{StateKind, Surface, Workload};
use gguf::{Gguf, TinyLfm2Config, tiny_lfm2};
use hal::Device;
use pm4_encoding::Target;
use soft_device::SimDevice;

const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn config(backend: Backend, validate_first: bool) -> ReplayConfig {
    ReplayConfig { backend, transport: Transport::Pm4, explicit: true, validate_first, ..ReplayConfig::default() }
}

fn tiny() -> Gguf {
    Gguf::parse(tiny_lfm2(&TinyLfm2Config::default())).unwrap()
}

/// A token of the tiny vocabulary for `position` (BOS first, then a spread of ids).
fn token(position: u32, vocab: u32) -> u32 {
    if position == 0 { 1 } else { 8 + (position * 7919) % (vocab - 8) }
}

/// One route: a device, the model, a funnel and a controller.
struct Arm {
    device: SimDevice,
    model: Lfm2,
    funnel: Funnel,
    controller: ReplayController,
}

impl Arm {
    fn new(file: &Gguf, context: u32, config: ReplayConfig) -> Self {
        let mut device = SimDevice::new(Target::Gfx1151);
        let model = Lfm2::load_model(&mut device, file, context).unwrap();
        let mut controller = ReplayController::new(config);
        controller.configure_model_default(true);
        Self { device, model, funnel: Funnel::new(8192), controller }
    }

    fn forward(&mut self, token: u32, position: u32, step: Step) -> Route {
        self.model.set_token(token).unwrap();
        let report = self
            .controller
            .forward(&mut self.device, &mut self.funnel, &mut self.model, position, step)
            .unwrap_or_else(|e| panic!("position {position}: {e}"));
        report.route
    }

    fn surfaces(&mut self) -> Vec<(String, Vec<u8>)> {
        let surfaces = self.model.surfaces().to_vec();
        surfaces.iter().map(|s| (s.name.clone(), s.snapshot(&mut self.device).unwrap())).collect()
    }
}

#[test]
fn the_tiny_model_reaches_ready_and_replays_every_surface_bit_for_bit() {
    const CHECKED: [u32; 7] = [2, 3, 4, 8, 13, 40, 127];
    let file = tiny();
    let mut ordinary = Arm::new(&file, 128, config(Backend::Hip, false));
    let mut retained = Arm::new(&file, 128, config(Backend::Auto, true));
    let vocab = ordinary.model.vocab();
    let mut routes = Vec::new();
    for position in 0..128 {
        let step = if position < 2 { Step::Prompt } else { Step::Continuation };
        assert_eq!(ordinary.forward(token(position, vocab), position, step), Route::Ordinary);
        routes.push(retained.forward(token(position, vocab), position, step));
        if CHECKED.contains(&position) {
            let (a, b) = (ordinary.surfaces(), retained.surfaces());
            assert!(a.iter().any(|(name, _)| name == "conv_state"), "the state is a surface");
            for ((name, x), (_, y)) in a.iter().zip(&b) {
                assert!(x == y, "position {position}: surface {name} differs from the ordinary route's");
            }
        }
    }
    assert_eq!(retained.controller.state(), &State::Ready, "{:?}", retained.controller.state());
    let obs = retained.controller.observations();
    assert!(obs.shadow > 0, "shadow-validated before replaying: {obs:?}");
    assert_eq!(obs.ordinary_launches_in_retained_forwards, 0);
    // Two prompt steps, three recorded continuations (2 to 4: where the convolution window
    // fills), eight shadow-validated ones (5 to 12), and every later one replayed.
    assert_eq!(routes[..2], [Route::Ordinary; 2]);
    assert_eq!(routes[2..5], [Route::Recorded; 3]);
    assert_eq!(routes[5..13], [Route::Shadow; 8]);
    assert!(routes[13..].iter().all(|&r| r == Route::Retained), "{routes:?}");
    assert_eq!(obs.replay_positions, (13..128).collect::<Vec<u32>>());
}

/// Captures a tape of `model` on `device` at positions 0..6 (two prompt steps, then
/// continuations) and prepares it.
fn capture(device: &mut SimDevice, model: &mut Lfm2) -> (tape_core::tape::Tape, engine::plan::PreparedPlan) {
    let mut controller = ReplayController::new(config(Backend::Auto, false));
    controller.configure_model_default(true);
    let mut funnel = Funnel::new(8192);
    let vocab = model.vocab();
    for position in 0..6u32 {
        model.set_token(token(position, vocab)).unwrap();
        let step = if position < 2 { Step::Prompt } else { Step::Continuation };
        controller.forward(device, &mut funnel, model, position, step).unwrap();
    }
    assert_eq!(controller.state(), &State::Ready);
    let tape = controller.tape().unwrap().clone();
    let plan = engine::plan::prepare(device, &tape).unwrap();
    (tape, plan)
}

/// The shadow oracle over `surfaces` at each of `positions` in turn, each with its own token,
/// from a new sequence; the divergences and the last report's uncovered state.
fn shadow(
    device: &mut SimDevice,
    model: &mut Lfm2,
    (tape, plan): &mut (tape_core::tape::Tape, engine::plan::PreparedPlan),
    positions: &[u32],
    surfaces: &[Surface],
) -> (usize, Vec<String>) {
    model.reset_state(device).unwrap();
    let mut funnel = Funnel::new(8192);
    let vocab = model.vocab();
    let (mut divergences, mut uncovered) = (0, Vec::new());
    for &position in positions {
        model.set_token(token(position, vocab)).unwrap();
        let report =
            engine::shadow::run_over(device, &mut funnel, model, tape, plan, &[position], TIMEOUT, surfaces).unwrap();
        assert_eq!(report.positions, [position]);
        divergences += report.divergences.len();
        uncovered = report.uncovered_state(model.surfaces()).into_iter().map(str::to_owned).collect();
    }
    (divergences, uncovered)
}

#[test]
fn shadow_parity_is_bit_exact_on_every_surface_and_needs_the_convolution_state() {
    let file = tiny();
    let mut device = SimDevice::new(Target::Gfx1100);
    let mut model = Lfm2::load_model(&mut device, &file, 128).unwrap();
    let mut prepared = capture(&mut device, &mut model);
    // A new sequence: positions 0 and 1 still read zeros from the state, 2 (l_cache - 1) is the
    // first whose window holds only this sequence's inputs, then 3 and 4 past it, and later
    // positions up to the last of the context.
    let positions = [0, 1, 2, 3, 4, 5, 6, 127];
    let all = model.surfaces().to_vec();
    let state: Vec<&str> = all.iter().filter(|s| s.state.is_some()).map(|s| s.name.as_str()).collect();
    assert_eq!(state, ["conv_state"]);
    assert_eq!(all.iter().find(|s| s.name == "conv_state").unwrap().state, Some(StateKind::Convolution));
    let (divergences, uncovered) = shadow(&mut device, &mut model, &mut prepared, &positions, &all);
    assert_eq!(divergences, 0, "every surface, the convolution state included, is bit-exact");
    assert!(uncovered.is_empty(), "{uncovered:?}");

    // Leave the convolution state out: each arm starts from the state the arm before it left, the
    // outputs of the convolution blocks differ, and the oracle says what it did not cover.
    let without: Vec<Surface> = all.iter().filter(|s| s.name != "conv_state").cloned().collect();
    let (divergences, uncovered) = shadow(&mut device, &mut model, &mut prepared, &positions[..3], &without);
    assert!(divergences > 0, "without the convolution state the arms diverge");
    assert_eq!(uncovered, ["conv_state"]);
    prepared.1.release(&mut device).unwrap();
}

fn read(device: &mut SimDevice, surface: &Surface) -> Vec<u8> {
    let mut bytes = vec![0u8; usize::try_from(surface.bytes).unwrap()];
    device.read(surface.va, &mut bytes).unwrap();
    bytes
}

#[test]
fn reset_state_zeroes_the_convolution_state_and_a_new_sequence_is_a_fresh_models() {
    let file = tiny();
    let decode = |device: &mut SimDevice, model: &mut Lfm2, funnel: &mut Funnel| -> Vec<Vec<f32>> {
        let vocab = model.vocab();
        (0..6u32)
            .map(|position| {
                model.set_token(token(position + 3, vocab)).unwrap();
                model.prepare_step(device, funnel, position).unwrap();
                model.step(device, funnel, position).unwrap();
                model.logits(device).unwrap()
            })
            .collect()
    };
    let mut fresh_device = SimDevice::new(Target::Gfx1100);
    let mut fresh = Lfm2::load_model(&mut fresh_device, &file, 64).unwrap();
    let expected = decode(&mut fresh_device, &mut fresh, &mut Funnel::new(8192));

    let mut device = SimDevice::new(Target::Gfx1100);
    let mut model = Lfm2::load_model(&mut device, &file, 64).unwrap();
    let mut funnel = Funnel::new(8192);
    let first = decode(&mut device, &mut model, &mut funnel);
    assert_eq!(first, expected);
    let surfaces = model.surfaces().to_vec();
    let find = |name: &str| surfaces.iter().find(|s| s.name == name).unwrap().clone();
    let (state, k_cache) = (find("conv_state"), find("k_cache"));
    assert!(read(&mut device, &state).iter().any(|&b| b != 0), "six steps left a state");
    let cache_before = read(&mut device, &k_cache);
    model.reset_state(&mut device).unwrap();
    assert!(read(&mut device, &state).iter().all(|&b| b == 0), "the state reads back as zeros");
    assert_eq!(state.guard_violation(&state.snapshot(&mut device).unwrap()), None, "its guards are kept");
    assert_eq!(read(&mut device, &k_cache), cache_before, "the KV cache is left: a sequence overwrites it");
    // The same sequence again: bit for bit the fresh model's logits.
    assert_eq!(decode(&mut device, &mut model, &mut funnel), expected);
}

#[test]
fn lfm2_350m_reaches_ready_and_replays_the_ordinary_routes_greedy_tokens() {
    let path =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lfm2-350m-route-{}.gguf", std::process::id()));
    gguf::shaped_lfm2::write_lfm2_350m(&path, 3).unwrap();
    let file = Gguf::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let prompt = [1u32, 1059, 3406, 522, 6124, 14];
    let decode = |config: ReplayConfig| {
        let mut arm = Arm::new(&file, 64, config);
        let mut tokens = prompt.to_vec();
        let mut routes = Vec::new();
        for (position, &t) in (0u32..).zip(&prompt) {
            routes.push(arm.forward(t, position, Step::Prompt));
        }
        for position in 6..26 {
            let logits = arm.model.logits(&mut arm.device).unwrap();
            let next =
                u32::try_from((0..logits.len()).fold(0, |b, i| if logits[i] > logits[b] { i } else { b })).unwrap();
            tokens.push(next);
            routes.push(arm.forward(next, position, Step::Continuation));
        }
        (tokens, routes, arm)
    };
    let (tokens, _, _) = decode(config(Backend::Hip, false));
    let (r_tokens, routes, arm) = decode(config(Backend::Auto, true));
    assert_eq!(arm.controller.state(), &State::Ready, "{:?}", arm.controller.state());
    let retained = routes.iter().filter(|&&r| r == Route::Retained).count();
    assert!(retained >= 5, "{retained} retained forwards: {routes:?}");
    assert_eq!(arm.controller.observations().ordinary_launches_in_retained_forwards, 0);
    assert_eq!(r_tokens, tokens);
}
