//! Reading a code object: ELF identification, the metadata note, and each kernel's descriptor
//! found through its `.kd` symbol and the PT_LOAD segments.

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

/// Why a code object (or bundle) could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// No ELF magic.
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
    /// A header, table or note that `object` rejected.
    #[error("malformed ELF {context}: {source}")]
    Elf {
        /// What was being read.
        context: &'static str,
        /// `object`'s description.
        source: object::read::Error,
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
    /// The metadata does not parse.
    #[error("metadata: {0}")]
    Metadata(#[from] MetadataError),
    /// `amdhsa.target` names another processor or feature set than `e_flags`.
    #[error("metadata target {metadata} disagrees with e_flags target {elf}")]
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
    #[error("kernel {kernel}: descriptor symbol {symbol} is not defined")]
    MissingSymbol {
        /// `.name`.
        kernel: String,
        /// `.symbol`.
        symbol: String,
    },
    /// A descriptor symbol defined twice with different values.
    #[error("descriptor symbol {symbol} is defined at {first:#x} and at {second:#x}")]
    DuplicateSymbol {
        /// `.symbol`.
        symbol: String,
        /// First value.
        first: u64,
        /// Conflicting value.
        second: u64,
    },
    /// A descriptor symbol that is not `STT_OBJECT`.
    #[error("descriptor symbol {symbol} has type {found}, expected STT_OBJECT ({expected})")]
    SymbolType {
        /// `.symbol`.
        symbol: String,
        /// `st_type`.
        found: u8,
        /// `STT_OBJECT`.
        expected: u8,
    },
    /// A descriptor symbol whose size is not 64.
    #[error("descriptor symbol {symbol} has size {size}, expected {expected}")]
    SymbolSize {
        /// `.symbol`.
        symbol: String,
        /// `st_size`.
        size: u64,
        /// [`KERNEL_DESCRIPTOR_SIZE`].
        expected: u64,
    },
    /// A descriptor outside every PT_LOAD segment's file bytes.
    #[error("descriptor symbol {symbol} at {address:#x} is not file-backed by any PT_LOAD segment")]
    SymbolNotLoaded {
        /// `.symbol`.
        symbol: String,
        /// `st_value`.
        address: u64,
    },
    /// A descriptor address that is not 64-byte aligned.
    #[error("descriptor symbol {symbol} at {address:#x} is not {align}-byte aligned")]
    DescriptorMisaligned {
        /// `.symbol`.
        symbol: String,
        /// `st_value`.
        address: u64,
        /// [`KERNEL_DESCRIPTOR_ALIGN`].
        align: u64,
    },
    /// `descriptor_address + kernel_code_entry_byte_offset` overflows.
    #[error("kernel {kernel}: entry offset {offset} from descriptor {descriptor_address:#x} overflows")]
    EntryOverflow {
        /// `.name`.
        kernel: String,
        /// Descriptor address.
        descriptor_address: u64,
        /// `kernel_code_entry_byte_offset`.
        offset: i64,
    },
    /// An entry address that is not 256-byte aligned.
    #[error("kernel {kernel}: entry {entry:#x} is not {align}-byte aligned")]
    EntryMisaligned {
        /// `.name`.
        kernel: String,
        /// Entry address.
        entry: u64,
        /// [`KERNEL_CODE_ENTRY_ALIGN`].
        align: u64,
    },
    /// An entry address outside every executable PT_LOAD segment.
    #[error("kernel {kernel}: entry {entry:#x} is not in an executable PT_LOAD segment")]
    EntryNotExecutable {
        /// `.name`.
        kernel: String,
        /// Entry address.
        entry: u64,
    },
    /// The bundle could not be read or has no entry for the target.
    #[error("offload bundle: {0}")]
    Bundle(#[from] BundleError),
    /// A bundle with several device entries and no target to choose.
    #[error("bundle has {} device entries ({}); a target is required", available.len(), available.join(", "))]
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
    let metadata = parse_metadata(elf.metadata_note()?)?;
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
    let elf_bytes = if bundle::is_bundle(bytes) {
        match target {
            Some(t) => bundle::select(bytes, t)?,
            None => {
                let devices = bundle::device_entries(bytes)?;
                match devices.as_slice() {
                    [one] => one.bytes,
                    _ => {
                        return Err(ReadError::TargetRequired {
                            available: devices.iter().map(|e| e.triple.to_string()).collect(),
                        });
                    }
                }
            }
        }
    } else {
        bytes
    };
    let code_object = read(elf_bytes)?;
    match target {
        Some(t) if code_object.target.target != Some(t) => {
            Err(ReadError::TargetMismatch { requested: t, found: code_object.target.to_target_id() })
        }
        _ => Ok(code_object),
    }
}
