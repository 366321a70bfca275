//! The 64-byte kernel descriptor (`<kernel>.kd`) and its typed words.
//!
//! Layout and fields: `reference/amd-reference.md` §6 "Kernel descriptor" and §3 "Kernel-descriptor
//! view of RSRC1/2/3". RSRC1/2/3 are typed with `pm4-encoding`'s per-family register words; the
//! bits a descriptor must leave zero are per-family facts in `crate::family`.

use alloc::vec::Vec;
use core::mem::offset_of;

use pm4_encoding::Family;
pub use pm4_encoding::regs::{Rsrc1, Rsrc2, Rsrc3};
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{I64, U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::family::{RSRC1_ZERO_COMMON, RSRC2_ZERO_COMMON};
use pm4_encoding::family::ZeroBits;

/// Size of a kernel descriptor in bytes (reference §6).
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;
/// Alignment of a kernel descriptor's address (reference §6).
pub const KERNEL_DESCRIPTOR_ALIGN: u64 = 64;
/// Alignment of a kernel's entry address (reference §6, `kernel_code_entry_byte_offset`).
pub const KERNEL_CODE_ENTRY_ALIGN: u64 = 256;

/// The kernel descriptor as it sits in the code object (little-endian fields, no padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct KernelDescriptor {
    /// Bytes of static LDS.
    pub group_segment_fixed_size: U32,
    /// Bytes of scratch per work-item.
    pub private_segment_fixed_size: U32,
    /// Bytes of kernarg memory; 0 = unspecified.
    pub kernarg_size: U32,
    /// Reserved, 0.
    pub reserved0: [u8; 4],
    /// Signed byte offset from the descriptor to the kernel entry.
    pub kernel_code_entry_byte_offset: I64,
    /// Reserved, 0.
    pub reserved1: [u8; 20],
    /// `COMPUTE_PGM_RSRC3`.
    pub compute_pgm_rsrc3: U32,
    /// `COMPUTE_PGM_RSRC1`.
    pub compute_pgm_rsrc1: U32,
    /// `COMPUTE_PGM_RSRC2`.
    pub compute_pgm_rsrc2: U32,
    /// See [`KernelCodeProperties`].
    pub kernel_code_properties: U16,
    /// See [`KernargPreload`].
    pub kernarg_preload: U16,
    /// Reserved, 0.
    pub reserved3: [u8; 4],
}

// Reference §6 "Kernel descriptor" offset table.
assert_eq_size!(KernelDescriptor, [u8; KERNEL_DESCRIPTOR_SIZE]);
// Little-endian field types are byte arrays, so the struct views bytes at any address.
assert_eq_align!(KernelDescriptor, u8);
const_assert_eq!(offset_of!(KernelDescriptor, group_segment_fixed_size), 0);
const_assert_eq!(offset_of!(KernelDescriptor, private_segment_fixed_size), 4);
const_assert_eq!(offset_of!(KernelDescriptor, kernarg_size), 8);
const_assert_eq!(offset_of!(KernelDescriptor, reserved0), 12);
const_assert_eq!(offset_of!(KernelDescriptor, kernel_code_entry_byte_offset), 16);
const_assert_eq!(offset_of!(KernelDescriptor, reserved1), 24);
const_assert_eq!(offset_of!(KernelDescriptor, compute_pgm_rsrc3), 44);
const_assert_eq!(offset_of!(KernelDescriptor, compute_pgm_rsrc1), 48);
const_assert_eq!(offset_of!(KernelDescriptor, compute_pgm_rsrc2), 52);
const_assert_eq!(offset_of!(KernelDescriptor, kernel_code_properties), 56);
const_assert_eq!(offset_of!(KernelDescriptor, kernarg_preload), 58);
const_assert_eq!(offset_of!(KernelDescriptor, reserved3), 60);

/// A byte slice that is not exactly one descriptor long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("kernel descriptor is {found} bytes, expected {expected}")]
pub struct DescriptorSizeError {
    /// Bytes given.
    pub found: usize,
    /// [`KERNEL_DESCRIPTOR_SIZE`].
    pub expected: usize,
}

