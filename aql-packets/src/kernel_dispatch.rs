//! `hsa_kernel_dispatch_packet_t`: launch a kernel.
//!
//! Layout: `reference/amd-reference.md` §5 "hsa_kernel_dispatch_packet_t" (offsetof() against the
//! HSA headers, large model: `kernarg_address` is a full 64-bit address).

use core::mem::offset_of;

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::decode::DecodeError;
use crate::header::{Dimensions, Header, PacketControl, PacketType};

/// The 64-byte kernel dispatch packet, as it sits in a queue slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct KernelDispatchPacket {
    /// AQL header; `TYPE` = [`PacketType::KernelDispatch`].
    pub header: U16,
    /// `DIMENSIONS` `[1:0]`, the rest reserved.
    pub setup: U16,
    /// Work-items per work-group, x.
    pub workgroup_size_x: U16,
    /// Work-items per work-group, y.
    pub workgroup_size_y: U16,
    /// Work-items per work-group, z.
    pub workgroup_size_z: U16,
    /// Reserved, 0.
    pub reserved0: U16,
    /// Grid size in work-items, x.
    pub grid_size_x: U32,
    /// Grid size in work-items, y.
    pub grid_size_y: U32,
    /// Grid size in work-items, z.
    pub grid_size_z: U32,
    /// Private (scratch) bytes per work-item.
    pub private_segment_size: U32,
    /// Group segment (LDS) bytes per work-group.
    pub group_segment_size: U32,
    /// Address of the kernel descriptor.
    pub kernel_object: U64,
    /// Address of the kernel arguments.
    pub kernarg_address: U64,
    /// Reserved, 0.
    pub reserved2: U64,
    /// `hsa_signal_t` handle signalled on completion; 0 = none.
    pub completion_signal: U64,
}

// Reference §5 "hsa_kernel_dispatch_packet_t".
assert_eq_size!(KernelDispatchPacket, [u8; 64]);
// Little-endian field types are byte arrays: the struct views any byte buffer. The ring keeps
// slots 64-byte aligned.
assert_eq_align!(KernelDispatchPacket, u8);
const_assert_eq!(offset_of!(KernelDispatchPacket, header), 0);
const_assert_eq!(offset_of!(KernelDispatchPacket, setup), 2);
const_assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_x), 4);
const_assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_y), 6);
const_assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_z), 8);
const_assert_eq!(offset_of!(KernelDispatchPacket, reserved0), 10);
const_assert_eq!(offset_of!(KernelDispatchPacket, grid_size_x), 12);
const_assert_eq!(offset_of!(KernelDispatchPacket, grid_size_y), 16);
const_assert_eq!(offset_of!(KernelDispatchPacket, grid_size_z), 20);
const_assert_eq!(offset_of!(KernelDispatchPacket, private_segment_size), 24);
const_assert_eq!(offset_of!(KernelDispatchPacket, group_segment_size), 28);
const_assert_eq!(offset_of!(KernelDispatchPacket, kernel_object), 32);
const_assert_eq!(offset_of!(KernelDispatchPacket, kernarg_address), 40);
const_assert_eq!(offset_of!(KernelDispatchPacket, reserved2), 48);
const_assert_eq!(offset_of!(KernelDispatchPacket, completion_signal), 56);

crate::packet_bytes!(KernelDispatchPacket);

/// Kernel descriptors are 64-byte aligned (reference §6 "Kernel descriptor").
pub const KERNEL_OBJECT_ALIGN: u64 = 64;

/// A kernel dispatch with typed fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelDispatch {
    /// Barrier bit and fence scopes.
    pub control: PacketControl,
    /// Grid dimensions used.
    pub dimensions: Dimensions,
    /// Work-items per work-group, x, y, z.
    pub workgroup_size: [u16; 3],
    /// Grid size in work-items, x, y, z.
    pub grid_size: [u32; 3],
    /// Private (scratch) bytes per work-item.
    pub private_segment_size: u32,
    /// Group segment (LDS) bytes per work-group.
    pub group_segment_size: u32,
    /// Address of the kernel descriptor.
    pub kernel_object: u64,
    /// Address of the kernel arguments.
    pub kernarg_address: u64,
    /// Completion signal handle; 0 = none.
    pub completion_signal: u64,
}

