//! The HIP backend for the ordinary path: [`HipDevice`] over `hip-sys`.
//!
//! HIP runs ordinary launches (`hipModuleLaunchKernel` with the exact kernarg bytes through the
//! `HIP_LAUNCH_PARAM_BUFFER_POINTER` / `HIP_LAUNCH_PARAM_BUFFER_SIZE` / `HIP_LAUNCH_PARAM_END`
//! `extra` array), memory (`hipMalloc`, `hipFree`, `hipMemcpyHtoD`, `hipMemcpyDtoH`) and code
//! objects (`hipModuleLoadData`, `hipModuleGetFunction`). It has no interface to AQL queues,
//! signals or executable IB memory, so it does not implement [`Device`](hal::Device):
//! those operations belong to the HSA backend ([`crate::HsaDevice`]).
//!
//! # The hand-off on hardware
//!
//! The retained route uses HIP for the ordinary launches (warm-up, recording, fallback) and the
//! HSA backend for the prepared plan. The two submit through different queues, so nothing orders
//! them: before the plan's packet is published, every HIP launch that produced its inputs must be
//! complete. [`Handoff::to_hsa`] is that synchronisation (`hipStreamSynchronize` of the launch
//! stream, then `hipDeviceSynchronize`); call it once between the last ordinary launch and the
//! first retained submission. The other direction needs no call: the plan's completion signal is
//! waited on before HIP runs again.

use std::sync::Arc;

use hip_sys::{Hip, HipError};

use crate::ffi::hip::{self as raw, HipFunction, HipModule, HipStream};
use hal::{BackendError, RuntimeStatus};

/// A HIP error as the HAL's backend-neutral [`RuntimeStatus`] (named from `hip-sys`'s
/// transcription of the headers, written in decimal as HIP's documentation does).
#[must_use]
pub fn runtime_status(error: HipError) -> RuntimeStatus {
    RuntimeStatus { value: i64::from(error.0), name: error.name(), hex: false }
}

/// The status of a HIP call as a [`BackendError`] naming the call.
pub(crate) fn check(call: &'static str, error: HipError) -> Result<(), BackendError> {
    if error.is_success() { Ok(()) } else { Err(BackendError::Call { call, status: runtime_status(error) }) }
}

/// The operation as "not supported by the HIP backend".
#[must_use]
pub fn unsupported(operation: &'static str) -> BackendError {
    BackendError::Unsupported { backend: "HIP", operation }
}

/// A HIP device with one launch stream.
#[derive(Debug)]
pub struct HipDevice {
    hip: Arc<Hip>,
    device: i32,
    // Declared before `stream`: the modules are unloaded (dropped) before the stream is
    // destroyed.
    modules: Vec<HipModule>,
    stream: HipStream,
}

/// A kernel of a module loaded by [`HipDevice::load_module`]; [`HipDevice::launch`] runs it only
/// on the device that loaded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HipKernel {
    function: HipFunction,
}

impl HipDevice {
    /// Largest kernarg segment accepted by [`HipDevice::launch`].
    pub const KERNARG_BYTES_MAX: usize = 4096;

    /// `hipInit(0)`, `hipSetDevice(device)`, `hipStreamCreate`.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming the call that failed (`hipInit` returns
    /// `hipErrorInvalidDevice (101)` on a machine without a GPU).
    pub fn open(hip: Arc<Hip>, device: i32) -> Result<Self, BackendError> {
        check("hipInit", hip.init())?;
        raw::set_device(&hip, device)?;
        let stream = HipStream::create(&hip)?;
        Ok(Self { hip, device, modules: Vec::new(), stream })
    }

    /// The device ordinal.
    #[must_use]
    pub fn ordinal(&self) -> i32 {
        self.device
    }

    /// `hipMalloc`: returns the device address.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipMalloc`.
    pub fn malloc(&mut self, size: usize) -> Result<u64, BackendError> {
        raw::malloc(&self.hip, size)
    }

    /// `hipFree` of an address [`HipDevice::malloc`] returned.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipFree` (for an address HIP does not know).
    pub fn free(&mut self, va: u64) -> Result<(), BackendError> {
        raw::free(&self.hip, va)
    }

