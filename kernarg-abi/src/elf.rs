//! The parts of an ELF64 little-endian file a code-object reader needs: the identification
//! bytes, the program and section header tables, PT_LOAD address-to-file mapping, the metadata
//! note and the symbol table.
//!
//! The records are `object`'s ELF64 types (byte arrays, so any offset is aligned for them), but
//! every range is checked here before a record is read: the file header against the file size,
//! both header tables, every section's and every segment's file bytes, the symbol table's string
//! table link, and each note of a note section or segment. Each fault is its own [`ReadError`]
//! naming the field, its value and the size it breaks; nothing indexes unchecked.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use object::LittleEndian;
use object::elf::{self, FileHeader64, ProgramHeader64, SectionHeader64, Sym64};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};

use crate::target::{NOTE_OWNER_AMDGPU, NT_AMDGPU_METADATA};
use crate::{NotePlace, ReadError};

type Header = FileHeader64<LittleEndian>;
type Segment = ProgramHeader64<LittleEndian>;
type Section = SectionHeader64<LittleEndian>;
const LE: LittleEndian = LittleEndian;

/// Index of `EI_CLASS` in `e_ident`.
const EI_CLASS: usize = 4;
/// Index of `EI_DATA` in `e_ident`.
const EI_DATA: usize = 5;
/// Index of `EI_VERSION` in `e_ident`.
const EI_VERSION: usize = 6;

/// Bytes of the ELF64 file header.
pub(crate) const FILE_HEADER_BYTES: usize = 64;
/// Bytes of one ELF64 program header (`e_phentsize`).
pub(crate) const PROGRAM_HEADER_BYTES: u16 = 56;
/// Bytes of one ELF64 section header (`e_shentsize`).
pub(crate) const SECTION_HEADER_BYTES: u16 = 64;
/// Bytes of one ELF64 symbol (`Elf64_Sym`).
pub(crate) const SYMBOL_BYTES: u64 = 24;
/// Bytes of a note header (`n_namesz`, `n_descsz`, `n_type`).
const NOTE_HEADER_BYTES: u64 = 12;
/// Longest section name quoted in a message; longer names are cut there.
const NAME_QUOTE_MAX: usize = 64;

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

/// A parsed ELF64 little-endian file whose tables, sections and segments all lie within it.
pub(crate) struct Elf<'a> {
    data: &'a [u8],
    header: &'a Header,
    segments: &'a [Segment],
    sections: &'a [Section],
    /// Index of the section-name string table, when there is one.
    names: Option<usize>,
}

/// `data[offset..offset + len]`, or `None` when any of it lies outside `data`.
fn range(data: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    data.get(start..end)
}

/// Checks the identification bytes that are present, then the length of the file header.
fn identify(data: &[u8]) -> Result<(), ReadError> {
    let len = data.len();
    let magic = &elf::ELFMAG[..len.min(elf::ELFMAG.len())];
    if data.is_empty() || !data.starts_with(magic) {
        return Err(ReadError::NotElf { len });
    }
    if let Some(&class) = data.get(EI_CLASS)
        && class != elf::ELFCLASS64.0
    {
        return Err(ReadError::Class { found: class });
    }
    if let Some(&encoding) = data.get(EI_DATA)
        && encoding != elf::ELFDATA2LSB.0
    {
        return Err(ReadError::Encoding { found: encoding });
    }
    if let Some(&version) = data.get(EI_VERSION)
        && version != elf::EV_CURRENT.0
    {
        return Err(ReadError::IdentVersion { found: version });
    }
    if len < FILE_HEADER_BYTES {
        return Err(ReadError::TruncatedHeader { len, needed: FILE_HEADER_BYTES });
    }
    Ok(())
}

