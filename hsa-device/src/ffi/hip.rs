//! HIP: the launch stream, modules and their kernels, memory and copies, synchronisation.

use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hal::BackendError;
use hip_sys::{HIP_LAUNCH_PARAM_BUFFER_POINTER, HIP_LAUNCH_PARAM_BUFFER_SIZE, HIP_LAUNCH_PARAM_END, Hip};

use crate::hip::{check, unsupported};

/// `hipSetDevice`.
pub(crate) fn set_device(hip: &Hip, device: i32) -> Result<(), BackendError> {
    // SAFETY: `hipSetDevice` takes any ordinal and reports a bad one as an error.
    check("hipSetDevice", unsafe { (hip.fns().hip_set_device)(device) })
}

/// `hipDeviceSynchronize`: waits for the current device's work.
pub(crate) fn device_synchronize(hip: &Hip) -> Result<(), BackendError> {
    // SAFETY: no arguments; waits for the current device's work.
    check("hipDeviceSynchronize", unsafe { (hip.fns().hip_device_synchronize)() })
}

/// A device address as the pointer HIP takes.
fn device_ptr(va: u64) -> *mut core::ffi::c_void {
    core::ptr::with_exposed_provenance_mut(usize::try_from(va).unwrap_or(0))
}

/// `hipMalloc`: returns the device address.
pub(crate) fn malloc(hip: &Hip, size: usize) -> Result<u64, BackendError> {
    let mut ptr: *mut core::ffi::c_void = core::ptr::null_mut();
    // SAFETY: `ptr` is a valid out-pointer.
    check("hipMalloc", unsafe { (hip.fns().hip_malloc)(&raw mut ptr, size) })?;
    // CAST: a usize address is at most 64 bits on every supported host.
    Ok(ptr.expose_provenance() as u64)
}

/// `hipFree` of a device address.
pub(crate) fn free(hip: &Hip, va: u64) -> Result<(), BackendError> {
    // SAFETY: HIP validates the pointer and reports an unknown one as an error.
    check("hipFree", unsafe { (hip.fns().hip_free)(device_ptr(va)) })
}

/// `hipMemcpyHtoD` of `data` to `va`.
pub(crate) fn memcpy_htod(hip: &Hip, va: u64, data: &[u8]) -> Result<(), BackendError> {
    // SAFETY: `data` is readable for its length; HIP validates the device range.
    let error = unsafe { (hip.fns().hip_memcpy_htod)(device_ptr(va), data.as_ptr().cast_mut().cast(), data.len()) };
    check("hipMemcpyHtoD", error)
}

/// `hipMemcpyDtoH` from `va` into `out`.
pub(crate) fn memcpy_dtoh(hip: &Hip, va: u64, out: &mut [u8]) -> Result<(), BackendError> {
    // SAFETY: `out` is writable for its length; HIP validates the device range.
    let error = unsafe { (hip.fns().hip_memcpy_dtoh)(out.as_mut_ptr().cast(), device_ptr(va), out.len()) };
    check("hipMemcpyDtoH", error)
}

/// A HIP stream this crate created; destroyed when dropped.
#[derive(Debug)]
pub(crate) struct HipStream {
    hip: Arc<Hip>,
    // INVARIANT: a stream `hipStreamCreate` returned, destroyed only in `Drop`.
    raw: hip_sys::HipStream,
}

impl HipStream {
    /// `hipStreamCreate` on the current device.
    pub(crate) fn create(hip: &Arc<Hip>) -> Result<Self, BackendError> {
        let mut raw: hip_sys::HipStream = core::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        check("hipStreamCreate", unsafe { (hip.fns().hip_stream_create)(&raw mut raw) })?;
        Ok(Self { hip: Arc::clone(hip), raw })
    }

    /// `hipStreamSynchronize`.
    pub(crate) fn synchronize(&self) -> Result<(), BackendError> {
        // SAFETY: INVARIANT of `raw`: a live stream.
        check("hipStreamSynchronize", unsafe { (self.hip.fns().hip_stream_synchronize)(self.raw) })
    }

