//! An open DRM device: open, driver version, and the amdgpu INFO queries.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, open};
use nix::sys::stat::Mode;

use crate::abi::{
    AMDGPU_INFO_DEV_INFO, AMDGPU_INFO_FW_GFX_ME, AMDGPU_INFO_FW_GFX_MEC, AMDGPU_INFO_FW_GFX_PFP, AMDGPU_INFO_FW_VERSION,
    AMDGPU_INFO_HW_IP_INFO, DRM_IOCTL_VERSION, DrmAmdgpuInfo, DrmAmdgpuInfoDevice, DrmAmdgpuInfoFirmware,
    DrmAmdgpuInfoHwIp, DrmAmdgpuInfoQuery, DrmAmdgpuInfoQueryHwIp, DrmAmdgpuQueryFw,
};
use crate::error::{IoctlError, OpenError, VersionError};
use crate::family::Family;
use crate::flags::IdsFlags;
use crate::sys::{self, PlainData};

/// Longest driver name, date or description [`Device::version`] accepts. drm-rs sizes its
/// buffers from the lengths the kernel reports, so a longer string is rejected after the call.
pub const VERSION_STRING_MAX: usize = 4096;

/// An open DRM device node. The descriptor closes on drop, which the borrow checker orders after
/// every object ([`crate::Bo`], [`crate::Context`], ...) borrowed from it.
///
/// It implements [`drm::Device`], so drm-rs's core queries (capabilities, the bus id) work on it
/// too; [`Device::version`] is drm-rs's `get_driver` with this crate's retry and error type.
#[derive(Debug)]
pub struct Device {
    fd: OwnedFd,
    path: PathBuf,
}

/// The reply to `DRM_IOCTL_VERSION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverVersion {
    /// Major, minor, patch level.
    pub version: (i32, i32, i32),
    /// Driver name (`amdgpu`).
    pub name: String,
    /// Driver date.
    pub date: String,
    /// Driver description.
    pub desc: String,
}

/// The reply to `AMDGPU_INFO_DEV_INFO`, with the family decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The family named by `raw.family`.
    pub family: Family,
    /// The struct as the kernel wrote it.
    pub raw: DrmAmdgpuInfoDevice,
}

impl DeviceInfo {
    /// `raw.ids_flags` as flags; bits the installed header does not name are kept.
    #[must_use]
    pub fn ids_flags(&self) -> IdsFlags {
        IdsFlags::from_bits_retain(self.raw.ids_flags)
    }
}

/// A firmware whose version [`Device::firmware_version`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Firmware {
    /// GFX micro engine (`AMDGPU_INFO_FW_GFX_ME`).
    Me,
    /// GFX pre-fetch parser (`AMDGPU_INFO_FW_GFX_PFP`).
    Pfp,
    /// Compute micro engine `index` (`AMDGPU_INFO_FW_GFX_MEC`).
    Mec {
        /// MEC index.
        index: u32,
    },
}

impl Firmware {
    fn query(self) -> DrmAmdgpuQueryFw {
        let (fw_type, index) = match self {
            Self::Me => (AMDGPU_INFO_FW_GFX_ME, 0),
            Self::Pfp => (AMDGPU_INFO_FW_GFX_PFP, 0),
            Self::Mec { index } => (AMDGPU_INFO_FW_GFX_MEC, index),
        };
        DrmAmdgpuQueryFw { fw_type, ip_instance: 0, index, _pad: 0 }
    }
}

