//! Bundles for the `redline sim run` tests: a valid one written once per test process by
//! `redline lower --example window`, fresh copies of it, and manifest edits.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use serde_json::Value;

/// An empty scratch path for `name`, unique to this test process.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-sim-bad-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A valid bundle written once per test process.
pub(crate) fn template() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("template");
        let out =
            super::redline(&["lower", "--example", "window", "--arch", "gfx1100", "--out", dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        dir
    })
}

/// Copies the tree at `from` to `to`.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
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
pub(crate) fn bundle(name: &str) -> PathBuf {
    let dir = scratch(name);
    copy_dir(template(), &dir);
    dir
}

/// The bundle's manifest, parsed.
pub(crate) fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// Rewrites the bundle's manifest through `f`.
pub(crate) fn edit(dir: &Path, f: impl FnOnce(&mut Value)) {
    let mut m = manifest(dir);
    f(&mut m);
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

/// The index of the first region with `role`.
pub(crate) fn region_of_role(m: &Value, role: &str) -> usize {
    m["regions"].as_array().unwrap().iter().position(|r| r["role"] == role).unwrap()
}

/// Runs `redline sim run DIR`.
pub(crate) fn sim_run(dir: &Path) -> Output {
    super::redline(&["sim", "run", dir.to_str().unwrap()])
}
