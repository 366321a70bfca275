//! Corruptions of the ELF header, the header tables, section and segment ranges, notes, the
//! symbol table link and the metadata version of `kernels-gfx1100.co`: each fault its own error,
//! its message naming the field, the value and the size it breaks.
//!
//! Layout from `llvm-readelf-19 -h -S -l kernels-gfx1100.co`: 9696 bytes (0x25e0); 9 program
//! headers of 56 bytes at 64, the PT_NOTE one last (index 8, at 0x200); 15 section headers of 64
//! bytes at e_shoff 0x2220 (ending at the end of the file), `.note` index 1 at file offset 0x238,
//! size 0xd94, `.bss` index 10 (SHT_NOBITS), `.symtab` index 12 at 0x1fb8, size 0x168, linked to
//! `.strtab` 14; e_shstrndx 13. The one note starts at 0x238: header, `AMDGPU\0` padded to 8,
//! descriptor at 0x24c. Header fields at their ELF64 offsets: e_phoff 32, e_shoff 40,
//! e_phentsize 54, e_phnum 56, e_shentsize 58, e_shnum 60, e_shstrndx 62.

mod common;

use kernarg_abi::bundle;
use kernarg_abi::metadata::MetadataError;
use kernarg_abi::{NotePlace, ReadError, read, read_any};
use pm4_encoding::Target;

const LEN: usize = 9696;
const SHOFF: usize = 0x2220;
const NOTE_PHDR: usize = 64 + 8 * 56;
const NOTE_END: u64 = 0x238 + 0xd94;

fn corrupt(f: impl FnOnce(&mut Vec<u8>)) -> Result<kernarg_abi::CodeObject, ReadError> {
    let mut bytes = common::fixture("kernels-gfx1100.co");
    assert_eq!(bytes.len(), LEN);
    f(&mut bytes);
    read(&bytes)
}

fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    bytes[at..at + value.len()].copy_from_slice(value);
}

/// File offset of field `at` of section header `index`.
fn shdr(index: usize, at: usize) -> usize {
    SHOFF + index * 64 + at
}

/// The error and its message, which must contain every one of `parts`.
fn message(result: Result<kernarg_abi::CodeObject, ReadError>, parts: &[&str]) -> ReadError {
    let err = result.expect_err("the corruption is refused");
    let text = err.to_string();
    for part in parts {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }
    err
}

#[test]
fn a_truncated_header_is_not_a_missing_magic() {
    for len in [1usize, 2, 4, 16, 63] {
        let bytes = &common::fixture("kernels-gfx1100.co")[..len];
        assert_eq!(read(bytes), Err(ReadError::TruncatedHeader { len, needed: 64 }), "{len} bytes");
    }
    let err = read(b"\x7fELF").unwrap_err();
    assert_eq!(err.to_string(), "truncated ELF header: the file is 4 bytes, an ELF64 header is 64");
    // What is present is still checked first: a 32-bit or big-endian start says so.
    assert_eq!(read(b"\x7fELF\x01"), Err(ReadError::Class { found: 1 }));
    assert_eq!(read(b"\x7fELF\x02\x02"), Err(ReadError::Encoding { found: 2 }));
    assert_eq!(read(b""), Err(ReadError::NotElf { len: 0 }));
    assert_eq!(read(b"\x7fEL_"), Err(ReadError::NotElf { len: 4 }));
    assert_eq!(read(b"MZ"), Err(ReadError::NotElf { len: 2 }));
    let err = message(corrupt(|b| b[6] = 0), &["EI_VERSION 0", "EV_CURRENT (1)"]);
    assert_eq!(err, ReadError::IdentVersion { found: 0 });
}

