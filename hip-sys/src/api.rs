//! The HIP function table and the loaded runtime.

use core::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::path::PathBuf;

use dynload::{LoadError, fn_table};

use crate::{DeviceAttribute, DeviceProp, HipDeviceptr, HipError, HipFunction, HipModule, HipStream};

/// Environment variable naming the one library to load instead of the default candidates.
pub const LIBRARY_ENV: &str = "REDLINE_HIP_LIBRARY";

/// The library names tried, in order, when [`LIBRARY_ENV`] is not set: the ROCm 5 soname this
/// crate's structs match, the development symlink, the ROCm 6 soname, then the same three under
/// the ROCm install prefix.
pub const DEFAULT_CANDIDATES: &[&str] = &[
    "libamdhip64.so.5",
    "libamdhip64.so",
    "libamdhip64.so.6",
    "/opt/rocm/lib/libamdhip64.so.5",
    "/opt/rocm/lib/libamdhip64.so",
    "/opt/rocm/lib/libamdhip64.so.6",
];

fn_table! {
    /// Entry points of `libamdhip64`, with the prototypes of `hip_runtime_api.h`.
    ///
    /// The pointers are valid only while the [`Hip`] that owns this table is alive; every call
    /// must meet the preconditions the header documents for that function.
    pub struct HipFns {
        /// Initialises the runtime; `flags` must be 0.
        hip_init = "hipInit": unsafe extern "C" fn(flags: c_uint) -> HipError;
        /// Writes the number of devices to `count`.
        hip_get_device_count = "hipGetDeviceCount": unsafe extern "C" fn(count: *mut c_int) -> HipError;
        /// Writes the driver version to `driver_version`.
        hip_driver_get_version = "hipDriverGetVersion": unsafe extern "C" fn(driver_version: *mut c_int) -> HipError;
        /// Writes the runtime version (`HIP_VERSION` encoding) to `runtime_version`.
        hip_runtime_get_version = "hipRuntimeGetVersion":
            unsafe extern "C" fn(runtime_version: *mut c_int) -> HipError;
        /// The C name of an error code, as a static string.
        hip_get_error_name = "hipGetErrorName": unsafe extern "C" fn(hip_error: HipError) -> *const c_char;
        /// A description of an error code, as a static string.
        hip_get_error_string = "hipGetErrorString": unsafe extern "C" fn(hip_error: HipError) -> *const c_char;
        /// Makes `device_id` the calling thread's current device.
        hip_set_device = "hipSetDevice": unsafe extern "C" fn(device_id: c_int) -> HipError;
        /// Fills `prop` (the ROCm 5 layout of [`DeviceProp`]) for `device_id`. Call it only when
        /// [`Hip::runtime_version`] reports major version [`HEADER_VERSION_MAJOR`](crate::HEADER_VERSION_MAJOR).
        hip_get_device_properties = "hipGetDeviceProperties":
            unsafe extern "C" fn(prop: *mut DeviceProp, device_id: c_int) -> HipError;
        /// Writes one integer attribute of `device_id` to `pi`.
        hip_device_get_attribute = "hipDeviceGetAttribute":
            unsafe extern "C" fn(pi: *mut c_int, attr: DeviceAttribute, device_id: c_int) -> HipError;
        /// Allocates `size` bytes of device memory.
        hip_malloc = "hipMalloc": unsafe extern "C" fn(ptr: *mut *mut c_void, size: usize) -> HipError;
        /// Frees device memory.
        hip_free = "hipFree": unsafe extern "C" fn(ptr: *mut c_void) -> HipError;
        /// Copies `size_bytes` from host to device, synchronously.
        hip_memcpy_htod = "hipMemcpyHtoD":
            unsafe extern "C" fn(dst: HipDeviceptr, src: *mut c_void, size_bytes: usize) -> HipError;
        /// Copies `size_bytes` from device to host, synchronously.
        hip_memcpy_dtoh = "hipMemcpyDtoH":
            unsafe extern "C" fn(dst: *mut c_void, src: HipDeviceptr, size_bytes: usize) -> HipError;
        /// Loads a code object from memory; `image` must stay valid until the call returns.
        hip_module_load_data = "hipModuleLoadData":
            unsafe extern "C" fn(module: *mut HipModule, image: *const c_void) -> HipError;
        /// Unloads a module.
        hip_module_unload = "hipModuleUnload": unsafe extern "C" fn(module: HipModule) -> HipError;
        /// Looks a kernel up by name.
        hip_module_get_function = "hipModuleGetFunction":
            unsafe extern "C" fn(function: *mut HipFunction, module: HipModule, kname: *const c_char) -> HipError;
        /// Launches a kernel; arguments go either in `kernel_params` or, packed, in `extra`
        /// (`HIP_LAUNCH_PARAM_BUFFER_POINTER`, ..., `HIP_LAUNCH_PARAM_END`).
        hip_module_launch_kernel = "hipModuleLaunchKernel":
            unsafe extern "C" fn(
                f: HipFunction,
                grid_dim_x: c_uint,
                grid_dim_y: c_uint,
                grid_dim_z: c_uint,
                block_dim_x: c_uint,
                block_dim_y: c_uint,
                block_dim_z: c_uint,
                shared_mem_bytes: c_uint,
                stream: HipStream,
                kernel_params: *mut *mut c_void,
                extra: *mut *mut c_void,
            ) -> HipError;
        /// Creates a stream.
        hip_stream_create = "hipStreamCreate": unsafe extern "C" fn(stream: *mut HipStream) -> HipError;
        /// Destroys a stream.
        hip_stream_destroy = "hipStreamDestroy": unsafe extern "C" fn(stream: HipStream) -> HipError;
        /// Waits for all work on a stream.
        hip_stream_synchronize = "hipStreamSynchronize": unsafe extern "C" fn(stream: HipStream) -> HipError;
        /// Waits for all work on the current device.
        hip_device_synchronize = "hipDeviceSynchronize": unsafe extern "C" fn() -> HipError;
    }
}

