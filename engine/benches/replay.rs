//! Per-token host submission cost of the retained route next to the ordinary path's and a raw
//! floor, for tapes of 100 and 1,000 independent one-element `fill` launches (the `wide`
//! example, recorded and calibrated: fill #0's `n` follows the position), on the soft device and
//! on the HSA backend over the soft HSA runtime. All in one run.
//!
//! # How a token is timed
//! Host and device run on two threads pinned to two cores (CPUs 0 and 1), as a host CPU and a
//! GPU do. Per token the host thread does its half (timed: two clock reads around it, the same
//! for every row), hands the token to the device thread and spins (as a host waiting on a
//! completion signal does) until the device side is done and one token period has passed since
//! its half started; then it does its untimed wait (for the retained route, completing the token)
//! and the next token's half. The device thread does the token's device side, then reads one byte
//! of every cache line of a buffer one and a half times the machine's largest cache (sysfs),
//! then sleeps until the next token. Each criterion sample is the mean of its kept tokens'
//! timed halves (below) times its tokens, so criterion's per-iteration time is the per-token
//! time.
//!
//! Why: the soft device runs on this machine's CPU and shares its last-level cache with the
//! host thread; a GPU does not. The host half executes the same instructions at every tape
//! length (one patch site and one packet per token, 100 and 1,000 dispatches alike), yet timed back to
//! back it measured 1.37× slower at 1,000 dispatches on a quiet machine and 3.4× with other
//! processes running, and with an equal 2 ms period for every row still 0.9–2.2×: the host's
//! lines leave its private caches with time (interrupts, other processes) and wait in the
//! shared cache, where the soft device's larger working set at 1,000 dispatches evicts more of
//! them. With the sweep, every row's host half starts from the same, defined state whatever the
//! device did: the shared cache holds the sweep's lines only, the host's private caches what
//! one period of the host's own steps left (hand-off, spin, untimed wait: the same on every
//! row, the floor included), and nothing the soft device touched. The tape length is then the
//! only difference between the retained rows (see # Measured). The period is twice the slowest
//! of three sweeps timed at start-up plus [`DEVICE_SIDE_MAX`]; it is the same for every row. The
//! price: every row is measured cold, the shared cache holding none of the host's lines — the
//! floor's few lines as much as the retained half's code and data, and the ordinary path's
//! launches amortise their misses over 1,000 launches. Rows compare as ratios within one run.
//!
//! A half that did not start one period after the previous one (more than [`PERIOD_SLACK`]
//! later: a thread preempted, a device side with its sweep longer than the period; and the first
//! token of every criterion call, which follows the threads' start) did not start from that
//! state: it is left out of the sample, on every row alike, and counted in the summary. The
//! decision is made before the half is timed, never from its time. Rows run one after the
//! other, so a load that changes during the run still changes the ratios. Criterion gives a
//! call a single token when the period exceeds its measurement time ÷ [`SAMPLES`] (5 s ÷ 50 by
//! default); then every token of the soft-device rows is left out, and the summary says so. On a
//! machine with a large last-level cache (a 300 MiB one makes a 450 MiB sweep and a period near
//! 100 ms) run with a longer measurement time:
//! `cargo bench -p engine --bench replay -- --measurement-time 20`.
//!
//! Alternatives measured and not kept: no sweep and an equal period (above: not flat); a host
//! thread that sweeps 4 MiB before each half (its private caches emptied, the shared cache not)
//! left 1,000 dispatches 1.4× slower; a device thread that spins instead of sleeping between
//! tokens made every row 2–10× slower on a machine with one other busy process.
//!
//! # The HSA rows
//! The same tapes, on one [`HsaDevice`](hsa_device::HsaDevice) over the soft HSA runtime
//! (`libsoft_hsa.so`, which cargo builds for the `soft-hsa` dev-dependency; GPU agent 0),
//! measured after the soft-device rows. The device side is the runtime's own: each queue's
//! packet-processor thread, which polls its doorbell for a second after its last packet (the
//! token period is shorter, so it never sleeps between tokens), runs its packets on the soft
//! device while the host goes on. So the host thread (CPU 0) does its half (timed as above), then its untimed wait for the token's completion on
//! the same thread (the device is not `Send`), then hands the token to a sweeper thread on CPU 1,
//! which reads the same buffer, while the host spins; then it spins until one token period has
//! passed since its half started. Every processor thread runs on CPU 1 too: the runtime starts
//! one in each `hsa_queue_create`, a thread inherits its creator's affinity, and the rows' setup
//! creates every queue (the floor's, the ordinary path's, each plan's) pinned to CPU 1. Each HSA
//! half thus starts from the state the soft-device halves start from: the shared cache holding
//! the sweep's lines only, the host's private caches what one period of its own steps (wait,
//! hand-off, spin) left, nothing the device side touched; the same period, sweep, slack and
//! left-out rule on every HSA row, the floor included. One addition: each criterion call starts
//! with a lead-in token, run in full and not counted, so that the first counted token also
//! follows a full period whatever the measurement time.
//!
//! Measured and not kept: the host thread sweeping the buffer itself after its wait, which
//! empties its private caches too. In one run of the HSA rows alone (with the runtime of the
//! alternative under "# Measured", whose stores always woke): floor 14.7 µs, retained
//! host at 100 and 1,000 18.6 and 21.4 µs, ordinary host at 1,000 1.97 ms; every row colder,
//! and ordinary ÷ retained at 1,000 fell to 92, the ordinary path amortising its misses over
//! 1,000 launches. The sweeper thread keeps the host's private state as the soft-device rows
//! have it.
//!
//! The bench's global allocator (allocation-counter's) counts the timing thread's heap allocations
//! inside every HSA row's timed halves (lead-ins included); the summary prints them per token.
//! It counts what the bench binary allocates (the route, the HAL, `hsa-device`: everything above
//! the C ABI); the soft runtime allocates with the allocator inside its own library, as ROCr
//! would, and is not counted.
//!
//! # Summary
//! After the last row the bench prints each row's per-token median (the median over criterion's
//! samples of the per-token time, criterion's `median` estimate), the HSA rows' allocations per
//! token, and the ratios the targets are stated in, for each backend: retained at 1,000 ÷
//! retained at 100 (target ≤ 1.2), ordinary ÷ retained at 1,000 (≥ 100), each retained row ÷ its
//! backend's floor (≥ 1 and ≤ 2), and on HSA 0 allocations in the retained halves.
//!
//! Both backends' rows make the same calls through the HAL; only the device side differs.
//! - `floor` / `hsa_floor`: the lower bound of a token's host half through the same ABI: one
//!   64-byte barrier-AND packet with a completion signal through [`Device::write_packet`] and
//!   [`Device::ring_doorbell`] on a queue of its own. Device side: [`SimDevice::process`] on the
//!   device thread, or the runtime's processor thread. Untimed: the wait for the signal and its
//!   reset to 1.
//! - `retained_host/N` / `hsa_retained_host/N`: [`PreparedPlan::publish_token`] — liveness check,
//!   the one binding's value stored at its patch site ([`Device::store_u32`]: on HSA a store into
//!   mapped kernarg memory), the 64-byte PM4-IB packet into its ring slot, the doorbell; the plan
//!   prepared with [`prepare`] from a tape recorded and calibrated with [`capture_tape`] on the
//!   same device. Device side: [`SimDevice::process`] (the sim takes the stores, decodes the IB and
//!   runs every dispatch), or the runtime's processor. Untimed: [`PreparedPlan::complete_token`]
//!   (the wait, and the completion signal's reset to 1 for the next token).
//! - `ordinary_host/N` / `hsa_ordinary_host/N`: every launch of the tape through
//!   [`Device::launch`] with its recorded kernarg blob (the `LaunchRequest`s built before timing
//!   from the tape's launch records and the kernel table): kernarg copy, packet and doorbell per
//!   launch. Device side: [`SimDevice::process`], or the runtime's processor running them
//!   meanwhile. Untimed: [`Device::finish`].
//! - `retained_device_sim/N`: [`SimDevice::process`] and [`PreparedPlan::complete_token`] on one
//!   thread — the soft device's work for a token, shown so that it is not mistaken for host cost.
//! - `lowering/lower_and_verify_1000`: [`lower_pm4`] plus [`verify`] of the 1,000-launch tape.
//!
//! # Measured
//! Two full runs (`-- --warm-up-time 1 --measurement-time 20`) on a 2-vCPU virtual machine whose
//! sysfs reports a 300 MiB last-level cache (a 450 MiB sweep; 88 and 112 ms periods); per-token
//! medians, first run / second run.
//!
//! HSA: floor 7.92 / 7.53 µs; retained host at 100 and 1,000 10.17 and 9.72 / 9.82 and 9.54 µs;
//! ordinary host at 100 and 1,000 93.9 µs and 1.06 ms / 83.9 µs and 0.96 ms; 0 allocations in
//! every timed half. Ratios: flat 0.96 / 0.97, ordinary ÷ retained 109.0 / 101.0, retained ÷ floor
//! 1.28 and 1.23 / 1.30 and 1.27: every target met in both. In two shorter runs of the HSA rows
//! alone (`--measurement-time 10`): flat 0.91 and 1.11, ordinary ÷ retained 80.4 (before the
//! completion signal's reset moved into the wait) and 124.9.
//!
//! Soft device: floor 4.22 / 5.37 µs; retained host at 100 and 1,000 6.94 and 8.30 / 8.53 and
//! 7.47 µs; ordinary host at 100 and 1,000 34.1 and 208.7 / 35.1 and 196.3 µs. Ratios: flat 1.20 /
//! 0.88, retained ÷ floor 1.65 and 1.97 / 1.59 and 1.39 (met), ordinary ÷ retained 25.1 / 26.3
//! (not met): the soft device's ordinary launch is about 0.2 µs of warm host work (no runtime
//! calls, the packets run later on the device thread), while every token's host half here is
//! measured cold, so 1,000 launches cost about 25 cold halves. Half of the soft-device tokens are
//! left out: criterion asks for two tokens per call at this period, and the first of every call
//! does not follow a full period.
//!
//! What the HSA half costs: with the floor's half split once, `write_packet` took 4.1 µs and the
//! doorbell 3.0 µs, cold (the soft runtime's code and its queue, signal and table lines, and the
//! HSA backend's own). The soft runtime keeps the doorbell a store, as a GPU's is: a store to a
//! signal with no waiter asleep on it is an atomic and a fence, and a packet processor polls its
//! doorbell for a second after its last packet before it sleeps on it. Measured and not kept: a
//! runtime whose every signal store woke the signal's condition variable (a futex call each) and
//! whose idle processor slept on its doorbell: floor 16.5 µs, retained 21–23 µs (the wake-up of
//! the processor thread took about 10 µs of the host's half), ordinary ÷ retained 52.
//!
//! Single runs scatter by about ±25%, so read the ratios of more than one run.