/// Why a [`KernelDispatch`] cannot be built into a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KernelDispatchError {
    /// A work-group size is 0 (unused dimensions are 1, not 0).
    #[error("work-group size {axis} is 0")]
    ZeroWorkgroupSize {
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
    },
    /// A grid size is 0 (unused dimensions are 1, not 0).
    #[error("grid size {axis} is 0")]
    ZeroGridSize {
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
    },
    /// The kernel object is null or not aligned like a kernel descriptor.
    #[error("kernel object {address:#x} is not a non-null {align}-byte aligned address")]
    KernelObject {
        /// The address given.
        address: u64,
        /// The required alignment.
        align: u64,
    },
}

impl KernelDispatch {
    /// Checks what the packet processor cannot do anything sensible with.
    ///
    /// # Errors
    /// [`KernelDispatchError`] for a zero work-group or grid size, or a null or misaligned
    /// kernel object.
    pub fn validate(&self) -> Result<(), KernelDispatchError> {
        if let Some(axis) = self.workgroup_size.iter().position(|&s| s == 0) {
            return Err(KernelDispatchError::ZeroWorkgroupSize { axis });
        }
        if let Some(axis) = self.grid_size.iter().position(|&s| s == 0) {
            return Err(KernelDispatchError::ZeroGridSize { axis });
        }
        if self.kernel_object == 0 || !self.kernel_object.is_multiple_of(KERNEL_OBJECT_ALIGN) {
            return Err(KernelDispatchError::KernelObject { address: self.kernel_object, align: KERNEL_OBJECT_ALIGN });
        }
        Ok(())
    }

    /// The packet, without [`KernelDispatch::validate`]: any typed value has an encoding, and
    /// [`KernelDispatchPacket::parse`] reads it back unchanged.
    #[must_use]
    pub fn emit(&self) -> KernelDispatchPacket {
        let [wx, wy, wz] = self.workgroup_size;
        let [gx, gy, gz] = self.grid_size;
        KernelDispatchPacket {
            header: U16::new(Header::new(PacketType::KernelDispatch, self.control).encode()),
            setup: U16::new(self.dimensions.to_setup()),
            workgroup_size_x: U16::new(wx),
            workgroup_size_y: U16::new(wy),
            workgroup_size_z: U16::new(wz),
            reserved0: U16::ZERO,
            grid_size_x: U32::new(gx),
            grid_size_y: U32::new(gy),
            grid_size_z: U32::new(gz),
            private_segment_size: U32::new(self.private_segment_size),
            group_segment_size: U32::new(self.group_segment_size),
            kernel_object: U64::new(self.kernel_object),
            kernarg_address: U64::new(self.kernarg_address),
            reserved2: U64::ZERO,
            completion_signal: U64::new(self.completion_signal),
        }
    }
}

impl KernelDispatchPacket {
    /// A validated kernel dispatch packet.
    ///
    /// # Errors
    /// [`KernelDispatchError`] from [`KernelDispatch::validate`].
    pub fn new(dispatch: &KernelDispatch) -> Result<Self, KernelDispatchError> {
        dispatch.validate()?;
        Ok(dispatch.emit())
    }

