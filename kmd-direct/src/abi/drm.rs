//! The core DRM types used here, from `drm.h`.

use core::ffi::{c_char, c_int};

use super::{AbiType, LayoutRow};

abi_consts! { fn base_rows; "drm.h", u32;
    /// The ioctl type byte of every DRM request (`'d'`).
    DRM_IOCTL_BASE = 0x64;
    /// First driver-private request number; `DRM_AMDGPU_*` numbers are relative to it.
    DRM_COMMAND_BASE = 0x40;
}

abi_type! {
    /// `struct drm_version`: the driver's version and its name, date and description strings,
    /// copied into caller buffers whose lengths the kernel updates to the full lengths.
    #[derive(Debug)]
    @raw_pointers pub struct DrmVersion = "struct drm_version", size = 64, align = 8 {
        /// Major version.
        pub version_major @ 0: c_int,
        /// Minor version.
        pub version_minor @ 4: c_int,
        /// Patch level.
        pub version_patchlevel @ 8: c_int,
        /// Length of the name buffer (`__kernel_size_t`).
        pub name_len @ 16: usize,
        /// Name of the driver.
        pub name @ 24: *mut c_char,
        /// Length of the date buffer.
        pub date_len @ 32: usize,
        /// Buffer for the date.
        pub date @ 40: *mut c_char,
        /// Length of the description buffer.
        pub desc_len @ 48: usize,
        /// Buffer for the description.
        pub desc @ 56: *mut c_char,
    }
}

impl Default for DrmVersion {
    fn default() -> Self {
        Self {
            version_major: 0,
            version_minor: 0,
            version_patchlevel: 0,
            name_len: 0,
            name: core::ptr::null_mut(),
            date_len: 0,
            date: core::ptr::null_mut(),
            desc_len: 0,
            desc: core::ptr::null_mut(),
        }
    }
}

abi_type! {
    /// `struct drm_gem_close`: the argument of `DRM_IOCTL_GEM_CLOSE`.
    #[derive(Debug, Default)]
        pub struct DrmGemClose = "struct drm_gem_close", size = 8, align = 4 {
        /// Handle of the object to be closed.
        pub handle @ 0: u32,
        /// Padding.
        pub pad @ 4: u32,
    }
}

pub(super) fn layout_rows(rows: &mut Vec<LayoutRow>) {
    base_rows(rows);
    DrmVersion::layout_rows(rows);
    DrmGemClose::layout_rows(rows);
}
