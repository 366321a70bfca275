//! `redline tape show FILE` and `redline lower --tape FILE` on bad input: what is not a regular
//! file exits 2 at once (devices that never end, directories, FIFOs, links to them); a file over
//! the tape size limit exits 1 before it is read; a tape that does not decode or breaks a rule
//! exits 1 with a message naming the field, the byte offset (binary) or line, column and JSON
//! path, the offending value and the limit. Expected offsets and values are computed here from
//! the golden tapes of tape-core, never copied from the output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use tape_core::tape::Tape;

/// Longer than any of these commands may take: a reader that blocks or reads without bound
/// fails the test instead of hanging it.
const DEADLINE: Duration = Duration::from_secs(60);

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tape-core/tests/golden").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-tape-bad-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `redline args`, killed and failed after [`DEADLINE`].
fn redline(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || send.send(child.wait_with_output()));
    match receive.recv_timeout(DEADLINE) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("redline {args:?} did not finish within {DEADLINE:?}");
        }
    }
}

fn show(file: &Path) -> Output {
    redline(&["tape", "show", file.to_str().unwrap()])
}

/// `lower --tape file` into `dir/out`, which must stay absent.
fn lower(file: &Path, dir: &Path) -> Output {
    let out = dir.join("out");
    let output =
        redline(&["lower", "--tape", file.to_str().unwrap(), "--arch", "gfx1100", "--out", out.to_str().unwrap()]);
    assert!(!out.exists(), "nothing is written for a refused tape");
    output
}

/// Asserts the exit code and that stderr holds every part; returns stderr.
fn expect(output: &Output, code: i32, parts: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "stderr: {stderr}");
    assert!(output.stdout.is_empty(), "nothing printed for a refused tape");
    for part in parts {
        assert!(stderr.contains(part), "{part:?} missing in: {stderr}");
    }
    stderr
}

/// LEB128, as the binary form writes varints.
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

/// The one place `needle` occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    let hits: Vec<usize> =
        hay.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect();
    assert_eq!(hits.len(), 1, "occurrences of the needle");
    hits[0]
}

fn golden_json() -> Value {
    serde_json::from_slice(&std::fs::read(golden("three-launch.json")).unwrap()).unwrap()
}

fn write_json(dir: &Path, name: &str, doc: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    path
}

