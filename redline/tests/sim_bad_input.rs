//! `redline sim run DIR` on bad bundles: 1 for an invalid bundle (the manifest or a file's
//! content, a file it names that the bundle lacks), 2 for usage and I/O (DIR or its manifest
//! missing, a file unreadable or not a regular file), every
//! message naming the manifest's JSON path or the file and the offending value. The bundles are
//! written by `redline lower --example window` (kernarg and DISPATCH_DIRECT patch sites) and then
//! broken one way each. `sim_mutated_bundles.rs` mutates them at random.

mod common;

use std::path::Path;

use common::bundles::{bundle, edit, manifest, region_of_role, scratch, sim_run, template};
use serde_json::Value;

fn hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
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
