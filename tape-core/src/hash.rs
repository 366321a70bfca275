//! The ordered sequence hash of a tape, and the canonical form of its allocations.
//!
//! # Definition (version 1)
//!
//! The sequence hash is SHA-256 (FIPS 180-4) over the concatenation of the bytes below. Every
//! integer is little-endian with the width given; nothing is padded or aligned.
//!
//! 1. The domain tag [`SEQUENCE_DOMAIN`]: the 24 ASCII bytes `redline.tape.sequence.v1` followed
//!    by one `0x00` (25 bytes).
//! 2. The number of launches, `u32`.
//! 3. For each launch, in tape order:
//!    1. `artifact.code_object_sha256`: the 32 digest bytes.
//!    2. `artifact.symbol`: its length in bytes as `u32`, then its UTF-8 bytes.
//!    3. `geometry.grid_work_items` x, y, z: 3 × `u32`.
//!    4. `geometry.workgroup_work_items` x, y, z: 3 × `u16`.
//!    5. `lds.static_bytes`, then `lds.dynamic_bytes`: 2 × `u32`.
//!    6. `wave_size`: `u8`.
//!    7. The kernarg blob: its length as `u32`, then its bytes with the 8 bytes of every pointer
//!       slot (each [`PointerArg::kernarg_offset`](crate::PointerArg)) replaced by `0x00`.
//!    8. The pointers: their number as `u32`, then for each pointer in kernarg-offset order
//!       `kernarg_offset` `u32`, the allocation's ordinal `u32` and `offset_bytes` `u64`
//!       (16 bytes per pointer).
//!    9. The effects: `Known` is the byte `0x00`, the number of effects as `u32`, then for each
//!       effect in recorded order the allocation's ordinal `u32`, `offset_bytes` `u64`,
//!       `len_bytes` `u64` and the access as one byte (`Read` = 0, `Write` = 1, `ReadWrite` = 2),
//!       21 bytes per effect; `Unknown` is the single byte `0x01`.
//!
//! An allocation's **ordinal** is its rank by first appearance in the tape: walking the launches
//! in order, and within a launch first its pointers in kernarg-offset order and then its `Known`
//! effects in order, the first allocation met is 0, the next one not met before is 1, and so on
//! ([`AllocationOrdinals`]).
//!
//! # What the hash does not depend on
//! - **Allocation ids and addresses.** Ids are replaced by ordinals and the address bytes of
//!   every pointer slot by zeros, so renumbering the allocations or placing them elsewhere, as
//!   another process or machine does, gives the same hash; which slots point into the same
//!   allocation, and where in it, still counts.
//! - **The decode position** the tape was recorded at, **its bindings** and **its external
//!   counts.** Bindings are calibration results attached after recording (re-running calibration
//!   must not change what was recorded), and external launches are not on the tape
//!   ([`TapeIdentity`](crate::tape::TapeIdentity) counts them separately). The kernarg bytes and
//!   grid of a launch *are* hashed, so a tape recorded at another position generally differs in
//!   its position-dependent words: the hash identifies one recording;
//!   [`stability`](crate::stability) compares recordings modulo bindings.
//!
//! Nothing else enters: no lengths of containers other than those listed, no serde encoding, no
//! map iteration order (the ordinal map is only looked up).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::record::{Access, AllocationId, Effects, LaunchRecord};

/// The domain-separation tag that starts every version-1 sequence hash.
pub const SEQUENCE_DOMAIN: &[u8; 25] = b"redline.tape.sequence.v1\0";

/// Hash-input tag of [`Effects::Known`].
const EFFECTS_KNOWN_TAG: u8 = 0;
/// Hash-input tag of [`Effects::Unknown`].
const EFFECTS_UNKNOWN_TAG: u8 = 1;
/// Bytes of one pointer slot in the kernarg blob.
const POINTER_SLOT_BYTES: usize = 8;

/// The hash-input byte of an access.
#[must_use]
pub fn access_code(access: Access) -> u8 {
    match access {
        Access::Read => 0,
        Access::Write => 1,
        Access::ReadWrite => 2,
    }
}

/// Allocation ordinals by first appearance, as the module documentation defines them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocationOrdinals {
    by_id: BTreeMap<AllocationId, u32>,
}

impl AllocationOrdinals {
    /// Numbers the allocations of `launches` by first appearance.
    #[must_use]
    pub fn of(launches: &[LaunchRecord]) -> Self {
        let mut ordinals = Self::default();
        for launch in launches {
            for pointer in &launch.pointers {
                ordinals.insert(pointer.allocation);
            }
            if let Effects::Known(effects) = &launch.effects {
                for effect in effects {
                    ordinals.insert(effect.allocation);
                }
            }
        }
        ordinals
    }