    /// `hipModuleLaunchKernel` of `function` of `module` on this stream with the exact kernarg
    /// bytes, `blocks` work-groups of `workgroup` work-items.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] when `function` is not a kernel of `module`,
    /// [`BackendError::Call`] naming `hipModuleLaunchKernel`.
    pub(crate) fn launch(
        &self,
        module: &HipModule,
        function: HipFunction,
        blocks: [u32; 3],
        workgroup: [u16; 3],
        dynamic_lds_bytes: u32,
        kernarg: &[u8],
    ) -> Result<(), BackendError> {
        if function.module != module.id {
            return Err(unsupported("a kernel of another module"));
        }
        let mut buffer = kernarg.to_vec();
        let mut size: usize = buffer.len();
        let mut extra = [
            HIP_LAUNCH_PARAM_BUFFER_POINTER,
            buffer.as_mut_ptr().cast(),
            HIP_LAUNCH_PARAM_BUFFER_SIZE,
            (&raw mut size).cast(),
            HIP_LAUNCH_PARAM_END,
        ];
        // SAFETY: `function` is a kernel of `module` (checked), which is loaded while borrowed
        // (INVARIANT of `HipModule`); the stream is live (INVARIANT of `raw`); `extra` is the
        // documented buffer-pointer / size / end array, and `buffer` and `size` outlive the call,
        // which copies the arguments before it returns.
        let error = unsafe {
            (self.hip.fns().hip_module_launch_kernel)(
                function.raw,
                blocks[0],
                blocks[1],
                blocks[2],
                u32::from(workgroup[0]),
                u32::from(workgroup[1]),
                u32::from(workgroup[2]),
                dynamic_lds_bytes,
                self.raw,
                core::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        };
        check("hipModuleLaunchKernel", error)
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        // SAFETY: INVARIANT of `raw`: a live stream, destroyed once (here); the call waits for
        // no more than HIP itself does.
        let _ = unsafe { (self.hip.fns().hip_stream_destroy)(self.raw) };
    }
}

/// Identities of modules, never reused in a process: what ties a [`HipFunction`] to its module.
static NEXT_MODULE: AtomicU64 = AtomicU64::new(0);

/// A HIP module this crate loaded; unloaded when dropped.
#[derive(Debug)]
pub(crate) struct HipModule {
    hip: Arc<Hip>,
    // INVARIANT: a module `hipModuleLoadData` returned, unloaded only in `Drop`.
    raw: hip_sys::HipModule,
    id: u64,
}

/// A kernel of a [`HipModule`], named by the module's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HipFunction {
    // INVARIANT: a function of the module whose `id` is `module`, valid while that module is
    // loaded.
    raw: hip_sys::HipFunction,
    module: u64,
}

impl HipModule {
    /// `hipModuleLoadData` of a code object.
    pub(crate) fn load(hip: &Arc<Hip>, image: &[u8]) -> Result<Self, BackendError> {
        let mut raw: hip_sys::HipModule = core::ptr::null_mut();
        // SAFETY: `image` stays valid until the call returns (HIP copies it); `raw` is a valid
        // out-pointer.
        check("hipModuleLoadData", unsafe { (hip.fns().hip_module_load_data)(&raw mut raw, image.as_ptr().cast()) })?;
        // ORDERING: only uniqueness matters.
        let id = NEXT_MODULE.fetch_add(1, Ordering::Relaxed);
        Ok(Self { hip: Arc::clone(hip), raw, id })
    }

    /// `hipModuleGetFunction` of `name`.
    pub(crate) fn function(&self, name: &str) -> Result<HipFunction, BackendError> {
        let name = CString::new(name).map_err(|_| unsupported("a kernel name with a NUL byte"))?;
        let mut raw: hip_sys::HipFunction = core::ptr::null_mut();
        // SAFETY: a loaded module (INVARIANT of `raw`), a NUL-terminated name, a valid out-pointer.
        let error = unsafe { (self.hip.fns().hip_module_get_function)(&raw mut raw, self.raw, name.as_ptr()) };
        check("hipModuleGetFunction", error)?;
        Ok(HipFunction { raw, module: self.id })
    }

    /// The module's identity.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

impl HipFunction {
    /// The identity of the module the function belongs to.
    pub(crate) fn module(&self) -> u64 {
        self.module
    }
}

impl Drop for HipModule {
    fn drop(&mut self) {
        // SAFETY: INVARIANT of `raw`: a loaded module, unloaded once (here); its functions are
        // launched only with the module borrowed, so none is launched after this.
        let _ = unsafe { (self.hip.fns().hip_module_unload)(self.raw) };
    }
}