impl<'a> Elf<'a> {
    /// Checks the identification bytes, the file header, both header tables and the file bytes
    /// of every section and segment.
    pub(crate) fn parse(data: &'a [u8]) -> Result<Self, ReadError> {
        identify(data)?;
        let len = data.len();
        let header = object::pod::from_bytes::<Header>(data)
            .map_err(|()| ReadError::TruncatedHeader { len, needed: FILE_HEADER_BYTES })?;
        let header = header.0;
        let sections = section_table(header, data)?;
        let segments = program_table(header, data, sections)?;
        let names = section_names(header, sections)?;
        let elf = Self { data, header, segments, sections, names };
        elf.check_sections()?;
        elf.check_segments()?;
        Ok(elf)
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

    /// The name of a section for messages: its bytes in the section-name string table up to the
    /// terminator, cut to [`NAME_QUOTE_MAX`] bytes; empty when it cannot be read.
    fn section_name(&self, section: &Section) -> String {
        let Some(table) = self.names.and_then(|i| self.sections.get(i)) else { return String::new() };
        if table.sh_type(LE) == elf::SHT_NOBITS {
            return String::new();
        }
        let Some(strings) = range(self.data, table.sh_offset(LE), table.sh_size(LE)) else { return String::new() };
        let Some(tail) = usize::try_from(section.sh_name(LE)).ok().and_then(|start| strings.get(start..)) else {
            return String::new();
        };
        let name = tail.split(|&b| b == 0).next().unwrap_or_default();
        let cut = &name[..name.len().min(NAME_QUOTE_MAX)];
        let mut out = String::from_utf8_lossy(cut).into_owned();
        if cut.len() < name.len() {
            out.push_str("...");
        }
        out
    }

    /// Every section other than SHT_NULL and SHT_NOBITS has its file bytes within the file.
    fn check_sections(&self) -> Result<(), ReadError> {
        for (index, section) in self.sections.iter().enumerate() {
            let kind = section.sh_type(LE);
            if kind == elf::SHT_NULL || kind == elf::SHT_NOBITS {
                continue;
            }
            let (offset, size) = (section.sh_offset(LE), section.sh_size(LE));
            let end = u128::from(offset) + u128::from(size);
            // CAST: usize to u128 is lossless.
            if end > self.data.len() as u128 {
                return Err(ReadError::SectionOutOfBounds {
                    index,
                    name: self.section_name(section),
                    offset,
                    size,
                    len: self.data.len(),
                });
            }
        }
        Ok(())
    }

    /// Every segment other than PT_NULL has its file bytes within the file.
    fn check_segments(&self) -> Result<(), ReadError> {
        for (index, segment) in self.segments.iter().enumerate() {
            let p_type = segment.p_type(LE).0;
            if p_type == elf::PT_NULL.0 {
                continue;
            }
            let (offset, filesz) = (segment.p_offset(LE), segment.p_filesz(LE));
            let end = u128::from(offset) + u128::from(filesz);
            // CAST: usize to u128 is lossless.
            if end > self.data.len() as u128 {
                return Err(ReadError::SegmentOutOfBounds { index, p_type, offset, filesz, len: self.data.len() });
            }
        }
        Ok(())
    }

    /// The descriptor of the one `NT_AMDGPU_METADATA` note, looked for in PT_NOTE segments first
    /// and, when they hold none, in SHT_NOTE sections (the same note usually sits in both).
    pub(crate) fn metadata_note(&self) -> Result<(u64, &'a [u8]), ReadError> {
        let mut found = Vec::new();
        for (index, segment) in self.segments.iter().enumerate() {
            if segment.p_type(LE) != elf::PT_NOTE {
                continue;
            }
            let notes = Notes {
                data: self.data,
                offset: segment.p_offset(LE),
                size: segment.p_filesz(LE),
                align: segment.p_align(LE),
                place: NotePlace::Segment { index },
            };
            notes.collect_metadata(&mut found)?;
        }
        if found.is_empty() {
            for (index, section) in self.sections.iter().enumerate() {
                if section.sh_type(LE) != elf::SHT_NOTE {
                    continue;
                }
                let notes = Notes {
                    data: self.data,
                    offset: section.sh_offset(LE),
                    size: section.sh_size(LE),
                    align: section.sh_addralign(LE),
                    place: NotePlace::Section { index, name: self.section_name(section) },
                };
                notes.collect_metadata(&mut found)?;
            }
        }
        match found.as_slice() {
            [] => Err(ReadError::NoMetadata),
            [one] => Ok(*one),
            many => Err(ReadError::DuplicateMetadata { count: many.len() }),
        }
    }

    /// The first section of type `kind`, with its index.
    fn first_of_type(&self, kind: elf::SectionType) -> Option<(usize, &'a Section)> {
        self.sections.iter().enumerate().find(|(_, s)| s.sh_type(LE) == kind)
    }

    /// The entries and the string table of the symbol table section `index`.
    fn symbol_table(&self, index: usize, table: &Section) -> Result<(&'a [Sym64<LittleEndian>], &'a [u8]), ReadError> {
        let size = table.sh_size(LE);
        if table.sh_type(LE) == elf::SHT_NOBITS || size == 0 {
            return Ok((&[], &[]));
        }
        if !size.is_multiple_of(SYMBOL_BYTES) {
            return Err(ReadError::SymbolTableSize {
                index,
                name: self.section_name(table),
                size,
                entry: SYMBOL_BYTES,
            });
        }
        let link = table.sh_link(LE);
        let strings = usize::try_from(link).ok().and_then(|i| self.sections.get(i)).ok_or_else(|| {
            ReadError::SymbolStringsIndex { index, name: self.section_name(table), link, count: self.sections.len() }
        })?;
        if strings.sh_type(LE) != elf::SHT_STRTAB {
            return Err(ReadError::SymbolStringsType {
                index,
                name: self.section_name(table),
                link,
                found: strings.sh_type(LE).0,
            });
        }
        // Both ranges were checked by `check_sections` (neither section is SHT_NOBITS here: the
        // string table is SHT_STRTAB and the table was tested above).
        let out_of_bounds = || ReadError::SectionOutOfBounds {
            index,
            name: self.section_name(table),
            offset: table.sh_offset(LE),
            size,
            len: self.data.len(),
        };
        let bytes = range(self.data, table.sh_offset(LE), size).ok_or_else(out_of_bounds)?;
        let count = usize::try_from(size / SYMBOL_BYTES).map_err(|_| out_of_bounds())?;
        let (symbols, _) = object::pod::slice_from_bytes(bytes, count).map_err(|()| out_of_bounds())?;
        let strings = range(self.data, strings.sh_offset(LE), strings.sh_size(LE)).unwrap_or_default();
        Ok((symbols, strings))
    }

    /// Defined symbols by name, from `.symtab`, or `.dynsym` when there is no `.symtab`.
    pub(crate) fn symbols(&self) -> Result<BTreeMap<&'a [u8], Result<Symbol, Conflict>>, ReadError> {
        let mut table: (&[Sym64<LittleEndian>], &[u8]) = (&[], &[]);
        for kind in [elf::SHT_SYMTAB, elf::SHT_DYNSYM] {
            if let Some((index, section)) = self.first_of_type(kind) {
                table = self.symbol_table(index, section)?;
            }
            if !table.0.is_empty() {
                break;
            }
        }
        let (symbols, strings) = table;
        if symbols.is_empty() {
            return Err(ReadError::NoSymbolTable);
        }
        let mut out: BTreeMap<&'a [u8], Result<Symbol, Conflict>> = BTreeMap::new();
        // Bounded: one iteration per symbol-table entry, a slice of the input.
        for sym in symbols {
            if sym.st_shndx(LE) == elf::SHN_UNDEF {
                continue;
            }
            // A name outside the string table, or unterminated, names nothing that can be looked for.
            let Some(tail) = usize::try_from(sym.st_name(LE)).ok().and_then(|start| strings.get(start..)) else {
                continue;
            };
            let Some(end) = tail.iter().position(|&b| b == 0) else { continue };
            let name = &tail[..end];
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
            range(self.data, offset.checked_add(address - vaddr)?, len)
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

/// Section header 0, which holds `e_shnum`, `e_phnum` or `e_shstrndx` when they overflow their
/// header fields; `field` names the header field that defers to it.
fn section_zero<'a>(header: &Header, data: &'a [u8], field: &'static str) -> Result<&'a Section, ReadError> {
    let shoff = header.e_shoff(LE);
    let missing = || ReadError::ExtendedNumbering { field, shoff, len: data.len() };
    if shoff == 0 {
        return Err(missing());
    }
    let bytes = range(data, shoff, u64::from(SECTION_HEADER_BYTES)).ok_or_else(missing)?;
    object::pod::from_bytes::<Section>(bytes).map(|(s, _)| s).map_err(|()| missing())
}

/// The section header table: empty when `e_shoff` is 0, else `e_shnum` (or section 0's
/// `sh_size` when `e_shnum` is 0) entries of 64 bytes, all within the file.
fn section_table<'a>(header: &Header, data: &'a [u8]) -> Result<&'a [Section], ReadError> {
    let shoff = header.e_shoff(LE);
    if shoff == 0 {
        return Ok(&[]);
    }
    let entry = header.e_shentsize(LE);
    if entry != SECTION_HEADER_BYTES {
        return Err(ReadError::EntrySize { field: "e_shentsize", found: entry, expected: SECTION_HEADER_BYTES });
    }
    let (count, count_field) = match header.e_shnum(LE) {
        0 => (section_zero(header, data, "e_shnum 0")?.sh_size(LE), "section 0 sh_size (e_shnum 0)"),
        n => (u64::from(n), "e_shnum"),
    };
    let out_of_bounds = || ReadError::TableOutOfBounds {
        table: "section header",
        offset_field: "e_shoff",
        offset: shoff,
        count_field,
        count,
        entry_size: entry,
        len: data.len(),
    };
    let bytes =
        range(data, shoff, count.checked_mul(u64::from(entry)).ok_or_else(out_of_bounds)?).ok_or_else(out_of_bounds)?;
    let count = usize::try_from(count).map_err(|_| out_of_bounds())?;
    object::pod::slice_from_bytes(bytes, count).map(|(s, _)| s).map_err(|()| out_of_bounds())
}

/// The program header table: empty when `e_phoff` or the count is 0, else `e_phnum` (or
/// section 0's `sh_info` when `e_phnum` is `PN_XNUM`) entries of 56 bytes, all within the file.
fn program_table<'a>(header: &Header, data: &'a [u8], sections: &[Section]) -> Result<&'a [Segment], ReadError> {
    let phoff = header.e_phoff(LE);
    if phoff == 0 {
        return Ok(&[]);
    }
    let (count, count_field) = match header.e_phnum(LE) {
        elf::PN_XNUM => {
            let zero = match sections.first() {
                Some(zero) => zero,
                None => section_zero(header, data, "e_phnum 0xffff (PN_XNUM)")?,
            };
            (u64::from(zero.sh_info(LE)), "section 0 sh_info (e_phnum PN_XNUM)")
        }
        n => (u64::from(n), "e_phnum"),
    };
    if count == 0 {
        return Ok(&[]);
    }
    let entry = header.e_phentsize(LE);
    if entry != PROGRAM_HEADER_BYTES {
        return Err(ReadError::EntrySize { field: "e_phentsize", found: entry, expected: PROGRAM_HEADER_BYTES });
    }
    let out_of_bounds = || ReadError::TableOutOfBounds {
        table: "program header",
        offset_field: "e_phoff",
        offset: phoff,
        count_field,
        count,
        entry_size: entry,
        len: data.len(),
    };
    let bytes = range(data, phoff, count * u64::from(entry)).ok_or_else(out_of_bounds)?;
    let count = usize::try_from(count).map_err(|_| out_of_bounds())?;
    object::pod::slice_from_bytes(bytes, count).map(|(s, _)| s).map_err(|()| out_of_bounds())
}

