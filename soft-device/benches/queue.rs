//! Host cost of the sim's AQL queue per packet, without kernel execution: publish + doorbell +
//! process of BARRIER_AND packets with no dependencies (nothing runs), next to a raw copy of one
//! 64-byte packet into a slot, measured in the same run. Both report packets per second.

use std::hint::black_box;

use aql_packets::{AqlPacket, Barrier, PACKET_SIZE, RingSize};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use soft_device::aql::SimQueue;
use soft_device::memory::SimMemory;
use soft_device::signal::Signals;

/// Packets per doorbell.
const BATCH: u32 = 64;

fn queue(c: &mut Criterion) {
    let packet = AqlPacket::BarrierAnd(Barrier::default()).to_bytes();
    let mut memory = SimMemory::new();
    let objects = soft_device::loader::SoftKernels::new();
    let mut signals = Signals::new();
    let mut q = SimQueue::new(&mut memory, RingSize::new(BATCH).unwrap()).unwrap();
    let mut no_pm4 =
        |_: &mut SimMemory, _: &soft_device::loader::SoftKernels, _: u64, _: u32| -> Result<(), hal::Pm4Error> {
            Err("no PM4 in this benchmark".into())
        };

    let mut group = c.benchmark_group("sim_queue");
    group.throughput(Throughput::Elements(u64::from(BATCH)));
    group.bench_function("barrier_and_publish_doorbell_process", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                q.publish(&mut memory, black_box(&packet)).unwrap();
            }
            q.ring_doorbell(q.write_index()).unwrap();
            let report = q.process(&mut memory, &objects, &mut signals, &mut no_pm4).unwrap();
            black_box(report.packets.len())
        });
    });
    group.throughput(Throughput::Elements(1));
    let mut slot = [0u8; PACKET_SIZE];
    group.bench_function("raw_64_byte_copy", |b| {
        b.iter(|| {
            slot.copy_from_slice(black_box(&packet));
            black_box(&slot);
        });
    });
    group.finish();
}

criterion_group!(benches, queue);
criterion_main!(benches);
