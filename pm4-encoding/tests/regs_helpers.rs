//! The per-family unit facts and field encoders of `regs` (LDS granules, scratch wave size).
//!
//! Expected values are literals from reference §3 "Other register semantics" and §9: LDS_SIZE is a
//! 9-bit field [23:15] in 512-byte granules on every family; WAVESIZE is [24:12] / [26:12] /
//! [29:12] in 1024- / 256- / 256-byte units on gfx10.3 / gfx11 / gfx12.

use pm4_encoding::Family;
use pm4_encoding::regs::{self, LdsSizeTooLarge, ScratchWaveSizeTooLarge};

/// 511 granules (the 9-bit field's all-ones value) of 512 bytes.
const LDS_LIMIT_BYTES: u32 = 511 * 512;

#[test]
fn unit_facts_per_family() {
    for family in Family::ALL {
        assert_eq!(regs::lds_encode_granule_bytes(family), 512, "{family}");
        assert_eq!(regs::lds_alloc_granule_bytes(family), 1024, "{family}");
        assert_eq!(regs::lds_size_max_bytes(family), LDS_LIMIT_BYTES, "{family}");
    }
    assert_eq!(regs::tmpring_wavesize_unit_bytes(Family::Gfx10_3), 1024);
    assert_eq!(regs::tmpring_wavesize_unit_bytes(Family::Gfx11), 256);
    assert_eq!(regs::tmpring_wavesize_unit_bytes(Family::Gfx12), 256);
}

#[test]
fn lds_size_rounds_up_to_512_byte_granules() {
    for family in Family::ALL {
        for (bytes, field) in [(0, 0), (1, 1), (512, 1), (513, 2), (1024, 2), (32 * 1024, 64), (65_536, 128)] {
            assert_eq!(regs::lds_size_field(family, bytes), Ok(field), "{family}: {bytes} bytes");
        }
        assert_eq!(regs::lds_size_field(family, LDS_LIMIT_BYTES), Ok(511), "{family}");
        assert_eq!(regs::lds_size_field(family, LDS_LIMIT_BYTES - 511), Ok(511), "{family}");
    }
}

#[test]
fn lds_size_rejects_sizes_beyond_the_field() {
    for family in Family::ALL {
        for bytes in [LDS_LIMIT_BYTES + 1, 512 * 512, u32::MAX] {
            assert_eq!(
                regs::lds_size_field(family, bytes),
                Err(LdsSizeTooLarge { family, requested_bytes: bytes, limit_bytes: LDS_LIMIT_BYTES }),
                "{family}: {bytes} bytes"
            );
        }
    }
}

#[test]
fn lds_field_value_fits_the_rsrc2_word() {
    let field = regs::lds_size_field(Family::Gfx11, 48 * 1024).expect("48 KiB fits");
    assert_eq!(field, 96);
    // LDS_SIZE at [23:15]: 96 << 15.
    assert_eq!(regs::gfx11::ComputePgmRsrc2::default().with_lds_size(field).raw(), 0x0030_0000);
}

#[test]
fn scratch_wave_size_rounds_up_per_family() {
    let cases = [
        // (family, bytes per wave, WAVESIZE)
        (Family::Gfx10_3, 1, 1),
        (Family::Gfx10_3, 1024, 1),
        (Family::Gfx10_3, 1025, 2),
        (Family::Gfx11, 256, 1),
        (Family::Gfx11, 257, 2),
        (Family::Gfx11, 1024, 4),
        (Family::Gfx12, 0, 0),
        (Family::Gfx12, 4096, 16),
    ];
    for (family, bytes, field) in cases {
        assert_eq!(regs::tmpring_wavesize_field(family, bytes), Ok(field), "{family}: {bytes} bytes");
    }
}

#[test]
fn scratch_wave_size_rejects_sizes_beyond_the_field() {
    // All-ones WAVESIZE of 13 / 15 / 18 bits times the unit.
    let limits = [(Family::Gfx10_3, 0x1FFF * 1024), (Family::Gfx11, 0x7FFF * 256), (Family::Gfx12, 0x3_FFFF * 256)];
    for (family, limit_bytes) in limits {
        assert_eq!(regs::tmpring_wavesize_max_bytes(family), limit_bytes, "{family}");
        assert!(regs::tmpring_wavesize_field(family, limit_bytes).is_ok(), "{family}");
        assert_eq!(
            regs::tmpring_wavesize_field(family, limit_bytes + 1),
            Err(ScratchWaveSizeTooLarge { family, requested_bytes: limit_bytes + 1, limit_bytes }),
            "{family}"
        );
    }
}
