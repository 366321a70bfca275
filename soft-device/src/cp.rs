//! The PM4 command processor of the soft device (`docs/ARCHITECTURE.md`, "The soft device"): executes one indirect buffer
//! (IB) of one GPU family on the CPU, strictly enough that a wrong lowering fails here rather
//! than on hardware.
//!
//! The IB is read from sim memory and decoded with `pm4-encoding`'s [`Decoder`]. An IB executed
//! again at the same address with as many dwords (a retained body replayed) reuses the packets
//! decoded last time whose dwords are unchanged and decodes only the others (its patched
//! dispatch dimensions); its dwords are still read and compared on every execution, so what runs
//! is always what decoding them gives, and an IB that faulted is decoded whole the next time.
//! A kept `SET_SH_REG` is classified when it is decoded: one that would execute without a fault
//! (not predicated, no `INDEX` or `VMID_SHIFT`, every register accepted) writes its values
//! without being classified again; the register classes are the family's, fixed. Every
//! `DISPATCH_DIRECT` is checked against the register file and its kernel at every execution.
//! Modelled:
//! - `SET_SH_REG` into a register file: the dispatch registers (`COMPUTE_PGM_*`,
//!   `COMPUTE_NUM_THREAD_*`, `COMPUTE_USER_DATA_*`). A register absent on the family, a
//!   queue-owned register (`COMPUTE_TMPRING_SIZE`, `COMPUTE_STATIC_THREAD_MGMT_SE*`,
//!   `docs/ARCHITECTURE.md` "Per-dispatch PM4 shape") or any other SH register is a fault.
//! - `DISPATCH_DIRECT`: resolved and checked against the kernel (see the `cp::dispatch` source module
//!   docs for the dimension policy), queued in the current wait group ([`crate::hazard`]).
//! - `EVENT_WRITE CS_PARTIAL_FLUSH` and end-of-pipe `RELEASE_MEM` (`CACHE_FLUSH_AND_INV_TS_EVENT`,
//!   `BOTTOM_OF_PIPE_TS`, `CS_DONE`): waits; the group runs (in reverse order) and is checked.
//!   `RELEASE_MEM` then writes its data (`DATA_SEL` 1/2 immediate, 3 the GPU clock) to memory
//!   (`DST_SEL` 0/1). Its cache actions are not counted as a consumer acquire.
//! - `ACQUIRE_MEM` (whole range): recorded; its `GCR_CNTL` decides visibility.
//! - `WAIT_REG_MEM` on memory: evaluated once; false is [`CpFaultKind::WaitNeverSatisfied`]
//!   (pending dispatches have not run at that point: the poll does not wait for them).
//! - `WRITE_DATA` to memory (`DST_SEL` 5 or 2), `COPY_DATA` GPU-clock timestamp to memory, `NOP`.
//!   The GPU clock is the caller's [`GpuClock`], read when the packet executes: a timestamp after
//!   a dispatch that no wait has run yet is taken before that dispatch runs.
//!
//! Everything else (other opcodes, `INDIRECT_BUFFER` chaining or nesting, `SET_UCONFIG_REG`,
//! type-0/type-2 packets, predication) is a fault. Not checked: a `WRITE_DATA`/`COPY_DATA` store
//! racing a dispatch of the still-pending group.

mod dispatch;
mod fault;

use kernel_refs::cpu::KernelError;
use pm4_encoding::header::{Header, Type3Header};
use pm4_encoding::packet::copy_data::{DstSel as CopyDst, SrcSel};
use pm4_encoding::packet::event_write::EventType;
use pm4_encoding::packet::release_mem::{DataSel, DstSel as ReleaseDst, IntSel};
use pm4_encoding::packet::wait_reg_mem::{Function, MemSpace, Operation};
use pm4_encoding::packet::write_data::DstSel as WriteDst;
use pm4_encoding::packet::{AcquireMem, CopyData, GcrCntl, ReleaseMem, WaitRegMem, WriteData};
use pm4_encoding::{Decoded, Decoder, Family, Opcode, Packet};

