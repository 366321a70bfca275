//! The host half's helpers that stay off its usual path, and the reads that start its cold
//! misses together (see [`PreparedPlan::publish_token`]).

use std::hint::black_box;

use aql_packets::KernelDispatchPacket;
use zerocopy::FromBytes;

use super::{PreparedPlan, ReplayError, grid_work_items};
use crate::device::QueueError;
use crate::lower::PatchError;
use crate::sim::SimDevice;

impl PreparedPlan {
    /// The start of a token when the plan is not plainly ready (poisoned, a token pending, or
    /// the device's epoch or free generation moved): the error, or `Ok` when the plan's
    /// allocations are all still live. Out of line, so that the half's usual path stays short.
    #[cold]
    #[inline(never)]
    pub(super) fn check_start(&mut self, device: &SimDevice) -> Result<(), ReplayError> {
        if let Some(failed_position) = self.window.private.poisoned {
            return Err(ReplayError::Poisoned { failed_position });
        }
        if let Some(pending) = self.window.private.pending {
            return Err(ReplayError::TokenPending { pending });
        }
        self.check_live(device)
    }

    /// The error for a binding without a value at `position` (the plan stays usable), or a
    /// value that does not fit its site (the plan is poisoned).
    #[cold]
    #[inline(never)]
    pub(super) fn refuse_value(&mut self, position: u32, error: PatchError) -> ReplayError {
        match error {
            e @ PatchError::Binding { .. } => e.into(),
            e => self.poison(position, e.into()),
        }
    }

    /// The error for a ring without a free slot at `position` (the plan is poisoned).
    #[cold]
    #[inline(never)]
    pub(super) fn refuse_full_ring(&mut self, position: u32) -> ReplayError {
        let private = &self.window.private;
        let source = QueueError::Full {
            write_index: private.write_index,
            read_index: private.acked,
            slots: u32::try_from(self.window.ring.len()).unwrap_or(u32::MAX),
        };
        self.poison(position, ReplayError::Queue { position, source })
    }

    /// Writes the grid bindings' values at `position` into the AQL transport's packets
    /// (nothing for PM4, whose grid bindings are patch sites).
    #[inline(never)]
    pub(super) fn patch_grids(&mut self, position: u32) -> Result<(), ReplayError> {
        let window = &mut self.window;
        for i in 0..window.grid_sites.len() {
            let site = window.grid_sites[i];
            let work_items = grid_work_items(&site, position)?;
            if let Ok(packet) = KernelDispatchPacket::mut_from_bytes(&mut window.packets[site.packet].0) {
                match site.axis {
                    0 => packet.grid_size_x.set(work_items),
                    1 => packet.grid_size_y.set(work_items),
                    _ => packet.grid_size_z.set(work_items),
                }
            }
        }
        Ok(())
    }

    /// Reads a word of every line the host half of a token goes on to touch beyond the plan's
    /// own first lines: the mailbox, the ring slot the next packet goes to, the first patch
    /// site, the first packet and the first overflow line. The addresses follow from the plan's
    /// first lines alone and no load waits for another, so the lines' misses, when the half
    /// starts from a cold cache, overlap and cost about one memory latency together instead of
    /// one each in the order the half needs them.
    #[inline(always)]
    pub(super) fn touch_token_lines(&self) {
        let window = &self.window;
        black_box(window.mailbox.doorbell);
        // CAST: a ring has a power-of-two number of slots; the masked index is below it.
        let slot = usize::try_from(window.private.write_index).unwrap_or(0) & window.ring.len().wrapping_sub(1);
        if let Some(slot) = window.ring.get(slot) {
            black_box(slot.0[0]);
        }
        if let Some(site) = window.patch_sites.first() {
            // The whole site: it may straddle two lines.
            black_box(*site);
        }
        if let Some(packet) = window.packets.first() {
            black_box(packet.0[0]);
        }
        if let Some(values) = window.overflow.first() {
            black_box(values.0[0]);
        }
    }
}
