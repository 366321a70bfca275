//! The binary decoder's errors: each names the field (as a JSON-style path), the byte offset of
//! the offending value in the file and the value itself. Offsets are found in the encoded bytes
//! with an independent LEB128 encoder, never taken from the decoder.

mod recorder_fixture;

use recorder_fixture::*;
use tape_core::serial::{
    DecodeError, DecodeErrorKind, FieldPath, Segment, SerialError, TAPE_FORMAT_VERSION, TAPE_MAGIC, TapeData, validate,
};
use tape_core::tape::Tape;
use tape_core::{Access, Effects};

/// LEB128, as postcard writes varints.
fn varint(mut n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let low = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            out.push(low);
            return out;
        }
        out.push(low | 0x80);
    }
}

fn with_header(payload: &[u8]) -> Vec<u8> {
    let mut out = TAPE_MAGIC.to_vec();
    out.extend_from_slice(&TAPE_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The one place `needle` occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    let hits: Vec<usize> =
        hay.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect();
    assert_eq!(hits.len(), 1, "{needle:02x?} occurs {} times", hits.len());
    hits[0]
}

fn path(segments: &[Segment]) -> FieldPath {
    FieldPath(segments.to_vec())
}

use Segment::{Field as F, Index as I};

fn decode_error(bytes: &[u8]) -> DecodeError {
    match Tape::from_binary(bytes) {
        Err(SerialError::Decode(e)) => e,
        other => panic!("expected a decode error, got {other:?}"),
    }
}

fn assert_mentions(error: &impl std::fmt::Display, parts: &[&str]) {
    let message = error.to_string();
    for part in parts {
        assert!(message.contains(part), "{part:?} missing in: {message}");
    }
}

#[test]
fn a_cut_kernarg_names_the_launch_the_field_the_length_and_the_offset() {
    let tape = golden_tape();
    let bin = tape.to_binary();
    let blob = &tape.launches()[1].kernarg;
    let content = find(&bin, blob);
    let prefix = varint(blob.len() as u64);
    let prefix_at = content - prefix.len();
    assert_eq!(&bin[prefix_at..content], &prefix[..]);
    let cut = &bin[..content + 10];
    let error = decode_error(cut);
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("launches"), I(1), F("kernarg")]),
            offset: prefix_at,
            kind: DecodeErrorKind::LengthPastEnd { len: blob.len() as u64, input_len: cut.len() },
        }
    );
    let length = format!("length {} at byte offset {prefix_at}", blob.len());
    let end = format!("({} bytes)", cut.len());
    assert_mentions(&error, &["launches[1].kernarg", &length, "runs past the end", &end]);
    // The whole message of `Tape::from_binary` says the same.
    assert_mentions(&Tape::from_binary(cut).unwrap_err(), &["launches[1].kernarg", &length]);
}

#[test]
fn a_digest_of_the_wrong_length_is_named() {
    let bin = golden_tape().to_binary();
    let digest_at = find(&bin, &digest(FILL_SHA256));
    assert_eq!(bin[digest_at - 1], 32);
    let mut bad = bin.clone();
    bad[digest_at - 1] = 31;
    let error = decode_error(&bad);
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("launches"), I(0), F("artifact"), F("code_object_sha256")]),
            offset: digest_at - 1,
            kind: DecodeErrorKind::DigestLength { len: 31 },
        }
    );
    assert_mentions(&error, &["launches[0].artifact.code_object_sha256", "digest of 31 bytes", "expected 32"]);
}

#[test]
fn a_symbol_that_is_not_utf8_is_named_with_the_bad_byte() {
    let bin = golden_tape().to_binary();
    let symbol_at = find(&bin, &digest(FILL_SHA256)) + 32;
    assert_eq!(&bin[symbol_at..symbol_at + 5], b"\x04fill");
    let mut bad = bin.clone();
    bad[symbol_at + 2] = 0xFF;
    let error = decode_error(&bad);
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("launches"), I(0), F("artifact"), F("symbol")]),
            offset: symbol_at,
            kind: DecodeErrorKind::NotUtf8 { bad_byte: symbol_at + 2 },
        }
    );
    assert_mentions(&error, &["launches[0].artifact.symbol", "not UTF-8", &format!("byte offset {}", symbol_at + 2)]);
}