use crate::clock::GpuClock;
use crate::exec::{self, ExecError, ExecutedDispatch};
use crate::hazard::{self, Visibility};
use crate::loader::SoftKernels;
use crate::memory::SimMemory;
use hal::LaunchError;

pub use dispatch::dims_in_work_items;
use dispatch::{DecodedDispatch, ShRegisters};
pub use fault::{CpFault, CpFaultKind};

/// One `ACQUIRE_MEM` the IB executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acquire {
    /// IB dword offset of the packet.
    pub offset_dwords: usize,
    /// Its cache actions.
    pub gcr_cntl: GcrCntl,
    /// Whether it sets every bit of [`hazard::consumer_acquire_gcr`].
    pub invalidates_consumer_caches: bool,
}

/// What one IB did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IbReport {
    /// Every dispatch, in IB order.
    pub dispatches: Vec<ExecutedDispatch>,
    /// IB dword offset of each dispatch's `DISPATCH_DIRECT`, parallel to `dispatches`.
    pub dispatch_offsets: Vec<usize>,
    /// IB dword offsets of the dispatches in the order they were executed.
    pub execution_order: Vec<usize>,
    /// Packets decoded and executed.
    pub packets: usize,
    /// Waits (`CS_PARTIAL_FLUSH`, end-of-pipe `RELEASE_MEM`).
    pub waits: usize,
    /// Every `ACQUIRE_MEM`, in IB order.
    pub acquires: Vec<Acquire>,
}

impl IbReport {
    /// An empty report with room for `dispatches` dispatches.
    fn with_capacity(dispatches: usize) -> Self {
        Self {
            dispatches: Vec::with_capacity(dispatches),
            dispatch_offsets: Vec::with_capacity(dispatches),
            execution_order: Vec::with_capacity(dispatches),
            ..Self::default()
        }
    }
}

/// A dispatch decoded but not yet executed: it waits for its group's wait.
#[derive(Clone, Copy, Debug)]
struct Pending {
    offset: usize,
    decoded: DecodedDispatch,
}

/// The PM4 command processor of one family: its SH register file persists across IBs, as the
/// hardware's does within a queue.
#[derive(Clone, Debug)]
pub struct CommandProcessor {
    family: Family,
    regs: ShRegisters,
    /// The last IB executed, decoded: a replayed body is decoded once.
    decoded: Option<DecodedIb>,
    /// The dwords of the IB being executed, read into storage kept across IBs.
    scratch: Vec<u32>,
}

/// An IB as last executed: its address, its dwords, and each packet decoded. A later IB at the
/// same address with as many dwords reuses every packet whose dwords are unchanged and decodes
/// only the others (a replay's patched dispatch dimensions); one whose changed packets no longer
/// decode to a packet of the same length is decoded whole again.
#[derive(Clone, Debug)]
struct DecodedIb {
    va: u64,
    words: Vec<u32>,
    packets: Vec<DecodedPacket>,
    /// How many of the packets are `DISPATCH_DIRECT`.
    dispatches: usize,
}

/// One packet of a [`DecodedIb`]: where it sits and what it is.
#[derive(Clone, Debug)]
struct DecodedPacket {
    offset: usize,
    len: usize,
    header: Type3Header,
    /// The typed packet where it borrows nothing from the IB; else parsed again from `body` when
    /// it executes (`SET_SH_REG`, `WRITE_DATA`, `NOP`: a bounds check and a copy of the fields).
    typed: Option<Packet<'static>>,
    /// For a `SET_SH_REG` that executes without a fault (not predicated, no `INDEX` or
    /// `VMID_SHIFT`, every register one the register file accepts): its first register's dword.
    /// Its values (`body[1..]`) then go to the register file as they are.
    accepted_sh: Option<u32>,
    body: Box<[u32]>,
}

