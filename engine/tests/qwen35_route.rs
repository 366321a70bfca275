//! The retained route on the tiny qwen35 model (four gated-DeltaNet layers with a convolution of 4
//! taps and state matrices, two full-attention layers), on the soft device:
//! - the controller records, prepares and reaches Ready, then replays observed retained forwards
//!   with no ordinary launch in them, and the greedy tokens and logits are the ordinary route's;
//! - the tape's only position-bound words are the full-attention layers' declared arguments (the
//!   DeltaNet launches are the same bytes at every position), and every launch's declared uses
//!   cover what its kernel's catalogued effects say it touches (the state updates as
//!   read-write);
//! - the shadow oracle, from a reset state, finds all three arms bit for bit equal in every
//!   surface (logits, KV caches, convolution and recurrent state, activations, guards) at the 8
//!   positions 0..=7, which include the first ones after the convolution window fills (3, 4 and
//!   5), and at two far positions;
//! - run over every surface but the convolution state, or but the recurrent state, it diverges
//!   and names the state it left out;
//! - `reset_state` zeroes both state surfaces and nothing else.

use engine::funnel::Funnel;
use engine::model::{LanguageModel, Qwen35};
use engine::plan::Transport;
use engine::replay::{Backend, ReplayConfig, ReplayController, Route, State, Step};
use engine::shadow::{self, ShadowReport};
use engine::workload::{Surface, Workload};
use gguf::{Gguf, TinyQwen35Config, tiny_qwen35};
use hal::Device;
use kernels::effects::Extent;
use pm4_encoding::Target;
use soft_device::SimDevice;
use tape_core::record::{Effects, LaunchRecord};
use tape_core::tape::Tape;

const CONTEXT: u32 = 256;
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn file() -> Gguf {
    Gguf::parse(tiny_qwen35(&TinyQwen35Config::default())).unwrap()
}

fn token(position: u32) -> u32 {
    3 + (position * 7919 + 11) % 300
}

fn config(backend: Backend) -> ReplayConfig {
    ReplayConfig { backend, transport: Transport::Pm4, explicit: true, ..ReplayConfig::default() }
}

/// A device, the model and a controller that has recorded and prepared the step: position 0 a
/// prompt token, then continuations until Ready.
struct Arm {
    device: SimDevice,
    model: Qwen35,
    funnel: Funnel,
    controller: ReplayController,
}

impl Arm {
    fn new(file: &Gguf, backend: Backend) -> Self {
        let mut device = SimDevice::new(Target::Gfx1100);
        let model = Qwen35::load_model(&mut device, file, CONTEXT).unwrap();
        let mut controller = ReplayController::new(config(backend));
        controller.configure_model_default(true);
        Self { device, model, funnel: Funnel::new(8192), controller }
    }

    fn forward(&mut self, token: u32, position: u32) -> Route {
        self.model.set_token(token).unwrap();
        let step = if position == 0 { Step::Prompt } else { Step::Continuation };
        let report = self
            .controller
            .forward(&mut self.device, &mut self.funnel, &mut self.model, position, step)
            .unwrap_or_else(|e| panic!("position {position}: {e}"));
        report.route
    }

    /// Forwards from position 0 until the controller is Ready; the tape it recorded.
    fn ready(&mut self) -> Tape {
        for position in 0..8 {
            self.forward(token(position), position);
            if self.controller.state() == &State::Ready {
                return self.controller.tape().unwrap().clone();
            }
        }
        panic!("not Ready after 8 forwards: {:?}", self.controller.state());
    }

    /// The oracle over `surfaces` at `positions`, from the state the model holds, one position
    /// per run so that each takes its own token.
    fn shadow(&mut self, tape: &Tape, positions: &[u32], surfaces: &[Surface]) -> ShadowReport {
        let mut plan = engine::plan::prepare(&mut self.device, tape).unwrap();
        let mut all: Option<ShadowReport> = None;
        for &position in positions {
            self.model.set_token(token(position)).unwrap();
            let report = shadow::run_over(
                &mut self.device,
                &mut self.funnel,
                &mut self.model,
                tape,
                &mut plan,
                &[position],
                TIMEOUT,
                surfaces,
            )
            .unwrap();
            match &mut all {
                None => all = Some(report),
                Some(a) => {
                    a.positions.extend(report.positions);
                    a.divergences.extend(report.divergences);
                }
            }
        }
        plan.release(&mut self.device).unwrap();
        all.unwrap()
    }

