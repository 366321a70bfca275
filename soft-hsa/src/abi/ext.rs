//! Redline's extension: fault injection for the HSA backend's `hal::FaultInjection`. A real
//! ROCr does not export it; `hsa-sys` looks it up optionally.

use hsa_sys::{HsaStatus, RedlineInjection};

use crate::pools::{self, Pool};
use crate::queue;
use crate::runtime;

/// `hsa_status_t redline_soft_hsa_inject(uint32_t kind, uint64_t object)` (`hsa_sys::RedlineInjectFn`):
/// arms one fault, fired once at the next operation it names.
///
/// - `RedlineInjection::ALLOCATION`: `object` is a memory pool handle; its next
///   `hsa_amd_memory_pool_allocate` fails with `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
/// - `RedlineInjection::QUEUE_FAULT`: `object` is an `hsa_queue_t` address; the next packet its
///   processor takes inactivates it and its error callback receives
///   `HSA_STATUS_ERROR_EXCEPTION`.
/// - `RedlineInjection::QUEUE_HANG`: `object` is an `hsa_queue_t` address; its processor takes no
///   more packets.
///
/// Returns `HSA_STATUS_ERROR_INVALID_ARGUMENT` for another kind,
/// `HSA_STATUS_ERROR_INVALID_MEMORY_POOL` or `HSA_STATUS_ERROR_INVALID_QUEUE` for an unknown
/// object.
///
/// # Safety
/// None beyond the C ABI: `object` is only compared with the runtime's tables.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn redline_soft_hsa_inject(kind: u32, object: u64) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let armed = match RedlineInjection(kind) {
        RedlineInjection::ALLOCATION => match Pool::from_handle(object, &runtime.agents) {
            Some(pool) => {
                pools::fail_next(&mut runtime.core(), pool);
                Ok(())
            }
            None => Err(HsaStatus::ERROR_INVALID_MEMORY_POOL),
        },
        RedlineInjection::QUEUE_FAULT => queue::arm(&runtime, object, false),
        RedlineInjection::QUEUE_HANG => queue::arm(&runtime, object, true),
        _ => Err(HsaStatus::ERROR_INVALID_ARGUMENT),
    };
    armed.err().unwrap_or(HsaStatus::SUCCESS)
}

/// `size_t redline_soft_hsa_kernel_trace(uint32_t operation, char *buffer, size_t capacity)`
/// (`hsa_sys::RedlineKernelTraceFn`): the packet processors' kernel trace, kept in memory for
/// the process that asked, as rocprofv3's `kernel_trace.csv` (`tape_core::census::trace`).
///
/// - `RedlineTraceOperation::BEGIN`: from now on every kernel dispatch any queue's packet
///   processor executes is kept (a trace already kept starts over); returns 0.
/// - `RedlineTraceOperation::TAKE`: the kept rows as CSV text, header first, their
///   `Dispatch_Id`s counting from 1: when `capacity` holds it, written to `buffer` (not
///   NUL-terminated) and no longer kept. Returns the text's length in bytes either way, so a
///   caller asks with `capacity` 0 first; `SIZE_MAX` when no trace is kept.
///
/// Another operation returns `SIZE_MAX` and changes nothing. Callers take the trace while no
/// queue runs a dispatch (after waiting for every launch), as the HSA backend does.
///
/// # Safety
/// `buffer` must be valid for writes of `capacity` bytes when `capacity` is not 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn redline_soft_hsa_kernel_trace(operation: u32, buffer: *mut u8, capacity: usize) -> usize {
    match hsa_sys::RedlineTraceOperation(operation) {
        hsa_sys::RedlineTraceOperation::BEGIN => {
            queue::kept_trace::begin();
            0
        }
        hsa_sys::RedlineTraceOperation::TAKE => {
            let Some(text) = queue::kept_trace::text() else { return usize::MAX };
            if capacity >= text.len() && !buffer.is_null() {
                // SAFETY: the caller vouches that `buffer` holds `capacity` bytes, and
                // `text.len()` is at most that; the two do not overlap (`text` is ours).
                unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buffer, text.len()) };
                queue::kept_trace::end();
            }
            text.len()
        }
        _ => usize::MAX,
    }
}
