//! The amdgpu ioctls, declared with nix's `ioctl_*_bad!` macros over the typed request constants
//! of [`crate::abi`], and the bounded retry every ioctl of this crate goes through.

use std::ffi::c_int;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;
use zerocopy::FromBytes;

use crate::abi::{
    DRM_IOCTL_AMDGPU_BO_LIST, DRM_IOCTL_AMDGPU_CS, DRM_IOCTL_AMDGPU_CTX, DRM_IOCTL_AMDGPU_GEM_CREATE,
    DRM_IOCTL_AMDGPU_GEM_MMAP, DRM_IOCTL_AMDGPU_GEM_VA, DRM_IOCTL_AMDGPU_INFO, DRM_IOCTL_AMDGPU_WAIT_CS,
    DrmAmdgpuBoList, DrmAmdgpuBoListEntry, DrmAmdgpuCs, DrmAmdgpuCtx, DrmAmdgpuGemCreate, DrmAmdgpuGemMmap,
    DrmAmdgpuGemVa, DrmAmdgpuInfo, DrmAmdgpuInfoDevice, DrmAmdgpuInfoFirmware, DrmAmdgpuInfoHwIp, DrmAmdgpuWaitCs,
    DrmGemClose, Ioctl,
};
use crate::error::IoctlError;

/// Attempts of one ioctl interrupted by a signal (`EINTR`) or asked to retry (`EAGAIN`) before
/// its error is returned; libdrm's `drmIoctl` retries the same two without a bound.
pub const IOCTL_ATTEMPTS_MAX: u32 = 64;

/// A plain ABI argument: `#[repr(C)]`, made only of integers, arrays of integers and such structs
/// or unions, with no user pointer inside, so a kernel may read and overwrite it whole.
///
/// That every bit pattern of `size_of::<Self>()` bytes is a valid value is `FromBytes`, which
/// zerocopy derives for each ABI type after checking every field (`abi`'s `abi_type!`). That no
/// field is a user pointer the kernel follows is this crate's word about the header: the trait is
/// sealed, and implemented below for exactly the argument types that hold none.
pub trait PlainData: FromBytes + Copy + sealed::Sealed {}

mod sealed {
    /// Implemented only in this module: outside crates cannot vouch for a type's fields.
    pub trait Sealed {}
}

/// `PlainData` for argument types without user pointers (see `abi::amdgpu`; types with one,
/// such as `drm_amdgpu_bo_list_in`'s `bo_info_ptr`, go through [`ioctl_with_pointers`]).
macro_rules! plain_data {
    ($($name:ty),* $(,)?) => {
        $(
            impl sealed::Sealed for $name {}
            impl PlainData for $name {}
        )*
    };
}

plain_data!(
    DrmGemClose,
    DrmAmdgpuGemCreate,
    DrmAmdgpuGemMmap,
    DrmAmdgpuGemVa,
    DrmAmdgpuCtx,
    DrmAmdgpuWaitCs,
    DrmAmdgpuInfoDevice,
    DrmAmdgpuInfoFirmware,
    DrmAmdgpuInfoHwIp,
    DrmAmdgpuBoListEntry,
);

/// The functions nix's macros generate, one per request. The `_bad` forms take the request
/// number as given: it is the typed constant the layout test checks against the headers, not a
/// second computation of it.
mod raw {
    use nix::{ioctl_readwrite_bad, ioctl_write_ptr_bad};

    use super::{
        DRM_IOCTL_AMDGPU_BO_LIST, DRM_IOCTL_AMDGPU_CS, DRM_IOCTL_AMDGPU_CTX, DRM_IOCTL_AMDGPU_GEM_CREATE,
        DRM_IOCTL_AMDGPU_GEM_MMAP, DRM_IOCTL_AMDGPU_GEM_VA, DRM_IOCTL_AMDGPU_INFO, DRM_IOCTL_AMDGPU_WAIT_CS,
        DrmAmdgpuBoList, DrmAmdgpuCs, DrmAmdgpuCtx, DrmAmdgpuGemCreate, DrmAmdgpuGemMmap, DrmAmdgpuGemVa,
        DrmAmdgpuInfo, DrmAmdgpuWaitCs,
    };

