//! The attribution-only dispatch profiler's command body: a lowered tape with GPU-clock
//! timestamps between its dispatches (`redline profile`; README, "`redline profile`").
//!
//! [`instrument`] copies a lowered IB ([`LoweredIb`]) packet by packet and inserts a `COPY_DATA`
//! timestamp (the GPU clock, 64 bits, to memory, with write confirmation: reference §4
//! "COPY_DATA", control `0x00110509`, [`CopyData::timestamp`]) at these points, one 8-byte slot
//! each, in this order:
//!
//! - slot 0: the first packet of the body, before the entry acquire;
//! - slot `k + 1`: right after launch `k`'s `DISPATCH_DIRECT`; with [`Instrument::serialize`],
//!   after an `EVENT_WRITE CS_PARTIAL_FLUSH` there, so that the timestamp is taken once the
//!   dispatch has finished;
//! - slot `n + 1`: the last packet, after the terminal wait and acquire.
//!
//! Span `k` is slot `k + 1` minus slot `k`: launch `k`'s dispatch together with every packet
//! between the previous timestamp and it, the boundary packets before it (the wait and the
//! consumer acquire where the tape has a boundary, the entry acquire before the first) and its
//! register writes. Without `serialize`, a timestamp is taken when the command processor reaches
//! it, which a dispatch that no wait has finished yet does not delay: the span then holds what
//! the processor did, not what the dispatch took. Either way this is attribution, not kernel
//! timing, and the body is not the certified one: it has more dwords and another sequence hash
//! ([`InstrumentedIb::sequence_hash`]), and with `serialize` no two dispatches overlap.
//!
//! Everything else is the certified body's words unchanged, in order ([`InstrumentedIb::strip`]
//! gives them back); the patch sites are moved by the dwords inserted before them.
//!
//! [`plan`] prepares such a body on a device and runs it per token.

use pm4_encoding::packet::{CopyData, EventWrite, Packet, PacketError};
use pm4_encoding::{Decoder, Emit as _, Family};
use sha2::{Digest as _, Sha256};

use crate::lower::{LoweredIb, PatchSite, PatchTarget};

pub mod plan;

/// The domain tag that starts every instrumented sequence hash ([`InstrumentedIb::sequence_hash`]).
pub const SEQUENCE_DOMAIN: &[u8; 28] = b"redline.profile.sequence.v1\0";

/// Bytes of one timestamp slot: the 64-bit GPU clock.
pub const SLOT_BYTES: u64 = 8;

/// How the body is instrumented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Instrument {
    /// A wait (`EVENT_WRITE CS_PARTIAL_FLUSH`) before every timestamp after a dispatch.
    pub serialize: bool,
}

/// Where a timestamp is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Point {
    /// The body's first packet.
    Entry,
    /// Right after launch `k`'s dispatch (and the added wait, when serialized).
    AfterDispatch(usize),
    /// The body's last packet, after the terminal wait and acquire.
    Exit,
}

/// A lowered IB with its timestamps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentedIb {
    /// The family.
    pub family: Family,
    /// The body.
    pub words: Vec<u32>,
    /// Dword offset of each launch's `DISPATCH_DIRECT`, in launch order.
    pub dispatch_offsets: Vec<usize>,
    /// Dword offset and point of every timestamp packet, in slot order.
    pub timestamps: Vec<(usize, Point)>,
    /// Dword offset of every wait [`Instrument::serialize`] added.
    pub added_waits: Vec<usize>,
    /// The certified body's patch sites, moved to the instrumented body's dwords.
    pub patch_sites: Vec<PatchSite>,
    /// The instrumented sequence hash (see [`InstrumentedIb::sequence_hash`]).
    sequence_hash: [u8; 32],
}

/// Why a body could not be instrumented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstrumentError {
    /// The lowered IB does not decode (a lowering always does).
    #[error("the lowered body does not decode at dword {offset}")]
    Decode {
        /// Where.
        offset: usize,
    },
    /// The timestamp slots' address is not 8-byte aligned.
    #[error(transparent)]
    Packet(#[from] PacketError),
}

impl InstrumentedIb {
    /// Timestamp slots: the launches + 2.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.timestamps.len()
    }

    /// The instrumented sequence hash: SHA-256 over [`SEQUENCE_DOMAIN`], the certified tape's
    /// sequence hash (`tape_core::hash`, 32 bytes), the launches as `u32`, whether waits were
    /// added (one byte, 0 or 1), the timestamps as `u32`, and for each in slot order its point
    /// as `u32` (0 the entry, `k + 1` after launch `k`, launches + 1 the exit); integers
    /// little-endian. Like the tape's, it depends on no address, so it is the same in every
    /// process; it differs from the certified tape's by construction.
    #[must_use]
    pub fn sequence_hash(&self) -> [u8; 32] {
        self.sequence_hash
    }

    /// The body without the inserted packets: the certified body's words (a test of
    /// [`instrument`] and of anyone who doubts it).
    #[must_use]
    pub fn strip(&self) -> Vec<u32> {
        let mut inserted: Vec<(usize, usize)> = self
            .timestamps
            .iter()
            .map(|&(offset, _)| (offset, CopyData::BUFFER_LEN))
            .chain(self.added_waits.iter().map(|&offset| (offset, EventWrite::cs_partial_flush().buffer_len())))
            .collect();
        inserted.sort_unstable();
        let mut out = Vec::with_capacity(self.words.len());
        let mut at = 0;
        for (offset, len) in inserted {
            out.extend_from_slice(&self.words[at..offset]);
            at = offset + len;
        }
        out.extend_from_slice(&self.words[at..]);
        out
    }
}