#[test]
fn header_table_faults_each_have_their_own_error() {
    let err = message(corrupt(|b| put(b, 58, &40u16.to_le_bytes())), &["e_shentsize 40", "64", "section header"]);
    assert_eq!(err, ReadError::EntrySize { field: "e_shentsize", found: 40, expected: 64 });
    let err = message(corrupt(|b| put(b, 54, &32u16.to_le_bytes())), &["e_phentsize 32", "56", "program header"]);
    assert_eq!(err, ReadError::EntrySize { field: "e_phentsize", found: 32, expected: 56 });

    // The section header table moved 100 bytes before the end: 15 entries cannot fit.
    let shoff = (LEN - 100) as u64;
    let err = message(
        corrupt(|b| put(b, 40, &shoff.to_le_bytes())),
        &["section header table", "e_shoff 0x257c", "e_shnum 15", "64 bytes", "0x293c", "9696-byte file"],
    );
    assert_eq!(
        err,
        ReadError::TableOutOfBounds {
            table: "section header",
            offset_field: "e_shoff",
            offset: shoff,
            count_field: "e_shnum",
            count: 15,
            entry_size: 64,
            len: LEN,
        }
    );
    // An offset near u64::MAX: the end is computed without overflow.
    let err = message(corrupt(|b| put(b, 40, &u64::MAX.to_le_bytes())), &["ends at byte 0x100000000000003bf"]);
    assert!(matches!(err, ReadError::TableOutOfBounds { offset: u64::MAX, count: 15, .. }), "{err}");

    // e_shnum 0 takes the count from section 0's sh_size.
    let err = message(
        corrupt(|b| {
            put(b, 60, &0u16.to_le_bytes());
            put(b, shdr(0, 32), &1000u64.to_le_bytes());
        }),
        &["section 0 sh_size (e_shnum 0) 1000"],
    );
    assert!(matches!(err, ReadError::TableOutOfBounds { count: 1000, .. }), "{err}");
    // ... and section 0 itself must be in the file.
    let err = message(
        corrupt(|b| {
            put(b, 60, &0u16.to_le_bytes());
            put(b, 40, &((LEN - 10) as u64).to_le_bytes());
        }),
        &["e_shnum 0 defers to section header 0", "e_shoff 0x25d6", "9696-byte file"],
    );
    assert_eq!(err, ReadError::ExtendedNumbering { field: "e_shnum 0", shoff: (LEN - 10) as u64, len: LEN });

    let err = message(corrupt(|b| put(b, 62, &99u16.to_le_bytes())), &["e_shstrndx 99", "15 sections"]);
    assert_eq!(err, ReadError::SectionNamesIndex { index: 99, count: 15 });
}

#[test]
fn every_section_lies_within_the_file() {
    // The PT_NOTE segment still holds the whole note, so only the section table check sees this.
    let err = message(
        corrupt(|b| put(b, shdr(1, 32), &(1u64 << 40).to_le_bytes())),
        &["section 1 (.note)", "sh_offset 0x238", "sh_size 0x10000000000", "0x10000000238", "9696-byte file"],
    );
    assert_eq!(
        err,
        ReadError::SectionOutOfBounds { index: 1, name: ".note".into(), offset: 0x238, size: 1 << 40, len: LEN }
    );
    let err = message(
        corrupt(|b| put(b, shdr(12, 24), &(u64::MAX - 8).to_le_bytes())),
        &["section 12 (.symtab)", "sh_offset 0xfffffffffffffff7", "sh_size 0x168", "ends at byte 0x1000000000000015f"],
    );
    assert!(matches!(err, ReadError::SectionOutOfBounds { index: 12, .. }));
    // Just past the end by one byte, and exactly at the end (accepted).
    let err = message(corrupt(|b| put(b, shdr(14, 32), &(0x25e1u64 - 0x2195).to_le_bytes())), &["ends at byte 0x25e1"]);
    assert!(matches!(err, ReadError::SectionOutOfBounds { index: 14, offset: 0x2195, size: 0x44c, .. }), "{err}");
    assert!(corrupt(|b| put(b, shdr(14, 32), &(0x25e0u64 - 0x2195).to_le_bytes())).is_ok());
    // SHT_NOBITS has no file bytes: a huge `.bss` is memory only.
    assert!(corrupt(|b| put(b, shdr(10, 32), &(1u64 << 40).to_le_bytes())).is_ok());
    // A section name cannot make the message long: the name is cut.
    let mut bytes = common::fixture("kernels-gfx1100.co");
    let names_at = usize::try_from(u64::from_le_bytes(bytes[shdr(13, 24)..shdr(13, 32)].try_into().unwrap())).unwrap();
    let long_name = vec![b'n'; 200];
    let name_offset = bytes.len() - names_at;
    bytes.extend_from_slice(&long_name);
    bytes.push(0);
    put(&mut bytes, shdr(13, 32), &((name_offset + 201) as u64).to_le_bytes());
    put(&mut bytes, shdr(1, 0), &u32::try_from(name_offset).unwrap().to_le_bytes());
    put(&mut bytes, shdr(1, 32), &(1u64 << 40).to_le_bytes());
    let err = read(&bytes).unwrap_err();
    assert!(matches!(&err, ReadError::SectionOutOfBounds { name, .. } if name.len() == 64 + 3), "{err}");
}

