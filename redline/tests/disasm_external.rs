//! `redline disasm` decodes command streams written by an independent PM4 producer (tinygrad's
//! AMD compute queue, see `tests/data/external/README.md`): every file decodes to the end, the
//! opcode counts match what the producer emitted, and every COMPUTE_* register the producer names
//! is named identically by our map for that target.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn external_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/external")
}

/// `# packets: 17 (WAIT_REG_MEM x2, ACQUIRE_MEM x2, ...)` → opcode → count.
fn expected_counts(text: &str) -> (usize, BTreeMap<String, usize>) {
    let line = text.lines().find_map(|l| l.strip_prefix("# dwords: ")).expect("packets header line");
    let (_, rest) = line.split_once("packets: ").expect("packets: field");
    let (total, list) = rest.split_once(" (").expect("packet list");
    let mut counts = BTreeMap::new();
    for entry in list.trim_end_matches(')').split(", ") {
        let (name, n) = entry.rsplit_once(" x").expect("NAME xN");
        counts.insert(name.to_owned(), n.parse().expect("count"));
    }
    (total.parse().expect("total"), counts)
}

/// `#   [30, 34) PACKET3 SET_SH_REG offset=0x20C: COMPUTE_PGM_LO@0x2E0C, ...` → (dword, name)
/// for the COMPUTE_* registers the producer names.
fn producer_register_names(text: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.starts_with('#') && l.contains("PACKET3 SET_SH_REG")) {
        let Some((_, regs)) = line.split_once(": ") else { continue };
        for reg in regs.split(", ") {
            let (name, at) = reg.split_once('@').expect("NAME@0xDWORD");
            if name.starts_with("COMPUTE_") {
                let dword = u64::from_str_radix(at.trim_start_matches("0x"), 16).expect("dword");
                out.push((dword, name.to_owned()));
            }
        }
    }
    out
}

fn disasm(target: &str, file: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["disasm", "--arch", target, "--json"])
        .arg(file)
        .output()
        .expect("run redline");
    assert!(out.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect()
}

#[test]
fn tinygrad_streams_decode_with_matching_packets_and_names() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(external_dir())
        .expect("external data")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hex"))
        .collect();
    files.sort();
    assert!(files.len() >= 56, "expected the captured streams, found {}", files.len());
    let mut named = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let target = stem.split('-').nth(1).expect("tinygrad-<target>-<what>");
        let packets = disasm(target, file);
        let (total, counts) = expected_counts(&text);
        assert_eq!(packets.len(), total, "{stem}: packet count");
        let mut seen = BTreeMap::new();
        for p in &packets {
            *seen.entry(p["opcode"].as_str().expect("type-3 packet").to_owned()).or_insert(0) += 1;
        }
        assert_eq!(seen, counts, "{stem}: opcodes");
        let ours: BTreeMap<u64, String> = packets
            .iter()
            .flat_map(|p| p["items"].as_array().unwrap().iter())
            .filter_map(|i| Some((i.get("dword")?.as_u64()?, i.get("register")?.as_str()?.to_owned())))
            .collect();
        for (dword, name) in producer_register_names(&text) {
            assert_eq!(ours.get(&dword), Some(&name), "{stem}: register at {dword:#x}");
            named += 1;
        }
    }
    // Every COMPUTE_* register the producer annotated in the SET_SH_REG lines of the headers.
    assert_eq!(named, 298, "producer-named registers checked");
}
