//! One kernel launch as the device sees it: the kernarg bytes and the dispatch geometry, and
//! typed reads of its arguments at the offsets of the kernel's signature ([`ArgRead`]).

use crate::signature::ArgDecl;

/// A kernel launch: exactly what an AQL kernel-dispatch packet (or a PM4 dispatch) gives the
/// kernel, with the kernarg segment already read from device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch<'a> {
    /// The kernarg segment: explicit arguments at their metadata offsets, hidden arguments after.
    pub kernarg: &'a [u8],
    /// Grid size in work-items per dimension, as in the AQL packet (not in work-groups).
    pub grid_size: [u32; 3],
    /// Work-group size in work-items per dimension.
    pub workgroup_size: [u16; 3],
    /// Dynamic group-segment (LDS) bytes the dispatch provides on top of the kernel's static LDS.
    pub dynamic_lds_bytes: u32,
}

impl Launch<'_> {
    /// Work-groups in x: `ceil(grid_size[0] / workgroup_size[0])`, the last one possibly partial.
    /// `None` when the work-group size in x is 0.
    #[must_use]
    pub fn workgroup_count_x(&self) -> Option<u32> {
        let grid = self.grid_size[0];
        let group = u32::from(self.workgroup_size[0]);
        (group != 0).then(|| grid.div_ceil(group))
    }
}

/// A kernarg read outside the segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KernargError {
    /// `[offset, offset + size)` is not inside the `len`-byte segment.
    #[error("kernarg read of {size} bytes at offset {offset} is outside the {len}-byte segment")]
    OutOfRange {
        /// Offset of the read.
        offset: usize,
        /// Bytes read.
        size: usize,
        /// Length of the kernarg segment.
        len: usize,
    },
}

/// The `N` bytes at `offset`.
fn bytes_at<const N: usize>(kernarg: &[u8], offset: usize) -> Result<[u8; N], KernargError> {
    kernarg.get(offset..).and_then(<[u8]>::first_chunk::<N>).copied().ok_or(KernargError::OutOfRange {
        offset,
        size: N,
        len: kernarg.len(),
    })
}

/// The little-endian `u16` at `offset` (hidden group sizes are 16-bit).
///
/// # Errors
/// [`KernargError::OutOfRange`] when the two bytes are not all inside `kernarg`.
pub fn read_u16(kernarg: &[u8], offset: usize) -> Result<u16, KernargError> {
    bytes_at(kernarg, offset).map(u16::from_le_bytes)
}

/// The little-endian `u32` at `offset`.
///
/// # Errors
/// [`KernargError::OutOfRange`] when the four bytes are not all inside `kernarg`.
pub fn read_u32(kernarg: &[u8], offset: usize) -> Result<u32, KernargError> {
    bytes_at(kernarg, offset).map(u32::from_le_bytes)
}

/// The little-endian `f32` at `offset`, bit for bit.
///
/// # Errors
/// [`KernargError::OutOfRange`] when the four bytes are not all inside `kernarg`.
pub fn read_f32(kernarg: &[u8], offset: usize) -> Result<f32, KernargError> {
    read_u32(kernarg, offset).map(f32::from_bits)
}

/// The little-endian 64-bit device address at `offset`.
///
/// # Errors
/// [`KernargError::OutOfRange`] when the eight bytes are not all inside `kernarg`.
pub fn read_ptr(kernarg: &[u8], offset: usize) -> Result<u64, KernargError> {
    bytes_at(kernarg, offset).map(u64::from_le_bytes)
}

/// Reads of one explicit argument ([`ArgDecl`], from the kernel's signature) out of a kernarg
/// segment.
pub trait ArgRead {
    /// This argument read from `kernarg` as a device address.
    ///
    /// # Errors
    /// [`KernargError::OutOfRange`] when the kernarg segment is too short.
    fn read_ptr(&self, kernarg: &[u8]) -> Result<u64, KernargError>;

    /// This argument read from `kernarg` as a `u32`.
    ///
    /// # Errors
    /// [`KernargError::OutOfRange`] when the kernarg segment is too short.
    fn read_u32(&self, kernarg: &[u8]) -> Result<u32, KernargError>;

    /// This argument read from `kernarg` as an `f32`, bit for bit.
    ///
    /// # Errors
    /// [`KernargError::OutOfRange`] when the kernarg segment is too short.
    fn read_f32(&self, kernarg: &[u8]) -> Result<f32, KernargError>;
}

impl ArgRead for ArgDecl {
    fn read_ptr(&self, kernarg: &[u8]) -> Result<u64, KernargError> {
        read_ptr(kernarg, self.offset)
    }

    fn read_u32(&self, kernarg: &[u8]) -> Result<u32, KernargError> {
        read_u32(kernarg, self.offset)
    }

    fn read_f32(&self, kernarg: &[u8]) -> Result<f32, KernargError> {
        read_f32(kernarg, self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_values_in_range() {
        let k = [0x00, 0x10, 0, 0, 0, 0, 0, 0x7f, 0x00, 0x00, 0xc0, 0x3f, 0x2a, 0, 0, 0];
        assert_eq!(read_ptr(&k, 0), Ok(0x7f00_0000_0000_1000));
        assert_eq!(read_f32(&k, 8), Ok(1.5));
        assert_eq!(read_u32(&k, 12), Ok(42));
        assert_eq!(read_u16(&k, 14), Ok(0));
    }

    #[test]
    fn out_of_range_reads_are_errors() {
        let k = [0u8; 16];
        assert_eq!(read_u32(&k, 13), Err(KernargError::OutOfRange { offset: 13, size: 4, len: 16 }));
        assert_eq!(read_ptr(&k, 9), Err(KernargError::OutOfRange { offset: 9, size: 8, len: 16 }));
        assert_eq!(read_u16(&k, usize::MAX), Err(KernargError::OutOfRange { offset: usize::MAX, size: 2, len: 16 }));
        assert_eq!(read_u32(&[], 0), Err(KernargError::OutOfRange { offset: 0, size: 4, len: 0 }));
    }

    #[test]
    fn workgroup_count_rounds_up() {
        let mut l = Launch { kernarg: &[], grid_size: [1000, 1, 1], workgroup_size: [256, 1, 1], dynamic_lds_bytes: 0 };
        assert_eq!(l.workgroup_count_x(), Some(4));
        l.grid_size[0] = u32::MAX;
        l.workgroup_size[0] = 2;
        assert_eq!(l.workgroup_count_x(), Some(1 << 31));
        l.workgroup_size[0] = 0;
        assert_eq!(l.workgroup_count_x(), None);
    }

    #[test]
    fn arguments_read_at_their_signature_offsets() {
        let k = [0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x80, 0x3f, 7, 0, 0, 0];
        assert_eq!(crate::signature::fill::OUT.read_ptr(&k), Ok(0x1000));
        assert_eq!(crate::signature::fill::VALUE.read_f32(&k), Ok(1.0));
        assert_eq!(crate::signature::fill::N.read_u32(&k), Ok(7));
        assert_eq!(
            crate::signature::fill::N.read_u32(&k[..15]),
            Err(KernargError::OutOfRange { offset: 12, size: 4, len: 15 })
        );
    }
}
