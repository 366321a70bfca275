//! The device kinds `--device` names and [`AnyDevice`], which holds whichever backend was
//! chosen behind the HAL: every `Device` method goes to the backend it holds.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use aql_packets::{PACKET_SIZE, RingSize, SignalCondition};
use hal::{
    AllocateError, AllocationId, BackendError, Device, DeviceAllocation, DeviceStats, FaultInjection, FreeError,
    Injection, KernelTable, LaunchError, LaunchRequest, Lifetime, LoadError, LoadedCodeObject, QueueError, QueueHandle,
    QueueProgress, SignalError, SignalHandle, Submission, TransferError, WaitError,
};
use hsa_device::HsaDevice;
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
    fn timestamp_frequency_hz(&self) -> u64 {
        each!(self, d => d.timestamp_frequency_hz())
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
    fn begin_kernel_trace(&mut self) -> Option<&'static str> {
        each!(self, d => d.begin_kernel_trace())
    }
    fn take_kernel_trace(&mut self) -> Result<Option<Vec<tape_core::census::trace::TraceRow>>, LaunchError> {
        each!(self, d => d.take_kernel_trace())
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
