//! A convolution-state update whose launch declares the state as read only (the store left out
//! of the effects the tape's dependency derivation sees) is refused at capture: one step of
//! LFM2's `shortconv` on a `conv_state` surface, with every other argument declared as the
//! kernel declares it, falls back with `UndeclaredEffect` naming the kernel, its `state`
//! argument, the write and the state's bytes; declared read-write, the same step reaches the
//! retained route and replays the ordinary route's state bit for bit.

use engine::funnel::{Funnel, Kernel, Launch, Use};
use engine::plan::Transport;
use engine::replay::{Backend, CaptureFailure, FallbackReason, ReplayConfig, ReplayController, Route, State, Step};
use engine::workload::{GUARD_BYTES, StateKind, Surface, Workload, WorkloadError};
use hal::Device;
use kernarg_abi::layout::ArgValue;
use pm4_encoding::Target;
use soft_device::SimDevice;

const DIM: u32 = 64;
const D_CONV: u32 = 2;

/// One short convolution per step over a fixed input, its state carried from step to step.
struct ShortConv {
    kernel: Kernel,
    surfaces: Vec<Surface>,
    state_access: Use,
}

impl ShortConv {
    fn new(device: &mut SimDevice, state_declared_as_read: bool) -> Self {
        let bytes = kernels::artifact(&format!("{}/lfm2.co", device.target())).unwrap().bytes;
        let kernel = Kernel::load_all(device, bytes, &["shortconv"]).unwrap().remove(0);
        let floats = |n: u32| 4 * u64::from(n);
        let surfaces = vec![
            Surface::allocate(device, "out", floats(DIM), GUARD_BYTES).unwrap(),
            Surface::allocate(device, "conv_state", floats(DIM * D_CONV), GUARD_BYTES)
                .unwrap()
                .holding(StateKind::Convolution),
            Surface::allocate(device, "bcx", floats(3 * DIM), GUARD_BYTES).unwrap(),
            Surface::allocate(device, "weight", floats(DIM * (D_CONV + 1)), GUARD_BYTES).unwrap(),
        ];
        // Inputs that change the state at every step: B = 1, C = 1, x = 0.25 + channel / 64.
        let mut bcx = vec![1.0f32; 2 * DIM as usize];
        bcx.extend((0..DIM).map(|c| 0.25 + c as f32 / 64.0));
        surfaces[2].fill(device, &bcx.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
        let taps: Vec<u8> = (0..DIM * (D_CONV + 1)).flat_map(|i| (0.5 + (i % 3) as f32).to_le_bytes()).collect();
        surfaces[3].fill(device, &taps).unwrap();
        let state = &surfaces[1];
        let state_access = if state_declared_as_read {
            Use::read(state.va, state.bytes)
        } else {
            Use::read_write(state.va, state.bytes)
        };
        Self { kernel, surfaces, state_access }
    }
}

impl Workload for ShortConv {
    fn name(&self) -> &str {
        "shortconv"
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, _position: u32) -> Result<(), WorkloadError> {
        let [out, state, bcx, weight] = [0, 1, 2, 3].map(|i| &self.surfaces[i]);
        let args = [
            ArgValue::Pointer(out.va),
            ArgValue::Pointer(state.va),
            ArgValue::Pointer(bcx.va),
            ArgValue::Pointer(weight.va),
            ArgValue::U32(DIM),
            ArgValue::U32(D_CONV),
        ];
        let uses = [
            Use::write(out.va, out.bytes),
            self.state_access,
            Use::read(bcx.va, bcx.bytes),
            Use::read(weight.va, weight.bytes),
        ];
        funnel.launch(device, &Launch::linear(&self.kernel, &args, DIM, 64, &uses))?;
        Ok(())
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn max_position(&self) -> u32 {
        64
    }
}

/// A prompt step at 0 and continuations at 1..12 with the route asked for: the routes taken,
/// the controller and the state's bytes after them.
fn decode(state_declared_as_read: bool) -> (Vec<Route>, ReplayController, Vec<u8>) {
    let mut device = SimDevice::new(Target::Gfx1100);
    let mut workload = ShortConv::new(&mut device, state_declared_as_read);
    let config =
        ReplayConfig { backend: Backend::Auto, transport: Transport::Pm4, explicit: true, ..ReplayConfig::default() };
    let mut controller = ReplayController::new(config);
    controller.configure_model_default(true);
    let mut funnel = Funnel::new(64);
    let mut routes = Vec::new();
    for position in 0..12 {
        let step = if position == 0 { Step::Prompt } else { Step::Continuation };
        routes.push(controller.forward(&mut device, &mut funnel, &mut workload, position, step).unwrap().route);
    }
    let state = workload.surfaces()[1].snapshot(&mut device).unwrap();
    (routes, controller, state)
}

#[test]
fn a_state_store_declared_as_a_read_refuses_the_capture_by_name() {
    let (routes, controller, refused_state) = decode(true);
    assert!(routes.iter().all(|&r| r != Route::Retained), "{routes:?}");
    let State::Fallback { reason: FallbackReason::CaptureAborted { failure, detail } } = controller.state() else {
        panic!("{:?}", controller.state())
    };
    assert_eq!(*failure, CaptureFailure::UndeclaredEffect);
    let state_bytes = 4 * DIM * D_CONV;
    assert!(
        detail.contains(&format!("(shortconv): argument state may write {state_bytes} bytes at offset {GUARD_BYTES}")),
        "{detail}"
    );

    // Declared read-write, the same steps reach the retained route, with the ordinary route's
    // state (the refused run ran every step ordinarily).
    let (routes, controller, state) = decode(false);
    assert_eq!(controller.state(), &State::Ready);
    assert!(routes[routes.len() - 4..].iter().all(|&r| r == Route::Retained), "{routes:?}");
    assert_eq!(state, refused_state, "the retained route's state is the ordinary route's");
}
