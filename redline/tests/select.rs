//! Device selection against the installed ROCm 5.2.3 runtime (no GPU here) and against the soft
//! HSA runtime: `auto` takes the soft device and says why, or the GPU agent the runtime reports;
//! `hsa` names the failing call and suggests `--device sim`.
//!
//! Without Debian's runtime library the ROCr tests skip with a printed reason, except under
//! `CI=true`, where it is a failure.

use std::path::Path;

use hal::Device;
use hsa_sys::Hsa;
use pm4_encoding::Target;
use redline::select::{AnyDevice, DeviceKind, select_with};

fn kfd_present() -> bool {
    Path::new("/dev/kfd").exists()
}

/// Debian's ROCr, or `None` (skip) when it is missing, unless CI requires it.
fn rocr() -> Option<Hsa> {
    match Hsa::load_with_env(None) {
        Ok(hsa) => Some(hsa),
        Err(error) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true and the HSA runtime does not load: {error}")
        }
        Err(error) => {
            eprintln!("skipped: the HSA runtime does not load: {error}");
            None
        }
    }
}

#[test]
fn auto_selects_the_soft_device_and_says_why() {
    if rocr().is_none() || kfd_present() {
        return;
    }
    let selected = select_with(DeviceKind::Auto, Some(Target::Gfx1151), || Hsa::load_with_env(None)).unwrap();
    assert_eq!(selected.kind(), DeviceKind::Sim);
    assert_eq!(selected.reason, "soft device (gfx1151): hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
}

#[test]
fn hsa_selection_names_the_call_and_suggests_sim() {
    if rocr().is_none() || kfd_present() {
        return;
    }
    let error = select_with(DeviceKind::Hsa, None, || Hsa::load_with_env(None)).unwrap_err().to_string();
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
fn auto_and_hsa_take_the_soft_runtimes_gpu_agent() {
    let path = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    for kind in [DeviceKind::Auto, DeviceKind::Hsa] {
        let selected =
            select_with(kind, Some(Target::Gfx1030), || Hsa::load_from(std::slice::from_ref(&path))).unwrap();
        assert!(matches!(selected.device, AnyDevice::Hsa(_)), "{kind}: {}", selected.reason);
        // The agent's ISA decides the target (the soft runtime's default agent), not --arch.
        assert_eq!(selected.device.target(), soft_hsa::DEFAULT_TARGET);
        assert!(
            selected.reason.starts_with("HSA GPU agent 0 (gfx1100, amdgcn-amd-amdhsa--gfx1100)"),
            "{}",
            selected.reason
        );
    }
}
