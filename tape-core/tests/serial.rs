//! Tape serialization: golden JSON and binary files of the three-launch tape (rewritten only
//! with `REDLINE_BLESS=1`), the binary header, and the validation every decoded tape passes.

mod recorder_fixture;

use std::path::PathBuf;

use recorder_fixture::*;
use tape_core::recorder::LaunchError;
use tape_core::serial::{SerialError, TAPE_FORMAT_VERSION, TAPE_HEADER_BYTES, TAPE_MAGIC, TapeData, validate};
use tape_core::tape::{ExternalCount, Tape, TapeError};

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name)
}

/// Compares `bytes` with the golden file `name`, or rewrites it when `REDLINE_BLESS=1`.
fn check_golden(name: &str, bytes: &[u8]) {
    let path = golden_path(name);
    if std::env::var("REDLINE_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, bytes).unwrap();
        return;
    }
    let expected = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with REDLINE_BLESS=1 to write it)", path.display()));
    assert!(expected == bytes, "{} differs from the output (REDLINE_BLESS=1 rewrites it after review)", path.display());
}

fn golden_json() -> String {
    let mut json = serde_json::to_string_pretty(&golden_tape()).unwrap();
    json.push('\n');
    json
}

fn with_header(payload: &[u8]) -> Vec<u8> {
    let mut out = TAPE_MAGIC.to_vec();
    out.extend_from_slice(&TAPE_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

#[test]
fn golden_json_file() {
    check_golden("three-launch.json", golden_json().as_bytes());
}

#[test]
fn golden_binary_file() {
    check_golden("three-launch.bin", &golden_tape().to_binary());
}

#[test]
fn golden_files_decode_to_the_golden_tape() {
    let tape = golden_tape();
    let json = std::fs::read_to_string(golden_path("three-launch.json")).unwrap();
    let from_json: Tape = serde_json::from_str(&json).unwrap();
    assert_eq!(from_json, tape);
    let bin = std::fs::read(golden_path("three-launch.bin")).unwrap();
    let from_bin = Tape::from_binary(&bin).unwrap();
    assert_eq!(from_bin, tape);
    assert_eq!(from_bin.identity(), tape.identity());
}

#[test]
fn json_shows_digests_and_blobs_as_hex() {
    let tape = golden_tape();
    let value: serde_json::Value = serde_json::from_str(&golden_json()).unwrap();
    assert_eq!(value["position"], 17);
    let launches = value["launches"].as_array().unwrap();
    assert_eq!(launches.len(), 3);
    for (json, (sha, symbol)) in
        launches.iter().zip([(FILL_SHA256, "fill"), (AXPY_SHA256, "axpy"), (BLOCK_SUM_SHA256, "block_sum")])
    {
        assert_eq!(json["artifact"]["code_object_sha256"], sha);
        assert_eq!(json["artifact"]["symbol"], symbol);
    }
    for (json, launch) in launches.iter().zip(tape.launches()) {
        assert_eq!(json["kernarg"], hex_encode(&launch.kernarg));
    }
    // fill's blob starts with the address of x, little-endian, then 1.5f32 and n = 1024.
    let kernarg = launches[0]["kernarg"].as_str().unwrap();
    assert!(kernarg.starts_with("00001000007f00000000c03f00040000"), "{kernarg}");
    assert_eq!(launches[2]["lds"], serde_json::json!({"static_bytes": 0, "dynamic_bytes": 256}));
    assert_eq!(
        launches[2]["pointers"],
        serde_json::json!([
            {"kernarg_offset": 0, "allocation": 11, "offset_bytes": 64},
            {"kernarg_offset": 8, "allocation": 3, "offset_bytes": 0},
        ])
    );
    assert_eq!(value["external"], serde_json::json!([{"name": "token_embedding", "count": 1}]));
    assert_eq!(value["bindings"][0]["kind"], serde_json::json!({"KernargU32": {"offset": 16, "addend": 1007}}));
}

#[test]
fn binary_starts_with_magic_and_version() {
    let bin = golden_tape().to_binary();
    assert_eq!(&bin[..6], b"RLTAPE");
    assert_eq!(&bin[6..8], &[1, 0]);
    assert_eq!(TAPE_HEADER_BYTES, 8);
    // position 17 is postcard's one-byte varint right after the header.
    assert_eq!(bin[8], 17);
}

#[test]
fn binary_header_errors() {
    let bin = golden_tape().to_binary();
    assert_eq!(Tape::from_binary(&[]), Err(SerialError::TooShort { len: 0, header_bytes: 8 }));
    assert_eq!(Tape::from_binary(&bin[..7]), Err(SerialError::TooShort { len: 7, header_bytes: 8 }));
    let mut magic = bin.clone();
    magic[0] = b'X';
    assert_eq!(Tape::from_binary(&magic), Err(SerialError::Magic { found: *b"XLTAPE" }));
    let mut version = bin.clone();
    version[6] = 2;
    assert_eq!(Tape::from_binary(&version), Err(SerialError::Version { found: 2, supported: 1 }));
    version[6..8].copy_from_slice(&0x0100u16.to_le_bytes());
    assert_eq!(Tape::from_binary(&version), Err(SerialError::Version { found: 256, supported: 1 }));
}

#[test]
fn binary_payload_errors() {
    let bin = golden_tape().to_binary();
    assert!(matches!(Tape::from_binary(&bin[..8]), Err(SerialError::Decode(_))));
    assert!(matches!(Tape::from_binary(&bin[..bin.len() - 1]), Err(SerialError::Decode(_))));
    let mut trailing = bin.clone();
    trailing.extend_from_slice(&[0, 0, 0]);
    assert_eq!(Tape::from_binary(&trailing), Err(SerialError::TrailingBytes { count: 3, offset: bin.len() }));
}

#[test]
fn decoded_tapes_are_validated() {
    let mut data = golden_tape().into_data();
    data.launches[1].wave_size = 16;
    let bin = with_header(&postcard::to_allocvec(&data).unwrap());
    let invalid = TapeError::Launch { index: 1, error: LaunchError::WaveSize { wave_size: 16 } };
    assert_eq!(Tape::from_binary(&bin), Err(SerialError::Invalid(invalid.clone())));
    assert_eq!(validate(data.clone()), Err(invalid));
    let json = serde_json::to_string(&data).unwrap();
    let err = serde_json::from_str::<Tape>(&json).unwrap_err();
    assert!(err.to_string().contains("launch 1: wave size 16 is neither 32 nor 64"), "{err}");
    // The plain data still decodes, for tools that show what is wrong.
    assert_eq!(serde_json::from_str::<TapeData>(&json).unwrap(), data);
}

#[test]
fn validation_covers_the_whole_tape() {
    let base = golden_tape().into_data();
    let with = |f: &dyn Fn(&mut TapeData)| {
        let mut d = base.clone();
        f(&mut d);
        validate(d).unwrap_err()
    };
    assert_eq!(with(&|d| d.launches.clear()), TapeError::Empty);
    assert_eq!(
        with(&|d| d.launches[0].kernarg[..8].fill(0)),
        TapeError::Launch { index: 0, error: LaunchError::NullPointer { kernarg_offset: 0 } }
    );
    assert_eq!(
        with(&|d| d.external.push(ExternalCount { name: "token_embedding".into(), count: 2 })),
        TapeError::External(tape_core::recorder::ExternalError::DuplicateName { name: "token_embedding".into() })
    );
    assert_eq!(
        with(&|d| d.external[0].count = 0),
        TapeError::External(tape_core::recorder::ExternalError::ZeroCount { name: "token_embedding".into() })
    );
    assert_eq!(
        with(&|d| d.external = (0..65).map(|i| ExternalCount { name: format!("e{i}"), count: 1 }).collect()),
        TapeError::External(tape_core::recorder::ExternalError::TooManyNames { limit: 64 })
    );
    assert_eq!(
        with(&|d| d.external = vec![
            ExternalCount { name: "a".into(), count: u32::MAX },
            ExternalCount { name: "b".into(), count: u32::MAX },
        ]),
        TapeError::External(tape_core::recorder::ExternalError::TooManyLaunches { limit: 65_536 })
    );
    assert_eq!(
        with(&|d| d.bindings[0].launch = 9),
        TapeError::Binding(tape_core::tape::BindingCheckError::LaunchOutOfRange {
            name: "block_sum.n".into(),
            launch: 9,
            launches: 3,
        })
    );
    // The grid and effect bounds recording checks hold for a decoded tape too.
    let max = u32::MAX;
    assert_eq!(
        with(&|d| d.launches[1].geometry.grid_work_items = [max; 3]),
        TapeError::Launch {
            index: 1,
            error: LaunchError::GridTooLarge {
                grid: [max; 3],
                work_items: u128::from(max).pow(3),
                limit: u64::from(max),
            },
        }
    );
    assert_eq!(
        with(&|d| if let tape_core::Effects::Known(list) = &mut d.launches[2].effects {
            list[1].len_bytes = 0;
        }),
        TapeError::Launch { index: 2, error: LaunchError::EffectEmpty { index: 1 } }
    );
    let message = with(&|d| {
        if let tape_core::Effects::Known(list) = &mut d.launches[2].effects {
            list[1].len_bytes = 0;
        }
    })
    .to_string();
    assert!(message.contains("launch 2: effect 1: len_bytes is 0"), "{message}");
    assert!(matches!(
        with(&|d| d.launches = vec![d.launches[0].clone(); 65_537]),
        TapeError::TooManyLaunches { count: 65_537, limit: 65_536 }
    ));
}

#[test]
fn the_tape_kernarg_total_is_bounded() {
    let mut data = golden_tape().into_data();
    data.bindings.clear();
    let mut big = data.launches[0].clone();
    big.kernarg.resize(1 << 20, 0);
    data.launches = vec![big; 65];
    assert_eq!(validate(data), Err(TapeError::KernargTotal { total: 65 << 20, limit: 64 << 20 }));
}

#[test]
fn json_input_is_strict() {
    let json = golden_json();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let reject = |v: serde_json::Value| serde_json::from_value::<Tape>(v).unwrap_err().to_string();

    let mut extra = value.clone();
    extra["comment"] = "hello".into();
    assert!(reject(extra).contains("unknown field `comment`"));

    let mut extra_launch_field = value.clone();
    extra_launch_field["launches"][0]["dims"] = 1.into();
    assert!(reject(extra_launch_field).contains("unknown field `dims`"));

    // Unknown fields are refused at every depth, not only in the tape and its launches.
    for (at, pointer) in [
        ("/launches/0/geometry", "lds_bytes"),
        ("/launches/1/lds", "extra"),
        ("/launches/1/pointers/0", "size"),
        ("/launches/2/effects/Known/0", "stride"),
        ("/bindings/0", "comment"),
        ("/bindings/1/kind/GridAxis", "min_workgroups"),
        ("/external/0", "note"),
    ] {
        let mut extra = value.clone();
        extra.pointer_mut(at).unwrap()[pointer] = 1.into();
        let error = reject(extra);
        assert!(error.contains(&format!("unknown field `{pointer}`")), "{at}: {error}");
    }

    let mut odd = value.clone();
    odd["launches"][0]["kernarg"] = "abc".into();
    assert!(reject(odd).contains("hex string of odd length 3"));

    let mut not_hex = value.clone();
    not_hex["launches"][0]["kernarg"] = "0g".into();
    assert!(reject(not_hex).contains("non-hex digit"));

    let mut short_digest = value.clone();
    short_digest["launches"][0]["artifact"]["code_object_sha256"] = FILL_SHA256[2..].into();
    assert!(reject(short_digest).contains("digest of 31 bytes, expected 32"));

    let mut array_digest = value.clone();
    array_digest["launches"][0]["artifact"]["code_object_sha256"] = serde_json::json!([1, 2, 3]);
    assert!(reject(array_digest).contains("expected a hex string or a byte string"));

    // Upper-case hex is read; the output is lower case again.
    let mut upper = value.clone();
    upper["launches"][0]["artifact"]["code_object_sha256"] = FILL_SHA256.to_uppercase().into();
    let tape: Tape = serde_json::from_value(upper).unwrap();
    assert_eq!(tape, golden_tape());
    assert_eq!(serde_json::to_value(&tape).unwrap(), value);
}

#[test]
fn data_round_trips_through_the_tape() {
    let tape = golden_tape();
    let data = tape.to_data();
    assert_eq!(validate(data.clone()).unwrap(), tape);
    assert_eq!(tape.clone().into_data(), data);
    // TapeData and Tape serialize identically.
    assert_eq!(serde_json::to_string(&data).unwrap(), serde_json::to_string(&tape).unwrap());
    assert_eq!(postcard::to_allocvec(&data).unwrap(), tape.to_binary()[8..]);
}

#[test]
fn serial_errors_name_the_values() {
    assert_eq!(SerialError::Magic { found: *b"XLTAPE" }.to_string(), "magic 584c54415045 is not 524c54415045");
    assert_eq!(
        SerialError::Version { found: 2, supported: 1 }.to_string(),
        "tape format version 2 is not supported (this build reads 1)"
    );
}