#[test]
fn bad_and_cut_varints_are_named() {
    let bin = golden_tape().to_binary();
    assert_eq!(bin[8], 17, "the position, one byte");
    let splice = |varint: &[u8]| [&bin[..8], varint, &bin[9..]].concat();
    let bad_varint = |ty| DecodeErrorKind::BadVarint { ty };
    // Five bytes with continuation bits, and a fifth byte with bits a u32 does not have.
    for bytes in [&[0xFF; 5][..], &[0x80, 0x80, 0x80, 0x80, 0x10]] {
        let error = decode_error(&splice(bytes));
        assert_eq!(error, DecodeError { path: path(&[F("position")]), offset: 8, kind: bad_varint("u32") });
        assert_mentions(&error, &["position", "varint at byte offset 8", "u32"]);
    }
    // The largest u32 and a non-minimal 17 decode as postcard decodes them.
    let max = splice(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]);
    let data = TapeData::from_binary(&max).unwrap();
    assert_eq!(data.position, u32::MAX);
    assert_eq!(postcard::from_bytes::<TapeData>(&max[8..]).unwrap(), data);
    let padded = splice(&[0x91, 0x80, 0x00]);
    assert_eq!(Tape::from_binary(&padded).unwrap(), golden_tape());
    assert_eq!(postcard::from_bytes::<TapeData>(&padded[8..]).unwrap(), golden_tape().into_data());
    // A varint cut by the end of the file.
    let cut = with_header(&varint(300)[..1]);
    let error = decode_error(&cut);
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("position")]),
            offset: 8,
            kind: DecodeErrorKind::Truncated { item: "a u32 varint", input_len: 9 },
        }
    );
    assert_mentions(&error, &["position: a u32 varint at byte offset 8 runs past the end of the tape (9 bytes)"]);
}

#[test]
fn an_unknown_variant_is_named_with_the_variants() {
    let mut data = golden_tape().into_data();
    data.launches[2].effects = Effects::Unknown;
    data.bindings.clear();
    data.external.clear();
    let mut bin = validate(data).unwrap().to_binary();
    // Effects `Unknown` (variant 1), no external names, no bindings.
    let at = bin.len() - 3;
    assert_eq!(&bin[at..], &[1, 0, 0]);
    bin[at] = 7;
    let error = decode_error(&bin);
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("launches"), I(2), F("effects")]),
            offset: at,
            kind: DecodeErrorKind::UnknownVariant { index: 7, variants: &["Known", "Unknown"] },
        }
    );
    assert_mentions(
        &error,
        &[&format!("launches[2].effects: variant 7 at byte offset {at}"), "0 (Known), 1 (Unknown)"],
    );
}

#[test]
fn a_cut_binding_names_the_variant_and_its_field() {
    let bin = golden_tape().to_binary();
    // The last binding: GridAxis (1), axis 0, addend 1007 (zig-zag 2014), divisor 64, max 64.
    let tail = [&[1u8, 0][..], &varint(2014), &[64, 64]].concat();
    assert_eq!(&bin[bin.len() - tail.len()..], &tail[..]);
    let cut = &bin[..bin.len() - 1];
    let error = decode_error(cut);
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("bindings"), I(1), F("kind"), F("GridAxis"), F("max_workgroups")]),
            offset: cut.len(),
            kind: DecodeErrorKind::Truncated { item: "a u32 varint", input_len: cut.len() },
        }
    );
    assert_mentions(&error, &["bindings[1].kind.GridAxis.max_workgroups", &format!("byte offset {}", cut.len())]);
    let mut bad = bin.clone();
    let variant_at = bin.len() - tail.len();
    bad[variant_at] = 5;
    assert_mentions(
        &decode_error(&bad),
        &["bindings[1].kind: variant 5", "0 (KernargU32), 1 (GridAxis), 2 (KernargGridWorkgroups)"],
    );
}