/// A loaded HIP runtime: the library, kept open for as long as this value lives, and its function
/// table.
#[derive(Debug)]
pub struct Hip {
    runtime: dynload::Runtime<HipFns>,
}

dynload::runtime_loader!(Hip, HipFns, "hipInit");

impl Hip {
    /// Loads the first of `candidates` that `dlopen` opens (a bare name goes through the dynamic
    /// loader's search path, a path is opened as is). A candidate that opens but lacks symbols is
    /// an error; later candidates are not tried.
    ///
    /// # Errors
    ///
    /// As [`Hip::load`].
    pub fn load_from(candidates: &[PathBuf]) -> Result<Self, LoadError> {
        // SAFETY: the candidates name the HIP runtime (or a library the caller chose in its
        // place), and the prototypes of `HipFns` are transcribed from the ROCm 5.2.3 headers.
        // Resolving only takes addresses; a ROCm 6 library (a default candidate) keeps these
        // names, and the one ABI difference callers must mind there, the layout behind
        // `hipGetDeviceProperties`, is a precondition of calling it (see `DeviceProp`).
        let runtime = unsafe { dynload::Runtime::load_from(candidates) }?;
        Ok(Self { runtime })
    }

    /// `hipInit(0)`. Without a GPU it fails (ROCm 5.2.3 returns `hipErrorInvalidDevice`).
    #[must_use]
    pub fn init(&self) -> HipError {
        // SAFETY: `hipInit` takes a flags word that must be 0 and is callable at any time from
        // any thread; the pointer is valid while `self` lives.
        unsafe { (self.fns().hip_init)(0) }
    }

    /// `hipRuntimeGetVersion`: the runtime version in the `HIP_VERSION` encoding (see
    /// [`HEADER_VERSION`](crate::HEADER_VERSION)).
    ///
    /// # Errors
    ///
    /// The runtime's error code.
    pub fn runtime_version(&self) -> Result<i32, HipError> {
        // SAFETY: the argument is a valid out-pointer for the duration of the call.
        self.read_int(|out| unsafe { (self.fns().hip_runtime_get_version)(out) })
    }

    /// `hipDriverGetVersion`: the version of the kernel driver the runtime talks to.
    ///
    /// # Errors
    ///
    /// The runtime's error code.
    pub fn driver_version(&self) -> Result<i32, HipError> {
        // SAFETY: the argument is a valid out-pointer for the duration of the call.
        self.read_int(|out| unsafe { (self.fns().hip_driver_get_version)(out) })
    }

    /// `hipGetDeviceCount`.
    ///
    /// # Errors
    ///
    /// The runtime's error code (`hipErrorNoDevice` without a GPU).
    pub fn device_count(&self) -> Result<i32, HipError> {
        // SAFETY: the argument is a valid out-pointer for the duration of the call.
        self.read_int(|out| unsafe { (self.fns().hip_get_device_count)(out) })
    }

    /// `hipGetErrorName`: the runtime's name for `error`; `None` if it returns null.
    #[must_use]
    pub fn error_name(&self, error: HipError) -> Option<&CStr> {
        // SAFETY: takes any value and returns a static string or null; the pointer is valid while
        // `self` lives.
        let text = unsafe { (self.fns().hip_get_error_name)(error) };
        // SAFETY: a non-null result is a NUL-terminated string with static storage in the
        // library, which stays loaded while `self` does.
        (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) })
    }

    /// `hipGetErrorString`: the runtime's description of `error`; `None` if it returns null.
    #[must_use]
    pub fn error_string(&self, error: HipError) -> Option<&CStr> {
        // SAFETY: takes any value and returns a static string or null; the pointer is valid while
        // `self` lives.
        let text = unsafe { (self.fns().hip_get_error_string)(error) };
        // SAFETY: a non-null result is a NUL-terminated string with static storage in the
        // library, which stays loaded while `self` does.
        (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) })
    }

    /// Runs a getter that writes one `int` through its argument.
    fn read_int(&self, getter: impl FnOnce(*mut c_int) -> HipError) -> Result<i32, HipError> {
        let mut value: c_int = 0;
        getter(&mut value).ok()?;
        Ok(value)
    }
}
