//! One recorded launch, owned: nothing in a record points into caller memory.

use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

/// The exact code a launch runs: the SHA-256 of its code object and the kernel's name in it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ArtifactId {
    /// SHA-256 of the code-object file.
    pub code_object_sha256: [u8; 32],
    /// The kernel's name (`.name` in the metadata; its descriptor is `{symbol}.kd`).
    pub symbol: String,
}

/// Launch geometry, with the unit in every name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    /// Grid size in work-items per axis (as in the AQL packet's `grid_size_*`).
    pub grid_work_items: [u32; 3],
    /// Work-group size in work-items per axis.
    pub workgroup_work_items: [u16; 3],
}

impl Geometry {
    /// Grid size in work-groups per axis, `ceil(grid / workgroup)`; an axis with a zero work-group
    /// size counts 0 work-groups.
    #[must_use]
    pub fn grid_workgroups(&self) -> [u32; 3] {
        core::array::from_fn(|i| {
            let wg = u32::from(self.workgroup_work_items[i]);
            if wg == 0 { 0 } else { self.grid_work_items[i].div_ceil(wg) }
        })
    }
}

/// LDS of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lds {
    /// Static LDS from the kernel (`group_segment_fixed_size`), bytes.
    pub static_bytes: u32,
    /// Dynamic LDS the launch asks for, bytes.
    pub dynamic_bytes: u32,
}

/// A device allocation as the recording process named it. Identities are only compared for
/// equality; the sequence hash renumbers them by first appearance, so they never enter a hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AllocationId(pub u32);

/// How a launch uses a byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Access {
    /// Loads only.
    Read,
    /// Stores only.
    Write,
    /// Loads and stores.
    ReadWrite,
}

impl Access {
    /// Whether the range may be loaded.
    #[must_use]
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// Whether the range may be stored.
    #[must_use]
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

/// One resolved effect: a byte range of one allocation and how the launch uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    /// The allocation.
    pub allocation: AllocationId,
    /// First byte, relative to the allocation's start.
    pub offset_bytes: u64,
    /// Length in bytes; at least 1 on a tape (a launch's checks refuse an empty effect).
    pub len_bytes: u64,
    /// Loads, stores or both.
    pub access: Access,
}

/// What a launch touches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Effects {
    /// Exactly these ranges (declared by the kernel and resolved against the launch's pointers).
    Known(Vec<Effect>),
    /// Not declared: the launch must be ordered against everything before and after it.
    Unknown,
}

/// A pointer argument of the kernarg blob, resolved to an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointerArg {
    /// Byte offset of the 8-byte pointer in the kernarg blob.
    pub kernarg_offset: u32,
    /// The allocation it points into.
    pub allocation: AllocationId,
    /// Its offset from the allocation's start, bytes.
    pub offset_bytes: u64,
}

/// One launch as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// Which code runs.
    pub artifact: ArtifactId,
    /// The exact kernarg blob, padded to the kernarg segment size, owned.
    pub kernarg: Vec<u8>,
    /// Grid and work-group sizes.
    pub geometry: Geometry,
    /// Static and dynamic LDS.
    pub lds: Lds,
    /// 32 or 64.
    pub wave_size: u8,
    /// Every pointer argument of the blob, resolved (sorted by `kernarg_offset`).
    pub pointers: Vec<PointerArg>,
    /// What the launch reads and writes.
    pub effects: Effects,
}
