//! The layering of the workspace, checked on the dependency graph cargo resolves (`cargo metadata`:
//! every crate, normal, build and dev dependencies with their kinds, transitively) and on the
//! route crates' sources.
//!
//! - Every workspace crate has a floor ([`FLOORS`]); a normal or build dependency lies on a lower
//!   floor. A dev-dependency may lie higher (a crate's tests and benches run it under the layers
//!   over it: the lowering's on the soft device, the HSA backend's through the route), but never
//!   the binary or the suite, which nothing reuses.
//! - `hal` knows devices, not kernels: through normal dependencies it reaches no kernel catalogue
//!   (`kernels`), no CPU reference (`kernel-refs`), no `rayon` and no GGUF parser.
//! - Nothing above the HAL names a backend: the route crates (the HAL itself, the lowering, the
//!   engine) and the server (`daemon`) reach no backend crate through normal dependencies and
//!   name no backend type; the `redline` binary is where devices are selected.
//! - The pure crates reach no sys crate, and only crates that are `no_std`.
//! - The CPU references are the soft device's: only it, and what is built over it, depends on
//!   `kernel-refs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// Every workspace crate and its floor. Lower floors may not depend on higher ones.
///
/// 0: foundations without workspace dependencies; 1: formats and runtime loaders over them;
/// 2: the tape model, disassembly, model files; 3: the kernels and the HAL; 4: the CPU references
/// and the lowering; 5: the backends and the engine; 6: what is built over a backend and the route
/// (the soft HSA runtime, bundle export) and the server; 7: the binary; 8: the workspace suite.
const FLOORS: [(&str, u8); 25] = [
    ("pm4-encoding", 0),
    ("dynload", 0),
    ("infile", 0),
    ("kmd-direct", 0),
    ("aql-packets", 1),
    ("kernarg-abi", 1),
    ("hsa-sys", 1),
    ("hip-sys", 1),
    ("gguf", 1),
    ("tokenizer", 1),
    ("tape-core", 2),
    ("disasm", 2),
    ("model-files", 2),
    ("kernels", 3),
    ("hal", 3),
    ("kernel-refs", 4),
    ("lowering", 4),
    ("soft-device", 5),
    ("hsa-device", 5),
    ("engine", 5),
    ("soft-hsa", 6),
    ("bundle-export", 6),
    ("daemon", 6),
    ("redline", 7),
    ("conformance", 8),
];

