//! Device selection: `--device auto|sim|hsa`.
//!
//! `auto` takes an HSA GPU when the runtime library loads, `hsa_init` succeeds and a GPU agent
//! with a supported target exists; otherwise the soft device. Either way [`Selected::reason`] says
//! which device was chosen and why. `hsa` without a usable GPU is an error that names the failing
//! call and its status and suggests `--device sim`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use hsa_sys::Hsa;
use pm4_encoding::Target;

use crate::device::Device;
use crate::hsa::{HsaDevice, HsaOpenError};
use crate::sim::SimDevice;

/// The `--device` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeviceKind {
    /// An HSA GPU when one is usable, else the soft device.
    #[default]
    Auto,
    /// The soft device.
    Sim,
    /// An HSA GPU, or an error.
    Hsa,
}

impl DeviceKind {
    /// The accepted `--device` values.
    pub const ACCEPTED: [&'static str; 3] = ["auto", "sim", "hsa"];

    /// The `--device` spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            DeviceKind::Auto => "auto",
            DeviceKind::Sim => "sim",
            DeviceKind::Hsa => "hsa",
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--device` value that is not one of [`DeviceKind::ACCEPTED`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown device {given:?}: accepted values are auto, sim, hsa")]
pub struct UnknownDeviceKind {
    /// The value given.
    pub given: String,
}

impl FromStr for DeviceKind {
    type Err = UnknownDeviceKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(DeviceKind::Auto),
            "sim" => Ok(DeviceKind::Sim),
            "hsa" => Ok(DeviceKind::Hsa),
            _ => Err(UnknownDeviceKind { given: s.to_owned() }),
        }
    }
}

/// The device chosen.
#[derive(Debug)]
pub enum SelectedDevice {
    /// The soft device.
    Sim(Box<SimDevice>),
    /// An HSA GPU.
    Hsa(Box<HsaDevice>),
}

/// A chosen device and why it was chosen.
#[derive(Debug)]
pub struct Selected {
    /// The device.
    pub device: SelectedDevice,
    /// Which device and why (`soft device: hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES
    /// (0x1008)`).
    pub reason: String,
}

impl Selected {
    /// The device as the trait the routes use.
    pub fn as_device(&mut self) -> &mut dyn Device {
        match &mut self.device {
            SelectedDevice::Sim(sim) => sim.as_mut(),
            SelectedDevice::Hsa(hsa) => hsa.as_mut(),
        }
    }

    /// `sim` or `hsa`.
    #[must_use]
    pub fn kind(&self) -> DeviceKind {
        match self.device {
            SelectedDevice::Sim(_) => DeviceKind::Sim,
            SelectedDevice::Hsa(_) => DeviceKind::Hsa,
        }
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
}

/// Chooses a device; `arch` is the soft device's target (default gfx1100).
///
/// # Errors
/// [`SelectError`] only for [`DeviceKind::Hsa`].
pub fn select(kind: DeviceKind, arch: Option<Target>) -> Result<Selected, SelectError> {
    select_with(kind, arch, Hsa::load)
}

/// Why a model cannot run on the requested device.
#[derive(Debug, thiserror::Error)]
pub enum ModelDeviceError {
    /// `--device hsa` and the GPU is not usable.
    #[error(transparent)]
    Select(#[from] SelectError),
    /// `--device hsa` found a GPU, but models run on the soft device only so far.
    #[error("--device hsa: {agent} is usable, but models run only on the soft device so far; use --device sim")]
    HsaNotWired {
        /// The agent that was found.
        agent: String,
    },
}

/// Chooses the device a model runs on: the model adapter and the replay controller drive the
/// soft device only so far, so `auto` takes it even when a GPU is usable (and says so), and an
/// explicit `hsa` fails, naming the failing call or the missing wiring. Returns the soft device
/// and why it was chosen.
///
/// # Errors
/// [`ModelDeviceError`], only for [`DeviceKind::Hsa`].
pub fn select_for_model(kind: DeviceKind, arch: Option<Target>) -> Result<(Box<SimDevice>, String), ModelDeviceError> {
    for_model(kind, arch, select(kind, arch)?)
}

/// The soft device for a model from what [`select`] chose.
fn for_model(
    kind: DeviceKind,
    arch: Option<Target>,
    selected: Selected,
) -> Result<(Box<SimDevice>, String), ModelDeviceError> {
    match selected.device {
        SelectedDevice::Sim(sim) => Ok((sim, selected.reason)),
        SelectedDevice::Hsa(_) if kind == DeviceKind::Hsa => {
            Err(ModelDeviceError::HsaNotWired { agent: selected.reason })
        }
        SelectedDevice::Hsa(_) => {
            let target = arch.unwrap_or(Target::Gfx1100);
            let reason = format!(
                "soft device ({target}): {} is usable, but models run only on the soft device so far",
                selected.reason
            );
            Ok((Box::new(SimDevice::new(target)), reason))
        }
    }
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
        device: SelectedDevice::Sim(Box::new(SimDevice::new(target))),
        reason: format!("soft device ({target}): {why}"),
    };
    match kind {
        DeviceKind::Sim => Ok(sim("--device sim".to_owned())),
        DeviceKind::Hsa => {
            let device = HsaDevice::open(Arc::new(load()?), 0)?;
            let reason = format!("HSA GPU agent 0 ({}, {}): --device hsa", device.target(), device.isa());
            Ok(Selected { device: SelectedDevice::Hsa(Box::new(device)), reason })
        }
        DeviceKind::Auto => match load() {
            Err(error) => Ok(sim(format!("the HSA runtime did not load: {error}"))),
            Ok(hsa) => match HsaDevice::open(Arc::new(hsa), 0) {
                Ok(device) => {
                    let reason = format!("HSA GPU agent 0 ({}, {})", device.target(), device.isa());
                    Ok(Selected { device: SelectedDevice::Hsa(Box::new(device)), reason })
                }
                Err(error) => Ok(sim(error.to_string())),
            },
        },
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
            let (device, reason) = for_model(kind, Some(Target::Gfx1201), selected).unwrap();
            assert_eq!(device.target(), Target::Gfx1201);
            assert!(reason.starts_with("soft device (gfx1201)"), "{reason}");
        }
    }
}
