//! `redline disasm` end to end: formats, AQL packets, and undecodable input reported at the place
//! it stops with exit code 1.

use std::path::PathBuf;
use std::process::{Command, Output};

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("redline-cli-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn redline(args: &[&str], file: &PathBuf) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline")).args(args).arg(file).output().expect("run redline")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A ROCr-style PM4-IB packet (reference §5): header 0x1400 (VENDOR_SPECIFIC, system acquire and
/// release), AmdFormat 1, INDIRECT_BUFFER to 0x7F12_3456_7800 of 64 dwords, dw_cnt_remain 10,
/// completion signal 0x1234.
fn pm4_ib_packet() -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&0x1400u16.to_le_bytes());
    p.extend_from_slice(&1u16.to_le_bytes());
    for w in [0xC002_3F00u32, 0x3456_7800, 0x0000_7F12, 0x0080_0040, 0xA] {
        p.extend_from_slice(&w.to_le_bytes());
    }
    p.extend_from_slice(&[0; 32]);
    p.extend_from_slice(&0x1234u64.to_le_bytes());
    assert_eq!(p.len(), 64);
    p
}

#[test]
fn binary_and_hex_inputs_agree() {
    let s = Scratch::new("formats");
    let words = [0xC001_7600u32, 0x20C, 0x0012_3400, 0xC003_1502, 4, 2, 1, 0x8045];
    let bin: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let hex = "# a launch\nc0017600 0x20C,0x00123400\n0XC0031502 4 2 1 8045\n";
    let a = redline(&["disasm", "--arch", "gfx1100"], &s.file("s.bin", &bin));
    let b = redline(&["disasm", "--arch", "gfx1100", "--format", "hex"], &s.file("s.dat", hex.as_bytes()));
    assert!(a.status.success() && b.status.success(), "{}{}", stderr(&a), stderr(&b));
    assert_eq!(stdout(&a), stdout(&b));
    let text = stdout(&a);
    assert!(text.contains("SET_SH_REG"), "{text}");
    assert!(text.contains("COMPUTE_PGM_LO [0x2e0c] = 0x00123400"), "{text}");
    assert!(text.contains("DISPATCH_DIRECT"), "{text}");
    assert!(text.contains("CS_W32_EN [15] = 1"), "{text}");
}

#[test]
fn stops_at_the_undecodable_dword_with_exit_1() {
    let s = Scratch::new("stop");
    // A complete NOP, then a DISPATCH_DIRECT whose count runs past the end.
    let file = s.file("cut.hex", b"c0001000 0 c0031502 1 1\n");
    let out = redline(&["disasm", "--json"], &file);
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["opcode"], "NOP");
    assert_eq!(lines[1]["offset"], 2);
    assert!(lines[1]["error"].as_str().unwrap().contains("announces 4 body dwords"));
    assert!(stderr(&out).contains("byte offset 0x8"), "{}", stderr(&out));
}