/// Crates nothing may depend on, not even for tests: the binary and the suite.
const LEAVES: [&str; 2] = ["redline", "conformance"];
/// The crates above the HAL line, the HAL, and the server, which runs on whichever device the
/// binary opens for it.
const ROUTE_CRATES: [&str; 4] = ["hal", "lowering", "engine", "daemon"];
/// Crates that are (or hold) a backend.
const BACKEND_CRATES: [&str; 6] = ["soft-device", "hsa-device", "soft-hsa", "hsa-sys", "hip-sys", "kmd-direct"];
/// What the HAL must not reach: the kernel catalogue, the CPU references and what they use.
const NOT_FOR_HAL: [&str; 4] = ["kernels", "kernel-refs", "rayon", "gguf"];
/// `no_std` building blocks for anyone who generates AMD GPU command streams.
const PURE_CRATES: [&str; 4] = ["pm4-encoding", "aql-packets", "kernarg-abi", "tape-core"];
/// Crates that reach the operating system or a loaded runtime.
const SYS_CRATES: [&str; 5] = ["hsa-sys", "hip-sys", "kmd-direct", "libc", "libloading"];
/// The CPU references, and the crate they serve.
const REFERENCES: &str = "kernel-refs";
const SOFT_DEVICE: &str = "soft-device";
/// Identifiers only backend code may use.
const BACKEND_NAMES: [&str; 6] = ["SimDevice", "HsaDevice", "soft_device", "hsa_device", "hsa_sys", "hip_sys"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The kinds one dependency edge has (a crate may depend on another in several ways).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Kinds {
    normal: bool,
    build: bool,
    dev: bool,
}

/// One resolved package.
#[derive(Debug)]
struct Package {
    name: String,
    workspace: bool,
    proc_macro: bool,
    /// The library target's root file, when the package has a library.
    lib_root: Option<PathBuf>,
}

/// The resolved dependency graph: packages by id, and each package's dependencies by id.
#[derive(Debug)]
struct Graph {
    packages: BTreeMap<String, Package>,
    edges: BTreeMap<String, Vec<(String, Kinds)>>,
}

/// The host's target triple (`rustc -vV`), so that the graph is the one this machine builds.
fn host_triple() -> String {
    let cargo = PathBuf::from(env!("CARGO"));
    let sibling = cargo.with_file_name("rustc");
    let rustc = std::env::var_os("RUSTC").map(PathBuf::from).unwrap_or(if sibling.exists() {
        sibling
    } else {
        PathBuf::from("rustc")
    });
    let out = Command::new(&rustc).arg("-vV").output().unwrap_or_else(|e| panic!("{}: {e}", rustc.display()));
    assert!(out.status.success(), "{} -vV: {}", rustc.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc -vV names the host").trim().to_owned()
}

/// Reads `cargo metadata` into a [`Graph`].
fn read_graph(metadata: &Value) -> Graph {
    let members: BTreeSet<&str> =
        metadata["workspace_members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    let mut packages = BTreeMap::new();
    for p in metadata["packages"].as_array().unwrap() {
        let id = p["id"].as_str().unwrap();
        let targets = p["targets"].as_array().unwrap();
        let kinds = |t: &Value| t["kind"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_owned()).collect();
        let lib = targets.iter().find(|t| {
            let kinds: Vec<String> = kinds(t);
            kinds.iter().any(|k| matches!(k.as_str(), "lib" | "rlib" | "proc-macro" | "cdylib"))
        });
        let proc_macro = targets.iter().any(|t| kinds(t).iter().any(|k| k == "proc-macro"));
        packages.insert(
            id.to_owned(),
            Package {
                name: p["name"].as_str().unwrap().to_owned(),
                workspace: members.contains(id),
                proc_macro,
                lib_root: lib.map(|t| PathBuf::from(t["src_path"].as_str().unwrap())),
            },
        );
    }
    let mut edges = BTreeMap::new();
    for node in metadata["resolve"]["nodes"].as_array().unwrap() {
        let deps = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let mut kinds = Kinds::default();
                for k in d["dep_kinds"].as_array().unwrap() {
                    match k["kind"].as_str() {
                        None => kinds.normal = true,
                        Some("build") => kinds.build = true,
                        Some("dev") => kinds.dev = true,
                        Some(other) => panic!("unknown dependency kind {other}"),
                    }
                }
                (d["pkg"].as_str().unwrap().to_owned(), kinds)
            })
            .collect();
        edges.insert(node["id"].as_str().unwrap().to_owned(), deps);
    }
    Graph { packages, edges }
}

/// The workspace's resolved graph, read once per test process.
fn graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let host = host_triple();
        let out = Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--locked", "--filter-platform", &host])
            .current_dir(workspace())
            .output()
            .expect("cargo metadata runs");
        assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
        read_graph(&serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON"))
    })
}

impl Graph {
    /// The id of the workspace crate `name`.
    fn id(&self, name: &str) -> &str {
        let mut ids = self.packages.iter().filter(|(_, p)| p.workspace && p.name == name).map(|(id, _)| id.as_str());
        let id = ids.next().unwrap_or_else(|| panic!("{name} is not a workspace crate"));
        assert!(ids.next().is_none(), "two workspace crates are called {name}");
        id
    }

    fn name(&self, id: &str) -> &str {
        &self.packages[id].name
    }

    /// The direct dependencies of the workspace crate `name`: dependency name and kinds.
    fn direct(&self, name: &str) -> Vec<(&str, Kinds)> {
        self.edges[self.id(name)].iter().map(|(to, kinds)| (self.name(to), *kinds)).collect()
    }

    /// Every crate `name` reaches through normal dependencies, by name, with one path to it (as
    /// crate names from `name`); proc-macro crates (which run in the compiler) and what they use
    /// are left out when `skip_proc_macros`. Two versions of one crate are both in
    /// [`Graph::reach_ids`]; here one path stands for the name.
    fn reach(&self, name: &str, skip_proc_macros: bool) -> BTreeMap<String, Vec<String>> {
        self.reach_ids(name, skip_proc_macros)
            .into_values()
            .map(|path| (path.last().cloned().unwrap_or_default(), path))
            .collect()
    }