impl DecodedPacket {
    /// `decoded` (a type-3 packet at `offset` of its IB), kept; `regs` classifies its registers.
    fn keep(decoded: &Decoded<'_>, regs: &ShRegisters) -> Option<Self> {
        let Ok(Header::Type3(header)) = Header::decode(*decoded.words.first()?) else { return None };
        let accepted_sh = match decoded.packet {
            Packet::SetShReg(p)
                if !header.flags().predicate
                    && p.control.index() == 0
                    && p.control.vmid_shift() == 0
                    && regs.accepts(p.first_dword(), p.values.len()) =>
            {
                Some(p.first_dword())
            }
            _ => None,
        };
        let typed = match decoded.packet {
            Packet::DispatchDirect(p) => Some(Packet::DispatchDirect(p)),
            Packet::AcquireMem(p) => Some(Packet::AcquireMem(p)),
            Packet::ReleaseMem(p) => Some(Packet::ReleaseMem(p)),
            Packet::EventWrite(p) => Some(Packet::EventWrite(p)),
            Packet::WaitRegMem(p) => Some(Packet::WaitRegMem(p)),
            Packet::CopyData(p) => Some(Packet::CopyData(p)),
            Packet::SetShReg(_) | Packet::WriteData(_) | Packet::Nop(_) => None,
            // The command processor faults on every other packet: such an IB is not kept.
            _ => return None,
        };
        Some(Self {
            offset: decoded.offset,
            len: decoded.words.len(),
            header,
            typed,
            accepted_sh,
            body: decoded.words.get(1..)?.into(),
        })
    }

    /// The packet, as the decoder gave it.
    fn packet(&self) -> Result<Packet<'_>, CpFault> {
        match self.typed {
            Some(p) => Ok(p),
            None => pm4_encoding::packet::parse(self.header, &self.body).map_err(|source| {
                let e = pm4_encoding::decoder::DecodeError::Packet {
                    offset: self.offset,
                    opcode: self.header.opcode,
                    source,
                };
                CpFaultKind::Decode(e).at(self.offset)
            }),
        }
    }
}

impl CommandProcessor {
    /// Largest IB: `IB_SIZE` is 20 bits of dwords (reference §4 "INDIRECT_BUFFER").
    pub const IB_DWORDS_MAX: u32 = (1 << 20) - 1;
    /// Dispatches one IB may hold, at most.
    pub const DISPATCHES_MAX: usize = 4096;

    /// A command processor of `family` with an empty register file.
    #[must_use]
    pub fn new(family: Family) -> Self {
        Self { family, regs: ShRegisters::new(family), decoded: None, scratch: Vec::new() }
    }

    /// The family.
    #[must_use]
    pub fn family(&self) -> Family {
        self.family
    }

    /// Executes the `size_dwords` dwords at `ib_va`.
    ///
    /// # Errors
    /// [`CpFault`] at the first packet (or dispatch) that faults; earlier dispatches' stores stay
    /// in memory.
    pub fn execute_ib(
        &mut self,
        memory: &mut SimMemory,
        objects: &SoftKernels,
        ib_va: u64,
        size_dwords: u32,
        clock: &mut GpuClock,
    ) -> Result<IbReport, CpFault> {
        let mut words = std::mem::take(&mut self.scratch);
        read_ib(memory, ib_va, size_dwords, &mut words).map_err(|kind| kind.at(0))?;
        // Taken: an IB that faults is not kept.
        let kept = self.decoded.take().and_then(|ib| ib.refreshed(ib_va, &words, &self.regs));
        // A replayed IB reports as many dispatches as it ran last time.
        let dispatches = kept.as_ref().map_or(0, |ib| ib.dispatches);
        let mut run = Run {
            family: self.family,
            regs: &mut self.regs,
            memory,
            objects,
            clock,
            pending: Vec::with_capacity(dispatches),
            done: Vec::with_capacity(dispatches),
            visibility: Visibility::new(self.family),
            report: IbReport::with_capacity(dispatches),
        };
        let decoded = match kept {
            Some(ib) => {
                for p in &ib.packets {
                    run.report.packets += 1;
                    if let Some(first) = p.accepted_sh {
                        // What `Run::packet` does for it, checked when it was kept.
                        run.regs.write_accepted(first, &p.body[1..]);
                        continue;
                    }
                    let words = &ib.words[p.offset..p.offset + p.len];
                    run.packet(&Decoded { offset: p.offset, words, packet: p.packet()? }, Some(p.header))?;
                }
                // The dwords read stay for the next IB.
                self.scratch = words;
                Some(ib)
            }
            None => {
                let mut packets = Some(Vec::new());
                for item in Decoder::new(&words) {
                    let decoded = item.map_err(|e| CpFaultKind::Decode(e).at(e.offset()))?;
                    let header = match Header::decode(decoded.words[0]) {
                        Ok(Header::Type3(h)) => Some(h),
                        _ => None,
                    };
                    run.packet(&decoded, header)?;
                    run.report.packets += 1;
                    packets = packets.and_then(|mut kept: Vec<DecodedPacket>| {
                        kept.push(DecodedPacket::keep(&decoded, run.regs)?);
                        Some(kept)
                    });
                }
                packets.map(|packets| {
                    let dispatches =
                        packets.iter().filter(|p| matches!(p.typed, Some(Packet::DispatchDirect(_)))).count();
                    DecodedIb { va: ib_va, words, packets, dispatches }
                })
            }
        };
        // The enclosing AQL packet completes only when every dispatch has finished.
        run.flush()?;
        self.decoded = decoded;
        Ok(run.report)
    }
}