pm4_encoding::bitfield32! {
    /// `kernel_code_properties` (u16 at offset 56, zero-extended; reference §6).
    pub struct KernelCodeProperties {
        /// 4 user SGPRs: the private segment buffer V#.
        [0] enable_sgpr_private_segment_buffer, with_enable_sgpr_private_segment_buffer = "ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER";
        /// 2 user SGPRs: the AQL dispatch packet address.
        [1] enable_sgpr_dispatch_ptr, with_enable_sgpr_dispatch_ptr = "ENABLE_SGPR_DISPATCH_PTR";
        /// 2 user SGPRs: the `amd_queue_t` address.
        [2] enable_sgpr_queue_ptr, with_enable_sgpr_queue_ptr = "ENABLE_SGPR_QUEUE_PTR";
        /// 2 user SGPRs: the kernarg segment address.
        [3] enable_sgpr_kernarg_segment_ptr, with_enable_sgpr_kernarg_segment_ptr = "ENABLE_SGPR_KERNARG_SEGMENT_PTR";
        /// 2 user SGPRs: the 64-bit dispatch id.
        [4] enable_sgpr_dispatch_id, with_enable_sgpr_dispatch_id = "ENABLE_SGPR_DISPATCH_ID";
        /// 2 user SGPRs: flat scratch initialisation.
        [5] enable_sgpr_flat_scratch_init, with_enable_sgpr_flat_scratch_init = "ENABLE_SGPR_FLAT_SCRATCH_INIT";
        /// 1 user SGPR: the per-work-item scratch size.
        [6] enable_sgpr_private_segment_size, with_enable_sgpr_private_segment_size = "ENABLE_SGPR_PRIVATE_SEGMENT_SIZE";
        /// Wave32 (GFX10+); clear = wave64.
        [10] enable_wavefront_size32, with_enable_wavefront_size32 = "ENABLE_WAVEFRONT_SIZE32";
        /// The kernel uses a dynamically sized stack (v5+).
        [11] uses_dynamic_stack, with_uses_dynamic_stack = "USES_DYNAMIC_STACK";
    }
}

pm4_encoding::bitfield32! {
    /// `kernarg_preload` (u16 at offset 58, zero-extended; reference §6). GFX90A/GFX940 only,
    /// must be 0 on gfx10–gfx12.
    pub struct KernargPreload {
        /// Dwords of kernarg preloaded into user SGPRs.
        [6:0] length, with_length = "KERNARG_PRELOAD_SPEC_LENGTH";
        /// Dword offset in the kernarg segment of the first preloaded dword.
        [15:7] offset, with_offset = "KERNARG_PRELOAD_SPEC_OFFSET";
    }
}

/// A reserved byte range of the descriptor that is not all zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReservedBytes {
    /// Field name (`reserved0`, `reserved1`, `reserved3`).
    pub field: &'static str,
    /// Byte offset of the field in the descriptor.
    pub offset: usize,
    /// Field size in bytes.
    pub size: usize,
}

/// Bits set in a descriptor word where the ABI requires zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReservedBits {
    /// The word (`COMPUTE_PGM_RSRC1`, `kernel_code_properties`, ...).
    pub word: &'static str,
    /// LLVM's name of the field (`PRIV`, `RESERVED0`, `undefined` for bits no field covers).
    pub field: &'static str,
    /// The offending bits, in place.
    pub bits: u32,
}

