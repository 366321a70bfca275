//! `redline lower`: every built-in example on every architecture becomes a bundle that
//! `redline sim run` executes clean; tape files lower the same way; bad input is refused with a
//! message naming what is wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const ARCHES: [&str; 5] = ["gfx1030", "gfx1100", "gfx1151", "gfx1200", "gfx1201"];
const EXAMPLES: [&str; 3] = ["chain", "window", "wide"];

fn redline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-lower-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sim_run(dir: &Path) -> Value {
    json(&redline(&["sim", "run", "--json", dir.to_str().unwrap()]))
}

#[test]
fn every_example_on_every_architecture_lowers_to_a_bundle_that_runs_clean() {
    for arch in ARCHES {
        for example in EXAMPLES {
            let dir = scratch(&format!("{example}-{arch}"));
            let lowered = json(&redline(&[
                "lower",
                "--example",
                example,
                "--arch",
                arch,
                "--out",
                dir.to_str().unwrap(),
                "--json",
            ]));
            assert_eq!(lowered["arch"], arch);
            let dispatches = lowered["tape"]["dispatch_count"].as_u64().unwrap();
            assert_eq!(lowered["check"]["dispatches"], dispatches, "{example} {arch}");
            let run = sim_run(&dir);
            assert_eq!(run["ok"], true, "{example} {arch}: {run}");
            assert_eq!(run["packets"], 1, "one AQL packet calls the IB");
            assert_eq!(run["dispatches"].as_array().unwrap().len() as u64, dispatches, "{example} {arch}");
            let manifest: Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
            assert!(!manifest["patch_sites"].as_array().unwrap().is_empty(), "{example} {arch}: a position binding");
            assert_eq!(run["expected_checked"], manifest["expected"].as_array().unwrap().len());
            if example == "window" {
                let kinds: Vec<&str> =
                    manifest["patch_sites"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
                assert!(kinds.contains(&"dispatch_dim"), "{arch}: the grid binding is a DIM patch site: {kinds:?}");
                assert!(kinds.contains(&"kernarg_u32"), "{arch}: {kinds:?}");
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

#[test]
fn the_written_tape_lowers_again_from_its_file_at_another_va_base() {
    let first = scratch("tape-source");
    json(&redline(&["lower", "--example", "chain", "--arch", "gfx1100", "--out", first.to_str().unwrap(), "--json"]));
    let tape = first.join("tape.json");
    let second = scratch("tape-relowered");
    let out = json(&redline(&[
        "lower",
        "--tape",
        tape.to_str().unwrap(),
        "--arch",
        "gfx1100",
        "--va-base",
        "0x600000000000",
        "--position",
        "7",
        "--out",
        second.to_str().unwrap(),
        "--json",
    ]));
    assert!(out["ib"]["va"].as_str().unwrap().starts_with("0x6000"), "{out}");
    assert_eq!(sim_run(&second)["ok"], true);
    // The patch site for fill(y).n holds position + 600 = 607 in the written kernargs.
    let manifest: Value = serde_json::from_slice(&std::fs::read(second.join("manifest.json")).unwrap()).unwrap();
    let site = &manifest["patch_sites"][0];
    assert_eq!(site["rule"], "position + 600");
    let va = u64::from_str_radix(site["va"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let region = manifest["regions"].as_array().unwrap().iter().find(|r| r["role"] == "kernargs").unwrap();
    let base = u64::from_str_radix(region["va"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let kernargs = std::fs::read(second.join(region["file"].as_str().unwrap())).unwrap();
    let at = usize::try_from(va - base).unwrap();
    assert_eq!(u32::from_le_bytes(kernargs[at..at + 4].try_into().unwrap()), 607);
    std::fs::remove_dir_all(&first).unwrap();
    std::fs::remove_dir_all(&second).unwrap();
}

#[test]
fn bad_input_is_refused_with_a_message_naming_it() {
    let dir = scratch("bad");
    let d = dir.to_str().unwrap();
    let out = redline(&["lower", "--example", "nope", "--arch", "gfx1100", "--out", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("chain, window, wide"));

    let out = redline(&["lower", "--example", "chain", "--arch", "gfx906", "--out", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gfx906"));

    let out = redline(&["lower", "--example", "chain", "--arch", "gfx1100", "--out", d, "--va-base", "zz"]);
    assert_eq!(out.status.code(), Some(2));

    // A tape recorded from gfx1100 code objects does not lower for gfx1201.
    let src = scratch("bad-src");
    json(&redline(&["lower", "--example", "chain", "--arch", "gfx1100", "--out", src.to_str().unwrap(), "--json"]));
    let tape = src.join("tape.json");
    let out = redline(&["lower", "--tape", tape.to_str().unwrap(), "--arch", "gfx1201", "--out", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not one of the built gfx1201 code objects"));
    assert!(!dir.exists(), "nothing written on failure");

    // A corrupted tape file is refused before anything is written.
    let mut bytes = std::fs::read(&tape).unwrap();
    bytes.truncate(bytes.len() / 2);
    let broken = src.join("broken.json");
    std::fs::write(&broken, bytes).unwrap();
    let out = redline(&["lower", "--tape", broken.to_str().unwrap(), "--arch", "gfx1100", "--out", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid JSON tape"));

    // An existing non-empty directory is never overwritten.
    let out = redline(&["lower", "--example", "chain", "--arch", "gfx1100", "--out", src.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));
    std::fs::remove_dir_all(&src).unwrap();

    let out = redline(&["lower", "--list-examples"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(EXAMPLES.iter().all(|e| text.contains(e)), "{text}");
}