    ioctl_write_ptr_bad!(amdgpu_info, DRM_IOCTL_AMDGPU_INFO.request(), DrmAmdgpuInfo);
    ioctl_readwrite_bad!(amdgpu_gem_create, DRM_IOCTL_AMDGPU_GEM_CREATE.request(), DrmAmdgpuGemCreate);
    ioctl_readwrite_bad!(amdgpu_gem_mmap, DRM_IOCTL_AMDGPU_GEM_MMAP.request(), DrmAmdgpuGemMmap);
    ioctl_write_ptr_bad!(amdgpu_gem_va, DRM_IOCTL_AMDGPU_GEM_VA.request(), DrmAmdgpuGemVa);
    ioctl_readwrite_bad!(amdgpu_ctx, DRM_IOCTL_AMDGPU_CTX.request(), DrmAmdgpuCtx);
    ioctl_readwrite_bad!(amdgpu_bo_list, DRM_IOCTL_AMDGPU_BO_LIST.request(), DrmAmdgpuBoList);
    ioctl_readwrite_bad!(amdgpu_cs, DRM_IOCTL_AMDGPU_CS.request(), DrmAmdgpuCs);
    ioctl_readwrite_bad!(amdgpu_wait_cs, DRM_IOCTL_AMDGPU_WAIT_CS.request(), DrmAmdgpuWaitCs);
}

/// A nix-generated ioctl function: `DRM_IOW` requests take a `*const T`, `DRM_IOWR` a `*mut T`.
enum Call<T> {
    Write(unsafe fn(c_int, *const T) -> nix::Result<c_int>),
    WriteRead(unsafe fn(c_int, *mut T) -> nix::Result<c_int>),
}

/// One amdgpu ioctl: its typed, header-checked request and the nix function that issues it.
pub(crate) struct Request<T> {
    ioctl: Ioctl<T>,
    call: Call<T>,
}

pub(crate) const AMDGPU_INFO: Request<DrmAmdgpuInfo> =
    Request { ioctl: DRM_IOCTL_AMDGPU_INFO, call: Call::Write(raw::amdgpu_info) };
pub(crate) const AMDGPU_GEM_CREATE: Request<DrmAmdgpuGemCreate> =
    Request { ioctl: DRM_IOCTL_AMDGPU_GEM_CREATE, call: Call::WriteRead(raw::amdgpu_gem_create) };
pub(crate) const AMDGPU_GEM_MMAP: Request<DrmAmdgpuGemMmap> =
    Request { ioctl: DRM_IOCTL_AMDGPU_GEM_MMAP, call: Call::WriteRead(raw::amdgpu_gem_mmap) };
pub(crate) const AMDGPU_GEM_VA: Request<DrmAmdgpuGemVa> =
    Request { ioctl: DRM_IOCTL_AMDGPU_GEM_VA, call: Call::Write(raw::amdgpu_gem_va) };
pub(crate) const AMDGPU_CTX: Request<DrmAmdgpuCtx> =
    Request { ioctl: DRM_IOCTL_AMDGPU_CTX, call: Call::WriteRead(raw::amdgpu_ctx) };
pub(crate) const AMDGPU_BO_LIST: Request<DrmAmdgpuBoList> =
    Request { ioctl: DRM_IOCTL_AMDGPU_BO_LIST, call: Call::WriteRead(raw::amdgpu_bo_list) };
pub(crate) const AMDGPU_CS: Request<DrmAmdgpuCs> =
    Request { ioctl: DRM_IOCTL_AMDGPU_CS, call: Call::WriteRead(raw::amdgpu_cs) };
pub(crate) const AMDGPU_WAIT_CS: Request<DrmAmdgpuWaitCs> =
    Request { ioctl: DRM_IOCTL_AMDGPU_WAIT_CS, call: Call::WriteRead(raw::amdgpu_wait_cs) };

