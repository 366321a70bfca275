//! Per-token host submission cost of the retained route next to the ordinary path's and a raw
//! floor, for tapes of 100 and 1,000 independent one-element `fill` launches (the `wide`
//! example, recorded and calibrated: fill #0's `n` follows the position). All in one run.
//!
//! # How a token is timed
//! Host and device run on two threads pinned to two cores, as a host CPU and a GPU do: per token
//! the host thread does its half (timed, one token per sample with two clock reads, the same for
//! every row), hands the token to the device thread, spins until the device side is done (as a
//! host waiting on a completion signal does), then does its untimed wait. The device thread
//! sleeps between tokens, so nothing runs beside the host's timed half. Rows compare as ratios
//! within a run.
//!
//! What this cannot separate on a shared virtual machine: the longer the device side of a token
//! takes, the colder the host's caches are when its next half starts (the soft device's CPU
//! execution and the machine's own interrupts in between). Measured with the floor row: a device
//! side that only waits 2.8 ms per token doubles the floor; one that sweeps 64 MiB makes it 6× slower. The host half itself executes
//! the same instructions at every tape length (163 per token under callgrind, 100 and 1,000
//! dispatches alike).
//!
//! - `floor_64_byte_copy_and_doorbell`: the host copies one 64-byte packet into a ring slot and
//!   release-stores the write index (the doorbell); the device thread reads the slot and the
//!   doorbell.
//! - `retained_host/N`: [`PreparedPlan::publish_token`] — liveness check, the one binding's value,
//!   the completion signal's reset, the 64-byte PM4-IB packet into its ring slot, the doorbell.
//!   Device thread: [`PreparedPlan::process_token`] (the sim takes the stores, decodes the IB and
//!   runs every dispatch); host thread, untimed: [`PreparedPlan::complete_token`].
//! - `ordinary_host/N`: what the ordinary path's host does per launch, × launches: copy the
//!   kernarg blob into a kernarg slot, build the KERNEL_DISPATCH packet, publish it. Device
//!   thread: the doorbell and execution (`submit`).
//! - `retained_device_sim/N`: [`PreparedPlan::finish_token`] on one thread — the soft device's
//!   work for a token, shown so that it is not mistaken for host cost.
//! - `lowering/lower_and_verify_1000`: [`lower_pm4`] plus [`verify`] of the 1,000-launch tape.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use aql_packets::{Dimensions, FenceScope, KernelDispatch, PACKET_SIZE, PacketControl, RingSize};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use engine::device::Device;
use engine::examples::Wide;
use engine::funnel::Funnel;
use engine::lower::{lower_pm4, slot_by_artifact, verify};
use engine::plan::{PreparedPlan, prepare};
use engine::replay::capture_tape;
use engine::sim::SimDevice;
use pm4_encoding::Target;
use tape_core::tape::Tape;

const TIMEOUT: Duration = Duration::from_millis(100);

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
/// and `after` on this thread, `device` on a device thread in between. Returns the sum of the
/// timed parts. The device thread sleeps until it is handed a token, so it does nothing while
/// the host's half is timed.
fn two_threads<S: Send>(
    state: &mut S,
    iters: u64,
    mut host: impl FnMut(&mut S) -> Duration,
    device: impl Fn(&mut S) + Send + Sync,
    mut after: impl FnMut(&mut S),
) -> Duration {
    let (to_device, at_device) = mpsc::channel::<&mut S>();
    let (to_host, at_host) = mpsc::channel::<&mut S>();
    std::thread::scope(|scope| {
        let device = &device;
        scope.spawn(move || {
            pin(1);
            for s in at_device {
                device(s);
                if to_host.send(s).is_err() {
                    break;
                }
            }
        });
        pin(0);
        let mut timed = Duration::ZERO;
        let mut s = state;
        for _ in 0..iters {
            timed += host(s);
            to_device.send(s).unwrap();
            s = loop {
                // Spin: the host thread stays on its core, as a host waiting on a signal does.
                match at_host.try_recv() {
                    Ok(s) => break s,
                    Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                    Err(e) => panic!("device thread: {e}"),
                }
            };
            after(s);
        }
        drop(to_device);
        timed
    })
}

/// Pins the calling thread to core `index` when the machine has it.
fn pin(index: usize) {
    if let Some(core) = core_affinity::get_core_ids().and_then(|ids| ids.get(index).copied()) {
        core_affinity::set_for_current(core);
    }
}

fn floor(c: &mut Criterion) {
    struct Ring {
        slots: Vec<[u8; PACKET_SIZE]>,
        doorbell: AtomicU64,
        write_index: u64,
        packet: [u8; PACKET_SIZE],
    }
    let mut ring =
        Ring { slots: vec![[0; PACKET_SIZE]; 64], doorbell: AtomicU64::new(0), write_index: 0, packet: [0x5a; 64] };
    let mut group = c.benchmark_group("replay_per_token");
    group.bench_function("floor_64_byte_copy_and_doorbell", |b| {
        b.iter_custom(|iters| {
            two_threads(
                &mut ring,
                iters,
                |r| {
                    let start = Instant::now();
                    let slot = usize::try_from(r.write_index % 64).unwrap();
                    r.slots[slot].copy_from_slice(black_box(&r.packet));
                    r.write_index += 1;
                    // ORDERING: the doorbell store releases the slot's bytes.
                    r.doorbell.store(r.write_index, Ordering::Release);
                    start.elapsed()
                },
                |r| {
                    let id = r.doorbell.load(Ordering::Acquire) - 1;
                    let slot = usize::try_from(id % 64).unwrap();
                    black_box(r.slots[slot].iter().map(|&b| u32::from(b)).sum::<u32>());
                },
                |_| {},
            )
        });
    });
    group.finish();
}

