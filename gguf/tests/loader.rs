//! [`Gguf::open`] through the trusted loader: the header judged before the rest is read, the
//! file parsed from a sealed snapshot whose digest is that of the bytes parsed, and nothing the
//! file does afterwards reaching what was parsed.

use std::path::{Path, PathBuf};
use std::process::Command;

use gguf::{Gguf, GgufError, TinyLlamaConfig, check_header, tiny_llama};
use infile::{Backing, Opened, SnapshotOptions};
use proptest::prelude::*;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("loader").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The digest of `path` by coreutils' `sha256sum`, a reference independent of the loader.
fn sha256sum(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().expect("sha256sum runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_owned()
}

/// Bytes this thread has asked the kernel to read so far (`rchar` of `/proc/thread-self/io`).
fn bytes_read_by_this_thread() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines().find_map(|l| l.strip_prefix("rchar: ")).unwrap().trim().parse().unwrap()
}

#[test]
fn open_parses_a_sealed_snapshot_whose_digest_is_the_file_parsed() {
    let path = scratch("digest").join("tiny.gguf");
    let bytes = tiny_llama(&TinyLlamaConfig::default());
    std::fs::write(&path, &bytes).unwrap();
    let file = Gguf::open(&path).unwrap();
    let snapshot = file.snapshot().expect("opened through the loader");
    assert_eq!(snapshot.backing(), Backing::SealedMemfd);
    assert!(file.as_bytes() == bytes.as_slice());
    assert_eq!(file.sha256().unwrap(), sha256sum(&path));
    assert_eq!(Gguf::parse(bytes).unwrap().sha256(), None, "bytes in memory have no file digest");
}

#[test]
fn nothing_done_to_the_file_after_open_reaches_what_was_parsed() {
    let path = scratch("after").join("tiny.gguf");
    let bytes = tiny_llama(&TinyLlamaConfig::default());
    std::fs::write(&path, &bytes).unwrap();
    let digest = sha256sum(&path);
    let opened = [Backing::SealedMemfd, Backing::Heap].map(|backing| {
        let options = SnapshotOptions { backing, ..SnapshotOptions::default() };
        Gguf::load(&Opened::open(&path, gguf::LIMIT).unwrap(), &options).unwrap()
    });
    let name = opened[0].tensors()[0].name().to_owned();
    let before = opened[0].tensor(&name).unwrap().bytes().to_vec();
    // Truncated to its header, then rewritten in place with another model of another seed.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(24).unwrap();
    std::fs::write(&path, tiny_llama(&TinyLlamaConfig { seed: 99, ..TinyLlamaConfig::default() })).unwrap();
    assert_ne!(sha256sum(&path), digest, "the file did change");
    for file in &opened {
        assert!(file.as_bytes() == bytes.as_slice());
        assert_eq!(file.tensor(&name).unwrap().bytes(), before.as_slice());
        assert_eq!(file.sha256().unwrap(), digest);
    }
}

#[test]
fn a_bad_magic_is_refused_before_the_file_is_read() {
    let path = scratch("magic").join("big.gguf");
    std::fs::write(&path, b"GGUX").unwrap();
    // 512 MiB, sparse: only the first bytes were written.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(512 << 20).unwrap();
    let before = bytes_read_by_this_thread();
    let error = Gguf::open(&path).unwrap_err();
    let read = bytes_read_by_this_thread() - before;
    assert!(matches!(error, GgufError::BadMagic { found } if &found == b"GGUX"), "{error}");
    assert!(read < 64 << 10, "{read} bytes read before the magic was refused");
}

#[test]
fn a_model_over_the_snapshot_budget_is_refused_by_name_before_the_copy() {
    let path = scratch("budget").join("tiny.gguf");
    std::fs::write(&path, tiny_llama(&TinyLlamaConfig::default())).unwrap();
    let opened = Opened::open(&path, gguf::LIMIT).unwrap();
    let options = SnapshotOptions { budget_bytes: Some(1024), backing: Backing::SealedMemfd };
    let error = Gguf::load(&opened, &options).unwrap_err();
    assert!(matches!(&error, GgufError::Read(infile::ReadError::OverBudget { budget: 1024, .. })), "{error}");
    assert!(error.to_string().contains("tiny.gguf"), "{error}");
}

#[test]
fn a_file_truncated_after_open_is_a_short_read_naming_it() {
    let path = scratch("short").join("tiny.gguf");
    let bytes = tiny_llama(&TinyLlamaConfig::default());
    std::fs::write(&path, &bytes).unwrap();
    let opened = Opened::open(&path, gguf::LIMIT).unwrap();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4096).unwrap();
    let error = Gguf::load(&opened, &SnapshotOptions::default()).unwrap_err();
    let GgufError::Read(read) = &error else { panic!("{error}") };
    assert!(matches!(read, infile::ReadError::ShortRead { read: 4096, .. }) && read.is_invalid_input(), "{error}");
    assert!(error.to_string().contains("short read") && error.to_string().contains("tiny.gguf"), "{error}");
}

proptest! {
    /// Whatever the header check refuses, the full parse refuses too; so judging the header first
    /// never turns away a file the parser would take.
    #[test]
    fn the_header_check_refuses_only_what_the_parse_refuses(
        magic in prop_oneof![Just(*b"GGUF"), any::<[u8; 4]>()],
        version in prop_oneof![Just(3u32), Just(2u32), any::<u32>()],
        n_tensors in prop_oneof![0u64..4, any::<u64>()],
        n_kv in prop_oneof![0u64..4, any::<u64>()],
        tail in proptest::collection::vec(any::<u8>(), 0..200),
        cut in 0usize..240,
    ) {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&magic);
        bytes.extend_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(&n_tensors.to_le_bytes());
        bytes.extend_from_slice(&n_kv.to_le_bytes());
        bytes.extend_from_slice(&tail);
        bytes.truncate(cut.max(1));
        if let Err(header) = check_header(&bytes, bytes.len() as u64) {
            let parse = Gguf::parse(bytes.clone());
            prop_assert!(parse.is_err(), "the header check refused ({header}) what the parse took");
        }
    }
}

#[test]
fn the_header_check_gives_the_parsers_errors_for_the_first_bytes() {
    let ok = tiny_llama(&TinyLlamaConfig::default());
    check_header(&ok, ok.len() as u64).unwrap();
    let cases: [(&[u8], &str); 4] = [
        (b"GGUX\x03\0\0\0", "bad magic"),
        (b"GGUF\x07\0\0\0", "GGUF version 7"),
        (b"GGUF\x03\0\0\0\x01", "truncated tensor count at byte offset 8"),
        (b"GGUF\x03\0\0\0\0\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\x7f", "metadata count at byte offset 16"),
    ];
    for (bytes, message) in cases {
        let header = check_header(bytes, bytes.len() as u64).unwrap_err().to_string();
        assert!(header.contains(message), "{header}");
        assert_eq!(header, Gguf::parse(bytes.to_vec()).unwrap_err().to_string());
    }
}
