//! Property tests: encode → decode identity for every packet type, decode totality, strictness
//! (accepted bytes re-encode to themselves), ring arithmetic and publication order.

use aql_packets::barrier::DEP_SIGNALS;
use aql_packets::ring::BODY_SIZE;
use aql_packets::vendor::PM4_IB_DW_CNT_REMAIN;
use aql_packets::{
    AgentDispatch, AgentDispatchPacket, AmdBarrierValue, AmdBarrierValuePacket, AmdPm4IbPacket, AqlPacket, Barrier,
    BarrierAndPacket, BarrierOrPacket, Dimensions, FenceScope, KernelDispatch, KernelDispatchPacket, PACKET_SIZE,
    PacketControl, PacketSlot, RingSize, SignalCondition, decode, decode_slice, publish,
};
use proptest::prelude::*;

fn scope() -> impl Strategy<Value = FenceScope> {
    prop::sample::select(FenceScope::ALL.to_vec())
}

fn control() -> impl Strategy<Value = PacketControl> {
    (any::<bool>(), scope(), scope()).prop_map(|(barrier, acquire, release)| PacketControl {
        barrier,
        acquire,
        release,
    })
}

fn dimensions() -> impl Strategy<Value = Dimensions> {
    prop::sample::select(vec![Dimensions::One, Dimensions::Two, Dimensions::Three])
}

/// Dispatches that pass `KernelDispatch::validate`.
fn valid_kernel_dispatch() -> impl Strategy<Value = KernelDispatch> {
    (
        control(),
        dimensions(),
        [1..=u16::MAX, 1..=u16::MAX, 1..=u16::MAX],
        [1..=u32::MAX, 1..=u32::MAX, 1..=u32::MAX],
        any::<u32>(),
        any::<u32>(),
        1..=(u64::MAX >> 6),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(control, dimensions, workgroup_size, grid_size, private, group, ko, kernarg, signal)| {
            KernelDispatch {
                control,
                dimensions,
                workgroup_size,
                grid_size,
                private_segment_size: private,
                group_segment_size: group,
                kernel_object: ko << 6,
                kernarg_address: kernarg,
                completion_signal: signal,
            }
        })
}

/// Any typed dispatch, valid or not: `emit` encodes every value.
fn any_kernel_dispatch() -> impl Strategy<Value = KernelDispatch> {
    (valid_kernel_dispatch(), any::<[u16; 3]>(), any::<[u32; 3]>(), any::<u64>())
        .prop_map(|(d, wg, grid, ko)| KernelDispatch { workgroup_size: wg, grid_size: grid, kernel_object: ko, ..d })
}

fn barrier() -> impl Strategy<Value = Barrier> {
    (control(), any::<[u64; DEP_SIGNALS]>(), any::<u64>())
        .prop_map(|(control, dep_signal, completion_signal)| Barrier { control, dep_signal, completion_signal })
}

fn agent_dispatch() -> impl Strategy<Value = AgentDispatch> {
    (control(), any::<u16>(), any::<u64>(), any::<[u64; 4]>(), any::<u64>()).prop_map(
        |(control, function, return_address, arg, completion_signal)| AgentDispatch {
            control,
            function,
            return_address,
            arg,
            completion_signal,
        },
    )
}

