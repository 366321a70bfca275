//! The memory a prepared plan shares between the host half and the device side of a token, laid
//! out by cache line (see [`HostWindow`]).

use aql_packets::PACKET_SIZE;

use super::AqlGridSite;
use crate::device::{QueueHandle, SignalHandle};
use crate::lower::PatchSite;

/// State only the device side of a token ([`super::PreparedPlan::process_token`]) writes, with the
/// handles it needs, on its own cache line: the device side reads nothing else of the plan but
/// the shared parts of [`HostWindow`].
#[derive(Debug)]
#[repr(align(64))]
pub(super) struct DeviceSide {
    /// Packets the device has taken from the host's ring.
    pub(super) applied: u64,
    /// Packets the processor completed for the token being processed, until it is completed.
    pub(super) processed: Option<u64>,
    pub(super) queue: QueueHandle,
    pub(super) signal: SignalHandle,
}

/// The memory a host writes per token, as ROCr maps it into the process: the bound words of the
/// retained kernargs (and, for PM4 grid bindings, the IB's `DIM` dwords), the completion
/// signal's value, the AQL ring's slots and the doorbell. The host half of a token
/// ([`super::PreparedPlan::publish_token`]) performs exactly these stores here; the soft device applies
/// them to its device memory, signal and queue when it processes the doorbell
/// ([`super::PreparedPlan::process_token`]), which is the device side of a token (on hardware, the bus
/// and the packet processor): that side only reads this memory. Preallocated at preparation: no
/// allocation per token.
///
/// Cache lines: what both sides touch per token is two lines, as for a bare packet and
/// doorbell — the [`Mailbox`] (doorbell, signal value and the first [`MAILBOX_VALUES`] bound
/// values) and the ring slot (slots are line-aligned) — plus one line per further 16 bound
/// values. The sites' addresses never change after preparation, and the host's own bookkeeping
/// sits on a line the device side never reads, as a GPU never reads the host's private data.
///
/// In C order, with boxed slices (two words each), so that what the host half reads of the
/// window is three adjacent lines: its bookkeeping, the mailbox, and one line of the four
/// pointers it follows (ring, patch sites, grid sites, packets); the overflow values' pointer
/// (read only past [`MAILBOX_VALUES`] sites) and the sites' addresses (read only by the device
/// side) come last.
#[derive(Debug)]
#[repr(C)]
pub(super) struct HostWindow {
    pub(super) private: HostPrivate,
    pub(super) mailbox: Mailbox,
    /// Ring slots, as many as the queue has. Header constant after preparation.
    pub(super) ring: Box<[Slot]>,
    /// Where the bindings are written, one site per binding.
    pub(super) patch_sites: Box<[PatchSite]>,
    /// Grid bindings of the AQL transport.
    pub(super) grid_sites: Box<[AqlGridSite]>,
    /// The packets published every token, each on a line of its own: the PM4-IB packet, or one
    /// dispatch per launch.
    pub(super) packets: Box<[Slot]>,
    /// Values of the sites after the first [`MAILBOX_VALUES`], 16 per line.
    pub(super) overflow: Box<[ValueLine]>,
    /// Byte address per patch site. Constant after preparation.
    pub(super) vas: Box<[u64]>,
}

/// Bound values a plan carries on the same cache line as its doorbell and signal value; further
/// values take one more line per 16.
pub const MAILBOX_VALUES: usize = 12;

/// The doorbell, the completion signal's value and the first bound values, as the host last
/// stored them: one cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct Mailbox {
    /// The write index the host publishes up to.
    pub(super) doorbell: u64,
    /// The completion signal's value.
    pub(super) signal: i64,
    /// Values of the first [`MAILBOX_VALUES`] sites.
    pub(super) values: [u32; MAILBOX_VALUES],
}

/// Sixteen bound values on a cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
pub(super) struct ValueLine(pub(super) [u32; 16]);

/// The host's own bookkeeping of the plan, everything of it the host half reads and writes per
/// token besides the shared lines: one cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct HostPrivate {
    /// Packets written into the ring.
    pub(super) write_index: u64,
    /// Packets of completed tokens: the host knows their slots are free again.
    pub(super) acked: u64,
    /// The device epoch the plan was prepared in.
    pub(super) epoch: u64,
    /// The device's free generation at the last liveness check.
    pub(super) free_generation: u64,
    /// Tokens published so far.
    pub(super) submitted: u64,
    /// The position of the published, unfinished token.
    pub(super) pending: Option<u32>,
    /// The position whose replay failed.
    pub(super) poisoned: Option<u32>,
}