use std::hint::black_box;
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

use aql_packets::{Barrier, BarrierAndPacket, PACKET_SIZE, PacketControl, RingSize, SignalCondition};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use engine::examples::Wide;
use engine::funnel::Funnel;
use engine::lower::{lower_pm4, slot_by_artifact, verify};
use engine::plan::{PreparedPlan, prepare};
use engine::replay::capture_tape;
use hal::{Device, LaunchRequest};
use pm4_encoding::Target;
use soft_device::SimDevice;
use tape_core::tape::Tape;

// In a directory of its own: cargo takes every `benches/*.rs` for a bench target.
#[path = "replay/hsa.rs"]
mod hsa;

const TIMEOUT: Duration = Duration::from_millis(100);

/// The device side of a token, the soft device's 1,000 dispatches included, takes at most this
/// long here (0.75 ms on a quiet machine, up to 1.5 ms with other processes running).
const DEVICE_SIDE_MAX: Duration = Duration::from_millis(2);

/// The state every host half starts from (module documentation): what the device thread reads
/// after every token's device side, and the period of a token.
struct Harness {
    /// One and a half times the machine's largest cache.
    sweep: Vec<u8>,
    /// Twice the slowest of three sweeps (a sweep beside a running host thread and soft device
    /// is slower than alone) plus [`DEVICE_SIDE_MAX`], in whole milliseconds.
    period: Duration,
}