    /// [`Graph::reach`] by package id.
    fn reach_ids(&self, name: &str, skip_proc_macros: bool) -> BTreeMap<String, Vec<String>> {
        let start = self.id(name);
        let mut paths: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        paths.insert(start, vec![name.to_owned()]);
        let mut stack = vec![start];
        while let Some(id) = stack.pop() {
            for (to, kinds) in &self.edges[id] {
                let package = &self.packages[to];
                if !kinds.normal || (skip_proc_macros && package.proc_macro) || paths.contains_key(to.as_str()) {
                    continue;
                }
                let mut path = paths[id].clone();
                path.push(package.name.clone());
                paths.insert(to, path);
                stack.push(to);
            }
        }
        paths.remove(start);
        paths.into_iter().map(|(id, path)| (id.to_owned(), path)).collect()
    }
}

/// The floor of the workspace crate `name`.
fn floor(name: &str) -> u8 {
    FLOORS.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name} has no floor in FLOORS")).1
}

/// Whether the library root at `path` declares `no_std`: `#![no_std]`, or (when `conditional`)
/// a `#![cfg_attr(..., no_std)]` under which the crate builds without `std`.
fn declares_no_std(path: &Path, conditional: bool) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .any(|l| l == "#![no_std]" || (conditional && l.starts_with("#![cfg_attr(") && l.ends_with("no_std)]")))
}

#[test]
fn the_graph_reader_sees_the_edges_it_checks() {
    let graph = graph();
    // Known edges, with their kinds: the checks below would be vacuous without them.
    let hal = graph.direct("hal");
    assert!(hal.contains(&("tape-core", Kinds { normal: true, ..Kinds::default() })), "{hal:?}");
    let soft = graph.direct("soft-device");
    assert!(soft.iter().any(|(n, k)| *n == REFERENCES && k.normal), "{soft:?}");
    assert!(soft.iter().any(|(n, k)| *n == "lowering" && k.dev && !k.normal), "{soft:?}");
    let engine = graph.direct("engine");
    assert!(engine.iter().any(|(n, k)| *n == SOFT_DEVICE && k.dev && !k.normal), "{engine:?}");
    // Transitive reach through normal dependencies: the soft device reaches what the HAL must
    // not, and a backend; proc-macros are left out only when asked.
    let reach = graph.reach(SOFT_DEVICE, true);
    for name in ["kernels", REFERENCES, "rayon", "gguf", "hal", "tape-core", "pm4-encoding"] {
        assert!(reach.contains_key(name), "soft-device reaches {name}: {:?}", reach.keys());
    }
    assert_eq!(reach["pm4-encoding"].first().map(String::as_str), Some(SOFT_DEVICE));
    assert!(graph.reach("pm4-encoding", false).contains_key("thiserror-impl"));
    assert!(!graph.reach("pm4-encoding", true).contains_key("thiserror-impl"));
    // The binary reaches every backend but the soft HSA runtime, which it loads only in its
    // tests (a dev-dependency, not followed); so with the engine and the soft device.
    let binary = graph.reach("redline", true);
    for backend in BACKEND_CRATES {
        assert_eq!(binary.contains_key(backend), backend != "soft-hsa", "redline and {backend}: {:?}", binary.keys());
    }
    assert!(graph.direct("redline").iter().any(|(n, k)| *n == "soft-hsa" && k.dev && !k.normal));
    assert!(!graph.reach("engine", true).contains_key(SOFT_DEVICE));
}

