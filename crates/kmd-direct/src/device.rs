//! An open DRM device: open, driver version, and the amdgpu INFO queries.

use std::ffi::c_char;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::abi::{
    AMDGPU_INFO_DEV_INFO, AMDGPU_INFO_FW_GFX_ME, AMDGPU_INFO_FW_GFX_MEC, AMDGPU_INFO_FW_GFX_PFP, AMDGPU_INFO_FW_VERSION,
    AMDGPU_INFO_HW_IP_INFO, DRM_IOCTL_AMDGPU_INFO, DRM_IOCTL_VERSION, DrmAmdgpuInfo, DrmAmdgpuInfoDevice,
    DrmAmdgpuInfoFirmware, DrmAmdgpuInfoHwIp, DrmAmdgpuInfoQuery, DrmAmdgpuInfoQueryHwIp, DrmAmdgpuQueryFw, DrmVersion,
};
use crate::error::{IoctlError, OpenError, VersionError};
use crate::family::Family;
use crate::sys::{self, PlainData};

/// Longest driver name, date or description [`Device::version`] reads.
pub const VERSION_STRING_MAX: usize = 4096;

/// An open DRM device node. The descriptor closes on drop, which the borrow checker orders after
/// every object ([`crate::Bo`], [`crate::Context`], ...) borrowed from it.
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
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .map_err(|source| OpenError { path: path.to_owned(), source })?;
        Ok(Self::from_fd(OwnedFd::from(file), path))
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
        // First call with null buffers: the kernel reports the lengths.
        let mut lengths = DrmVersion::default();
        // SAFETY: every buffer pointer is null with length 0, so the kernel copies no string.
        unsafe { sys::ioctl_with_pointers(self.fd.as_fd(), DRM_IOCTL_VERSION, &mut lengths) }?;
        let mut name = string_buffer("name", lengths.name_len)?;
        let mut date = string_buffer("date", lengths.date_len)?;
        let mut desc = string_buffer("desc", lengths.desc_len)?;
        let mut version = DrmVersion {
            name_len: name.len(),
            name: name.as_mut_ptr().cast::<c_char>(),
            date_len: date.len(),
            date: date.as_mut_ptr().cast::<c_char>(),
            desc_len: desc.len(),
            desc: desc.as_mut_ptr().cast::<c_char>(),
            ..DrmVersion::default()
        };
        // SAFETY: each pointer is a live, exclusively borrowed `Vec<u8>` of the length beside it;
        // the kernel copies at most that many bytes into it and writes back only integers and
        // the same pointers.
        unsafe { sys::ioctl_with_pointers(self.fd.as_fd(), DRM_IOCTL_VERSION, &mut version) }?;
        Ok(DriverVersion {
            version: (version.version_major, version.version_minor, version.version_patchlevel),
            name: text(name, version.name_len),
            date: text(date, version.date_len),
            desc: text(desc, version.desc_len),
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
        unsafe { sys::ioctl_with_pointers(self.fd.as_fd(), DRM_IOCTL_AMDGPU_INFO, &mut arg) }?;
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

/// A zeroed buffer for one `drm_version` string, bounded by [`VERSION_STRING_MAX`].
fn string_buffer(field: &'static str, len: usize) -> Result<Vec<u8>, VersionError> {
    if len > VERSION_STRING_MAX {
        return Err(VersionError::TooLong { field, len, limit: VERSION_STRING_MAX });
    }
    Ok(vec![0; len])
}

/// The string the kernel copied: at most the buffer, at most the length it reported, up to a NUL.
fn text(mut buffer: Vec<u8>, reported_len: usize) -> String {
    buffer.truncate(reported_len);
    if let Some(nul) = buffer.iter().position(|&b| b == 0) {
        buffer.truncate(nul);
    }
    String::from_utf8_lossy(&buffer).into_owned()
}
