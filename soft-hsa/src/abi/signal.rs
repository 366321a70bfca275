//! Signals: creation, loads, stores, arithmetic and waits.
//!
//! The functions without a status (`void` stores, value-returning loads and waits) do nothing
//! and return 0 for a handle that names no live signal, where ROCr's behaviour is undefined.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hsa_sys::{Agent, AmdSignalAttribute, Flags, HsaStatus, Signal, SignalCondition, SignalValue, WaitState};

use super::write_out;
use crate::agents::TIMESTAMP_FREQUENCY_HZ;
use crate::runtime;
use crate::signals::{SignalCell, condition_holds};

/// How long an `HSA_WAIT_STATE_ACTIVE` wait spins before it sleeps.
pub const ACTIVE_SPIN: Duration = Duration::from_micros(20);

/// The live cell of `signal`, for a wait (which must hold no lock of the runtime).
fn cell(signal: Signal) -> Option<Arc<SignalCell>> {
    runtime::with_current(|runtime| runtime.signals.get(signal.handle)).ok().flatten()
}

/// `f` of the live cell of `signal`, for a call that does not wait: no reference is counted and
/// nothing is allocated, as for a store into an `amd_signal_t`.
fn with_cell<R>(signal: Signal, f: impl FnOnce(&SignalCell) -> R) -> Option<R> {
    runtime::with_current(|runtime| runtime.signals.with(signal.handle, f)).ok().flatten()
}

/// Creates a signal after checking the consumer list.
///
/// # Safety
/// `consumers` must be valid for reads of `num_consumers` handles when `num_consumers > 0`;
/// `signal` valid for a write.
unsafe fn create(
    initial_value: SignalValue,
    num_consumers: u32,
    consumers: *const Agent,
    signal: *mut Signal,
) -> HsaStatus {
    let runtime = match runtime::current() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    if signal.is_null() || (num_consumers > 0 && consumers.is_null()) {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    if num_consumers > 0 {
        let count = usize::try_from(num_consumers).unwrap_or(usize::MAX);
        // SAFETY: non-null, valid for `num_consumers` reads by the caller's contract; handles are
        // plain integers.
        let listed = unsafe { core::slice::from_raw_parts(consumers, count) };
        if listed.iter().any(|agent| !runtime.agents.contains(agent.handle)) {
            return HsaStatus::ERROR_INVALID_AGENT;
        }
    }
    match runtime.signals.create(initial_value) {
        // SAFETY: non-null, valid for a write by the caller's contract.
        Ok((handle, _)) => unsafe { write_out(signal, Signal { handle }) },
        Err(status) => status,
    }
}

/// `hsa_signal_create`; every consumer must be an agent of the runtime.
///
/// # Safety
/// `consumers` must be valid for reads of `num_consumers` handles (null when 0); `signal` valid
/// for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_create(
    initial_value: SignalValue,
    num_consumers: u32,
    consumers: *const Agent,
    signal: *mut Signal,
) -> HsaStatus {
    // SAFETY: the caller's contract, passed on.
    unsafe { create(initial_value, num_consumers, consumers, signal) }
}

/// `hsa_amd_signal_create`: as `hsa_signal_create`; `HSA_AMD_SIGNAL_AMD_GPU_ONLY` is accepted
/// (every signal is shared), `HSA_AMD_SIGNAL_IPC` is not supported.
///
/// # Safety
/// As `hsa_signal_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_signal_create(
    initial_value: SignalValue,
    num_consumers: u32,
    consumers: *const Agent,
    attributes: u64,
    signal: *mut Signal,
) -> HsaStatus {
    let known = u32::try_from(attributes).ok().and_then(AmdSignalAttribute::from_bits);
    if known.is_none_or(|attributes| attributes.contains(AmdSignalAttribute::IPC)) {
        return HsaStatus::ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { create(initial_value, num_consumers, consumers, signal) }
}

/// `hsa_signal_destroy`. A wait in progress on it finishes on the value it had.
///
/// # Safety
/// No packet published later may name it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_destroy(signal: Signal) -> HsaStatus {
    match runtime::current() {
        Ok(runtime) => runtime.signals.destroy(signal.handle).err().unwrap_or(HsaStatus::SUCCESS),
        Err(status) => status,
    }
}

/// `hsa_signal_store_screlease`: a doorbell store wakes the queue's processor.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_store_screlease(signal: Signal, value: SignalValue) {
    // ORDERING: release, as the function's name says: what the program stored before (a
    // packet's header, for a doorbell) is visible to whoever acquires the value.
    with_cell(signal, |cell| cell.store(value, Ordering::Release));
}

/// `hsa_signal_store_relaxed`.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_store_relaxed(signal: Signal, value: SignalValue) {
    with_cell(signal, |cell| cell.store(value, Ordering::Relaxed));
}

/// `hsa_signal_add_relaxed` (wrapping).
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_add_relaxed(signal: Signal, value: SignalValue) {
    with_cell(signal, |cell| cell.add(value, Ordering::Relaxed));
}

/// `hsa_signal_subtract_relaxed` (wrapping).
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_subtract_relaxed(signal: Signal, value: SignalValue) {
    with_cell(signal, |cell| cell.add(value.wrapping_neg(), Ordering::Relaxed));
}

/// `hsa_signal_load_scacquire`.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_load_scacquire(signal: Signal) -> SignalValue {
    with_cell(signal, |cell| cell.load(Ordering::Acquire)).unwrap_or(0)
}

/// `hsa_signal_wait_scacquire`: waits until `value condition compare_value` holds or
/// `timeout_hint` ticks of `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY` pass (`u64::MAX`: no timeout);
/// returns the value read last. An `HSA_WAIT_STATE_ACTIVE` wait spins briefly before it sleeps;
/// no lock of the runtime is held while it sleeps. An unknown condition returns the value at once.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_wait_scacquire(
    signal: Signal,
    condition: SignalCondition,
    compare_value: SignalValue,
    timeout_hint: u64,
    wait_state_hint: WaitState,
) -> SignalValue {
    let Some(cell) = cell(signal) else { return 0 };
    let holds = |value| condition_holds(condition.0, value, compare_value).unwrap_or(true);
    let start = Instant::now();
    let deadline = (timeout_hint != u64::MAX)
        .then(|| {
            start.checked_add(Duration::from_nanos(timeout_hint.saturating_mul(1_000_000_000 / TIMESTAMP_FREQUENCY_HZ)))
        })
        .flatten();
    if wait_state_hint == WaitState::ACTIVE {
        // TIMEOUT: the spin is bounded by ACTIVE_SPIN and the deadline.
        while start.elapsed() < ACTIVE_SPIN && deadline.is_none_or(|d| Instant::now() < d) {
            let value = cell.load(Ordering::Acquire);
            if holds(value) {
                return value;
            }
            std::hint::spin_loop();
        }
    }
    cell.wait_until(deadline, holds)
}