fn retained(c: &mut Criterion, dispatches: u32) {
    let (mut device, tape) = setup(dispatches);
    let plan: PreparedPlan = prepare(&mut device, &tape).unwrap();
    assert_eq!(plan.submission_identity().phases, 1, "independent launches: no waits");
    let mut state = (device, plan, 0u32);
    let mut group = c.benchmark_group("replay_per_token");
    group.bench_function(BenchmarkId::new("retained_host", dispatches), |b| {
        b.iter_custom(|iters| {
            two_threads(
                &mut state,
                iters,
                |(device, plan, position)| {
                    *position = (*position + 1) % 1024;
                    let start = Instant::now();
                    black_box(plan.publish_token(device, black_box(*position)).unwrap());
                    start.elapsed()
                },
                |(device, plan, _)| plan.process_token(device).unwrap(),
                |(device, plan, _)| {
                    plan.complete_token(device, TIMEOUT).unwrap();
                },
            )
        });
    });
    let (device, plan, position) = &mut state;
    group.bench_function(BenchmarkId::new("retained_device_sim", dispatches), |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                *position = (*position + 1) % 1024;
                plan.publish_token(device, *position).unwrap();
                let start = Instant::now();
                black_box(plan.finish_token(device, TIMEOUT).unwrap());
                timed += start.elapsed();
            }
            timed
        });
    });
    group.finish();
}

fn ordinary(c: &mut Criterion, dispatches: u32) {
    /// Kernarg blob, grid, work-group, LDS, kernel object.
    type OrdinaryLaunch = (Vec<u8>, [u32; 3], [u16; 3], u32, u64);
    struct Ordinary {
        device: SimDevice,
        launches: Vec<OrdinaryLaunch>,
        pool: u64,
        slot_bytes: u64,
        queue: engine::device::QueueHandle,
    }
    let (mut device, tape) = setup(dispatches);
    let launches: Vec<_> = {
        let lookup = slot_by_artifact(device.code_objects());
        tape.launches()
            .iter()
            .map(|l| {
                let kd = lookup(&l.artifact).unwrap().loaded.kd_va;
                (l.kernarg.clone(), l.geometry.grid_work_items, l.geometry.workgroup_work_items, l.lds.static_bytes, kd)
            })
            .collect()
    };
    let slot_bytes = u64::try_from(launches[0].0.len()).unwrap().next_multiple_of(SimDevice::KERNARG_SLOT_ALIGN);
    let pool = device.allocate(slot_bytes * u64::from(dispatches)).unwrap().va;
    let queue = device.create_queue(RingSize::new(dispatches.next_power_of_two()).unwrap()).unwrap();
    let mut state = Ordinary { device, launches, pool, slot_bytes, queue };
    let control = PacketControl { barrier: true, acquire: FenceScope::System, release: FenceScope::System };
    let mut group = c.benchmark_group("replay_per_token");
    group.bench_function(BenchmarkId::new("ordinary_host", dispatches), |b| {
        b.iter_custom(|iters| {
            two_threads(
                &mut state,
                iters,
                |o| {
                    let start = Instant::now();
                    for (i, (kernarg, grid, workgroup, lds, kernel_object)) in o.launches.iter().enumerate() {
                        let kernarg_address = o.pool + o.slot_bytes * u64::try_from(i).unwrap();
                        o.device.write(kernarg_address, black_box(kernarg)).unwrap();
                        let packet = KernelDispatch {
                            control,
                            dimensions: Dimensions::fewest(*grid, *workgroup),
                            workgroup_size: *workgroup,
                            grid_size: *grid,
                            private_segment_size: 0,
                            group_segment_size: *lds,
                            kernel_object: *kernel_object,
                            kernarg_address,
                            completion_signal: 0,
                        }
                        .emit();
                        o.device.publish(o.queue, packet.as_array()).unwrap();
                    }
                    start.elapsed()
                },
                |o| assert_eq!(o.device.submit(o.queue).unwrap(), u64::try_from(o.launches.len()).unwrap()),
                |_| {},
            )
        });
    });
    group.finish();
}

fn lowering(c: &mut Criterion) {
    let (device, tape) = setup(1000);
    let kernarg_vas: Vec<u64> = (0..1000u64).map(|i| 0x7e00_0000_0000 + 64 * i).collect();
    let family = device.target().family();
    let lookup = slot_by_artifact(device.code_objects());
    let mut group = c.benchmark_group("lowering");
    group.throughput(criterion::Throughput::Elements(1000));
    group.bench_function("lower_and_verify_1000", |b| {
        b.iter(|| {
            let lowered = lower_pm4(black_box(&tape), family, &lookup, &kernarg_vas).unwrap();
            verify(&lowered, &tape, family, &lookup, &kernarg_vas).unwrap();
            black_box(lowered.words.len())
        });
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    floor(c);
    lowering(c);
    for dispatches in [100, 1000] {
        retained(c, dispatches);
        ordinary(c, dispatches);
    }
}

criterion_group!(replay, benches);
criterion_main!(replay);
