//! The user SGPRs a kernel descriptor enables, packed from SGPR0 in the ABI order.
//!
//! Order and sizes: `reference/amd-reference.md` §6 "Initial SGPR order". The command processor
//! initialises at most [`USER_SGPR_MAX`] user SGPRs, from `COMPUTE_USER_DATA_0..15`; a raw PM4
//! dispatch writes them itself.

use alloc::vec::Vec;
use core::fmt;

use pm4_encoding::Family;

use crate::descriptor::KernelDescriptor;

/// User SGPRs the command processor can initialise (`COMPUTE_USER_DATA_0..15`, reference §6).
pub const USER_SGPR_MAX: u8 = 16;

/// One block of user SGPRs, in reference §6 order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UserSgpr {
    /// Private segment buffer V# (4 SGPRs).
    PrivateSegmentBuffer,
    /// AQL dispatch packet address (2).
    DispatchPtr,
    /// `amd_queue_t` address (2).
    QueuePtr,
    /// Kernarg segment address (2).
    KernargSegmentPtr,
    /// 64-bit dispatch id (2).
    DispatchId,
    /// Flat scratch initialisation (2).
    FlatScratchInit,
    /// Preloaded kernarg dwords (`kernarg_preload` LENGTH).
    PreloadedKernargs,
    /// Per-work-item scratch size (1).
    PrivateSegmentSize,
}

impl UserSgpr {
    /// Every block, in ABI order.
    pub const ALL: [UserSgpr; 8] = [
        UserSgpr::PrivateSegmentBuffer,
        UserSgpr::DispatchPtr,
        UserSgpr::QueuePtr,
        UserSgpr::KernargSegmentPtr,
        UserSgpr::DispatchId,
        UserSgpr::FlatScratchInit,
        UserSgpr::PreloadedKernargs,
        UserSgpr::PrivateSegmentSize,
    ];

    /// The reference's name of the block.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            UserSgpr::PrivateSegmentBuffer => "private segment buffer",
            UserSgpr::DispatchPtr => "dispatch ptr",
            UserSgpr::QueuePtr => "queue ptr",
            UserSgpr::KernargSegmentPtr => "kernarg segment ptr",
            UserSgpr::DispatchId => "dispatch id",
            UserSgpr::FlatScratchInit => "flat scratch init",
            UserSgpr::PreloadedKernargs => "preloaded kernargs",
            UserSgpr::PrivateSegmentSize => "private segment size",
        }
    }
}

impl fmt::Display for UserSgpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An enabled block and where it lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UserSgprBlock {
    /// Which block.
    pub kind: UserSgpr,
    /// Index of its first SGPR (= its first `COMPUTE_USER_DATA_n`).
    pub first: u8,
    /// Number of SGPRs.
    pub count: u8,
}

/// How `RSRC2.USER_SGPR` compares with the layout's total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserSgprCount {
    /// Equal.
    Exact,
    /// RSRC2 says more (allowed: LLVM's gfx1100 wave32 code objects say 15 as a hardware
    /// workaround; the extra user-data registers are written as 0).
    Larger {
        /// `RSRC2.USER_SGPR`.
        rsrc2: u8,
        /// Layout total.
        layout: u8,
    },
    /// RSRC2 says fewer than the enabled blocks need: an inconsistent descriptor.
    Smaller {
        /// `RSRC2.USER_SGPR`.
        rsrc2: u8,
        /// Layout total.
        layout: u8,
    },
}

/// The enabled user SGPR blocks of one descriptor, in ABI order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UserSgprLayout {
    family: Family,
    blocks: Vec<UserSgprBlock>,
    total: u8,
    rsrc2_user_sgpr: u8,
}

impl UserSgprLayout {
    /// Lays out the blocks `descriptor.kernel_code_properties` (and `kernarg_preload` LENGTH)
    /// enable. The order is the same on every supported family; `family` types RSRC2.
    #[must_use]
    pub fn new(descriptor: &KernelDescriptor, family: Family) -> Self {
        let kcp = descriptor.kernel_code_properties();
        // CAST: LENGTH is a 7-bit field.
        #[allow(clippy::cast_possible_truncation)]
        let preload = descriptor.kernarg_preload().length() as u8;
        let sizes: [(UserSgpr, bool, u8); 8] = [
            (UserSgpr::PrivateSegmentBuffer, kcp.enable_sgpr_private_segment_buffer() != 0, 4),
            (UserSgpr::DispatchPtr, kcp.enable_sgpr_dispatch_ptr() != 0, 2),
            (UserSgpr::QueuePtr, kcp.enable_sgpr_queue_ptr() != 0, 2),
            (UserSgpr::KernargSegmentPtr, kcp.enable_sgpr_kernarg_segment_ptr() != 0, 2),
            (UserSgpr::DispatchId, kcp.enable_sgpr_dispatch_id() != 0, 2),
            (UserSgpr::FlatScratchInit, kcp.enable_sgpr_flat_scratch_init() != 0, 2),
            (UserSgpr::PreloadedKernargs, preload != 0, preload),
            (UserSgpr::PrivateSegmentSize, kcp.enable_sgpr_private_segment_size() != 0, 1),
        ];
        let mut blocks = Vec::new();
        // INVARIANT: at most 4 + 5 * 2 + 127 + 1 = 142 SGPRs, so `total` cannot overflow a u8.
        let mut total = 0u8;
        for (kind, enabled, count) in sizes {
            if enabled {
                blocks.push(UserSgprBlock { kind, first: total, count });
                total += count;
            }
        }
        Self { family, blocks, total, rsrc2_user_sgpr: descriptor.rsrc2(family).user_sgpr() }
    }