#[test]
fn every_segment_lies_within_the_file() {
    let err = message(
        corrupt(|b| put(b, NOTE_PHDR + 32, &(1u64 << 40).to_le_bytes())),
        &["program header 8 (PT_NOTE)", "p_offset 0x238", "p_filesz 0x10000000000", "9696-byte file"],
    );
    assert_eq!(err, ReadError::SegmentOutOfBounds { index: 8, p_type: 4, offset: 0x238, filesz: 1 << 40, len: LEN });
    // The first PT_LOAD (index 1, at 0x78) at an offset past the end.
    let err = message(corrupt(|b| put(b, 64 + 56 + 8, &0x3000u64.to_le_bytes())), &["program header 1 (PT_LOAD)"]);
    assert!(matches!(err, ReadError::SegmentOutOfBounds { index: 1, offset: 0x3000, .. }));
    // An unnamed p_type is shown as a number.
    let err = message(
        corrupt(|b| {
            put(b, NOTE_PHDR, &0x6000_0001u32.to_le_bytes());
            put(b, NOTE_PHDR + 32, &(1u64 << 40).to_le_bytes());
        }),
        &["program header 8 (p_type 0x60000001)"],
    );
    assert!(matches!(err, ReadError::SegmentOutOfBounds { index: 8, .. }));
}

#[test]
fn note_faults_name_the_note_and_its_segment_or_section() {
    let segment = NotePlace::Segment { index: 8 };
    let err =
        message(corrupt(|b| put(b, NOTE_PHDR + 48, &16u64.to_le_bytes())), &["PT_NOTE program header 8", "p_align 16"]);
    assert_eq!(err, ReadError::NoteAlignment { place: segment.clone(), field: "p_align", align: 16 });
    let err = message(
        corrupt(|b| put(b, 0x238 + 4, &u32::MAX.to_le_bytes())),
        &["the note at byte 0x238", "descriptor (n_descsz) of 4294967295 bytes", "0x10000024b", "0xfcc"],
    );
    assert_eq!(
        err,
        ReadError::NoteTruncated {
            place: segment.clone(),
            offset: 0x238,
            part: "descriptor (n_descsz)",
            size: u64::from(u32::MAX),
            end: 0x24c + u64::from(u32::MAX),
            container_end: NOTE_END,
        }
    );
    let err = corrupt(|b| put(b, 0x238, &0x1000u32.to_le_bytes())).unwrap_err();
    assert!(matches!(err, ReadError::NoteTruncated { part: "name (n_namesz)", size: 0x1000, .. }), "{err}");
    // A segment shorter than the note header.
    let err = corrupt(|b| put(b, NOTE_PHDR + 32, &5u64.to_le_bytes())).unwrap_err();
    assert!(matches!(err, ReadError::NoteTruncated { part: "12-byte header", offset: 0x238, .. }), "{err}");

    // Without the PT_NOTE segment (made PT_NULL) the note is read from the `.note` section.
    let no_segment = |b: &mut Vec<u8>| put(b, NOTE_PHDR, &0u32.to_le_bytes());
    assert!(corrupt(no_segment).is_ok());
    // Alignments below 4 read as 4.
    for align in [0u64, 1, 3] {
        assert!(
            corrupt(|b| {
                no_segment(b);
                put(b, shdr(1, 48), &align.to_le_bytes());
            })
            .is_ok(),
            "sh_addralign {align}"
        );
    }
    let err = message(
        corrupt(|b| {
            no_segment(b);
            put(b, shdr(1, 48), &16u64.to_le_bytes());
        }),
        &["SHT_NOTE section 1 (.note)", "sh_addralign 16"],
    );
    assert_eq!(
        err,
        ReadError::NoteAlignment {
            place: NotePlace::Section { index: 1, name: ".note".into() },
            field: "sh_addralign",
            align: 16,
        }
    );
}