#[test]
fn list_lengths_are_checked_against_the_limits_and_the_input() {
    // 65 537 launches: over the tape's limit, refused before any launch is read.
    let payload = [varint(0), varint(65_537)].concat();
    let error = decode_error(&with_header(&payload));
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("launches")]),
            offset: 9,
            kind: DecodeErrorKind::TooMany { count: 65_537, limit: 65_536 },
        }
    );
    assert_mentions(&error, &["launches: 65537 entries at byte offset 9 exceed the limit of 65536"]);
    let huge = decode_error(&with_header(&[varint(0), varint(u64::MAX)].concat()));
    assert_eq!(huge.kind, DecodeErrorKind::TooMany { count: u64::MAX, limit: 65_536 });
    // Within the limit, but more launches than bytes left.
    let bin = with_header(&[varint(0), varint(5)].concat());
    let error = decode_error(&bin);
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("launches")]),
            offset: 9,
            kind: DecodeErrorKind::LengthPastEnd { len: 5, input_len: 10 },
        }
    );
}

#[test]
fn effects_and_pointers_are_bounded_while_decoding() {
    let golden = golden_tape().into_data();
    let mut many = golden.clone();
    many.launches[0].effects = Effects::Known(vec![effect(ALLOC_X, 0, 4, Access::Write); 257]);
    let bin = with_header(&postcard::to_allocvec(&many).unwrap());
    let error = decode_error(&bin);
    assert_eq!(error.path, path(&[F("launches"), I(0), F("effects"), F("Known")]));
    assert_eq!(error.kind, DecodeErrorKind::TooMany { count: 257, limit: 256 });

    // Three pointers in a 16-byte blob: two slots at most.
    let mut crowded = golden;
    let launch = &mut crowded.launches[0];
    launch.kernarg = (1..=16).collect();
    launch.pointers = vec![pointer(0, ALLOC_X, 0); 3];
    let bin = with_header(&postcard::to_allocvec(&crowded).unwrap());
    // Blob, grid [1024, 1, 1], work-group [64, 1, 1], LDS 0 + 0, wave size: then the pointers.
    let (g, w) = (crowded.launches[0].geometry.grid_work_items, crowded.launches[0].geometry.workgroup_work_items);
    let after_blob: usize = g.iter().map(|&v| varint(u64::from(v)).len()).sum::<usize>()
        + w.iter().map(|&v| varint(u64::from(v)).len()).sum::<usize>()
        + 2
        + 1;
    let offset = find(&bin, &(1..=16).collect::<Vec<u8>>()) + 16 + after_blob;
    assert_eq!(bin[offset], 3);
    let error = decode_error(&bin);
    assert_eq!(
        error,
        DecodeError {
            path: path(&[F("launches"), I(0), F("pointers")]),
            offset,
            kind: DecodeErrorKind::PointersPastKernarg { count: 3, kernarg_len: 16 },
        }
    );
    assert_mentions(&error, &["launches[0].pointers: 3 pointers", "16-byte kernarg blob", "at most 2"]);
}

#[test]
fn every_cut_of_the_golden_binary_names_a_field_and_an_offset_inside_it() {
    let bin = golden_tape().to_binary();
    for len in 8..bin.len() {
        let error = decode_error(&bin[..len]);
        assert!(!error.path.0.is_empty(), "length {len}: {error}");
        assert!(error.offset <= len, "length {len}: {error}");
        assert_mentions(&error, &["byte offset", &format!("({len} bytes)")]);
        assert!(postcard::take_from_bytes::<TapeData>(&bin[8..len]).is_err(), "postcard agrees at {len}");
    }
}

#[test]
fn the_golden_payload_decodes_as_postcard_decodes_it() {
    let bin = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/three-launch.bin")).unwrap();
    let ours = TapeData::from_binary(&bin).unwrap();
    assert_eq!(ours, postcard::from_bytes::<TapeData>(&bin[8..]).unwrap());
    assert_eq!(ours, golden_tape().into_data());
    // `TapeData::from_binary` does not validate; `Tape::from_binary` does.
    let mut invalid = ours.clone();
    invalid.launches[0].wave_size = 16;
    let bin = with_header(&postcard::to_allocvec(&invalid).unwrap());
    assert_eq!(TapeData::from_binary(&bin).unwrap(), invalid);
    assert!(matches!(Tape::from_binary(&bin), Err(SerialError::Invalid(_))));
}
