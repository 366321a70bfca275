//! The C ABI: every entry point of `hsa-sys`'s function table, exported under its ROCr name with
//! the prototype of the ROCm 5.2.3 headers (`hsa.h`, `hsa_ext_amd.h`), and Redline's extension
//! ([`ext`]). All of the crate's `unsafe` code is in this module: the entry points themselves,
//! which dereference the program's pointers, and `host`, the raw host memory the runtime hands
//! out.
//!
//! Each entry point checks what it can (null pointers, handles, the runtime being initialised)
//! and returns an HSA status; what the C contract leaves to the caller (a pointer's validity, a
//! buffer's size) is its `# Safety` section. A call the runtime does not implement fails with a
//! status, never succeeds silently. No entry point panics: a failure inside the runtime is a
//! status.

pub mod code;
pub mod ext;
pub(crate) mod host;
pub mod memory;
pub mod queue;
pub mod signal;
pub mod system;

use core::ffi::c_void;

use hsa_sys::HsaStatus;

use crate::agents::Answer;

/// Copies an attribute's bytes to `value`.
///
/// # Safety
/// `value` must be null or valid for writes of the attribute's size, as the header documents it
/// for the attribute asked for (the length of `answer`).
unsafe fn write_answer(value: *mut c_void, answer: Answer) -> HsaStatus {
    match answer {
        Ok(bytes) if !value.is_null() => {
            // SAFETY: the caller provides storage of the attribute's documented size, which is
            // the answer's length; the answer is a fresh vector, so the ranges do not overlap.
            unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), value.cast::<u8>(), bytes.len()) };
            HsaStatus::SUCCESS
        }
        Ok(_) => HsaStatus::ERROR_INVALID_ARGUMENT,
        Err(status) => status,
    }
}

/// Writes `item` through the out-pointer `out`, or fails with `HSA_STATUS_ERROR_INVALID_ARGUMENT`
/// for null.
///
/// # Safety
/// `out` must be null or valid for a write of a `T`.
unsafe fn write_out<T>(out: *mut T, item: T) -> HsaStatus {
    if out.is_null() {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null, and valid for a write of a `T` by the caller's contract.
    unsafe { out.write(item) };
    HsaStatus::SUCCESS
}

/// A result as the status an entry point returns.
fn status(result: Result<(), HsaStatus>) -> HsaStatus {
    result.err().unwrap_or(HsaStatus::SUCCESS)
}

/// An address as the program's pointer to it.
fn pointer(address: u64) -> *mut c_void {
    core::ptr::with_exposed_provenance_mut(usize::try_from(address).unwrap_or(0))
}

/// A program pointer as an address.
fn address<T>(pointer: *const T) -> u64 {
    // CAST: a usize address is at most 64 bits on every supported host.
    pointer.expose_provenance() as u64
}
