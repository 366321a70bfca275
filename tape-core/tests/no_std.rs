//! The pure crates build without `std`: each declares `#![no_std]` and `#![forbid(unsafe_code)]`,
//! and no crate in its normal dependency tree (proc-macros, which run on the host, excepted) has
//! its `std` feature enabled. Checked with `cargo tree`, as the build resolves features.

use std::path::PathBuf;
use std::process::Command;

const PURE: [&str; 4] = ["pm4-encoding", "aql-packets", "kernarg-abi", "tape-core"];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn pure_crates_declare_no_std_and_forbid_unsafe() {
    for krate in PURE {
        let lib = std::fs::read_to_string(workspace().join(krate).join("src/lib.rs")).unwrap();
        assert!(lib.contains("#![no_std]"), "{krate}");
        assert!(lib.contains("#![forbid(unsafe_code)]"), "{krate}");
    }
}

#[test]
fn no_std_feature_in_the_dependency_trees() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for krate in PURE {
        let out = Command::new(&cargo)
            .current_dir(workspace())
            .args(["tree", "--offline", "-p", krate, "-e", "normal,features,no-proc-macro", "--prefix", "none"])
            .output()
            .expect("run cargo tree");
        assert!(out.status.success(), "{krate}: {}", String::from_utf8_lossy(&out.stderr));
        let tree = String::from_utf8(out.stdout).unwrap();
        assert!(tree.contains(&format!("{krate} v")), "{krate}: unexpected tree:\n{tree}");
        let std_features: Vec<&str> = tree.lines().filter(|l| l.contains("feature \"std\"")).collect();
        assert!(std_features.is_empty(), "{krate} pulls std through: {std_features:?}");
    }
}