    /// Reads the typed fields.
    ///
    /// # Errors
    /// [`DecodeError`] for an invalid header, a header of another type, an invalid `setup` or a
    /// non-zero reserved field.
    pub fn parse(&self) -> Result<KernelDispatch, DecodeError> {
        let header = Header::decode(self.header.get())?;
        DecodeError::expect_type(header, PacketType::KernelDispatch)?;
        let dimensions = Dimensions::from_setup(self.setup.get())?;
        DecodeError::reserved("reserved0", offset_of!(KernelDispatchPacket, reserved0), self.reserved0.get().into())?;
        DecodeError::reserved("reserved2", offset_of!(KernelDispatchPacket, reserved2), self.reserved2.get())?;
        Ok(KernelDispatch {
            control: header.control,
            dimensions,
            workgroup_size: [self.workgroup_size_x.get(), self.workgroup_size_y.get(), self.workgroup_size_z.get()],
            grid_size: [self.grid_size_x.get(), self.grid_size_y.get(), self.grid_size_z.get()],
            private_segment_size: self.private_segment_size.get(),
            group_segment_size: self.group_segment_size.get(),
            kernel_object: self.kernel_object.get(),
            kernarg_address: self.kernarg_address.get(),
            completion_signal: self.completion_signal.get(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{FenceScope, HeaderError, SetupError};

    fn dispatch() -> KernelDispatch {
        KernelDispatch {
            control: PacketControl::SYSTEM_BARRIER,
            dimensions: Dimensions::Three,
            workgroup_size: [64, 2, 1],
            grid_size: [0x1000, 0x20, 3],
            private_segment_size: 0x10,
            group_segment_size: 0x800,
            kernel_object: 0x7F00_1234_5600,
            kernarg_address: 0x7F00_0000_1000,
            completion_signal: 0xDEAD_BEEF_0000_0001,
        }
    }

    // Laid out by hand from the §5 offsets; header 0x1502 = type 2 | barrier | system | system.
    #[rustfmt::skip]
    const BYTES: [u8; 64] = [
        0x02, 0x15, 0x03, 0x00, 0x40, 0x00, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, // header..reserved0
        0x00, 0x10, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, // grid x, y, z
        0x10, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00,                         // private, group
        0x00, 0x56, 0x34, 0x12, 0x00, 0x7F, 0x00, 0x00,                         // kernel_object
        0x00, 0x10, 0x00, 0x00, 0x00, 0x7F, 0x00, 0x00,                         // kernarg_address
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                         // reserved2
        0x01, 0x00, 0x00, 0x00, 0xEF, 0xBE, 0xAD, 0xDE,                         // completion_signal
    ];

    #[test]
    fn emits_literal_bytes() {
        let packet = KernelDispatchPacket::new(&dispatch()).unwrap();
        assert_eq!(packet.as_array(), &BYTES);
        assert_eq!(packet.header_word(), 0x0003_1502);
    }

    #[test]
    fn parses_literal_bytes() {
        assert_eq!(KernelDispatchPacket::from_array(&BYTES).parse(), Ok(dispatch()));
    }

    #[test]
    fn rejects_bad_fields() {
        let mut bytes = BYTES;
        bytes[2] = 0x00;
        let p = KernelDispatchPacket::from_array(&bytes);
        assert_eq!(p.parse(), Err(SetupError::InvalidDimensions { dimensions: 0 }.into()));
        let mut bytes = BYTES;
        bytes[10] = 0x01;
        let p = KernelDispatchPacket::from_array(&bytes);
        assert_eq!(p.parse(), Err(DecodeError::Reserved { field: "reserved0", offset: 10, value: 1 }));
        let mut bytes = BYTES;
        bytes[55] = 0x80;
        let p = KernelDispatchPacket::from_array(&bytes);
        assert_eq!(
            p.parse(),
            Err(DecodeError::Reserved { field: "reserved2", offset: 48, value: 0x8000_0000_0000_0000 })
        );
        let mut bytes = BYTES;
        bytes[1] = 0x1D; // set bit 11: release scope 2 -> 3
        let p = KernelDispatchPacket::from_array(&bytes);
        assert_eq!(p.parse(), Err(HeaderError::InvalidFenceScope { field: "SCRELEASE_FENCE_SCOPE", value: 3 }.into()));
    }

    #[test]
    fn validates() {
        let mut d = dispatch();
        d.workgroup_size[1] = 0;
        assert_eq!(KernelDispatchPacket::new(&d), Err(KernelDispatchError::ZeroWorkgroupSize { axis: 1 }));
        let mut d = dispatch();
        d.grid_size[2] = 0;
        assert_eq!(KernelDispatchPacket::new(&d), Err(KernelDispatchError::ZeroGridSize { axis: 2 }));
        let mut d = dispatch();
        d.kernel_object += 0x20;
        assert_eq!(
            KernelDispatchPacket::new(&d),
            Err(KernelDispatchError::KernelObject { address: 0x7F00_1234_5620, align: 64 })
        );
        d.kernel_object = 0;
        assert!(KernelDispatchPacket::new(&d).is_err());
        let d = KernelDispatch { control: PacketControl { acquire: FenceScope::Agent, ..d.control }, ..dispatch() };
        assert!(KernelDispatchPacket::new(&d).is_ok());
    }
}
