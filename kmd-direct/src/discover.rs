//! Render-node discovery: `/dev/dri/renderD*`, identified by `DRM_IOCTL_VERSION` and sysfs.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::device::Device;
use crate::error::{DiscoverError, NodeError};

/// The render-node directory.
pub const DEV_DRI: &str = "/dev/dri";
/// The sysfs DRM class directory (`renderDNNN/device/{vendor,device,driver}`).
pub const SYS_CLASS_DRM: &str = "/sys/class/drm";
/// Render-node minors `renderD128` to `renderD191`: 64 nodes at most.
pub const RENDER_MINORS: core::ops::RangeInclusive<u32> = 128..=191;
/// The PCI vendor id of AMD (ATI).
pub const PCI_VENDOR_AMD: u16 = 0x1002;

/// One render node and what is known about it; a node that cannot be identified carries the
/// reason in `error` instead of failing the whole discovery.
#[derive(Debug)]
pub struct RenderNode {
    /// `/dev/dri/renderDNNN`.
    pub path: PathBuf,
    /// Driver name: from `DRM_IOCTL_VERSION`, else from the sysfs `driver` link.
    pub driver: Option<String>,
    /// PCI vendor id from sysfs.
    pub vendor: Option<u16>,
    /// PCI device id from sysfs.
    pub device_id: Option<u16>,
    /// Why the node could not be opened or queried.
    pub error: Option<NodeError>,
}

impl RenderNode {
    /// Whether the node is driven by amdgpu.
    #[must_use]
    pub fn is_amdgpu(&self) -> bool {
        self.driver.as_deref() == Some("amdgpu")
    }
}

/// Lists the render nodes of this machine; none (and no error) when `/dev/dri` does not exist.
///
/// # Errors
///
/// [`DiscoverError`] when `/dev/dri` exists but cannot be listed.
pub fn discover() -> Result<Vec<RenderNode>, DiscoverError> {
    discover_in(Path::new(DEV_DRI), Path::new(SYS_CLASS_DRM))
}

/// [`discover`] over other directories (tests, containers with a relocated sysfs).
///
/// # Errors
///
/// [`DiscoverError`] when `dev_dir` exists but cannot be listed.
pub fn discover_in(dev_dir: &Path, sysfs_dir: &Path) -> Result<Vec<RenderNode>, DiscoverError> {
    let list_error = |source| DiscoverError { path: dev_dir.to_owned(), source };
    let entries = match fs::read_dir(dev_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(list_error(error)),
    };
    let mut minors = Vec::new();
    for entry in entries {
        let entry = entry.map_err(list_error)?;
        let Some(minor) = entry.file_name().to_str().and_then(render_minor) else { continue };
        minors.push(minor);
    }
    minors.sort_unstable();
    Ok(minors.into_iter().map(|minor| probe(dev_dir, sysfs_dir, minor)).collect())
}

/// `renderDNNN` with NNN in [`RENDER_MINORS`].
fn render_minor(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("renderD")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|minor| RENDER_MINORS.contains(minor))
}

fn probe(dev_dir: &Path, sysfs_dir: &Path, minor: u32) -> RenderNode {
    let name = format!("renderD{minor}");
    let sys_device = sysfs_dir.join(&name).join("device");
    let sysfs_driver = fs::read_link(sys_device.join("driver"))
        .ok()
        .and_then(|target| target.file_name().and_then(|n| n.to_str()).map(str::to_owned));
    let mut node = RenderNode {
        path: dev_dir.join(&name),
        driver: sysfs_driver,
        vendor: read_hex_u16(&sys_device.join("vendor")),
        device_id: read_hex_u16(&sys_device.join("device")),
        error: None,
    };
    match Device::open(&node.path).map_err(NodeError::from).and_then(|d| d.version().map_err(NodeError::from)) {
        Ok(version) => node.driver = Some(version.name),
        Err(error) => node.error = Some(error),
    }
    node
}

/// A sysfs id file: `0x1002\n`.
fn read_hex_u16(path: &Path) -> Option<u16> {
    let text = fs::read_to_string(path).ok()?;
    let digits = text.trim().strip_prefix("0x")?;
    u16::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_minor_accepts_only_the_render_range() {
        assert_eq!(render_minor("renderD128"), Some(128));
        assert_eq!(render_minor("renderD191"), Some(191));
        assert_eq!(render_minor("renderD192"), None);
        assert_eq!(render_minor("renderD"), None);
        assert_eq!(render_minor("renderD+12"), None);
        assert_eq!(render_minor("card0"), None);
    }
}
