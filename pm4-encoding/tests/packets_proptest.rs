//! Property tests of the typed packets: every valid packet survives `Writer` → `Decoder`
//! unchanged, sequences decode back in order, the decoder never panics on arbitrary words and
//! re-emits exactly what it read, and a full `Writer` leaves the buffer untouched.

use pm4_encoding::bits::FieldDesc;
use pm4_encoding::disasm::Visitor;
use pm4_encoding::packet::copy_data::CopyDataControl;
use pm4_encoding::packet::dispatch_direct::DispatchInitiator;
use pm4_encoding::packet::event_write::EventWriteControl;
use pm4_encoding::packet::indirect_buffer::IbControl;
use pm4_encoding::packet::reg_write::RegWriteControl;
use pm4_encoding::packet::release_mem::{DataCntl, EventCntl};
use pm4_encoding::packet::wait_reg_mem::{WaitRegMemControl, WaitRegMemPollInterval};
use pm4_encoding::packet::write_data::WriteDataControl;
use pm4_encoding::packet::{
    AcquireMem, CopyData, DispatchDirect, DispatchIndirect, EventWrite, GcrCntl, IndirectBuffer, Nop, ReleaseMem,
    SetShReg, SetUconfigReg, WaitRegMem, WriteData,
};
use pm4_encoding::regs::{RegisterInfo, SH_REG_BASE, SH_REG_END, UCONFIG_REG_BASE, UCONFIG_REG_END};
use pm4_encoding::{
    CapacityError, Decoded, Decoder, Emit, Family, HeaderFlags, Opcode, Packet, ShaderType, Type3Header, Writer,
};
use proptest::collection::vec;
use proptest::prelude::*;

/// Test data outlives the packets that borrow it.
fn leak(words: Vec<u32>) -> &'static [u32] {
    words.leak()
}

fn flags() -> impl Strategy<Value = HeaderFlags> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(compute, predicate, reset_filter_cam)| HeaderFlags {
        shader_type: if compute { ShaderType::Compute } else { ShaderType::Graphics },
        predicate,
        reset_filter_cam,
    })
}

fn nop() -> impl Strategy<Value = Packet<'static>> {
    (flags(), vec(any::<u32>(), 0..24)).prop_map(|(flags, payload)| {
        let mut p = Nop::new(leak(payload)).unwrap();
        p.flags = flags;
        Packet::Nop(p)
    })
}

/// `(first absolute dword, values)` inside the window `base..end`, up to 24 values.
fn window_write(base: u32, end: u32) -> impl Strategy<Value = (u32, Vec<u32>)> {
    (base..end).prop_flat_map(move |first| {
        let room = usize::try_from(end - first).unwrap().min(24);
        (Just(first), vec(any::<u32>(), 1..=room))
    })
}

/// A control word keeping `REG_OFFSET` and randomising every other bit (reserved ones included).
fn reg_control(offset: u32, noise: u32) -> RegWriteControl {
    RegWriteControl::from_raw((noise & !0xFFFF) | offset)
}

fn set_sh_reg() -> impl Strategy<Value = Packet<'static>> {
    (flags(), window_write(SH_REG_BASE, SH_REG_END), any::<u32>()).prop_map(|(flags, (first, values), noise)| {
        let mut p = SetShReg::new(first, leak(values)).unwrap();
        p.flags = flags;
        p.control = reg_control(first - SH_REG_BASE, noise);
        Packet::SetShReg(p)
    })
}

fn set_uconfig_reg() -> impl Strategy<Value = Packet<'static>> {
    (flags(), window_write(UCONFIG_REG_BASE, UCONFIG_REG_END), any::<u32>()).prop_map(
        |(flags, (first, values), noise)| {
            let mut p = SetUconfigReg::new(first, leak(values)).unwrap();
            p.flags = flags;
            p.control = reg_control(first - UCONFIG_REG_BASE, noise);
            Packet::SetUconfigReg(p)
        },
    )
}

fn dispatch_direct() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<[u32; 4]>()).prop_map(|(flags, [dim_x, dim_y, dim_z, initiator])| {
        Packet::DispatchDirect(DispatchDirect {
            flags,
            dim_x,
            dim_y,
            dim_z,
            initiator: DispatchInitiator::from_raw(initiator),
        })
    })
}