    fn used(&mut self, name: &str) -> Vec<u8> {
        let s = self.model.surfaces().iter().find(|s| s.name == name).unwrap().clone();
        let mut bytes = vec![0u8; usize::try_from(s.bytes).unwrap()];
        self.device.read(s.va, &mut bytes).unwrap();
        bytes
    }
}

#[test]
fn the_retained_route_is_ready_and_replays_the_ordinary_routes_tokens() {
    let file = file();
    let decode = |backend| {
        let mut arm = Arm::new(&file, backend);
        let (mut tokens, mut routes, mut logits) = (vec![token(0)], Vec::new(), Vec::new());
        for position in 0..40 {
            routes.push(arm.forward(tokens[usize::try_from(position).unwrap()], position));
            let row = arm.model.logits(&mut arm.device).unwrap();
            let next = (0..row.len()).fold(0, |b, i| if row[i] > row[b] { i } else { b });
            tokens.push(u32::try_from(next).unwrap());
            logits.push(row.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
        (tokens, routes, logits, arm)
    };
    let (tokens, _, logits, _) = decode(Backend::Hip);
    let (r_tokens, routes, r_logits, arm) = decode(Backend::Auto);
    assert_eq!(arm.controller.state(), &State::Ready, "{:?}", arm.controller.state());
    let retained = routes.iter().filter(|&&r| r == Route::Retained).count();
    assert!(retained >= 30, "{retained} retained forwards: {routes:?}");
    let obs = arm.controller.observations();
    assert_eq!(obs.ordinary_launches_in_retained_forwards, 0);
    assert_eq!(obs.replay_positions.len(), retained);
    assert_eq!(r_tokens, tokens, "the retained route's greedy tokens");
    assert!(r_logits == logits, "the retained route's logits, bit for bit");
}

/// The declared uses of `record` against its kernel's catalogued effects: every range the kernel
/// may touch through a pointer lies in one of the launch's effects with that access.
fn check_uses_cover_the_catalogued_effects(record: &LaunchRecord) {
    let kernel = kernels::catalog::MODULES
        .iter()
        .flat_map(|m| m.kernels)
        .find(|k| k.signature.name == record.artifact.symbol)
        .unwrap_or_else(|| panic!("{} is catalogued", record.artifact.symbol));
    let arg = |i: usize| {
        let a = kernel.signature.explicit_args[i];
        u64::from(u32::from_le_bytes(record.kernarg[a.offset..a.offset + 4].try_into().unwrap()))
    };
    let g = record.geometry;
    let count = u64::from(g.grid_work_items[0]).div_ceil(u64::from(g.workgroup_work_items[0]));
    fn eval(e: &Extent, arg: &dyn Fn(usize) -> u64, grid: (u64, u64, u64)) -> u64 {
        match *e {
            Extent::Const(v) => v,
            Extent::Arg(i) => arg(i),
            Extent::GridSizeX => grid.0,
            Extent::WorkgroupSizeX => grid.1,
            Extent::WorkgroupCountX => grid.2,
            Extent::Mul(a, b) => eval(a, arg, grid) * eval(b, arg, grid),
            Extent::Min(a, b) => eval(a, arg, grid).min(eval(b, arg, grid)),
            Extent::Add(a, b) => eval(a, arg, grid) + eval(b, arg, grid),
            Extent::Div(a, d) => eval(a, arg, grid) / d,
        }
    }
    let grid = (u64::from(g.grid_work_items[0]), u64::from(g.workgroup_work_items[0]), count);
    let Effects::Known(effects) = &record.effects else { panic!("{}: unknown effects", record.artifact.symbol) };
    for decl in kernel.effects.effects {
        let bytes = eval(&decl.bytes, &arg, grid);
        if bytes == 0 {
            continue;
        }
        let offset = u32::try_from(kernel.signature.explicit_args[decl.arg_index].offset).unwrap();
        let pointer = record.pointers.iter().find(|p| p.kernarg_offset == offset).unwrap();
        let covered = effects.iter().any(|e| {
            e.allocation == pointer.allocation
                && e.offset_bytes <= pointer.offset_bytes
                && pointer.offset_bytes + bytes <= e.offset_bytes + e.len_bytes
                && (!decl.access.writes() || e.access.writes())
                && (!decl.access.reads() || e.access.reads())
        });
        assert!(
            covered,
            "{}.{}: {bytes} bytes {:?} not in the launch's uses",
            kernel.signature.name, decl.arg_name, decl.access
        );
    }
}

#[test]
fn only_the_full_attention_launches_follow_the_position_and_every_use_covers_its_kernels_effects() {
    let file = file();
    let mut arm = Arm::new(&file, Backend::Auto);
    let tape = arm.ready();
    let mut names: Vec<&str> = tape.bindings().iter().map(|b| b.name.as_str()).collect();
    names.sort_unstable();
    let mut expected: Vec<String> = Vec::new();
    for layer in [2, 5] {
        for what in ["attention.n", "kv_store_k.position", "kv_store_v.position", "rope_k.pos0", "rope_q.pos0"] {
            expected.push(format!("layer{layer}.{what}"));
        }
    }
    assert_eq!(names, expected);
    for record in tape.launches() {
        check_uses_cover_the_catalogued_effects(record);
    }
    let state_writers: Vec<&str> = tape
        .launches()
        .iter()
        .filter(|r| ["ssm_conv_silu", "gated_delta_net"].contains(&r.artifact.symbol.as_str()))
        .map(|r| r.artifact.symbol.as_str())
        .collect();
    assert_eq!(state_writers.len(), 8, "a convolution and a delta rule in each of the four DeltaNet layers");
}

#[test]
fn the_shadow_oracle_is_exact_across_the_convolution_window_and_needs_both_states() {
    let file = file();
    let mut arm = Arm::new(&file, Backend::Auto);
    let tape = arm.ready();
    let all = arm.model.surfaces().to_vec();
    let kinds: Vec<(&str, &str)> = all.iter().filter_map(|s| s.state.map(|k| (s.name.as_str(), k.as_str()))).collect();
    assert_eq!(kinds, [("conv_state", "convolution"), ("recurrent_state", "recurrent")]);

    // A new sequence from position 0: the convolution window fills at position 3 (kernel 4).
    arm.model.reset_state(&mut arm.device).unwrap();
    let report = arm.shadow(&tape, &[0, 1, 2, 3, 4, 5, 6, 7], &all);
    assert_eq!(report.positions, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(report.surfaces, all.len());
    assert!(report.is_exact(), "{:?}", report.divergences);
    assert!(report.uncovered_state(&all).is_empty());
    assert_ne!(arm.used("conv_state"), vec![0; arm.used("conv_state").len()]);
    let report = arm.shadow(&tape, &[100, CONTEXT - 1], &all);
    assert!(report.is_exact(), "{:?}", report.divergences);

    for left_out in ["conv_state", "recurrent_state"] {
        let some: Vec<Surface> = all.iter().filter(|s| s.name != left_out).cloned().collect();
        arm.model.reset_state(&mut arm.device).unwrap();
        let report = arm.shadow(&tape, &[0, 1, 2, 3, 4, 5, 6, 7], &some);
        assert!(!report.is_exact(), "{left_out} left out: the arms read each other's state");
        assert!(report.divergences.iter().any(|d| d.surface == "logits"), "{left_out}: {:?}", report.divergences);
        assert_eq!(report.uncovered_state(&all), [left_out]);
    }
}

#[test]
fn reset_state_zeroes_both_state_surfaces_and_nothing_else() {
    let file = file();
    let mut arm = Arm::new(&file, Backend::Hip);
    for position in 0..6 {
        arm.forward(token(position), position);
    }
    let zero = |v: &[u8]| v.iter().all(|&b| b == 0);
    for name in ["conv_state", "recurrent_state", "k_cache", "logits"] {
        assert!(!zero(&arm.used(name)), "{name} holds the sequence");
    }
    let k_cache = arm.used("k_cache");
    arm.model.reset_state(&mut arm.device).unwrap();
    assert!(zero(&arm.used("conv_state")) && zero(&arm.used("recurrent_state")));
    assert_eq!(arm.used("k_cache"), k_cache, "the KV cache is not sequence state: later positions overwrite it");
    // After the reset, position 0 gives what a freshly loaded model gives.
    arm.forward(token(0), 0);
    let again = arm.model.logits(&mut arm.device).unwrap();
    let mut fresh = Arm::new(&file, Backend::Hip);
    fresh.forward(token(0), 0);
    assert_eq!(fresh.model.logits(&mut fresh.device).unwrap(), again);
}
