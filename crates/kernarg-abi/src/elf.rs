//! The parts of an ELF64 little-endian file a code-object reader needs, on `object`'s low-level
//! ELF API: the identification bytes, PT_LOAD address-to-file mapping, the metadata note and the
//! symbol table. Every range is checked by `object` or here; nothing indexes unchecked.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use object::LittleEndian;
use object::elf::{self, FileHeader64, ProgramHeader64, SectionHeader64};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};

use crate::ReadError;
use crate::target::{NOTE_OWNER_AMDGPU, NT_AMDGPU_METADATA};

type Header = FileHeader64<LittleEndian>;
const LE: LittleEndian = LittleEndian;

/// A defined symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Symbol {
    pub(crate) value: u64,
    pub(crate) size: u64,
    pub(crate) kind: u8,
}

/// A name defined more than once with different values or sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub(crate) first: u64,
    pub(crate) second: u64,
}

/// A parsed ELF64 little-endian file.
pub(crate) struct Elf<'a> {
    data: &'a [u8],
    header: &'a Header,
    segments: &'a [ProgramHeader64<LittleEndian>],
}

fn malformed(context: &'static str) -> impl FnOnce(object::read::Error) -> ReadError {
    move |source| ReadError::Elf { context, source }
}

impl<'a> Elf<'a> {
    /// Checks the identification bytes and parses the file and program headers.
    pub(crate) fn parse(data: &'a [u8]) -> Result<Self, ReadError> {
        let ident = data.get(..16).ok_or(ReadError::NotElf { len: data.len() })?;
        if ident[..4] != elf::ELFMAG {
            return Err(ReadError::NotElf { len: data.len() });
        }
        if ident[4] != elf::ELFCLASS64.0 {
            return Err(ReadError::Class { found: ident[4] });
        }
        if ident[5] != elf::ELFDATA2LSB.0 {
            return Err(ReadError::Encoding { found: ident[5] });
        }
        let header = Header::parse(data).map_err(malformed("file header"))?;
        let segments = header.program_headers(LE, data).map_err(malformed("program headers"))?;
        Ok(Self { data, header, segments })
    }

    pub(crate) fn os_abi(&self) -> u8 {
        self.header.e_ident().os_abi.0
    }

    pub(crate) fn abi_version(&self) -> u8 {
        self.header.e_ident().abi_version
    }

    pub(crate) fn machine(&self) -> u16 {
        self.header.e_machine(LE).0
    }

    pub(crate) fn file_type(&self) -> u16 {
        self.header.e_type(LE).0
    }

    pub(crate) fn flags(&self) -> u32 {
        self.header.e_flags(LE).0
    }

    fn sections(&self) -> Result<&'a [SectionHeader64<LittleEndian>], ReadError> {
        self.header.section_headers(LE, self.data).map_err(malformed("section headers"))
    }

    /// The descriptor of the one `NT_AMDGPU_METADATA` note, looked for in PT_NOTE segments first
    /// and, when they hold none, in SHT_NOTE sections (the same note usually sits in both).
    pub(crate) fn metadata_note(&self) -> Result<&'a [u8], ReadError> {
        let mut found = Vec::new();
        for segment in self.segments {
            if let Some(notes) = segment.notes(LE, self.data).map_err(malformed("PT_NOTE segment"))? {
                collect_metadata(notes, &mut found)?;
            }
        }
        if found.is_empty() {
            for section in self.sections()? {
                if let Some(notes) = section.notes(LE, self.data).map_err(malformed("SHT_NOTE section"))? {
                    collect_metadata(notes, &mut found)?;
                }
            }
        }
        match found.as_slice() {
            [] => Err(ReadError::NoMetadata),
            [one] => Ok(one),
            many => Err(ReadError::DuplicateMetadata { count: many.len() }),
        }
    }

    /// Defined symbols by name, from `.symtab`, or `.dynsym` when there is no `.symtab`.
    pub(crate) fn symbols(&self) -> Result<BTreeMap<&'a [u8], Result<Symbol, Conflict>>, ReadError> {
        let sections = self.header.sections(LE, self.data).map_err(malformed("section headers"))?;
        let mut table = sections.symbols(LE, self.data, elf::SHT_SYMTAB).map_err(malformed("symbol table"))?;
        if table.is_empty() {
            table = sections.symbols(LE, self.data, elf::SHT_DYNSYM).map_err(malformed("dynamic symbol table"))?;
        }
        if table.is_empty() {
            return Err(ReadError::NoSymbolTable);
        }
        let strings = table.strings();
        let mut out: BTreeMap<&'a [u8], Result<Symbol, Conflict>> = BTreeMap::new();
        // Bounded: one iteration per symbol-table entry, a slice of the input.
        for sym in table.iter() {
            if sym.st_shndx(LE) == elf::SHN_UNDEF {
                continue;
            }
            let Ok(name) = sym.name(LE, strings) else { continue };
            let symbol = Symbol { value: sym.st_value(LE), size: sym.st_size(LE), kind: sym.st_type().0 };
            out.entry(name)
                .and_modify(|e| {
                    if let Ok(first) = *e
                        && (first.value, first.size) != (symbol.value, symbol.size)
                    {
                        *e = Err(Conflict { first: first.value, second: symbol.value });
                    }
                })
                .or_insert(Ok(symbol));
        }
        Ok(out)
    }

    /// The `len` file bytes behind virtual address `address`, through the first PT_LOAD segment
    /// whose file-backed range holds all of them.
    pub(crate) fn load_bytes(&self, address: u64, len: u64) -> Option<&'a [u8]> {
        let end = address.checked_add(len)?;
        self.segments.iter().filter(|s| s.p_type(LE) == elf::PT_LOAD).find_map(|s| {
            let (vaddr, filesz, offset) = (s.p_vaddr(LE), s.p_filesz(LE), s.p_offset(LE));
            if address < vaddr || end > vaddr.checked_add(filesz)? {
                return None;
            }
            let start = offset.checked_add(address - vaddr)?;
            let stop = start.checked_add(len)?;
            self.data.get(usize::try_from(start).ok()?..usize::try_from(stop).ok()?)
        })
    }

    /// Whether `address` lies in the memory range of an executable PT_LOAD segment.
    pub(crate) fn is_executable(&self, address: u64) -> bool {
        self.segments.iter().any(|s| {
            let (vaddr, memsz) = (s.p_vaddr(LE), s.p_memsz(LE));
            s.p_type(LE) == elf::PT_LOAD
                && s.p_flags(LE).0 & elf::PF_X.0 != 0
                && address >= vaddr
                && vaddr.checked_add(memsz).is_some_and(|end| address < end)
        })
    }
}

/// Appends the descriptors of every AMDGPU metadata note in `notes`.
fn collect_metadata<'a>(
    mut notes: object::read::elf::NoteIterator<'a, Header>,
    found: &mut Vec<&'a [u8]>,
) -> Result<(), ReadError> {
    // Bounded: every note consumes at least its 12-byte header of the segment or section.
    while let Some(note) = notes.next().map_err(malformed("note"))? {
        if note.name() == NOTE_OWNER_AMDGPU && note.n_type(LE).0 == NT_AMDGPU_METADATA {
            found.push(note.desc());
        }
    }
    Ok(())
}