/// One 64-byte packet (a ring slot, or a packet the plan publishes) on a cache line of its own.
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

impl HostWindow {
    /// A window for `sites` written at `vas`, publishing `packets` into a ring of `slots`, for a
    /// plan prepared at the device's `epoch` and `free_generation`.
    pub(super) fn new(sites: Sites, vas: Vec<u64>, slots: u32, epoch: u64, free_generation: u64) -> Self {
        let overflow = vas.len().saturating_sub(MAILBOX_VALUES).div_ceil(16);
        Self {
            private: HostPrivate { epoch, free_generation, ..HostPrivate::default() },
            mailbox: Mailbox::default(),
            ring: vec![Slot([0; PACKET_SIZE]); usize::try_from(slots).unwrap_or(0)].into_boxed_slice(),
            patch_sites: sites.patch_sites.into_boxed_slice(),
            grid_sites: sites.grid_sites.into_boxed_slice(),
            packets: sites.packets.into_iter().map(Slot).collect(),
            overflow: vec![ValueLine::default(); overflow].into_boxed_slice(),
            vas: vas.into_boxed_slice(),
        }
    }

    pub(super) fn value_mut(&mut self, site: usize) -> &mut u32 {
        match site.checked_sub(MAILBOX_VALUES) {
            None => &mut self.mailbox.values[site],
            Some(i) => &mut self.overflow[i / 16].0[i % 16],
        }
    }

    pub(super) fn value(&self, site: usize) -> u32 {
        match site.checked_sub(MAILBOX_VALUES) {
            None => self.mailbox.values[site],
            Some(i) => self.overflow[i / 16].0[i % 16],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_window_values_go_to_the_mailbox_then_to_whole_overflow_lines() {
        for sites in [0, 1, MAILBOX_VALUES, MAILBOX_VALUES + 1, MAILBOX_VALUES + 16, MAILBOX_VALUES + 17, 100] {
            let vas: Vec<u64> = (0..sites).map(|i| 0x1000 + 4 * u64::try_from(i).unwrap()).collect();
            let mut window = HostWindow::new(Sites::default(), vas, 4, 0, 0);
            assert_eq!(window.overflow.len(), sites.saturating_sub(MAILBOX_VALUES).div_ceil(16), "{sites} sites");
            for i in 0..sites {
                *window.value_mut(i) = u32::try_from(i).unwrap() * 7 + 1;
            }
            for i in 0..sites {
                assert_eq!(window.value(i), u32::try_from(i).unwrap() * 7 + 1, "{sites} sites, site {i}");
            }
            let in_mailbox = sites.min(MAILBOX_VALUES);
            for i in 0..in_mailbox {
                assert_eq!(window.mailbox.values[i], u32::try_from(i).unwrap() * 7 + 1);
            }
        }
        assert_eq!(std::mem::size_of::<Mailbox>(), 64, "the mailbox is one cache line");
        assert_eq!(std::mem::size_of::<HostPrivate>(), 64, "the host's bookkeeping is one cache line");
        assert_eq!(std::mem::align_of::<Slot>(), 64, "ring slots are line-aligned");
        assert_eq!(std::mem::align_of::<DeviceSide>(), 64);
        assert_eq!(std::mem::size_of::<HostWindow>(), 256, "host window: four lines");
    }

    #[test]
    fn what_the_host_half_reads_of_a_plan_is_its_first_three_lines() {
        use std::mem::{offset_of, size_of};

        use super::super::PreparedPlan;
        let window = offset_of!(PreparedPlan, window);
        assert_eq!(window, 0, "the window is the plan's first field");
        let ends = [
            offset_of!(HostWindow, private) + size_of::<HostPrivate>(),
            offset_of!(HostWindow, mailbox) + size_of::<Mailbox>(),
            offset_of!(HostWindow, ring) + size_of::<Box<[Slot]>>(),
            offset_of!(HostWindow, patch_sites) + size_of::<Box<[PatchSite]>>(),
            offset_of!(HostWindow, grid_sites) + size_of::<Box<[AqlGridSite]>>(),
            offset_of!(HostWindow, packets) + size_of::<Box<[Slot]>>(),
        ];
        for (field, end) in ends.into_iter().enumerate() {
            assert!(end <= 3 * 64, "field {field} of the host half ends at byte {end}");
        }
        // Past MAILBOX_VALUES sites the half reads the overflow pointer too: a fourth line.
        assert!(offset_of!(HostWindow, overflow) + size_of::<Box<[ValueLine]>>() <= 4 * 64);
        assert_eq!(std::mem::align_of::<PreparedPlan>(), 64, "the plan starts on a line");
    }
}
