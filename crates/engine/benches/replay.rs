//! Per-token host submission cost of the retained route next to the ordinary path's, for tapes
//! of 100 and 1,000 independent `fill` launches (grid 1, n = 1: the device work is negligible
//! and no launch waits for another). All in one run, per token:
//!
//! - `retained_host`: [`PreparedPlan::publish_token`] — liveness check, the one binding's value
//!   (fill #0's `n`), the completion signal's reset, the 64-byte PM4-IB packet into its ring
//!   slot and the doorbell, all stored into the plan's mapped memory as a host does on hardware.
//!   Timed alone; the soft device's side of the token ([`PreparedPlan::finish_token`]: taking
//!   those stores into its memory and queue, PM4 decode, hazard model, CPU execution of every
//!   dispatch, the wait) runs untimed.
//! - `retained_finish_sim`: [`PreparedPlan::finish_token`] alone. This is device work on the sim,
//!   not host submission cost; it is shown so that it is not mistaken for it.
//! - `ordinary_host`: what the ordinary path's host does per launch, × launches: copy the
//!   kernarg blob into a kernarg slot in device memory, build the KERNEL_DISPATCH packet, publish
//!   it. Timed; the doorbell and execution (`submit`) run untimed.
//! - `floor`: one raw 64-byte copy into a host ring slot plus a release store of the write index
//!   (the doorbell), per token.
//! - `lower_1000`: lowering throughput — [`lower_pm4`] plus [`verify`] of the 1,000-launch tape,
//!   per tape.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aql_packets::{Dimensions, FenceScope, KernelDispatch, PACKET_SIZE, PacketControl, RingSize};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use engine::device::Device;
use engine::lower::{lower_pm4, slot_by_artifact, verify};
use engine::plan::{PreparedPlan, prepare};
use engine::sim::SimDevice;
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use pm4_encoding::Target;
use tape_core::binding::{Binding, BindingKind};
use tape_core::recorder::Recorder;
use tape_core::tape::Tape;
use tape_core::{Access, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};

const TIMEOUT: Duration = Duration::from_millis(100);

/// A device with `fill` loaded and a tape of `dispatches` independent fills of one float each.
fn setup(dispatches: u32) -> (SimDevice, Tape) {
    let target = Target::Gfx1100;
    let mut device = SimDevice::new(target);
    let bytes = kernels::artifact(&format!("{target}/fill.co")).unwrap().bytes;
    let loaded = device.load_code_object(bytes).unwrap();
    let kernel = loaded.kernel("fill").unwrap().clone();
    let layout = kernarg_abi::read_any(bytes, Some(target)).unwrap().kernel("fill").unwrap().kernarg_layout().unwrap();
    let out = device.allocate(4 * u64::from(dispatches)).unwrap();
    let mut recorder = Recorder::new(usize::try_from(dispatches).unwrap());
    recorder.begin(0).unwrap();
    for i in 0..dispatches {
        let va = out.va + 4 * u64::from(i);
        let (allocation, offset_bytes) = device.resolve(va).unwrap();
        let args = [ArgValue::Pointer(va), ArgValue::F32(1.0), ArgValue::U32(1)];
        let record = LaunchRecord {
            artifact: ArtifactId { code_object_sha256: loaded.sha256, symbol: "fill".into() },
            kernarg: layout.build(&args, &DispatchGeometry::linear(1, 1)).unwrap(),
            geometry: Geometry { grid_work_items: [1, 1, 1], workgroup_work_items: [1, 1, 1] },
            lds: Lds { static_bytes: kernel.group_segment_fixed_size, dynamic_bytes: 0 },
            wave_size: u8::try_from(kernel.wavefront_size).unwrap(),
            pointers: vec![PointerArg { kernarg_offset: 0, allocation, offset_bytes }],
            effects: Effects::Known(vec![Effect { allocation, offset_bytes, len_bytes: 4, access: Access::Write }]),
        };
        recorder.record(record, &layout).unwrap();
    }
    // n = position + 1.
    let binding = Binding { name: "fill.n".into(), launch: 0, kind: BindingKind::KernargU32 { offset: 12, addend: 1 } };
    let tape = recorder.finish().unwrap().with_bindings(vec![binding]).unwrap();
    (device, tape)
}