impl Harness {
    fn get() -> &'static Harness {
        static HARNESS: OnceLock<Harness> = OnceLock::new();
        HARNESS.get_or_init(|| {
            let sweep = vec![1u8; largest_cache_bytes().unwrap_or(32 << 20) * 3 / 2];
            let slowest = (0..3)
                .map(|_| {
                    let start = Instant::now();
                    black_box(read_every_line(&sweep));
                    start.elapsed()
                })
                .max()
                .unwrap_or_default();
            let period = Duration::from_millis(u64::try_from((2 * slowest + DEVICE_SIDE_MAX).as_millis()).unwrap() + 1);
            Harness { sweep, period }
        })
    }
}

/// The largest cache of CPU 0 in bytes, from sysfs (`None` where it is not readable).
fn largest_cache_bytes() -> Option<usize> {
    let caches = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    caches
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("size")).ok())
        .filter_map(|size| {
            let size = size.trim();
            let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit()).unwrap_or(size.len()));
            let scale = match unit {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                _ => return None,
            };
            digits.parse::<usize>().ok().map(|n| n * scale)
        })
        .max()
}

/// Reads one byte of every cache line of `buffer`: afterwards the shared cache holds the
/// buffer's lines and nothing else.
fn read_every_line(buffer: &[u8]) -> u32 {
    buffer.iter().step_by(64).fold(0u32, |sum, &b| sum.wrapping_add(u32::from(b)))
}

