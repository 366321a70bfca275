//! The one place `ioctl(2)` is called.

use std::os::fd::{AsRawFd, BorrowedFd};

use crate::abi::{
    DrmAmdgpuBoListEntry, DrmAmdgpuCtx, DrmAmdgpuGemCreate, DrmAmdgpuGemMmap, DrmAmdgpuGemVa, DrmAmdgpuInfoDevice,
    DrmAmdgpuInfoFirmware, DrmAmdgpuInfoHwIp, DrmAmdgpuWaitCs, DrmGemClose, Ioctl,
};
use crate::error::IoctlError;

/// Attempts of one ioctl interrupted by a signal (`EINTR`) or asked to retry (`EAGAIN`) before
/// its error is returned; libdrm's `drmIoctl` retries the same two without a bound.
pub const IOCTL_ATTEMPTS_MAX: u32 = 64;

/// A plain ABI type: `#[repr(C)]`, made only of integers, arrays of integers and such structs or
/// unions; no pointers, no references, no invariants.
///
/// # Safety
///
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid value, and the kernel must not
/// read memory through the value (no user pointers inside), so a kernel may read and overwrite
/// it whole.
pub unsafe trait PlainData: Copy {}

// SAFETY: each of these is `#[repr(C)]` of `u32`/`u64`/`i32` fields, arrays of them, or unions of
// such structs (see `abi::amdgpu`); none carries a user pointer.
unsafe impl PlainData for DrmGemClose {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuGemCreate {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuGemMmap {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuGemVa {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuCtx {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuWaitCs {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuInfoDevice {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuInfoFirmware {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuInfoHwIp {}
// SAFETY: as above.
unsafe impl PlainData for DrmAmdgpuBoListEntry {}

/// Calls an ioctl whose argument holds no user pointers.
pub(crate) fn ioctl<T: PlainData>(fd: BorrowedFd<'_>, request: Ioctl<T>, arg: &mut T) -> Result<(), IoctlError> {
    // SAFETY: `T` is the type `request` was computed from, so the kernel reads and writes exactly
    // `size_of::<T>()` bytes of `arg`, which is a live exclusive borrow; `T: PlainData` says the
    // argument holds no pointer for the kernel to follow and any bytes it writes back are valid.
    unsafe { ioctl_with_pointers(fd, request, arg) }
}

/// Calls an ioctl whose argument may hold user pointers, retrying `EINTR` and `EAGAIN` up to
/// [`IOCTL_ATTEMPTS_MAX`] times.
///
/// # Safety
///
/// `request` must have been computed from `T` (the typed [`Ioctl`] ensures it when the constant
/// is right), every user pointer inside `arg` must be valid for the reads and writes the kernel
/// does through it for this request, and any bytes the kernel writes into `arg` must leave a valid
/// `T`.
pub(crate) unsafe fn ioctl_with_pointers<T>(
    fd: BorrowedFd<'_>,
    request: Ioctl<T>,
    arg: &mut T,
) -> Result<(), IoctlError> {
    let ptr: *mut T = arg;
    let mut errno = 0;
    for _ in 0..IOCTL_ATTEMPTS_MAX {
        // CAST: the kernel takes the request as `unsigned int`; libc's parameter type is
        // `c_ulong` on glibc and `c_int` on musl, and the 32 bits are the same either way.
        #[allow(clippy::cast_lossless, clippy::cast_possible_wrap)]
        let raw_request = request.request() as libc::Ioctl;
        // SAFETY: `fd` is an open descriptor for the borrow's lifetime; `ptr` points at a live,
        // exclusively borrowed `T` of the size encoded in the request; the caller vouches for the
        // pointers inside and for the bytes written back.
        let ret = unsafe { libc::ioctl(fd.as_raw_fd(), raw_request, ptr) };
        if ret != -1 {
            return Ok(());
        }
        errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        if errno != libc::EINTR && errno != libc::EAGAIN {
            break;
        }
    }
    Err(IoctlError { ioctl: request.name(), request: request.request(), errno })
}
