//! Kernarg segment layouts and the padded kernarg blob of one dispatch.
//!
//! A [`KernargLayout`] is a kernel's argument list checked once: every argument inside the
//! segment, in offset order without overlap, hidden arguments of their reference size and every
//! argument whose kind fixes its type aligned to it. [`KernargLayout::build`] then writes the
//! caller's explicit values and synthesises the hidden arguments a dispatch determines, from
//! `reference/amd-reference.md` §7 (".value_kind strings" and the v5 hidden-argument table):
//!
//! | value kind | value written |
//! |---|---|
//! | `hidden_block_count_{x,y,z}` | number of **full** work-groups: `grid_size / workgroup_size` (u32) |
//! | `hidden_group_size_{x,y,z}` | `workgroup_size` (u16) |
//! | `hidden_remainder_{x,y,z}` | size of the partial last work-group: `grid_size % workgroup_size`, 0 if none (u16) |
//! | `hidden_grid_dims` | `dims`, 1..=3 (u16) |
//! | `hidden_dynamic_lds_size` | `dynamic_lds_bytes` (u32) |
//! | every other hidden kind | zero |
//!
//! Unused dimensions have grid and work-group size 1 (AQL), hence block count 1, group size 1 and
//! remainder 0. The blob is exactly `kernarg_segment_size` bytes; padding is zero.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::metadata::{KernelMetadata, ValueKind};

/// Largest kernarg segment a layout accepts: 1 MiB. A documented bound on the blob allocation;
/// HIP's kernarg limit is a few KiB, far below it.
pub const KERNARG_SEGMENT_MAX_BYTES: u32 = 1 << 20;

/// One argument of a layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernargArg {
    /// Index in the metadata `.args` list.
    pub index: usize,
    /// `.name`, if the metadata has one.
    pub name: Option<String>,
    /// `.value_kind`.
    pub kind: ValueKind,
    /// Byte offset in the segment.
    pub offset: u32,
    /// Bytes.
    pub size: u32,
}

/// A checked kernarg layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernargLayout {
    segment_size: u32,
    segment_align: u32,
    /// INVARIANT: sorted by offset, non-overlapping, each `offset + size <= segment_size`.
    args: Vec<KernargArg>,
}

/// Why a kernel's metadata does not describe a usable kernarg layout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// `.kernarg_segment_size` above [`KERNARG_SEGMENT_MAX_BYTES`].
    #[error("kernarg segment of {size} bytes exceeds the {limit}-byte limit")]
    SegmentTooLarge {
        /// `.kernarg_segment_size`.
        size: u32,
        /// [`KERNARG_SEGMENT_MAX_BYTES`].
        limit: u32,
    },
    /// `.kernarg_segment_align` is not a power of two.
    #[error("kernarg segment alignment {align} is not a power of two")]
    SegmentAlign {
        /// `.kernarg_segment_align`.
        align: u32,
    },
    /// An argument reaching past the end of the segment.
    #[error("argument {index} at offset {offset} with size {size} ends past the {segment_size}-byte kernarg segment")]
    OutsideSegment {
        /// Argument index.
        index: usize,
        /// `.offset`.
        offset: u32,
        /// `.size`.
        size: u32,
        /// `.kernarg_segment_size`.
        segment_size: u32,
    },
    /// An argument starting before the previous one ends (unsorted or overlapping).
    #[error("argument {index} at offset {offset} starts before the previous argument ends at {previous_end}")]
    Overlap {
        /// Argument index.
        index: usize,
        /// `.offset`.
        offset: u32,
        /// End offset of argument `index - 1`.
        previous_end: u32,
    },
    /// An argument whose kind fixes its type, at an offset not aligned to that type.
    #[error("argument {index} ({kind}) at offset {offset} is not {align}-byte aligned")]
    Misaligned {
        /// Argument index.
        index: usize,
        /// `.value_kind`.
        kind: ValueKind,
        /// `.offset`.
        offset: u32,
        /// Required alignment.
        align: u32,
    },
    /// A hidden argument whose size differs from the reference's.
    #[error("argument {index} ({kind}) has size {size}, the reference says {expected}")]
    HiddenSize {
        /// Argument index.
        index: usize,
        /// `.value_kind`.
        kind: ValueKind,
        /// `.size`.
        size: u32,
        /// Size from reference §7.
        expected: u32,
    },
}

