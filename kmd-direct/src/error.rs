//! Error types, one per operation family. Each carries the values that failed and the limit.

use std::io;
use std::path::PathBuf;

/// An ioctl returned an error.
#[derive(Debug, thiserror::Error)]
#[error("{ioctl} ({request:#010x}) failed: {}", io::Error::from_raw_os_error(*errno))]
pub struct IoctlError {
    /// The C macro name of the request.
    pub ioctl: &'static str,
    /// The request number.
    pub request: u32,
    /// `errno` after the call.
    pub errno: i32,
}

impl IoctlError {
    /// The error as an [`io::Error`] (kind and message from `errno`).
    #[must_use]
    pub fn io_error(&self) -> io::Error {
        io::Error::from_raw_os_error(self.errno)
    }
}

/// Opening a device node failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot open {}: {source}", path.display())]
pub struct OpenError {
    /// The path that was opened.
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: io::Error,
}

/// `DRM_IOCTL_VERSION` failed or returned more than this crate reads.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// The ioctl failed.
    #[error(transparent)]
    Ioctl(#[from] IoctlError),
    /// A string is longer than the limit this crate allocates for.
    #[error("driver {field} is {len} bytes, limit {limit}")]
    TooLong {
        /// `name`, `date` or `desc`.
        field: &'static str,
        /// Length the kernel reported.
        len: usize,
        /// [`crate::VERSION_STRING_MAX`].
        limit: usize,
    },
}

/// A GEM (buffer object) operation failed.
#[derive(Debug, thiserror::Error)]
pub enum GemError {
    /// The ioctl failed.
    #[error(transparent)]
    Ioctl(#[from] IoctlError),
    /// A buffer of zero bytes was requested.
    #[error("a buffer object needs a nonzero size")]
    ZeroSize,
    /// The kernel returned handle 0, which names no object.
    #[error("the kernel returned GEM handle 0")]
    ZeroHandle,
    /// The buffer does not fit this process's address space.
    #[error("buffer of {size} bytes does not fit the address space")]
    TooLarge {
        /// Size of the buffer.
        size: u64,
    },
    /// `mmap` of the device at the offset `GEM_MMAP` returned failed.
    #[error("mmap of {size} bytes at offset {offset:#x} failed: {}", io::Error::from_raw_os_error(*errno))]
    Mmap {
        /// Bytes to map.
        size: u64,
        /// The fake offset from `DRM_IOCTL_AMDGPU_GEM_MMAP`.
        offset: u64,
        /// `errno` after `mmap`.
        errno: i32,
    },
    /// A copy into or out of a mapping falls outside it.
    #[error("range {offset}..{offset}+{len} is outside a mapping of {size} bytes")]
    OutOfRange {
        /// Start of the range.
        offset: usize,
        /// Length of the range.
        len: usize,
        /// Size of the mapping.
        size: usize,
    },
}

/// Creating a BO list or submitting a command stream failed.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The ioctl failed.
    #[error(transparent)]
    Ioctl(#[from] IoctlError),
    /// The IB has no bytes.
    #[error("an IB needs at least one dword")]
    EmptyIb,
    /// The IB size is not a whole number of dwords.
    #[error("IB size {ib_bytes} bytes is not a multiple of 4")]
    IbNotDwords {
        /// Requested size.
        ib_bytes: u32,
    },
    /// More buffer objects than a BO list takes here.
    #[error("{count} buffer objects in one list, limit {limit}")]
    TooManyBos {
        /// Requested count.
        count: usize,
        /// [`crate::BO_LIST_MAX`].
        limit: usize,
    },
}

/// Waiting for a submission failed or did not finish in time.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The ioctl failed.
    #[error(transparent)]
    Ioctl(#[from] IoctlError),
    /// The requested timeout is above the bound.
    #[error("timeout {timeout_ms} ms is above the limit of {limit_ms} ms")]
    TimeoutTooLong {
        /// Requested timeout.
        timeout_ms: u128,
        /// [`crate::WAIT_TIMEOUT_MAX`] in milliseconds.
        limit_ms: u128,
    },
    /// Reading `CLOCK_MONOTONIC` failed.
    #[error("clock_gettime(CLOCK_MONOTONIC) failed: {}", io::Error::from_raw_os_error(*errno))]
    Clock {
        /// `errno` after the call.
        errno: i32,
    },
    /// The submission was still busy when the timeout passed.
    #[error("submission {seq_no} still busy after {timeout_ms} ms")]
    Busy {
        /// The submission's sequence number.
        seq_no: u64,
        /// The timeout that passed.
        timeout_ms: u128,
    },
}

/// Listing `/dev/dri` failed (a missing directory is not an error: it lists nothing).
#[derive(Debug, thiserror::Error)]
#[error("cannot list {}: {source}", path.display())]
pub struct DiscoverError {
    /// The directory.
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: io::Error,
}

/// Why a render node found by discovery could not be identified.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Opening the node failed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// `DRM_IOCTL_VERSION` on the node failed.
    #[error(transparent)]
    Version(#[from] VersionError),
}
