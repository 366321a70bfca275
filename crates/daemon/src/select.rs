//! Device selection: `--device auto|sim|hsa`, the one place that names the backends.
//!
//! `auto` takes an HSA GPU when the runtime library loads, `hsa_init` succeeds and a GPU agent
//! with a supported target exists; otherwise the soft device. Either way [`Selected::reason`] says
//! which device was chosen and why. `hsa` without a usable GPU is an error that names the failing
//! call and its status and suggests `--device sim`. The chosen device is an [`AnyDevice`], which
//! the route (generic over the HAL's [`Device`]) drives the same way whichever backend it holds.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use aql_packets::{PACKET_SIZE, RingSize, SignalCondition};
use hal::{
    AllocateError, AllocationId, BackendError, Device, DeviceAllocation, DeviceStats, FaultInjection, FreeError,
    Injection, KernelTable, LaunchError, LaunchRequest, Lifetime, LoadError, LoadedCodeObject, QueueError, QueueHandle,
    QueueProgress, SignalError, SignalHandle, Submission, TransferError, WaitError,
};
use hsa_device::{HsaDevice, HsaOpenError};
use hsa_sys::Hsa;
use pm4_encoding::Target;
use soft_device::SimDevice;

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

/// The device chosen: one of the backends, behind the HAL.
#[derive(Debug)]
pub enum AnyDevice {
    /// The soft device.
    Sim(Box<SimDevice>),
    /// An HSA GPU.
    Hsa(Box<HsaDevice>),
}

impl AnyDevice {
    /// `sim` or `hsa`.
    #[must_use]
    pub fn kind(&self) -> DeviceKind {
        match self {
            AnyDevice::Sim(_) => DeviceKind::Sim,
            AnyDevice::Hsa(_) => DeviceKind::Hsa,
        }
    }
}

/// Forwards a `Device` method to the backend the device holds.
macro_rules! each {
    ($self:ident, $d:ident => $e:expr) => {
        match $self {
            AnyDevice::Sim($d) => $e,
            AnyDevice::Hsa($d) => $e,
        }
    };
}

impl Device for AnyDevice {
    fn target(&self) -> Target {
        each!(self, d => d.target())
    }
    fn topology(&self) -> hal::Topology {
        each!(self, d => d.topology())
    }
    fn lifetime(&self) -> Lifetime {
        each!(self, d => d.lifetime())
    }
    fn kernels(&self) -> &KernelTable {
        each!(self, d => d.kernels())
    }
    fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        each!(self, d => d.allocate(size))
    }
    fn allocate_kernarg(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        each!(self, d => d.allocate_kernarg(size))
    }
    fn allocate_ib(&mut self, size_dwords: u32) -> Result<DeviceAllocation, AllocateError> {
        each!(self, d => d.allocate_ib(size_dwords))
    }
    fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError> {
        each!(self, d => d.free(allocation))
    }
    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError> {
        each!(self, d => d.write(va, data))
    }
    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError> {
        each!(self, d => d.read(va, out))
    }
    fn store_u32(&mut self, va: u64, value: u32) -> Result<(), TransferError> {
        each!(self, d => d.store_u32(va, value))
    }
    fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        each!(self, d => d.resolve(va))
    }
    fn load_code_object(&mut self, bytes: &[u8]) -> Result<LoadedCodeObject, LoadError> {
        each!(self, d => d.load_code_object(bytes))
    }
    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError> {
        each!(self, d => d.launch(request))
    }
    fn finish(&mut self) -> Result<(), LaunchError> {
        each!(self, d => d.finish())
    }
    fn stats(&self) -> DeviceStats {
        each!(self, d => d.stats())
    }
    fn reset(&mut self) {
        each!(self, d => d.reset())
    }
    fn create_queue(&mut self, slots: RingSize) -> Result<QueueHandle, QueueError> {
        each!(self, d => d.create_queue(slots))
    }
    fn destroy_queue(&mut self, queue: QueueHandle) -> Result<(), QueueError> {
        each!(self, d => d.destroy_queue(queue))
    }
    fn write_packet(&mut self, queue: QueueHandle, packet: &[u8; PACKET_SIZE]) -> Result<u64, QueueError> {
        each!(self, d => d.write_packet(queue, packet))
    }
    fn ring_doorbell(&mut self, queue: QueueHandle) -> Result<Submission, QueueError> {
        each!(self, d => d.ring_doorbell(queue))
    }
    fn queue_progress(&mut self, queue: QueueHandle) -> Result<QueueProgress, QueueError> {
        each!(self, d => d.queue_progress(queue))
    }
    fn create_signal(&mut self, initial: i64) -> Result<SignalHandle, SignalError> {
        each!(self, d => d.create_signal(initial))
    }
    fn destroy_signal(&mut self, signal: SignalHandle) -> Result<(), SignalError> {
        each!(self, d => d.destroy_signal(signal))
    }
    fn signal_value(&self, signal: SignalHandle) -> Result<i64, SignalError> {
        each!(self, d => d.signal_value(signal))
    }
    fn store_signal(&mut self, signal: SignalHandle, value: i64) -> Result<(), SignalError> {
        each!(self, d => d.store_signal(signal, value))
    }
    fn wait_signal(
        &mut self,
        signal: SignalHandle,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64, WaitError> {
        each!(self, d => d.wait_signal(signal, condition, compare, timeout))
    }
}

impl FaultInjection for AnyDevice {
    fn inject(&mut self, fault: Injection) -> Result<(), BackendError> {
        each!(self, d => d.inject(fault))
    }
}

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
