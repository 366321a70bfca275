//! The failures only the soft device knows. They reach callers inside the HAL's errors as a
//! [`hal::DeviceFault`] ([`LaunchError::Device`], [`QueueFault::Device`]); [`LaunchError::device_fault`] recovers a [`SoftFault`].

use hal::{DeviceFault, LaunchError, QueueFault};
use kernel_refs::cpu::KernelError;
use kernel_refs::effects::ResolveError;
use tape_core::Access;

use crate::exec::HiddenArgMismatch;

/// An access by a kernel outside what its declared effects allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("kernel {kernel}: {access:?} of {len} bytes at {va:#x} is outside its declared effects")]
pub struct EffectViolation {
    /// Kernel name.
    pub kernel: String,
    /// First byte of the access.
    pub va: u64,
    /// Length of the access.
    pub len: u64,
    /// [`Access::Read`] or [`Access::Write`].
    pub access: Access,
}

/// A failure of the soft device's own kind.
#[derive(Clone, Debug, thiserror::Error)]
pub enum SoftFault {
    /// A hidden geometry argument of the kernarg segment (block count, group size, remainder,
    /// grid dims) disagrees with the dispatch geometry.
    #[error(transparent)]
    HiddenArg(#[from] HiddenArgMismatch),
    /// The kernel has no CPU reference: the soft device cannot execute it.
    #[error("the kernel at {kernel_object:#x} has no CPU implementation")]
    NoCpuImplementation {
        /// Its descriptor VA.
        kernel_object: u64,
    },
    /// The kernel's declared effects could not be resolved for this launch.
    #[error("effects: {0}")]
    Effects(ResolveError),
    /// A declared, non-empty effect range is not inside one allocation.
    #[error("argument {arg_index} declares {bytes} bytes at {va:#x}, not inside one allocation")]
    EffectUnmapped {
        /// The pointer argument.
        arg_index: usize,
        /// First byte of the range.
        va: u64,
        /// Length of the range.
        bytes: u64,
    },
    /// The kernel touched memory its declared effects do not allow.
    #[error(transparent)]
    EffectViolation(#[from] EffectViolation),
    /// The CPU reference itself failed (a launch precondition, or a fault inside its declared
    /// ranges).
    #[error("{0}")]
    Kernel(KernelError),
    /// A fault injected by the test harness ([`hal::FaultInjection`]).
    #[error("injected fault")]
    Injected,
    /// A PM4-IB packet reached a packet processor without a PM4 command processor.
    #[error("no PM4 command processor is connected: cannot execute {size_dwords} dwords at {ib_va:#x}")]
    Pm4NotAvailable {
        /// `IB_BASE`.
        ib_va: u64,
        /// `IB_SIZE`.
        size_dwords: u32,
    },
}

impl SoftFault {
    /// This fault of a dispatch of `kernel`, as a launch error.
    pub(crate) fn launch(self, kernel: &str) -> LaunchError {
        LaunchError::Device { kernel: kernel.to_owned(), fault: DeviceFault::new(self) }
    }

    /// This fault at packet `packet_id`, as a queue fault.
    pub(crate) fn queue(self, packet_id: u64) -> QueueFault {
        QueueFault::Device { packet_id, fault: DeviceFault::new(self) }
    }
}
