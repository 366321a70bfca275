//! Prepared plans: a recorded [`Tape`] made ready on a device once, then replayed every token
//! with one AQL vendor PM4-IB packet (`docs/ARCHITECTURE.md`, "Data flow of one token" and "The
//! replay controller"). Generic over the HAL's [`Device`]: the same plan runs on every backend.
//!
//! [`prepare`] first checks, before it allocates anything, that every launch's kernel can be
//! replayed from a retained body (`kernarg_abi::verdict` against its code object's target:
//! [`PrepareError::UnsupportedKernel`] with the verdict's reasons). It then copies the tape's kernarg blobs into one retained, host-visible kernarg allocation,
//! lowers the tape into a PM4 IB with those kernarg addresses ([`lower_pm4`]), checks it with
//! [`verify`] before anything can run it, writes it into IB memory, creates the plan's own AQL
//! queue and completion signal, and builds the one 64-byte [`AmdPm4IbPacket`] that calls the IB.
//! Every [`PreparedPlan::replay`] then waits for the ordinary path ([`Device::finish`]), and runs
//! the host half of a token ([`PreparedPlan::publish_token`]): the bindings' values for the
//! position ([`crate::lower::site_value`]) stored at their sites ([`Device::store_u32`]: kernarg words, or the
//! IB's `DIM` dwords), the constant packet written into its ring slot and the doorbell rung. The
//! device runs the token on its own; the host waits for the completion signal with a bounded
//! timeout and sets it back to 1 for the next token ([`PreparedPlan::complete_token`]). [`prepare_with`] makes the
//! same plan for the per-dispatch AQL transport.
//!
//! # Stale plans
//! A plan holds device addresses: its lifetime is that of the allocations it points into. A plan
//! records the device's [`hal::Lifetime`] when it was prepared and every allocation it points into
//! (the tape's pointer arguments, its kernargs, its IB), and refuses to replay in another epoch
//! ([`ReplayError::StalePlan`]) or once one of those allocations was freed
//! ([`ReplayError::AllocationGone`]), without touching the device. The allocation check runs only
//! when the device's free count moved, so a steady-state replay costs one comparison for it.
//!
//! # Failures
//! A queue fault, a wait timeout or a failed device store poisons the plan: the replay returns
//! the typed error, the plan does not retry, and later replays return [`ReplayError::Poisoned`]
//! (the controller falls back to ordinary launches).

use std::time::Duration;

use aql_packets::{AmdPm4IbPacket, FenceScope, PACKET_SIZE, RingSize};
use serde::{Deserialize, Serialize};
use tape_core::AllocationId;
use tape_core::binding::{BindingKind, DimUnit};
use tape_core::tape::{Tape, TapeIdentity};

use hal::{
    Device, DeviceAllocation, FreeError, KernelTable, QueueError, QueueHandle, SignalError, SignalHandle, Submission,
};

use crate::lower::{
    PatchSite, PatchTarget, binding_value, lower_aql, lower_pm4, site_address, slot_by_artifact, verify,
};

mod error;
mod token;

pub use error::{PrepareError, ReplayError};
use token::{Hot, Sites};

/// How a retained token reaches the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// One AQL vendor PM4-IB packet that calls the lowered PM4 IB.
    Pm4,
    /// One AQL kernel-dispatch packet per launch ([`lower_aql`]).
    Aql,
}

impl Transport {
    /// `pm4` or `aql`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Pm4 => "pm4",
            Transport::Aql => "aql",
        }
    }
}

/// How the retained route submits one token of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SubmissionIdentity {
    /// The transport.
    pub transport: Transport,
    /// Kernel dispatches per token (the tape's launches).
    pub dispatches: usize,
    /// AQL packets published per token: 1 for PM4, one per launch for AQL.
    pub packets_per_token: u32,
    /// The plan's queue.
    pub queue: QueueHandle,
    /// Queues the plan submits to: 1.
    pub queues: u32,
    /// Wait-free segments: boundaries + 1.
    pub phases: usize,
    /// Size of the IB (0 for AQL).
    pub pm4_dwords: usize,
}