/// How much later than one token period after the previous half a half may start and still
/// count: the untimed wait between them takes microseconds; a preempted thread or a device side
/// longer than the period takes more.
const PERIOD_SLACK: Duration = Duration::from_micros(100);

/// Criterion samples per row; the summary takes each row's last `SAMPLES` calls (criterion's
/// warm-up calls come first).
const SAMPLES: usize = 50;
// The median of an even number of samples is the mean of the middle two (`Row::median_ns`).
const _: () = assert!(SAMPLES >= 2 && SAMPLES.is_multiple_of(2));

/// A row's per-token times, one per criterion call, for the summary.
#[derive(Default)]
struct Row {
    name: String,
    per_token_ns: Vec<f64>,
    tokens: u64,
    /// Tokens left out because their half did not start one period after the previous one.
    excluded: u64,
    /// Heap allocations of the timing thread inside the timed halves, where they are counted
    /// (the HSA rows).
    allocations: Option<Allocations>,
}

/// Heap allocations counted in a row's timed halves.
#[derive(Clone, Copy, Debug, Default)]
struct Allocations {
    allocations: u64,
    /// Timed halves counted: every token of the row, lead-ins included.
    halves: u64,
}

impl Row {
    fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), ..Self::default() }
    }

    /// Records one criterion call of `iters` tokens of which `kept` were timed at `timed` in sum,
    /// and returns what criterion takes as the call's time: the kept tokens' mean × `iters` (all
    /// tokens' sum `all` when none was kept, as in criterion's one-token warm-up calls).
    fn record(&mut self, iters: u64, timed: Duration, kept: u64, all: Duration) -> Duration {
        self.tokens += iters;
        self.excluded += iters - kept;
        if kept == 0 {
            self.per_token_ns.push(all.as_secs_f64() * 1e9 / iters as f64);
            return all;
        }
        let per_token = timed.as_secs_f64() / kept as f64;
        self.per_token_ns.push(per_token * 1e9);
        Duration::from_secs_f64(per_token * iters as f64)
    }

    /// The median per-token time of the measured samples, in ns; `None` before a full set of
    /// samples (criterion's test mode runs each row once).
    fn median_ns(&self) -> Option<f64> {
        let from = self.per_token_ns.len().checked_sub(SAMPLES)?;
        let mut samples = self.per_token_ns[from..].to_vec();
        samples.sort_by(f64::total_cmp);
        Some((samples[SAMPLES / 2 - 1] + samples[SAMPLES / 2]) / 2.0)
    }
}

/// A device with the `wide` example of `dispatches` launches and its calibrated tape.
fn setup(dispatches: u32) -> (SimDevice, Tape) {
    let mut device = SimDevice::new(Target::Gfx1100);
    let mut wide = Wide::new(&mut device, dispatches).unwrap();
    let mut funnel = Funnel::new(usize::try_from(dispatches).unwrap());
    let tape = capture_tape(&mut device, &mut funnel, &mut wide, &[0, 1, 2]).unwrap();
    assert_eq!(tape.bindings().len(), 1, "one position binding");
    (device, tape)
}

