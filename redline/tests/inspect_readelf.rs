//! `redline inspect --json` agrees with an independent reader, `llvm-readelf-19`, for every
//! checked-in code object: target, code-object version, every kernel's metadata and arguments
//! (from the NT_AMDGPU_METADATA note), and the descriptor fields (from the raw `.kd` bytes, found
//! through readelf's symbol table and program headers and decoded at the offsets of reference §6).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

fn objects() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/objects")
}

/// `llvm-readelf-19` JSON for `file`, or `None` (skip) when it is not installed outside CI.
fn readelf(file: &Path) -> Option<Value> {
    let run = Command::new("llvm-readelf-19")
        .args(["--file-header", "--notes", "--symbols", "--program-headers", "--elf-output-style=JSON"])
        .arg(file)
        .output();
    match run {
        Ok(out) if out.status.success() => {
            let v: Value = serde_json::from_slice(&out.stdout).expect("readelf JSON");
            Some(v[0].clone())
        }
        other => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and llvm-readelf-19 is not usable: {other:?}"
            );
            eprintln!("SKIPPED: llvm-readelf-19 is not available ({other:?})");
            None
        }
    }
}

fn inspect(file: &Path, target: Option<&str>) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_redline"));
    cmd.args(["inspect", "--json"]);
    if let Some(t) = target {
        cmd.args(["--target", t]);
    }
    let out = cmd.arg(file).output().expect("run redline");
    assert!(out.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("inspect JSON")
}

fn metadata_yaml(elf: &Value) -> Yaml {
    let notes = elf["NoteSections"][0]["NoteSection"]["Notes"].as_array().expect("notes");
    let text = notes.iter().find_map(|n| n["AMDGPU Metadata"].as_str()).expect("AMDGPU metadata note");
    YamlLoader::load_from_str(text).expect("metadata YAML").remove(0)
}

fn yaml_u64(y: &Yaml) -> u64 {
    match y {
        Yaml::Integer(i) => u64::try_from(*i).expect("non-negative"),
        other => panic!("expected an integer, found {other:?}"),
    }
}

