//! Device selection: `--device auto|sim|hsa`, the one place that names the backends.
//!
//! `auto` takes an HSA GPU when the runtime library loads, `hsa_init` succeeds and a GPU agent
//! with a supported target exists; otherwise the soft device. Either way [`Selected::reason`] says
//! which device was chosen and why. `hsa` without a usable GPU is an error that names the failing
//! call and its status and suggests `--device sim`. The chosen device is an [`AnyDevice`], which
//! the route (generic over the HAL's [`Device`]) drives the same way whichever backend it holds.

mod device;
mod facts;

use std::sync::Arc;

use engine::bench::{DeviceRecord, Devices};
use hal::Device as _;
use hsa_device::{HsaDevice, HsaOpenError};
use hsa_sys::Hsa;
use pm4_encoding::Target;
use soft_device::SimDevice;

pub use device::{AnyDevice, DeviceKind, UnknownDeviceKind};

/// A chosen device and why it was chosen.
#[derive(Debug)]
pub struct Selected {
    /// The device.
    pub device: AnyDevice,
    /// Which device and why (`soft device: hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES
    /// (0x1008)`).
    pub reason: String,
}

impl Selected {
    /// `sim` or `hsa`.
    #[must_use]
    pub fn kind(&self) -> DeviceKind {
        self.device.kind()
    }
}

/// Why `--device hsa` could not be honoured.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The runtime library did not load.
    #[error("--device hsa: the HSA runtime did not load: {0}; use --device sim for the soft device")]
    Load(#[from] hsa_sys::LoadError),
    /// The runtime loaded but no usable GPU agent was opened.
    #[error("--device hsa: {0}; use --device sim for the soft device")]
    Open(#[from] HsaOpenError),
    /// Not a device kind.
    #[error(transparent)]
    Kind(UnknownDeviceKind),
}

/// Chooses a device; `arch` is the soft device's target (default gfx1100).
///
/// # Errors
/// [`SelectError`] only for [`DeviceKind::Hsa`].
pub fn select(kind: DeviceKind, arch: Option<Target>) -> Result<Selected, SelectError> {
    select_with(kind, arch, Hsa::load)
}

/// Chooses the device a model runs on: whichever [`select`] chose (models run on every
/// backend). Returns the device and why it was chosen.
///
/// # Errors
/// [`SelectError`], only for [`DeviceKind::Hsa`].
pub fn select_for_model(kind: DeviceKind, arch: Option<Target>) -> Result<(AnyDevice, String), SelectError> {
    let selected = select(kind, arch)?;
    Ok((selected.device, selected.reason))
}

/// [`select`] with the runtime loader passed in (tests point it at a missing library).
///
/// # Errors
/// As [`select`].
pub fn select_with(
    kind: DeviceKind,
    arch: Option<Target>,
    load: impl FnOnce() -> Result<Hsa, hsa_sys::LoadError>,
) -> Result<Selected, SelectError> {
    let target = arch.unwrap_or(Target::Gfx1100);
    let sim = |why: String| Selected {
        device: AnyDevice::Sim(Box::new(SimDevice::new(target))),
        reason: format!("soft device ({target}): {why}"),
    };
    match kind {
        DeviceKind::Sim => Ok(sim("--device sim".to_owned())),
        DeviceKind::Hsa => {
            let device = HsaDevice::open(Arc::new(load()?), 0)?;
            let reason = format!("HSA GPU agent 0 ({}, {}): --device hsa", device.target(), device.isa());
            Ok(Selected { device: AnyDevice::Hsa(Box::new(device)), reason })
        }
        DeviceKind::Auto => match load() {
            Err(error) => Ok(sim(format!("the HSA runtime did not load: {error}"))),
            Ok(hsa) => match HsaDevice::open(Arc::new(hsa), 0) {
                Ok(device) => {
                    let reason = format!("HSA GPU agent 0 ({}, {})", device.target(), device.isa());
                    Ok(Selected { device: AnyDevice::Hsa(Box::new(device)), reason })
                }
                Err(error) => Ok(sim(error.to_string())),
            },
        },
    }
}

/// The devices this program opens, for the bench ([`engine::bench::Devices`]): the bench never
/// names a backend, so it asks here.
#[derive(Debug, Clone, Copy, Default)]
pub struct Backends;

impl Devices for Backends {
    type Device = AnyDevice;
    type Error = SelectError;

    fn check(&self, name: &str) -> Result<(), String> {
        name.parse::<DeviceKind>().map(drop).map_err(|e| e.to_string())
    }

    fn open(&self, name: &str, target: Target) -> Result<(AnyDevice, String), SelectError> {
        let kind = name.parse::<DeviceKind>().map_err(SelectError::Kind)?;
        select_for_model(kind, Some(target))
    }

    fn kind(&self, device: &AnyDevice) -> &'static str {
        device.kind().name()
    }

    fn describe(&self, device: &AnyDevice) -> DeviceRecord {
        facts::device(device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_kinds_parse_and_list_the_accepted_values() {
        assert_eq!("auto".parse(), Ok(DeviceKind::Auto));
        assert_eq!("sim".parse(), Ok(DeviceKind::Sim));
        assert_eq!("hsa".parse(), Ok(DeviceKind::Hsa));
        let error = "gpu".parse::<DeviceKind>().unwrap_err();
        assert_eq!(error.to_string(), "unknown device \"gpu\": accepted values are auto, sim, hsa");
    }

    #[test]
    fn sim_is_always_available() {
        let selected = select(DeviceKind::Sim, Some(Target::Gfx1201)).unwrap();
        assert_eq!(selected.kind(), DeviceKind::Sim);
        assert!(selected.reason.starts_with("soft device (gfx1201)"), "{}", selected.reason);
    }

    #[test]
    fn a_missing_runtime_falls_back_or_fails_by_kind() {
        let missing = || Hsa::load_with_env(Some("/nonexistent/libhsa-runtime64.so.1".into()));
        let selected = select_with(DeviceKind::Auto, None, missing).unwrap();
        assert_eq!(selected.kind(), DeviceKind::Sim);
        assert!(selected.reason.contains("did not load"), "{}", selected.reason);
        let error = select_with(DeviceKind::Hsa, None, missing).unwrap_err().to_string();
        assert!(error.contains("--device sim"), "{error}");
    }

    #[test]
    fn a_model_runs_on_the_soft_device_of_the_requested_target() {
        for kind in [DeviceKind::Sim, DeviceKind::Auto] {
            let missing = || Hsa::load_with_env(Some("/nonexistent/libhsa-runtime64.so.1".into()));
            let selected = select_with(kind, Some(Target::Gfx1201), missing).unwrap();
            assert_eq!(selected.device.target(), Target::Gfx1201);
            assert!(selected.reason.starts_with("soft device (gfx1201)"), "{}", selected.reason);
        }
    }
}
