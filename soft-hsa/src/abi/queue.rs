//! User-mode queues and their index functions.

use core::ffi::c_void;
use core::mem::offset_of;
use std::sync::atomic::{AtomicU64, Ordering};

use hsa_sys::{Agent, AmdQueue, HsaStatus, Queue, QueueErrorCallback};

use super::{address, pointer, status, write_out};
use crate::queue::{self, ErrorCallback};
use crate::runtime;

/// The program's error callback as the processor thread calls it.
fn error_callback(callback: QueueErrorCallback, data: *mut c_void) -> ErrorCallback {
    // CAST: the pointer travels as its address, so the callback is Send; it is handed back as is.
    let data = data.expose_provenance();
    Box::new(move |status, queue| {
        // SAFETY: the program registered `callback` with `data` for this queue in
        // `hsa_queue_create` and, as with ROCr, must keep both usable until the queue is
        // destroyed; the processor thread calls it before `hsa_queue_destroy` returns (which
        // joins that thread), with the queue's own `hsa_queue_t` address.
        unsafe { callback(status, pointer(queue).cast(), core::ptr::with_exposed_provenance_mut(data)) }
    })
}

/// `hsa_queue_create` on the GPU agent: `size` is a power of two of 64 to 131072 packets, `type`
/// single or multiple producers; `private_segment_size` and `group_segment_size` are hints and
/// ignored (scratch is not modelled). `callback` (may be null) receives the status of a fault
/// that inactivates the queue, on the queue's processor thread.
///
/// # Safety
/// `queue` must be valid for a write of a pointer; `callback`, when given, must be safe to call
/// with `data` from another thread until the queue is destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_create(
    agent: Agent,
    size: u32,
    queue_type: u32,
    callback: Option<QueueErrorCallback>,
    data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut Queue,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    if queue.is_null() {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    let on_error = callback.map(|callback| error_callback(callback, data));
    match queue::create(&runtime, agent.handle, size, queue_type, on_error) {
        // SAFETY: non-null, valid for a pointer write by the caller's contract.
        Ok(created) => unsafe { write_out(queue, created.descriptor_ptr()) },
        Err(status) => status,
    }
}

/// `hsa_queue_destroy`: stops the queue's processor (waiting for a packet that runs) and frees
/// the queue; packets not taken are dropped.
///
/// # Safety
/// The program must not use `queue` afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_destroy(queue: *mut Queue) -> HsaStatus {
    match runtime::current() {
        Ok(runtime) => status(queue::destroy(&runtime, address(queue))),
        Err(status) => status,
    }
}

/// `hsa_queue_inactivate`: the processor takes no more packets (one that runs finishes).
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_inactivate(queue: *mut Queue) -> HsaStatus {
    match runtime::current() {
        Ok(runtime) => status(queue::find(&runtime, address(queue)).map(|queue| queue.inactivate())),
        Err(status) => status,
    }
}

/// The 64-bit index field at `offset` of the `amd_queue_t` `queue` points at.
///
/// # Safety
/// `queue` must be a live queue returned by `hsa_queue_create` (whose descriptor is a 64-byte
/// aligned `amd_queue_t` that the runtime accesses only atomically) and outlive the reference.
unsafe fn index_field<'a>(queue: *const Queue, offset: usize) -> &'a AtomicU64 {
    // SAFETY: by the caller's contract the descriptor is live and 64-byte aligned, and the index
    // fields (`write_dispatch_id`, `read_dispatch_id`) are 8-byte aligned u64s inside it that
    // everyone accesses atomically.
    unsafe { AtomicU64::from_ptr(queue.cast::<u8>().cast_mut().add(offset).cast()) }
}

/// `hsa_queue_load_write_index_relaxed`; 0 for a null queue.
///
/// # Safety
/// `queue` must be null or a live queue of this runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_load_write_index_relaxed(queue: *const Queue) -> u64 {
    if queue.is_null() {
        return 0;
    }
    // SAFETY: a live queue by the caller's contract.
    unsafe { index_field(queue, offset_of!(AmdQueue, write_dispatch_id)) }.load(Ordering::Relaxed)
}

/// `hsa_queue_add_write_index_scacq_screl`: reserves `value` packet ids; returns the first. 0 for
/// a null queue.
///
/// # Safety
/// `queue` must be null or a live queue of this runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_add_write_index_scacq_screl(queue: *const Queue, value: u64) -> u64 {
    if queue.is_null() {
        return 0;
    }
    // SAFETY: a live queue by the caller's contract.
    let field = unsafe { index_field(queue, offset_of!(AmdQueue, write_dispatch_id)) };
    // ORDERING: acquire-release, as the function's name says: producers that reserve ids are
    // ordered with each other and with the slots they publish.
    field.fetch_add(value, Ordering::AcqRel)
}

/// `hsa_queue_load_read_index_scacquire`: packets below it have been taken by the processor (their
/// slots may be reused). 0 for a null queue.
///
/// # Safety
/// `queue` must be null or a live queue of this runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_load_read_index_scacquire(queue: *const Queue) -> u64 {
    if queue.is_null() {
        return 0;
    }
    // SAFETY: a live queue by the caller's contract.
    unsafe { index_field(queue, offset_of!(AmdQueue, read_dispatch_id)) }.load(Ordering::Acquire)
}