#[test]
fn what_is_not_a_regular_file_exits_2_at_once() {
    let dir = scratch("not-regular");
    let link = dir.join("zero.tape");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let fifo = dir.join("fifo.tape");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c_path` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let cases = [
        (Path::new("/dev/zero"), "a character device"),
        (Path::new("/dev/urandom"), "a character device"),
        (link.as_path(), "a character device"),
        (dir.as_path(), "a directory"),
        (fifo.as_path(), "a FIFO"),
    ];
    for (path, kind) in cases {
        let name = path.display().to_string();
        expect(&show(path), 2, &[&name, kind, "not a regular file"]);
        expect(&lower(path, &dir), 2, &[&name, kind, "not a regular file"]);
    }
    let missing = dir.join("missing.tape");
    expect(&show(&missing), 2, &[missing.to_str().unwrap(), "No such file"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_over_the_tape_limit_exits_1_before_it_is_read() {
    let dir = scratch("too-large");
    let limit = redline::tape::TAPE_FILE_LIMIT.bytes;
    assert_eq!(limit, 256 << 20);
    let big = dir.join("big.tape");
    // Sparse: over the limit without taking the space (or the time to read it).
    std::fs::File::create(&big).unwrap().set_len(limit + 1).unwrap();
    let size = format!("{} bytes", limit + 1);
    let over = format!("over the tape limit of {limit} bytes");
    expect(&show(&big), 1, &[big.to_str().unwrap(), &size, &over]);
    expect(&lower(&big, &dir), 1, &[big.to_str().unwrap(), &size, &over]);
    // Far over it: refused as quickly, not read whole first.
    std::fs::File::create(&big).unwrap().set_len(3 << 30).unwrap();
    expect(&show(&big), 1, &[&format!("{} bytes", 3u64 << 30), &over]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_grid_over_the_work_item_limit_is_refused_in_both_forms() {
    let dir = scratch("grid");
    let max = u32::MAX;
    let work_items = (u128::from(max).pow(3)).to_string();
    let grid = format!("grid_work_items [{max}, {max}, {max}]");
    let limit = format!("above the limit of {max}");

    let mut doc = golden_json();
    doc["launches"][1]["geometry"]["grid_work_items"] = serde_json::json!([max, max, max]);
    let json = write_json(&dir, "grid.json", &doc);
    let parts = ["launch 1: ", grid.as_str(), work_items.as_str(), limit.as_str()];
    expect(&show(&json), 1, &parts);
    expect(&lower(&json, &dir), 1, &parts);

    // The binary golden tape with launch 1's grid [1024, 1, 1] rewritten as [2^32 - 1; 3].
    let tape = Tape::from_binary(&std::fs::read(golden("three-launch.bin")).unwrap()).unwrap();
    let bin = tape.to_binary();
    let launch = &tape.launches()[1];
    let at = find(&bin, &launch.kernarg) + launch.kernarg.len();
    let old_grid: Vec<u8> = launch.geometry.grid_work_items.iter().flat_map(|&g| varint(u64::from(g))).collect();
    assert_eq!(&bin[at..at + old_grid.len()], &old_grid[..]);
    let new_grid: Vec<u8> = [max; 3].iter().flat_map(|&g| varint(u64::from(g))).collect();
    let patched = [&bin[..at], &new_grid[..], &bin[at + old_grid.len()..]].concat();
    let path = dir.join("grid.bin");
    std::fs::write(&path, patched).unwrap();
    expect(&show(&path), 1, &["invalid binary tape", "launch 1: ", &grid, &work_items, &limit]);
    expect(&lower(&path, &dir), 1, &["launch 1: ", &grid, &limit]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_effect_of_length_zero_is_refused() {
    let dir = scratch("effect");
    let mut doc = golden_json();
    doc["launches"][2]["effects"]["Known"][1]["len_bytes"] = 0.into();
    let json = write_json(&dir, "empty-effect.json", &doc);
    let parts = ["launch 2: effect 1: len_bytes is 0", "at least 1 byte"];
    expect(&show(&json), 1, &parts);
    expect(&lower(&json, &dir), 1, &parts);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn binary_decode_errors_name_the_field_and_the_byte_offset() {
    let dir = scratch("binary");
    let bin = std::fs::read(golden("three-launch.bin")).unwrap();
    let tape = Tape::from_binary(&bin).unwrap();

    // Cut inside launch 1's kernarg blob: the length prefix before it runs past the end.
    let blob = &tape.launches()[1].kernarg;
    let content = find(&bin, blob);
    let prefix_at = content - varint(blob.len() as u64).len();
    let cut = dir.join("cut.bin");
    std::fs::write(&cut, &bin[..content + 10]).unwrap();
    let length = format!("length {} at byte offset {prefix_at}", blob.len());
    let end = format!("runs past the end of the tape ({} bytes)", content + 10);
    let parts = [cut.to_str().unwrap(), "invalid binary tape", "launches[1].kernarg", length.as_str(), end.as_str()];
    expect(&show(&cut), 1, &parts);
    expect(&lower(&cut, &dir), 1, &parts);

    // An effects variant that does not exist: in a tape whose last launch has unknown effects
    // and which has no external names and no bindings, the variant is the third byte from the
    // end.
    let mut doc = golden_json();
    doc["launches"][2]["effects"] = "Unknown".into();
    doc["bindings"] = serde_json::json!([]);
    doc["external"] = serde_json::json!([]);
    let unknown: Tape = serde_json::from_value(doc).unwrap();
    let mut bad = unknown.to_binary();
    let variant_at = bad.len() - 3;
    assert_eq!(&bad[variant_at..], &[1, 0, 0], "Unknown, no external names, no bindings");
    bad[variant_at] = 9;
    let path = dir.join("variant.bin");
    std::fs::write(&path, &bad).unwrap();
    let variant = format!("launches[2].effects: variant 9 at byte offset {variant_at}");
    expect(&show(&path), 1, &[&variant, "0 (Known), 1 (Unknown)"]);

    // Bytes after the payload.
    let trailing = dir.join("trailing.bin");
    std::fs::write(&trailing, [&bin[..], b"xyz"].concat()).unwrap();
    expect(&show(&trailing), 1, &[&format!("3 bytes after the tape payload, from byte offset {}", bin.len())]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn json_errors_name_the_line_the_column_and_the_path() {
    let dir = scratch("json");
    // A string where a u32 goes, long enough that echoing it whole would flood the terminal.
    let long = "x".repeat(100_000);
    let mut doc = golden_json();
    doc["launches"][1]["geometry"]["grid_work_items"][1] = long.clone().into();
    let path = write_json(&dir, "type.json", &doc);
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text[..text.find(&long).unwrap()].matches('\n').count() + 1;
    let stderr = expect(
        &show(&path),
        1,
        &[
            &format!("at line {line} column "),
            "launches[1].geometry.grid_work_items[1]",
            "invalid type: string",
            "expected u32",
        ],
    );
    assert!(stderr.len() < 1000, "the offending string is cut: {} bytes", stderr.len());

    // An unknown field deep inside a launch.
    let mut doc = golden_json();
    doc["launches"][2]["lds"]["extra_bytes"] = 1.into();
    let path = write_json(&dir, "unknown.json", &doc);
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text[..text.find("\"extra_bytes\"").unwrap()].matches('\n').count() + 1;
    expect(
        &show(&path),
        1,
        &[&format!("at line {line} column "), "launches[2].lds.extra_bytes", "unknown field `extra_bytes`"],
    );

    // A bad hex blob, and a tape cut short.
    let mut doc = golden_json();
    doc["launches"][0]["kernarg"] = "0g".into();
    let path = write_json(&dir, "hex.json", &doc);
    expect(&show(&path), 1, &["launches[0].kernarg", "non-hex digit"]);
    let cut = dir.join("cut.json");
    let text = serde_json::to_string_pretty(&golden_json()).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let lines = text[..text.len() / 2].matches('\n').count() + 1;
    expect(&show(&cut), 1, &[&format!("at line {lines} column "), "launches[", "EOF while parsing"]);
    expect(&lower(&cut, &dir), 1, &["invalid JSON tape", &format!("at line {lines} column ")]);

    // Neither JSON nor the binary form.
    let noise = dir.join("noise.tape");
    std::fs::write(&noise, [0xA5u8; 64]).unwrap();
    expect(&show(&noise), 1, &["invalid JSON tape at line 1 column 1", "starts with RLTAPE"]);

    // A valid JSON tape whose binding names a launch the tape does not have.
    let mut doc = golden_json();
    doc["bindings"][1]["launch"] = 7.into();
    let path = write_json(&dir, "binding.json", &doc);
    expect(&show(&path), 1, &["invalid JSON tape", "binding `block_sum.grid` is owned by launch 7, the tape has 3"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_limit_and_the_exit_codes_are_in_the_help() {
    let help = redline(&["tape", "show", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("256 MiB") && text.contains("Exit codes"), "{text}");
    let help = redline(&["lower", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("at most 256 MiB"));
}
