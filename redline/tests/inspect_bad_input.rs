//! `redline inspect` on bad input: what is not a regular file exits 2 at once (never read), a
//! file over the code-object size limit exits 1 naming its size and the limit, and a corrupt
//! code object exits 1 naming the field, its value and the size or version it breaks.
//!
//! The corrupt files are `kernarg-abi`'s `kernels-gfx1100.co` (9696 bytes; `.note` is section 1,
//! its header at 0x2260; section headers of 64 bytes at e_shoff 0x2220; e_shentsize at byte 58)
//! and `add-gfx1100-gfx1201.bundle` (the gfx1100 entry at byte 0x1000), patched here.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `CODE_OBJECT_MAX_BYTES` of `redline inspect`: 256 MiB.
const LIMIT: u64 = 256 << 20;

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernarg-abi/tests/data").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fresh directory for this test binary and `name`.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-inspect-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `redline inspect FILE`, failing the test if it has not ended within 20 seconds (a
/// reader that reads a device or a FIFO never ends).
fn inspect(file: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
        .arg("inspect")
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("redline inspect {} did not end within 20 s", file.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Asserts the exit code and that stderr holds every one of `parts`; returns stderr.
fn expect(out: &Output, code: i32, parts: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    for part in parts {
        assert!(stderr.contains(part), "stderr {stderr:?} lacks {part:?}");
    }
    assert!(out.stdout.is_empty(), "no report for a refused file");
    stderr
}

/// Writes `bytes` to `dir/name` and inspects it.
fn inspect_bytes(dir: &Path, name: &str, bytes: &[u8]) -> Output {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    inspect(&path)
}

fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    bytes[at..at + value.len()].copy_from_slice(value);
}

#[test]
fn what_is_not_a_regular_file_exits_2_without_being_read() {
    expect(&inspect(Path::new("/dev/zero")), 2, &["/dev/zero", "a character device", "not a regular file"]);
    let dir = temp_dir("special");
    let link = dir.join("zero.co");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    expect(&inspect(&link), 2, &["zero.co", "a character device", "not a regular file"]);
    expect(&inspect(&dir), 2, &["a directory", "not a regular file"]);
    // A FIFO with no writer: opening it must not wait for one.
    let fifo = dir.join("fifo.co");
    let status = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    expect(&inspect(&fifo), 2, &["fifo.co", "a FIFO", "not a regular file"]);
    expect(&inspect(&dir.join("missing.co")), 2, &["missing.co", "No such file"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_over_the_limit_exits_1_naming_its_size_and_the_limit() {
    let dir = temp_dir("large");
    let path = dir.join("large.co");
    // Sparse: no disk blocks, and never read.
    File::create(&path).unwrap().set_len(LIMIT + 1).unwrap();
    let started = Instant::now();
    expect(&inspect(&path), 1, &["large.co", &format!("{} bytes", LIMIT + 1), "code object limit", &LIMIT.to_string()]);
    assert!(started.elapsed() < Duration::from_secs(10), "refused before reading");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_truncated_header_says_so_with_the_sizes() {
    let dir = temp_dir("truncated");
    expect(
        &inspect_bytes(&dir, "x", b"\x7fELF"),
        1,
        &["x: truncated ELF header: the file is 4 bytes, an ELF64 header is 64"],
    );
    let head = &fixture("kernels-gfx1100.co")[..40];
    expect(&inspect_bytes(&dir, "head.co", head), 1, &["truncated ELF header: the file is 40 bytes"]);
    let stderr = expect(&inspect_bytes(&dir, "text.co", b"not an elf file at all"), 1, &["text.co", "not an ELF file"]);
    assert!(stderr.contains("22 bytes"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sections_and_tables_past_the_end_of_the_file_exit_1_with_their_values() {
    let dir = temp_dir("tables");
    let good = fixture("kernels-gfx1100.co");
    assert_eq!(good.len(), 9696);
    assert_eq!(inspect_bytes(&dir, "good.co", &good).status.code(), Some(0), "the unpatched file reads");

    // `.note` sh_size 2^40: the PT_NOTE segment still holds the note, only the section is wrong.
    let mut bytes = good.clone();
    put(&mut bytes, 0x2260 + 32, &(1u64 << 40).to_le_bytes());
    expect(
        &inspect_bytes(&dir, "note-size.co", &bytes),
        1,
        &["note-size.co", "section 1 (.note)", "sh_offset 0x238", "sh_size 0x10000000000", "9696-byte file"],
    );

    let mut bytes = good.clone();
    put(&mut bytes, 0x2260 + 24, &0x10_0000u64.to_le_bytes());
    expect(&inspect_bytes(&dir, "note-offset.co", &bytes), 1, &["section 1 (.note)", "sh_offset 0x100000"]);

    let mut bytes = good.clone();
    put(&mut bytes, 40, &9000u64.to_le_bytes());
    expect(
        &inspect_bytes(&dir, "shoff.co", &bytes),
        1,
        &["section header table", "e_shoff 0x2328", "e_shnum 15", "9696-byte file"],
    );

    let mut bytes = good.clone();
    put(&mut bytes, 58, &40u16.to_le_bytes());
    expect(&inspect_bytes(&dir, "shentsize.co", &bytes), 1, &["e_shentsize 40", "64"]);

    let mut bytes = good.clone();
    put(&mut bytes, 56, &0xfffu16.to_le_bytes());
    expect(&inspect_bytes(&dir, "phnum.co", &bytes), 1, &["program header table", "e_phoff 0x40", "e_phnum 4095"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unknown_metadata_major_version_exits_1_naming_key_value_and_supported_versions() {
    let dir = temp_dir("version");
    let mut bytes = fixture("kernels-gfx1100.co");
    let key = b"\xaeamdhsa.version";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    assert_eq!(&bytes[at..at + 3], b"\x92\x01\x02", "amdhsa.version [1, 2]");
    bytes[at + 1] = 99;
    expect(
        &inspect_bytes(&dir, "version.co", &bytes),
        1,
        &["version.co", "amdhsa.version", "[99, 2]", "major version 99", "supported: major version 1", "[1, 2]"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupt_bundle_entry_is_named_with_its_offset() {
    let dir = temp_dir("bundle");
    let mut bytes = fixture("add-gfx1100-gfx1201.bundle");
    put(&mut bytes, 0x1000 + 58, &40u16.to_le_bytes());
    let path = dir.join("add.bundle");
    std::fs::write(&path, &bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["inspect", "--target", "gfx1100"])
        .arg(&path)
        .output()
        .unwrap();
    expect(&out, 1, &["add.bundle", "bundle entry hipv4-amdgcn-amd-amdhsa--gfx1100 at byte 0x1000", "e_shentsize 40"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
