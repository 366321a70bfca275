//! `redline disasm` names every COMPUTE_* register of the reference table, for every target, when
//! given SET_SH_REG packets that write them; registers absent on a family are never named there.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn reference() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../reference/amd-reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reference table")).expect("reference JSON")
}

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).expect("hex in reference")
}

/// One SET_SH_REG per register: header (reference §4: count = 1 value), offset, a value that
/// identifies the register (its own dword).
fn stream_for(entries: &[&Value]) -> String {
    let mut out = String::new();
    for e in entries {
        let sh_rel = hex(e["sh_rel"].as_str().unwrap());
        let dword = hex(e["dword"].as_str().unwrap());
        out.push_str(&format!("0xC0017600 {sh_rel:#010x} {dword:#010x}\n"));
    }
    out
}

fn disasm(target: &str, text: &str) -> Vec<Value> {
    let dir = std::env::temp_dir().join(format!("redline-disasm-regs-{}-{target}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("stream.hex");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["disasm", "--arch", target, "--json"])
        .arg(&file)
        .output()
        .expect("run redline");
    assert!(out.status.success(), "{target}: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect()
}

#[test]
fn names_every_reference_register_for_every_target() {
    let reference = reference();
    for (target, family) in
        [("gfx1030", "gfx10_3"), ("gfx1100", "gfx11"), ("gfx1151", "gfx11"), ("gfx1200", "gfx12"), ("gfx1201", "gfx12")]
    {
        let entries: Vec<&Value> = reference["registers"][family].as_array().unwrap().iter().collect();
        let present: Vec<&Value> = entries.iter().copied().filter(|e| e["present"] == true).collect();
        let packets = disasm(target, &stream_for(&present));
        assert_eq!(packets.len(), present.len(), "{target}");
        for (entry, packet) in present.iter().zip(&packets) {
            let name = entry["name"].as_str().unwrap();
            let dword = hex(entry["dword"].as_str().unwrap());
            assert_eq!(packet["opcode"], "SET_SH_REG");
            let regs: Vec<&Value> =
                packet["items"].as_array().unwrap().iter().filter(|i| i.get("register").is_some()).collect();
            assert_eq!(regs.len(), 1, "{target} {name}: {packet}");
            assert_eq!(regs[0]["register"], name, "{target}: dword {dword:#x}");
            assert_eq!(regs[0]["dword"], dword, "{target} {name}");
            assert_eq!(regs[0]["value"], dword, "{target} {name}");
        }
        // Absent registers: writing the dword a register holds on another family must not be
        // named as the absent register.
        for entry in entries.iter().filter(|e| e["present"] == false) {
            let name = entry["name"].as_str().unwrap();
            for other in ["gfx10_3", "gfx11", "gfx12"] {
                let Some(there) = reference["registers"][other]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["name"] == name && e["present"] == true)
                else {
                    continue;
                };
                let packets = disasm(target, &stream_for(&[there]));
                let reg = packets[0]["items"].as_array().unwrap().iter().find(|i| i.get("register").is_some()).unwrap();
                assert_ne!(reg["register"], name, "{target}: {name} is absent on {family}");
            }
        }
    }
}