fn retained(c: &mut Criterion, dispatches: u32) {
    let (mut device, tape) = setup(dispatches);
    let mut plan: PreparedPlan = prepare(&mut device, &tape).unwrap();
    assert_eq!(plan.submission_identity().phases, 1, "independent launches: no waits");
    let mut group = c.benchmark_group("replay_per_token");
    let mut position = 0u32;
    group.bench_function(BenchmarkId::new("retained_host", dispatches), |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                position = (position + 1) % 1024;
                let start = Instant::now();
                black_box(plan.publish_token(&mut device, black_box(position)).unwrap());
                timed += start.elapsed();
                plan.finish_token(&mut device, TIMEOUT).unwrap();
            }
            timed
        });
    });
    group.bench_function(BenchmarkId::new("retained_finish_sim", dispatches), |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                position = (position + 1) % 1024;
                plan.publish_token(&mut device, position).unwrap();
                let start = Instant::now();
                black_box(plan.finish_token(&mut device, TIMEOUT).unwrap());
                timed += start.elapsed();
            }
            timed
        });
    });
    group.finish();
}

fn ordinary(c: &mut Criterion, dispatches: u32) {
    let (mut device, tape) = setup(dispatches);
    let kd: Vec<u64> = {
        let lookup = slot_by_artifact(device.code_objects());
        tape.launches().iter().map(|l| lookup(&l.artifact).unwrap().loaded.kd_va).collect()
    };
    let blob = u64::try_from(tape.launches()[0].kernarg.len()).unwrap();
    let slot_bytes = blob.next_multiple_of(SimDevice::KERNARG_SLOT_ALIGN);
    let pool = device.allocate(slot_bytes * u64::from(dispatches)).unwrap();
    let queue = device.create_queue(RingSize::new(dispatches.next_power_of_two()).unwrap()).unwrap();
    let control = PacketControl { barrier: true, acquire: FenceScope::System, release: FenceScope::System };
    let mut group = c.benchmark_group("replay_per_token");
    group.bench_function(BenchmarkId::new("ordinary_host", dispatches), |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                for (i, (launch, &kernel_object)) in tape.launches().iter().zip(&kd).enumerate() {
                    let kernarg_address = pool.va + slot_bytes * u64::try_from(i).unwrap();
                    device.write(kernarg_address, black_box(&launch.kernarg)).unwrap();
                    let packet = KernelDispatch {
                        control,
                        dimensions: Dimensions::One,
                        workgroup_size: launch.geometry.workgroup_work_items,
                        grid_size: launch.geometry.grid_work_items,
                        private_segment_size: 0,
                        group_segment_size: launch.lds.static_bytes,
                        kernel_object,
                        kernarg_address,
                        completion_signal: 0,
                    }
                    .emit();
                    device.publish(queue, packet.as_array()).unwrap();
                }
                timed += start.elapsed();
                assert_eq!(device.submit(queue).unwrap(), u64::from(dispatches));
            }
            timed
        });
    });
    group.finish();
}

fn floor(c: &mut Criterion) {
    let packet = [0x5au8; PACKET_SIZE];
    let mut ring = vec![[0u8; PACKET_SIZE]; 64];
    let doorbell = AtomicU64::new(0);
    let mut write_index = 0u64;
    let mut group = c.benchmark_group("replay_per_token");
    group.bench_function("floor_64_byte_copy_and_doorbell", |b| {
        b.iter(|| {
            let slot = usize::try_from(write_index % 64).unwrap();
            ring[slot].copy_from_slice(black_box(&packet));
            write_index += 1;
            // ORDERING: the doorbell store releases the slot's bytes.
            doorbell.store(write_index, Ordering::Release);
            black_box(&ring[slot]);
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