/// Instruments `lowered` (see the module documentation): timestamp slot `i` is the 8 bytes at
/// `timestamps_va + 8 * i`; `tape_sequence_hash` is the certified tape's.
///
/// # Errors
/// [`InstrumentError`]: a body that does not decode, or a `timestamps_va` that is not 8-byte
/// aligned.
pub fn instrument(
    lowered: &LoweredIb,
    tape_sequence_hash: &[u8; 32],
    timestamps_va: u64,
    options: Instrument,
) -> Result<InstrumentedIb, InstrumentError> {
    let launches = lowered.dispatch_offsets.len();
    let slot_va = |slot: usize| timestamps_va + SLOT_BYTES * u64::try_from(slot).unwrap_or(u64::MAX);
    let wait = EventWrite::cs_partial_flush();
    let mut words =
        Vec::with_capacity(lowered.words.len() + (launches + 2) * (CopyData::BUFFER_LEN + wait.buffer_len()));
    let mut out = Instrumented { words: &mut words, timestamps: Vec::new(), added_waits: Vec::new() };
    out.timestamp(CopyData::timestamp(slot_va(0))?, Point::Entry);
    // Old dword offset of each dispatch -> the dwords inserted before it.
    let mut shifts = Vec::with_capacity(launches);
    let mut dispatch_offsets = Vec::with_capacity(launches);
    for item in Decoder::new(&lowered.words) {
        let decoded = item.map_err(|e| InstrumentError::Decode { offset: e.offset() })?;
        let new_offset = out.words.len();
        out.words.extend_from_slice(decoded.words);
        if matches!(decoded.packet, Packet::DispatchDirect(_)) {
            let k = dispatch_offsets.len();
            shifts.push(new_offset - decoded.offset);
            dispatch_offsets.push(new_offset);
            if options.serialize {
                out.added_waits.push(out.words.len());
                out.emit(&wait);
            }
            out.timestamp(CopyData::timestamp(slot_va(k + 1))?, Point::AfterDispatch(k));
        }
    }
    out.timestamp(CopyData::timestamp(slot_va(launches + 1))?, Point::Exit);
    let Instrumented { timestamps, added_waits, .. } = out;
    // INVARIANT: the lowering emits exactly one DISPATCH_DIRECT per launch.
    assert_eq!(dispatch_offsets.len(), launches, "one DISPATCH_DIRECT per launch");
    let patch_sites = lowered
        .patch_sites
        .iter()
        .map(|site| {
            let target = match site.target {
                PatchTarget::DispatchDim { ib_dword, unit } => {
                    PatchTarget::DispatchDim { ib_dword: ib_dword + shifts[site.launch], unit }
                }
                kernarg @ PatchTarget::KernargU32 { .. } => kernarg,
            };
            PatchSite { target, ..*site }
        })
        .collect();
    let sequence_hash = sequence_hash(tape_sequence_hash, launches, options, &timestamps);
    Ok(InstrumentedIb {
        family: lowered.family,
        words,
        dispatch_offsets,
        timestamps,
        added_waits,
        patch_sites,
        sequence_hash,
    })
}

/// The body being written and what was inserted into it.
struct Instrumented<'a> {
    words: &'a mut Vec<u32>,
    timestamps: Vec<(usize, Point)>,
    added_waits: Vec<usize>,
}

impl Instrumented<'_> {
    fn emit(&mut self, packet: &dyn pm4_encoding::Emit) {
        let at = self.words.len();
        self.words.resize(at + packet.buffer_len(), 0);
        packet.emit(&mut self.words[at..]);
    }

    fn timestamp(&mut self, packet: CopyData, point: Point) {
        self.timestamps.push((self.words.len(), point));
        self.emit(&packet);
    }
}

fn sequence_hash(tape: &[u8; 32], launches: usize, options: Instrument, timestamps: &[(usize, Point)]) -> [u8; 32] {
    let u32_of = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    let mut h = Sha256::new();
    h.update(SEQUENCE_DOMAIN);
    h.update(tape);
    h.update(u32_of(launches));
    h.update([u8::from(options.serialize)]);
    h.update(u32_of(timestamps.len()));
    for &(_, point) in timestamps {
        let code = match point {
            Point::Entry => 0,
            Point::AfterDispatch(k) => k + 1,
            Point::Exit => launches + 1,
        };
        h.update(u32_of(code));
    }
    h.finalize().into()
}
