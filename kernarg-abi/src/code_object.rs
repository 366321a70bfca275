//! Reading a code object: ELF identification, the metadata note, and each kernel's descriptor
//! found through its `.kd` symbol and the PT_LOAD segments.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use pm4_encoding::{Family, Target};

use crate::bundle::{self, BundleError};
use crate::descriptor::{KERNEL_CODE_ENTRY_ALIGN, KERNEL_DESCRIPTOR_ALIGN, KERNEL_DESCRIPTOR_SIZE, KernelDescriptor};
use crate::elf::Elf;
use crate::layout::{KernargLayout, LayoutError};
use crate::metadata::{KernelMetadata, MetadataError, parse_metadata};
use crate::sgpr::UserSgprLayout;
use crate::target::{CodeObjectVersion, ELFOSABI_AMDGPU_HSA, EM_AMDGPU, TargetId};
use crate::text::{Short, ShortList};

/// `e_type` of a loadable code object (`ET_DYN`, generic ELF).
const ET_DYN: u16 = object::elf::ET_DYN.0;
/// `st_type` of a kernel descriptor symbol (`STT_OBJECT`, generic ELF; reference §6).
const STT_OBJECT: u8 = object::elf::STT_OBJECT.0;

/// A code object: its target, version, metadata and kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObject {
    /// Processor and features from `e_flags`.
    pub target: TargetId,
    /// Version from `EI_ABIVERSION`.
    pub version: CodeObjectVersion,
    /// `amdhsa.version` of the metadata.
    pub metadata_version: [u32; 2],
    /// `amdhsa.target` of the metadata (checked against [`target`](Self::target)).
    pub metadata_target: String,
    /// `amdhsa.printf`.
    pub printf: Vec<String>,
    /// Every kernel of `amdhsa.kernels`, in metadata order.
    pub kernels: Vec<Kernel>,
}

impl CodeObject {
    /// The kernel whose `.name` or `.symbol` is `name`.
    #[must_use]
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.metadata.name == name || k.metadata.symbol == name)
    }

    /// The family of a supported target.
    #[must_use]
    pub fn family(&self) -> Option<Family> {
        self.target.target.map(Target::family)
    }
}

/// One kernel: metadata, descriptor and addresses (virtual addresses of the code object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The kernel's metadata entry.
    pub metadata: KernelMetadata,
    /// The 64 bytes of its `.kd` symbol.
    pub descriptor: KernelDescriptor,
    /// Value of the `.kd` symbol.
    pub descriptor_address: u64,
    /// `descriptor_address + kernel_code_entry_byte_offset`, 256-byte aligned, in executable code.
    pub entry_address: u64,
}

impl Kernel {
    /// `.name`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The checked kernarg layout.
    ///
    /// # Errors
    /// See [`KernargLayout::new`].
    pub fn kernarg_layout(&self) -> Result<KernargLayout, LayoutError> {
        KernargLayout::new(&self.metadata)
    }

    /// The enabled user SGPRs for `family`.
    #[must_use]
    pub fn user_sgpr_layout(&self, family: Family) -> UserSgprLayout {
        UserSgprLayout::new(&self.descriptor, family)
    }
}

/// The segment or section a run of ELF notes sits in, as named in [`ReadError`] messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotePlace {
    /// A PT_NOTE segment: the index of its program header.
    Segment {
        /// Program header index.
        index: usize,
    },
    /// An SHT_NOTE section.
    Section {
        /// Section index.
        index: usize,
        /// Section name (empty when unreadable).
        name: String,
    },
}

impl core::fmt::Display for NotePlace {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Segment { index } => write!(f, "PT_NOTE program header {index}"),
            Self::Section { index, name } if name.is_empty() => write!(f, "SHT_NOTE section {index}"),
            Self::Section { index, name } => write!(f, "SHT_NOTE section {index} ({name})"),
        }
    }
}