fn dispatch_indirect() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<[u32; 2]>()).prop_map(|(flags, [data_offset, initiator])| {
        Packet::DispatchIndirect(DispatchIndirect {
            flags,
            data_offset,
            initiator: DispatchInitiator::from_raw(initiator),
        })
    })
}

fn acquire_mem() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<[u32; 7]>()).prop_map(|(flags, w)| {
        Packet::AcquireMem(AcquireMem {
            flags,
            coher_cntl: w[0],
            coher_size: w[1],
            coher_size_hi: w[2],
            coher_base_lo: w[3],
            coher_base_hi: w[4],
            poll_interval: w[5],
            gcr_cntl: GcrCntl::from_raw(w[6]),
        })
    })
}

fn release_mem() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<[u32; 3]>(), any::<[u64; 2]>()).prop_map(
        |(flags, [event_cntl, data_cntl, int_ctxid], [a, data])| {
            let data_cntl = DataCntl::from_raw(data_cntl);
            // Align the address as the data size requires.
            let address = a & !u64::from(data_cntl.data_sel().address_align_mask());
            let mut p = ReleaseMem::new(EventCntl::from_raw(event_cntl), data_cntl, address, data).unwrap();
            p.flags = flags;
            p.int_ctxid = int_ctxid;
            Packet::ReleaseMem(p)
        },
    )
}

fn event_write() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<u32>(), proptest::option::of(any::<u64>())).prop_map(|(flags, control, address)| {
        Packet::EventWrite(EventWrite {
            flags,
            control: EventWriteControl::from_raw(control),
            // Sample-event addresses are qword aligned.
            address: address.map(|a| a & !7),
        })
    })
}

fn wait_reg_mem() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<[u32; 6]>()).prop_map(|(flags, w)| {
        let mut p = WaitRegMem {
            flags,
            control: WaitRegMemControl::from_raw(w[0]),
            poll_address_lo: w[1],
            poll_address_hi: w[2],
            reference: w[3],
            mask: w[4],
            poll_interval: WaitRegMemPollInterval::from_raw(w[5]),
        };
        // A memory poll address is dword aligned; keep the packet valid whatever MEM_SPACE says.
        if p.control.mem_space_raw() == 1 {
            p.poll_address_lo &= !3;
        }
        Packet::WaitRegMem(p)
    })
}

fn write_data() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<u32>(), any::<u64>(), vec(any::<u32>(), 1..24)).prop_map(|(flags, control, dst, data)| {
        let control = WriteDataControl::from_raw(control);
        let dst_addr = if control.dst_sel().is_memory() { dst & !3 } else { dst };
        let mut p = WriteData::new(control, dst_addr, leak(data)).unwrap();
        p.flags = flags;
        Packet::WriteData(p)
    })
}

fn copy_data() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<u32>(), any::<[u64; 2]>()).prop_map(|(flags, control, [src, dst])| {
        let control = CopyDataControl::from_raw(control);
        // Qword alignment satisfies every source and destination rule.
        let mut p =
            CopyData::new(control, src, dst).unwrap_or_else(|_| CopyData::new(control, src & !7, dst & !7).unwrap());
        p.flags = flags;
        Packet::CopyData(p)
    })
}

fn indirect_buffer() -> impl Strategy<Value = Packet<'static>> {
    (flags(), any::<u64>(), any::<u32>()).prop_map(|(flags, address, control)| {
        Packet::IndirectBuffer(IndirectBuffer { flags, address: address & !3, control: IbControl::from_raw(control) })
    })
}

/// Opcodes the crate names but does not type: they decode as [`Packet::Other`].
const UNTYPED: [Opcode; 4] = [Opcode::SetBase, Opcode::DmaData, Opcode::SetShRegIndex, Opcode::Unknown(0x01)];

fn other() -> impl Strategy<Value = Packet<'static>> {
    (flags(), 0..UNTYPED.len(), vec(any::<u32>(), 1..12)).prop_map(|(flags, i, body)| Packet::Other {
        header: Type3Header::with_flags(UNTYPED[i], body.len(), flags),
        body: leak(body),
    })
}