/// Runs `iters` tokens over two threads pinned to two cores: `host` (returns its timed part)
/// and `after` on this thread, `device` on a device thread in between, one token per
/// token period, the device thread sweeping the shared cache after each device side (module
/// documentation). Records in `row` the tokens whose half started
/// one period after the previous half (at most [`PERIOD_SLACK`] later), leaves out the others
/// (the first of the call, and any after a token that overran the period), and returns the
/// kept tokens' mean × `iters`. The device thread sleeps until it is handed a token, so it does
/// nothing while the host's half is timed.
fn two_threads<S: Send>(
    row: &mut Row,
    state: &mut S,
    iters: u64,
    mut host: impl FnMut(&mut S) -> Duration,
    device: impl Fn(&mut S) + Send + Sync,
    mut after: impl FnMut(&mut S),
) -> Duration {
    let harness = Harness::get();
    let (to_device, at_device) = mpsc::channel::<&mut S>();
    let (to_host, at_host) = mpsc::channel::<&mut S>();
    let (timed, kept, all) = std::thread::scope(|scope| {
        let device = &device;
        scope.spawn(move || {
            pin(1);
            for s in at_device {
                device(s);
                black_box(read_every_line(&harness.sweep));
                if to_host.send(s).is_err() {
                    break;
                }
            }
        });
        pin(0);
        let (mut timed, mut kept, mut all) = (Duration::ZERO, 0, Duration::ZERO);
        let mut previous: Option<Instant> = None;
        let mut s = state;
        for _ in 0..iters {
            let token = Instant::now();
            let half = host(s);
            all += half;
            if previous.is_some_and(|p| token.duration_since(p) <= harness.period + PERIOD_SLACK) {
                timed += half;
                kept += 1;
            }
            previous = Some(token);
            to_device.send(s).unwrap();
            s = loop {
                // Spin: the host thread stays on its core, as a host waiting on a signal does.
                match at_host.try_recv() {
                    Ok(s) => break s,
                    Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                    Err(e) => panic!("device thread: {e}"),
                }
            };
            while token.elapsed() < harness.period {
                std::hint::spin_loop();
            }
            after(s);
        }
        drop(to_device);
        (timed, kept, all)
    });
    row.record(iters, timed, kept, all)
}

/// Pins the calling thread to CPU `id` (nothing where the machine lacks it). The id is the CPU's
/// own number, not an index into `core_affinity::get_core_ids`, which lists only the CPUs of the
/// calling thread's mask: a thread started by a thread pinned to CPU 0 finds only CPU 0 there.
fn pin(id: usize) {
    core_affinity::set_for_current(core_affinity::CoreId { id });
}

fn group<'c>(c: &'c mut Criterion, name: &str) -> criterion::BenchmarkGroup<'c, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group.sample_size(SAMPLES).sampling_mode(criterion::SamplingMode::Flat);
    group
}

/// `floor`: one barrier-AND packet with a completion signal through [`Device::write_packet`] and
/// [`Device::ring_doorbell`] on a queue of its own; device thread: [`SimDevice::process`];
/// untimed: the wait for the signal and its reset to 1.
fn floor(c: &mut Criterion, rows: &mut Vec<Row>) {
    let mut device = SimDevice::new(Target::Gfx1100);
    let queue = device.create_queue(RingSize::new(64).unwrap()).unwrap();
    let signal = device.create_signal(1).unwrap();
    let packet = barrier_packet(signal);
    let mut state = (device, queue, signal, packet);
    let mut row = Row::new("floor");
    let mut group = group(c, "replay_per_token");
    group.bench_function("floor", |b| {
        b.iter_custom(|iters| {
            two_threads(
                &mut row,
                &mut state,
                iters,
                |(device, queue, _, packet)| floor_half(device, *queue, packet),
                |(device, ..)| device.process(),
                |(device, _, signal, _)| {
                    device.wait_signal(*signal, SignalCondition::Eq, 0, TIMEOUT).unwrap();
                    device.store_signal(*signal, 1).unwrap();
                },
            )
        });
    });
    group.finish();
    rows.push(row);
}

/// The host halves every row times, the same on both backends: the floor's one packet and
/// doorbell.
fn floor_half<D: Device + ?Sized>(device: &mut D, queue: hal::QueueHandle, packet: &[u8; PACKET_SIZE]) -> Duration {
    let start = Instant::now();
    device.write_packet(queue, black_box(packet)).unwrap();
    black_box(device.ring_doorbell(queue).unwrap());
    start.elapsed()
}

/// The retained route's host half at the next position.
fn retained_half<D: Device + ?Sized>(device: &mut D, plan: &mut PreparedPlan, position: &mut u32) -> Duration {
    *position = (*position + 1) % 1024;
    let start = Instant::now();
    black_box(plan.publish_token(device, black_box(*position)).unwrap());
    start.elapsed()
}