    /// `hipMemcpyHtoD` of `data` to `va`.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipMemcpyHtoD`.
    pub fn write(&mut self, va: u64, data: &[u8]) -> Result<(), BackendError> {
        raw::memcpy_htod(&self.hip, va, data)
    }

    /// `hipMemcpyDtoH` from `va` into `out`.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipMemcpyDtoH`.
    pub fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), BackendError> {
        raw::memcpy_dtoh(&self.hip, va, out)
    }

    /// `hipModuleLoadData` of a code object, then `hipModuleGetFunction` of each name.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming the call that failed.
    pub fn load_module(&mut self, image: &[u8], names: &[&str]) -> Result<Vec<HipKernel>, BackendError> {
        let module = HipModule::load(&self.hip, image)?;
        let kernels = names.iter().map(|name| Ok(HipKernel { function: module.function(name)? })).collect();
        self.modules.push(module);
        kernels
    }

    /// `hipModuleLaunchKernel` on the device's stream with the exact kernarg bytes.
    /// `grid_work_items` must be a multiple of `workgroup` in every dimension: HIP's grid is in
    /// work-groups and cannot express a partial one.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] for a partial work-group or an oversized kernarg segment,
    /// [`BackendError::Call`] naming `hipModuleLaunchKernel`.
    pub fn launch(
        &mut self,
        kernel: HipKernel,
        grid_work_items: [u32; 3],
        workgroup: [u16; 3],
        dynamic_lds_bytes: u32,
        kernarg: &[u8],
    ) -> Result<(), BackendError> {
        if kernarg.len() > Self::KERNARG_BYTES_MAX {
            return Err(BackendError::Limit {
                what: "kernarg bytes",
                requested: kernarg.len() as u64,
                limit: Self::KERNARG_BYTES_MAX as u64,
            });
        }
        let blocks = grid_blocks(grid_work_items, workgroup).ok_or_else(|| unsupported("a partial work-group"))?;
        let module = self
            .modules
            .iter()
            .find(|m| m.id() == kernel.function.module())
            .ok_or_else(|| unsupported("a kernel of another HIP device"))?;
        self.stream.launch(module, kernel.function, blocks, workgroup, dynamic_lds_bytes, kernarg)
    }

    /// `hipStreamSynchronize` of the launch stream.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipStreamSynchronize`.
    pub fn synchronize(&mut self) -> Result<(), BackendError> {
        self.stream.synchronize()
    }

    /// The hand-off helper of this device.
    #[must_use]
    pub fn handoff(&mut self) -> Handoff<'_> {
        Handoff { device: self }
    }
}

/// The synchronisation between HIP's ordinary launches and the HSA backend's plan (see the
/// module documentation).
#[derive(Debug)]
pub struct Handoff<'a> {
    device: &'a mut HipDevice,
}

impl Handoff<'_> {
    /// Waits until every HIP launch is complete: `hipStreamSynchronize` of the launch stream,
    /// then `hipDeviceSynchronize` (other streams of the process). After `Ok`, the HSA backend
    /// may publish the plan's packet.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming the call that failed; the plan must not run then.
    pub fn to_hsa(self) -> Result<(), BackendError> {
        self.device.synchronize()?;
        raw::device_synchronize(&self.device.hip)
    }
}

/// The grid in work-groups, when every dimension is a whole number of work-groups.
#[must_use]
pub fn grid_blocks(grid_work_items: [u32; 3], workgroup: [u16; 3]) -> Option<[u32; 3]> {
    let mut blocks = [0u32; 3];
    for axis in 0..3 {
        let group = u32::from(workgroup[axis]);
        if group == 0 || !grid_work_items[axis].is_multiple_of(group) {
            return None;
        }
        blocks[axis] = grid_work_items[axis] / group;
    }
    Some(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_whole_work_groups() {
        assert_eq!(grid_blocks([256, 1, 1], [64, 1, 1]), Some([4, 1, 1]));
        assert_eq!(grid_blocks([100, 1, 1], [64, 1, 1]), None);
        assert_eq!(grid_blocks([64, 1, 1], [0, 1, 1]), None);
    }
}
