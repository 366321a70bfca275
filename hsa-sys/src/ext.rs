//! The Redline extension of the soft HSA runtime (`soft-hsa`): symbols a real ROCr does not
//! export, looked up optionally at load. A missing extension symbol is not a load error; a caller
//! that needs one gets `None` and reports that its runtime cannot do it.

use core::fmt;

use crate::HsaStatus;

/// Name of the fault-injection entry point.
pub const REDLINE_SOFT_HSA_INJECT: &str = "redline_soft_hsa_inject";

/// `hsa_status_t redline_soft_hsa_inject(uint32_t kind, uint64_t object)`: arms one fault of
/// `kind` ([`RedlineInjection`]) on `object` (a memory pool handle or an `hsa_queue_t` address,
/// as the kind says). It fires once, at the next operation it names. Returns
/// `HSA_STATUS_SUCCESS` when armed, `HSA_STATUS_ERROR_INVALID_ARGUMENT` for an unknown kind,
/// `HSA_STATUS_ERROR_INVALID_MEMORY_POOL` or `HSA_STATUS_ERROR_INVALID_QUEUE` for an unknown
/// object, `HSA_STATUS_ERROR_NOT_INITIALIZED` before `hsa_init`.
pub type RedlineInjectFn = unsafe extern "C" fn(kind: u32, object: u64) -> HsaStatus;

/// Name of the kernel-trace entry point.
pub const REDLINE_SOFT_HSA_KERNEL_TRACE: &str = "redline_soft_hsa_kernel_trace";

/// `size_t redline_soft_hsa_kernel_trace(uint32_t operation, char *buffer, size_t capacity)`:
/// the runtime's packet processors' kernel trace kept in memory, as rocprofv3's
/// `kernel_trace.csv` text. [`RedlineTraceOperation::BEGIN`] starts keeping it (returns 0);
/// [`RedlineTraceOperation::TAKE`] returns the text's length and, when `capacity` holds it,
/// writes it to `buffer` (not NUL-terminated) and stops keeping it; `SIZE_MAX` when no trace is
/// kept or for another operation.
pub type RedlineKernelTraceFn = unsafe extern "C" fn(operation: u32, buffer: *mut u8, capacity: usize) -> usize;

/// An operation of [`RedlineKernelTraceFn`].
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RedlineTraceOperation(pub u32);

impl RedlineTraceOperation {
    /// Start keeping the trace (over).
    pub const BEGIN: Self = Self(1);
    /// Hand the kept trace over.
    pub const TAKE: Self = Self(2);
}

/// A fault kind of [`RedlineInjectFn`].
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RedlineInjection(pub u32);

impl RedlineInjection {
    /// The next `hsa_amd_memory_pool_allocate` from the pool whose handle is `object` fails with
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
    pub const ALLOCATION: Self = Self(1);
    /// The next packet the packet processor of the queue at address `object` takes inactivates
    /// the queue instead of running: its error callback receives `HSA_STATUS_ERROR_EXCEPTION`.
    pub const QUEUE_FAULT: Self = Self(2);
    /// The packet processor of the queue at address `object` takes no more packets: doorbells
    /// are accepted, nothing completes (until the queue is inactivated or destroyed).
    pub const QUEUE_HANG: Self = Self(3);

    /// Every kind: value and name.
    pub const ALL: &'static [(Self, &'static str)] =
        &[(Self::ALLOCATION, "ALLOCATION"), (Self::QUEUE_FAULT, "QUEUE_FAULT"), (Self::QUEUE_HANG, "QUEUE_HANG")];

    /// The kind's name, or `None` for a value that is not a kind.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        Self::ALL.iter().find(|(kind, _)| *kind == self).map(|(_, name)| *name)
    }
}

impl fmt::Debug for RedlineInjection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "RedlineInjection({name})"),
            None => write!(f, "RedlineInjection({:#x})", self.0),
        }
    }
}

/// The optional extension entry points of a loaded runtime; `None` where the runtime lacks the
/// symbol (every real ROCr).
#[derive(Clone, Copy, Debug, Default)]
pub struct HsaExtFns {
    /// [`REDLINE_SOFT_HSA_INJECT`].
    pub redline_soft_hsa_inject: Option<RedlineInjectFn>,
    /// [`REDLINE_SOFT_HSA_KERNEL_TRACE`].
    pub redline_soft_hsa_kernel_trace: Option<RedlineKernelTraceFn>,
}

impl HsaExtFns {
    /// Every extension symbol, in table order.
    pub const SYMBOLS: &'static [&'static str] = &[REDLINE_SOFT_HSA_INJECT, REDLINE_SOFT_HSA_KERNEL_TRACE];

    /// Looks every extension symbol up in `library`; a missing one stays `None`.
    ///
    /// # Safety
    /// A symbol `library` exports under an extension name must be a function with the prototype
    /// given here. The pointers are valid only while `library` stays loaded.
    pub(crate) unsafe fn resolve(library: &dynload::Library) -> Self {
        // SAFETY: the caller vouches for the prototype; the name is NUL-terminated.
        let inject = unsafe { library.get::<RedlineInjectFn>(b"redline_soft_hsa_inject\0") };
        // SAFETY: as above.
        let trace = unsafe { library.get::<RedlineKernelTraceFn>(b"redline_soft_hsa_kernel_trace\0") };
        Self {
            redline_soft_hsa_inject: inject.ok().map(|symbol| *symbol),
            redline_soft_hsa_kernel_trace: trace.ok().map(|symbol| *symbol),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_names_and_the_symbol_its_nul_terminated_twin() {
        assert_eq!(RedlineInjection::QUEUE_HANG.name(), Some("QUEUE_HANG"));
        assert_eq!(format!("{:?}", RedlineInjection(9)), "RedlineInjection(0x9)");
        assert_eq!(HsaExtFns::SYMBOLS, [REDLINE_SOFT_HSA_INJECT, REDLINE_SOFT_HSA_KERNEL_TRACE]);
        assert_eq!(REDLINE_SOFT_HSA_INJECT, "redline_soft_hsa_inject");
    }
}
