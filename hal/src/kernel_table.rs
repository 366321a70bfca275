//! The kernel table: every loaded code object of a device and its kernels, by descriptor VA and
//! by entry VA, with what `kernarg-abi` read of each (metadata, descriptor). The lowering reads
//! descriptors from it; a backend fills it as it loads. What a backend needs beyond that to run a
//! kernel (the soft device: its CPU reference) the backend keeps itself, by descriptor VA.

use std::collections::BTreeMap;

use kernarg_abi::{CodeObject, Kernel, TargetId};

use crate::{DeviceAllocation, LoadedCodeObject, LoadedKernel};

/// A loaded kernel with everything the lowering and an executor need.
#[derive(Clone, Debug)]
pub struct KernelSlot {
    /// Addresses and launch facts.
    pub loaded: LoadedKernel,
    /// What `kernarg-abi` read: metadata and descriptor.
    pub kernel: Kernel,
    /// The target its code object was built for (what `kernarg_abi::verdict` judges it against).
    pub target: TargetId,
}

/// The code objects loaded into one device and their kernels.
#[derive(Clone, Debug, Default)]
pub struct KernelTable {
    objects: Vec<LoadedCodeObject>,
    by_kd: BTreeMap<u64, KernelSlot>,
    kd_by_entry: BTreeMap<u64, u64>,
}

impl KernelTable {
    /// Code objects loaded at once, at most.
    pub const CODE_OBJECTS_MAX: usize = 64;
    /// Bytes of one code object file (or bundle), at most.
    pub const CODE_OBJECT_BYTES_MAX: usize = 64 << 20;

    /// No code objects.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether another code object fits ([`Self::CODE_OBJECTS_MAX`]).
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.objects.len() >= Self::CODE_OBJECTS_MAX
    }

    /// Enters `code_object`, whose ELF virtual address 0 was placed at `load_va` inside
    /// `allocation`, with the SHA-256 of the bytes the device was given. Returns the entry.
    pub fn insert(
        &mut self,
        code_object: &CodeObject,
        allocation: DeviceAllocation,
        load_va: u64,
        sha256: [u8; 32],
    ) -> &LoadedCodeObject {
        let mut loaded = Vec::with_capacity(code_object.kernels.len());
        for kernel in &code_object.kernels {
            let placed = LoadedKernel::placed(kernel, load_va);
            let (kd_va, entry_va) = (placed.kd_va, placed.entry_va);
            let slot = KernelSlot { loaded: placed, kernel: kernel.clone(), target: code_object.target };
            loaded.push(slot.loaded.clone());
            self.kd_by_entry.insert(entry_va, kd_va);
            self.by_kd.insert(kd_va, slot);
        }
        self.objects.push(LoadedCodeObject { allocation, load_va, sha256, kernels: loaded });
        // PANIC: pushed just above.
        self.objects.last().expect("just pushed")
    }

    /// The kernel whose descriptor is at `kd_va`.
    #[must_use]
    pub fn by_kd(&self, kd_va: u64) -> Option<&KernelSlot> {
        self.by_kd.get(&kd_va)
    }

    /// The kernel whose first instruction is at `entry_va`.
    #[must_use]
    pub fn by_entry(&self, entry_va: u64) -> Option<&KernelSlot> {
        self.by_kd.get(self.kd_by_entry.get(&entry_va)?)
    }

    /// The loaded code objects, in load order.
    #[must_use]
    pub fn objects(&self) -> &[LoadedCodeObject] {
        &self.objects
    }

    /// Every kernel, by descriptor VA.
    pub fn slots(&self) -> impl Iterator<Item = &KernelSlot> {
        self.by_kd.values()
    }

    /// Forgets every code object (their memory goes with the device's reset).
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}