fn type0() -> impl Strategy<Value = Packet<'static>> {
    (any::<u16>(), vec(any::<u32>(), 1..12))
        .prop_map(|(base_reg, values)| Packet::Type0 { base_reg, values: leak(values) })
}

/// Any valid packet, every typed kind included.
fn packet() -> impl Strategy<Value = Packet<'static>> {
    prop_oneof![
        nop(),
        set_sh_reg(),
        set_uconfig_reg(),
        dispatch_direct(),
        dispatch_indirect(),
        acquire_mem(),
        release_mem(),
        event_write(),
        wait_reg_mem(),
        write_data(),
        copy_data(),
        indirect_buffer(),
        other(),
        type0(),
        Just(Packet::Type2),
    ]
}

/// Counts what a packet reports.
#[derive(Default)]
struct Counter(usize);

impl Visitor for Counter {
    fn field(&mut self, _: &'static str, _: u64) {
        self.0 += 1;
    }
    fn enum_field(&mut self, _: &'static str, _: u64, _: Option<&'static str>) {
        self.0 += 1;
    }
    fn word(&mut self, _: &'static str, _: u32, fields: &'static [FieldDesc]) {
        assert!(!fields.is_empty(), "a reported word has a field table");
        self.0 += 1;
    }
    fn register(&mut self, _: u32, _: u32, _: Option<&'static RegisterInfo>) {
        self.0 += 1;
    }
    fn payload(&mut self, _: &'static str, _: &[u32]) {
        self.0 += 1;
    }
}

fn emit_one(p: &Packet<'_>) -> Vec<u32> {
    let mut buf = vec![0; p.buffer_len()];
    let mut w = Writer::new(&mut buf);
    assert_eq!(w.emit(p), Ok(0));
    assert_eq!(w.finish(), buf.len());
    buf
}

fn decode_all(words: &[u32]) -> Vec<Decoded<'_>> {
    Decoder::new(words).map(|d| d.expect("a stream of valid packets decodes")).collect()
}