/// Why a dispatch geometry is not a valid AQL dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    /// `dims` outside 1..=3.
    #[error("grid dimensionality {dims} is not 1, 2 or 3")]
    Dims {
        /// The value given.
        dims: u8,
    },
    /// A zero work-group size.
    #[error("work-group size along axis {axis} is 0")]
    ZeroWorkgroupSize {
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
    },
    /// A zero grid size.
    #[error("grid size along axis {axis} is 0")]
    ZeroGridSize {
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
    },
    /// A dimension beyond `dims` whose grid or work-group size is not 1.
    #[error("axis {axis} is beyond the {dims}-D grid but has grid size {grid} and work-group size {workgroup}")]
    UnusedAxis {
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
        /// `dims`.
        dims: u8,
        /// Grid size along the axis.
        grid: u32,
        /// Work-group size along the axis.
        workgroup: u16,
    },
}

/// Why a kernarg blob could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// The dispatch geometry is invalid.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// Not one value per explicit argument.
    #[error("{found} explicit argument values for {expected} explicit arguments")]
    ArgCount {
        /// Explicit (non-hidden) arguments of the kernel.
        expected: usize,
        /// Values given.
        found: usize,
    },
    /// A value whose size differs from its argument's.
    #[error("explicit argument {explicit_index} (metadata argument {arg_index}{}) is {expected} bytes, value is {found}",
        name.as_deref().map(|n| alloc::format!(" `{n}`")).unwrap_or_default())]
    ArgSize {
        /// Position among the explicit values.
        explicit_index: usize,
        /// Index in the metadata `.args` list.
        arg_index: usize,
        /// `.name`, if any.
        name: Option<String>,
        /// `.size`.
        expected: u32,
        /// Size of the value given.
        found: usize,
    },
}

/// A typed explicit argument value, written little-endian.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A 64-bit device address.
    Pointer(u64),
    /// `u8`.
    U8(u8),
    /// `i8`.
    I8(i8),
    /// `u16`.
    U16(u16),
    /// `i16`.
    I16(i16),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `f32`.
    F32(f32),
    /// `u64`.
    U64(u64),
    /// `i64`.
    I64(i64),
    /// `f64`.
    F64(f64),
    /// Raw bytes (structs, vectors), already in device layout.
    Bytes(Vec<u8>),
}

impl ArgValue {
    /// The little-endian bytes of the value.
    #[must_use]
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            ArgValue::Pointer(v) | ArgValue::U64(v) => v.to_le_bytes().to_vec(),
            ArgValue::U8(v) => v.to_le_bytes().to_vec(),
            ArgValue::I8(v) => v.to_le_bytes().to_vec(),
            ArgValue::U16(v) => v.to_le_bytes().to_vec(),
            ArgValue::I16(v) => v.to_le_bytes().to_vec(),
            ArgValue::U32(v) => v.to_le_bytes().to_vec(),
            ArgValue::I32(v) => v.to_le_bytes().to_vec(),
            ArgValue::F32(v) => v.to_le_bytes().to_vec(),
            ArgValue::I64(v) => v.to_le_bytes().to_vec(),
            ArgValue::F64(v) => v.to_le_bytes().to_vec(),
            ArgValue::Bytes(b) => b.clone(),
        }
    }

    /// Size in bytes.
    #[must_use]
    pub fn size(&self) -> usize {
        match self {
            ArgValue::U8(_) | ArgValue::I8(_) => 1,
            ArgValue::U16(_) | ArgValue::I16(_) => 2,
            ArgValue::U32(_) | ArgValue::I32(_) | ArgValue::F32(_) => 4,
            ArgValue::Pointer(_) | ArgValue::U64(_) | ArgValue::I64(_) | ArgValue::F64(_) => 8,
            ArgValue::Bytes(b) => b.len(),
        }
    }
}