    /// The family the layout was computed for.
    #[must_use]
    pub fn family(&self) -> Family {
        self.family
    }

    /// Enabled blocks, in ABI order.
    #[must_use]
    pub fn blocks(&self) -> &[UserSgprBlock] {
        &self.blocks
    }

    /// The block of `kind`, if enabled.
    #[must_use]
    pub fn block(&self, kind: UserSgpr) -> Option<UserSgprBlock> {
        self.blocks.iter().copied().find(|b| b.kind == kind)
    }

    /// First SGPR of the kernarg segment pointer, if enabled.
    #[must_use]
    pub fn kernarg_ptr_sgpr(&self) -> Option<u8> {
        self.block(UserSgpr::KernargSegmentPtr).map(|b| b.first)
    }

    /// User SGPRs the enabled blocks need.
    #[must_use]
    pub fn total(&self) -> u8 {
        self.total
    }

    /// `RSRC2.USER_SGPR` of the descriptor.
    #[must_use]
    pub fn rsrc2_user_sgpr(&self) -> u8 {
        self.rsrc2_user_sgpr
    }

    /// `RSRC2.USER_SGPR` against [`total`](Self::total).
    #[must_use]
    pub fn rsrc2_count(&self) -> UserSgprCount {
        let (rsrc2, layout) = (self.rsrc2_user_sgpr, self.total);
        match rsrc2.cmp(&layout) {
            core::cmp::Ordering::Equal => UserSgprCount::Exact,
            core::cmp::Ordering::Greater => UserSgprCount::Larger { rsrc2, layout },
            core::cmp::Ordering::Less => UserSgprCount::Smaller { rsrc2, layout },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::little_endian::{U16, U32};

    fn descriptor(kcp: u16, preload: u16, rsrc2: u32) -> KernelDescriptor {
        let mut d = KernelDescriptor::from_bytes(&[0; 64]).unwrap();
        d.kernel_code_properties = U16::new(kcp);
        d.kernarg_preload = U16::new(preload);
        d.compute_pgm_rsrc2 = U32::new(rsrc2);
        d
    }

    #[test]
    fn gfx1030_scratch_kernel_layout() {
        // kernels-gfx1030.co scratch.kd: kernel_code_properties 0x0429 (buffer, kernarg ptr, flat
        // scratch init, wave32), RSRC2 0x91 (USER_SGPR 8, ENABLE_PRIVATE_SEGMENT).
        let l = UserSgprLayout::new(&descriptor(0x0429, 0, 0x91), Family::Gfx10_3);
        assert_eq!(
            l.blocks(),
            [
                UserSgprBlock { kind: UserSgpr::PrivateSegmentBuffer, first: 0, count: 4 },
                UserSgprBlock { kind: UserSgpr::KernargSegmentPtr, first: 4, count: 2 },
                UserSgprBlock { kind: UserSgpr::FlatScratchInit, first: 6, count: 2 },
            ]
        );
        assert_eq!(l.kernarg_ptr_sgpr(), Some(4));
        assert_eq!((l.total(), l.rsrc2_user_sgpr()), (8, 8));
        assert_eq!(l.rsrc2_count(), UserSgprCount::Exact);
    }

    #[test]
    fn every_block_in_order() {
        // All seven enables plus LENGTH 3: 4 + 2 + 2 + 2 + 2 + 2 + 3 + 1 = 18.
        let l = UserSgprLayout::new(&descriptor(0x7f, 3, 9 << 1), Family::Gfx12);
        let firsts: Vec<(UserSgpr, u8, u8)> = l.blocks().iter().map(|b| (b.kind, b.first, b.count)).collect();
        assert_eq!(
            firsts,
            [
                (UserSgpr::PrivateSegmentBuffer, 0, 4),
                (UserSgpr::DispatchPtr, 4, 2),
                (UserSgpr::QueuePtr, 6, 2),
                (UserSgpr::KernargSegmentPtr, 8, 2),
                (UserSgpr::DispatchId, 10, 2),
                (UserSgpr::FlatScratchInit, 12, 2),
                (UserSgpr::PreloadedKernargs, 14, 3),
                (UserSgpr::PrivateSegmentSize, 17, 1),
            ]
        );
        assert_eq!(l.total(), 18);
        assert_eq!(l.kernarg_ptr_sgpr(), Some(8));
        assert_eq!(l.rsrc2_count(), UserSgprCount::Smaller { rsrc2: 9, layout: 18 });
    }

    #[test]
    fn gfx1100_workaround_count_is_larger_not_an_error() {
        // kernels-gfx1100.co add.kd: kernel_code_properties 0x0408, RSRC2 0x9e (USER_SGPR 15).
        let l = UserSgprLayout::new(&descriptor(0x0408, 0, 0x9e), Family::Gfx11);
        assert_eq!(l.kernarg_ptr_sgpr(), Some(0));
        assert_eq!(l.total(), 2);
        assert_eq!(l.rsrc2_count(), UserSgprCount::Larger { rsrc2: 15, layout: 2 });
        let none = UserSgprLayout::new(&descriptor(0x0400, 0, 0), Family::Gfx11);
        assert_eq!((none.kernarg_ptr_sgpr(), none.total()), (None, 0));
        assert_eq!(none.rsrc2_count(), UserSgprCount::Exact);
    }
}
