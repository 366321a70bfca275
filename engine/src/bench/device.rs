//! The devices the bench runs its arms on, as the program that drives it chooses them: the
//! engine never names a backend, so opening and describing a device is the caller's
//! ([`Devices`]), and the bench sees only the HAL.

use hal::{Device, FaultInjection};
use pm4_encoding::Target;
use serde_json::Value;

/// The device facts of the report's `device`, and the ones that live elsewhere in it.
#[derive(Debug, Clone)]
pub struct DeviceRecord {
    /// `product`, `agent`, `pci`, `runtime`, `driver`.
    pub fields: serde_json::Map<String, Value>,
    /// `clocks.gpu`.
    pub gpu_clock: Value,
    /// The HSA agent index (`topology`).
    pub agent_index: Value,
    /// The GPUs the backend sees and drives ([`hal::Topology`]), for `topology`.
    pub gpus: Value,
}

/// How the bench opens and describes devices.
pub trait Devices {
    /// The device an arm's session runs on.
    type Device: Device + FaultInjection;
    /// Why a device could not be opened.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Checks a `--device` value; the error is the message (`unknown device "gpu": accepted
    /// values are ...`).
    ///
    /// # Errors
    /// The value names no device kind.
    fn check(&self, name: &str) -> Result<(), String>;

    /// Opens the device `name` names (a `--device` value, or the kind a device was opened as),
    /// with `target` for a device that takes one: the device and why it was chosen.
    ///
    /// # Errors
    /// The device cannot be opened (`--device hsa` without a usable GPU).
    fn open(&self, name: &str, target: Target) -> Result<(Self::Device, String), Self::Error>;

    /// The kind of an opened device (`sim`, `hsa`), which admission rows and the report name.
    fn kind(&self, device: &Self::Device) -> &'static str;

    /// The report's facts about an opened device.
    fn describe(&self, device: &Self::Device) -> DeviceRecord;
}
