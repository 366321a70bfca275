//! Workloads: a decode step as launches through the [`Funnel`], with the mutable state surfaces
//! the shadow oracle compares.
//!
//! A workload's step must be a pure function of the device state and the position: everything
//! else a step needs from the host (the token embedding, for example) happens in
//! [`Workload::prepare_step`], which every route runs before the step (the named external
//! boundary). A step that does host work of its own inside [`Workload::step`] is a capture
//! contract violation: the retained route skips `step`, and the shadow oracle catches the
//! difference.

use tape_core::calibrate::GridRule;

use crate::funnel::{Funnel, FunnelError};
use hal::{AllocateError, Device, DeviceAllocation, TransferError};

/// The byte the guard regions of a [`Surface`] hold.
pub const GUARD_BYTE: u8 = 0xA5;
/// Default guard bytes on each side of a surface's buffer.
pub const GUARD_BYTES: u64 = 256;

/// One mutable (or must-stay-unchanged) state surface: an allocation whose middle
/// `[va, va + bytes)` the workload uses and whose `guard` bytes on each side must keep
/// [`GUARD_BYTE`]. The shadow oracle compares the whole allocation, guards included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Surface {
    /// Name in reports (`"kv_cache"`, `"logits"`).
    pub name: String,
    /// The allocation, guards included.
    pub allocation: DeviceAllocation,
    /// First byte the workload uses.
    pub va: u64,
    /// Bytes the workload uses.
    pub bytes: u64,
    /// Guard bytes before `va` and after `va + bytes`.
    pub guard: u64,
}

impl Surface {
    /// Allocates `bytes` with `guard` bytes of [`GUARD_BYTE`] on each side (the middle starts
    /// zeroed) and names it.
    ///
    /// # Errors
    /// The device's allocation or write error.
    pub fn allocate<D: Device + ?Sized>(
        device: &mut D,
        name: &str,
        bytes: u64,
        guard: u64,
    ) -> Result<Self, WorkloadError> {
        let total = bytes
            .checked_add(guard.saturating_mul(2))
            .ok_or(AllocateError::TooLarge { size: bytes, limit: u64::MAX })?;
        let allocation = device.allocate(total)?;
        let pattern = vec![GUARD_BYTE; usize::try_from(guard).unwrap_or(usize::MAX)];
        device.write(allocation.va, &pattern)?;
        device.write(allocation.va + guard + bytes, &pattern)?;
        Ok(Self { name: name.to_owned(), allocation, va: allocation.va + guard, bytes, guard })
    }

    /// Writes `data` at the start of the used range.
    ///
    /// # Errors
    /// [`WorkloadError::Init`] when `data` is longer than the used range, or a device error.
    pub fn fill<D: Device + ?Sized>(&self, device: &mut D, data: &[u8]) -> Result<(), WorkloadError> {
        if u64::try_from(data.len()).unwrap_or(u64::MAX) > self.bytes {
            return Err(WorkloadError::Init(format!(
                "{}: {} bytes of initial data for a {}-byte surface",
                self.name,
                data.len(),
                self.bytes
            )));
        }
        device.write(self.va, data)?;
        Ok(())
    }

    /// Reads the whole allocation, guards included.
    ///
    /// # Errors
    /// The device's read error.
    pub fn snapshot<D: Device + ?Sized>(&self, device: &mut D) -> Result<Vec<u8>, TransferError> {
        let mut bytes = vec![0u8; usize::try_from(self.allocation.size).unwrap_or(0)];
        device.read(self.allocation.va, &mut bytes)?;
        Ok(bytes)
    }

    /// The offset in a [`Surface::snapshot`] of the first guard byte that lost its pattern.
    #[must_use]
    pub fn guard_violation(&self, snapshot: &[u8]) -> Option<u64> {
        let guard = usize::try_from(self.guard).ok()?;
        let used = usize::try_from(self.bytes).ok()?;
        let before = snapshot.get(..guard)?;
        let after = snapshot.get(guard + used..)?;
        if let Some(i) = before.iter().position(|&b| b != GUARD_BYTE) {
            return u64::try_from(i).ok();
        }
        let i = after.iter().take(guard).position(|&b| b != GUARD_BYTE)?;
        u64::try_from(guard + used + i).ok()
    }
}

/// Why a workload could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A launch failed.
    #[error(transparent)]
    Funnel(#[from] FunnelError),
    /// An allocation failed.
    #[error("allocating: {0}")]
    Allocate(#[from] AllocateError),
    /// A host↔device copy failed.
    #[error("copying: {0}")]
    Transfer(#[from] TransferError),
    /// A kernel could not be loaded.
    #[error("loading kernels: {0}")]
    Kernel(#[from] crate::funnel::KernelError),
    /// The workload cannot be set up as asked.
    #[error("{0}")]
    Init(String),
    /// The position is beyond what the workload is prepared for.
    #[error("position {position} is beyond the workload's maximum {max_position}")]
    Position {
        /// Asked for.
        position: u32,
        /// [`Workload::max_position`].
        max_position: u32,
    },
}

/// [`WorkloadError::Position`] when `position` is past `max_position`.
///
/// # Errors
/// As described.
pub fn check_position(position: u32, max_position: u32) -> Result<(), WorkloadError> {
    if position > max_position {
        return Err(WorkloadError::Position { position, max_position });
    }
    Ok(())
}

/// A decode step: see the module documentation.
pub trait Workload {
    /// Name in reports.
    fn name(&self) -> &str;

    /// Host work every route runs before the step at `position` (the external boundary).
    /// Default: none.
    ///
    /// # Errors
    /// [`WorkloadError`].
    fn prepare_step(
        &mut self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        position: u32,
    ) -> Result<(), WorkloadError> {
        let _ = (device, funnel, position);
        Ok(())
    }

    /// The step at `position`, as launches through `funnel` only.
    ///
    /// # Errors
    /// [`WorkloadError`].
    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError>;

    /// Every state surface the step reads or writes, in a stable order.
    fn surfaces(&self) -> &[Surface];

    /// The launches whose grid follows the position, for calibration.
    fn grid_rules(&self) -> &[GridRule] {
        &[]
    }

    /// The largest position the step supports.
    fn max_position(&self) -> u32;

    /// The most prompt tokens one [`Workload::prefill`] pass takes; 0 (the provided value) when
    /// the workload has no batched prefill and its prompt runs step by step.
    fn prefill_chunk(&self) -> u32 {
        0
    }

    /// Runs the prompt tokens `tokens` at positions `first..first + tokens.len()` in one pass of
    /// ordinary launches (at most [`Workload::prefill_chunk`] tokens), leaving the state a step
    /// at each of those positions in turn would leave (the KV cache rows, and the logits of the
    /// last token). A prefill is never recorded: it is not a single-token continuation.
    ///
    /// # Errors
    /// [`WorkloadError`]; the provided method refuses every prefill (there is no batched path).
    fn prefill(
        &mut self,
        device: &mut dyn Device,
        funnel: &mut Funnel,
        first: u32,
        tokens: &[u32],
    ) -> Result<(), WorkloadError> {
        let _ = (device, funnel, first, tokens);
        Err(WorkloadError::Init(format!("workload {} has no batched prefill", self.name())))
    }
}
