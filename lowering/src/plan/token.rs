//! The host half of a token and the wait that ends it, and the part of a plan they read ([`Hot`]).
//!
//! The host half ([`PreparedPlan::publish_token`]) is what the host does per token up to and
//! including the doorbell, through the device's own stores: the bound words
//! ([`Device::store_u32`]), the packets into their ring slots ([`Device::write_packet`]) and the
//! doorbell ([`Device::ring_doorbell`]). The completion signal is 1 when a token is published: it
//! is created so, and [`PreparedPlan::complete_token`] sets it back to 1 right after its wait saw
//! the token's 0, while the signal is in the host's caches from that wait. No heap allocation:
//! every buffer the host half writes was sized at preparation. Refusals and the AQL transport's grid sites
//! stay out of line, so that the usual path is short.

use std::time::Duration;

use aql_packets::{KernelDispatchPacket, PACKET_SIZE, SignalCondition};
use hal::{Device, Lifetime, QueueHandle, SignalHandle};
use zerocopy::FromBytes;

use super::{AqlGridSite, PreparedPlan, ReplayError, ReplayOutcome, grid_work_items};
use crate::lower::{PatchError, PatchSite, site_value};

/// One 64-byte packet the plan publishes, on a cache line of its own.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(super) struct Slot(pub(super) [u8; PACKET_SIZE]);

/// What a plan publishes every token: its patch sites, grid sites and packets.
#[derive(Debug, Default)]
pub(super) struct Sites {
    pub(super) patch_sites: Vec<PatchSite>,
    pub(super) grid_sites: Vec<AqlGridSite>,
    pub(super) packets: Vec<[u8; PACKET_SIZE]>,
}

/// Everything the host half of a token reads or writes of the plan itself, first in the plan and
/// line-aligned: its bookkeeping, the device handles and the pointers to its sites and packets.
#[derive(Debug)]
#[repr(C, align(64))]
pub(super) struct Hot {
    /// The device's lifetime at preparation (its free count refreshed after a liveness check).
    pub(super) lifetime: Lifetime,
    pub(super) queue: QueueHandle,
    pub(super) signal: SignalHandle,
    /// Packets of one token.
    pub(super) packets_per_token: u32,
    /// The position of the published, uncompleted token.
    pub(super) pending: Option<u32>,
    /// The position whose replay failed.
    pub(super) poisoned: Option<u32>,
    /// Tokens published so far.
    pub(super) submitted: u64,
    /// Where the bindings are written, one site per binding.
    pub(super) patch_sites: Box<[PatchSite]>,
    /// The byte address of each patch site. Constant after preparation.
    pub(super) site_vas: Box<[u64]>,
    /// The values of a token, computed before any is stored.
    pub(super) values: Box<[u32]>,
    /// Grid bindings of the AQL transport.
    pub(super) grid_sites: Box<[AqlGridSite]>,
    /// The packets published every token: the PM4-IB packet, or one dispatch per launch.
    pub(super) packets: Box<[Slot]>,
}

impl Hot {
    pub(super) fn new(
        sites: Sites,
        site_vas: Vec<u64>,
        queue: QueueHandle,
        signal: SignalHandle,
        packets_per_token: u32,
        lifetime: Lifetime,
    ) -> Self {
        Self {
            lifetime,
            queue,
            signal,
            packets_per_token,
            pending: None,
            poisoned: None,
            submitted: 0,
            values: vec![0; sites.patch_sites.len()].into_boxed_slice(),
            patch_sites: sites.patch_sites.into_boxed_slice(),
            site_vas: site_vas.into_boxed_slice(),
            grid_sites: sites.grid_sites.into_boxed_slice(),
            packets: sites.packets.into_iter().map(Slot).collect(),
        }
    }
}

impl PreparedPlan {
    /// The host half of a token: checks the plan is live, computes the bindings' values for
    /// `position`, stores them at their sites, writes the packets into the ring and rings the
    /// doorbell (the completion signal is already 1: module documentation). Returns the doorbell's
    /// [`hal::Submission`]. The caller has finished the ordinary path ([`Device::finish`]);
    /// [`PreparedPlan::replay`] does. Work: one pass over the patch sites (the bindings, not the
    /// launches) and one packet per launch of the AQL transport (one for PM4); no heap
    /// allocation.
    ///
    /// # Errors
    /// As [`PreparedPlan::replay`], and [`ReplayError::TokenPending`] when a published token is
    /// not completed.
    pub fn publish_token<D: Device + ?Sized>(
        &mut self,
        device: &mut D,
        position: u32,
    ) -> Result<hal::Submission, ReplayError> {
        let hot = &self.hot;
        let settled = hot.poisoned.is_none() && hot.pending.is_none() && device.lifetime() == hot.lifetime;
        if !settled {
            self.check_start(device)?;
        }
        // Grid sites are the AQL transport's: out of line, off the PM4 half's path.
        if !self.hot.grid_sites.is_empty() {
            self.patch_grids(position)?;
        }
        let hot = &mut self.hot;
        // Every value first: a binding without a value at `position` leaves the device untouched.
        for (value, site) in hot.values.iter_mut().zip(&hot.patch_sites) {
            match site_value(site, position) {
                Ok(v) => *value = v,
                Err(e) => return Err(self.refuse_value(position, e)),
            }
        }
        let hot = &self.hot;
        for (i, (&va, &value)) in hot.site_vas.iter().zip(&hot.values).enumerate() {
            if let Err(source) = device.store_u32(va, value) {
                let binding = self.hot.patch_sites[i].binding;
                return Err(self.poison(position, PatchError::Transfer { binding, source }.into()));
            }
        }
        for packet in &hot.packets {
            if let Err(source) = device.write_packet(hot.queue, &packet.0) {
                return Err(self.poison(position, ReplayError::Queue { position, source }));
            }
        }
        // ORDERING: the doorbell follows every store of the token; the device's doorbell is a
        // release, so the packet processor it wakes sees them.
        let submission = match device.ring_doorbell(hot.queue) {
            Ok(submission) => submission,
            Err(source) => return Err(self.poison(position, ReplayError::Queue { position, source })),
        };
        self.hot.submitted += 1;
        if submission.packets() != u64::from(self.hot.packets_per_token) {
            return Err(self.refuse_released(position, submission.packets()));
        }
        self.hot.pending = Some(position);
        Ok(submission)
    }

