//! The retained route on gemma3 models, on the soft device:
//! - the tiny gemma3 with Gemma 3 270M's window (512 keys) and a 2,048-position cache, captured at
//!   early positions, run in lockstep with the ordinary route over a fixed token sequence: every
//!   surface (activations, KV caches, logits, scratch) is bit for bit the ordinary route's at
//!   positions 8, 510, 511, 512, 513, 700 and 2047 — on both sides of the window's start, where
//!   the declared first key leaves 0;
//! - Gemma 3 270M itself (`REDLINE_GEMMA3_GGUF`): shadow-validated, then Ready with observed
//!   retained forwards, and the greedy tokens of the ordinary route.

use engine::funnel::Funnel;
use engine::model::{Gemma3, LanguageModel};
use engine::plan::Transport;
use engine::replay::{Backend, ReplayConfig, ReplayController, Route, State, Step};
use engine::workload::Workload;
use gguf::{Gguf, TinyGemma3Config, tiny_gemma3};
use pm4_encoding::Target;
use soft_device::SimDevice;

/// Positions where every surface is compared.
const CHECKED: [u32; 7] = [8, 510, 511, 512, 513, 700, 2047];

fn config(backend: Backend, validate_first: bool) -> ReplayConfig {
    ReplayConfig { backend, transport: Transport::Pm4, explicit: true, validate_first, ..ReplayConfig::default() }
}

/// One route: a device, the model, a funnel and a controller.
struct Arm {
    device: SimDevice,
    model: Gemma3,
    funnel: Funnel,
    controller: ReplayController,
}

impl Arm {
    fn new(file: &Gguf, context: u32, config: ReplayConfig) -> Self {
        let mut device = SimDevice::new(Target::Gfx1151);
        let model = Gemma3::load_model(&mut device, file, context).unwrap();
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
fn every_surface_is_the_ordinary_routes_on_both_sides_of_a_512_key_window() {
    let c = TinyGemma3Config { window: 512, context_length: 2048, ..TinyGemma3Config::default() };
    let file = Gguf::parse(tiny_gemma3(&c)).unwrap();
    let vocab = Gemma3::load_model(&mut SimDevice::new(Target::Gfx1151), &file, 16).unwrap().vocab();
    let token = |p: u32| if p == 0 { 2 } else { 6 + (p * 7919) % (vocab - 6) };
    let mut ordinary = Arm::new(&file, 2048, config(Backend::Hip, false));
    let mut retained = Arm::new(&file, 2048, config(Backend::Auto, true));
    let mut routes = Vec::new();
    for position in 0..2048 {
        let step = if position == 0 { Step::Prompt } else { Step::Continuation };
        assert_eq!(ordinary.forward(token(position), position, step), Route::Ordinary);
        routes.push(retained.forward(token(position), position, step));
        if CHECKED.contains(&position) {
            let (a, b) = (ordinary.surfaces(), retained.surfaces());
            for ((name, x), (_, y)) in a.iter().zip(&b) {
                assert!(x == y, "position {position}: surface {name} differs from the ordinary route's");
            }
        }
    }
    assert_eq!(retained.controller.state(), &State::Ready, "{:?}", retained.controller.state());
    // Every checked position was replayed: validated by the shadow oracle against the ordinary
    // arm (position 8, within the validation forwards), or retained.
    assert_eq!(routes[8], Route::Shadow);
    for p in &CHECKED[1..] {
        assert_eq!(routes[usize::try_from(*p).unwrap()], Route::Retained, "position {p}");
    }
    let tape = retained.controller.tape().unwrap();
    assert!(tape.position() < 8, "the tape was recorded below the window's start (at {})", tape.position());
}

#[test]
fn gemma_3_270m_reaches_ready_and_replays_its_greedy_tokens() {
    let Ok(path) = std::env::var("REDLINE_GEMMA3_GGUF") else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "REDLINE_GEMMA3_GGUF is not set: CI must run this test");
        println!("REDLINE_GEMMA3_GGUF not set: the Gemma 3 270M route test did nothing");
        return;
    };
    let file = Gguf::open(&path).unwrap();
    // "The capital of France is" as the reference fixture tokenizes it, BOS first.
    let prompt = [2u32, 818, 5279, 529, 7001, 563];
    let decode = |config: ReplayConfig| {
        let mut arm = Arm::new(&file, 256, config);
        let mut tokens = prompt.to_vec();
        let mut routes = Vec::new();
        for (position, &t) in (0u32..).zip(&prompt) {
            routes.push(arm.forward(t, position, Step::Prompt));
        }
        for position in 6..30 {
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
    assert!(retained >= 10, "{retained} retained forwards: {routes:?}");
    assert_eq!(arm.controller.observations().ordinary_launches_in_retained_forwards, 0);
    assert_eq!(r_tokens, tokens);
    // The reference fixture's first greedy tokens: " the capital of the country of France."
    assert_eq!(tokens[6..10], [506, 5279, 529, 506]);
}
