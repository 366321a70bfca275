//! `redline sim run DIR` on bad bundles: 1 for an invalid bundle (the manifest or a file's
//! content, a file it names that the bundle lacks), 2 for usage and I/O (DIR or its manifest
//! missing, a file unreadable or not a regular file), every
//! message naming the manifest's JSON path or the file and the offending value. The bundles are
//! written by `redline lower --example window` (kernarg and DISPATCH_DIRECT patch sites) and then
//! broken one way each; a property test mutates the manifest and the region files at random and
//! checks that the result is classified by the same rule, in process and through the binary.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::Value;
use soft_device::bundle::Bundle;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-sim-bad-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A valid bundle written once per test process.
fn template() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("template");
        let out =
            common::redline(&["lower", "--example", "window", "--arch", "gfx1100", "--out", dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        dir
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A fresh copy of the template.
fn bundle(name: &str) -> PathBuf {
    let dir = scratch(name);
    copy_dir(template(), &dir);
    dir
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn edit(dir: &Path, f: impl FnOnce(&mut Value)) {
    let mut m = manifest(dir);
    f(&mut m);
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

fn hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn sim_run(dir: &Path) -> Output {
    common::redline(&["sim", "run", dir.to_str().unwrap()])
}

/// Runs `redline sim run DIR` and checks the exit code and that stderr holds every needle.
fn expect(dir: &Path, code: i32, needles: &[&str]) {
    let out = sim_run(dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{}: {stderr}", dir.display());
    for needle in needles {
        assert!(stderr.contains(needle), "{}: expected {needle:?} in: {stderr}", dir.display());
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The index of the first region with `role`.
fn region_of_role(m: &Value, role: &str) -> usize {
    m["regions"].as_array().unwrap().iter().position(|r| r["role"] == role).unwrap()
}

#[test]
fn the_template_runs_clean() {
    let dir = bundle("clean");
    expect(&dir, 0, &[]);
}

// 2. Files: usage and I/O exit 2, invalid content exit 1.

#[test]
fn a_missing_or_non_directory_dir_exits_2() {
    let dir = scratch("no-such-dir");
    expect(&dir, 2, &["cannot open the bundle directory", "no-such-dir"]);
    let file = scratch("a-file");
    std::fs::write(&file, b"{}").unwrap();
    let out = sim_run(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("a-file is a regular file, not a bundle directory"), "{stderr}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn a_missing_manifest_exits_2_and_one_that_is_a_directory_too() {
    let dir = bundle("manifest-missing");
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    expect(&dir, 2, &["manifest.json: cannot read", "No such file"]);
    let dir = bundle("manifest-dir");
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    std::fs::create_dir(dir.join("manifest.json")).unwrap();
    expect(&dir, 2, &["manifest.json is a directory, not a regular file"]);
}

#[test]
fn a_manifest_over_16_mib_exits_1_before_it_is_read() {
    let dir = bundle("manifest-large");
    std::fs::File::create(dir.join("manifest.json")).unwrap().set_len((16 << 20) + 1).unwrap();
    expect(&dir, 1, &["manifest.json", "16777217 bytes", "manifest limit of 16777216 bytes"]);
}

#[test]
fn a_manifest_that_does_not_parse_exits_1_naming_line_and_column() {
    let dir = bundle("manifest-parse");
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    std::fs::write(dir.join("manifest.json"), &text[..text.len() / 2]).unwrap();
    expect(&dir, 1, &["manifest.json: line ", ", column "]);
    let dir = bundle("manifest-role");
    edit(&dir, |m| m["regions"][0]["role"] = "weights".into());
    expect(&dir, 1, &["manifest.json: line ", "unknown variant `weights`", "`kernargs`"]);
    let dir = bundle("manifest-format");
    edit(&dir, |m| m["format"] = "redline-ib-bundle/9".into());
    expect(&dir, 1, &["manifest.json: format: \"redline-ib-bundle/9\" is not the supported format"]);
}

#[test]
fn a_region_file_linked_to_dev_zero_exits_2_before_reading() {
    let dir = bundle("dev-zero");
    std::fs::remove_file(dir.join("regions/alloc6.bin")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("regions/alloc6.bin")).unwrap();
    expect(&dir, 2, &["regions[0].file", "regions/alloc6.bin is a character device, not a regular file"]);
}

#[test]
fn a_region_file_linked_outside_the_bundle_exits_1() {
    let dir = bundle("outside-link");
    let outside = scratch("outside-target.bin");
    std::fs::copy(dir.join("regions/alloc6.bin"), &outside).unwrap();
    std::fs::remove_file(dir.join("regions/alloc6.bin")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("regions/alloc6.bin")).unwrap();
    expect(&dir, 1, &["regions[0].file", "regions/alloc6.bin resolves to", "outside the bundle directory"]);
    let _ = std::fs::remove_file(&outside);
}

#[test]
fn a_path_leaving_the_bundle_exits_1() {
    let dir = bundle("dotdot");
    edit(&dir, |m| m["regions"][1]["file"] = "../alloc7.bin".into());
    expect(&dir, 1, &["manifest.json: regions[1].file: \"../alloc7.bin\" is not a relative path inside the bundle"]);
    let dir = bundle("absolute");
    edit(&dir, |m| m["code_objects"][0]["file"] = "/etc/passwd".into());
    expect(&dir, 1, &["code_objects[0].file: \"/etc/passwd\" is not a relative path inside the bundle"]);
    let dir = bundle("long-name");
    edit(&dir, |m| m["regions"][1]["file"] = "r".repeat(100_000).into());
    let out = sim_run(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("regions[1].file") && stderr.contains("(100000 bytes) is longer than the limit of 1024 bytes")
    );
    assert!(stderr.len() < 500, "the name is cut: {} bytes", stderr.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_region_file_exits_1_and_a_directory_in_its_place_2() {
    let dir = bundle("region-missing");
    std::fs::remove_file(dir.join("regions/alloc7.bin")).unwrap();
    expect(&dir, 1, &["regions[1].file: cannot read", "regions/alloc7.bin", "No such file"]);
    let dir = bundle("region-dir");
    std::fs::remove_file(dir.join("regions/alloc7.bin")).unwrap();
    std::fs::create_dir(dir.join("regions/alloc7.bin")).unwrap();
    expect(&dir, 2, &["regions[1].file", "regions/alloc7.bin is a directory, not a regular file"]);
}

#[test]
fn a_region_file_of_another_size_than_declared_exits_1_naming_both() {
    // Declared larger than its file (before: passed and showed up only as an output mismatch).
    let dir = bundle("region-declared-larger");
    edit(&dir, |m| m["regions"][0]["size"] = 2560.into());
    expect(
        &dir,
        1,
        &["regions[0].file \"regions/alloc6.bin\"", "the file is 1280 bytes", "region \"alloc6\" is 2560 bytes"],
    );
    // A file shorter than the region.
    let dir = bundle("region-file-short");
    std::fs::write(dir.join("regions/alloc6.bin"), [0u8; 1000]).unwrap();
    expect(
        &dir,
        1,
        &["regions[0].file \"regions/alloc6.bin\"", "the file is 1000 bytes", "region \"alloc6\" is 1280 bytes"],
    );
    // A file longer than the region.
    let dir = bundle("region-file-long");
    std::fs::write(dir.join("regions/alloc6.bin"), [0u8; 5000]).unwrap();
    expect(
        &dir,
        1,
        &["regions[0].file \"regions/alloc6.bin\"", "the file is 5000 bytes", "region \"alloc6\" is 1280 bytes"],
    );
}

#[test]
fn a_code_object_over_256_mib_exits_1_before_it_is_read() {
    let dir = bundle("code-large");
    let m = manifest(&dir);
    let file = m["code_objects"][1]["file"].as_str().unwrap().to_owned();
    std::fs::File::create(dir.join(&file)).unwrap().set_len((256 << 20) + 1).unwrap();
    expect(&dir, 1, &["code_objects[1].file", &file, "268435457 bytes", "code object limit of 268435456 bytes"]);
}

#[test]
fn ib_and_aql_files_of_the_wrong_size_exit_1() {
    let dir = bundle("ib-short");
    let ib = std::fs::read(dir.join("ib.bin")).unwrap();
    std::fs::write(dir.join("ib.bin"), &ib[..ib.len() - 4]).unwrap();
    let declared = ib.len().to_string();
    let actual = format!("the file is {} bytes", ib.len() - 4);
    expect(&dir, 1, &["ib.file \"ib.bin\"", &actual, "ib.size_dwords * 4 is", &declared]);
    let dir = bundle("aql-long");
    let mut aql = std::fs::read(dir.join("aql.bin")).unwrap();
    aql.extend([0u8; 64]);
    std::fs::write(dir.join("aql.bin"), &aql).unwrap();
    expect(&dir, 1, &["aql.file \"aql.bin\"", "the file is 128 bytes", "aql.packets * 64 is 64 bytes"]);
}

#[test]
fn a_missing_expected_file_exits_1_and_so_does_one_of_the_wrong_size() {
    let dir = bundle("expected-missing");
    std::fs::remove_file(dir.join("expected/alloc8.bin")).unwrap();
    expect(&dir, 1, &["expected[2].file: cannot read", "expected/alloc8.bin", "No such file"]);
    let dir = bundle("expected-short");
    std::fs::write(dir.join("expected/alloc8.bin"), [0u8; 16]).unwrap();
    expect(
        &dir,
        1,
        &["expected[2].file \"expected/alloc8.bin\"", "the file is 16 bytes", "region \"alloc8\" is 65792 bytes"],
    );
}

// 3. What the manifest declares, checked before the run.

#[test]
fn a_kernarg_patch_site_outside_every_region_exits_1() {
    let dir = bundle("site-nowhere");
    edit(&dir, |m| m["patch_sites"][0]["va"] = "0x10000".into());
    expect(&dir, 1, &["manifest.json: patch_sites[0].va", "0x10000 lies in no region", "inside a kernargs region"]);
    let dir = bundle("site-in-input");
    edit(&dir, |m| m["patch_sites"][1]["va"] = m["regions"][0]["va"].clone());
    expect(&dir, 1, &["patch_sites[1].va", "0x7f000041a000 lies in regions[0] (\"alloc6\") of role input"]);
    let dir = bundle("site-in-ib");
    edit(&dir, |m| m["patch_sites"][0]["va"] = m["ib"]["va"].clone());
    expect(
        &dir,
        1,
        &[
            "patch_sites[0].va",
            "0x7e0000a01000 lies in the IB: a kernarg_u32 site's 4 bytes lie inside a kernargs region",
        ],
    );
    let dir = bundle("site-misaligned");
    edit(&dir, |m| m["patch_sites"][0]["va"] = "0x7e0000a0018e".into());
    expect(&dir, 1, &["patch_sites[0].va", "0x7e0000a0018e is not dword aligned"]);
}

#[test]
fn a_patch_rule_outside_the_documented_forms_exits_1_listing_them() {
    let dir = bundle("rule-banana");
    edit(&dir, |m| m["patch_sites"][2]["rule"] = "position ** banana".into());
    expect(
        &dir,
        1,
        &[
            "manifest.json: patch_sites[2].rule",
            "\"position ** banana\" is not a rule",
            "expected the end at offset 9, found '*'",
            "`position + A`",
            "`ceil((position + A) / D)`",
            "`ceil((position + A) / D) * W`",
        ],
    );
    let dir = bundle("rule-zero");
    edit(&dir, |m| m["patch_sites"][3]["rule"] = "ceil((position + 1) / 0)".into());
    expect(&dir, 1, &["patch_sites[3].rule", "the divisor D at offset 22 is 0, must be at least 1"]);
}

#[test]
fn a_dispatch_dim_site_on_a_packet_header_or_another_dword_exits_1() {
    let m = manifest(template());
    let site = hex(&m["patch_sites"][2]["va"]);
    let ib = hex(&m["ib"]["va"]);
    let dword = (site - ib) / 4;
    assert_eq!(m["patch_sites"][2]["kind"], "dispatch_dim");
    // DIM_X is body dword 1: the dword before it is the DISPATCH_DIRECT header.
    let dir = bundle("dim-on-header");
    edit(&dir, |m| m["patch_sites"][2]["va"] = format!("{:#x}", site - 4).into());
    let header = format!(
        "is dword {} of the IB \"ib.bin\", the header of the DISPATCH_DIRECT packet at IB dword {}",
        dword - 1,
        dword - 1
    );
    expect(&dir, 1, &["patch_sites[2].va", &format!("{:#x}", site - 4), &header, "DIM_X, DIM_Y or DIM_Z"]);
    // Dword 4 of DISPATCH_DIRECT is its initiator, not a dimension.
    let dir = bundle("dim-on-initiator");
    edit(&dir, |m| m["patch_sites"][2]["va"] = format!("{:#x}", site + 12).into());
    expect(&dir, 1, &["patch_sites[2].va", "body dword 4 of the DISPATCH_DIRECT packet"]);
    // The first packet of the IB is no DISPATCH_DIRECT.
    let dir = bundle("dim-on-other");
    edit(&dir, |m| m["patch_sites"][2]["va"] = format!("{:#x}", ib + 4).into());
    expect(&dir, 1, &["patch_sites[2].va", "is dword 1 of the IB \"ib.bin\", body dword 1 of the"]);
    let dir = bundle("dim-outside");
    edit(&dir, |m| m["patch_sites"][2]["va"] = m["regions"][0]["va"].clone());
    expect(&dir, 1, &["patch_sites[2].va", "0x7f000041a000 lies outside the IB"]);
}

#[test]
fn an_unknown_dtype_exits_1_and_so_does_a_size_that_is_no_whole_number_of_it() {
    let dir = bundle("dtype-unknown");
    edit(&dir, |m| m["regions"][2]["dtype"] = "float".into());
    expect(&dir, 1, &["manifest.json: regions[2].dtype: \"float\" is not a known dtype", "f32", "bytes"]);
    let dir = bundle("dtype-odd");
    edit(&dir, |m| {
        let k = region_of_role(m, "kernargs");
        m["regions"][k]["dtype"] = "u64".into();
        m["regions"][k]["size"] = 1796.into();
    });
    expect(&dir, 1, &["regions[8].size: 1796 is not a whole number of u64 elements (8 bytes each)"]);
}

#[test]
fn an_ib_va_that_disagrees_with_the_aql_packet_exits_1_naming_both() {
    let dir = bundle("ib-va");
    let m = manifest(&dir);
    let ib = hex(&m["ib"]["va"]);
    let moved = ib + 0x10_0000;
    edit(&dir, |m| {
        m["ib"]["va"] = format!("{moved:#x}").into();
        let site = hex(&m["patch_sites"][2]["va"]);
        m["patch_sites"][2]["va"] = format!("{:#x}", site + 0x10_0000).into();
    });
    let called = format!("calls the IB at {ib:#x}, but ib.va is {moved:#x}");
    expect(&dir, 1, &["\"aql.bin\" packet 0", &called]);
}

#[test]
fn an_aql_packet_calling_more_than_the_ib_exits_1() {
    let dir = bundle("ib-shorter-than-call");
    let ib = std::fs::read(dir.join("ib.bin")).unwrap();
    std::fs::write(dir.join("ib.bin"), &ib[..800]).unwrap();
    edit(&dir, |m| m["ib"]["size_dwords"] = 200.into());
    let calls = format!("packet 0 calls {} dwords of the IB, but ib.size_dwords is 200", ib.len() / 4);
    expect(&dir, 1, &["ib.size_dwords", &calls]);
}

#[test]
fn an_aql_completion_signal_that_is_no_signal_region_exits_1() {
    let dir = bundle("signal-moved");
    edit(&dir, |m| {
        let s = region_of_role(m, "signal");
        let va = hex(&m["regions"][s]["va"]);
        m["regions"][s]["va"] = format!("{:#x}", va + 8).into();
    });
    expect(&dir, 1, &["\"aql.bin\" packet 0 names completion signal 0x7e0000a02000", "no signal region"]);
}

#[test]
fn expected_results_must_name_memory_regions_with_a_sha256() {
    let dir = bundle("expected-unknown");
    edit(&dir, |m| m["expected"][1]["region"] = "alloc99".into());
    expect(&dir, 1, &["manifest.json: expected[1].region: \"alloc99\" is not the name of a region"]);
    let dir = bundle("expected-signal");
    edit(&dir, |m| m["expected"][1]["region"] = "done".into());
    expect(&dir, 1, &["expected[1].region: \"done\" is a signal region"]);
    let dir = bundle("expected-sha");
    edit(&dir, |m| m["expected"][0]["sha256"] = "abc".into());
    expect(&dir, 1, &["expected[0].sha256: \"abc\" is not 64 hex digits"]);
}

#[test]
fn overlapping_regions_and_out_of_budget_sizes_exit_1() {
    let dir = bundle("overlap");
    edit(&dir, |m| m["regions"][1]["va"] = "0x7f000041a100".into());
    expect(
        &dir,
        1,
        &["regions[1].va", "regions[1] (\"alloc7\") [0x7f000041a100, 0x7f000041a600) overlaps regions[0] (\"alloc6\")"],
    );
    let dir = bundle("ib-overlap");
    edit(&dir, |m| {
        let k = region_of_role(m, "kernargs");
        m["ib"]["va"] = m["regions"][k]["va"].clone();
    });
    expect(&dir, 1, &["overlaps", "the IB", "regions[8] (\"kernargs\")"]);
    let dir = bundle("budget");
    edit(&dir, |m| m["regions"][2]["size"] = (2u64 << 30).into());
    expect(&dir, 1, &["regions[2].size: 2147483648 is outside 1..=1069547520"]);
    let dir = bundle("budget-total");
    edit(&dir, |m| {
        for (i, r) in m["regions"].as_array_mut().unwrap().iter_mut().enumerate().take(8) {
            r["size"] = (200u64 << 20).into();
            r["va"] = format!("{:#x}", 0x1000_0000_0000u64 + u64::try_from(i).unwrap() * (256 << 20)).into();
            r.as_object_mut().unwrap().remove("file");
        }
    });
    expect(
        &dir,
        1,
        &["manifest.json: regions: the regions, the IB and the AQL ring take", "budget of 1069547520 bytes"],
    );
}

#[test]
fn the_help_states_the_limits_and_the_exit_codes() {
    let out = common::redline(&["sim", "run", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ").split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "manifest.json 16 MiB; a code object 256 MiB",
        "memory budget (1020 MiB)",
        "1 an invalid bundle",
        "a file the manifest names that the bundle lacks",
        "2 usage or I/O (DIR missing or not a directory, manifest.json missing, a file unreadable, a path that is not a regular file)",
        "`error` is `io` (exit 2)",
    ] {
        assert!(help.contains(needle), "{needle:?} in: {help}");
    }
}

#[test]
fn the_json_form_classifies_the_error() {
    let dir = bundle("json-io");
    std::fs::remove_file(dir.join("expected/alloc8.bin")).unwrap();
    std::fs::create_dir(dir.join("expected/alloc8.bin")).unwrap();
    let out = common::redline(&["sim", "run", "--json", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"], "io", "{doc}");
    let _ = std::fs::remove_dir_all(&dir);
    let dir = bundle("json-invalid");
    edit(&dir, |m| m["regions"][0]["dtype"] = "float".into());
    let out = common::redline(&["sim", "run", "--json", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"], "bundle", "{doc}");
    assert!(doc["message"].as_str().unwrap().contains("regions[0].dtype"), "{doc}");
    let _ = std::fs::remove_dir_all(&dir);
}

// 4. Mutations.

/// Every JSON pointer of `v` (objects, arrays and leaves), the root excluded.
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let p = format!("{at}/{k}");
                out.push(p.clone());
                pointers(child, &p, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(child, &p, out);
            }
        }
        _ => {}
    }
}

/// Replacement values: other types, edge numbers, VAs near the bundle's, rules, paths, dtypes.
fn values() -> Vec<Value> {
    let mut v: Vec<Value> = vec![
        Value::Null,
        true.into(),
        0.into(),
        1.into(),
        4.into(),
        8.into(),
        200.into(),
        1280.into(),
        (-1).into(),
        u64::from(u32::MAX).into(),
        (1u64 << 32).into(),
        u64::MAX.into(),
        1.5.into(),
        "".into(),
        "0x0".into(),
        "0x10000".into(),
        "0x7e0000a00000".into(),
        "0x7e0000a0018c".into(),
        "0x7e0000a012bc".into(),
        "0x7e0000a012c4".into(),
        "0x7e0000a01000".into(),
        "0x7e0000a02000".into(),
        "0x7f000041a000".into(),
        "0xffffffffffffffff".into(),
        "0x1ffffffffffffffff".into(),
        "position ** banana".into(),
        "position + 1".into(),
        "ceil((position + 1) / 64)".into(),
        "ceil((position + 1) / 0)".into(),
        "f32".into(),
        "float".into(),
        "signal".into(),
        "kernargs".into(),
        "dispatch_dim".into(),
        "kernarg_u32".into(),
        "gfx1201".into(),
        "ib.bin".into(),
        "aql.bin".into(),
        "done.bin".into(),
        "regions/alloc6.bin".into(),
        "missing.bin".into(),
        "regions".into(),
        "../x".into(),
        "/dev/zero".into(),
        "alloc6".into(),
        Value::Array(vec![]),
        serde_json::json!({}),
    ];
    v.push("x".repeat(100_000).into());
    v
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the value at the pointer (index into [`pointers`]) with one of [`values`].
    Set(usize, usize),
    /// Remove the member or element at the pointer.
    Remove(usize),
    /// Rewrite region `i`'s file with `len` zero bytes.
    Resize(usize, usize),
    /// Rewrite region `i`'s file with as many zero bytes as it holds (its size stays right).
    Zero(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<prop::sample::Index>(), any::<prop::sample::Index>()).prop_map(|(p, v)| Mutation::Set(p.index(1 << 20), v.index(1 << 20))),
        1 => any::<prop::sample::Index>().prop_map(|p| Mutation::Remove(p.index(1 << 20))),
        1 => (0usize..8, prop_oneof![Just(0usize), Just(1279), Just(1280), Just(1281), 0usize..70_000])
            .prop_map(|(r, len)| Mutation::Resize(r, len)),
        1 => (0usize..8).prop_map(Mutation::Zero),
    ]
}

/// Applies `mutation` to the bundle in `dir`; returns true when it makes a file the manifest
/// names something that exists but is not a regular file (then the error must be an I/O one;
/// otherwise never: a named file that is missing makes the bundle invalid).
fn apply(dir: &Path, mutation: &Mutation) -> bool {
    let mut m = manifest(dir);
    let mut all = Vec::new();
    pointers(&m, "", &mut all);
    let values = values();
    let mut io = false;
    match *mutation {
        Mutation::Set(p, v) => {
            let pointer = &all[p % all.len()];
            let value = values[v % values.len()].clone();
            if pointer.ends_with("/file")
                && let Some(name) = value.as_str()
                && !name.is_empty()
                && !name.starts_with('/')
                && !name.contains("..")
                && name.len() <= soft_device::bundle::FILE_NAME_BYTES_MAX
                && std::fs::metadata(dir.join(name)).is_ok_and(|meta| !meta.is_file())
            {
                io = true;
            }
            *m.pointer_mut(pointer).unwrap() = value;
        }
        Mutation::Remove(p) => {
            let pointer = &all[p % all.len()];
            let (parent, last) = pointer.rsplit_once('/').unwrap();
            match m.pointer_mut(parent).unwrap() {
                Value::Object(map) => {
                    map.remove(last);
                }
                Value::Array(items) => {
                    items.remove(last.parse::<usize>().unwrap());
                }
                _ => unreachable!("a parent is a container"),
            }
        }
        Mutation::Resize(r, len) => {
            let file = m["regions"][r]["file"].as_str().unwrap().to_owned();
            std::fs::write(dir.join(file), vec![0u8; len]).unwrap();
        }
        Mutation::Zero(r) => {
            let file = dir.join(m["regions"][r]["file"].as_str().unwrap());
            let len = std::fs::metadata(&file).unwrap().len();
            std::fs::write(file, vec![0u8; usize::try_from(len).unwrap()]).unwrap();
        }
    }
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    io
}

/// The mutation in words: the JSON pointer it changes and how.
fn describe(mutation: &Mutation) -> String {
    let mut all = Vec::new();
    pointers(&manifest(template()), "", &mut all);
    match *mutation {
        Mutation::Set(p, v) => format!("{} = {}", all[p % all.len()], values()[v % values().len()]),
        Mutation::Remove(p) => format!("{} removed", all[p % all.len()]),
        Mutation::Resize(r, len) => format!("regions[{r}]'s file rewritten as {len} zero bytes"),
        Mutation::Zero(r) => format!("regions[{r}]'s file zeroed"),
    }
}

/// What `redline sim run` exits with for the bundle, computed in process.
fn in_process(dir: &Path) -> (i32, String) {
    match Bundle::open(dir).map_err(soft_device::bundle::RunError::from).and_then(|b| b.run()) {
        Ok(_) => (0, String::new()),
        Err(e) => (if e.is_io() { 2 } else { 1 }, e.to_string()),
    }
}

/// What a bundle submits and checks, by content, as the manifest format documents it (the
/// module documentation of `soft_device::bundle`): the format and target; the IB's VA, dword
/// count and bytes; the AQL packets' count and bytes; each code object's load VA and bytes; each
/// region's VA, size, whether it is a signal, its initial bytes (zeros without a file) and whether
/// the step reads them (an input or kernargs region); each expected result's region (by index),
/// digest and bytes. Names,
/// dtypes, binding names, patch sites and the declared kernel lists are left out: they label or
/// re-check the submission without changing what it computes. `None` when a field is missing, of the wrong type, or names a region or
/// file that is not there.
#[derive(Debug, PartialEq)]
struct Meaning {
    head: [String; 2],
    ib: (String, u64, Vec<u8>),
    aql: (u64, Vec<u8>),
    code: Vec<(String, Vec<u8>)>,
    regions: Vec<Region>,
    expected: Vec<(usize, String, Vec<u8>)>,
}

/// One region as [`Meaning`] sees it.
#[derive(Debug, PartialEq)]
struct Region {
    va: String,
    size: u64,
    signal: bool,
    read: bool,
    bytes: Vec<u8>,
}

impl Region {
    /// Whether a region laid out as `self` may stand for `before` in a clean run: the same VA,
    /// size and signal, and the same initial bytes whenever either side's role reads them. A
    /// role is otherwise a label: a state region relabelled kernargs keeps its bytes, and so
    /// submits the same step.
    fn stands_for(&self, before: &Region) -> bool {
        (&self.va, self.size, self.signal) == (&before.va, before.size, before.signal)
            && (!(self.read || before.read) || self.bytes == before.bytes)
    }
}

fn meaning(dir: &Path, m: &Value) -> Option<Meaning> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let file = |v: &Value| -> Option<Vec<u8>> {
        let name = v.as_str()?;
        if name.is_empty() || name.starts_with('/') || name.contains("..") {
            return None;
        }
        std::fs::read(dir.join(name)).ok()
    };
    let head = [text(&m["format"])?, text(&m["arch"])?];
    let ib = (text(&m["ib"]["va"])?, m["ib"]["size_dwords"].as_u64()?, file(&m["ib"]["file"])?);
    let aql = (m["aql"]["packets"].as_u64()?, file(&m["aql"]["file"])?);
    let code = m["code_objects"]
        .as_array()?
        .iter()
        .map(|c| Some((text(&c["load_va"])?, file(&c["file"])?)))
        .collect::<Option<_>>()?;
    let mut names = Vec::new();
    let mut regions = Vec::new();
    for r in m["regions"].as_array()? {
        let size = r["size"].as_u64()?;
        let bytes = match r.get("file") {
            None | Some(Value::Null) => vec![0; usize::try_from(size).ok()?],
            Some(f) => file(f)?,
        };
        names.push(text(&r["name"])?);
        // The initial bytes that count are those the step reads: its inputs and kernargs. A
        // state or output region may be written whole before it is read (the window example's
        // state is), and a signal region's bytes are the completion signal's initial value,
        // which the soft device's run does not depend on (it runs the packets whatever it is).
        let role = text(&r["role"])?;
        let read = matches!(role.as_str(), "input" | "kernargs");
        regions.push(Region { va: text(&r["va"])?, size, signal: role == "signal", read, bytes });
    }
    // An absent list of expected results checks nothing.
    let no_expected = Vec::new();
    let expected = m
        .get("expected")
        .map_or(Some(&no_expected), Value::as_array)?
        .iter()
        .map(|e| {
            let name = e["region"].as_str()?;
            Some((names.iter().position(|n| n == name)?, text(&e["sha256"])?, file(&e["file"])?))
        })
        .collect::<Option<_>>()?;
    Some(Meaning { head, ib, aql, code, regions, expected })
}

/// Whether a bundle that means `after` may run clean where the original meant `before`: the
/// same submission, checked against some of the same expected results.
fn may_run_clean(before: &Meaning, after: Option<&Meaning>) -> bool {
    after.is_some_and(|after| {
        let same = (&after.head, &after.ib, &after.aql, &after.code)
            == (&before.head, &before.ib, &before.aql, &before.code)
            && after.regions.len() == before.regions.len()
            && after.regions.iter().zip(&before.regions).all(|(a, b)| a.stands_for(b));
        same && after.expected.iter().all(|e| before.expected.contains(e))
    })
}

/// A state region relabelled kernargs keeps its bytes, so the step it submits is the one before
/// and it runs clean; the same relabelling over other bytes changes what the step reads, and the
/// oracle must call it a change. (An oracle that drops unread regions' bytes from both sides
/// wrongly calls the first a change.)
#[test]
fn a_role_is_a_label_unless_the_bytes_it_reads_change() {
    let dir = bundle("relabel");
    let before = meaning(&dir, &manifest(&dir)).unwrap();
    let state = region_of_role(&manifest(&dir), "state");
    edit(&dir, |m| m["regions"][state]["role"] = Value::from("kernargs"));
    assert_eq!(in_process(&dir).0, 0, "{}", in_process(&dir).1);
    assert!(may_run_clean(&before, meaning(&dir, &manifest(&dir)).as_ref()));
    let file = dir.join(manifest(&dir)["regions"][state]["file"].as_str().unwrap());
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&file, bytes).unwrap();
    assert!(!may_run_clean(&before, meaning(&dir, &manifest(&dir)).as_ref()));
    let _ = std::fs::remove_dir_all(&dir);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any single mutation runs clean or fails classified by the rule, without a panic, and
    /// with a message of bounded length; and it runs clean only when it left the submission and
    /// its checks as they were ([`Meaning`]): a mutation of what runs (a VA, a size, a file's
    /// bytes, the IB, a digest) must be refused.
    #[test]
    fn mutated_bundles_fail_classified_in_process(mutation in mutation()) {
        let dir = bundle("prop");
        let before = meaning(&dir, &manifest(&dir)).expect("the bundle as written");
        let io = apply(&dir, &mutation);
        let after = meaning(&dir, &manifest(&dir));
        let (code, message) = in_process(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        prop_assert!(message.len() < 2000, "{mutation:?}: a {}-byte message", message.len());
        if io {
            prop_assert_eq!(code, 2, "{:?}: {}", mutation, message);
        } else {
            prop_assert!(code != 2, "{:?}: {}", mutation, message);
        }
        if code == 0 {
            prop_assert!(
                may_run_clean(&before, after.as_ref()),
                "{:?} ({}) changed what runs, and it ran clean",
                mutation,
                describe(&mutation)
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// The binary exits with the code the in-process run implies for a sample of mutations.
    #[test]
    fn mutated_bundles_exit_by_the_rule(mutation in mutation()) {
        let dir = bundle("prop-cli");
        let io = apply(&dir, &mutation);
        let (code, message) = in_process(&dir);
        let out = sim_run(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        prop_assert_eq!(out.status.code(), Some(code), "{:?}: {} / {}", mutation, message, stderr);
        prop_assert_eq!(code == 2, io, "{:?}: {}", mutation, stderr);
        if code != 0 {
            prop_assert!(stderr.contains(&message), "{:?}: {}", mutation, stderr);
        }
    }
}