impl KernelDescriptor {
    /// Copies a descriptor out of exactly [`KERNEL_DESCRIPTOR_SIZE`] bytes.
    ///
    /// # Errors
    /// [`DescriptorSizeError`] when `bytes` has another length.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DescriptorSizeError> {
        Self::read_from_bytes(bytes)
            .map_err(|_| DescriptorSizeError { found: bytes.len(), expected: KERNEL_DESCRIPTOR_SIZE })
    }

    /// Bytes of static LDS.
    #[must_use]
    pub fn group_segment_fixed_size(&self) -> u32 {
        self.group_segment_fixed_size.get()
    }

    /// Bytes of scratch per work-item.
    #[must_use]
    pub fn private_segment_fixed_size(&self) -> u32 {
        self.private_segment_fixed_size.get()
    }

    /// Bytes of kernarg memory; 0 = unspecified.
    #[must_use]
    pub fn kernarg_size(&self) -> u32 {
        self.kernarg_size.get()
    }

    /// Signed byte offset from the descriptor to the kernel entry.
    #[must_use]
    pub fn kernel_code_entry_byte_offset(&self) -> i64 {
        self.kernel_code_entry_byte_offset.get()
    }

    /// Raw `COMPUTE_PGM_RSRC1`.
    #[must_use]
    pub fn compute_pgm_rsrc1(&self) -> u32 {
        self.compute_pgm_rsrc1.get()
    }

    /// Raw `COMPUTE_PGM_RSRC2`.
    #[must_use]
    pub fn compute_pgm_rsrc2(&self) -> u32 {
        self.compute_pgm_rsrc2.get()
    }

    /// Raw `COMPUTE_PGM_RSRC3`.
    #[must_use]
    pub fn compute_pgm_rsrc3(&self) -> u32 {
        self.compute_pgm_rsrc3.get()
    }

    /// `COMPUTE_PGM_RSRC1` typed for `family`.
    #[must_use]
    pub fn rsrc1(&self, family: Family) -> Rsrc1 {
        Rsrc1::new(self.compute_pgm_rsrc1(), family)
    }

    /// `COMPUTE_PGM_RSRC2` typed for `family`.
    #[must_use]
    pub fn rsrc2(&self, family: Family) -> Rsrc2 {
        Rsrc2::new(self.compute_pgm_rsrc2(), family)
    }

    /// `COMPUTE_PGM_RSRC3` typed for `family`.
    #[must_use]
    pub fn rsrc3(&self, family: Family) -> Rsrc3 {
        Rsrc3::new(self.compute_pgm_rsrc3(), family)
    }

    /// `kernel_code_properties`, typed.
    #[must_use]
    pub fn kernel_code_properties(&self) -> KernelCodeProperties {
        KernelCodeProperties::from_raw(u32::from(self.kernel_code_properties.get()))
    }

    /// `kernarg_preload`, typed.
    #[must_use]
    pub fn kernarg_preload(&self) -> KernargPreload {
        KernargPreload::from_raw(u32::from(self.kernarg_preload.get()))
    }

    /// `RSRC2.ENABLE_PRIVATE_SEGMENT` (bit 0 on every family, reference §3).
    #[must_use]
    pub fn enable_private_segment(&self) -> bool {
        self.compute_pgm_rsrc2() & 1 != 0
    }

    /// Reserved byte ranges that are not all zero, in offset order.
    #[must_use]
    pub fn nonzero_reserved_bytes(&self) -> Vec<ReservedBytes> {
        let fields: [(&'static str, usize, &[u8]); 3] = [
            ("reserved0", offset_of!(Self, reserved0), &self.reserved0),
            ("reserved1", offset_of!(Self, reserved1), &self.reserved1),
            ("reserved3", offset_of!(Self, reserved3), &self.reserved3),
        ];
        fields
            .into_iter()
            .filter(|(_, _, bytes)| bytes.iter().any(|&b| b != 0))
            .map(|(field, offset, bytes)| ReservedBytes { field, offset, size: bytes.len() })
            .collect()
    }

    /// Bits set where the ABI requires zero: reserved `kernel_code_properties` bits and the
    /// family's must-be-zero RSRC1/2/3 fields (reference §3 KD view, §6).
    #[must_use]
    pub fn reserved_bits(&self, family: Family) -> Vec<ReservedBits> {
        let own = family.facts().descriptor_zero_bits;
        let words: [(&'static str, u32, &[ZeroBits], &[ZeroBits]); 3] = [
            ("COMPUTE_PGM_RSRC1", self.compute_pgm_rsrc1(), &RSRC1_ZERO_COMMON, own.rsrc1),
            ("COMPUTE_PGM_RSRC2", self.compute_pgm_rsrc2(), &RSRC2_ZERO_COMMON, own.rsrc2),
            ("COMPUTE_PGM_RSRC3", self.compute_pgm_rsrc3(), &[], own.rsrc3),
        ];
        let mut out = Vec::new();
        let kcp = self.kernel_code_properties().unknown_bits();
        if kcp != 0 {
            out.push(ReservedBits { word: "kernel_code_properties", field: "reserved", bits: kcp });
        }
        for (word, value, common, own) in words {
            for zero in common.iter().chain(own) {
                if value & zero.mask != 0 {
                    out.push(ReservedBits { word, field: zero.names, bits: value & zero.mask });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dispatch_ptr.kd` of `tests/data/kernels-gfx1100.co`, as `llvm-readelf-19 -x .rodata` prints
    /// it at 0x1380 (the symbol table gives `dispatch_ptr.kd` = 0x1380 and `dispatch_ptr` = 0x2800).
    const GFX1100_DISPATCH_PTR_KD: [u8; 64] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x80, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0xaf, 0x60, 0x9e, 0x00, 0x00, 0x00, 0x0a, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn literal_descriptor_fields() {
        let d = KernelDescriptor::from_bytes(&GFX1100_DISPATCH_PTR_KD).unwrap();
        assert_eq!(d.group_segment_fixed_size(), 0);
        assert_eq!(d.private_segment_fixed_size(), 0);
        assert_eq!(d.kernarg_size(), 8);
        // 0x1380 + 0x1480 = 0x2800, the `dispatch_ptr` function symbol.
        assert_eq!(d.kernel_code_entry_byte_offset(), 0x1480);
        assert_eq!(d.compute_pgm_rsrc1(), 0x60af_0000);
        assert_eq!(d.compute_pgm_rsrc2(), 0x9e);
        assert_eq!(d.compute_pgm_rsrc3(), 0);
        // llvm-objdump-19: .amdhsa_user_sgpr_dispatch_ptr 1, kernarg_segment_ptr 1, wavefront_size32 1.
        let kcp = d.kernel_code_properties();
        assert_eq!(kcp.raw(), 0x040a);
        assert_eq!(kcp.enable_sgpr_dispatch_ptr(), 1);
        assert_eq!(kcp.enable_sgpr_kernarg_segment_ptr(), 1);
        assert_eq!(kcp.enable_wavefront_size32(), 1);
        assert_eq!(kcp.enable_sgpr_private_segment_buffer(), 0);
        assert_eq!(kcp.uses_dynamic_stack(), 0);
        // USER_SGPR [5:1] = 0b01111 = 15, TGID_X_EN [7] = 1.
        let r2 = d.rsrc2(Family::Gfx11);
        assert_eq!(r2.user_sgpr(), 15);
        assert!(!r2.scratch_en());
        assert!(matches!(r2, Rsrc2::Gfx11(w) if w.tgid_x_en() == 1));
        // .amdhsa_workgroup_processor_mode 1 (bit 29), .amdhsa_memory_ordered 1 (bit 30).
        assert!(d.rsrc1(Family::Gfx11).wgp_mode());
        assert!(matches!(d.rsrc1(Family::Gfx11), Rsrc1::Gfx11(w) if w.mem_ordered() == 1 && w.ieee_mode() == 1));
        assert_eq!(d.kernarg_preload().raw(), 0);
        assert!(d.nonzero_reserved_bytes().is_empty());
        assert!(d.reserved_bits(Family::Gfx11).is_empty());
        assert_eq!(d.as_bytes(), &GFX1100_DISPATCH_PTR_KD);
    }

    #[test]
    fn size_must_be_exact() {
        assert_eq!(KernelDescriptor::from_bytes(&[0; 63]), Err(DescriptorSizeError { found: 63, expected: 64 }));
        assert!(KernelDescriptor::from_bytes(&[0; 65]).is_err());
    }

    #[test]
    fn negative_entry_offset() {
        let mut bytes = [0u8; 64];
        bytes[16..24].copy_from_slice(&(-256i64).to_le_bytes());
        assert_eq!(KernelDescriptor::from_bytes(&bytes).unwrap().kernel_code_entry_byte_offset(), -256);
    }

    #[test]
    fn reserved_bytes_and_bits_are_reported() {
        let mut bytes = [0u8; 64];
        bytes[13] = 1; // reserved0
        bytes[43] = 0x80; // last byte of reserved1
        bytes[63] = 2; // reserved3
        bytes[57] = 0x10; // kernel_code_properties bit 12 (reserved)
        bytes[56] = 0x80; // kernel_code_properties bit 7 (reserved)
        let d = KernelDescriptor::from_bytes(&bytes).unwrap();
        assert_eq!(
            d.nonzero_reserved_bytes(),
            [
                ReservedBytes { field: "reserved0", offset: 12, size: 4 },
                ReservedBytes { field: "reserved1", offset: 24, size: 20 },
                ReservedBytes { field: "reserved3", offset: 60, size: 4 },
            ]
        );
        assert_eq!(
            d.reserved_bits(Family::Gfx11),
            [ReservedBits { word: "kernel_code_properties", field: "reserved", bits: 0x1080 }]
        );
    }

    #[test]
    fn per_family_must_be_zero_bits() {
        let mut d = KernelDescriptor::from_bytes(&[0; 64]).unwrap();
        // RSRC1 bit 21: DX10_CLAMP on gfx10.3/gfx11 (allowed), WG_RR_EN on gfx12 (CP fills it).
        // Bits 9:6 (GRANULATED_WAVEFRONT_SGPR_COUNT) are tolerated everywhere.
        d.compute_pgm_rsrc1 = U32::new((1 << 21) | (2 << 6));
        assert!(d.reserved_bits(Family::Gfx10_3).is_empty());
        assert!(d.reserved_bits(Family::Gfx11).is_empty());
        assert_eq!(
            d.reserved_bits(Family::Gfx12),
            [ReservedBits { word: "COMPUTE_PGM_RSRC1", field: "WG_RR_EN", bits: 1 << 21 }]
        );
        d.compute_pgm_rsrc1 = U32::new(1 << 20);
        assert_eq!(
            d.reserved_bits(Family::Gfx10_3),
            [ReservedBits { word: "COMPUTE_PGM_RSRC1", field: "PRIV", bits: 1 << 20 }]
        );
        d.compute_pgm_rsrc1 = U32::new(0);
        // RSRC2 LDS size in the descriptor, trap handler bit 6 on gfx11.
        d.compute_pgm_rsrc2 = U32::new((3 << 15) | (1 << 6));
        assert_eq!(
            d.reserved_bits(Family::Gfx11),
            [
                ReservedBits { word: "COMPUTE_PGM_RSRC2", field: "GRANULATED_LDS_SIZE", bits: 3 << 15 },
                ReservedBits { word: "COMPUTE_PGM_RSRC2", field: "ENABLE_TRAP_HANDLER", bits: 1 << 6 },
            ]
        );
        d.compute_pgm_rsrc2 = U32::new(0);
        // RSRC3 INST_PREF_SIZE [9:4] is fine on gfx11; on gfx10.3 those bits are RESERVED1.
        d.compute_pgm_rsrc3 = U32::new(0x30);
        assert!(d.reserved_bits(Family::Gfx11).is_empty());
        assert!(d.reserved_bits(Family::Gfx12).is_empty());
        assert_eq!(
            d.reserved_bits(Family::Gfx10_3),
            [ReservedBits { word: "COMPUTE_PGM_RSRC3", field: "RESERVED1", bits: 0x30 }]
        );
        // SHARED_VGPR_COUNT [3:0] is reserved on gfx12 only.
        d.compute_pgm_rsrc3 = U32::new(0x1);
        assert!(d.reserved_bits(Family::Gfx11).is_empty());
        assert_eq!(
            d.reserved_bits(Family::Gfx12),
            [ReservedBits { word: "COMPUTE_PGM_RSRC3", field: "RESERVED0", bits: 1 }]
        );
    }

    #[test]
    fn kernarg_preload_fields() {
        // LENGTH [6:0] = 3, OFFSET [15:7] = 2 -> 0x0103.
        let p = KernargPreload::from_raw(0x0103);
        assert_eq!((p.length(), p.offset()), (3, 2));
    }
}