    /// The host's wait for a published token: at most `timeout` for the completion signal to
    /// reach 0; then the signal is set back to 1 for the next token.
    ///
    /// # Errors
    /// [`ReplayError::NothingPublished`], or a queue fault, a timeout or a failed reset of the
    /// signal (the plan is poisoned; nothing is retried).
    ///
    /// # Panics
    /// When `timeout` exceeds [`PreparedPlan::TIMEOUT_MAX`] (a programmer error).
    pub fn complete_token<D: Device + ?Sized>(
        &mut self,
        device: &mut D,
        timeout: Duration,
    ) -> Result<ReplayOutcome, ReplayError> {
        assert!(timeout <= Self::TIMEOUT_MAX, "replay timeout {timeout:?} above {:?}", Self::TIMEOUT_MAX);
        let position = self.hot.pending.take().ok_or(ReplayError::NothingPublished)?;
        // TIMEOUT: bounded by the caller's `timeout`, itself at most TIMEOUT_MAX.
        let signal_value = match device.wait_signal(self.hot.signal, SignalCondition::Eq, 0, timeout) {
            Ok(value) => value,
            Err(source) => return Err(self.poison(position, ReplayError::Wait { position, source })),
        };
        // ORDERING: the device's last write of the token was its decrement, which the wait saw;
        // the next token's packets are published after this store, so the device sees 1.
        if let Err(e) = device.store_signal(self.hot.signal, 1) {
            return Err(self.poison(position, e.into()));
        }
        let packets = self.hot.packets_per_token;
        let end = self.hot.submitted;
        let submission = hal::Submission { first: (end - 1) * u64::from(packets), end: end * u64::from(packets) };
        Ok(ReplayOutcome { position, packets, submission, signal_value })
    }

    pub(super) fn poison(&mut self, position: u32, error: ReplayError) -> ReplayError {
        self.hot.poisoned = Some(position);
        self.hot.pending = None;
        error
    }

    /// The start of a token when the plan is not plainly ready (poisoned, a token pending, or
    /// the device's lifetime moved): the error, or `Ok` when the plan's allocations are all still
    /// live.
    #[cold]
    #[inline(never)]
    fn check_start<D: Device + ?Sized>(&mut self, device: &D) -> Result<(), ReplayError> {
        if let Some(failed_position) = self.hot.poisoned {
            return Err(ReplayError::Poisoned { failed_position });
        }
        if let Some(pending) = self.hot.pending {
            return Err(ReplayError::TokenPending { pending });
        }
        self.check_live(device)
    }

    /// The error for a binding without a value at `position` (the plan stays usable), or a
    /// value that does not fit its site (the plan is poisoned).
    #[cold]
    #[inline(never)]
    fn refuse_value(&mut self, position: u32, error: PatchError) -> ReplayError {
        match error {
            e @ PatchError::Binding { .. } => e.into(),
            e => self.poison(position, e.into()),
        }
    }

    /// The error for a doorbell that released another number of packets than the token's: the
    /// queue is not the plan's alone (the plan is poisoned).
    #[cold]
    #[inline(never)]
    fn refuse_released(&mut self, position: u32, released: u64) -> ReplayError {
        let published = self.hot.packets_per_token;
        self.poison(position, ReplayError::Released { position, released, published })
    }

    /// Writes the grid bindings' values at `position` into the AQL transport's packets
    /// (nothing for PM4, whose grid bindings are patch sites).
    #[inline(never)]
    fn patch_grids(&mut self, position: u32) -> Result<(), ReplayError> {
        let hot = &mut self.hot;
        for i in 0..hot.grid_sites.len() {
            let site = hot.grid_sites[i];
            let work_items = grid_work_items(&site, position)?;
            if let Ok(packet) = KernelDispatchPacket::mut_from_bytes(&mut hot.packets[site.packet].0) {
                match site.axis {
                    0 => packet.grid_size_x.set(work_items),
                    1 => packet.grid_size_y.set(work_items),
                    _ => packet.grid_size_z.set(work_items),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    #[test]
    fn what_the_host_half_reads_of_a_plan_comes_first_and_is_line_aligned() {
        assert_eq!(offset_of!(PreparedPlan, hot), 0, "the hot part is the plan's first field");
        assert_eq!(std::mem::align_of::<Hot>(), 64);
        assert!(size_of::<Hot>() <= 3 * 64, "the host half reads at most three lines of the plan");
        assert_eq!(std::mem::align_of::<Slot>(), 64, "each packet on a line of its own");
    }
}