impl NotePlace {
    /// The header field holding the alignment of the notes.
    #[must_use]
    pub fn align_field(&self) -> &'static str {
        match self {
            Self::Segment { .. } => "p_align",
            Self::Section { .. } => "sh_addralign",
        }
    }
}

/// Why a code object (or bundle) could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The input does not start with the ELF magic.
    #[error("not an ELF file ({len} bytes, no \\x7fELF magic)")]
    NotElf {
        /// Input length.
        len: usize,
    },
    /// Not ELFCLASS64.
    #[error("ELF class {found} is not ELFCLASS64 (2)")]
    Class {
        /// `EI_CLASS`.
        found: u8,
    },
    /// Not little-endian.
    #[error("ELF data encoding {found} is not ELFDATA2LSB (1)")]
    Encoding {
        /// `EI_DATA`.
        found: u8,
    },
    /// An ELF version other than the current one.
    #[error("EI_VERSION {found} is not EV_CURRENT (1)")]
    IdentVersion {
        /// `EI_VERSION`.
        found: u8,
    },
    /// The input starts like an ELF file but ends inside the file header.
    #[error("truncated ELF header: the file is {len} bytes, an ELF64 header is {needed}")]
    TruncatedHeader {
        /// Input length.
        len: usize,
        /// Size of the ELF64 file header.
        needed: usize,
    },
    /// `e_phentsize` or `e_shentsize` other than the ELF64 record size.
    #[error("{field} {found} is not {expected}, the size of an ELF64 {}", if *field == "e_phentsize" { "program header" } else { "section header" })]
    EntrySize {
        /// `e_phentsize` or `e_shentsize`.
        field: &'static str,
        /// The field's value.
        found: u16,
        /// The ELF64 record size.
        expected: u16,
    },
    /// The program or section header table runs past the end of the file.
    #[error(
        "{table} table ({offset_field} {offset:#x}, {count_field} {count} entries of {entry_size} bytes) ends at byte {:#x}, past the end of the {len}-byte file",
        u128::from(*offset) + u128::from(*count) * u128::from(*entry_size)
    )]
    TableOutOfBounds {
        /// `program header` or `section header`.
        table: &'static str,
        /// `e_phoff` or `e_shoff`.
        offset_field: &'static str,
        /// The table's file offset.
        offset: u64,
        /// The field the entry count comes from.
        count_field: &'static str,
        /// The entry count.
        count: u64,
        /// `e_phentsize` or `e_shentsize`.
        entry_size: u16,
        /// Input length.
        len: usize,
    },
    /// `e_shnum`, `e_phnum` or `e_shstrndx` defers to section header 0, which is not in the file.
    #[error("{field} defers to section header 0, which is not in the file (e_shoff {shoff:#x}, {len}-byte file)")]
    ExtendedNumbering {
        /// The header field and its value.
        field: &'static str,
        /// `e_shoff`.
        shoff: u64,
        /// Input length.
        len: usize,
    },
    /// `e_shstrndx` is not the index of a section.
    #[error("e_shstrndx {index} is not a section index: the file has {count} sections")]
    SectionNamesIndex {
        /// `e_shstrndx` (or section 0's `sh_link` for `SHN_XINDEX`).
        index: u32,
        /// Number of sections.
        count: usize,
    },
    /// A section whose file bytes run past the end of the file.
    #[error(
        "section {index}{}: sh_offset {offset:#x} + sh_size {size:#x} ends at byte {:#x}, past the end of the {len}-byte file",
        quoted(name),
        u128::from(*offset) + u128::from(*size)
    )]
    SectionOutOfBounds {
        /// Section index.
        index: usize,
        /// Section name (empty when unreadable), cut to 64 bytes.
        name: String,
        /// `sh_offset`.
        offset: u64,
        /// `sh_size`.
        size: u64,
        /// Input length.
        len: usize,
    },
    /// A segment whose file bytes run past the end of the file.
    #[error(
        "program header {index} ({}): p_offset {offset:#x} + p_filesz {filesz:#x} ends at byte {:#x}, past the end of the {len}-byte file",
        segment_type(*p_type),
        u128::from(*offset) + u128::from(*filesz)
    )]
    SegmentOutOfBounds {
        /// Program header index.
        index: usize,
        /// `p_type`.
        p_type: u32,
        /// `p_offset`.
        offset: u64,
        /// `p_filesz`.
        filesz: u64,
        /// Input length.
        len: usize,
    },
    /// A note segment or section with an alignment other than 4 or 8.
    #[error("{place}: {field} {align} is not a note alignment (4 or 8; values below 4 read as 4)")]
    NoteAlignment {
        /// The segment or section.
        place: NotePlace,
        /// `p_align` or `sh_addralign`.
        field: &'static str,
        /// The alignment.
        align: u64,
    },
    /// A note whose header, name or descriptor runs past the end of its segment or section.
    #[error(
        "{place}: the note at byte {offset:#x} has a {part} of {size} bytes ending at byte {end:#x}, past the end of its notes at byte {container_end:#x}"
    )]
    NoteTruncated {
        /// The segment or section.
        place: NotePlace,
        /// File offset of the note.
        offset: u64,
        /// Which part: header, name (`n_namesz`) or descriptor (`n_descsz`).
        part: &'static str,
        /// Size of the part.
        size: u64,
        /// File offset where the part would end (saturating).
        end: u64,
        /// File offset where the segment or section ends.
        container_end: u64,
    },
    /// A symbol table whose size is not a whole number of symbols.
    #[error("section {index}{}: sh_size {size} is not a multiple of the {entry}-byte ELF64 symbol", quoted(name))]
    SymbolTableSize {
        /// Section index.
        index: usize,
        /// Section name (empty when unreadable).
        name: String,
        /// `sh_size`.
        size: u64,
        /// Bytes of one symbol.
        entry: u64,
    },
    /// A symbol table whose `sh_link` is not a section.
    #[error("section {index}{}: sh_link {link} is not a section index: the file has {count} sections", quoted(name))]
    SymbolStringsIndex {
        /// Section index of the symbol table.
        index: usize,
        /// Section name (empty when unreadable).
        name: String,
        /// `sh_link`.
        link: u32,
        /// Number of sections.
        count: usize,
    },
    /// A symbol table whose `sh_link` is not a string table.
    #[error("section {index}{}: sh_link {link} is a section of type {found}, not SHT_STRTAB (3)", quoted(name))]
    SymbolStringsType {
        /// Section index of the symbol table.
        index: usize,
        /// Section name (empty when unreadable).
        name: String,
        /// `sh_link`.
        link: u32,
        /// `sh_type` of the linked section.
        found: u32,
    },
    /// Not `EM_AMDGPU`.
    #[error("e_machine {found} is not EM_AMDGPU ({expected})")]
    Machine {
        /// `e_machine`.
        found: u16,
        /// [`EM_AMDGPU`].
        expected: u16,
    },
    /// Not `ELFOSABI_AMDGPU_HSA`.
    #[error("EI_OSABI {found} is not ELFOSABI_AMDGPU_HSA ({expected})")]
    OsAbi {
        /// `EI_OSABI`.
        found: u8,
        /// [`ELFOSABI_AMDGPU_HSA`].
        expected: u8,
    },
    /// A code object version other than v4, v5 or v6.
    #[error("EI_ABIVERSION {found} is not code object v4 (2), v5 (3) or v6 (4)")]
    AbiVersion {
        /// `EI_ABIVERSION`.
        found: u8,
    },
    /// Not a shared object.
    #[error("e_type {found} is not ET_DYN ({expected})")]
    FileType {
        /// `e_type`.
        found: u16,
        /// `ET_DYN`.
        expected: u16,
    },
    /// No `NT_AMDGPU_METADATA` note.
    #[error("no NT_AMDGPU_METADATA note in a PT_NOTE segment or SHT_NOTE section")]
    NoMetadata,
    /// More than one metadata note.
    #[error("{count} NT_AMDGPU_METADATA notes; expected one")]
    DuplicateMetadata {
        /// Notes found.
        count: usize,
    },
    /// The metadata does not parse; byte offsets in `source` count from the start of the note's
    /// descriptor, at file byte `offset`.
    #[error("metadata (the NT_AMDGPU_METADATA descriptor at file byte {offset:#x}): {source}")]
    Metadata {
        /// File offset of the note descriptor.
        offset: u64,
        /// What is wrong with the document.
        source: MetadataError,
    },
    /// `amdhsa.target` names another processor or feature set than `e_flags`.
    #[error("metadata target {} disagrees with e_flags target {elf}", Short(metadata))]
    MetadataTarget {
        /// `amdhsa.target`.
        metadata: String,
        /// Target id from `e_flags`.
        elf: String,
    },
    /// Neither `.symtab` nor `.dynsym`.
    #[error("no symbol table (.symtab or .dynsym)")]
    NoSymbolTable,
    /// A kernel's `.symbol` is not a defined symbol.
    #[error("kernel {}: descriptor symbol {} is not defined", Short(kernel), Short(symbol))]
    MissingSymbol {
        /// `.name`.
        kernel: String,
        /// `.symbol`.
        symbol: String,
    },
    /// A descriptor symbol defined twice with different values.
    #[error("descriptor symbol {} is defined at {first:#x} and at {second:#x}", Short(symbol))]
    DuplicateSymbol {
        /// `.symbol`.
        symbol: String,
        /// First value.
        first: u64,
        /// Conflicting value.
        second: u64,
    },
    /// A descriptor symbol that is not `STT_OBJECT`.
    #[error("descriptor symbol {} has type {found}, expected STT_OBJECT ({expected})", Short(symbol))]
    SymbolType {
        /// `.symbol`.
        symbol: String,
        /// `st_type`.
        found: u8,
        /// `STT_OBJECT`.
        expected: u8,
    },
    /// A descriptor symbol whose size is not 64.
    #[error("descriptor symbol {} has size {size}, expected {expected}", Short(symbol))]
    SymbolSize {
        /// `.symbol`.
        symbol: String,
        /// `st_size`.
        size: u64,
        /// [`KERNEL_DESCRIPTOR_SIZE`].
        expected: u64,
    },
    /// A descriptor outside every PT_LOAD segment's file bytes.
    #[error("descriptor symbol {} at {address:#x} is not file-backed by any PT_LOAD segment", Short(symbol))]
    SymbolNotLoaded {
        /// `.symbol`.
        symbol: String,
        /// `st_value`.
        address: u64,
    },
    /// A descriptor address that is not 64-byte aligned.
    #[error("descriptor symbol {} at {address:#x} is not {align}-byte aligned", Short(symbol))]
    DescriptorMisaligned {
        /// `.symbol`.
        symbol: String,
        /// `st_value`.
        address: u64,
        /// [`KERNEL_DESCRIPTOR_ALIGN`].
        align: u64,
    },
    /// `descriptor_address + kernel_code_entry_byte_offset` overflows.
    #[error("kernel {}: entry offset {offset} from descriptor {descriptor_address:#x} overflows", Short(kernel))]
    EntryOverflow {
        /// `.name`.
        kernel: String,
        /// Descriptor address.
        descriptor_address: u64,
        /// `kernel_code_entry_byte_offset`.
        offset: i64,
    },
    /// An entry address that is not 256-byte aligned.
    #[error("kernel {}: entry {entry:#x} is not {align}-byte aligned", Short(kernel))]
    EntryMisaligned {
        /// `.name`.
        kernel: String,
        /// Entry address.
        entry: u64,
        /// [`KERNEL_CODE_ENTRY_ALIGN`].
        align: u64,
    },
    /// An entry address outside every executable PT_LOAD segment.
    #[error("kernel {}: entry {entry:#x} is not in an executable PT_LOAD segment", Short(kernel))]
    EntryNotExecutable {
        /// `.name`.
        kernel: String,
        /// Entry address.
        entry: u64,
    },
    /// The code object of a bundle entry does not read; file offsets in `source` count from the
    /// start of the entry, at bundle byte `offset`.
    #[error("bundle entry {} at byte {offset:#x} (offsets below count from there): {source}", Short(triple))]
    InBundle {
        /// Entry id.
        triple: String,
        /// Offset of the entry's code object in the bundle.
        offset: u64,
        /// Why the entry's code object does not read.
        source: Box<ReadError>,
    },
    /// The bundle could not be read or has no entry for the target.
    #[error("offload bundle: {0}")]
    Bundle(#[from] BundleError),
    /// A bundle with several device entries and no target to choose.
    #[error("bundle has {} device entries ({}); a target is required", available.len(), ShortList(available))]
    TargetRequired {
        /// Device entry ids.
        available: Vec<String>,
    },
    /// A code object for another target than the one requested.
    #[error("code object is for {found}, not {requested}")]
    TargetMismatch {
        /// Target asked for.
        requested: Target,
        /// Target id from `e_flags`.
        found: String,
    },
}

