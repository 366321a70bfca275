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

use std::ffi::CString;
use std::sync::Arc;

use hip_sys::{
    HIP_LAUNCH_PARAM_BUFFER_POINTER, HIP_LAUNCH_PARAM_BUFFER_SIZE, HIP_LAUNCH_PARAM_END, Hip, HipError, HipFunction,
    HipModule, HipStream,
};

use hal::{BackendError, RuntimeStatus};

/// A HIP error as the HAL's backend-neutral [`RuntimeStatus`] (named from `hip-sys`'s
/// transcription of the headers, written in decimal as HIP's documentation does).
#[must_use]
pub fn runtime_status(error: HipError) -> RuntimeStatus {
    RuntimeStatus { value: i64::from(error.0), name: error.name(), hex: false }
}

/// The status of a HIP call as a [`BackendError`] naming the call.
fn check(call: &'static str, error: HipError) -> Result<(), BackendError> {
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
    // INVARIANT: a stream `hipStreamCreate` returned, destroyed only in `Drop`.
    stream: HipStream,
    modules: Vec<HipModule>,
}

/// A kernel of a module loaded by [`HipDevice::load_module`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HipKernel {
    // INVARIANT: a function of a module of the device it came from, valid until that device drops.
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
        // SAFETY: `hipSetDevice` takes any ordinal and reports a bad one as an error.
        check("hipSetDevice", unsafe { (hip.fns().hip_set_device)(device) })?;
        let mut stream: HipStream = core::ptr::null_mut();
        // SAFETY: `stream` is a valid out-pointer.
        check("hipStreamCreate", unsafe { (hip.fns().hip_stream_create)(&raw mut stream) })?;
        Ok(Self { hip, device, stream, modules: Vec::new() })
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
        let mut ptr: *mut core::ffi::c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is a valid out-pointer.
        check("hipMalloc", unsafe { (self.hip.fns().hip_malloc)(&raw mut ptr, size) })?;
        Ok(ptr.expose_provenance() as u64)
    }

    /// `hipFree` of an address [`HipDevice::malloc`] returned.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipFree` (for an address HIP does not know).
    pub fn free(&mut self, va: u64) -> Result<(), BackendError> {
        let ptr = device_ptr(va);
        // SAFETY: HIP validates the pointer and reports an unknown one as an error.
        check("hipFree", unsafe { (self.hip.fns().hip_free)(ptr) })
    }

    /// `hipMemcpyHtoD` of `data` to `va`.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipMemcpyHtoD`.
    pub fn write(&mut self, va: u64, data: &[u8]) -> Result<(), BackendError> {
        // SAFETY: `data` is readable for its length; HIP validates the device range.
        let error =
            unsafe { (self.hip.fns().hip_memcpy_htod)(device_ptr(va), data.as_ptr().cast_mut().cast(), data.len()) };
        check("hipMemcpyHtoD", error)
    }

    /// `hipMemcpyDtoH` from `va` into `out`.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipMemcpyDtoH`.
    pub fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), BackendError> {
        // SAFETY: `out` is writable for its length; HIP validates the device range.
        let error = unsafe { (self.hip.fns().hip_memcpy_dtoh)(out.as_mut_ptr().cast(), device_ptr(va), out.len()) };
        check("hipMemcpyDtoH", error)
    }

    /// `hipModuleLoadData` of a code object, then `hipModuleGetFunction` of each name.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming the call that failed.
    pub fn load_module(&mut self, image: &[u8], names: &[&str]) -> Result<Vec<HipKernel>, BackendError> {
        let mut module: HipModule = core::ptr::null_mut();
        // SAFETY: `image` stays valid until the call returns (HIP copies it).
        check("hipModuleLoadData", unsafe {
            (self.hip.fns().hip_module_load_data)(&raw mut module, image.as_ptr().cast())
        })?;
        self.modules.push(module);
        names
            .iter()
            .map(|name| {
                let name = CString::new(*name).map_err(|_| unsupported("a kernel name with a NUL byte"))?;
                let mut function: HipFunction = core::ptr::null_mut();
                // SAFETY: a loaded module, a NUL-terminated name, a valid out-pointer.
                let error =
                    unsafe { (self.hip.fns().hip_module_get_function)(&raw mut function, module, name.as_ptr()) };
                check("hipModuleGetFunction", error)?;
                Ok(HipKernel { function })
            })
            .collect()
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
        let mut buffer = kernarg.to_vec();
        let mut size: usize = buffer.len();
        let mut extra = [
            HIP_LAUNCH_PARAM_BUFFER_POINTER,
            buffer.as_mut_ptr().cast(),
            HIP_LAUNCH_PARAM_BUFFER_SIZE,
            (&raw mut size).cast(),
            HIP_LAUNCH_PARAM_END,
        ];
        // SAFETY: `function` is a live kernel of this device (INVARIANT of `HipKernel`); `extra`
        // is the documented buffer-pointer / size / end array, and `buffer` and `size` outlive
        // the call, which copies the arguments before it returns.
        let error = unsafe {
            (self.hip.fns().hip_module_launch_kernel)(
                kernel.function,
                blocks[0],
                blocks[1],
                blocks[2],
                u32::from(workgroup[0]),
                u32::from(workgroup[1]),
                u32::from(workgroup[2]),
                dynamic_lds_bytes,
                self.stream,
                core::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        };
        check("hipModuleLaunchKernel", error)
    }

    /// `hipStreamSynchronize` of the launch stream.
    ///
    /// # Errors
    /// [`BackendError::Call`] naming `hipStreamSynchronize`.
    pub fn synchronize(&mut self) -> Result<(), BackendError> {
        // SAFETY: INVARIANT of `stream`.
        check("hipStreamSynchronize", unsafe { (self.hip.fns().hip_stream_synchronize)(self.stream) })
    }

    /// The hand-off helper of this device.
    #[must_use]
    pub fn handoff(&mut self) -> Handoff<'_> {
        Handoff { device: self }
    }
}

impl Drop for HipDevice {
    fn drop(&mut self) {
        // SAFETY: the stream and modules belong to this device and are used by nothing else now;
        // neither call waits for queued work indefinitely beyond what HIP itself does.
        unsafe {
            for module in self.modules.drain(..) {
                let _ = (self.hip.fns().hip_module_unload)(module);
            }
            let _ = (self.hip.fns().hip_stream_destroy)(self.stream);
        }
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
        // SAFETY: no arguments; waits for the current device's work.
        check("hipDeviceSynchronize", unsafe { (self.device.hip.fns().hip_device_synchronize)() })
    }
}

/// A device address as the pointer HIP takes.
fn device_ptr(va: u64) -> *mut core::ffi::c_void {
    core::ptr::with_exposed_provenance_mut(usize::try_from(va).unwrap_or(0))
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