#[test]
fn the_symbol_table_link_is_checked() {
    let err = message(
        corrupt(|b| put(b, shdr(12, 32), &0x169u64.to_le_bytes())),
        &["section 12 (.symtab)", "sh_size 361", "24-byte"],
    );
    assert_eq!(err, ReadError::SymbolTableSize { index: 12, name: ".symtab".into(), size: 0x169, entry: 24 });
    let err = message(corrupt(|b| put(b, shdr(12, 40), &99u32.to_le_bytes())), &["sh_link 99", "15 sections"]);
    assert_eq!(err, ReadError::SymbolStringsIndex { index: 12, name: ".symtab".into(), link: 99, count: 15 });
    // Linked to `.rodata` (6, SHT_PROGBITS).
    let err = message(corrupt(|b| put(b, shdr(12, 40), &6u32.to_le_bytes())), &["sh_link 6", "type 1", "SHT_STRTAB"]);
    assert_eq!(err, ReadError::SymbolStringsType { index: 12, name: ".symtab".into(), link: 6, found: 1 });
}

/// File offset of the `amdhsa.version` array (`0x92`, a 2-element fixarray) in the note.
fn version_array(bytes: &[u8]) -> usize {
    let key = b"\xaeamdhsa.version";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    assert_eq!(&bytes[at..at + 3], b"\x92\x01\x02", "amdhsa.version [1, 2]");
    at
}

#[test]
fn an_unknown_metadata_major_version_is_refused() {
    let mut bytes = common::fixture("kernels-gfx1100.co");
    let at = version_array(&bytes);
    bytes[at + 1] = 99;
    let err = read(&bytes).unwrap_err();
    let ReadError::Metadata {
        offset: 0x24c,
        source: MetadataError::UnsupportedVersion { path, offset, found, supported_major },
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(path.as_str(), "amdhsa.version");
    assert_eq!((*offset, *found, *supported_major), (at - 0x24c, [99, 2], 1));
    let text = err.to_string();
    for part in ["amdhsa.version", "[99, 2]", "major version 99", "supported: major version 1", "0x24c"] {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }
    // Another minor version of major version 1 reads (hand-written assembly says [1, 0]).
    for minor in [0u8, 1, 7] {
        bytes[at + 1] = 1;
        bytes[at + 2] = minor;
        assert_eq!(read(&bytes).unwrap().metadata_version, [1, u32::from(minor)]);
    }
}

#[test]
fn an_entry_of_a_bundle_names_the_entry_and_where_it_starts() {
    let mut bytes = common::fixture(common::BUNDLE);
    let gfx1100 = bundle::entries(&bytes).unwrap()[1].offset;
    assert_eq!(gfx1100, 0x1000);
    // e_shentsize of the gfx1100 entry.
    put(&mut bytes, 0x1000 + 58, &40u16.to_le_bytes());
    let err = read_any(&bytes, Some(Target::Gfx1100)).unwrap_err();
    assert_eq!(
        err,
        ReadError::InBundle {
            triple: "hipv4-amdgcn-amd-amdhsa--gfx1100".into(),
            offset: 0x1000,
            source: Box::new(ReadError::EntrySize { field: "e_shentsize", found: 40, expected: 64 }),
        }
    );
    let text = err.to_string();
    assert!(text.contains("bundle entry hipv4-amdgcn-amd-amdhsa--gfx1100 at byte 0x1000"), "{text}");
    assert!(text.contains("e_shentsize 40"), "{text}");
    // The other entry still reads.
    assert!(read_any(&bytes, Some(Target::Gfx1201)).is_ok());
}