impl DecodedIb {
    /// This IB brought up to `words` at `va`: the packets whose dwords changed decoded again;
    /// `None` when `words` is another IB (another address or length) or a changed packet no
    /// longer decodes to one kept packet of its length.
    fn refreshed(mut self, va: u64, words: &[u32], regs: &ShRegisters) -> Option<Self> {
        if self.va != va || self.words.len() != words.len() {
            return None;
        }
        for p in &mut self.packets {
            let (now, then) = (&words[p.offset..p.offset + p.len], &mut self.words[p.offset..p.offset + p.len]);
            if now == then {
                continue;
            }
            let decoded = Decoder::new(now).next()?.ok()?;
            if decoded.words.len() != p.len {
                return None;
            }
            let offset = p.offset;
            *p = DecodedPacket::keep(&Decoded { offset, ..decoded }, regs)?;
            then.copy_from_slice(now);
        }
        Some(self)
    }
}

/// The IB's dwords into `words`, checked for alignment, size and mapping.
fn read_ib(memory: &SimMemory, ib_va: u64, size_dwords: u32, words: &mut Vec<u32>) -> Result<(), CpFaultKind> {
    if !ib_va.is_multiple_of(4) {
        return Err(CpFaultKind::IbMisaligned { va: ib_va });
    }
    if size_dwords == 0 || size_dwords > CommandProcessor::IB_DWORDS_MAX {
        return Err(CpFaultKind::IbSize { size_dwords, limit: CommandProcessor::IB_DWORDS_MAX });
    }
    // CAST: at most 2^20 dwords, lossless.
    words.resize(usize::try_from(size_dwords).unwrap_or(0), 0);
    memory.read(ib_va, zerocopy::IntoBytes::as_mut_bytes(&mut words[..])).map_err(CpFaultKind::IbUnmapped)?;
    // The bytes are little-endian dwords.
    for word in words.iter_mut() {
        *word = u32::from_le(*word);
    }
    Ok(())
}

/// The state of one IB execution.
struct Run<'a> {
    family: Family,
    regs: &'a mut ShRegisters,
    memory: &'a mut SimMemory,
    objects: &'a SoftKernels,
    clock: &'a mut GpuClock,
    pending: Vec<Pending>,
    /// The group being flushed, executed: storage kept across the IB's groups.
    done: Vec<(usize, ExecutedDispatch)>,
    visibility: Visibility,
    report: IbReport,
}