fn barrier_value() -> impl Strategy<Value = AmdBarrierValue> {
    (
        control(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        prop::sample::select(SignalCondition::ALL.to_vec()),
        any::<u64>(),
    )
        .prop_map(|(control, signal, value, mask, cond, completion_signal)| AmdBarrierValue {
            control,
            signal,
            value,
            mask,
            cond,
            completion_signal,
        })
}

/// `(ib_address, ib_size_dwords, acquire, release, completion_signal)` that `AmdPm4IbPacket::new`
/// accepts.
fn pm4_ib_args() -> impl Strategy<Value = (u64, u32, FenceScope, FenceScope, u64)> {
    (any::<u64>().prop_map(|a| a & !3), 0..(1u32 << 20), scope(), scope(), any::<u64>())
}

/// Every kind of valid packet, as decoded values.
fn any_packet() -> impl Strategy<Value = AqlPacket> {
    prop_oneof![
        Just(AqlPacket::Invalid),
        any_kernel_dispatch().prop_map(AqlPacket::KernelDispatch),
        barrier().prop_map(AqlPacket::BarrierAnd),
        barrier().prop_map(AqlPacket::BarrierOr),
        agent_dispatch().prop_map(AqlPacket::AgentDispatch),
        barrier_value().prop_map(AqlPacket::AmdBarrierValue),
        pm4_ib_args().prop_map(|(a, s, acq, rel, sig)| {
            AqlPacket::AmdPm4Ib(AmdPm4IbPacket::new(a, s, acq, rel, sig).unwrap().parse().unwrap())
        }),
    ]
}

fn bytes64() -> impl Strategy<Value = [u8; PACKET_SIZE]> {
    prop::collection::vec(any::<u8>(), PACKET_SIZE).prop_map(|v| v.try_into().unwrap())
}

proptest! {
    #[test]
    fn kernel_dispatch_round_trip(d in valid_kernel_dispatch()) {
        let packet = KernelDispatchPacket::new(&d).unwrap();
        prop_assert_eq!(packet.parse(), Ok(d));
        prop_assert_eq!(decode(packet.as_array()), Ok(AqlPacket::KernelDispatch(d)));
    }

    #[test]
    fn kernel_dispatch_emit_round_trip(d in any_kernel_dispatch()) {
        prop_assert_eq!(decode(d.emit().as_array()), Ok(AqlPacket::KernelDispatch(d)));
    }

    #[test]
    fn barrier_and_round_trip(b in barrier()) {
        let packet = BarrierAndPacket::new(&b);
        prop_assert_eq!(packet.parse(), Ok(b));
        prop_assert_eq!(decode(packet.as_array()), Ok(AqlPacket::BarrierAnd(b)));
    }

    #[test]
    fn barrier_or_round_trip(b in barrier()) {
        let packet = BarrierOrPacket::new(&b);
        prop_assert_eq!(packet.parse(), Ok(b));
        prop_assert_eq!(decode(packet.as_array()), Ok(AqlPacket::BarrierOr(b)));
    }

    #[test]
    fn agent_dispatch_round_trip(d in agent_dispatch()) {
        let packet = AgentDispatchPacket::new(&d);
        prop_assert_eq!(packet.parse(), Ok(d));
        prop_assert_eq!(decode(packet.as_array()), Ok(AqlPacket::AgentDispatch(d)));
    }

    #[test]
    fn barrier_value_round_trip(b in barrier_value()) {
        let packet = AmdBarrierValuePacket::new(&b);
        prop_assert_eq!(packet.parse(), Ok(b));
        prop_assert_eq!(decode(packet.as_array()), Ok(AqlPacket::AmdBarrierValue(b)));
    }

    #[test]
    fn pm4_ib_round_trip((address, size, acquire, release, signal) in pm4_ib_args()) {
        let packet = AmdPm4IbPacket::new(address, size, acquire, release, signal).unwrap();
        prop_assert_eq!(packet.dw_cnt_remain.get(), PM4_IB_DW_CNT_REMAIN);
        let Ok(AqlPacket::AmdPm4Ib(ib)) = decode(packet.as_array()) else {
            return Err(TestCaseError::fail("not a PM4-IB packet"));
        };
        prop_assert_eq!(ib.ib.address, address);
        prop_assert_eq!(ib.ib.control.ib_size(), size);
        prop_assert_eq!(ib.ib.control.valid(), 1);
        prop_assert_eq!(ib.control, PacketControl { barrier: false, acquire, release });
        prop_assert_eq!(ib.completion_signal, signal);
        prop_assert_eq!(ib.emit(), packet);
    }

    #[test]
    fn decode_never_panics(bytes in bytes64()) {
        let _ = decode(&bytes);
    }

    #[test]
    fn decode_slice_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..130)) {
        let r = decode_slice(&bytes);
        if bytes.len() != PACKET_SIZE {
            prop_assert!(r.is_err());
        }
    }

    /// Random bytes, and valid packets with a few bits flipped: whatever decodes (except an
    /// empty slot, whose stale bytes are ignored) re-encodes to exactly the same bytes.
    #[test]
    fn accepted_bytes_re_encode(
        packet in any_packet(),
        flips in prop::collection::vec((0..PACKET_SIZE, 0..8u8), 0..4),
        random in bytes64(),
        use_random in any::<bool>(),
    ) {
        let mut bytes = if use_random { random } else { packet.to_bytes() };
        for (byte, bit) in flips {
            bytes[byte] ^= 1 << bit;
        }
        if let Ok(decoded) = decode(&bytes)
            && decoded != AqlPacket::Invalid
        {
            prop_assert_eq!(decoded.to_bytes(), bytes);
        }
    }

    #[test]
    fn every_packet_round_trips(packet in any_packet()) {
        prop_assert_eq!(decode(&packet.to_bytes()), Ok(packet));
    }

    #[test]
    fn ring_index_in_range_and_wraps(log2 in 0u32..=31, id in any::<u64>()) {
        let ring = RingSize::new(1 << log2).unwrap();
        let slots = u64::from(ring.slots());
        let index = ring.slot_index(id);
        prop_assert!((index as u64) < slots);
        prop_assert_eq!(index as u64, id % slots);
        prop_assert_eq!(ring.slot_index(id.wrapping_add(slots)), index);
        prop_assert_eq!(ring.slot_byte_offset(id), index as u64 * 64);
        prop_assert!(ring.slot_byte_offset(id) + 64 <= ring.byte_len());
    }

    #[test]
    fn ring_rejects_non_powers_of_two(slots in any::<u32>()) {
        prop_assert_eq!(RingSize::new(slots).is_ok(), slots.count_ones() == 1);
    }

    #[test]
    fn ring_full_after_slots_in_flight(log2 in 0u32..=31, read in any::<u64>(), in_flight in any::<u32>()) {
        let ring = RingSize::new(1 << log2).unwrap();
        let write = read.wrapping_add(u64::from(in_flight));
        prop_assert_eq!(ring.is_full(write, read), in_flight >= ring.slots());
    }

    #[test]
    fn publish_writes_body_then_header_word(bytes in bytes64()) {
        let mut rec = Recorder::default();
        publish(&mut rec, &bytes);
        let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        prop_assert_eq!(rec.0, vec![Write::Body(bytes[4..].to_vec()), Write::HeaderRelease(word)]);
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Write {
    Body(Vec<u8>),
    HeaderRelease(u32),
}

#[derive(Default)]
struct Recorder(Vec<Write>);

impl PacketSlot for Recorder {
    fn write_body(&mut self, body: &[u8; BODY_SIZE]) {
        self.0.push(Write::Body(body.to_vec()));
    }

    fn store_header_word_release(&mut self, word: u32) {
        self.0.push(Write::HeaderRelease(word));
    }
}

/// A slot that a "packet processor" inspects at every store: it must never see a valid type
/// with a body that is not the final one.
struct Observed {
    slot: [u8; PACKET_SIZE],
    expected: [u8; PACKET_SIZE],
    header_stores: usize,
}

impl PacketSlot for Observed {
    fn write_body(&mut self, body: &[u8; BODY_SIZE]) {
        self.slot[4..].copy_from_slice(body);
        assert_eq!(decode(&self.slot), Ok(AqlPacket::Invalid), "slot became valid before the header store");
    }

    fn store_header_word_release(&mut self, word: u32) {
        assert_eq!(self.slot[4..], self.expected[4..], "header stored before the whole body");
        self.slot[..4].copy_from_slice(&word.to_le_bytes());
        self.header_stores += 1;
    }
}

#[test]
fn packet_processor_never_sees_a_partial_packet() {
    let packet = AmdPm4IbPacket::new(0x7F12_3456_7800, 64, FenceScope::System, FenceScope::System, 0).unwrap();
    // An empty slot holding a stale packet.
    let mut slot = [0xA5; PACKET_SIZE];
    slot[..4].copy_from_slice(&aql_packets::INVALID_HEADER_WORD.to_le_bytes());
    let mut observed = Observed { slot, expected: *packet.as_array(), header_stores: 0 };
    publish(&mut observed, packet.as_array());
    assert_eq!(observed.header_stores, 1);
    assert_eq!(observed.slot, *packet.as_array());
}