    fn insert(&mut self, id: AllocationId) {
        let next = self.by_id.len();
        // INVARIANT: a tape holds at most `TAPE_KERNARG_BYTES_MAX / 8` pointers and
        // `TAPE_LAUNCHES_MAX * EFFECTS_PER_LAUNCH_MAX` effects, far below `u32::MAX` allocations;
        // launches that are not a tape's saturate instead of wrapping.
        let next = u32::try_from(next).unwrap_or(u32::MAX);
        self.by_id.entry(id).or_insert(next);
    }

    /// The ordinal of `id`, if it appears in the launches these ordinals were computed from.
    #[must_use]
    pub fn get(&self, id: AllocationId) -> Option<u32> {
        self.by_id.get(&id).copied()
    }

    /// Number of distinct allocations.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no allocation appears.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The pointers of `launch` with allocations replaced by ordinals, in kernarg-offset order;
    /// `None` if one of its allocations is not numbered here.
    #[must_use]
    pub fn pointers(&self, launch: &LaunchRecord) -> Option<Vec<CanonicalPointer>> {
        launch
            .pointers
            .iter()
            .map(|p| {
                Some(CanonicalPointer {
                    kernarg_offset: p.kernarg_offset,
                    ordinal: self.get(p.allocation)?,
                    offset_bytes: p.offset_bytes,
                })
            })
            .collect()
    }

    /// The effects of `launch` with allocations replaced by ordinals; `None` if one of its
    /// allocations is not numbered here.
    #[must_use]
    pub fn effects(&self, launch: &LaunchRecord) -> Option<CanonicalEffects> {
        match &launch.effects {
            Effects::Unknown => Some(CanonicalEffects::Unknown),
            Effects::Known(effects) => effects
                .iter()
                .map(|e| {
                    Some(CanonicalEffect {
                        ordinal: self.get(e.allocation)?,
                        offset_bytes: e.offset_bytes,
                        len_bytes: e.len_bytes,
                        access: e.access,
                    })
                })
                .collect::<Option<Vec<_>>>()
                .map(CanonicalEffects::Known),
        }
    }
}

/// A pointer argument with its allocation replaced by the allocation's ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CanonicalPointer {
    /// Byte offset of the 8-byte slot in the kernarg blob.
    pub kernarg_offset: u32,
    /// The allocation's ordinal ([`AllocationOrdinals`]).
    pub ordinal: u32,
    /// Offset from the allocation's start, bytes.
    pub offset_bytes: u64,
}

/// An effect with its allocation replaced by the allocation's ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CanonicalEffect {
    /// The allocation's ordinal ([`AllocationOrdinals`]).
    pub ordinal: u32,
    /// First byte, relative to the allocation's start.
    pub offset_bytes: u64,
    /// Length in bytes.
    pub len_bytes: u64,
    /// Loads, stores or both.
    pub access: Access,
}

/// A launch's effects in canonical form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CanonicalEffects {
    /// Exactly these ranges, in recorded order.
    Known(Vec<CanonicalEffect>),
    /// Not declared.
    Unknown,
}

/// A length as the `u32` the definition writes.
///
/// PANIC: only called on launches that passed the tape's checks, whose symbols, kernarg blobs,
/// pointer lists, effect lists and launch counts are bounded far below `u32::MAX`.
fn len_u32(len: usize) -> u32 {
    u32::try_from(len).expect("INVARIANT: tape contents are bounded below u32::MAX")
}

/// The sequence hash of `launches` per the module documentation.
///
/// Call only on launches that passed [`check_launch`](crate::recorder::check_launch) (a
/// [`Tape`](crate::tape::Tape)'s): the definition presumes in-bounds pointer slots and bounded
/// lengths.
pub(crate) fn sequence_hash(launches: &[LaunchRecord]) -> [u8; 32] {
    let ordinals = AllocationOrdinals::of(launches);
    let mut hasher = Sha256::new();
    hasher.update(SEQUENCE_DOMAIN);
    hasher.update(len_u32(launches.len()).to_le_bytes());
    // One scratch buffer for the pointer-zeroed blobs: the allocation happens once per hash.
    let mut blob = Vec::new();
    for launch in launches {
        hash_launch(&mut hasher, &ordinals, launch, &mut blob);
    }
    hasher.finalize().into()
}