impl Run<'_> {
    /// Executes one packet; `header` is its type-3 header (`None` for other packet types).
    fn packet(&mut self, decoded: &Decoded<'_>, header: Option<Type3Header>) -> Result<(), CpFault> {
        let offset = decoded.offset;
        let at = |kind: CpFaultKind| kind.at(offset);
        if let Some(h) = header
            && h.flags().predicate
        {
            return Err(at(CpFaultKind::Predicated { opcode: h.opcode }));
        }
        match decoded.packet {
            Packet::Nop(_) => Ok(()),
            Packet::SetShReg(p) => {
                if p.control.index() != 0 || p.control.vmid_shift() != 0 {
                    return Err(at(CpFaultKind::unmodelled("SET_SH_REG with INDEX or VMID_SHIFT")));
                }
                p.registers().try_for_each(|(dword, value)| self.regs.write(dword, value)).map_err(at)
            }
            Packet::DispatchDirect(p) => {
                if self.report.dispatch_offsets.len() + self.pending.len() >= CommandProcessor::DISPATCHES_MAX {
                    return Err(at(CpFaultKind::TooManyDispatches { limit: CommandProcessor::DISPATCHES_MAX }));
                }
                let decoded = dispatch::decode(self.regs, self.memory, self.objects, &p).map_err(at)?;
                self.pending.push(Pending { offset, decoded });
                Ok(())
            }
            Packet::EventWrite(p) => {
                let (event, index) = (p.control.event_type(), p.control.event_index());
                // Reference §4 "EVENT_WRITE": CS_PARTIAL_FLUSH is event 7 with EVENT_INDEX 4.
                if event != EventType::CsPartialFlush || index != 4 || p.address.is_some() {
                    return Err(at(CpFaultKind::UnmodelledEvent {
                        opcode: Opcode::EventWrite,
                        event_type: event.raw(),
                        event_index: index,
                    }));
                }
                self.report.waits += 1;
                self.flush()
            }
            Packet::AcquireMem(p) => self.acquire(offset, &p).map_err(at),
            Packet::ReleaseMem(p) => self.release(offset, &p),
            Packet::WaitRegMem(p) => self.wait_reg_mem(&p).map_err(at),
            Packet::WriteData(p) => self.write_data(&p).map_err(at),
            Packet::CopyData(p) => self.copy_data(&p).map_err(at),
            Packet::IndirectBuffer(_) => Err(at(CpFaultKind::unmodelled("INDIRECT_BUFFER (nested or chained IBs)"))),
            Packet::SetUconfigReg(_) => Err(at(CpFaultKind::unmodelled("SET_UCONFIG_REG"))),
            Packet::DispatchIndirect(_) => Err(at(CpFaultKind::unmodelled("DISPATCH_INDIRECT"))),
            Packet::Other { header, .. } => Err(at(CpFaultKind::unmodelled(format!("opcode {}", header.opcode)))),
            Packet::Type0 { base_reg, .. } => {
                Err(at(CpFaultKind::unmodelled(format!("type-0 packet to register {base_reg:#x}"))))
            }
            Packet::Type2 => Err(at(CpFaultKind::unmodelled("type-2 filler packet"))),
            _ => Err(at(CpFaultKind::unmodelled("this packet"))),
        }
    }

    /// Runs the pending group in reverse order, then checks it for conflicts and stale reads.
    fn flush(&mut self) -> Result<(), CpFault> {
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        for p in self.pending.iter().rev() {
            self.report.execution_order.push(p.offset);
            let executed = exec::execute_checked(self.memory, self.objects, &p.decoded.dispatch)
                .map_err(|e| self.exec_fault(p, e).at(p.offset))?;
            done.push((p.offset, executed));
        }
        self.pending.clear();
        // In IB order.
        done.reverse();
        if let Some(conflict) = hazard::conflict_in_group(&done) {
            let offset = conflict.second_offset;
            return Err(CpFaultKind::Hazard(conflict).at(offset));
        }
        for (offset, e) in &done {
            self.visibility
                .check_reads(*offset, e, &self.report.dispatches)
                .map_err(|s| CpFaultKind::Visibility(s).at(*offset))?;
        }
        for (offset, e) in done.drain(..) {
            self.visibility.record_writes(offset, &e, self.report.dispatches.len());
            self.report.dispatch_offsets.push(offset);
            self.report.dispatches.push(e);
        }
        self.done = done;
        Ok(())
    }

    /// The fault for an executor error of pending dispatch `p`.
    fn exec_fault(&self, p: &Pending, e: ExecError) -> CpFaultKind {
        match e {
            ExecError::HiddenArg(m) => CpFaultKind::HiddenArg(m),
            ExecError::Launch(e) if dynamic_lds_too_small(&e).is_some() => {
                // PANIC: the guard just matched.
                let (kernel, required) = dynamic_lds_too_small(&e).expect("matched above");
                let static_bytes = self
                    .objects
                    .by_kd(p.decoded.dispatch.kernel_object)
                    .map_or(0, |s| s.loaded.group_segment_fixed_size);
                CpFaultKind::LdsTooSmall {
                    kernel,
                    lds_size: p.decoded.lds_size,
                    granule_bytes: pm4_encoding::regs::lds_encode_granule_bytes(self.family),
                    static_bytes,
                    dynamic_bytes: required,
                }
            }
            ExecError::Launch(e) => CpFaultKind::Launch(e),
        }
    }

    fn acquire(&mut self, offset: usize, p: &AcquireMem) -> Result<(), CpFaultKind> {
        // Reference §4 "ACQUIRE_MEM": whole range = size 0xFFFFFFFF, base 0; POLL_INTERVAL bit 31
        // is the GFX11+ PWS form (graphics queues only).
        let whole = p.coher_size == u32::MAX && p.coher_size_hi != 0 && p.coher_base_lo == 0 && p.coher_base_hi == 0;
        if !whole || p.coher_cntl & 0x7FFF_FFFF != 0 || p.poll_interval >> 31 != 0 {
            return Err(CpFaultKind::unmodelled("ACQUIRE_MEM on a range, with COHER_CNTL, or in PWS form"));
        }
        let invalidates = self.visibility.acquire(p.gcr_cntl);
        self.report.acquires.push(Acquire {
            offset_dwords: offset,
            gcr_cntl: p.gcr_cntl,
            invalidates_consumer_caches: invalidates,
        });
        Ok(())
    }

    fn release(&mut self, offset: usize, p: &ReleaseMem) -> Result<(), CpFault> {
        let at = |kind: CpFaultKind| kind.at(offset);
        let event = p.event_cntl.event_type();
        let end_of_pipe =
            matches!(event, EventType::CacheFlushAndInvTsEvent | EventType::BottomOfPipeTs | EventType::CsDone);
        if !end_of_pipe {
            return Err(at(CpFaultKind::UnmodelledEvent {
                opcode: Opcode::ReleaseMem,
                event_type: event.raw(),
                event_index: p.event_cntl.event_index(),
            }));
        }
        let int_sel = p.data_cntl.int_sel();
        if !matches!(int_sel, IntSel::NoInterrupt | IntSel::SendDataAfterWriteConfirm) {
            return Err(at(CpFaultKind::Interrupt { int_sel: int_sel.raw() }));
        }
        let dst = p.data_cntl.dst_sel();
        if !matches!(dst, ReleaseDst::MemoryController | ReleaseDst::TcL2) {
            return Err(at(CpFaultKind::unmodelled(format!("RELEASE_MEM DST_SEL {}", dst.raw()))));
        }
        // End of pipe: every earlier dispatch has finished before the data is written.
        self.report.waits += 1;
        self.flush()?;
        let data: Option<Vec<u8>> = match p.data_cntl.data_sel() {
            DataSel::NoneDiscard => None,
            // CAST: DATA_SEL 1 writes the low 32 bits of DATA.
            #[allow(clippy::cast_possible_truncation)]
            DataSel::Data32Low => Some((p.data as u32).to_le_bytes().to_vec()),
            DataSel::Data64 => Some(p.data.to_le_bytes().to_vec()),
            DataSel::GpuClockCounter64 => Some(self.tick().to_le_bytes().to_vec()),
            other => return Err(at(CpFaultKind::unmodelled(format!("RELEASE_MEM DATA_SEL {}", other.raw())))),
        };
        if let Some(bytes) = data {
            self.store(Opcode::ReleaseMem, p.address, &bytes).map_err(at)?;
        }
        Ok(())
    }

    fn wait_reg_mem(&mut self, p: &WaitRegMem) -> Result<(), CpFaultKind> {
        let c = p.control;
        if c.mem_space() != MemSpace::Memory || c.operation() != Operation::WaitRegMem || c.engine() != 0 {
            return Err(CpFaultKind::unmodelled("WAIT_REG_MEM other than a memory poll on the ME"));
        }
        let address = p.poll_address();
        let mut bytes = [0u8; 4];
        self.memory
            .read(address, &mut bytes)
            .map_err(|fault| CpFaultKind::Memory { opcode: Opcode::WaitRegMem, fault })?;
        let value = u32::from_le_bytes(bytes);
        let (v, r) = (value & p.mask, p.reference);
        let function = c.function();
        let holds = match function {
            Function::Always => true,
            Function::Less => v < r,
            Function::LessEqual => v <= r,
            Function::Equal => v == r,
            Function::NotEqual => v != r,
            Function::GreaterEqual => v >= r,
            Function::Greater => v > r,
            Function::Unknown(raw) => {
                return Err(CpFaultKind::unmodelled(format!("WAIT_REG_MEM FUNCTION {raw}")));
            }
        };
        if holds {
            return Ok(());
        }
        let function = function.name().unwrap_or("?");
        Err(CpFaultKind::WaitNeverSatisfied { address, value, mask: p.mask, function, reference: r })
    }

    fn write_data(&mut self, p: &WriteData<'_>) -> Result<(), CpFaultKind> {
        let c = p.control;
        if !matches!(c.dst_sel(), WriteDst::Memory | WriteDst::TcL2) || c.engine_sel() != 0 {
            return Err(CpFaultKind::unmodelled(format!(
                "WRITE_DATA with DST_SEL {} / ENGINE_SEL {}",
                c.dst_sel().raw(),
                c.engine_sel()
            )));
        }
        if c.wr_one_addr() != 0 {
            // Every dword goes to the same address: the last one stays.
            let last = p.data.last().copied().unwrap_or(0);
            return self.store(Opcode::WriteData, p.dst_addr, &last.to_le_bytes());
        }
        let bytes: Vec<u8> = p.data.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.store(Opcode::WriteData, p.dst_addr, &bytes)
    }

    fn copy_data(&mut self, p: &CopyData) -> Result<(), CpFaultKind> {
        let c = p.control;
        if c.src_sel() != SrcSel::GpuClockCount || c.dst_sel() != CopyDst::Memory || c.engine_sel() != 0 {
            return Err(CpFaultKind::unmodelled(format!(
                "COPY_DATA with SRC_SEL {} / DST_SEL {} / ENGINE_SEL {} (only GPU-clock timestamps to memory)",
                c.src_sel().raw(),
                c.dst_sel().raw(),
                c.engine_sel()
            )));
        }
        let now = self.tick().to_le_bytes();
        let bytes = if c.count_sel() != 0 { &now[..] } else { &now[..4] };
        self.store(Opcode::CopyData, p.dst, bytes)
    }

    /// The GPU clock at this packet's execution ([`GpuClock`]: host-monotonic ticks).
    fn tick(&mut self) -> u64 {
        self.clock.read()
    }

    fn store(&mut self, opcode: Opcode, address: u64, bytes: &[u8]) -> Result<(), CpFaultKind> {
        self.memory.write(address, bytes).map_err(|fault| CpFaultKind::Memory { opcode, fault })
    }
}

/// The kernel and the LDS bytes it needed, when `e` is a CPU reference's dynamic-LDS refusal.
fn dynamic_lds_too_small(e: &LaunchError) -> Option<(String, u32)> {
    match (e, e.device_fault::<crate::SoftFault>()) {
        (
            LaunchError::Device { kernel, .. },
            Some(crate::SoftFault::Kernel(KernelError::DynamicLdsTooSmall { required, .. })),
        ) => Some((kernel.clone(), *required)),
        _ => None,
    }
}