/// The ordinary path's host half: every launch of the tape.
fn ordinary_half<D: Device + ?Sized>(device: &mut D, requests: &[LaunchRequest<'_>]) -> Duration {
    let start = Instant::now();
    for request in requests {
        device.launch(black_box(request)).unwrap();
    }
    start.elapsed()
}

/// The floor's packet: a barrier-AND with no dependencies that decrements `signal`.
fn barrier_packet(signal: hal::SignalHandle) -> [u8; PACKET_SIZE] {
    let barrier = Barrier {
        control: PacketControl::SYSTEM_BARRIER,
        dep_signal: [0; aql_packets::barrier::DEP_SIGNALS],
        completion_signal: signal.get(),
    };
    *BarrierAndPacket::new(&barrier).as_array()
}

/// Every launch of `tape` as the ordinary path makes it ([`Device::launch`] with the recorded
/// kernarg blob), built from its launch records and `kernels`.
fn launch_requests<'t>(kernels: &hal::KernelTable, tape: &'t Tape) -> Vec<LaunchRequest<'t>> {
    let lookup = slot_by_artifact(kernels);
    tape.launches()
        .iter()
        .map(|l| LaunchRequest {
            kernel_object: lookup(&l.artifact).unwrap().loaded.kd_va,
            grid_work_items: l.geometry.grid_work_items,
            workgroup_work_items: l.geometry.workgroup_work_items,
            dynamic_lds_bytes: l.lds.dynamic_bytes,
            kernarg: &l.kernarg,
        })
        .collect()
}

fn retained(c: &mut Criterion, rows: &mut Vec<Row>, dispatches: u32) {
    let (mut device, tape) = setup(dispatches);
    let plan: PreparedPlan = prepare(&mut device, &tape).unwrap();
    assert_eq!(plan.submission_identity().phases, 1, "independent launches: no waits");
    let mut state = (device, plan, 0u32);
    let mut row = Row::new(format!("retained_host/{dispatches}"));
    let mut group = group(c, "replay_per_token");
    group.bench_function(BenchmarkId::new("retained_host", dispatches), |b| {
        b.iter_custom(|iters| {
            two_threads(
                &mut row,
                &mut state,
                iters,
                |(device, plan, position)| retained_half(device, plan, position),
                // The device side: the soft device's packet processor runs when asked.
                |(device, _, _)| device.process(),
                |(device, plan, _)| {
                    plan.complete_token(device, TIMEOUT).unwrap();
                },
            )
        });
    });
    rows.push(row);
    let mut row = Row::new(format!("retained_device_sim/{dispatches}"));
    let (device, plan, position) = &mut state;
    group.bench_function(BenchmarkId::new("retained_device_sim", dispatches), |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                *position = (*position + 1) % 1024;
                plan.publish_token(device, *position).unwrap();
                let start = Instant::now();
                device.process();
                black_box(plan.complete_token(device, TIMEOUT).unwrap());
                timed += start.elapsed();
            }
            row.record(iters, timed, iters, timed)
        });
    });
    group.finish();
    rows.push(row);
}

/// `ordinary_host/N`: every launch of the tape through [`Device::launch`]; device thread:
/// [`SimDevice::process`] (the launches run); untimed: [`Device::finish`].
fn ordinary(c: &mut Criterion, rows: &mut Vec<Row>, dispatches: u32) {
    let (device, tape) = setup(dispatches);
    let requests = launch_requests(device.kernels(), &tape);
    assert_eq!(requests.len(), usize::try_from(dispatches).unwrap());
    let mut state = (device, requests);
    let mut row = Row::new(format!("ordinary_host/{dispatches}"));
    let mut group = group(c, "replay_per_token");
    group.bench_function(BenchmarkId::new("ordinary_host", dispatches), |b| {
        b.iter_custom(|iters| {
            two_threads(
                &mut row,
                &mut state,
                iters,
                |(device, requests)| ordinary_half(device, requests),
                |(device, _)| device.process(),
                |(device, _)| device.finish().unwrap(),
            )
        });
    });
    group.finish();
    rows.push(row);
}

