//! The HSA and HIP backends against the installed ROCm 5.2.3 runtimes (Debian's
//! `libhsa-runtime64-1` and `libamdhip64-5`), loaded from their default names.
//!
//! Without the libraries these tests skip with a printed reason, except under `CI=true`, where a
//! missing runtime is a failure. Without `/dev/kfd` the runtimes cannot start: the tests then
//! check that every layer reports that with the call's name and status.

use std::path::Path;
use std::sync::Arc;

use hal::{BackendError, RuntimeStatus};
use hip_sys::{Hip, HipError};
use hsa_device::hip::HipDevice;
use hsa_device::{HsaDevice, HsaOpenError, probe};
use hsa_sys::{Hsa, HsaFns, HsaStatus};

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

/// ROCr from its default names (a developer's `REDLINE_HSA_LIBRARY` is ignored: these tests are
/// about ROCr).
fn rocr() -> Option<Hsa> {
    required("HSA", Hsa::load_with_env(None))
}

#[test]
fn hsa_loads_with_every_symbol_and_no_extension() {
    let Some(hsa) = rocr() else { return };
    // A load with a missing symbol is an error, so a loaded table has all of them.
    assert!(!HsaFns::SYMBOLS.is_empty());
    assert!(hsa.library_path().to_string_lossy().contains("libhsa-runtime64"), "{}", hsa.library_path().display());
    assert!(hsa.extensions().redline_soft_hsa_inject.is_none(), "ROCr exports no Redline extension");
}

#[test]
fn open_without_kfd_names_hsa_init_and_its_status() {
    let Some(hsa) = rocr() else { return };
    let result = HsaDevice::open(Arc::new(hsa), 0);
    if kfd_present() {
        // A machine with the kernel driver may have a supported GPU, or report why not.
        if let Err(error) = result {
            eprintln!("/dev/kfd is present; open failed with: {error}");
        }
        return;
    }
    let error = result.expect_err("hsa_init cannot succeed without /dev/kfd");
    let status = RuntimeStatus { value: 0x1008, name: Some("HSA_STATUS_ERROR_OUT_OF_RESOURCES"), hex: true };
    assert!(
        matches!(&error, HsaOpenError::Call(BackendError::Call { call: "hsa_init", status: s }) if *s == status),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
}

#[test]
fn probe_without_kfd_reports_the_init_status() {
    let Some(hsa) = rocr() else { return };
    if kfd_present() {
        return;
    }
    let report = probe(&Arc::new(hsa));
    assert_eq!(report.init_status, HsaStatus::ERROR_OUT_OF_RESOURCES);
    assert!(report.agents.is_empty() && report.error.is_none(), "{report:?}");
}

#[test]
fn hip_init_reports_invalid_device_by_name() {
    let Some(hip) = required("HIP", Hip::load()) else { return };
    let hip = Arc::new(hip);
    if kfd_present() {
        return;
    }
    assert_eq!(hip.init(), HipError::ERROR_INVALID_DEVICE);
    let error = HipDevice::open(Arc::clone(&hip), 0).expect_err("no GPU");
    let status = RuntimeStatus { value: 101, name: Some("hipErrorInvalidDevice"), hex: false };
    assert_eq!(error, BackendError::Call { call: "hipInit", status });
    assert_eq!(error.to_string(), "hipInit returned hipErrorInvalidDevice (101)");
}
