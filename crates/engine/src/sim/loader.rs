//! Loading code objects into the sim's address space, and the kernel table.
//!
//! A code object is read with `kernarg-abi` (which checks the target, metadata, descriptors and
//! entry points), then placed as an ELF loader would: one allocation spans ELF virtual addresses
//! `[0, max(p_vaddr + p_memsz))` at a load base aligned to the largest `p_align`; each PT_LOAD
//! segment's file bytes are copied to `load base + p_vaddr` and the rest of its `p_memsz` stays
//! zero. A kernel's descriptor VA is `load base + descriptor_address`, its entry VA
//! `load base + entry_address`.
//!
//! The kernel table maps descriptor VAs (and entry VAs) to the loaded kernel and to its entry
//! in the `kernels` registry, looked up by (SHA-256 of the loaded bytes, kernel name). A kernel
//! without a registry entry loads, but the sim cannot execute it.

use std::collections::BTreeMap;

use kernarg_abi::{CodeObject, Kernel, bundle};
use kernels::memory::DeviceMemory;
use kernels::registry::{KernelEntry, Registry};
use object::LittleEndian;
use object::elf::{self, FileHeader64, ProgramHeader64};
use object::read::elf::{FileHeader, ProgramHeader};
use pm4_encoding::Target;
use sha2::{Digest, Sha256};

use crate::device::{AllocateError, LoadError, LoadedCodeObject, LoadedKernel};
use crate::sim::memory::{RegionKind, SimMemory};

const LE: LittleEndian = LittleEndian;

/// One PT_LOAD segment, as the loader uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    vaddr: u64,
    memsz: u64,
    offset: usize,
    filesz: usize,
    /// `p_align` (0 or 1: none), a power of two.
    align: u64,
}

/// A loaded kernel with everything the executor needs.
#[derive(Clone, Debug)]
pub struct KernelSlot {
    /// Addresses and launch facts.
    pub loaded: LoadedKernel,
    /// What `kernarg-abi` read: metadata and descriptor.
    pub kernel: Kernel,
    /// The registry entry (CPU reference and effects), when the kernel has one.
    pub registry: Option<KernelEntry>,
}

/// The code objects loaded into one sim device and their kernels.
#[derive(Clone, Debug, Default)]
pub struct CodeObjects {
    objects: Vec<LoadedCodeObject>,
    by_kd: BTreeMap<u64, KernelSlot>,
    kd_by_entry: BTreeMap<u64, u64>,
}

impl CodeObjects {
    /// Code objects loaded at once, at most.
    pub const CODE_OBJECTS_MAX: usize = 64;
    /// Bytes of one code object file (or bundle), at most.
    pub const CODE_OBJECT_BYTES_MAX: usize = 64 << 20;
    /// PT_LOAD segments of one code object, at most.
    pub const SEGMENTS_MAX: usize = 16;
    /// Span of one loaded image, at most.
    pub const IMAGE_BYTES_MAX: u64 = 64 << 20;
    /// Largest PT_LOAD alignment honoured.
    pub const SEGMENT_ALIGN_MAX: u64 = 1 << 20;

    /// No code objects.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `bytes` as a code object (or bundle entry) for `target`, places it in `memory` and
    /// adds its kernels to the table.
    ///
    /// # Errors
    /// [`LoadError`] for a file that is too large, not a code object for `target`, has
    /// unloadable segments, or does not fit the limits.
    pub fn load(
        &mut self,
        memory: &mut SimMemory,
        registry: &Registry,
        target: Target,
        bytes: &[u8],
    ) -> Result<&LoadedCodeObject, LoadError> {
        self.load_placed(memory, registry, target, bytes, None)
    }

    /// Like [`CodeObjects::load`], but places the image at `load_va` exactly (as an IB bundle
    /// records it); `load_va` must satisfy the segments' alignment and not overlap anything.
    ///
    /// # Errors
    /// As [`CodeObjects::load`]; a misaligned or overlapping `load_va` is
    /// [`LoadError::Allocate`].
    pub fn load_at(
        &mut self,
        memory: &mut SimMemory,
        registry: &Registry,
        target: Target,
        bytes: &[u8],
        load_va: u64,
    ) -> Result<&LoadedCodeObject, LoadError> {
        self.load_placed(memory, registry, target, bytes, Some(load_va))
    }

    fn load_placed(
        &mut self,
        memory: &mut SimMemory,
        registry: &Registry,
        target: Target,
        bytes: &[u8],
        at: Option<u64>,
    ) -> Result<&LoadedCodeObject, LoadError> {
        if bytes.len() > Self::CODE_OBJECT_BYTES_MAX {
            return Err(LoadError::TooLarge { len: bytes.len(), limit: Self::CODE_OBJECT_BYTES_MAX });
        }
        if self.objects.len() >= Self::CODE_OBJECTS_MAX {
            return Err(LoadError::TooMany { limit: Self::CODE_OBJECTS_MAX });
        }
        let code_object = kernarg_abi::read_any(bytes, Some(target))?;
        let elf_bytes = if bundle::is_bundle(bytes) {
            bundle::select(bytes, target).map_err(kernarg_abi::ReadError::from)?
        } else {
            bytes
        };
        let segments = load_segments(elf_bytes)?;
        let (span, align) = image_span(&segments)?;
        let allocation = match at {
            None => memory.allocate_kind(span, align, RegionKind::Code)?,
            Some(va) if !va.is_multiple_of(align) => {
                return Err(LoadError::Allocate(AllocateError::Misaligned { va, align }));
            }
            Some(va) => memory.allocate_at(va, span)?,
        };
        let load_va = allocation.va;
        for s in &segments {
            // PANIC: `segment` checked the file range and filesz <= memsz, and `image_span`
            // made the allocation reach vaddr + memsz, so the write lies inside it.
            memory
                .write(load_va + s.vaddr, &elf_bytes[s.offset..s.offset + s.filesz])
                .expect("segment lies inside the image allocation");
        }
        let sha256: [u8; 32] = Sha256::digest(bytes).into();
        let kernels = self.add_kernels(&code_object, load_va, &sha256, registry);
        self.objects.push(LoadedCodeObject { allocation, load_va, sha256, kernels });
        // PANIC: pushed just above.
        Ok(self.objects.last().expect("just pushed"))
    }

