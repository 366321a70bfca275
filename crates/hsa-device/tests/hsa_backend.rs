//! The HSA and HIP backends against the installed ROCm 5.2.3 runtimes.
//!
//! Without the libraries these tests skip with a printed reason, except under `CI=true`, where a
//! missing runtime is a failure. Without `/dev/kfd` the runtimes cannot start: the tests then
//! check that every layer reports that with the call's name and status.

use std::path::Path;
use std::sync::Arc;

use engine::device::BackendError;
use engine::hip::HipDevice;
use engine::hsa::{HsaDevice, HsaOpenError};
use engine::select::{DeviceKind, select, select_with};
use hip_sys::{Hip, HipError};
use hsa_sys::{Hsa, HsaFns, HsaStatus};
use pm4_encoding::Target;

fn kfd_present() -> bool {
    Path::new("/dev/kfd").exists()
}

/// `None` (skip) when the library is missing, unless CI requires it.
fn required<T, E: std::fmt::Display>(what: &str, loaded: Result<T, E>) -> Option<T> {
    match loaded {
        Ok(value) => Some(value),
        Err(error) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true and the {what} runtime does not load: {error}")
        }
        Err(error) => {
            eprintln!("skipped: the {what} runtime does not load: {error}");
            None
        }
    }
}

#[test]
fn hsa_loads_with_every_symbol() {
    let Some(hsa) = required("HSA", Hsa::load()) else { return };
    // A load with a missing symbol is an error, so a loaded table has all of them.
    assert!(!HsaFns::SYMBOLS.is_empty());
    assert!(hsa.library_path().to_string_lossy().contains("libhsa-runtime64"), "{}", hsa.library_path().display());
}

#[test]
fn open_without_kfd_names_hsa_init_and_its_status() {
    let Some(hsa) = required("HSA", Hsa::load()) else { return };
    let result = HsaDevice::open(Arc::new(hsa), 0);
    if kfd_present() {
        // A machine with the kernel driver may have a supported GPU, or report why not.
        if let Err(error) = result {
            eprintln!("/dev/kfd is present; open failed with: {error}");
        }
        return;
    }
    let error = result.expect_err("hsa_init cannot succeed without /dev/kfd");
    assert!(
        matches!(
            error,
            HsaOpenError::Call(BackendError::Hsa { call: "hsa_init", status: HsaStatus::ERROR_OUT_OF_RESOURCES })
        ),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
}

#[test]
fn auto_selects_the_soft_device_and_says_why() {
    if required("HSA", Hsa::load()).is_none() || kfd_present() {
        return;
    }
    let selected = select(DeviceKind::Auto, Some(Target::Gfx1151)).expect("auto always selects a device");
    assert_eq!(selected.kind(), DeviceKind::Sim);
    assert_eq!(selected.reason, "soft device (gfx1151): hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
}

#[test]
fn hsa_selection_names_the_call_and_suggests_sim() {
    if required("HSA", Hsa::load()).is_none() || kfd_present() {
        return;
    }
    let error = select(DeviceKind::Hsa, None).expect_err("no usable GPU").to_string();
    assert!(error.contains("hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)"), "{error}");
    assert!(error.contains("--device sim"), "{error}");
}

#[test]
fn a_missing_runtime_library_selects_the_soft_device() {
    let missing = || Hsa::load_with_env(Some("/nonexistent/libhsa-runtime64.so.1".into()));
    let selected = select_with(DeviceKind::Auto, None, missing).expect("auto falls back");
    assert_eq!(selected.kind(), DeviceKind::Sim);
    assert!(selected.reason.starts_with("soft device (gfx1100): the HSA runtime did not load"), "{}", selected.reason);
    let error = select_with(DeviceKind::Hsa, None, missing).expect_err("hsa requires the runtime").to_string();
    assert!(error.contains("/nonexistent/libhsa-runtime64.so.1") && error.contains("--device sim"), "{error}");
}

#[test]
fn hip_init_reports_invalid_device_by_name() {
    let Some(hip) = required("HIP", Hip::load()) else { return };
    let hip = Arc::new(hip);
    if kfd_present() {
        return;
    }
    assert_eq!(hip.init(), HipError::ERROR_INVALID_DEVICE);
    assert_eq!(HipError::ERROR_INVALID_DEVICE.name(), Some("hipErrorInvalidDevice"));
    let error = HipDevice::open(Arc::clone(&hip), 0).expect_err("no GPU");
    assert_eq!(error, BackendError::Hip { call: "hipInit", error: HipError(101) });
    assert_eq!(error.to_string(), "hipInit returned hipErrorInvalidDevice (101)");
}