/// The launch shape the hidden arguments describe (the AQL dispatch packet's fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DispatchGeometry {
    /// Grid size in work-items, x, y, z.
    pub grid_size: [u32; 3],
    /// Work-group size in work-items, x, y, z.
    pub workgroup_size: [u16; 3],
    /// Dimensionality, 1..=3.
    pub dims: u8,
    /// Bytes of dynamically allocated LDS per work-group.
    pub dynamic_lds_bytes: u32,
}

impl DispatchGeometry {
    /// A 1-D dispatch of `grid` work-items in groups of `workgroup`, without dynamic LDS.
    #[must_use]
    pub const fn linear(grid: u32, workgroup: u16) -> Self {
        Self { grid_size: [grid, 1, 1], workgroup_size: [workgroup, 1, 1], dims: 1, dynamic_lds_bytes: 0 }
    }

    /// Checks `dims`, non-zero sizes and size 1 along unused axes.
    ///
    /// # Errors
    /// [`GeometryError`] naming the first offending axis.
    pub fn validate(&self) -> Result<(), GeometryError> {
        if !(1..=3).contains(&self.dims) {
            return Err(GeometryError::Dims { dims: self.dims });
        }
        for axis in 0..3 {
            let (grid, workgroup) = (self.grid_size[axis], self.workgroup_size[axis]);
            if usize::from(self.dims) <= axis {
                if grid != 1 || workgroup != 1 {
                    return Err(GeometryError::UnusedAxis { axis, dims: self.dims, grid, workgroup });
                }
            } else if workgroup == 0 {
                return Err(GeometryError::ZeroWorkgroupSize { axis });
            } else if grid == 0 {
                return Err(GeometryError::ZeroGridSize { axis });
            }
        }
        Ok(())
    }

    /// Full work-groups per axis (`hidden_block_count_*`). Call after [`validate`](Self::validate);
    /// a zero work-group size counts as 0 groups.
    #[must_use]
    pub fn block_count(&self) -> [u32; 3] {
        core::array::from_fn(|i| self.grid_size[i].checked_div(u32::from(self.workgroup_size[i])).unwrap_or(0))
    }

    /// Size of the partial last work-group per axis, 0 if none (`hidden_remainder_*`).
    #[must_use]
    pub fn remainder(&self) -> [u16; 3] {
        core::array::from_fn(|i| {
            let r = self.grid_size[i].checked_rem(u32::from(self.workgroup_size[i])).unwrap_or(0);
            // INVARIANT: r < workgroup_size[i] <= u16::MAX.
            u16::try_from(r).unwrap_or(u16::MAX)
        })
    }
}

/// Size of a hidden argument per reference §7's v5 table; `None` where it does not fix one.
#[must_use]
pub fn hidden_size(kind: &ValueKind) -> Option<u32> {
    use ValueKind as K;
    Some(match kind {
        K::HiddenBlockCountX | K::HiddenBlockCountY | K::HiddenBlockCountZ => 4,
        K::HiddenGroupSizeX | K::HiddenGroupSizeY | K::HiddenGroupSizeZ => 2,
        K::HiddenRemainderX | K::HiddenRemainderY | K::HiddenRemainderZ => 2,
        K::HiddenGridDims => 2,
        K::HiddenDynamicLdsSize | K::HiddenPrivateBase | K::HiddenSharedBase => 4,
        K::HiddenGlobalOffsetX | K::HiddenGlobalOffsetY | K::HiddenGlobalOffsetZ => 8,
        K::HiddenPrintfBuffer
        | K::HiddenHostcallBuffer
        | K::HiddenMultigridSyncArg
        | K::HiddenHeapV1
        | K::HiddenDefaultQueue
        | K::HiddenCompletionAction
        | K::HiddenQueuePtr => 8,
        _ => return None,
    })
}

