//! The profiler's instrumented body (`lowering::profile`) against the certified lowering of the
//! recorded chain: the same words once the inserted packets are taken out, a timestamp of the
//! reference's recipe at every point, the patch sites on the same words, and a body that runs on
//! the soft device with every slot written in order.

mod tape_fixture;

use std::time::Duration;

use hal::Device;
use lowering::lower::{PatchTarget, lower_pm4, slot_by_artifact};
use lowering::profile::plan::InstrumentedPlan;
use lowering::profile::{Instrument, Point, SLOT_BYTES, instrument};
use pm4_encoding::Decoder;
use pm4_encoding::packet::{CopyData, Packet};
use soft_device::SimDevice;
use tape_fixture::Chain;

const SLOTS_VA: u64 = 0x7f00_0000_1000;

#[test]
fn the_instrumented_body_is_the_certified_one_with_timestamps_inserted() {
    for target in tape_fixture::TARGETS {
        let mut device = SimDevice::new(target);
        let chain = Chain::new(&mut device);
        let tape = chain.tape(&device, 5);
        let n = tape.launches().len();
        let kernarg_vas: Vec<u64> = (0..n as u64).map(|i| 0x7e00_0000_0000 + 256 * i).collect();
        let lookup = slot_by_artifact(device.kernels());
        let lowered = lower_pm4(&tape, target.family(), &lookup, &kernarg_vas).unwrap();
        let hash = tape.identity().sequence_hash;
        for serialize in [false, true] {
            let body = instrument(&lowered, &hash, SLOTS_VA, Instrument { serialize }).unwrap();
            assert_eq!(body.strip(), lowered.words, "{target}: the certified words, in order");
            assert_eq!(body.slots(), n + 2);
            let points: Vec<Point> = body.timestamps.iter().map(|&(_, p)| p).collect();
            let mut expected = vec![Point::Entry];
            expected.extend((0..n).map(Point::AfterDispatch));
            expected.push(Point::Exit);
            assert_eq!(points, expected);
            assert_eq!(body.added_waits.len(), if serialize { n } else { 0 });
            // Every timestamp: control 0x00110509 (reference §4 "COPY_DATA"), slot i at 8 i.
            let decoded: Vec<_> = Decoder::new(&body.words).map(Result::unwrap).collect();
            for (slot, &(offset, _)) in body.timestamps.iter().enumerate() {
                let d = decoded.iter().find(|d| d.offset == offset).unwrap();
                let Packet::CopyData(p) = d.packet else { panic!("{target}: no COPY_DATA at {offset}") };
                assert_eq!(p.control.raw(), 0x0011_0509);
                assert_eq!(p.dst, SLOTS_VA + SLOT_BYTES * slot as u64);
            }
            assert_eq!(decoded.first().map(|d| d.offset), Some(body.timestamps[0].0), "entry first");
            assert_eq!(body.timestamps.last().unwrap().0 + CopyData::BUFFER_LEN, body.words.len(), "exit last");
            // Each timestamp after a dispatch follows its DISPATCH_DIRECT (and the added wait).
            for (k, &dispatch) in body.dispatch_offsets.iter().enumerate() {
                let after = body.timestamps[k + 1].0;
                let gap = if serialize { 2 } else { 0 };
                assert_eq!(after, dispatch + 5 + gap, "{target}: timestamp after dispatch {k}");
                let d = decoded.iter().find(|d| d.offset == dispatch).unwrap();
                assert!(matches!(d.packet, Packet::DispatchDirect(_)), "{target}: dispatch {k}");
            }
            // Patch sites: kernarg sites unchanged, DIM sites on the same DIM dword of the moved
            // dispatch.
            for (old, new) in lowered.patch_sites.iter().zip(&body.patch_sites) {
                match (old.target, new.target) {
                    (PatchTarget::KernargU32 { va: a }, PatchTarget::KernargU32 { va: b }) => assert_eq!(a, b),
                    (PatchTarget::DispatchDim { ib_dword: a, .. }, PatchTarget::DispatchDim { ib_dword: b, .. }) => {
                        assert_eq!(lowered.words[a], body.words[b]);
                        assert_eq!(a - lowered.dispatch_offsets[old.launch], b - body.dispatch_offsets[new.launch]);
                    }
                    other => panic!("{target}: site moved kind: {other:?}"),
                }
            }
            assert_ne!(body.sequence_hash(), hash);
        }
        let serial = instrument(&lowered, &hash, SLOTS_VA, Instrument { serialize: true }).unwrap();
        let plain = instrument(&lowered, &hash, SLOTS_VA, Instrument { serialize: false }).unwrap();
        assert_ne!(serial.sequence_hash(), plain.sequence_hash());
        // Addresses do not enter the hash.
        let elsewhere = instrument(&lowered, &hash, SLOTS_VA + 0x1000, Instrument { serialize: true }).unwrap();
        assert_eq!(elsewhere.sequence_hash(), serial.sequence_hash());
    }
}

#[test]
fn the_instrumented_body_runs_with_every_slot_in_order_and_the_ordinary_bytes() {
    for target in tape_fixture::TARGETS {
        let mut device = SimDevice::new(target);
        let chain = Chain::new(&mut device);
        let tape = chain.tape(&device, 5);
        let mut reference = SimDevice::new(target);
        let reference_chain = Chain::new(&mut reference);
        reference_chain.run_ordinary(&mut reference, 6);
        let mut plan = InstrumentedPlan::prepare(&mut device, &tape, Instrument { serialize: true }).unwrap();
        let run = plan.run(&mut device, 6, Duration::from_secs(10)).unwrap();
        assert_eq!(run.ticks.len(), tape.launches().len() + 2);
        assert!(run.ticks.windows(2).all(|w| w[1] > w[0]), "{target}: {:?}", run.ticks);
        assert_eq!(chain.outputs(&mut device), reference_chain.outputs(&mut reference), "{target}: ordinary bytes");
        plan.release(&mut device);
    }
}
