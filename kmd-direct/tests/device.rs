//! Discovery and error paths on a machine without an amdgpu render node: nothing panics, every
//! failure is typed and names what failed.
#![cfg(all(
    target_os = "linux",
    target_pointer_width = "64",
    any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")
))]

use std::path::{Path, PathBuf};

use kmd_direct::{
    BoDesc, Device, Firmware, GemCreateFlags, GemDomains, GemError, NodeError, OpenError, VersionError, abi, discover,
    discover_in,
};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("kmd-direct-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn discovery_on_this_machine_lists_nodes_with_errors_captured() {
    let nodes = discover().expect("listing /dev/dri");
    if !Path::new(kmd_direct::DEV_DRI).exists() {
        assert!(nodes.is_empty());
    }
    for node in &nodes {
        // Shown with --nocapture; an amdgpu node here is a GPU machine, not a failure.
        eprintln!(
            "{}: driver {:?}, vendor {:04x?}, device {:04x?}, amdgpu {}, error {:?}",
            node.path.display(),
            node.driver,
            node.vendor,
            node.device_id,
            node.is_amdgpu(),
            node.error.as_ref().map(ToString::to_string),
        );
    }
}

#[test]
fn discovery_reads_sysfs_and_captures_a_failed_version_query() {
    let root = scratch("discover");
    let dev = root.join("dri");
    let sys = root.join("sys");
    std::fs::create_dir_all(&dev).unwrap();
    // A regular file opens read-write but answers DRM_IOCTL_VERSION with ENOTTY.
    for name in ["renderD128", "card0", "renderD200", "renderDx"] {
        std::fs::write(dev.join(name), b"").unwrap();
    }
    let device = sys.join("renderD128/device");
    std::fs::create_dir_all(&device).unwrap();
    std::fs::create_dir_all(root.join("drivers/amdgpu")).unwrap();
    std::fs::write(device.join("vendor"), "0x1002\n").unwrap();
    std::fs::write(device.join("device"), "0x73bf\n").unwrap();
    std::os::unix::fs::symlink(root.join("drivers/amdgpu"), device.join("driver")).unwrap();

    let nodes = discover_in(&dev, &sys).unwrap();
    assert_eq!(nodes.len(), 1, "only renderD128..renderD191 count: {nodes:?}");
    let node = &nodes[0];
    assert_eq!(node.path, dev.join("renderD128"));
    assert_eq!(node.vendor, Some(kmd_direct::PCI_VENDOR_AMD));
    assert_eq!(node.device_id, Some(0x73bf));
    assert_eq!(node.driver.as_deref(), Some("amdgpu"), "driver from the sysfs link");
    assert!(node.is_amdgpu());
    match &node.error {
        Some(NodeError::Version(VersionError::Ioctl(e))) => {
            assert_eq!(e.ioctl, "DRM_IOCTL_VERSION");
            assert_eq!(e.errno, libc::ENOTTY);
        }
        other => panic!("expected a VERSION ioctl error, got {other:?}"),
    }

    assert!(discover_in(&root.join("absent"), &sys).unwrap().is_empty());
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn opening_a_missing_node_names_the_path() {
    let path = Path::new("/nonexistent/dri/renderD128");
    let OpenError { path: reported, source } = Device::open(path).unwrap_err();
    assert_eq!(reported, path);
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let message = Device::open(path).unwrap_err().to_string();
    assert!(message.contains("/nonexistent/dri/renderD128"), "{message}");
}

#[test]
fn ioctls_on_a_non_drm_file_are_typed_errors_with_errno() {
    let device = Device::open("/dev/null").unwrap();

    let info = device.device_info().unwrap_err();
    assert_eq!(info.ioctl, "DRM_IOCTL_AMDGPU_INFO");
    assert_eq!(info.request, abi::DRM_IOCTL_AMDGPU_INFO.request());
    assert_eq!(info.errno, libc::ENOTTY);
    assert!(info.to_string().starts_with("DRM_IOCTL_AMDGPU_INFO (0x40206445) failed"), "{info}");

    assert_eq!(device.firmware_version(Firmware::Mec { index: 0 }).unwrap_err().errno, libc::ENOTTY);
    assert_eq!(device.hw_ip_info(abi::AMDGPU_HW_IP_COMPUTE, 0).unwrap_err().errno, libc::ENOTTY);
    assert!(matches!(device.version(), Err(VersionError::Ioctl(e)) if e.errno == libc::ENOTTY));
    assert_eq!(device.create_context().unwrap_err().ioctl, "DRM_IOCTL_AMDGPU_CTX");

    let desc = BoDesc { size: 4096, alignment: 4096, domains: GemDomains::GTT, flags: GemCreateFlags::empty() };
    match device.create_bo(desc) {
        Err(GemError::Ioctl(e)) => {
            assert_eq!(e.ioctl, "DRM_IOCTL_AMDGPU_GEM_CREATE");
            assert_eq!(e.errno, libc::ENOTTY);
        }
        other => panic!("expected a GEM_CREATE ioctl error, got {other:?}"),
    }
    assert!(matches!(device.create_bo(BoDesc { size: 0, ..desc }), Err(GemError::ZeroSize)));
    assert!(device.create_bo_list(&[]).is_err());
}