fn hash_launch(hasher: &mut Sha256, ordinals: &AllocationOrdinals, launch: &LaunchRecord, blob: &mut Vec<u8>) {
    hasher.update(launch.artifact.code_object_sha256);
    hasher.update(len_u32(launch.artifact.symbol.len()).to_le_bytes());
    hasher.update(launch.artifact.symbol.as_bytes());
    for axis in launch.geometry.grid_work_items {
        hasher.update(axis.to_le_bytes());
    }
    for axis in launch.geometry.workgroup_work_items {
        hasher.update(axis.to_le_bytes());
    }
    hasher.update(launch.lds.static_bytes.to_le_bytes());
    hasher.update(launch.lds.dynamic_bytes.to_le_bytes());
    hasher.update([launch.wave_size]);

    blob.clear();
    blob.extend_from_slice(&launch.kernarg);
    for pointer in &launch.pointers {
        let start = usize::try_from(pointer.kernarg_offset).unwrap_or(usize::MAX);
        // PANIC: `check_launch` proved every slot lies inside the blob.
        let slot = start.checked_add(POINTER_SLOT_BYTES).and_then(|end| blob.get_mut(start..end));
        slot.expect("INVARIANT: pointer slots lie inside the kernarg blob").fill(0);
    }
    hasher.update(len_u32(blob.len()).to_le_bytes());
    hasher.update(&blob[..]);

    hasher.update(len_u32(launch.pointers.len()).to_le_bytes());
    for pointer in &launch.pointers {
        // PANIC: `ordinals` was computed from the launches this one belongs to.
        let ordinal = ordinals.get(pointer.allocation).expect("INVARIANT: every allocation is numbered");
        hasher.update(pointer.kernarg_offset.to_le_bytes());
        hasher.update(ordinal.to_le_bytes());
        hasher.update(pointer.offset_bytes.to_le_bytes());
    }

    match &launch.effects {
        Effects::Unknown => hasher.update([EFFECTS_UNKNOWN_TAG]),
        Effects::Known(effects) => {
            hasher.update([EFFECTS_KNOWN_TAG]);
            hasher.update(len_u32(effects.len()).to_le_bytes());
            for effect in effects {
                let ordinal = ordinals.get(effect.allocation).expect("INVARIANT: every allocation is numbered");
                hasher.update(ordinal.to_le_bytes());
                hasher.update(effect.offset_bytes.to_le_bytes());
                hasher.update(effect.len_bytes.to_le_bytes());
                hasher.update([access_code(effect.access)]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ArtifactId, Effect, Geometry, Lds, PointerArg};
    use alloc::string::String;
    use alloc::vec;

    fn launch(pointers: &[(u32, u32)], effects: &[u32]) -> LaunchRecord {
        LaunchRecord {
            artifact: ArtifactId { code_object_sha256: [1; 32], symbol: String::from("k") },
            kernarg: vec![0xAA; 32],
            geometry: Geometry { grid_work_items: [64, 1, 1], workgroup_work_items: [64, 1, 1] },
            lds: Lds::default(),
            wave_size: 32,
            pointers: pointers
                .iter()
                .map(|&(kernarg_offset, id)| PointerArg {
                    kernarg_offset,
                    allocation: AllocationId(id),
                    offset_bytes: 0,
                })
                .collect(),
            effects: Effects::Known(
                effects
                    .iter()
                    .map(|&id| Effect {
                        allocation: AllocationId(id),
                        offset_bytes: 0,
                        len_bytes: 4,
                        access: Access::Read,
                    })
                    .collect(),
            ),
        }
    }

    #[test]
    fn ordinals_follow_first_appearance_pointers_before_effects() {
        let launches = [launch(&[(0, 40), (8, 30)], &[50, 40]), launch(&[(0, 30), (8, 10)], &[])];
        let o = AllocationOrdinals::of(&launches);
        assert_eq!(o.get(AllocationId(40)), Some(0));
        assert_eq!(o.get(AllocationId(30)), Some(1));
        assert_eq!(o.get(AllocationId(50)), Some(2));
        assert_eq!(o.get(AllocationId(10)), Some(3));
        assert_eq!(o.get(AllocationId(99)), None);
        assert_eq!(o.len(), 4);
        assert_eq!(
            o.pointers(&launches[1]),
            Some(vec![
                CanonicalPointer { kernarg_offset: 0, ordinal: 1, offset_bytes: 0 },
                CanonicalPointer { kernarg_offset: 8, ordinal: 3, offset_bytes: 0 },
            ])
        );
        assert_eq!(o.pointers(&launch(&[(0, 99)], &[])), None);
    }

    #[test]
    fn access_codes_are_distinct() {
        assert_eq!([Access::Read, Access::Write, Access::ReadWrite].map(access_code), [0, 1, 2]);
    }

    #[test]
    fn pointer_bytes_do_not_enter() {
        let a = launch(&[(0, 1)], &[]);
        let mut b = a.clone();
        b.kernarg[..8].copy_from_slice(&0x1234_5678_9abc_def0u64.to_le_bytes());
        assert_eq!(sequence_hash(core::slice::from_ref(&a)), sequence_hash(&[b]));
        let mut c = a.clone();
        c.kernarg[8] = 0;
        assert_ne!(sequence_hash(&[a]), sequence_hash(&[c]));
    }
}