fn lowering(c: &mut Criterion, rows: &mut Vec<Row>) {
    let (device, tape) = setup(1000);
    let kernarg_vas: Vec<u64> = (0..1000u64).map(|i| 0x7e00_0000_0000 + 64 * i).collect();
    let family = device.target().family();
    let lookup = slot_by_artifact(device.kernels());
    let mut row = Row::new("lower_and_verify_1000");
    let mut group = group(c, "lowering");
    group.throughput(criterion::Throughput::Elements(1000));
    group.bench_function("lower_and_verify_1000", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let lowered = lower_pm4(black_box(&tape), family, &lookup, &kernarg_vas).unwrap();
                verify(&lowered, &tape, family, &lookup, &kernarg_vas).unwrap();
                black_box(lowered.words.len());
            }
            let elapsed = start.elapsed();
            row.record(iters, elapsed, iters, elapsed)
        });
    });
    group.finish();
    rows.push(row);
}

/// Prints every measured row's median, the HSA rows' allocations and the ratios the targets are
/// stated in.
fn summary(rows: &[Row]) {
    let median = |name: &str| rows.iter().find(|r| r.name == name).and_then(Row::median_ns);
    let harness = Harness::get();
    println!(
        "\nreplay summary (per-token medians over {SAMPLES} samples; token period {:?}, {} MiB read by the device or sweeper thread after every token)",
        harness.period,
        harness.sweep.len() >> 20
    );
    for row in rows {
        let Some(ns) = row.median_ns() else { continue };
        let over = if row.excluded > 0 {
            format!("  ({} of {} tokens left out: not one period after the previous)", row.excluded, row.tokens)
        } else {
            String::new()
        };
        println!("  {:<40} {:>14.1} ns{over}", row.name, ns);
    }
    for row in rows.iter().filter(|r| r.median_ns().is_some()) {
        let Some(Allocations { allocations, halves }) = row.allocations else { continue };
        let per_token = allocations as f64 / halves.max(1) as f64;
        let target = if row.name.starts_with("hsa_retained_host") {
            format!("   target 0: {}", if allocations == 0 { "met" } else { "NOT met" })
        } else {
            String::new()
        };
        let label = format!("allocations {}", row.name);
        println!("  {label:<40} {per_token:>14.2} per token ({allocations} in {halves} timed halves){target}");
    }
    let ratio = |label: &str, num: &str, den: &str, target: &str, met: fn(f64) -> bool| {
        if let (Some(n), Some(d)) = (median(num), median(den)) {
            let r = n / d;
            println!("  {label:<40} {r:>14.2}   target {target}: {}", if met(r) { "met" } else { "NOT met" });
        }
    };
    ratio("retained 1000 / retained 100", "retained_host/1000", "retained_host/100", "<= 1.2", |r| r <= 1.2);
    ratio("retained 100 / floor", "retained_host/100", "floor", ">= 1, <= 2", |r| (1.0..=2.0).contains(&r));
    ratio("retained 1000 / floor", "retained_host/1000", "floor", ">= 1, <= 2", |r| (1.0..=2.0).contains(&r));
    ratio("ordinary 1000 / retained 1000", "ordinary_host/1000", "retained_host/1000", ">= 100", |r| r >= 100.0);
    let (hsa_100, hsa_1000) = ("hsa_retained_host/100", "hsa_retained_host/1000");
    ratio("hsa retained 1000 / hsa retained 100", hsa_1000, hsa_100, "<= 1.2", |r| r <= 1.2);
    ratio("hsa ordinary 1000 / hsa retained 1000", "hsa_ordinary_host/1000", hsa_1000, ">= 100", |r| r >= 100.0);
    ratio("hsa retained 100 / hsa floor", hsa_100, "hsa_floor", ">= 1, <= 2", |r| (1.0..=2.0).contains(&r));
    ratio("hsa retained 1000 / hsa floor", hsa_1000, "hsa_floor", ">= 1, <= 2", |r| (1.0..=2.0).contains(&r));
}

fn benches(c: &mut Criterion) {
    let mut rows = Vec::new();
    floor(c, &mut rows);
    lowering(c, &mut rows);
    for dispatches in [100, 1000] {
        retained(c, &mut rows, dispatches);
        ordinary(c, &mut rows, dispatches);
    }
    let mut hsa_rows = hsa::HsaRows::new(&[100, 1000]);
    hsa::floor(c, &mut rows, &mut hsa_rows);
    hsa::retained_and_ordinary(c, &mut rows, &mut hsa_rows);
    summary(&rows);
}

criterion_group!(replay, benches);
criterion_main!(replay);
