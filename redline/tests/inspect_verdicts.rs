//! `redline inspect` verdicts on the checked-in code objects: kernels compiled to use scratch or
//! the dispatch pointer are unsupported with that reason, wave64 kernels are read as wave64, every
//! production kernel is replayable, and a file that is not a code object exits 1 naming why.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const TARGETS: [&str; 5] = ["gfx1030", "gfx1100", "gfx1151", "gfx1200", "gfx1201"];

fn objects() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/objects")
}

fn run(args: &[&str], file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline")).args(args).arg(file).output().expect("run redline")
}

fn inspect(file: &Path) -> Value {
    let out = run(&["inspect", "--json"], file);
    assert!(out.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn only_kernel(doc: &Value) -> &Value {
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1);
    &kernels[0]
}

fn reason_codes(kernel: &Value) -> Vec<String> {
    let r = &kernel["retained_replay"];
    r["reasons"].as_array().unwrap().iter().map(|x| x["code"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn scratch_and_dispatch_pointer_kernels_are_unsupported_with_that_reason() {
    for t in TARGETS {
        let scratch = inspect(&objects().join(format!("fixtures/{t}/scratch.co")));
        let k = only_kernel(&scratch);
        assert_eq!(k["retained_replay"]["supported"], false, "{t} scratch");
        assert!(reason_codes(k).contains(&"private_segment".to_owned()), "{t}: {:?}", reason_codes(k));
        assert!(k["private_segment_fixed_size"].as_u64().unwrap() > 0);

        let dp = inspect(&objects().join(format!("fixtures/{t}/dispatch_ptr.co")));
        let k = only_kernel(&dp);
        assert_eq!(k["retained_replay"]["supported"], false, "{t} dispatch_ptr");
        assert_eq!(reason_codes(k), vec!["dispatch_ptr".to_owned()], "{t}");
        // ENABLE_SGPR_DISPATCH_PTR is kernel_code_properties bit 1 (reference §6).
        assert_eq!(k["descriptor"]["kernel_code_properties"].as_u64().unwrap() & 0b10, 0b10);
        // Reference §6 order: the private segment buffer (4 SGPRs, gfx1030 here) comes first, then
        // the dispatch pointer (2), then the kernarg pointer (2).
        let blocks = k["user_sgprs"]["blocks"].as_array().unwrap();
        let psb = blocks.iter().any(|b| b["name"] == "private segment buffer");
        assert_eq!(psb, t == "gfx1030", "{t}: {blocks:?}");
        let dp = blocks.iter().find(|b| b["name"] == "dispatch ptr").expect("dispatch ptr block");
        assert_eq!((dp["first"].as_u64(), dp["count"].as_u64()), (Some(if psb { 4 } else { 0 }), Some(2)), "{t}");
        let kp = blocks.iter().find(|b| b["name"] == "kernarg segment ptr").expect("kernarg ptr block");
        assert_eq!(kp["first"].as_u64(), Some(if psb { 6 } else { 2 }), "{t}");
    }
}

#[test]
fn wave64_kernels_are_read_as_wave64() {
    for t in TARGETS {
        let doc = inspect(&objects().join(format!("fixtures/{t}/axpy-wave64.co")));
        let k = only_kernel(&doc);
        assert_eq!(k["wavefront_size"], 64, "{t}");
        // ENABLE_WAVEFRONT_SIZE32 is kernel_code_properties bit 10 (reference §6).
        assert_eq!(k["descriptor"]["kernel_code_properties"].as_u64().unwrap() & (1 << 10), 0, "{t}");
        assert_eq!(k["descriptor"]["kernel_code_properties_fields"]["ENABLE_WAVEFRONT_SIZE32"], 0);
        assert_eq!(k["retained_replay"]["supported"], true, "{t}: {:?}", reason_codes(k));
        let plain = inspect(&objects().join(format!("{t}/axpy.co")));
        assert_eq!(only_kernel(&plain)["wavefront_size"], 32, "{t}");
    }
}

#[test]
fn every_production_kernel_is_replayable() {
    for t in TARGETS {
        for module in kernels::plan::MODULES {
            let doc = inspect(&objects().join(format!("{t}/{module}.co")));
            assert_eq!(doc["code_object_version"], 5);
            for k in doc["kernels"].as_array().unwrap() {
                assert_eq!(
                    k["retained_replay"]["supported"],
                    true,
                    "{t}/{module} {}: {:?}",
                    k["name"],
                    reason_codes(k)
                );
            }
        }
        let v4 = inspect(&objects().join(format!("fixtures/{t}/fill-v4.co")));
        assert_eq!(v4["code_object_version"], 4, "{t}");
    }
}

#[test]
fn invalid_files_exit_1_naming_the_problem() {
    let dir = std::env::temp_dir().join(format!("redline-inspect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = dir.join("notes.txt");
    std::fs::write(&text, "not a code object").unwrap();
    let out = run(&["inspect"], &text);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not an ELF file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A real code object cut in half.
    let full = std::fs::read(objects().join("gfx1100/fill.co")).unwrap();
    let cut = dir.join("cut.co");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let out = run(&["inspect", "--json"], &cut);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(!out.stderr.is_empty());

    // The wrong target for a single code object.
    let out = run(&["inspect", "--target", "gfx1201"], &objects().join("gfx1100/fill.co"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gfx1100"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
}