/// The 64 `.kd` bytes of `symbol`: its value mapped to a file offset through the PT_LOAD segment
/// that contains it.
fn descriptor_bytes(elf: &Value, file_bytes: &[u8], symbol: &str) -> Vec<u8> {
    let sym = elf["Symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["Symbol"])
        .find(|s| s["Name"]["Name"] == symbol)
        .unwrap_or_else(|| panic!("symbol {symbol}"));
    assert_eq!(sym["Size"], 64, "{symbol} size");
    let va = sym["Value"].as_u64().unwrap();
    let load = elf["ProgramHeaders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["ProgramHeader"])
        .find(|p| {
            let start = p["VirtualAddress"].as_u64().unwrap();
            p["Type"]["Name"] == "PT_LOAD" && va >= start && va + 64 <= start + p["FileSize"].as_u64().unwrap()
        })
        .expect("PT_LOAD holding the descriptor");
    let offset =
        usize::try_from(va - load["VirtualAddress"].as_u64().unwrap() + load["Offset"].as_u64().unwrap()).unwrap();
    file_bytes[offset..offset + 64].to_vec()
}

fn le32(b: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(b[at..at + 4].try_into().unwrap()))
}

fn check(file: &Path, elf: &Value, json: &Value) {
    let name = file.display();
    // Target and version from the ELF header (reference §7: ABI version 2/3/4 = code object v4/v5/v6).
    let mach = elf["ElfHeader"]["Flags"]["Flags"][0]["Name"].as_str().unwrap();
    let target = mach.strip_prefix("EF_AMDGPU_MACH_AMDGCN_").unwrap().to_lowercase();
    assert_eq!(json["target"], target.as_str(), "{name}: target");
    let abi = elf["ElfHeader"]["Ident"]["ABIVersion"].as_u64().unwrap();
    assert_eq!(json["code_object_version"], abi + 2, "{name}: code object version");

    let meta = metadata_yaml(elf);
    let yk = meta["amdhsa.kernels"].as_vec().expect("amdhsa.kernels");
    let jk = json["kernels"].as_array().expect("kernels");
    assert_eq!(jk.len(), yk.len(), "{name}: kernel count");
    let bytes = std::fs::read(file).unwrap();
    for (y, j) in yk.iter().zip(jk) {
        let kname = y[".name"].as_str().unwrap();
        assert_eq!(j["name"], kname, "{name}");
        assert_eq!(j["symbol"], y[".symbol"].as_str().unwrap(), "{name} {kname}");
        for key in [
            "kernarg_segment_size",
            "kernarg_segment_align",
            "group_segment_fixed_size",
            "private_segment_fixed_size",
            "wavefront_size",
            "sgpr_count",
            "vgpr_count",
            "max_flat_workgroup_size",
        ] {
            assert_eq!(j[key], yaml_u64(&y[format!(".{key}").as_str()]), "{name} {kname} {key}");
        }
        let ya = y[".args"].as_vec().map_or(&[][..], Vec::as_slice);
        let ja = j["args"].as_array().unwrap();
        assert_eq!(ja.len(), ya.len(), "{name} {kname}: argument count");
        for (i, (ya, ja)) in ya.iter().zip(ja).enumerate() {
            assert_eq!(ja["offset"], yaml_u64(&ya[".offset"]), "{name} {kname} arg {i} offset");
            assert_eq!(ja["size"], yaml_u64(&ya[".size"]), "{name} {kname} arg {i} size");
            assert_eq!(ja["value_kind"], ya[".value_kind"].as_str().unwrap(), "{name} {kname} arg {i} kind");
        }
        // Descriptor fields at the reference §6 offsets of the raw .kd bytes.
        let kd = descriptor_bytes(elf, &bytes, y[".symbol"].as_str().unwrap());
        let d = &j["descriptor"];
        assert_eq!(d["group_segment_fixed_size"], le32(&kd, 0), "{name} {kname}");
        assert_eq!(d["private_segment_fixed_size"], le32(&kd, 4), "{name} {kname}");
        assert_eq!(d["kernarg_size"], le32(&kd, 8), "{name} {kname}");
        let entry = i64::from_le_bytes(kd[16..24].try_into().unwrap());
        assert_eq!(d["kernel_code_entry_byte_offset"], entry, "{name} {kname}");
        assert_eq!(d["compute_pgm_rsrc3"], le32(&kd, 44), "{name} {kname}");
        assert_eq!(d["compute_pgm_rsrc1"], le32(&kd, 48), "{name} {kname}");
        assert_eq!(d["compute_pgm_rsrc2"], le32(&kd, 52), "{name} {kname}");
        assert_eq!(d["kernel_code_properties"], u64::from(u16::from_le_bytes([kd[56], kd[57]])), "{name} {kname}");
    }
}

#[test]
fn inspect_agrees_with_llvm_readelf_for_every_checked_in_code_object() {
    let mut checked = 0;
    for artifact in kernels::artifacts().iter().filter(|a| a.path.ends_with(".co")) {
        let file = objects().join(artifact.path);
        let Some(elf) = readelf(&file) else { return };
        check(&file, &elf, &inspect(&file, None));
        checked += 1;
    }
    // 15 modules (ggml_quants, gemma, lfm2 and qwen35 the latest) and 4 single-object fixtures
    // per target of the target table.
    assert_eq!(checked, 19 * pm4_encoding::Target::ALL.len(), "every single code object of the manifest");
}

#[test]
fn bundle_entries_inspect_like_the_plain_code_objects() {
    // The bundle's entries are the same compiles as objects/<target>/fill.co (identical bytes, as
    // clang-offload-bundler-19 --unbundle shows), so inspection must be identical too.
    let bundle = objects().join("fixtures/fill.bundle");
    for target in ["gfx1030", "gfx1100", "gfx1151", "gfx1200", "gfx1201"] {
        let from_bundle = inspect(&bundle, Some(target));
        let plain = inspect(&objects().join(format!("{target}/fill.co")), None);
        assert_eq!(from_bundle["kernels"], plain["kernels"], "{target}");
        assert_eq!(from_bundle["target"], target);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_redline")).args(["inspect", "--json"]).arg(&bundle).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a multi-target bundle needs --target");
}

#[test]
fn bundle_entries_match_clang_offload_bundler() {
    let bundle = objects().join("fixtures/fill.bundle");
    let bytes = std::fs::read(&bundle).unwrap();
    let dir = std::env::temp_dir().join(format!("redline-unbundle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for target in pm4_encoding::Target::ALL {
        let out = dir.join(format!("{target}.co"));
        let run = Command::new("clang-offload-bundler-19")
            .args(["--unbundle", "--type=o"])
            .arg(format!("--input={}", bundle.display()))
            .arg(format!("--targets=hipv4-amdgcn-amd-amdhsa--{target}"))
            .arg(format!("--output={}", out.display()))
            .status();
        match run {
            Ok(s) if s.success() => {}
            other => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "CI=true and clang-offload-bundler-19 failed: {other:?}"
                );
                eprintln!("SKIPPED: clang-offload-bundler-19 is not available ({other:?})");
                return;
            }
        }
        let expected = std::fs::read(&out).unwrap();
        let ours = kernarg_abi::bundle::select(&bytes, target).expect("entry for target");
        assert_eq!(ours, &expected[..], "{target}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
