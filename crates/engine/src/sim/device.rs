//! [`SimDevice`]: the soft device behind the [`Device`] trait.

use kernels::memory::DeviceMemory;
use kernels::registry::Registry;
use pm4_encoding::Target;
use tape_core::AllocationId;

use crate::device::{
    AllocateError, Device, DeviceAllocation, FreeError, LaunchError, LaunchRequest, LoadError, LoadedCodeObject,
    TransferError,
};
use crate::sim::exec::{self, Dispatch, ExecutedDispatch};
use crate::sim::loader::CodeObjects;
use crate::sim::memory::{RegionKind, SimMemory};

/// A CPU model of one GPU of `target`: its address space, loaded code objects, and the ordinary
/// launch path, which executes each dispatch immediately and in order.
///
/// The ordinary path places a launch's kernarg bytes in one device-owned kernarg buffer of
/// [`SimDevice::KERNARG_BYTES_MAX`] bytes, reused by every launch (execution is synchronous, so
/// no two dispatches need their segments at once).
#[derive(Debug)]
pub struct SimDevice {
    target: Target,
    memory: SimMemory,
    objects: CodeObjects,
    registry: Registry,
    kernarg: DeviceAllocation,
}

impl SimDevice {
    /// Kernarg bytes of one launch, at most.
    pub const KERNARG_BYTES_MAX: u64 = 64 * 1024;

    /// A device of `target` with nothing loaded; kernels of the built-in `kernels` registry run
    /// through their CPU references.
    #[must_use]
    pub fn new(target: Target) -> Self {
        let mut memory = SimMemory::new();
        let kernarg = Self::kernarg_buffer(&mut memory);
        Self { target, memory, objects: CodeObjects::new(), registry: Registry::builtin(), kernarg }
    }

    fn kernarg_buffer(memory: &mut SimMemory) -> DeviceAllocation {
        // PANIC: the first allocation of an empty address space is far inside every limit.
        memory
            .allocate_kind(Self::KERNARG_BYTES_MAX, SimMemory::GRANULE_BYTES, RegionKind::Kernarg)
            .expect("kernarg buffer in an empty address space")
    }

    /// Allocates `size` bytes at the caller-given `va`, to replay a recorded layout.
    ///
    /// # Errors
    /// See [`SimMemory::allocate_at`].
    pub fn allocate_at(&mut self, va: u64, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.memory.allocate_at(va, size)
    }

    /// The address space.
    #[must_use]
    pub fn memory(&self) -> &SimMemory {
        &self.memory
    }

    /// The loaded code objects and kernel table.
    #[must_use]
    pub fn code_objects(&self) -> &CodeObjects {
        &self.objects
    }

    /// The device-owned buffer the ordinary path puts kernarg segments in.
    #[must_use]
    pub fn kernarg_buffer_allocation(&self) -> DeviceAllocation {
        self.kernarg
    }

    /// [`Device::launch`], returning what the dispatch did (kernel, effects and the allocations
    /// they lie in) for hazard checking.
    ///
    /// # Errors
    /// As [`Device::launch`].
    pub fn launch_traced(&mut self, request: &LaunchRequest<'_>) -> Result<ExecutedDispatch, LaunchError> {
        let kernel_object = request.kernel_object;
        let slot = self.objects.by_kd(kernel_object).ok_or(LaunchError::UnknownKernel { kernel_object })?;
        let size = slot.loaded.kernarg_segment_size;
        if u64::from(size) > Self::KERNARG_BYTES_MAX {
            let kernel = slot.loaded.name.clone();
            return Err(LaunchError::KernargTooLarge { kernel, size, limit: Self::KERNARG_BYTES_MAX });
        }
        if usize::try_from(size).ok() != Some(request.kernarg.len()) {
            let kernel = slot.loaded.name.clone();
            return Err(LaunchError::KernargSize { kernel, expected: size, found: request.kernarg.len() });
        }
        // The kernarg buffer is device-owned and large enough (checked above).
        self.memory
            .write(self.kernarg.va, request.kernarg)
            .map_err(|fault| LaunchError::KernargFault { kernel: slot.loaded.name.clone(), fault })?;
        let dispatch = Dispatch {
            kernel_object,
            kernarg_va: self.kernarg.va,
            grid_work_items: request.grid_work_items,
            workgroup_work_items: request.workgroup_work_items,
            dynamic_lds_bytes: request.dynamic_lds_bytes,
        };
        exec::execute(&mut self.memory, &self.objects, &dispatch)
    }
}

impl Device for SimDevice {
    fn target(&self) -> Target {
        self.target
    }

    fn allocate(&mut self, size: u64) -> Result<DeviceAllocation, AllocateError> {
        self.memory.allocate(size)
    }

    fn free(&mut self, allocation: DeviceAllocation) -> Result<(), FreeError> {
        self.memory.free(allocation)
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), TransferError> {
        Ok(self.memory.write(va, data)?)
    }

    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), TransferError> {
        Ok(self.memory.read(va, out)?)
    }

    fn load_code_object(&mut self, bytes: &[u8]) -> Result<LoadedCodeObject, LoadError> {
        self.objects.load(&mut self.memory, &self.registry, self.target, bytes).cloned()
    }

    fn launch(&mut self, request: &LaunchRequest<'_>) -> Result<(), LaunchError> {
        self.launch_traced(request).map(drop)
    }

    fn resolve(&self, va: u64) -> Option<(AllocationId, u64)> {
        self.memory.resolve(va)
    }

    fn reset(&mut self) {
        self.memory.reset();
        self.objects.reset();
        self.kernarg = Self::kernarg_buffer(&mut self.memory);
    }
}
