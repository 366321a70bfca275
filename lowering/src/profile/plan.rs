//! An instrumented body prepared on a device and run per token: the profiler's counterpart of
//! [`crate::plan`], with objects of its own so that the certified plan is never touched.
//!
//! [`InstrumentedPlan::prepare`] copies the tape's kernarg blobs into a kernarg allocation of its
//! own, lowers the tape with those addresses ([`lower_pm4`]), checks the lowered body with
//! [`verify`] as the certified plan's preparation does, instruments it ([`instrument`]) with
//! timestamp slots in device memory of its own, writes it into IB memory, and makes a queue, a
//! signal and the one PM4-IB packet that calls it. [`InstrumentedPlan::run`] runs the body at a
//! position (the bindings patched as the retained route patches them) and returns its
//! timestamps.

use std::time::Duration;

use aql_packets::{AmdPm4IbPacket, FenceScope, RingSize, SignalCondition};
use hal::{
    AllocateError, Device, DeviceAllocation, LaunchError, Lifetime, QueueError, QueueHandle, SignalError, SignalHandle,
    TransferError, WaitError,
};
use tape_core::tape::Tape;

use super::{Instrument, InstrumentError, InstrumentedIb, SLOT_BYTES, instrument};
use crate::lower::{LowerError, PatchError, VerifyError, apply_patch_sites, lower_pm4, slot_by_artifact, verify};
use crate::plan::{PrepareError, kernarg_image, kernarg_placement};

