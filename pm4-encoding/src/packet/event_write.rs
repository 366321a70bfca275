//! `EVENT_WRITE` (0x46): send a pipeline event (`CS_PARTIAL_FLUSH`, cache flushes, samples).
//!
//! Body (reference §4 "EVENT_WRITE"): dw0 `EVENT_TYPE` `[5:0]` (a `VGT_EVENT_TYPE`), `EVENT_INDEX`
//! `[11:8]`; sample events add dw1..2 `ADDRESS_LO/HI`, qword aligned (bits `[31:3]`). So the body is
//! 1 or 3 dwords.

use crate::disasm::Visitor;
use crate::header::{HeaderFlags, Type3Header};
use crate::opcode::Opcode;
use crate::packet::{Emit, NO_FLAGS, PacketError, check_aligned, join_u64, split_u64};

mod field {
    /// Body dwords of a plain event.
    pub(super) const BODY_DWORDS: usize = 1;
    /// Body dwords of an event with an address.
    pub(super) const BODY_DWORDS_WITH_ADDRESS: usize = 3;
    pub(super) const CONTROL: usize = 0;
    pub(super) const ADDRESS_LO: usize = 1;
    pub(super) const ADDRESS_HI: usize = 2;
    /// `ADDRESS_LO` bits `[2:0]` must be zero: the address is qword aligned.
    pub(super) const ADDRESS_ALIGN_MASK: u32 = 0b111;
    /// `EVENT_INDEX` of the `*_PARTIAL_FLUSH` events.
    pub(super) const PARTIAL_FLUSH_INDEX: u32 = 4;
}

crate::bitfield32! {
    /// `EVENT_WRITE` body dword 0.
    pub struct EventWriteControl {
        /// The event, raw ([`EventType`]).
        [5:0] event_type_raw, with_event_type_raw = "EVENT_TYPE";
        /// Event class: 4 = `*_PARTIAL_FLUSH`, 5 = timestamp events, 2 = `SAMPLE_PIPELINESTAT`, ...
        [11:8] event_index, with_event_index = "EVENT_INDEX";
    }
}

field_enum! {
    /// `VGT_EVENT_TYPE`: the events `EVENT_WRITE` and `RELEASE_MEM` send (reference §4
    /// "EVENT_WRITE"; identical on gfx10.3, gfx11 and gfx12).
    pub enum EventType(u8) {
        /// Cache flush with timestamp.
        CacheFlushTs = 4 => "CACHE_FLUSH_TS",
        /// Cache flush.
        CacheFlush = 6 => "CACHE_FLUSH",
        /// Wait for compute work to drain.
        CsPartialFlush = 7 => "CS_PARTIAL_FLUSH",
        /// Wait for vertex work to drain.
        VsPartialFlush = 15 => "VS_PARTIAL_FLUSH",
        /// Wait for pixel work to drain.
        PsPartialFlush = 16 => "PS_PARTIAL_FLUSH",
        /// Cache flush and invalidate with timestamp (0x14, what Linux fences use).
        CacheFlushAndInvTsEvent = 20 => "CACHE_FLUSH_AND_INV_TS_EVENT",
        /// Cache flush and invalidate.
        CacheFlushAndInvEvent = 22 => "CACHE_FLUSH_AND_INV_EVENT",
        /// Start pipeline statistics.
        PipelinestatStart = 25 => "PIPELINESTAT_START",
        /// Stop pipeline statistics.
        PipelinestatStop = 26 => "PIPELINESTAT_STOP",
        /// Write pipeline statistics to memory.
        SamplePipelinestat = 30 => "SAMPLE_PIPELINESTAT",
        /// Compute context done.
        CsContextDone = 35 => "CS_CONTEXT_DONE",
        /// Bottom of pipe timestamp.
        BottomOfPipeTs = 40 => "BOTTOM_OF_PIPE_TS",
        /// Flush and invalidate DB data with timestamp.
        FlushAndInvDbDataTs = 43 => "FLUSH_AND_INV_DB_DATA_TS",
        /// Flush and invalidate CB data with timestamp.
        FlushAndInvCbDataTs = 45 => "FLUSH_AND_INV_CB_DATA_TS",
        /// Compute shaders done.
        CsDone = 47 => "CS_DONE",
        /// Pixel shaders done.
        PsDone = 48 => "PS_DONE",
        /// Thread trace marker.
        ThreadTraceMarker = 53 => "THREAD_TRACE_MARKER",
    }
}

/// The typed `EventType` of a 6-bit `EVENT_TYPE` field value.
pub(crate) const fn event_type_of(raw: u32) -> EventType {
    // CAST: the caller passes a 6-bit field.
    #[allow(clippy::cast_possible_truncation)]
    EventType::from_raw(raw as u8)
}