impl Device {
    /// Opens a device node read-write with `O_CLOEXEC`.
    ///
    /// # Errors
    ///
    /// [`OpenError`] naming the path.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let path = path.as_ref();
        let fd = open(path, OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty())
            .map_err(|errno| OpenError { path: path.to_owned(), source: errno.into() })?;
        Ok(Self::from_fd(fd, path))
    }

    /// Wraps an already open descriptor; `path` is only used in messages.
    #[must_use]
    pub fn from_fd(fd: OwnedFd, path: impl Into<PathBuf>) -> Self {
        Self { fd, path: path.into() }
    }

    /// The path the device was opened from.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives the descriptor back, closing nothing.
    #[must_use]
    pub fn into_file(self) -> File {
        File::from(self.fd)
    }

    /// `DRM_IOCTL_VERSION`: driver version and name, date and description.
    ///
    /// # Errors
    ///
    /// [`VersionError`]: the ioctl failed (`ENOTTY` on a file that is not a DRM device), or a
    /// string is longer than [`VERSION_STRING_MAX`].
    pub fn version(&self) -> Result<DriverVersion, VersionError> {
        let driver =
            sys::retry(DRM_IOCTL_VERSION, || drm::Device::get_driver(self).map_err(|error| sys::errno_of(&error)))?;
        Ok(DriverVersion {
            version: driver.version,
            name: text("name", driver.name)?,
            date: text("date", driver.date)?,
            desc: text("desc", driver.desc)?,
        })
    }

    /// `DRM_IOCTL_AMDGPU_INFO` for a query whose reply is a plain struct `R`.
    ///
    /// The kernel writes at most `size_of::<R>()` bytes; bytes it does not write stay as
    /// `R::default()` has them.
    ///
    /// # Errors
    ///
    /// [`IoctlError`] with the `errno` (`ENOTTY` on a non-DRM file, `EINVAL` for an unknown
    /// query).
    pub fn info<R: PlainData + Default>(&self, query: u32, params: DrmAmdgpuInfoQuery) -> Result<R, IoctlError> {
        let mut reply = R::default();
        // PANIC: INFO reply structs are a few hundred bytes.
        let return_size = u32::try_from(size_of::<R>()).expect("INFO replies are far below 4 GiB");
        let mut arg = DrmAmdgpuInfo {
            return_pointer: std::ptr::from_mut(&mut reply).expose_provenance() as u64,
            return_size,
            query,
            params,
        };
        // SAFETY: `return_pointer` is the address of `reply`, live and exclusively borrowed for
        // the call, and `return_size` is its size, which bounds what the kernel writes; any bytes
        // it writes leave a valid `R` (`R: PlainData`).
        unsafe { sys::ioctl_with_pointers(self.fd.as_fd(), sys::AMDGPU_INFO, &mut arg) }?;
        Ok(reply)
    }

    /// `AMDGPU_INFO_DEV_INFO`.
    ///
    /// # Errors
    ///
    /// [`IoctlError`], see [`Device::info`].
    pub fn device_info(&self) -> Result<DeviceInfo, IoctlError> {
        let raw: DrmAmdgpuInfoDevice = self.info(AMDGPU_INFO_DEV_INFO, DrmAmdgpuInfoQuery::zeroed())?;
        Ok(DeviceInfo { family: Family::from_raw(raw.family), raw })
    }

    /// `AMDGPU_INFO_FW_VERSION` for the ME, PFP or a MEC firmware.
    ///
    /// # Errors
    ///
    /// [`IoctlError`], see [`Device::info`].
    pub fn firmware_version(&self, firmware: Firmware) -> Result<DrmAmdgpuInfoFirmware, IoctlError> {
        let mut params = DrmAmdgpuInfoQuery::zeroed();
        params.query_fw = firmware.query();
        self.info(AMDGPU_INFO_FW_VERSION, params)
    }

    /// `AMDGPU_INFO_HW_IP_INFO` for one IP (`AMDGPU_HW_IP_COMPUTE`): version, IB alignment,
    /// available rings.
    ///
    /// # Errors
    ///
    /// [`IoctlError`], see [`Device::info`].
    pub fn hw_ip_info(&self, ip_type: u32, ip_instance: u32) -> Result<DrmAmdgpuInfoHwIp, IoctlError> {
        let mut params = DrmAmdgpuInfoQuery::zeroed();
        params.query_hw_ip = DrmAmdgpuInfoQueryHwIp { type_: ip_type, ip_instance };
        self.info(AMDGPU_INFO_HW_IP_INFO, params)
    }
}

impl AsFd for Device {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl drm::Device for Device {}

/// One `drm_version` string as drm-rs copied it, up to a NUL, bounded by [`VERSION_STRING_MAX`].
fn text(field: &'static str, string: OsString) -> Result<String, VersionError> {
    let mut bytes = string.into_encoded_bytes();
    if bytes.len() > VERSION_STRING_MAX {
        return Err(VersionError::TooLong { field, len: bytes.len(), limit: VERSION_STRING_MAX });
    }
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