/// The index of the section-name string table (`e_shstrndx`, or section 0's `sh_link` when it
/// is `SHN_XINDEX`); `None` when it is `SHN_UNDEF` or there are no sections.
fn section_names(header: &Header, sections: &[Section]) -> Result<Option<usize>, ReadError> {
    let Some(zero) = sections.first() else { return Ok(None) };
    let index = match header.e_shstrndx(LE) {
        elf::SHN_UNDEF => return Ok(None),
        elf::SHN_XINDEX => zero.sh_link(LE),
        n => u32::from(n.0),
    };
    match usize::try_from(index) {
        Ok(i) if i < sections.len() => Ok(Some(i)),
        _ => Err(ReadError::SectionNamesIndex { index, count: sections.len() }),
    }
}

/// The notes of one segment or section: `size` bytes at file offset `offset`, checked by
/// `check_sections` / `check_segments` to lie within `data`.
struct Notes<'a> {
    data: &'a [u8],
    offset: u64,
    size: u64,
    align: u64,
    place: NotePlace,
}

impl<'a> Notes<'a> {
    /// Appends the descriptors of every AMDGPU metadata note. Notes are a 12-byte header, the
    /// name, padding to the alignment (4 or 8; below 4 reads as 4, as binutils does), the
    /// descriptor and padding again; the padding after the last note may be missing.
    fn collect_metadata(self, found: &mut Vec<(u64, &'a [u8])>) -> Result<(), ReadError> {
        let align = match self.align {
            0..=4 => 4,
            8 => 8,
            align => {
                return Err(ReadError::NoteAlignment { field: self.place.align_field(), align, place: self.place });
            }
        };
        let end = u128::from(self.offset) + u128::from(self.size);
        let mut at = u128::from(self.offset);
        // Offsets inside the segment or section fit in u64 (it lies inside the file); a part's
        // end past it may not, and saturates.
        let saturate = |at: u128| u64::try_from(at).unwrap_or(u64::MAX);
        let truncated = |note: u128, part: &'static str, size: u64, part_end: u128| ReadError::NoteTruncated {
            place: self.place.clone(),
            offset: saturate(note),
            part,
            size,
            end: saturate(part_end),
            container_end: saturate(end),
        };
        // Bounded: every note consumes at least its 12-byte header of the segment or section.
        while at < end {
            let note = at;
            let header_end = note + u128::from(NOTE_HEADER_BYTES);
            if header_end > end {
                return Err(truncated(note, "12-byte header", NOTE_HEADER_BYTES, header_end));
            }
            let word = |k: u128| -> u32 {
                let bytes = u64::try_from(note + k).ok().and_then(|o| range(self.data, o, 4));
                bytes.and_then(|b| <[u8; 4]>::try_from(b).ok()).map_or(0, u32::from_le_bytes)
            };
            let (namesz, descsz, n_type) = (u64::from(word(0)), u64::from(word(4)), word(8));
            let name_end = header_end + u128::from(namesz);
            if name_end > end {
                return Err(truncated(note, "name (n_namesz)", namesz, name_end));
            }
            let desc_start = name_end.next_multiple_of(align);
            let desc_end = desc_start + u128::from(descsz);
            if desc_end > end {
                return Err(truncated(note, "descriptor (n_descsz)", descsz, desc_end));
            }
            // Both ranges lie inside the segment or section, which lies inside the file.
            let bytes = |from: u128, to: u128| -> (u64, &'a [u8]) {
                let (Ok(from), Ok(to)) = (u64::try_from(from), u64::try_from(to)) else { return (0, &[]) };
                (from, range(self.data, from, to - from).unwrap_or_default())
            };
            let (_, name) = bytes(header_end, name_end);
            let name = name.strip_suffix(&[0]).unwrap_or(name);
            if name == NOTE_OWNER_AMDGPU && n_type == NT_AMDGPU_METADATA {
                found.push(bytes(desc_start, desc_end));
            }
            at = desc_end.next_multiple_of(align);
        }
        Ok(())
    }
}