impl EventWriteControl {
    /// `EVENT_TYPE`.
    #[must_use]
    pub const fn event_type(self) -> EventType {
        event_type_of(self.event_type_raw())
    }

    /// Returns a copy with `EVENT_TYPE` = `value`.
    ///
    /// PANIC: asserts that an `Unknown` value fits in 6 bits.
    #[must_use]
    pub const fn with_event_type(self, value: EventType) -> Self {
        // Widening u8 -> u32 (`u32::from` is not callable in a const fn).
        self.with_event_type_raw(value.raw() as u32)
    }
}

/// A validated `EVENT_WRITE` packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventWrite {
    /// Header flag bits.
    pub flags: HeaderFlags,
    /// Body dword 0: event type and index.
    pub control: EventWriteControl,
    /// Where a sample event writes; qword aligned. `None`: a one-dword body.
    pub address: Option<u64>,
}

impl EventWrite {
    /// `CS_PARTIAL_FLUSH` with `EVENT_INDEX` 4: body 0x00000407 (reference §4 "EVENT_WRITE").
    #[must_use]
    pub const fn cs_partial_flush() -> Self {
        let control = EventWriteControl::from_raw(0)
            .with_event_type(EventType::CsPartialFlush)
            .with_event_index(field::PARTIAL_FLUSH_INDEX);
        Self { flags: NO_FLAGS, control, address: None }
    }

    /// An event without address, with default header flags.
    ///
    /// # Errors
    /// [`PacketError::FieldValue`] when an `Unknown` event does not fit `EVENT_TYPE` (6 bits) or
    /// `event_index` does not fit `EVENT_INDEX` (4 bits).
    pub const fn new(event: EventType, event_index: u32) -> Result<Self, PacketError> {
        match control(event, event_index) {
            Ok(control) => Ok(Self { flags: NO_FLAGS, control, address: None }),
            Err(e) => Err(e),
        }
    }

    /// A sample event writing to `address`, with default header flags.
    ///
    /// # Errors
    /// As [`EventWrite::new`], and [`PacketError::FieldValue`] when `address` is not qword aligned.
    pub const fn with_address(event: EventType, event_index: u32, address: u64) -> Result<Self, PacketError> {
        if let Err(e) = check_aligned(Opcode::EventWrite, "ADDRESS_LO", address, field::ADDRESS_ALIGN_MASK) {
            return Err(e);
        }
        match control(event, event_index) {
            Ok(control) => Ok(Self { flags: NO_FLAGS, control, address: Some(address) }),
            Err(e) => Err(e),
        }
    }

    /// Parses a body.
    ///
    /// # Errors
    /// [`PacketError::BodyLength`] unless the body is 1 or 3 dwords; [`PacketError::FieldValue`]
    /// when the address is not qword aligned.
    pub fn parse(header: Type3Header, body: &[u32]) -> Result<Self, PacketError> {
        let (control, address) = match *body {
            [control] => (control, None),
            [control, lo, hi] => {
                let address = join_u64(lo, hi);
                check_aligned(Opcode::EventWrite, "ADDRESS_LO", address, field::ADDRESS_ALIGN_MASK)?;
                (control, Some(address))
            }
            _ => {
                // The nearest valid length: a lone dword is short of the 3-dword form only
                // when something follows it.
                let expected = if body.is_empty() { field::BODY_DWORDS } else { field::BODY_DWORDS_WITH_ADDRESS };
                return Err(PacketError::BodyLength { opcode: Opcode::EventWrite, expected, found: body.len() });
            }
        };
        Ok(Self { flags: header.flags(), control: EventWriteControl::from_raw(control), address })
    }

    /// Reports the fields.
    pub fn visit(&self, v: &mut dyn Visitor) {
        v.word("CONTROL", self.control.raw(), EventWriteControl::FIELDS);
        v.enum_field("EVENT_TYPE", u64::from(self.control.event_type_raw()), self.control.event_type().name());
        if let Some(address) = self.address {
            v.field("ADDRESS", address);
        }
    }

    const fn body_dwords(&self) -> usize {
        if self.address.is_some() { field::BODY_DWORDS_WITH_ADDRESS } else { field::BODY_DWORDS }
    }
}

/// The control word for `event` and `event_index`, or the field that does not fit.
const fn control(event: EventType, event_index: u32) -> Result<EventWriteControl, PacketError> {
    // Widening u8 -> u32 (`u32::from` is not callable in a const fn).
    let event = event.raw() as u32;
    if !crate::bits::fits(event, 5, 0) {
        return Err(PacketError::FieldValue { opcode: Opcode::EventWrite, field: "EVENT_TYPE", value: event });
    }
    if !crate::bits::fits(event_index, 11, 8) {
        return Err(PacketError::FieldValue { opcode: Opcode::EventWrite, field: "EVENT_INDEX", value: event_index });
    }
    Ok(EventWriteControl::from_raw(0).with_event_type_raw(event).with_event_index(event_index))
}