/// Why an instrumented body was not prepared or did not run.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The tape has no launches.
    #[error("the tape has no launches")]
    EmptyTape,
    /// The kernargs could not be placed (the certified plan's rules).
    #[error(transparent)]
    Placement(#[from] PrepareError),
    /// The tape could not be lowered.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The lowered body does not match the tape.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// The body could not be instrumented.
    #[error(transparent)]
    Instrument(#[from] InstrumentError),
    /// A device allocation failed.
    #[error(transparent)]
    Allocate(#[from] AllocateError),
    /// A copy to or from the device failed.
    #[error(transparent)]
    Transfer(#[from] TransferError),
    /// The queue failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The signal failed.
    #[error(transparent)]
    Signal(#[from] SignalError),
    /// The ordinary path before the token failed.
    #[error("position {position}: the ordinary launches before it: {source}")]
    Ordinary {
        /// The position.
        position: u32,
        /// Why.
        source: LaunchError,
    },
    /// The token did not complete.
    #[error("position {position}: {source}")]
    Wait {
        /// The position.
        position: u32,
        /// Why.
        source: WaitError,
    },
    /// A binding has no value at the position.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// The body is too large for one PM4-IB packet.
    #[error("the instrumented body of {dwords} dwords cannot be called by one PM4-IB packet")]
    Packet {
        /// Its dwords.
        dwords: usize,
    },
    /// The device was reset or an allocation freed since preparation.
    #[error("the device's lifetime moved since the instrumented body was prepared")]
    Stale,
    /// A timestamp slot was not written, or went backwards: the body did not run as built.
    #[error("timestamp slot {slot} reads {value} after {previous}: the instrumented body did not run as built")]
    Timestamps {
        /// The slot.
        slot: usize,
        /// What it holds.
        value: u64,
        /// The slot before it.
        previous: u64,
    },
}

/// An instrumented body on a device. Release it with [`InstrumentedPlan::release`].
#[derive(Debug)]
pub struct InstrumentedPlan {
    body: InstrumentedIb,
    /// The certified body's dwords (the same lowering before instrumentation).
    certified_dwords: usize,
    ib: DeviceAllocation,
    kernargs: DeviceAllocation,
    timestamps: DeviceAllocation,
    queue: QueueHandle,
    signal: SignalHandle,
    packet: [u8; aql_packets::PACKET_SIZE],
    lifetime: Lifetime,
}

/// What one run read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timestamps {
    /// The position the body ran at.
    pub position: u32,
    /// Every slot's GPU clock, in slot order ([`InstrumentedIb::timestamps`]).
    pub ticks: Vec<u64>,
}

impl InstrumentedPlan {
    /// The longest wait [`InstrumentedPlan::run`] accepts.
    pub const TIMEOUT_MAX: Duration = Duration::from_secs(600);

    /// Prepares `tape` instrumented with `options` on `device` (module documentation). On an
    /// error, whatever was created is released again.
    ///
    /// # Errors
    /// [`ProfileError`].
    pub fn prepare<D: Device + ?Sized>(device: &mut D, tape: &Tape, options: Instrument) -> Result<Self, ProfileError> {
        if tape.launches().is_empty() {
            return Err(ProfileError::EmptyTape);
        }
        let mut held = Held::default();
        let result = Self::prepare_held(device, tape, options, &mut held);
        if result.is_err() {
            held.release(device);
        }
        result
    }

    fn prepare_held<D: Device + ?Sized>(
        device: &mut D,
        tape: &Tape,
        options: Instrument,
        held: &mut Held,
    ) -> Result<Self, ProfileError> {
        let (offsets, total) = kernarg_placement(device, tape)?;
        let kernargs = *held.kernargs.insert(device.allocate_kernarg(total.max(1))?);
        device.write(kernargs.va, &kernarg_image(tape, &offsets, total))?;
        let kernarg_vas: Vec<u64> = offsets.iter().map(|&o| kernargs.va + o).collect();
        let family = device.target().family();
        let lowered = {
            let lookup = slot_by_artifact(device.kernels());
            let lowered = lower_pm4(tape, family, &lookup, &kernarg_vas)?;
            verify(&lowered, tape, family, &lookup, &kernarg_vas)?;
            lowered
        };
        let slots = u64::try_from(tape.launches().len() + 2).unwrap_or(u64::MAX);
        let timestamps = *held.timestamps.insert(device.allocate(SLOT_BYTES * slots)?);
        let body = instrument(&lowered, &tape.identity().sequence_hash, timestamps.va, options)?;
        let dwords = body.words.len();
        let ib_dwords = u32::try_from(dwords).map_err(|_| ProfileError::Packet { dwords })?;
        let ib = *held.ib.insert(device.allocate_ib(ib_dwords)?);
        let bytes: Vec<u8> = body.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        device.write(ib.va, &bytes)?;
        // 1: a token is published with it and completes by setting it to 0.
        let signal = *held.signal.insert(device.create_signal(1)?);
        // PANIC: 4 is a power of two.
        let queue = *held.queue.insert(device.create_queue(RingSize::new(4).expect("a power of two"))?);
        let packet = AmdPm4IbPacket::new(ib.va, ib_dwords, FenceScope::System, FenceScope::System, signal.get())
            .map_err(|_| ProfileError::Packet { dwords })?;
        *held = Held::default();
        Ok(Self {
            body,
            certified_dwords: lowered.words.len(),
            ib,
            kernargs,
            timestamps,
            queue,
            signal,
            packet: *packet.as_array(),
            lifetime: device.lifetime(),
        })
    }

    /// The instrumented body.
    #[must_use]
    pub fn body(&self) -> &InstrumentedIb {
        &self.body
    }

    /// Dwords of the certified body of the same tape on this device (before instrumentation).
    #[must_use]
    pub fn certified_dwords(&self) -> usize {
        self.certified_dwords
    }

    /// Runs the body at `position`: waits for the ordinary path ([`Device::finish`]: the step's
    /// host preparation must be done), clears the timestamp slots, patches the bindings for
    /// `position`, publishes the packet, waits for it at most `timeout` and reads the slots.
    ///
    /// # Errors
    /// [`ProfileError`]; [`ProfileError::Timestamps`] when a slot was not written or is below
    /// the one before it.
    ///
    /// # Panics
    /// When `timeout` exceeds [`InstrumentedPlan::TIMEOUT_MAX`] (a programmer error).
    pub fn run<D: Device + ?Sized>(
        &mut self,
        device: &mut D,
        position: u32,
        timeout: Duration,
    ) -> Result<Timestamps, ProfileError> {
        assert!(timeout <= Self::TIMEOUT_MAX, "timeout {timeout:?} above {:?}", Self::TIMEOUT_MAX);
        if device.lifetime().epoch != self.lifetime.epoch {
            return Err(ProfileError::Stale);
        }
        device.finish().map_err(|source| ProfileError::Ordinary { position, source })?;
        let slots = self.body.slots();
        device.write(self.timestamps.va, &vec![0u8; slots * 8])?;
        apply_patch_sites(device, self.ib.va, &self.body.patch_sites, position)?;
        device.write_packet(self.queue, &self.packet)?;
        device.ring_doorbell(self.queue)?;
        device
            .wait_signal(self.signal, SignalCondition::Eq, 0, timeout)
            .map_err(|source| ProfileError::Wait { position, source })?;
        device.store_signal(self.signal, 1)?;
        let mut bytes = vec![0u8; slots * 8];
        device.read(self.timestamps.va, &mut bytes)?;
        let ticks: Vec<u64> =
            bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
        let mut previous = 0;
        for (slot, &value) in ticks.iter().enumerate() {
            if value == 0 || value < previous {
                return Err(ProfileError::Timestamps { slot, value, previous });
            }
            previous = value;
        }
        Ok(Timestamps { position, ticks })
    }

    /// Destroys the queue and signal and frees the body, its kernargs and its slots (nothing
    /// when the device was reset since: the reset freed them).
    pub fn release<D: Device + ?Sized>(self, device: &mut D) {
        if device.lifetime().epoch != self.lifetime.epoch {
            return;
        }
        let held = Held {
            ib: Some(self.ib),
            kernargs: Some(self.kernargs),
            timestamps: Some(self.timestamps),
            queue: Some(self.queue),
            signal: Some(self.signal),
        };
        held.release(device);
    }
}

/// What a preparation created so far.
#[derive(Debug, Default)]
struct Held {
    ib: Option<DeviceAllocation>,
    kernargs: Option<DeviceAllocation>,
    timestamps: Option<DeviceAllocation>,
    queue: Option<QueueHandle>,
    signal: Option<SignalHandle>,
}

impl Held {
    /// Releases everything, best effort: an object that will not go is the device's to reclaim at
    /// its next reset.
    fn release<D: Device + ?Sized>(self, device: &mut D) {
        if let Some(queue) = self.queue {
            let _ = device.destroy_queue(queue);
        }
        if let Some(signal) = self.signal {
            let _ = device.destroy_signal(signal);
        }
        for allocation in [self.ib, self.kernargs, self.timestamps].into_iter().flatten() {
            let _ = device.free(allocation);
        }
    }
}
