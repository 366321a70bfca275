//! ioctl request numbers, computed from each request's argument struct with nix's
//! `request_code_write!`/`request_code_readwrite!` (the Linux `_IOC` encoding of
//! `asm-generic/ioctl.h`, used by x86, arm and riscv).

use core::marker::PhantomData;

use nix::{request_code_readwrite, request_code_write};

use super::{
    DRM_AMDGPU_BO_LIST, DRM_AMDGPU_CS, DRM_AMDGPU_CTX, DRM_AMDGPU_GEM_CREATE, DRM_AMDGPU_GEM_MMAP, DRM_AMDGPU_GEM_VA,
    DRM_AMDGPU_INFO, DRM_AMDGPU_WAIT_CS, DRM_COMMAND_BASE, DRM_IOCTL_BASE, DrmAmdgpuBoList, DrmAmdgpuCs, DrmAmdgpuCtx,
    DrmAmdgpuGemCreate, DrmAmdgpuGemMmap, DrmAmdgpuGemVa, DrmAmdgpuInfo, DrmAmdgpuWaitCs, DrmGemClose, DrmVersion,
    LayoutRow,
};

/// `_IOC_SIZEBITS`: nix masks a larger size silently, so [`Ioctl`] checks it first.
const IOC_SIZEBITS: u32 = 14;
/// `_IOC_NRBITS`.
const IOC_NRBITS: u32 = 8;

/// Checks what nix's encoding would mask, and narrows its `ioctl_num_type` to the kernel's
/// `unsigned int`.
///
/// # Panics
///
/// When `nr` or `size` does not fit its bits; in a `const` this is a compile error.
// CAST: the encoding fills 32 bits; nix's type is `c_ulong` on glibc and `c_int` on musl.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
const fn checked_request(nr: u32, size: usize, request: nix::sys::ioctl::ioctl_num_type) -> u32 {
    assert!(nr < 1 << IOC_NRBITS, "_IOC nr has 8 bits");
    assert!(size < 1 << IOC_SIZEBITS, "_IOC size has 14 bits");
    request as u32
}

/// One DRM ioctl: its request number, typed by the argument struct it was computed from, and its
/// C macro name for error messages.
pub struct Ioctl<T> {
    request: u32,
    name: &'static str,
    arg: PhantomData<fn(&mut T)>,
}

impl<T> Ioctl<T> {
    /// `DRM_IOW(nr, T)`: the kernel reads `T`.
    #[must_use]
    pub const fn write(nr: u32, name: &'static str) -> Self {
        let request = checked_request(nr, size_of::<T>(), request_code_write!(DRM_IOCTL_BASE, nr, size_of::<T>()));
        Self { request, name, arg: PhantomData }
    }

    /// `DRM_IOWR(nr, T)`: the kernel reads `T` and writes it back.
    #[must_use]
    pub const fn write_read(nr: u32, name: &'static str) -> Self {
        let request =
            checked_request(nr, size_of::<T>(), request_code_readwrite!(DRM_IOCTL_BASE, nr, size_of::<T>()));
        Self { request, name, arg: PhantomData }
    }

    /// The request number passed to `ioctl(2)`.
    #[must_use]
    pub const fn request(&self) -> u32 {
        self.request
    }

    /// The C macro name (`DRM_IOCTL_AMDGPU_INFO`).
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T> Clone for Ioctl<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Ioctl<T> {}

impl<T> core::fmt::Debug for Ioctl<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ({:#010x})", self.name, self.request)
    }
}

/// Declares request constants and their layout rows.
macro_rules! ioctls {
    ($( $(#[$m:meta])* $name:ident = $kind:ident($nr:expr, $ty:ty); )*) => {
        $(
            $(#[$m])*
            pub const $name: Ioctl<$ty> = Ioctl::$kind($nr, stringify!($name));
        )*

        pub(super) fn layout_rows(rows: &mut Vec<LayoutRow>) {
            $( rows.push((stringify!($name).to_owned(), i128::from($name.request()))); )*
            rows.push(("_IOC_NRBITS".to_owned(), i128::from(IOC_NRBITS)));
            rows.push(("_IOC_SIZEBITS".to_owned(), i128::from(IOC_SIZEBITS)));
        }
    };
}

ioctls! {
    /// `DRM_IOWR(0x00, struct drm_version)`.
    DRM_IOCTL_VERSION = write_read(0x00, DrmVersion);
    /// `DRM_IOW (0x09, struct drm_gem_close)`.
    DRM_IOCTL_GEM_CLOSE = write(0x09, DrmGemClose);
    /// `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_CREATE, union drm_amdgpu_gem_create)`.
    DRM_IOCTL_AMDGPU_GEM_CREATE = write_read(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_CREATE, DrmAmdgpuGemCreate);
    /// `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_MMAP, union drm_amdgpu_gem_mmap)`.
    DRM_IOCTL_AMDGPU_GEM_MMAP = write_read(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_MMAP, DrmAmdgpuGemMmap);
    /// `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_CTX, union drm_amdgpu_ctx)`.
    DRM_IOCTL_AMDGPU_CTX = write_read(DRM_COMMAND_BASE + DRM_AMDGPU_CTX, DrmAmdgpuCtx);
    /// `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_BO_LIST, union drm_amdgpu_bo_list)`.
    DRM_IOCTL_AMDGPU_BO_LIST = write_read(DRM_COMMAND_BASE + DRM_AMDGPU_BO_LIST, DrmAmdgpuBoList);
    /// `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_CS, union drm_amdgpu_cs)`.
    DRM_IOCTL_AMDGPU_CS = write_read(DRM_COMMAND_BASE + DRM_AMDGPU_CS, DrmAmdgpuCs);
    /// `DRM_IOW(DRM_COMMAND_BASE + DRM_AMDGPU_INFO, struct drm_amdgpu_info)`.
    DRM_IOCTL_AMDGPU_INFO = write(DRM_COMMAND_BASE + DRM_AMDGPU_INFO, DrmAmdgpuInfo);
    /// `DRM_IOW(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_VA, struct drm_amdgpu_gem_va)`.
    DRM_IOCTL_AMDGPU_GEM_VA = write(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_VA, DrmAmdgpuGemVa);
    /// `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_WAIT_CS, union drm_amdgpu_wait_cs)`.
    DRM_IOCTL_AMDGPU_WAIT_CS = write_read(DRM_COMMAND_BASE + DRM_AMDGPU_WAIT_CS, DrmAmdgpuWaitCs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_pack_dir_size_type_nr() {
        // _IOWR('d', 0x00, 64 bytes), _IOW('d', 0x09, 8 bytes), _IOW('d', 0x45, 32 bytes).
        assert_eq!(DRM_IOCTL_VERSION.request(), 0xc040_6400);
        assert_eq!(DRM_IOCTL_GEM_CLOSE.request(), 0x4008_6409);
        assert_eq!(DRM_IOCTL_AMDGPU_INFO.request(), 0x4020_6445);
        // _IOWR('d', 0x44, 24 bytes), _IOWR('d', 0x49, 32 bytes).
        assert_eq!(DRM_IOCTL_AMDGPU_CS.request(), 0xc018_6444);
        assert_eq!(DRM_IOCTL_AMDGPU_WAIT_CS.request(), 0xc020_6449);
        assert_eq!(format!("{DRM_IOCTL_GEM_CLOSE:?}"), "DRM_IOCTL_GEM_CLOSE (0x40086409)");
    }
}