/// A grid binding of the AQL transport: the packet's grid on `axis` is the binding's value in
/// `unit`, work-items (an AQL grid size counts work-items on every family).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct AqlGridSite {
    binding: usize,
    packet: usize,
    axis: u8,
    kind: BindingKind,
    unit: DimUnit,
}

/// What one replay did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReplayOutcome {
    /// The position the bindings were patched for.
    pub position: u32,
    /// AQL packets published: 1 for PM4, one per launch for AQL.
    pub packets: u32,
    /// The packets the token's doorbell released (`packets` of them).
    pub submission: Submission,
    /// The completion signal's value after the wait: 0.
    pub signal_value: i64,
}

/// Why [`PreparedPlan::release`] did not free everything.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The queue could not be destroyed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The signal could not be destroyed.
    #[error(transparent)]
    Signal(#[from] SignalError),
    /// The IB or the kernargs could not be freed.
    #[error(transparent)]
    Free(#[from] FreeError),
}

/// A tape prepared on a device: retained kernargs, a verified IB, a queue, a signal and the one
/// packet that runs it. Made by [`prepare`].
///
/// In C order: what the host half of a token reads of the plan (`Hot`) first, on its own
/// cache lines.
#[derive(Debug)]
#[repr(C)]
pub struct PreparedPlan {
    hot: Hot,
    /// Allocations the plan points into, each with a VA inside it: the tape's pointer targets,
    /// the retained kernargs and the IB.
    live: Vec<(AllocationId, u64)>,
    kernargs: DeviceAllocation,
    kernarg_vas: Vec<u64>,
    /// The IB (PM4) or `None` (AQL).
    ib: Option<DeviceAllocation>,
    identity: SubmissionIdentity,
    tape: TapeIdentity,
}

/// Device objects made so far by [`prepare`], released again when it fails.
#[derive(Default)]
struct Held {
    kernargs: Option<DeviceAllocation>,
    ib: Option<DeviceAllocation>,
    queue: Option<QueueHandle>,
    signal: Option<SignalHandle>,
}

impl Held {
    /// Best effort: `prepare` is already failing with the error that matters.
    fn release<D: Device + ?Sized>(self, device: &mut D) {
        if let Some(queue) = self.queue {
            let _ = device.destroy_queue(queue);
        }
        if let Some(signal) = self.signal {
            let _ = device.destroy_signal(signal);
        }
        if let Some(ib) = self.ib {
            let _ = device.free(ib);
        }
        if let Some(kernargs) = self.kernargs {
            let _ = device.free(kernargs);
        }
    }
}

/// Prepares `tape` on `device` (see the module documentation). The tape's pointer arguments
/// must point into live allocations of `device` with the identities the tape recorded, and
/// every launch's kernel must be loaded on it.
///
/// # Errors
/// [`PrepareError`]; whatever was created on the device by then is released.
pub fn prepare<D: Device + ?Sized>(device: &mut D, tape: &Tape) -> Result<PreparedPlan, PrepareError> {
    prepare_with(device, tape, Transport::Pm4)
}

/// [`prepare`] for `transport`: [`Transport::Aql`] retains the kernargs the same way and
/// publishes one kernel-dispatch packet per launch ([`lower_aql`]) every token, with grid
/// bindings patched into the packets' grid sizes.
///
/// # Errors
/// As [`prepare`].
pub fn prepare_with<D: Device + ?Sized>(
    device: &mut D,
    tape: &Tape,
    transport: Transport,
) -> Result<PreparedPlan, PrepareError> {
    let mut held = Held::default();
    match prepare_into(device, tape, transport, &mut held) {
        Ok(plan) => Ok(plan),
        Err(e) => {
            held.release(device);
            Err(e)
        }
    }
}

/// Before anything is allocated: every launch's kernel can be replayed from a retained body
/// (`kernarg_abi::verdict` for its code object's target). A launch whose kernel is not loaded is
/// left to the kernarg placement, which names it. (The same code object loaded twice gives two
/// identical kernels; either serves, as [`slot_by_artifact`] takes the first.)
fn check_kernels(kernels: &KernelTable, tape: &Tape) -> Result<(), PrepareError> {
    let lookup = slot_by_artifact(kernels);
    for (launch, record) in tape.launches().iter().enumerate() {
        let symbol = &record.artifact.symbol;
        // One name must name one kernel: a code object whose metadata gives two kernels the
        // name (an alias of two descriptors) leaves the launch's kernel undecided. The same
        // bytes loaded twice are two identical kernels, not an ambiguity.
        for object in kernels.objects().iter().filter(|o| o.sha256 == record.artifact.code_object_sha256) {
            let named: Vec<u64> = object.kernels.iter().filter(|k| k.name == **symbol).map(|k| k.kd_va).collect();
            if named.len() > 1 {
                return Err(PrepareError::AmbiguousKernel { launch, symbol: symbol.to_string(), descriptors: named });
            }
        }
        let Some(slot) = lookup(&record.artifact) else { continue };
        let verdict = kernarg_abi::verdict(&slot.kernel, &slot.target);
        if !verdict.supported {
            let reasons = verdict.reasons.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
            return Err(PrepareError::UnsupportedKernel { launch, symbol: symbol.to_string(), reasons });
        }
        check_kernarg_alignment(slot).map_err(|detail| PrepareError::KernargAlignment {
            launch,
            symbol: symbol.to_string(),
            detail,
        })?;
    }
    Ok(())
}

/// The kernarg alignment the retained blob is placed at (the kernel table's) must be the
/// metadata's, and the metadata's must keep every typed argument aligned (a segment aligned to
/// less than its widest argument would place that argument misaligned). Every backend builds its
/// table from the metadata today (`hal::LoadedKernel::placed`), so the first check guards a
/// backend that would report its runtime's value instead; its unit test reaches it with such a
/// table.
fn check_kernarg_alignment(slot: &hal::KernelSlot) -> Result<(), String> {
    let metadata = &slot.kernel.metadata;
    let (placed, declared) = (slot.loaded.kernarg_segment_align, metadata.kernarg_segment_align);
    if placed != declared {
        return Err(format!(
            "the device reports kernarg alignment {placed}, the metadata's .kernarg_segment_align is {declared}"
        ));
    }
    let layout = slot.kernel.kernarg_layout().map_err(|e| format!("kernarg layout: {e}"))?;
    if let Some(arg) = layout.args().iter().find(|a| a.required_align() > declared) {
        return Err(format!(
            ".kernarg_segment_align {declared} is below the {}-byte alignment of argument {} ({}) at offset {}",
            arg.required_align(),
            arg.index,
            arg.kind,
            arg.offset
        ));
    }
    Ok(())
}

/// The allocations a tape points into, and its kernarg blobs copied into one retained
/// allocation (see [`kernarg_placement`]).
struct Retained {
    live: Vec<(AllocationId, u64)>,
    kernargs: DeviceAllocation,
    kernarg_vas: Vec<u64>,
}

fn retain_kernargs<D: Device + ?Sized>(device: &mut D, tape: &Tape, held: &mut Held) -> Result<Retained, PrepareError> {
    if tape.launches().is_empty() {
        return Err(PrepareError::EmptyTape);
    }
    check_kernels(device.kernels(), tape)?;
    let live = pointer_targets(device, tape)?;
    let (offsets, total) = kernarg_placement(device, tape)?;
    let kernargs = *held.kernargs.insert(device.allocate_kernarg(total)?);
    device.write(kernargs.va, &kernarg_image(tape, &offsets, total))?;
    let kernarg_vas: Vec<u64> = offsets.iter().map(|&o| kernargs.va + o).collect();
    Ok(Retained { live, kernargs, kernarg_vas })
}

/// What a transport's lowering gives the plan.
struct Lowered {
    /// The IB (PM4 only).
    ib: Option<DeviceAllocation>,
    /// Patched and published every token.
    sites: Sites,
    /// Wait-free segments.
    phases: usize,
    pm4_dwords: usize,
}

fn prepare_into<D: Device + ?Sized>(
    device: &mut D,
    tape: &Tape,
    transport: Transport,
    held: &mut Held,
) -> Result<PreparedPlan, PrepareError> {
    let Retained { mut live, kernargs, kernarg_vas } = retain_kernargs(device, tape, held)?;
    // 1: the value a token is published with (`token`'s module documentation).
    let signal = *held.signal.insert(device.create_signal(1)?);
    let lowered = match transport {
        Transport::Pm4 => lower_for_pm4(device, tape, &kernarg_vas, signal, held)?,
        Transport::Aql => lower_for_aql(device, tape, &kernarg_vas, signal)?,
    };
    // The queue drains every token: one slot per packet of a token, at least QUEUE_SLOTS.
    let packets = lowered.sites.packets.len();
    let slots = u32::try_from(packets).unwrap_or(u32::MAX).next_power_of_two().max(PreparedPlan::QUEUE_SLOTS);
    let ring = RingSize::new(slots).map_err(|_| PrepareError::TooManyPackets { packets })?;
    let queue = *held.queue.insert(device.create_queue(ring)?);
    live.push((kernargs.id, kernargs.va));
    if let Some(ib) = lowered.ib {
        live.push((ib.id, ib.va));
    }
    let identity = SubmissionIdentity {
        transport,
        dispatches: tape.launches().len(),
        packets_per_token: u32::try_from(packets).unwrap_or(u32::MAX),
        queue,
        queues: 1,
        phases: lowered.phases,
        pm4_dwords: lowered.pm4_dwords,
    };
    let ib_va = lowered.ib.map_or(0, |ib| ib.va);
    let vas = lowered.sites.patch_sites.iter().map(|site| site_address(ib_va, site)).collect::<Result<Vec<_>, _>>()?;
    *held = Held::default();
    Ok(PreparedPlan {
        hot: Hot::new(lowered.sites, vas, queue, signal, identity.packets_per_token, device.lifetime()),
        live,
        kernargs,
        kernarg_vas,
        ib: lowered.ib,
        identity,
        tape: tape.identity(),
    })
}

/// The PM4 transport: the IB lowered, verified and written to IB memory, and the one PM4-IB
/// packet that calls it.
fn lower_for_pm4<D: Device + ?Sized>(
    device: &mut D,
    tape: &Tape,
    kernarg_vas: &[u64],
    signal: SignalHandle,
    held: &mut Held,
) -> Result<Lowered, PrepareError> {
    let family = device.target().family();
    let lowered = {
        let lookup = slot_by_artifact(device.kernels());
        let lowered = lower_pm4(tape, family, &lookup, kernarg_vas)?;
        verify(&lowered, tape, family, &lookup, kernarg_vas)?;
        lowered
    };
    let dwords = lowered.words.len();
    let ib_dwords = u32::try_from(dwords).map_err(|_| PrepareError::IbTooLarge { dwords })?;
    let ib = *held.ib.insert(device.allocate_ib(ib_dwords)?);
    let ib_bytes: Vec<u8> = lowered.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    device.write(ib.va, &ib_bytes)?;
    let packet = AmdPm4IbPacket::new(ib.va, ib_dwords, FenceScope::System, FenceScope::System, signal.get())
        .map_err(|source| PrepareError::Packet { dwords, source })?;
    Ok(Lowered {
        ib: Some(ib),
        sites: Sites { patch_sites: lowered.patch_sites, grid_sites: Vec::new(), packets: vec![*packet.as_array()] },
        phases: lowered.boundaries.len() + 1,
        pm4_dwords: dwords,
    })
}

/// The AQL transport: one dispatch packet per launch; kernarg bindings patch the retained
/// kernargs, grid bindings the packets.
fn lower_for_aql<D: Device + ?Sized>(
    device: &D,
    tape: &Tape,
    kernarg_vas: &[u64],
    signal: SignalHandle,
) -> Result<Lowered, PrepareError> {
    let packets = {
        let lookup = slot_by_artifact(device.kernels());
        lower_aql(tape, &lookup, kernarg_vas, signal.get())?
    };
    let boundaries = tape_core::deps::boundaries(tape.launches()).map_err(crate::lower::LowerError::from)?;
    let mut patch_sites = Vec::new();
    let mut grid_sites = Vec::new();
    for (binding, b) in tape.bindings().iter().enumerate() {
        let launch = usize::try_from(b.launch).unwrap_or(usize::MAX);
        // INVARIANT: the tape checked every binding's launch index; lower_aql resolved them all.
        let (Some(record), Some(&kernarg_va)) = (tape.launches().get(launch), kernarg_vas.get(launch)) else {
            return Err(PrepareError::EmptyTape);
        };
        match b.kind {
            BindingKind::GridAxis { axis, .. } => grid_sites.push(AqlGridSite {
                binding,
                packet: launch,
                axis,
                kind: b.kind,
                unit: DimUnit::WorkItems {
                    workgroup_work_items: u32::from(record.geometry.workgroup_work_items[usize::from(axis.min(2))]),
                },
            }),
            BindingKind::KernargU32 { offset, .. }
            | BindingKind::KernargGridWorkgroups { offset, .. }
            | BindingKind::KernargU32Clamped { offset, .. } => {
                patch_sites.push(PatchSite {
                    binding,
                    launch,
                    kind: b.kind,
                    target: PatchTarget::KernargU32 { va: kernarg_va + u64::from(offset) },
                });
            }
        }
    }
    Ok(Lowered {
        ib: None,
        sites: Sites { patch_sites, grid_sites, packets },
        phases: boundaries.len() + 1,
        pm4_dwords: 0,
    })
}

/// Every allocation the tape's pointer arguments point into, checked on `device`: the pointer
/// in the blob lies in a live allocation with the recorded identity and offset. One entry per
/// allocation.
fn pointer_targets<D: Device + ?Sized>(device: &D, tape: &Tape) -> Result<Vec<(AllocationId, u64)>, PrepareError> {
    let mut live: Vec<(AllocationId, u64)> = Vec::new();
    for (launch, record) in tape.launches().iter().enumerate() {
        for p in &record.pointers {
            let at = usize::try_from(p.kernarg_offset).unwrap_or(usize::MAX);
            let va = record
                .kernarg
                .get(at..at.saturating_add(8))
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map_or(0, u64::from_le_bytes);
            if device.resolve(va) != Some((p.allocation, p.offset_bytes)) {
                return Err(PrepareError::PointerNotLive {
                    launch,
                    kernarg_offset: p.kernarg_offset,
                    va,
                    allocation: p.allocation,
                });
            }
            if !live.iter().any(|&(id, _)| id == p.allocation) {
                live.push((p.allocation, va));
            }
        }
    }
    Ok(live)
}

/// Offset of each launch's blob in the retained kernarg allocation (aligned to the kernel's
/// kernarg alignment, at least [`PreparedPlan::KERNARG_ALIGN`]), and the allocation's size.
pub fn kernarg_placement<D: Device + ?Sized>(device: &D, tape: &Tape) -> Result<(Vec<u64>, u64), PrepareError> {
    let lookup = slot_by_artifact(device.kernels());
    let mut offsets = Vec::with_capacity(tape.launches().len());
    let mut cursor: u64 = 0;
    for (launch, record) in tape.launches().iter().enumerate() {
        let slot = lookup(&record.artifact)
            .ok_or_else(|| PrepareError::UnknownKernel { launch, symbol: record.artifact.symbol.clone() })?;
        let align = u64::from(slot.loaded.kernarg_segment_align).max(PreparedPlan::KERNARG_ALIGN);
        // INVARIANT: the loader accepts only power-of-two kernarg alignments.
        debug_assert!(align.is_power_of_two());
        let offset = cursor.next_multiple_of(align);
        // CAST: a blob's length fits u64 (usize is at most 64 bits).
        let len = u64::try_from(record.kernarg.len()).unwrap_or(u64::MAX);
        cursor = offset.saturating_add(len.max(1));
        if cursor > PreparedPlan::KERNARG_BYTES_MAX {
            return Err(PrepareError::KernargTooLarge { bytes: cursor, limit: PreparedPlan::KERNARG_BYTES_MAX });
        }
        offsets.push(offset);
    }
    Ok((offsets, cursor))
}

/// The retained kernarg allocation's bytes: every blob at its offset.
pub fn kernarg_image(tape: &Tape, offsets: &[u64], total: u64) -> Vec<u8> {
    // PANIC: `total` is at most KERNARG_BYTES_MAX, and every blob ends inside it.
    let mut image = vec![0u8; usize::try_from(total).expect("kernarg image fits memory")];
    for (record, &offset) in tape.launches().iter().zip(offsets) {
        let at = usize::try_from(offset).expect("offset inside the image");
        image[at..at + record.kernarg.len()].copy_from_slice(&record.kernarg);
    }
    image
}

/// An AQL grid site's grid in work-items at `position`.
fn grid_work_items(site: &AqlGridSite, position: u32) -> Result<u32, ReplayError> {
    Ok(binding_value(site.binding, &site.kind, site.unit, position)?)
}

impl PreparedPlan {
    /// Slots of the plan's queue: one packet per token, drained every token.
    pub const QUEUE_SLOTS: u32 = 4;
    /// Alignment of each retained kernarg blob, at least (as a HIP kernarg pool's slots).
    pub const KERNARG_ALIGN: u64 = 64;
    /// Retained kernarg bytes of one plan, at most.
    pub const KERNARG_BYTES_MAX: u64 = 16 << 20;
    /// The longest wait [`PreparedPlan::replay`] accepts.
    pub const TIMEOUT_MAX: Duration = Duration::from_secs(60);

    /// How a token of this plan is submitted.
    #[must_use]
    pub fn submission_identity(&self) -> SubmissionIdentity {
        self.identity
    }

    /// The identity of the tape the plan was prepared from.
    #[must_use]
    pub fn tape_identity(&self) -> TapeIdentity {
        self.tape
    }

    /// The device lifetime the plan was prepared in (its epoch; frees are re-checked).
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.hot.lifetime.epoch
    }

    /// The IB in device memory (PM4 transport only).
    #[must_use]
    pub fn ib(&self) -> Option<DeviceAllocation> {
        self.ib
    }

    /// The retained kernarg allocation.
    #[must_use]
    pub fn kernargs(&self) -> DeviceAllocation {
        self.kernargs
    }

    /// Launch `i`'s retained kernarg VA.
    #[must_use]
    pub fn kernarg_vas(&self) -> &[u64] {
        &self.kernarg_vas
    }

    /// Where the bindings are written, one site per binding.
    #[must_use]
    pub fn patch_sites(&self) -> &[PatchSite] {
        &self.hot.patch_sites
    }

    /// The packets published every token (grid bindings of the AQL transport are patched into
    /// them at publication).
    #[must_use]
    pub fn packets(&self) -> impl ExactSizeIterator<Item = &[u8; PACKET_SIZE]> {
        self.hot.packets.iter().map(|slot| &slot.0)
    }

    /// Tokens published so far (each rang the doorbell or was abandoned with an error).
    #[must_use]
    pub fn submitted(&self) -> u64 {
        self.hot.submitted
    }

    /// The position whose replay failed, once the plan is poisoned.
    #[must_use]
    pub fn poisoned(&self) -> Option<u32> {
        self.hot.poisoned
    }

    /// Runs the tape at `position`: waits for the ordinary path, then
    /// [`PreparedPlan::publish_token`] and [`PreparedPlan::complete_token`]. No heap allocation
    /// on success.
    ///
    /// # Errors
    /// [`ReplayError`]: a stale or poisoned plan (the device untouched), a binding without a
    /// value at `position` (nothing written), a failed ordinary launch before it, or a device
    /// failure (the plan is poisoned).
    ///
    /// # Panics
    /// When `timeout` exceeds [`PreparedPlan::TIMEOUT_MAX`] (a programmer error).
    pub fn replay<D: Device + ?Sized>(
        &mut self,
        device: &mut D,
        position: u32,
        timeout: Duration,
    ) -> Result<ReplayOutcome, ReplayError> {
        assert!(timeout <= Self::TIMEOUT_MAX, "replay timeout {timeout:?} above {:?}", Self::TIMEOUT_MAX);
        // The plan's queue is not ordered after the ordinary path's: its inputs must be done.
        device.finish().map_err(|source| ReplayError::Ordinary { position, source })?;
        self.publish_token(device, position)?;
        self.complete_token(device, timeout)
    }

    /// Refuses a plan from another epoch, or one whose allocations were freed.
    fn check_live<D: Device + ?Sized>(&mut self, device: &D) -> Result<(), ReplayError> {
        let now = device.lifetime();
        let hot = &mut self.hot;
        if now.epoch != hot.lifetime.epoch {
            return Err(ReplayError::StalePlan { plan_epoch: hot.lifetime.epoch, device_epoch: now.epoch });
        }
        if now.frees != hot.lifetime.frees {
            for &(allocation, va) in &self.live {
                if device.resolve(va).map(|(id, _)| id) != Some(allocation) {
                    return Err(ReplayError::AllocationGone { allocation, va });
                }
            }
            hot.lifetime = now;
        }
        Ok(())
    }

    /// Destroys the plan's queue and signal and frees its IB and kernargs. A plan from an
    /// earlier epoch owns nothing any more (the reset freed it): nothing is done.
    ///
    /// # Errors
    /// [`ReleaseError`] for the first object that could not be released (the rest are still
    /// attempted).
    pub fn release<D: Device + ?Sized>(self, device: &mut D) -> Result<(), ReleaseError> {
        if device.lifetime().epoch != self.hot.lifetime.epoch {
            return Ok(());
        }
        let queue = device.destroy_queue(self.identity.queue).map_err(ReleaseError::from);
        let signal = device.destroy_signal(self.hot.signal).map_err(ReleaseError::from);
        let ib = self.ib.map_or(Ok(()), |ib| device.free(ib).map_err(ReleaseError::from));
        let kernargs = device.free(self.kernargs).map_err(ReleaseError::from);
        queue.and(signal).and(ib).and(kernargs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fill` of the checked-in gfx1100 code object as a kernel table would hold it.
    fn fill_slot() -> hal::KernelSlot {
        let bytes = kernels::artifact("gfx1100/fill.co").unwrap().bytes;
        let code_object = kernarg_abi::read_any(bytes, None).unwrap();
        let kernel = code_object.kernels.into_iter().find(|k| k.metadata.name == "fill").unwrap();
        let loaded = hal::LoadedKernel::placed(&kernel, 0x7e00_0000_0000);
        hal::KernelSlot { loaded, kernel, target: code_object.target }
    }

    /// A backend whose kernel table reports another kernarg alignment than the metadata (no
    /// backend builds its table otherwise today, so only this reaches the branch) has the
    /// preparation refused: the retained blob is placed by the table's alignment.
    #[test]
    fn a_table_alignment_other_than_the_metadatas_is_refused() {
        let slot = fill_slot();
        assert_eq!(slot.kernel.metadata.kernarg_segment_align, 8);
        check_kernarg_alignment(&slot).unwrap();
        for placed in [4, 16, 256] {
            let mut slot = fill_slot();
            slot.loaded.kernarg_segment_align = placed;
            let detail = check_kernarg_alignment(&slot).unwrap_err();
            assert_eq!(
                detail,
                format!("the device reports kernarg alignment {placed}, the metadata's .kernarg_segment_align is 8")
            );
        }
    }
}
