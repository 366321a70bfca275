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

/// What a [`Surface`] that carries a sequence's state from one step to the next holds.
///
/// A KV cache is appended to: a step writes its own position's row and a new sequence simply
/// overwrites rows from position 0. A sequence state is rewritten in place by every step and
/// read whole by the next one, so a new sequence must start it from zeros
/// ([`Workload::reset_state`]), and a shadow oracle that did not snapshot and restore it would
/// compare arms that started from different states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StateKind {
    /// A causal convolution's last inputs (LFM2's short convolution, Qwen3.5's DeltaNet
    /// convolution): `[layer][channel][kernel - 1]` values the next step's convolution reads.
    Convolution,
    /// A linear-attention recurrence's state matrices (Qwen3.5's gated delta rule): one
    /// `[head_k_dim][head_v_dim]` matrix per head and layer, decayed and updated every step.
    Recurrent,
}

impl StateKind {
    /// The name in reports and in a bundle's `model.json`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Convolution => "convolution",
            Self::Recurrent => "recurrent",
        }
    }
}

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
    /// The sequence state it holds, if any ([`Surface::holding`]): reset to zeros when a new
    /// sequence starts ([`Workload::reset_state`]).
    pub state: Option<StateKind>,
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
        Ok(Self { name: name.to_owned(), allocation, va: allocation.va + guard, bytes, guard, state: None })
    }

    /// The surface marked as holding sequence state of `kind`.
    #[must_use]
    pub fn holding(mut self, kind: StateKind) -> Self {
        self.state = Some(kind);
        self
    }

    /// Writes zeros over the used range (the guards keep their pattern).
    ///
    /// # Errors
    /// The device's write error.
    pub fn zero<D: Device + ?Sized>(&self, device: &mut D) -> Result<(), WorkloadError> {
        const CHUNK: u64 = 1 << 20;
        let zeros = vec![0u8; usize::try_from(self.bytes.min(CHUNK)).unwrap_or(0)];
        let mut offset = 0;
        while offset < self.bytes {
            let n = (self.bytes - offset).min(CHUNK);
            device.write(self.va + offset, &zeros[..usize::try_from(n).unwrap_or(0)])?;
            offset += n;
        }
        Ok(())
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

    /// Starts a new sequence's state: every surface that holds sequence state
    /// ([`Surface::state`]) is zeroed, as a freshly loaded model's is. Every route runs it when a
    /// request starts; a KV cache needs nothing (the new sequence overwrites its rows from
    /// position 0, and attention reads no row past the position).
    ///
    /// # Errors
    /// The device's write error.
    fn reset_state(&mut self, device: &mut dyn Device) -> Result<(), WorkloadError> {
        for surface in self.surfaces().iter().filter(|s| s.state.is_some()) {
            surface.zero(device)?;
        }
        Ok(())
    }

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
