//! `redline tape show` on the golden tapes of tape-core: identity, launches, effects, boundaries
//! and bindings, from the JSON and the binary form alike; invalid tapes exit 1.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tape-core/tests/golden").join(name)
}

fn show(args: &[&str], file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["tape", "show"])
        .args(args)
        .arg(file)
        .output()
        .expect("run redline")
}

#[test]
fn json_and_binary_tapes_show_the_same_report() {
    let a = show(&["--json"], &golden("three-launch.json"));
    let b = show(&["--json"], &golden("three-launch.bin"));
    assert!(
        a.status.success() && b.status.success(),
        "{}{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    assert_eq!(a.stdout, b.stdout);
    let doc: Value = serde_json::from_slice(&a.stdout).unwrap();
    // The golden sequence hash pinned by tape-core's tests/identity.rs.
    assert_eq!(doc["identity"]["sequence_hash"], "bb025177836b570969e4992acb047ebdf7b1579f209fdc9e6957d28f3a203970");
    assert_eq!(doc["identity"]["dispatch_count"], 3);
    assert_eq!(doc["identity"]["external_launches"], 1);
    assert_eq!(doc["identity"]["compute_launches"], 4);
    let symbols: Vec<&str> =
        doc["launches"].as_array().unwrap().iter().map(|l| l["symbol"].as_str().unwrap()).collect();
    assert_eq!(symbols, ["fill", "axpy", "block_sum"]);
    // fill writes allocation 7, axpy reads it (RAW), block_sum reads what axpy wrote (RAW).
    assert_eq!(doc["boundaries"], serde_json::json!([1, 2]));
    let edges: Vec<(u64, u64)> = doc["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["earlier"].as_u64().unwrap(), e["later"].as_u64().unwrap()))
        .collect();
    assert_eq!(edges, [(0, 1), (1, 2)]);
    assert_eq!(doc["launches"][1]["effects"][0]["access"], "ReadWrite");
    let bindings = doc["bindings"].as_array().unwrap();
    assert_eq!(bindings.len(), 2);
    assert_eq!(bindings[0]["kind"], "kernarg_u32");
    assert_eq!(bindings[1]["kind"], "grid_axis");
    assert_eq!(doc["external"][0]["name"], "token_embedding");
}

#[test]
fn text_report_names_every_part() {
    let out = show(&[], &golden("three-launch.bin"));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "3 dispatches, 3 unique kernels",
        "sequence hash bb025177836b",
        "| #1    axpy",
        "ReadWrite allocation 3 bytes 0..4096",
        "boundaries (wait before launch): [1, 2]",
        "#2 waits for #1 (ReadAfterWrite)",
        "block_sum.n (launch #2): kernarg u32 @16 = position + 1007",
        "token_embedding x1",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn invalid_tapes_exit_1() {
    let dir = std::env::temp_dir().join(format!("redline-tape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bin = std::fs::read(golden("three-launch.bin")).unwrap();
    bin.truncate(bin.len() - 10);
    let cut = dir.join("cut.bin");
    std::fs::write(&cut, &bin).unwrap();
    let out = show(&[], &cut);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid binary tape"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A JSON tape whose binding points at a launch that does not exist.
    let mut doc: Value = serde_json::from_slice(&std::fs::read(golden("three-launch.json")).unwrap()).unwrap();
    doc["bindings"][0]["launch"] = 9.into();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = show(&["--json"], &bad);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid JSON tape"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}
