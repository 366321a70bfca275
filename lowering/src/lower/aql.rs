//! The AQL lowering: one KERNEL_DISPATCH packet per launch.
//!
//! # Barrier bits and fences
//! - `BARRIER` is set exactly on the launches before which tape-core puts a boundary: the packet
//!   processor then waits for every earlier packet to complete; between boundaries, tape-core proved
//!   the launches independent, so they may overlap.
//! - Acquire fence: system scope on the first packet and on every barrier packet (the start of
//!   each wait-free segment), so what the host or the previous segment wrote is visible to the
//!   segment's readers; packets are launched in order, so the rest of a segment starts after that
//!   acquire. Other packets: none.
//! - Release fence: system scope on every packet. Any packet of a segment may be the last to
//!   complete, and its writes are read by the next segment or by the host; a release on only some
//!   of them would leave the others' writes unpublished. This is conservative (agent scope would
//!   do between segments on one device); the retained route's measurements can narrow it.
//! - The completion signal is on the last packet only.

use aql_packets::{Dimensions, FenceScope, KernelDispatch, PACKET_SIZE, PacketControl};
use tape_core::ArtifactId;
use tape_core::deps;
use tape_core::tape::Tape;

use super::{LowerError, resolve_slots};
use hal::KernelSlot;

/// One AQL KERNEL_DISPATCH packet per launch of `tape`: kernel object = the kernel descriptor VA,
/// kernarg address = `kernarg_vas[i]`, grid in work-items, group segment = static + dynamic LDS;
/// barrier bits and fences as the module documentation says; `completion_signal` (a signal
/// handle, 0 for none) on the last packet.
///
/// # Errors
/// [`LowerError`] for a missing kernel, a kernarg or wave size that disagrees with it, or a tape
/// the dependency derivation refuses.
pub fn lower_aql<'k>(
    tape: &Tape,
    kernels: &dyn Fn(&ArtifactId) -> Option<&'k KernelSlot>,
    kernarg_vas: &[u64],
    completion_signal: u64,
) -> Result<Vec<[u8; PACKET_SIZE]>, LowerError> {
    let slots = resolve_slots(tape, kernels, kernarg_vas)?;
    let boundaries = deps::boundaries(tape.launches())?;
    let last = tape.launches().len() - 1;
    let packets = tape
        .launches()
        .iter()
        .zip(&slots)
        .zip(kernarg_vas)
        .enumerate()
        .map(|(i, ((record, slot), &kernarg_address))| {
            let barrier = boundaries.binary_search(&i).is_ok();
            let acquire = if i == 0 || barrier { FenceScope::System } else { FenceScope::None };
            let control = PacketControl { barrier, acquire, release: FenceScope::System };
            let (grid, workgroup) = (record.geometry.grid_work_items, record.geometry.workgroup_work_items);
            let dispatch = KernelDispatch {
                control,
                dimensions: Dimensions::fewest(grid, workgroup),
                workgroup_size: workgroup,
                grid_size: grid,
                private_segment_size: slot.loaded.private_segment_fixed_size,
                group_segment_size: record.lds.static_bytes.saturating_add(record.lds.dynamic_bytes),
                kernel_object: slot.loaded.kd_va,
                kernarg_address,
                completion_signal: if i == last { completion_signal } else { 0 },
            };
            *dispatch.emit().as_array()
        })
        .collect();
    Ok(packets)
}
