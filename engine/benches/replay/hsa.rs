//! The HSA rows of the replay bench: [`HsaDevice`] over the soft HSA runtime (`libsoft_hsa.so`,
//! built by cargo for the `soft-hsa` dev-dependency), its packet-processor threads doing the
//! device side. What each row measures and how a token is timed: the bench's documentation,
//! "The HSA rows".

use std::hint::black_box;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use aql_packets::{PACKET_SIZE, RingSize, SignalCondition};
use criterion::{BenchmarkId, Criterion};
use engine::examples::Wide;
use engine::funnel::Funnel;
use engine::plan::{PreparedPlan, prepare};
use engine::replay::capture_tape;
use hal::{Device, QueueHandle, SignalHandle};
use hsa_device::HsaDevice;
use tape_core::tape::Tape;

use super::{
    Harness, PERIOD_SLACK, Row, barrier_packet, floor_half, group, launch_requests, ordinary_half, pin,
    read_every_line, retained_half,
};

/// The untimed wait of a token: the soft runtime's processor thread shares its core with the
/// sweeper and, on a busy machine, with other processes; a token that takes this long fails the
/// bench.
const TIMEOUT: Duration = Duration::from_secs(5);
const _: () = assert!(TIMEOUT.as_secs() <= PreparedPlan::TIMEOUT_MAX.as_secs());

/// One `wide` tape of the HSA rows and the plan prepared from it.
struct Retained {
    dispatches: u32,
    tape: Tape,
    plan: PreparedPlan,
    position: u32,
}

/// Everything the HSA rows use, on one device: the floor's queue, signal and packet, and a
/// recorded, calibrated and prepared `wide` tape per dispatch count.
pub(super) struct HsaRows {
    device: HsaDevice,
    floor_queue: QueueHandle,
    floor_signal: SignalHandle,
    floor_packet: [u8; PACKET_SIZE],
    retained: Vec<Retained>,
}

impl HsaRows {
    /// Opens GPU agent 0 of the soft HSA runtime and sets every row up. Runs pinned to CPU 1
    /// (the device thread's CPU in the soft-device rows): the runtime starts a queue's
    /// packet-processor thread in `hsa_queue_create`, and a thread starts with its creator's
    /// affinity, so every processor thread (the floor's queue, the ordinary path's, each plan's)
    /// runs on CPU 1, beside the sweeper, while the host thread has CPU 0.
    pub(super) fn new(dispatch_counts: &[u32]) -> Self {
        pin(1);
        let path = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
        let hsa = hsa_sys::Hsa::load_from(std::slice::from_ref(&path))
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let mut device = HsaDevice::open(Arc::new(hsa), 0).unwrap();
        let floor_queue = device.create_queue(RingSize::new(64).unwrap()).unwrap();
        let floor_signal = device.create_signal(1).unwrap();
        let floor_packet = barrier_packet(floor_signal);
        // Every tape first, then every plan: no capture's frees follow a plan's preparation (a
        // plan re-checks its allocations at the first token after a free).
        let tapes: Vec<(u32, Tape)> = dispatch_counts
            .iter()
            .map(|&dispatches| {
                let mut wide = Wide::new(&mut device, dispatches).unwrap();
                let mut funnel = Funnel::new(usize::try_from(dispatches).unwrap());
                let tape = capture_tape(&mut device, &mut funnel, &mut wide, &[0, 1, 2]).unwrap();
                assert_eq!(tape.bindings().len(), 1, "one position binding");
                (dispatches, tape)
            })
            .collect();
        let retained = tapes
            .into_iter()
            .map(|(dispatches, tape)| {
                let plan = prepare(&mut device, &tape).unwrap();
                assert_eq!(plan.submission_identity().phases, 1, "independent launches: no waits");
                Retained { dispatches, tape, plan, position: 0 }
            })
            .collect();
        // The ordinary path's queue and kernarg ring exist: the capture launched through them.
        device.finish().unwrap();
        Self { device, floor_queue, floor_signal, floor_packet, retained }
    }
}

