//! Loading code objects into the sim's address space and into the HAL's kernel table.
//!
//! A code object is read with `kernarg-abi` (which checks the target, metadata, descriptors and
//! entry points), then placed as an ELF loader would: one allocation spans ELF virtual addresses
//! `[0, max(p_vaddr + p_memsz))` at a load base aligned to the largest `p_align`; each PT_LOAD
//! segment's file bytes are copied to `load base + p_vaddr` and the rest of its `p_memsz` stays
//! zero. A kernel's descriptor VA is `load base + descriptor_address`, its entry VA
//! `load base + entry_address`.
//!
//! [`SoftKernels`] holds the HAL's kernel table (descriptor VAs and entry VAs to the loaded
//! kernel) and, next to it, each kernel's entry in the `kernel-refs` registry (its CPU
//! reference), looked up by (SHA-256 of the loaded bytes, kernel name) when the code object
//! loads. A kernel without a registry entry loads, but the sim cannot execute it.

use std::collections::BTreeMap;

use hal::{KernelSlot, KernelTable};
use kernarg_abi::bundle;
use kernel_refs::registry::{KernelEntry, Registry};
use object::LittleEndian;
use object::elf::{self, FileHeader64, ProgramHeader64};
use object::read::elf::{FileHeader, ProgramHeader};
use pm4_encoding::Target;
use sha2::{Digest, Sha256};

use crate::memory::{RegionKind, SimMemory};
use hal::{AllocateError, DeviceAllocation, LoadError, LoadedCodeObject};

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

/// The kernels loaded into a soft device: the HAL's kernel table, and the registry entry (CPU
/// reference, effects, arguments) of every kernel that has one, by descriptor VA.
#[derive(Clone, Debug)]
pub struct SoftKernels {
    table: KernelTable,
    registry: Registry,
    // INVARIANT: every key is the descriptor VA of a kernel of `table`, and its entry is the one
    // `registry` holds for that kernel's (code-object digest, name).
    references: BTreeMap<u64, KernelEntry>,
}

impl Default for SoftKernels {
    fn default() -> Self {
        Self::new()
    }
}

impl SoftKernels {
    /// No code objects; kernels are looked up in the built-in registry
    /// ([`Registry::builtin`]).
    #[must_use]
    pub fn new() -> Self {
        Self::with_registry(Registry::builtin())
    }

    /// No code objects; kernels are looked up in `registry`.
    #[must_use]
    pub fn with_registry(registry: Registry) -> Self {
        Self { table: KernelTable::new(), registry, references: BTreeMap::new() }
    }

    /// The HAL's kernel table ([`hal::Device::kernels`]).
    #[must_use]
    pub fn table(&self) -> &KernelTable {
        &self.table
    }

    /// The kernel whose descriptor is at `kd_va`.
    #[must_use]
    pub fn by_kd(&self, kd_va: u64) -> Option<&KernelSlot> {
        self.table.by_kd(kd_va)
    }

    /// The kernel whose first instruction is at `entry_va`.
    #[must_use]
    pub fn by_entry(&self, entry_va: u64) -> Option<&KernelSlot> {
        self.table.by_entry(entry_va)
    }

    /// The registry entry (CPU reference, effects) of the kernel whose descriptor is at `kd_va`,
    /// when it has one.
    #[must_use]
    pub fn reference(&self, kd_va: u64) -> Option<&KernelEntry> {
        self.references.get(&kd_va)
    }

    /// Whether another code object fits the table.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.table.is_full()
    }

    /// Enters `code_object` into the table ([`KernelTable::insert`]) and looks each of its
    /// kernels up in the registry by (`sha256`, name).
    pub fn insert(
        &mut self,
        code_object: &kernarg_abi::CodeObject,
        allocation: DeviceAllocation,
        load_va: u64,
        sha256: [u8; 32],
    ) -> &LoadedCodeObject {
        let loaded = self.table.insert(code_object, allocation, load_va, sha256);
        for kernel in &loaded.kernels {
            match self.registry.get(&sha256, &kernel.name) {
                Some(entry) => self.references.insert(kernel.kd_va, *entry),
                None => self.references.remove(&kernel.kd_va),
            };
        }
        loaded
    }

    /// Forgets every code object (their memory goes with the device's reset); the registry stays.
    pub fn reset(&mut self) {
        self.table.reset();
        self.references.clear();
    }
}

/// The loader's limits.
#[derive(Debug)]
pub struct CodeObjects;

impl CodeObjects {
    /// Code objects loaded at once, at most.
    pub const CODE_OBJECTS_MAX: usize = KernelTable::CODE_OBJECTS_MAX;
    /// Bytes of one code object file (or bundle), at most.
    pub const CODE_OBJECT_BYTES_MAX: usize = KernelTable::CODE_OBJECT_BYTES_MAX;
    /// PT_LOAD segments of one code object, at most.
    pub const SEGMENTS_MAX: usize = 16;
    /// Span of one loaded image, at most.
    pub const IMAGE_BYTES_MAX: u64 = 64 << 20;
    /// Largest PT_LOAD alignment honoured.
    pub const SEGMENT_ALIGN_MAX: u64 = 1 << 20;
}

/// Reads `bytes` as a code object (or bundle entry) for `target`, places it in `memory` (at
/// `load_va` exactly when given, as an IB bundle records it) and enters its kernels into `kernels`.
///
/// # Errors
/// [`LoadError`] for a file that is too large, not a code object for `target`, has unloadable
/// segments, or does not fit the limits; a misaligned or overlapping `load_va` is
/// [`LoadError::Allocate`].
pub fn load<'t>(
    kernels: &'t mut SoftKernels,
    memory: &mut SimMemory,
    target: Target,
    bytes: &[u8],
    at: Option<u64>,
) -> Result<&'t LoadedCodeObject, LoadError> {
    if bytes.len() > CodeObjects::CODE_OBJECT_BYTES_MAX {
        return Err(LoadError::TooLarge { len: bytes.len(), limit: CodeObjects::CODE_OBJECT_BYTES_MAX });
    }
    if kernels.is_full() {
        return Err(LoadError::TooMany { limit: CodeObjects::CODE_OBJECTS_MAX });
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
        // PANIC: `segment` checked the file range and filesz <= memsz, and `image_span` made the
        // allocation reach vaddr + memsz, so the write lies inside it.
        memory
            .write(load_va + s.vaddr, &elf_bytes[s.offset..s.offset + s.filesz])
            .expect("segment lies inside the image allocation");
    }
    let sha256: [u8; 32] = Sha256::digest(bytes).into();
    Ok(kernels.insert(&code_object, allocation, load_va, sha256))
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