#[test]
fn bad_hex_and_trailing_bytes_are_reported_with_exit_1() {
    let s = Scratch::new("bad");
    let out = redline(&["disasm"], &s.file("bad.hex", b"c0001000 0\n12 0xZZ\n"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("line 2, column 4"), "{}", stderr(&out));
    let out = redline(&["disasm"], &s.file("odd.bin", &[0, 0, 0, 0x80, 7]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("TYPE2"));
    assert!(stderr(&out).contains("1 trailing bytes"), "{}", stderr(&out));
}

#[test]
fn usage_and_io_errors_exit_2() {
    let s = Scratch::new("usage");
    let file = s.file("x.hex", b"80000000");
    assert_eq!(redline(&["disasm", "--arch", "gfx900"], &file).status.code(), Some(2));
    let missing = s.0.join("missing.bin");
    let out = redline(&["disasm"], &missing);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
}

#[test]
fn aql_pm4_ib_packet_shows_the_carried_indirect_buffer() {
    let s = Scratch::new("aql");
    let mut bytes = pm4_ib_packet();
    let file = s.file("q.aql", &bytes);
    let out = redline(&["disasm", "--aql", "--json"], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["type"], "VENDOR_SPECIFIC/AMD_PM4_IB");
    assert_eq!(v["ib_jump_cmd"]["opcode"], "INDIRECT_BUFFER");
    let items = v["ib_jump_cmd"]["items"].as_array().unwrap();
    assert_eq!(items[0]["value"], 0x7F12_3456_7800u64);
    assert_eq!(items[1]["fields"]["IB_SIZE"], 64);
    assert_eq!(items[1]["fields"]["VALID"], 1);

    // A fence scope of 3 is invalid: the second packet stops decoding at byte 0x40.
    let mut bad = pm4_ib_packet();
    bad[1] |= 0x06; // header bits [10:9] = 3
    bytes.extend_from_slice(&bad);
    let out = redline(&["disasm", "--aql"], &s.file("bad.aql", &bytes));
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("INDIRECT_BUFFER"));
    assert!(stderr(&out).contains("byte 0x40"), "{}", stderr(&out));
}

#[test]
fn without_arch_only_what_every_family_agrees_on_is_named() {
    let s = Scratch::new("consensus");
    // DISPATCH_DIRECT with initiator bit 12 set (RESERVED on gfx10.3/gfx11, PING_PONG_EN on gfx12;
    // reference §3), then SET_SH_REG of dword 0x2E2B (COMPUTE_RELAUNCH on gfx10.3,
    // COMPUTE_STATIC_THREAD_MGMT_SE4 on gfx11/gfx12; reference §9) and of 0x2E0C (COMPUTE_PGM_LO
    // everywhere).
    let file = s.file("c.hex", b"c0031502 1 1 1 9045\nc0017600 22b 5\nc0017600 20c 6\n");
    let plain = stdout(&redline(&["disasm"], &file));
    assert!(!plain.contains("PING_PONG_EN") && !plain.contains("RESERVED"), "{plain}");
    assert!(plain.contains("(bits outside named fields: 0x00001000)"), "{plain}");
    assert!(plain.contains("(unnamed register) [0x2e2b]"), "{plain}");
    assert!(plain.contains("COMPUTE_PGM_LO [0x2e0c]"), "{plain}");
    let gfx12 = stdout(&redline(&["disasm", "--arch", "gfx1201"], &file));
    assert!(gfx12.contains("PING_PONG_EN [12] = 1"), "{gfx12}");
    assert!(gfx12.contains("COMPUTE_STATIC_THREAD_MGMT_SE4 [0x2e2b]"), "{gfx12}");
    let gfx10 = stdout(&redline(&["disasm", "--arch", "gfx1030"], &file));
    assert!(gfx10.contains("COMPUTE_RELAUNCH [0x2e2b]"), "{gfx10}");
}

#[test]
fn symbolic_field_values_are_shown_once_inside_their_word() {
    let s = Scratch::new("symbols");
    // EVENT_WRITE CS_PARTIAL_FLUSH: body 0x00000407 (reference §4 EVENT_WRITE, derived).
    let out = redline(&["disasm"], &s.file("ev.hex", b"c0004600 00000407\n"));
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("EVENT_TYPE [5:0] = 7 (CS_PARTIAL_FLUSH)"), "{text}");
    assert_eq!(text.matches("CS_PARTIAL_FLUSH").count(), 1, "{text}");
    // The JSON form keeps the structured enum item.
    let out = redline(&["disasm", "--json"], &s.file("ev2.hex", b"c0004600 00000407\n"));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert!(v["items"].as_array().unwrap().iter().any(|i| i["symbol"] == "CS_PARTIAL_FLUSH"), "{v}");
}

