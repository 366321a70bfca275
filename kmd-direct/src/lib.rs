//! Experimental amdgpu DRM ioctls: render-node discovery, INFO queries, GEM buffer objects (create,
//! CPU mapping, GPU VA mapping), contexts, command submission of one IB chunk and fence wait.
//!
//! # Status
//!
//! **Experimental; never a serving transport.** Redline serves through HSA/HIP; this crate exists
//! to study submitting a PM4 body straight to the kernel driver. It is built to the public ABI of
//! the installed libdrm headers (`/usr/include/libdrm/drm.h` and `amdgpu_drm.h` from Debian's
//! `libdrm-dev` 2.4.114) and **has not yet been run on a GPU**: the layouts, request numbers and
//! constants are checked against those headers by a compiled C program (`tests/layout.rs`), the
//! error paths on machines without an amdgpu render node; nothing here has submitted work yet.
//! Behaviour the headers do not state (which clock `WAIT_CS`'s absolute timeout is measured on,
//! which VA alignment `GEM_VA` accepts) follows the amdgpu kernel driver and is unverified until
//! it runs on a GPU.
//!
//! The layout test needs the Debian packages `libdrm-dev` (the headers) and `gcc` (a C compiler,
//! `cc` or `$CC`); without them it fails under `CI=true` and is skipped elsewhere.
//!
//! # Map
//!
//! - [`abi`]: every transcribed struct, union, ioctl request and constant, with compile-time
//!   layout asserts (`static_assertions`) and a hidden `layout_table()` that the layout test
//!   checks against the C headers.
//! - [`discover`]: `/dev/dri/renderD*` with driver, PCI vendor and device id; per-node errors.
//! - [`Device`]: open (read-write, close-on-exec), `DRM_IOCTL_VERSION`, `AMDGPU_INFO_DEV_INFO`,
//!   `AMDGPU_INFO_FW_VERSION` (ME, PFP, MEC), `AMDGPU_INFO_HW_IP_INFO`; it is a [`drm::Device`].
//! - [`Bo`], [`Mapping`], [`VaMapping`], [`BoList`]: GEM objects, closed, unmapped and destroyed
//!   on drop, each borrowing what it depends on.
//! - [`Context`]: `AMDGPU_CTX_OP_ALLOC_CTX`/`FREE_CTX`, [`Context::submit`] of an [`IbChunk`],
//!   [`Context::wait`] bounded by [`WAIT_TIMEOUT_MAX`].
//! - [`GemDomains`], [`GemCreateFlags`], [`VmPageFlags`], [`IbFlags`], [`IdsFlags`]: the flag
//!   words of that API as `bitflags` types over the header-checked constants.
//!
//! # Dependencies
//!
//! - **drm-rs** (`drm`) for the DRM core: [`Device`] implements [`drm::Device`], and
//!   `DRM_IOCTL_VERSION` is its `get_driver`, `DRM_IOCTL_GEM_CLOSE` its `close_buffer`.
//! - **nix** for the rest: the amdgpu ioctls (INFO, GEM_CREATE, GEM_MMAP, GEM_VA, CTX, BO_LIST, CS,
//!   WAIT_CS) are declared with `ioctl_write_ptr_bad!`/`ioctl_readwrite_bad!` over the typed
//!   requests ([`abi::Ioctl`], computed with nix's `request_code_*!`), so the number passed to
//!   the kernel is the one the layout test checks; `open` is `nix::fcntl`, `mmap`/`munmap` are
//!   `nix::sys::mman`, descriptors are std's `OwnedFd`/`BorrowedFd`.
//! - **libc** only for `clock_gettime(CLOCK_MONOTONIC)`, which nix has only under a feature the
//!   workspace does not enable.
//!
//! Every ioctl, through nix or drm-rs, goes through one bounded retry of `EINTR` and `EAGAIN`
//! ([`IOCTL_ATTEMPTS_MAX`]) and fails as an [`IoctlError`] naming the request. The nix calls go
//! through one function holding the crate's only call of them; its argument type is fixed by the
//! typed request, and arguments without user pointers take a safe path ([`PlainData`]).
//!
//! What drm-rs does not fit, in one line each:
//!
//! - it has no driver-private ioctls, so every `DRM_IOCTL_AMDGPU_*` is on nix;
//! - `close_buffer` exists only on its modesetting trait `drm::control::Device`, so GEM close goes
//!   through a private wrapper and that trait's modesetting calls stay off [`Device`];
//! - `get_driver` sizes its buffers from the lengths the kernel reports, so
//!   [`VERSION_STRING_MAX`] is checked after the call instead of bounding the allocation;
//! - its calls do not retry `EINTR`/`EAGAIN`, so they are wrapped in the same bounded retry.
//!
//! # Platforms
//!
//! Linux on 64-bit x86, arm and riscv (the `asm-generic` ioctl encoding and the 64-bit layout of
//! `struct drm_version`). Elsewhere the crate holds only [`UnsupportedPlatform`].
#![warn(missing_docs)]

/// Declares items that exist only on the supported platforms.
macro_rules! supported {
    ($($item:item)*) => {
        $(
            #[cfg(all(
                target_os = "linux",
                target_pointer_width = "64",
                any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")
            ))]
            $item
        )*
    };
}

supported! {
    pub mod abi;
    mod ctx;
    mod device;
    mod discover;
    mod error;
    mod family;
    mod flags;
    mod gem;
    mod sys;

    pub use abi::layout_table;
    pub use ctx::{Context, Fence, IbChunk, WAIT_TIMEOUT_MAX};
    pub use device::{DeviceInfo, Device, DriverVersion, Firmware, VERSION_STRING_MAX};
    pub use discover::{DEV_DRI, PCI_VENDOR_AMD, RENDER_MINORS, RenderNode, SYS_CLASS_DRM, discover, discover_in};
    pub use error::{DiscoverError, GemError, IoctlError, NodeError, OpenError, SubmitError, VersionError, WaitError};
    pub use family::Family;
    pub use flags::{GemCreateFlags, GemDomains, IbFlags, IdsFlags, VmPageFlags};
    pub use gem::{BO_LIST_MAX, Bo, BoDesc, BoList, GemHandle, Mapping, VaMapping};
    pub use sys::{IOCTL_ATTEMPTS_MAX, PlainData};
}

/// Whether this build has the ioctl layer (Linux on a supported 64-bit architecture).
pub const SUPPORTED: bool = cfg!(all(
    target_os = "linux",
    target_pointer_width = "64",
    any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")
));

/// The error of a build without the ioctl layer: amdgpu DRM ioctls exist only on Linux, and the
/// layouts here are those of the 64-bit `asm-generic` architectures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("kmd-direct supports Linux on x86_64, aarch64 and riscv64 only")]
pub struct UnsupportedPlatform;

/// `Ok` on a supported platform, else [`UnsupportedPlatform`].
///
/// # Errors
///
/// [`UnsupportedPlatform`] when [`SUPPORTED`] is false.
pub fn check_platform() -> Result<(), UnsupportedPlatform> {
    if SUPPORTED { Ok(()) } else { Err(UnsupportedPlatform) }
}