#[test]
fn every_crate_has_a_floor_and_depends_only_on_lower_floors() {
    let graph = graph();
    let members: BTreeSet<&str> = graph.packages.values().filter(|p| p.workspace).map(|p| p.name.as_str()).collect();
    let floors: BTreeSet<&str> = FLOORS.iter().map(|(n, _)| *n).collect();
    assert_eq!(members, floors, "FLOORS names every workspace crate, and only those");
    for krate in &members {
        for (dep, kinds) in graph.direct(krate) {
            if !floors.contains(dep) {
                continue;
            }
            if kinds.normal || kinds.build {
                assert!(
                    floor(dep) < floor(krate),
                    "{krate} (floor {}) depends on {dep} (floor {}): a dependency lies on a lower floor",
                    floor(krate),
                    floor(dep)
                );
            }
            assert!(!LEAVES.contains(&dep), "{krate} depends on {dep} ({kinds:?}), which nothing may depend on");
        }
    }
}

#[test]
fn hal_reaches_no_kernel_catalogue_references_rayon_or_gguf() {
    let reach = graph().reach("hal", false);
    assert!(reach.contains_key("tape-core"), "{:?}", reach.keys());
    for name in NOT_FOR_HAL {
        assert!(!reach.contains_key(name), "hal reaches {name}: {}", reach[name].join(" -> "));
    }
}

#[test]
fn route_crates_reach_no_backend() {
    for krate in ROUTE_CRATES {
        let reach = graph().reach(krate, false);
        assert!(reach.contains_key("tape-core"), "{krate}: {:?}", reach.keys());
        for backend in BACKEND_CRATES {
            assert!(
                !reach.contains_key(backend),
                "{krate} reaches the backend {backend}: {}",
                reach[backend].join(" -> ")
            );
        }
    }
}

#[test]
fn pure_crates_reach_no_sys_crate_and_only_no_std_crates() {
    let graph = graph();
    for krate in PURE_CRATES {
        let root = graph.packages[graph.id(krate)].lib_root.as_deref().expect("a library");
        assert!(declares_no_std(root, false), "{krate}: {} is not #![no_std]", root.display());
        let reach = graph.reach(krate, true);
        for sys in SYS_CRATES {
            assert!(!reach.contains_key(sys), "{krate} reaches {sys}: {}", reach[sys].join(" -> "));
        }
        for (id, path) in graph.reach_ids(krate, true) {
            let package = &graph.packages[&id];
            let name = &package.name;
            let root = package.lib_root.as_deref().unwrap_or_else(|| panic!("{name} has no library"));
            // A workspace crate is no_std outright; a third-party one at least builds without std
            // (which of its features the workspace turns on is cargo's unification, not a layer).
            assert!(
                declares_no_std(root, !package.workspace),
                "{krate} reaches {name}, which is not no_std ({}): {}",
                root.display(),
                path.join(" -> ")
            );
        }
    }
}

#[test]
fn only_the_soft_device_and_what_is_built_over_it_depend_on_the_references() {
    let graph = graph();
    let members: Vec<&str> = FLOORS.iter().map(|(n, _)| *n).collect();
    let mut dependants = Vec::new();
    for krate in members {
        if graph.direct(krate).iter().any(|(dep, _)| *dep == REFERENCES) {
            dependants.push(krate);
            // Built over the soft device: it is the soft device, or depends on it (for its tests
            // and benches too).
            let over = krate == SOFT_DEVICE || graph.direct(krate).iter().any(|(dep, _)| *dep == SOFT_DEVICE);
            assert!(over, "{krate} depends on {REFERENCES} but is not built over the soft device");
        }
        // A library reaches them through normal dependencies only where it reaches the soft device
        // that way too: the HSA backend, the route and the HAL carry no references. (The suite's
        // library checks kernels against the registry; it runs every backend through dev-
        // dependencies.)
        if krate != SOFT_DEVICE && !LEAVES.contains(&krate) && graph.reach(krate, false).contains_key(REFERENCES) {
            assert!(graph.reach(krate, false).contains_key(SOFT_DEVICE), "{krate} reaches {REFERENCES}");
        }
    }
    assert!(dependants.contains(&SOFT_DEVICE), "{dependants:?}");
    assert!(!graph.reach("hsa-device", false).contains_key(REFERENCES));
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

/// The first line of `krate`'s sources naming a backend identifier, as `(file:line, name)`.
fn first_backend_name(krate: &str) -> Option<(String, &'static str)> {
    let mut files = Vec::new();
    rust_files(&workspace().join(krate).join("src"), &mut files);
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
