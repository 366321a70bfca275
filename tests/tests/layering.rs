//! "Nothing above the HAL names a backend": the route crates (the HAL itself, the lowering, the
//! engine) and the server (`daemon`) neither depend on a backend crate nor name a backend type in
//! their sources. Backends and the `redline` binary (where devices are selected) are below and
//! beside that line.

use std::path::{Path, PathBuf};

/// The crates above the HAL line, and the HAL.
const ROUTE_CRATES: [&str; 3] = ["hal", "lowering", "engine"];
/// Crates that are (or hold) a backend.
const BACKEND_CRATES: [&str; 6] = ["soft-device", "hsa-device", "soft-hsa", "hsa-sys", "hip-sys", "kmd-direct"];
/// Identifiers only backend code may use.
const BACKEND_NAMES: [&str; 6] = ["SimDevice", "HsaDevice", "soft_device", "hsa_device", "hsa_sys", "hip_sys"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The `[dependencies]` table of a manifest (not dev- or build-dependencies), one name per line.
fn normal_dependencies(manifest: &str) -> Vec<String> {
    let mut in_table = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line == "[dependencies]";
            continue;
        }
        if in_table && let Some((name, _)) = line.split_once(['=', '.']) {
            let name = name.trim();
            if !name.is_empty() && !name.starts_with('#') {
                names.push(name.to_owned());
            }
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn route_crates_depend_on_no_backend() {
    for krate in ROUTE_CRATES {
        let manifest = std::fs::read_to_string(workspace().join("crates").join(krate).join("Cargo.toml")).unwrap();
        let deps = normal_dependencies(&manifest);
        assert!(deps.iter().any(|d| d == "tape-core"), "{krate}: the manifest parser found its dependencies: {deps:?}");
        for backend in BACKEND_CRATES {
            assert!(!deps.iter().any(|d| d == backend), "{krate} depends on the backend crate {backend}");
        }
    }
}

/// The first line of `krate`'s sources naming a backend identifier, as `(file:line, name)`.
fn first_backend_name(krate: &str) -> Option<(String, &'static str)> {
    let mut files = Vec::new();
    rust_files(&workspace().join("crates").join(krate).join("src"), &mut files);
    assert!(!files.is_empty(), "{krate} has sources");
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            for name in BACKEND_NAMES {
                let named = line.match_indices(name).any(|(at, _)| {
                    let before = line[..at].chars().next_back();
                    let after = line[at + name.len()..].chars().next();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                if named {
                    return Some((format!("{}:{}", file.display(), number + 1), name));
                }
            }
        }
    }
    None
}

#[test]
fn route_sources_name_no_backend() {
    for krate in ROUTE_CRATES {
        assert_eq!(first_backend_name(krate), None, "{krate} names a backend");
    }
    // The scan finds a backend where one is named: the soft device names itself.
    assert!(first_backend_name("soft-device").is_some_and(|(_, name)| name == "SimDevice"));
}

/// The server runs on whichever device the binary opens for it: like the route, it depends on no
/// backend and names none.
#[test]
fn the_server_names_no_backend() {
    let manifest = std::fs::read_to_string(workspace().join("crates/daemon/Cargo.toml")).unwrap();
    let deps = normal_dependencies(&manifest);
    assert!(deps.iter().any(|d| d == "engine"), "the manifest parser found its dependencies: {deps:?}");
    for backend in BACKEND_CRATES {
        assert!(!deps.iter().any(|d| d == backend), "daemon depends on the backend crate {backend}");
    }
    assert_eq!(first_backend_name("daemon"), None, "daemon names a backend");
}