impl KernargArg {
    /// The alignment the argument's offset must have ([`KernargLayout::new`] checks it): the
    /// natural alignment of its size, at most 8, for kinds with a fixed scalar or pointer type; 1
    /// for `by_value` arguments and unknown kinds.
    #[must_use]
    pub fn required_align(&self) -> u32 {
        required_align(&self.kind, self.size)
    }
}

/// Alignment an argument's offset must have. Kinds with a fixed scalar or pointer type use the
/// natural alignment of their size (largest power of two dividing it, at most 8). `by_value`
/// arguments and unknown kinds get 1: a by-value struct's alignment is its members', not its
/// size's (clang-19 puts a 2-byte `struct { char a, b; }` at offset 1).
fn required_align(kind: &ValueKind, size: u32) -> u32 {
    match kind {
        ValueKind::ByValue | ValueKind::Unknown(_) => 1,
        _ if size == 0 => 1,
        _ => (1u32 << size.trailing_zeros()).min(8),
    }
}

impl KernargLayout {
    /// Checks a kernel's argument list.
    ///
    /// # Errors
    /// [`LayoutError`] for a segment above the limit, a non-power-of-two segment alignment, an
    /// argument outside the segment, unsorted or overlapping arguments, a misaligned typed
    /// argument, or a hidden argument of the wrong size.
    pub fn new(metadata: &KernelMetadata) -> Result<Self, LayoutError> {
        let (segment_size, segment_align) = (metadata.kernarg_segment_size, metadata.kernarg_segment_align);
        if segment_size > KERNARG_SEGMENT_MAX_BYTES {
            return Err(LayoutError::SegmentTooLarge { size: segment_size, limit: KERNARG_SEGMENT_MAX_BYTES });
        }
        if !segment_align.is_power_of_two() {
            return Err(LayoutError::SegmentAlign { align: segment_align });
        }
        let mut previous_end = 0u32;
        let mut args = Vec::with_capacity(metadata.args.len());
        for (index, a) in metadata.args.iter().enumerate() {
            let (offset, size) = (a.offset, a.size);
            let end = offset.checked_add(size).filter(|&e| e <= segment_size).ok_or(LayoutError::OutsideSegment {
                index,
                offset,
                size,
                segment_size,
            })?;
            if offset < previous_end {
                return Err(LayoutError::Overlap { index, offset, previous_end });
            }
            if let Some(expected) = hidden_size(&a.value_kind).filter(|&e| e != size) {
                return Err(LayoutError::HiddenSize { index, kind: a.value_kind.clone(), size, expected });
            }
            let align = required_align(&a.value_kind, size);
            if !offset.is_multiple_of(align) {
                return Err(LayoutError::Misaligned { index, kind: a.value_kind.clone(), offset, align });
            }
            previous_end = end;
            args.push(KernargArg { index, name: a.name.clone(), kind: a.value_kind.clone(), offset, size });
        }
        Ok(Self { segment_size, segment_align, args })
    }

    /// `.kernarg_segment_size`: the blob length.
    #[must_use]
    pub fn segment_size(&self) -> u32 {
        self.segment_size
    }

    /// `.kernarg_segment_align`.
    #[must_use]
    pub fn segment_align(&self) -> u32 {
        self.segment_align
    }

    /// Every argument, in offset order.
    #[must_use]
    pub fn args(&self) -> &[KernargArg] {
        &self.args
    }

    /// The arguments the caller supplies (every kind not spelled `hidden_*`), in offset order.
    pub fn explicit_args(&self) -> impl Iterator<Item = &KernargArg> {
        self.args.iter().filter(|a| !a.kind.is_hidden())
    }

