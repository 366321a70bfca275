//! Targeted corruptions of `kernels-gfx1100.co`, each expected to fail with a specific error.
//!
//! File offsets from `llvm-readelf-19 -h -S -l --syms kernels-gfx1100.co`: `.note` (the PT_NOTE
//! segment) at 0x238, `.rodata` at file offset 0x12c0 (= its address, in the first PT_LOAD),
//! `.symtab` at 0x1fb8 with 0x18-byte entries, `add.kd` its entry 3 (so at 0x2000: `st_info` at
//! +4, `st_value` at +8, `st_size` at +16). ELF64 header fields at their standard offsets.

mod common;

use kernarg_abi::metadata::MetadataError;
use kernarg_abi::{ReadError, read};

fn corrupt(f: impl FnOnce(&mut Vec<u8>)) -> Result<kernarg_abi::CodeObject, ReadError> {
    let mut bytes = common::fixture("kernels-gfx1100.co");
    f(&mut bytes);
    read(&bytes)
}

fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    bytes[at..at + value.len()].copy_from_slice(value);
}

const ADD_KD_SYM: usize = 0x1fb8 + 3 * 0x18;

#[test]
fn identification_errors_name_the_value() {
    assert_eq!(corrupt(|b| b[7] = 0), Err(ReadError::OsAbi { found: 0, expected: 64 }));
    assert_eq!(corrupt(|b| b[8] = 1), Err(ReadError::AbiVersion { found: 1 }));
    assert_eq!(corrupt(|b| b[8] = 5), Err(ReadError::AbiVersion { found: 5 }));
    assert_eq!(corrupt(|b| put(b, 18, &62u16.to_le_bytes())), Err(ReadError::Machine { found: 62, expected: 224 }));
    assert_eq!(corrupt(|b| put(b, 16, &1u16.to_le_bytes())), Err(ReadError::FileType { found: 1, expected: 3 }));
    assert_eq!(corrupt(|b| b[4] = 1), Err(ReadError::Class { found: 1 }));
    assert_eq!(corrupt(|b| b[5] = 2), Err(ReadError::Encoding { found: 2 }));
    assert_eq!(corrupt(|b| b[0] = 0), Err(ReadError::NotElf { len: 9696 }));
    assert_eq!(corrupt(|b| b.truncate(10)), Err(ReadError::TruncatedHeader { len: 10, needed: 64 }));
    assert_eq!(corrupt(|b| b.truncate(40)), Err(ReadError::TruncatedHeader { len: 40, needed: 64 }));
}

#[test]
fn metadata_note_errors() {
    // n_type of the only note: 32 -> 33.
    assert_eq!(corrupt(|b| put(b, 0x240, &33u32.to_le_bytes())), Err(ReadError::NoMetadata));
    // e_flags says gfx1101 (0x46) while amdhsa.target says gfx1100.
    assert_eq!(
        corrupt(|b| put(b, 48, &0x46u32.to_le_bytes())),
        Err(ReadError::MetadataTarget { metadata: "amdgcn-amd-amdhsa--gfx1100".into(), elf: "gfx1101".into() })
    );
    // e_flags with xnack+ on a processor whose metadata has no feature.
    assert!(matches!(corrupt(|b| put(b, 48, &0x341u32.to_le_bytes())), Err(ReadError::MetadataTarget { .. })));
    // The first metadata byte (a map header) made a reserved marker.
    assert!(matches!(
        corrupt(|b| b[0x238 + 12 + 8] = 0xc1),
        Err(ReadError::Metadata { offset: 0x24c, source: MetadataError::ReservedMarker { offset: 0, .. } })
    ));
}

#[test]
fn descriptor_symbol_errors() {
    assert_eq!(
        corrupt(|b| put(b, ADD_KD_SYM + 16, &32u64.to_le_bytes())),
        Err(ReadError::SymbolSize { symbol: "add.kd".into(), size: 32, expected: 64 })
    );
    // st_info GLOBAL | FUNC (0x12) instead of GLOBAL | OBJECT (0x11).
    assert_eq!(
        corrupt(|b| b[ADD_KD_SYM + 4] = 0x12),
        Err(ReadError::SymbolType { symbol: "add.kd".into(), found: 2, expected: 1 })
    );
    assert_eq!(
        corrupt(|b| put(b, ADD_KD_SYM + 8, &0x12e0u64.to_le_bytes())),
        Err(ReadError::DescriptorMisaligned { symbol: "add.kd".into(), address: 0x12e0, align: 64 })
    );
    // 0x1440 is the end of the first PT_LOAD's file bytes; 0x4f40 lies in the RW segment's
    // memory but past its file bytes.
    for address in [0x1440u64, 0x4f40, 0x1_0000_0000] {
        assert_eq!(
            corrupt(|b| put(b, ADD_KD_SYM + 8, &address.to_le_bytes())),
            Err(ReadError::SymbolNotLoaded { symbol: "add.kd".into(), address })
        );
    }
    // Rename "add.kd" in .strtab so the metadata's symbol is missing: the name sits in .strtab;
    // find it by content (the only occurrence after the section headers' string table).
    let mut bytes = common::fixture("kernels-gfx1100.co");
    let pos = bytes.windows(7).rposition(|w| w == b"\0add.kd").unwrap() + 1;
    bytes[pos] = b'x';
    assert_eq!(read(&bytes), Err(ReadError::MissingSymbol { kernel: "add".into(), symbol: "add.kd".into() }));
}

#[test]
fn entry_errors() {
    let entry_field = 0x12c0 + 16;
    assert_eq!(
        corrupt(|b| put(b, entry_field, &0x1280i64.to_le_bytes())),
        Err(ReadError::EntryMisaligned { kernel: "add".into(), entry: 0x2540, align: 256 })
    );
    // 256-aligned but outside the R E segment (0x2500..0x2f00): in the read-only segment, and
    // just past the code.
    for (offset, entry) in [(0x40i64, 0x1300u64), (0x1c40, 0x2f00)] {
        assert_eq!(
            corrupt(|b| put(b, entry_field, &offset.to_le_bytes())),
            Err(ReadError::EntryNotExecutable { kernel: "add".into(), entry })
        );
    }
    assert_eq!(
        corrupt(|b| put(b, entry_field, &i64::MIN.to_le_bytes())),
        Err(ReadError::EntryOverflow { kernel: "add".into(), descriptor_address: 0x12c0, offset: i64::MIN })
    );
}

#[test]
fn tables_found_through_their_own_structures() {
    // Without section headers (e_shoff = 0) the note is still found through PT_NOTE, but there is
    // no symbol table.
    assert_eq!(corrupt(|b| put(b, 40, &0u64.to_le_bytes())), Err(ReadError::NoSymbolTable));
    // Without program headers (e_phoff = 0) the note is found through its SHT_NOTE section, but the
    // descriptor bytes must come from a PT_LOAD segment.
    assert_eq!(
        corrupt(|b| put(b, 32, &0u64.to_le_bytes())),
        Err(ReadError::SymbolNotLoaded { symbol: "add.kd".into(), address: 0x12c0 })
    );
    // A program header count that runs past the end of the file.
    assert_eq!(
        corrupt(|b| put(b, 56, &0xfffu16.to_le_bytes())),
        Err(ReadError::TableOutOfBounds {
            table: "program header",
            offset_field: "e_phoff",
            offset: 64,
            count_field: "e_phnum",
            count: 0xfff,
            entry_size: 56,
            len: 9696,
        })
    );
}