    /// Adds every kernel of `code_object` loaded at `load_va` to the table.
    fn add_kernels(
        &mut self,
        code_object: &CodeObject,
        load_va: u64,
        sha256: &[u8; 32],
        registry: &Registry,
    ) -> Vec<LoadedKernel> {
        let mut loaded = Vec::with_capacity(code_object.kernels.len());
        for kernel in &code_object.kernels {
            // INVARIANT: kernarg-abi checked both addresses lie in PT_LOAD segments, which
            // `image_span` placed below the image's end.
            let placed = LoadedKernel::placed(kernel, load_va);
            let (kd_va, entry_va) = (placed.kd_va, placed.entry_va);
            let slot = KernelSlot {
                loaded: placed,
                kernel: kernel.clone(),
                registry: registry.get(sha256, &kernel.metadata.name).copied(),
            };
            loaded.push(slot.loaded.clone());
            self.kd_by_entry.insert(entry_va, kd_va);
            self.by_kd.insert(kd_va, slot);
        }
        loaded
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

    /// Forgets every code object (their memory is freed with the address space).
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

/// The PT_LOAD segments of `elf_bytes`, each with its file range and alignment checked.
fn load_segments(elf_bytes: &[u8]) -> Result<Vec<Segment>, LoadError> {
    let header = FileHeader64::<LittleEndian>::parse(elf_bytes).map_err(LoadError::ProgramHeaders)?;
    let headers: &[ProgramHeader64<LittleEndian>] =
        header.program_headers(LE, elf_bytes).map_err(LoadError::ProgramHeaders)?;
    let loads: Vec<(usize, &ProgramHeader64<LittleEndian>)> =
        headers.iter().enumerate().filter(|(_, ph)| ph.p_type(LE) == elf::PT_LOAD).collect();
    if loads.is_empty() {
        return Err(LoadError::NoLoadSegment);
    }
    if loads.len() > CodeObjects::SEGMENTS_MAX {
        return Err(LoadError::TooManySegments { count: loads.len(), limit: CodeObjects::SEGMENTS_MAX });
    }
    loads.into_iter().map(|(index, ph)| segment(index, ph, elf_bytes.len())).collect()
}

/// One checked PT_LOAD segment of a `len`-byte file.
fn segment(index: usize, ph: &ProgramHeader64<LittleEndian>, len: usize) -> Result<Segment, LoadError> {
    let (offset, filesz, memsz) = (ph.p_offset(LE), ph.p_filesz(LE), ph.p_memsz(LE));
    let bad = || LoadError::SegmentFile { index, offset, filesz, memsz, len };
    let file_end = offset.checked_add(filesz).ok_or_else(bad)?;
    if filesz > memsz || usize::try_from(file_end).map_or(true, |end| end > len) {
        return Err(bad());
    }
    let align = ph.p_align(LE);
    if align > CodeObjects::SEGMENT_ALIGN_MAX || (align > 1 && !align.is_power_of_two()) {
        return Err(LoadError::SegmentAlign { index, align, limit: CodeObjects::SEGMENT_ALIGN_MAX });
    }
    // Both fit usize: their sum was checked against the file length above.
    let offset = usize::try_from(offset).map_err(|_| bad())?;
    let filesz = usize::try_from(filesz).map_err(|_| bad())?;
    Ok(Segment { vaddr: ph.p_vaddr(LE), memsz, offset, filesz, align })
}

/// The image size (ELF VA 0 to the end of the last segment) and the load base alignment.
fn image_span(segments: &[Segment]) -> Result<(u64, u64), LoadError> {
    let span = segments.iter().map(|s| s.vaddr.saturating_add(s.memsz)).max().unwrap_or(0);
    if span > CodeObjects::IMAGE_BYTES_MAX {
        return Err(LoadError::ImageTooLarge { span, limit: CodeObjects::IMAGE_BYTES_MAX });
    }
    let align = segments.iter().map(|s| s.align).fold(SimMemory::GRANULE_BYTES, u64::max);
    Ok((span, align))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(vaddr: u64, memsz: u64, align: u64) -> Segment {
        Segment { vaddr, memsz, offset: 0, filesz: 0, align }
    }

    #[test]
    fn image_spans_from_zero_to_the_last_segment_end() {
        let segments = [seg(0, 0x800, 0x1000), seg(0x1900, 0x100, 0x1000), seg(0x1000, 0x100, 0x1_0000)];
        assert_eq!(image_span(&segments).unwrap(), (0x1a00, 0x1_0000));
        assert_eq!(image_span(&[seg(0, 16, 0)]).unwrap(), (16, SimMemory::GRANULE_BYTES));
        assert!(matches!(
            image_span(&[seg(u64::MAX - 1, 16, 0)]),
            Err(LoadError::ImageTooLarge { span: u64::MAX, limit: CodeObjects::IMAGE_BYTES_MAX })
        ));
    }

    #[test]
    fn truncated_elf_headers_are_refused() {
        let fill = kernels::artifact("gfx1100/fill.co").unwrap().bytes;
        assert!(matches!(load_segments(&fill[..40]), Err(LoadError::ProgramHeaders(_))));
        assert!(!load_segments(fill).unwrap().is_empty());
    }
}