/// Calls an ioctl whose argument holds no user pointers.
pub(crate) fn ioctl<T: PlainData>(fd: BorrowedFd<'_>, request: Request<T>, arg: &mut T) -> Result<(), IoctlError> {
    // SAFETY: `request` pairs the nix function with the request computed from `T`, so the kernel
    // reads and writes exactly `size_of::<T>()` bytes of `arg`, which is a live exclusive borrow;
    // `T: PlainData` says the argument holds no pointer for the kernel to follow (the sealed
    // trait's list) and that any bytes it writes back are a valid `T` (`FromBytes`, derived).
    unsafe { ioctl_with_pointers(fd, request, arg) }
}

/// Calls an ioctl whose argument may hold user pointers, retrying `EINTR` and `EAGAIN` up to
/// [`IOCTL_ATTEMPTS_MAX`] times.
///
/// # Safety
///
/// Every user pointer inside `arg` must be valid for the reads and writes the kernel does
/// through it for this request, and any bytes the kernel writes into `arg` must leave a valid
/// `T`. (That the request was computed from `T` is fixed by [`Request`]'s constants.)
pub(crate) unsafe fn ioctl_with_pointers<T>(
    fd: BorrowedFd<'_>,
    request: Request<T>,
    arg: &mut T,
) -> Result<(), IoctlError> {
    let ptr: *mut T = arg;
    retry(request.ioctl, || {
        // SAFETY: `fd` is an open descriptor for the borrow's lifetime; `ptr` points at a live,
        // exclusively borrowed `T` of the size encoded in the request; the caller vouches for the
        // pointers inside and for the bytes written back.
        unsafe {
            match request.call {
                Call::Write(call) => call(fd.as_raw_fd(), ptr.cast_const()),
                Call::WriteRead(call) => call(fd.as_raw_fd(), ptr),
            }
        }
    })
    .map(drop)
}

/// Runs one attempt of an ioctl (through nix or drm-rs) until it succeeds, fails with an error
/// other than `EINTR` or `EAGAIN`, or [`IOCTL_ATTEMPTS_MAX`] attempts have failed.
pub(crate) fn retry<T, R>(
    ioctl: Ioctl<T>,
    mut attempt: impl FnMut() -> Result<R, Errno>,
) -> Result<R, IoctlError> {
    let mut errno = Errno::UnknownErrno;
    for _ in 0..IOCTL_ATTEMPTS_MAX {
        match attempt() {
            Ok(value) => return Ok(value),
            Err(error @ (Errno::EINTR | Errno::EAGAIN)) => errno = error,
            Err(error) => {
                errno = error;
                break;
            }
        }
    }
    Err(IoctlError { ioctl: ioctl.name(), request: ioctl.request(), errno: errno as i32 })
}

/// The `errno` of an error drm-rs returned (0 when it carries none).
pub(crate) fn errno_of(error: &std::io::Error) -> Errno {
    Errno::from_raw(error.raw_os_error().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_is_bounded_and_keeps_the_last_errno() {
        let mut attempts = 0;
        let error = retry(DRM_IOCTL_AMDGPU_CS, || -> Result<(), Errno> {
            attempts += 1;
            Err(Errno::EINTR)
        })
        .unwrap_err();
        assert_eq!(attempts, IOCTL_ATTEMPTS_MAX);
        assert_eq!((error.ioctl, error.request, error.errno), ("DRM_IOCTL_AMDGPU_CS", 0xc018_6444, Errno::EINTR as i32));

        let mut attempts = 0;
        let ok = retry(DRM_IOCTL_AMDGPU_CS, || {
            attempts += 1;
            if attempts < 3 { Err(Errno::EAGAIN) } else { Ok(7) }
        });
        assert_eq!(ok.unwrap(), 7);
        let mut attempts = 0;
        let error = retry(DRM_IOCTL_AMDGPU_CS, || -> Result<(), Errno> {
            attempts += 1;
            Err(Errno::ENOTTY)
        })
        .unwrap_err();
        assert_eq!((attempts, error.errno), (1, Errno::ENOTTY as i32));
    }
}