impl Emit for EventWrite {
    #[inline(always)]
    fn buffer_len(&self) -> usize {
        1 + self.body_dwords()
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u32]) {
        // PANIC: the Writer sized `out` from buffer_len(); a mismatch is a programmer error.
        assert_eq!(out.len(), self.buffer_len(), "EVENT_WRITE output slice must match the packet length");
        out[0] = Type3Header::with_flags(Opcode::EventWrite, self.body_dwords(), self.flags).encode();
        out[1 + field::CONTROL] = self.control.raw();
        if let Some(address) = self.address {
            let (lo, hi) = split_u64(address);
            out[1 + field::ADDRESS_LO] = lo;
            out[1 + field::ADDRESS_HI] = hi;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test_util::{Item, Recorder};

    fn parse_words(words: &[u32]) -> Result<EventWrite, PacketError> {
        EventWrite::parse(Type3Header::decode(words[0]).unwrap(), &words[1..])
    }

    // Reference §4 "EVENT_WRITE": CS_PARTIAL_FLUSH = 7, EVENT_INDEX 4 -> body 0x00000407;
    // COUNT 0 -> header 0xC0004600.
    const CS_PARTIAL_FLUSH: [u32; 2] = [0xC000_4600, 0x0000_0407];

    #[test]
    fn cs_partial_flush_literal() {
        let mut out = [0; 2];
        EventWrite::cs_partial_flush().emit(&mut out);
        assert_eq!(out, CS_PARTIAL_FLUSH);
        assert_eq!(EventWrite::new(EventType::CsPartialFlush, 4), Ok(EventWrite::cs_partial_flush()));
        let p = parse_words(&CS_PARTIAL_FLUSH).unwrap();
        assert_eq!(p.control.event_type(), EventType::CsPartialFlush);
        assert_eq!(p.control.event_index(), 4);
        assert_eq!(p.address, None);
    }

    // SAMPLE_PIPELINESTAT = 30 (0x1E), EVENT_INDEX 2, COUNT 2 -> 0xC0024600, then the address.
    #[test]
    fn sample_event_with_address() {
        const WORDS: [u32; 4] = [0xC002_4600, 0x0000_021E, 0x1234_5678, 0x0000_7F00];
        let p = EventWrite::with_address(EventType::SamplePipelinestat, 2, 0x7F00_1234_5678).unwrap();
        let mut out = [0; 4];
        p.emit(&mut out);
        assert_eq!(out, WORDS);
        assert_eq!(parse_words(&WORDS), Ok(p));
        let mut rec = Recorder::default();
        p.visit(&mut rec);
        assert_eq!(
            rec.items,
            [
                Item::Word("CONTROL", 0x021E),
                Item::Enum("EVENT_TYPE", 30, Some("SAMPLE_PIPELINESTAT")),
                Item::Field("ADDRESS", 0x7F00_1234_5678),
            ]
        );
    }

    #[test]
    fn event_type_values() {
        // Values from the reference list.
        assert_eq!(EventType::from_raw(4), EventType::CacheFlushTs);
        assert_eq!(EventType::from_raw(0x14), EventType::CacheFlushAndInvTsEvent);
        assert_eq!(EventType::from_raw(0x28), EventType::BottomOfPipeTs);
        assert_eq!(EventType::from_raw(0x2F), EventType::CsDone);
        assert_eq!(EventType::from_raw(53), EventType::ThreadTraceMarker);
        assert_eq!(EventType::from_raw(5), EventType::Unknown(5));
        assert_eq!(EventWriteControl::from_raw(0x3F).event_type(), EventType::Unknown(63));
    }

    #[test]
    fn malformed_bodies() {
        for (body_len, expected) in [(0, 1), (2, 3), (4, 3)] {
            let words = [0xC000_4600, 0x0000_0407, 0, 0, 0];
            let header = Type3Header::decode(words[0]).unwrap();
            assert_eq!(
                EventWrite::parse(header, &words[1..=body_len]),
                Err(PacketError::BodyLength { opcode: Opcode::EventWrite, expected, found: body_len })
            );
        }
        assert_eq!(
            parse_words(&[0xC002_4600, 0x0000_021E, 0x1234_5674, 0]),
            Err(PacketError::FieldValue { opcode: Opcode::EventWrite, field: "ADDRESS_LO", value: 4 })
        );
        assert!(EventWrite::with_address(EventType::SamplePipelinestat, 2, 0x1001).is_err());
        assert!(matches!(
            EventWrite::new(EventType::Unknown(64), 0),
            Err(PacketError::FieldValue { field: "EVENT_TYPE", value: 64, .. })
        ));
        assert!(matches!(
            EventWrite::new(EventType::CsDone, 16),
            Err(PacketError::FieldValue { field: "EVENT_INDEX", value: 16, .. })
        ));
    }
}