proptest! {
    #[test]
    fn every_packet_round_trips(p in packet()) {
        let words = emit_one(&p);
        let decoded = decode_all(&words);
        prop_assert_eq!(decoded.len(), 1);
        prop_assert_eq!(decoded[0].offset, 0);
        prop_assert_eq!(decoded[0].packet, p);
        prop_assert_eq!(decoded[0].words, &words[..]);
        prop_assert_eq!(emit_one(&decoded[0].packet), words.clone());
        for family in Family::ALL {
            let mut counter = Counter::default();
            decoded[0].packet.visit(family, &mut counter);
            // Only the type-2 filler has nothing to report.
            prop_assert_eq!(counter.0 == 0, p == Packet::Type2);
        }
    }

    #[test]
    fn sequences_round_trip(packets in vec(packet(), 0..24)) {
        let total: usize = packets.iter().map(Emit::buffer_len).sum();
        let mut buf = vec![0; total];
        let mut w = Writer::new(&mut buf);
        let mut starts = Vec::new();
        for p in &packets {
            starts.push(w.emit(p).unwrap());
        }
        prop_assert_eq!(w.remaining(), 0);
        let decoded = decode_all(&buf);
        prop_assert_eq!(decoded.len(), packets.len());
        for ((d, p), start) in decoded.iter().zip(&packets).zip(&starts) {
            prop_assert_eq!(&d.packet, p);
            prop_assert_eq!(d.offset, *start);
        }
    }

    #[test]
    fn full_writer_changes_nothing(p in packet(), used in 0usize..8, short in 1usize..8) {
        const SENTINEL: u32 = 0xA5A5_A5A5;
        let needed = p.buffer_len();
        let capacity = used + needed.saturating_sub(short);
        let mut buf = vec![SENTINEL; capacity];
        let mut w = Writer::new(&mut buf);
        // Fill `used` dwords with header-only NOPs first, so the failure happens mid-buffer.
        for _ in 0..used {
            w.emit(&Nop::HEADER_ONLY).unwrap();
        }
        prop_assert_eq!(w.emit(&p), Err(CapacityError { needed, used, capacity }));
        prop_assert_eq!(w.len(), used);
        prop_assert_eq!(w.finish(), used);
        prop_assert!(buf[..used].iter().all(|&x| x == 0xFFFF_1000));
        prop_assert!(buf[used..].iter().all(|&x| x == SENTINEL));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decoder_never_panics_and_reemits(words in stream()) {
        let mut decoder = Decoder::new(&words);
        let mut next_offset = 0;
        let mut items = 0;
        while let Some(item) = decoder.next() {
            items += 1;
            // Every item consumes at least one dword, so the walk ends.
            prop_assert!(items <= words.len());
            match item {
                Ok(d) => {
                    prop_assert_eq!(d.offset, next_offset);
                    next_offset += d.words.len();
                    let again = emit_one(&d.packet);
                    // Every bit of every accepted packet comes back, type-2 filler included
                    // (other type-2 words are header errors).
                    prop_assert_eq!(again, d.words);
                }
                Err(e) => {
                    prop_assert_eq!(e.offset(), next_offset);
                    prop_assert!(decoder.next().is_none(), "the decoder stops after an error");
                    break;
                }
            }
        }
    }
}

/// Opcodes with a typed parser, for headers that exercise them with arbitrary bodies.
const TYPED: [Opcode; 12] = [
    Opcode::Nop,
    Opcode::SetShReg,
    Opcode::SetUconfigReg,
    Opcode::DispatchDirect,
    Opcode::DispatchIndirect,
    Opcode::AcquireMem,
    Opcode::ReleaseMem,
    Opcode::EventWrite,
    Opcode::WaitRegMem,
    Opcode::WriteData,
    Opcode::CopyData,
    Opcode::IndirectBuffer,
];

/// One chunk of a fuzzed stream.
fn chunk() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        // Random words: mostly headers whose count runs past the end, some type 0/1/2.
        1 => vec(any::<u32>(), 1..8),
        // A typed opcode with an arbitrary (often wrong) body length and random body words, with
        // small register offsets and aligned-ish addresses showing up by chance.
        2 => (0..TYPED.len(), 0u16..10, any::<u8>(), vec(prop_oneof![any::<u32>(), 0u32..0x400], 0..12)).prop_map(
            |(i, count, flag_bits, mut body)| {
                let mut header = Type3Header::new(TYPED[i], usize::from(count) + 1, ShaderType::Graphics);
                header.predicate = flag_bits & 1 != 0;
                header.reset_filter_cam = flag_bits & 4 != 0;
                if flag_bits & 2 != 0 {
                    header = header.compute();
                }
                body.truncate(usize::from(count) + 1);
                let mut words = vec![header.encode()];
                words.extend(body);
                words
            }
        ),
        // A valid packet, possibly with one word flipped. Weighted up: the first error ends a
        // stream, so valid chunks are what carry the walk into later packets.
        4 => (packet(), any::<usize>(), any::<u32>(), any::<bool>()).prop_map(|(p, at, xor, flip)| {
            let mut words = emit_one(&p);
            if flip {
                let at = at % words.len();
                words[at] ^= xor;
            }
            words
        }),
        1 => Just(vec![0xFFFF_1000]),
    ]
}

fn stream() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![vec(any::<u32>(), 0..64), vec(chunk(), 0..12).prop_map(|chunks| chunks.concat())]
}

/// The longest NOP the header can describe (COUNT 0x3FFE) and the header-only one decode back.
#[test]
fn longest_nop_round_trips() {
    let payload = vec![0x5A5A_5A5A; 0x3FFF];
    for p in [Packet::Nop(Nop::new(&payload).unwrap()), Packet::Nop(Nop::HEADER_ONLY)] {
        let words = emit_one(&p);
        let decoded = decode_all(&words);
        assert_eq!(decoded.len(), 1);
        assert_eq!(decoded[0].packet, p);
    }
}

/// A register write that fills the SH window to its last dword decodes; one more does not.
#[test]
fn window_edges_round_trip() {
    let values = vec![7; 0x400];
    let p = Packet::SetShReg(SetShReg::new(SH_REG_BASE, &values).unwrap());
    assert_eq!(decode_all(&emit_one(&p))[0].packet, p);
    assert!(SetShReg::new(SH_REG_BASE + 1, &values).is_err());
}