/// Runs `iters` tokens of an HSA row on this thread, pinned to CPU 0, after one lead-in token:
/// per token `host` (returns its timed part; its heap allocations are counted), then `wait`
/// (untimed), then a sweeper thread pinned to CPU 1 reads [`Harness::sweep`] while this thread
/// spins, then this thread spins until one token period has passed since the half started. The
/// schedule and the tokens kept are those of `two_threads`, except that the device side is the
/// runtime's own processor thread, done by the time `wait` returns, so that the sweep follows
/// the wait instead of the device side (the device is not `Send` and stays on this thread), and
/// that the call's first token is a lead-in that criterion does not count, so that every
/// counted token can follow a full period even when criterion asks for one token per call.
fn sweep_after_wait<S>(
    row: &mut Row,
    state: &mut S,
    iters: u64,
    mut host: impl FnMut(&mut S) -> Duration,
    mut wait: impl FnMut(&mut S),
) -> Duration {
    let harness = Harness::get();
    let (to_sweeper, at_sweeper) = mpsc::channel::<()>();
    let (to_host, at_host) = mpsc::channel::<()>();
    let (timed, kept, all, allocated) = std::thread::scope(|scope| {
        scope.spawn(move || {
            pin(1);
            for () in at_sweeper {
                black_box(read_every_line(&harness.sweep));
                if to_host.send(()).is_err() {
                    break;
                }
            }
        });
        pin(0);
        let (mut timed, mut kept, mut all, mut allocated) = (Duration::ZERO, 0, Duration::ZERO, 0);
        let mut previous: Option<Instant> = None;
        for lead_in in std::iter::once(true).chain(std::iter::repeat_n(false, usize::try_from(iters).unwrap())) {
            let token = Instant::now();
            // The calling thread's allocations (allocation-counter's allocator counts per thread;
            // the soft runtime's own are made by the allocator inside libsoft_hsa.so).
            let mut half = Duration::ZERO;
            allocated += allocation_counter::measure(|| half = host(state)).count_total;
            if !lead_in {
                all += half;
                if previous.is_some_and(|p| token.duration_since(p) <= harness.period + PERIOD_SLACK) {
                    timed += half;
                    kept += 1;
                }
            }
            previous = Some(token);
            wait(state);
            to_sweeper.send(()).unwrap();
            loop {
                // Spin: the host thread stays on its core, as in `two_threads`.
                match at_host.try_recv() {
                    Ok(()) => break,
                    Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                    Err(e) => panic!("sweeper thread: {e}"),
                }
            }
            while token.elapsed() < harness.period {
                std::hint::spin_loop();
            }
        }
        drop(to_sweeper);
        (timed, kept, all, allocated)
    });
    let counted = row.allocations.get_or_insert_default();
    counted.allocations += allocated;
    counted.halves += iters + 1;
    row.record(iters, timed, kept, all)
}

/// `hsa_floor`: one barrier-AND packet through [`Device::write_packet`] and
/// [`Device::ring_doorbell`]; untimed, the wait for its completion signal and the signal's reset.
pub(super) fn floor(c: &mut Criterion, rows: &mut Vec<Row>, hsa: &mut HsaRows) {
    let mut row = Row::new("hsa_floor");
    let mut group = group(c, "replay_per_token");
    group.bench_function("hsa_floor", |b| {
        b.iter_custom(|iters| {
            sweep_after_wait(
                &mut row,
                hsa,
                iters,
                |h| floor_half(&mut h.device, h.floor_queue, &h.floor_packet),
                |h| {
                    h.device.wait_signal(h.floor_signal, SignalCondition::Eq, 0, TIMEOUT).unwrap();
                    h.device.store_signal(h.floor_signal, 1).unwrap();
                },
            )
        });
    });
    group.finish();
    rows.push(row);
}

/// `hsa_retained_host/N` and `hsa_ordinary_host/N` for every prepared tape.
pub(super) fn retained_and_ordinary(c: &mut Criterion, rows: &mut Vec<Row>, hsa: &mut HsaRows) {
    let HsaRows { device, retained, .. } = hsa;
    for r in retained.iter_mut() {
        retained_row(c, rows, device, r);
        ordinary_row(c, rows, device, r);
    }
}

fn retained_row(c: &mut Criterion, rows: &mut Vec<Row>, device: &mut HsaDevice, r: &mut Retained) {
    let mut row = Row::new(format!("hsa_retained_host/{}", r.dispatches));
    let mut state = (device, &mut r.plan, &mut r.position);
    let mut group = group(c, "replay_per_token");
    group.bench_function(BenchmarkId::new("hsa_retained_host", r.dispatches), |b| {
        b.iter_custom(|iters| {
            sweep_after_wait(
                &mut row,
                &mut state,
                iters,
                |(device, plan, position)| retained_half(*device, plan, position),
                |(device, plan, _)| {
                    plan.complete_token(*device, TIMEOUT).unwrap();
                },
            )
        });
    });
    group.finish();
    rows.push(row);
}

fn ordinary_row(c: &mut Criterion, rows: &mut Vec<Row>, device: &mut HsaDevice, r: &Retained) {
    let requests = launch_requests(device.kernels(), &r.tape);
    assert_eq!(requests.len(), usize::try_from(r.dispatches).unwrap());
    let mut row = Row::new(format!("hsa_ordinary_host/{}", r.dispatches));
    let mut state = (device, requests);
    let mut group = group(c, "replay_per_token");
    group.bench_function(BenchmarkId::new("hsa_ordinary_host", r.dispatches), |b| {
        b.iter_custom(|iters| {
            sweep_after_wait(
                &mut row,
                &mut state,
                iters,
                |(device, requests)| ordinary_half(*device, requests),
                |(device, _)| device.finish().unwrap(),
            )
        });
    });
    group.finish();
    rows.push(row);
}
