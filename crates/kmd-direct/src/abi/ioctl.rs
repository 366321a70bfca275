//! ioctl request numbers: the Linux `_IOC` encoding (`asm-generic/ioctl.h`, used by x86, arm and
//! riscv) computed in `const fn`s from each request's argument struct.

use core::marker::PhantomData;

use super::{
    DRM_AMDGPU_BO_LIST, DRM_AMDGPU_CS, DRM_AMDGPU_CTX, DRM_AMDGPU_GEM_CREATE, DRM_AMDGPU_GEM_MMAP, DRM_AMDGPU_GEM_VA,
    DRM_AMDGPU_INFO, DRM_AMDGPU_WAIT_CS, DRM_COMMAND_BASE, DRM_IOCTL_BASE, DrmAmdgpuBoList, DrmAmdgpuCs, DrmAmdgpuCtx,
    DrmAmdgpuGemCreate, DrmAmdgpuGemMmap, DrmAmdgpuGemVa, DrmAmdgpuInfo, DrmAmdgpuWaitCs, DrmGemClose, DrmVersion,
    LayoutRow,
};

/// `_IOC_NRBITS`.
pub const IOC_NRBITS: u32 = 8;
/// `_IOC_TYPEBITS`.
pub const IOC_TYPEBITS: u32 = 8;
/// `_IOC_SIZEBITS`.
pub const IOC_SIZEBITS: u32 = 14;
/// `_IOC_NRSHIFT`.
pub const IOC_NRSHIFT: u32 = 0;
/// `_IOC_TYPESHIFT`.
pub const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
/// `_IOC_SIZESHIFT`.
pub const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
/// `_IOC_DIRSHIFT`.
pub const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;
/// `_IOC_NONE`.
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE`: userspace writes the argument, the kernel reads it.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the kernel writes the argument back.
pub const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)`.
///
/// # Panics
///
/// When a field does not fit its bits; in a `const` this is a compile error.
#[must_use]
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    assert!(dir < 1 << 2, "_IOC dir has 2 bits");
    assert!(ty < 1 << IOC_TYPEBITS, "_IOC type has 8 bits");
    assert!(nr < 1 << IOC_NRBITS, "_IOC nr has 8 bits");
    assert!(size < 1 << IOC_SIZEBITS, "_IOC size has 14 bits");
    // CAST: `size` is below 2^14, checked above.
    #[allow(clippy::cast_possible_truncation)]
    let size = size as u32;
    (dir << IOC_DIRSHIFT) | (ty << IOC_TYPESHIFT) | (nr << IOC_NRSHIFT) | (size << IOC_SIZESHIFT)
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
        Self { request: ioc(IOC_WRITE, DRM_IOCTL_BASE, nr, size_of::<T>()), name, arg: PhantomData }
    }

    /// `DRM_IOWR(nr, T)`: the kernel reads `T` and writes it back.
    #[must_use]
    pub const fn write_read(nr: u32, name: &'static str) -> Self {
        Self { request: ioc(IOC_READ | IOC_WRITE, DRM_IOCTL_BASE, nr, size_of::<T>()), name, arg: PhantomData }
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
            for (c, value) in [
                ("_IOC_NRBITS", IOC_NRBITS),
                ("_IOC_TYPEBITS", IOC_TYPEBITS),
                ("_IOC_SIZEBITS", IOC_SIZEBITS),
                ("_IOC_NRSHIFT", IOC_NRSHIFT),
                ("_IOC_TYPESHIFT", IOC_TYPESHIFT),
                ("_IOC_SIZESHIFT", IOC_SIZESHIFT),
                ("_IOC_DIRSHIFT", IOC_DIRSHIFT),
                ("_IOC_NONE", IOC_NONE),
                ("_IOC_WRITE", IOC_WRITE),
                ("_IOC_READ", IOC_READ),
            ] {
                rows.push((c.to_owned(), i128::from(value)));
            }
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
    fn ioc_packs_dir_size_type_nr() {
        // _IOWR('d', 0x00, 64 bytes), _IOW('d', 0x09, 8 bytes), _IOW('d', 0x45, 32 bytes).
        assert_eq!(ioc(IOC_READ | IOC_WRITE, 0x64, 0x00, 64), 0xc040_6400);
        assert_eq!(ioc(IOC_WRITE, 0x64, 0x09, 8), 0x4008_6409);
        assert_eq!(ioc(IOC_WRITE, 0x64, 0x45, 32), 0x4020_6445);
        assert_eq!(ioc(IOC_NONE, 0x64, 0x01, 0), 0x0000_6401);
        assert_eq!(DRM_IOCTL_VERSION.request(), 0xc040_6400);
        assert_eq!(DRM_IOCTL_GEM_CLOSE.request(), 0x4008_6409);
        assert_eq!(DRM_IOCTL_AMDGPU_INFO.request(), 0x4020_6445);
        assert_eq!(format!("{DRM_IOCTL_GEM_CLOSE:?}"), "DRM_IOCTL_GEM_CLOSE (0x40086409)");
    }
}
