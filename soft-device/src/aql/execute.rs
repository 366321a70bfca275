//! Executing one decoded AQL packet.
//!
//! # Kernel dispatch
//! `kernel_object` must be a loaded kernel's descriptor VA and the kernel must have a CPU
//! reference. The grid is in work-items, all three grid and work-group sizes are passed to the
//! executor as the packet holds them. `kernarg_address` is the VA of the kernarg segment.
//! - `group_segment_size` is the work-group's whole LDS: it must be at least the kernel's static
//!   LDS (`.group_segment_fixed_size`); the rest is the dynamic LDS the kernel sees.
//! - `private_segment_size` must be 0 or the kernel's `.private_segment_fixed_size` (HIP passes
//!   the latter), and that size must be 0: the sim does not model scratch memory, and CPU
//!   references never use it, so a kernel that needs scratch is a fault, not a silent success.
//!
//! # Barriers
//! A barrier-AND is satisfied when every non-zero `dep_signal` has value 0, a barrier-OR when
//! any has, or when it names none (nothing to wait for). A barrier-value packet is satisfied when
//! `(value & mask) cond compare` holds (signed comparison of the masked bits). Nothing runs
//! concurrently with the processor, so an unsatisfied condition is a fault. Every signal a packet
//! names must exist, checked before the packet runs.

use std::sync::Arc;

use aql_packets::{AmdBarrierValue, AqlPacket, Barrier, KernelDispatch, PacketType};

use crate::aql::{Pm4Hook, ProcessReport, ProcessedPacket};
use crate::exec::{self, Dispatch, ExecutedDispatch};
use crate::loader::SoftKernels;
use crate::memory::SimMemory;
use crate::signal::SignalTable;
use crate::trace::{self, TraceSite, TracedDispatch};
use hal::{LaunchError, QueueFault, signal_condition_holds};

/// Runs `packet`, decrements its completion signal and records it in `report`. `signals` is the
/// soft device's [`crate::signal::Signals`] or a runtime's own table. A kernel dispatch that ran
/// is written to the process's kernel trace ([`crate::trace`]) as run at `site`.
///
/// # Errors
/// The [`QueueFault`] that stops the queue.
#[allow(clippy::too_many_arguments)] // The processor's whole context, as both callers hold it.
pub fn packet<S: SignalTable + ?Sized>(
    site: TraceSite,
    packet_id: u64,
    packet: &AqlPacket,
    memory: &mut SimMemory,
    objects: &SoftKernels,
    signals: &mut S,
    pm4: &mut Pm4Hook<'_>,
    report: &mut ProcessReport,
) -> Result<(), QueueFault> {
    let (Some(control), Some(completion_signal)) = (packet.control(), packet.completion_signal()) else {
        return Err(QueueFault::UnsupportedPacket { packet_id, packet_type: PacketType::Invalid });
    };
    if completion_signal != 0 {
        require_signal(signals, packet_id, completion_signal)?;
    }
    match packet {
        AqlPacket::KernelDispatch(d) => {
            // Asked first: opening the trace sets the clock its timestamps count from.
            let to_file = trace::enabled();
            let start = std::time::Instant::now();
            report.dispatches.push(kernel_dispatch(packet_id, d, memory, objects)?);
            if to_file || report.trace.is_some() || report.trace_sink.is_some() {
                let sink = report.trace_sink;
                trace_dispatch(site, d, objects, start, to_file, sink, report.trace.as_mut());
            }
        }
        AqlPacket::BarrierAnd(b) => barrier(packet_id, b, signals, true)?,
        AqlPacket::BarrierOr(b) => barrier(packet_id, b, signals, false)?,
        AqlPacket::AmdBarrierValue(b) => barrier_value(packet_id, b, signals)?,
        AqlPacket::AmdPm4Ib(p) => {
            let (ib_va, size_dwords) = (p.ib.address, p.ib.control.ib_size());
            pm4(memory, objects, ib_va, size_dwords).map_err(|source| QueueFault::Pm4 {
                packet_id,
                ib_va,
                size_dwords,
                source: Arc::from(source),
            })?;
        }
        AqlPacket::AgentDispatch(_) | AqlPacket::Invalid => {
            return Err(QueueFault::UnsupportedPacket { packet_id, packet_type: packet.packet_type() });
        }
    }
    if completion_signal != 0 {
        // Checked above; nothing in between destroys signals.
        signals
            .subtract_raw(completion_signal, 1)
            .map_err(|_| QueueFault::UnknownSignal { packet_id, handle: completion_signal })?;
    }
    report.packets.push(ProcessedPacket {
        packet_id,
        packet_type: packet.packet_type(),
        amd_format: packet.amd_format(),
        control,
        completion_signal,
    });
    Ok(())
}

/// The value of signal `handle`, or the fault for a packet naming a signal that does not exist.
fn require_signal<S: SignalTable + ?Sized>(signals: &S, packet_id: u64, handle: u64) -> Result<i64, QueueFault> {
    signals.load_raw(handle).map_err(|_| QueueFault::UnknownSignal { packet_id, handle })
}