/// A type-3 NOP (opcode 0x10) with `body` dwords: header `3 << 30 | (body - 1) << 16 | 0x10 << 8`.
fn nop(body: u32, fill: u32) -> Vec<u32> {
    let mut p = vec![0xC000_0000 | ((body - 1) << 16) | (0x10 << 8)];
    p.extend(std::iter::repeat_n(fill, body as usize));
    p
}

#[test]
fn long_streams_decode_across_windows_with_offsets_from_the_start() {
    let s = Scratch::new("long");
    // NOPs of lengths up to 16,383 body dwords (a count of 0x3FFF is the one-dword NOP), over 200,000
    // dwords: packets straddle the reader's window boundaries; the last one is cut off.
    let mut words = Vec::new();
    let mut headers = Vec::new();
    for body in [1u32, 7, 300, 4099, 16383].into_iter().cycle().take(50) {
        headers.push(words.len());
        words.extend(nop(body, body));
    }
    assert!(words.len() > 200_000);
    let good = words.len();
    words.extend(&nop(300, 7)[..100]);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let out = redline(&["disasm", "--json"], &s.file("long.bin", &bytes));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), headers.len() + 1);
    for (line, &at) in lines.iter().zip(&headers) {
        assert_eq!(line["offset"].as_u64(), Some(at as u64), "{line}");
    }
    let last = lines.last().unwrap();
    assert_eq!(last["offset"].as_u64(), Some(good as u64), "{last}");
    assert!(last["error"].as_str().unwrap().contains("announces 300 body dwords, only 99 remain"), "{last}");
    assert!(stderr(&out).contains(&format!("byte offset {:#x}", good * 4)), "{}", stderr(&out));
}

#[test]
fn a_huge_hex_token_is_named_by_a_prefix_and_its_length() {
    let s = Scratch::new("token");
    let mut text = b"c0001000 0\n".to_vec();
    text.extend(std::iter::repeat_n(b'f', 10 << 20));
    let out = redline(&["disasm"], &s.file("token.hex", &text));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("line 2, column 1: the 10485760-byte token starting \"ffffffff"), "{err}");
    assert!(err.len() < 300, "the token is not echoed: {} bytes of stderr", err.len());
}

#[test]
fn long_aql_streams_number_every_packet() {
    let s = Scratch::new("long-aql");
    // 5,000 packets (more than one read window) and 3 trailing bytes.
    let mut bytes: Vec<u8> = std::iter::repeat_n(pm4_ib_packet(), 5000).flatten().collect();
    bytes.extend([1, 2, 3]);
    let out = redline(&["disasm", "--aql", "--json"], &s.file("long.aql", &bytes));
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5001);
    assert_eq!(lines[4999]["packet"], 4999);
    assert_eq!(lines[4999]["byte_offset"], 4999 * 64);
    assert_eq!(lines[5000]["byte_offset"], 5000 * 64);
    assert!(stderr(&out).contains("AQL packet 5000): 3 trailing bytes"), "{}", stderr(&out));
}

/// A stream that another process keeps appending to while `disasm` reads it: the bytes past the
/// size the file had when it was opened are not decoded, and the command exits 1 saying the
/// file grew, naming it. (The appends start before the command and go on until it ends, so the
/// file grows while it is read whatever the scheduling.)
#[test]
fn a_file_that_grows_while_it_is_read_stops_with_exit_1() {
    let s = Scratch::new("grows");
    let words: Vec<u32> = (0..64).flat_map(|_| nop(16383, 0)).collect();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let path = s.file("grows.bin", &bytes);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let appender = {
        let (path, stop) = (path.clone(), std::sync::Arc::clone(&stop));
        std::thread::spawn(move || {
            use std::io::Write as _;
            let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            // Whole NOP headers of one dword each (a count of 0x3FFF): a stream that decodes.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                file.write_all(&0xC03F_1000u32.to_le_bytes()).unwrap();
            }
        })
    };
    let out = redline(&["disasm", "--json"], &path);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    appender.join().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("grew while it was read") && err.contains(path.to_str().unwrap()), "{err}");
}