    /// Offset of the first argument of `kind`, if the kernel has one.
    #[must_use]
    pub fn offset_of(&self, kind: &ValueKind) -> Option<u32> {
        self.args.iter().find(|a| &a.kind == kind).map(|a| a.offset)
    }

    /// Builds the kernarg blob of one dispatch: `explicit` values in explicit-argument order, the
    /// hidden arguments synthesised from `geometry` (see the module table), zero elsewhere.
    ///
    /// # Errors
    /// [`BlobError`] for an invalid geometry, a wrong number of values, or a value whose size is
    /// not its argument's.
    pub fn build(&self, explicit: &[ArgValue], geometry: &DispatchGeometry) -> Result<Vec<u8>, BlobError> {
        geometry.validate()?;
        let expected = self.explicit_args().count();
        if explicit.len() != expected {
            return Err(BlobError::ArgCount { expected, found: explicit.len() });
        }
        // CAST: u32 to usize is lossless on every supported target; bounded by
        // KERNARG_SEGMENT_MAX_BYTES at construction.
        let mut blob = vec![0u8; self.segment_size as usize];
        for (explicit_index, (arg, value)) in self.explicit_args().zip(explicit).enumerate() {
            let bytes = value.to_le_bytes();
            if bytes.len() != arg.size as usize {
                return Err(BlobError::ArgSize {
                    explicit_index,
                    arg_index: arg.index,
                    name: arg.name.clone(),
                    expected: arg.size,
                    found: bytes.len(),
                });
            }
            put(&mut blob, arg.offset, &bytes);
        }
        let (blocks, remainder) = (geometry.block_count(), geometry.remainder());
        for arg in self.args.iter().filter(|a| a.kind.is_hidden()) {
            use ValueKind as K;
            // INVARIANT: `new` checked each of these kinds has its reference size, so every
            // write below is exactly the argument's bytes.
            match arg.kind {
                K::HiddenBlockCountX => put(&mut blob, arg.offset, &blocks[0].to_le_bytes()),
                K::HiddenBlockCountY => put(&mut blob, arg.offset, &blocks[1].to_le_bytes()),
                K::HiddenBlockCountZ => put(&mut blob, arg.offset, &blocks[2].to_le_bytes()),
                K::HiddenGroupSizeX => put(&mut blob, arg.offset, &geometry.workgroup_size[0].to_le_bytes()),
                K::HiddenGroupSizeY => put(&mut blob, arg.offset, &geometry.workgroup_size[1].to_le_bytes()),
                K::HiddenGroupSizeZ => put(&mut blob, arg.offset, &geometry.workgroup_size[2].to_le_bytes()),
                K::HiddenRemainderX => put(&mut blob, arg.offset, &remainder[0].to_le_bytes()),
                K::HiddenRemainderY => put(&mut blob, arg.offset, &remainder[1].to_le_bytes()),
                K::HiddenRemainderZ => put(&mut blob, arg.offset, &remainder[2].to_le_bytes()),
                K::HiddenGridDims => put(&mut blob, arg.offset, &u16::from(geometry.dims).to_le_bytes()),
                K::HiddenDynamicLdsSize => put(&mut blob, arg.offset, &geometry.dynamic_lds_bytes.to_le_bytes()),
                // Every other hidden kind stays zero.
                _ => {}
            }
        }
        Ok(blob)
    }
}

/// Writes `bytes` at `offset`.
///
/// PANIC: callers pass an argument's offset and a value of its size; `KernargLayout::new` checked
/// `offset + size <= segment_size`, the blob's length.
fn put(blob: &mut [u8], offset: u32, bytes: &[u8]) {
    let start = offset as usize;
    blob[start..start + bytes.len()].copy_from_slice(bytes);
}

#[cfg(test)]
mod tests;