fn barrier<S: SignalTable + ?Sized>(packet_id: u64, b: &Barrier, signals: &S, all: bool) -> Result<(), QueueFault> {
    let mut first_unsatisfied = None;
    let mut any_dependency = false;
    let mut any_satisfied = false;
    for &handle in b.dep_signal.iter().filter(|&&h| h != 0) {
        let value = require_signal(signals, packet_id, handle)?;
        any_dependency = true;
        if value == 0 {
            any_satisfied = true;
        } else if first_unsatisfied.is_none() {
            first_unsatisfied = Some((handle, value));
        }
    }
    let satisfied = if all { first_unsatisfied.is_none() } else { any_satisfied || !any_dependency };
    match first_unsatisfied {
        Some((signal, value)) if !satisfied => Err(QueueFault::BarrierNeverSatisfied { packet_id, signal, value }),
        _ => Ok(()),
    }
}

fn barrier_value<S: SignalTable + ?Sized>(packet_id: u64, b: &AmdBarrierValue, signals: &S) -> Result<(), QueueFault> {
    let current = require_signal(signals, packet_id, b.signal)?;
    // The comparison is on the masked bit patterns, read as signed values like the signal.
    let masked = i64::from_le_bytes((u64::from_le_bytes(current.to_le_bytes()) & b.mask).to_le_bytes());
    let value = i64::from_le_bytes(b.value.to_le_bytes());
    if signal_condition_holds(masked, b.cond, value) {
        Ok(())
    } else {
        Err(QueueFault::BarrierValueNeverSatisfied {
            packet_id,
            signal: b.signal,
            current,
            mask: b.mask,
            cond: b.cond,
            value,
        })
    }
}

/// Writes the trace line of dispatch `d`, which ran from `start` until now, to the process's
/// file (`to_file`) and to `rows` (when kept).
fn trace_dispatch(
    site: TraceSite,
    d: &KernelDispatch,
    objects: &SoftKernels,
    start: std::time::Instant,
    to_file: bool,
    sink: Option<fn(tape_core::census::trace::TraceRow)>,
    rows: Option<&mut Vec<tape_core::census::trace::TraceRow>>,
) {
    let end = std::time::Instant::now();
    // The dispatch ran, so its kernel is loaded.
    let Some(slot) = objects.by_kd(d.kernel_object) else { return };
    let k = &slot.loaded;
    let traced = TracedDispatch {
        site,
        kernel: &k.name,
        kernel_object: d.kernel_object,
        static_lds_bytes: k.group_segment_fixed_size,
        scratch_bytes: d.private_segment_size,
        registers: [k.vgpr_count, k.agpr_count, k.sgpr_count],
        workgroup: d.workgroup_size,
        grid: d.grid_size,
        start,
        end,
    };
    if to_file {
        trace::record(&traced);
    }
    if let Some(sink) = sink {
        sink(trace::row(&traced, 0));
    } else if let Some(rows) = rows {
        rows.push(trace::row(&traced, 0));
    }
}

fn kernel_dispatch(
    packet_id: u64,
    d: &KernelDispatch,
    memory: &mut SimMemory,
    objects: &SoftKernels,
) -> Result<ExecutedDispatch, QueueFault> {
    let kernel_object = d.kernel_object;
    let dispatch_fault = |source| QueueFault::Dispatch { packet_id, source };
    let slot = objects.by_kd(kernel_object).ok_or(dispatch_fault(LaunchError::UnknownKernel { kernel_object }))?;
    let kernel = &slot.loaded.name;
    if objects.reference(kernel_object).is_none() {
        return Err(dispatch_fault(crate::SoftFault::NoCpuImplementation { kernel_object }.launch(kernel)));
    }
    let static_bytes = slot.loaded.group_segment_fixed_size;
    let Some(dynamic_lds_bytes) = d.group_segment_size.checked_sub(static_bytes) else {
        return Err(QueueFault::GroupSegmentTooSmall {
            packet_id,
            kernel: kernel.clone(),
            group_segment_size: d.group_segment_size,
            static_bytes,
        });
    };
    let kernel_bytes = slot.loaded.private_segment_fixed_size;
    if d.private_segment_size != 0 && d.private_segment_size != kernel_bytes {
        let requested = d.private_segment_size;
        return Err(QueueFault::PrivateSegmentSize { packet_id, kernel: kernel.clone(), requested, kernel_bytes });
    }
    if kernel_bytes != 0 {
        return Err(QueueFault::ScratchNotModelled { packet_id, kernel: kernel.clone(), kernel_bytes });
    }
    let dispatch = Dispatch {
        kernel_object,
        kernarg_va: d.kernarg_address,
        grid_work_items: d.grid_size,
        workgroup_work_items: d.workgroup_size,
        dynamic_lds_bytes,
    };
    exec::execute(memory, objects, &dispatch).map_err(dispatch_fault)
}