/// ` (name)` after a section index, or nothing for a section whose name cannot be read.
fn quoted(name: &str) -> String {
    if name.is_empty() { String::new() } else { alloc::format!(" ({name})") }
}

/// The name of a `p_type`, or its value.
fn segment_type(p_type: u32) -> String {
    use object::elf;
    let name = match object::elf::ProgramType(p_type) {
        elf::PT_NULL => "PT_NULL",
        elf::PT_LOAD => "PT_LOAD",
        elf::PT_DYNAMIC => "PT_DYNAMIC",
        elf::PT_INTERP => "PT_INTERP",
        elf::PT_NOTE => "PT_NOTE",
        elf::PT_SHLIB => "PT_SHLIB",
        elf::PT_PHDR => "PT_PHDR",
        elf::PT_TLS => "PT_TLS",
        elf::PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME",
        elf::PT_GNU_STACK => "PT_GNU_STACK",
        elf::PT_GNU_RELRO => "PT_GNU_RELRO",
        _ => return alloc::format!("p_type {p_type:#x}"),
    };
    name.to_string()
}

/// Reads one ELF code object.
///
/// # Errors
/// [`ReadError`] for anything that is not a v4/v5/v6 HSA AMDGPU shared object with one parseable
/// metadata note agreeing with `e_flags`, and for any kernel whose descriptor cannot be located
/// and checked (see the variants).
pub fn read(bytes: &[u8]) -> Result<CodeObject, ReadError> {
    let elf = Elf::parse(bytes)?;
    if elf.machine() != EM_AMDGPU {
        return Err(ReadError::Machine { found: elf.machine(), expected: EM_AMDGPU });
    }
    if elf.os_abi() != ELFOSABI_AMDGPU_HSA {
        return Err(ReadError::OsAbi { found: elf.os_abi(), expected: ELFOSABI_AMDGPU_HSA });
    }
    let version = CodeObjectVersion::from_abi_version(elf.abi_version())
        .ok_or(ReadError::AbiVersion { found: elf.abi_version() })?;
    if elf.file_type() != ET_DYN {
        return Err(ReadError::FileType { found: elf.file_type(), expected: ET_DYN });
    }
    let target = TargetId::from_e_flags(elf.flags());
    let (offset, note) = elf.metadata_note()?;
    let metadata = parse_metadata(note).map_err(|source| ReadError::Metadata { offset, source })?;
    if !target.matches_target_id(&metadata.target) {
        return Err(ReadError::MetadataTarget { metadata: metadata.target, elf: target.to_target_id() });
    }
    let symbols = elf.symbols()?;
    let kernels = metadata
        .kernels
        .into_iter()
        .map(|m| {
            let symbol = match symbols.get(m.symbol.as_bytes()) {
                None => return Err(ReadError::MissingSymbol { kernel: m.name, symbol: m.symbol }),
                Some(Err(c)) => {
                    return Err(ReadError::DuplicateSymbol { symbol: m.symbol, first: c.first, second: c.second });
                }
                Some(Ok(s)) => *s,
            };
            kernel(&elf, m, symbol)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CodeObject {
        target,
        version,
        metadata_version: metadata.version,
        metadata_target: metadata.target,
        printf: metadata.printf,
        kernels,
    })
}

/// Locates and checks one kernel's descriptor and entry.
fn kernel(elf: &Elf<'_>, metadata: KernelMetadata, symbol: crate::elf::Symbol) -> Result<Kernel, ReadError> {
    let name = || metadata.symbol.clone();
    if symbol.kind != STT_OBJECT {
        return Err(ReadError::SymbolType { symbol: name(), found: symbol.kind, expected: STT_OBJECT });
    }
    // CAST: usize to u64 is lossless.
    let size = KERNEL_DESCRIPTOR_SIZE as u64;
    if symbol.size != size {
        return Err(ReadError::SymbolSize { symbol: name(), size: symbol.size, expected: size });
    }
    let address = symbol.value;
    if !address.is_multiple_of(KERNEL_DESCRIPTOR_ALIGN) {
        return Err(ReadError::DescriptorMisaligned { symbol: name(), address, align: KERNEL_DESCRIPTOR_ALIGN });
    }
    let bytes = elf.load_bytes(address, size).ok_or_else(|| ReadError::SymbolNotLoaded { symbol: name(), address })?;
    let Ok(descriptor) = KernelDescriptor::from_bytes(bytes) else {
        // `load_bytes` returned exactly `size` bytes.
        return Err(ReadError::SymbolNotLoaded { symbol: name(), address });
    };
    let offset = descriptor.kernel_code_entry_byte_offset();
    let entry = address.checked_add_signed(offset).ok_or_else(|| ReadError::EntryOverflow {
        kernel: metadata.name.clone(),
        descriptor_address: address,
        offset,
    })?;
    if !entry.is_multiple_of(KERNEL_CODE_ENTRY_ALIGN) {
        return Err(ReadError::EntryMisaligned {
            kernel: metadata.name.to_string(),
            entry,
            align: KERNEL_CODE_ENTRY_ALIGN,
        });
    }
    if !elf.is_executable(entry) {
        return Err(ReadError::EntryNotExecutable { kernel: metadata.name.to_string(), entry });
    }
    Ok(Kernel { metadata, descriptor, descriptor_address: address, entry_address: entry })
}

/// Reads a code object from an ELF file or a clang offload bundle.
///
/// A bundle with one device entry needs no `target`; with several, `target` selects the entry.
/// When `target` is given, the code object read must be for it.
///
/// # Errors
/// [`ReadError::Bundle`] for bundle errors (including no entry for `target`),
/// [`ReadError::TargetRequired`] for a multi-target bundle without `target`,
/// [`ReadError::TargetMismatch`] for an ELF of another target, and the errors of [`read`].
pub fn read_any(bytes: &[u8], target: Option<Target>) -> Result<CodeObject, ReadError> {
    let code_object = if bundle::is_bundle(bytes) {
        let entry = match target {
            Some(t) => bundle::select_entry(bytes, t)?,
            None => {
                let devices = bundle::device_entries(bytes)?;
                match devices.as_slice() {
                    [one] => *one,
                    _ => {
                        return Err(ReadError::TargetRequired {
                            available: devices.iter().map(|e| e.triple.to_string()).collect(),
                        });
                    }
                }
            }
        };
        read(entry.bytes).map_err(|source| ReadError::InBundle {
            triple: entry.triple.to_string(),
            offset: entry.offset,
            source: Box::new(source),
        })?
    } else {
        read(bytes)?
    };
    match target {
        Some(t) if code_object.target.target != Some(t) => {
            Err(ReadError::TargetMismatch { requested: t, found: code_object.target.to_target_id() })
        }
        _ => Ok(code_object),
    }
}
