//! Cross-checks the reader against `llvm-readelf-19` run on every fixture and every code object
//! the `kernels` crate checks in, when the tool is installed. Without it the test prints a notice and passes, except under `CI=true`, where a
//! missing tool is a failure (CI must not silently skip the independent check).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tool, from `LLVM_READELF` or `llvm-readelf-19` on the `PATH`.
fn tool() -> Option<String> {
    let name = std::env::var("LLVM_READELF").unwrap_or_else(|_| "llvm-readelf-19".to_string());
    let ok = Command::new(&name).arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    ok.then_some(name)
}

fn run(tool: &str, args: &[&str], file: &Path) -> String {
    let out = Command::new(tool).args(args).arg(file).output().expect("run llvm-readelf");
    assert!(out.status.success(), "{tool} {args:?} {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// A kernel as the `--notes` YAML shows it: scalar keys and `(offset, size, value_kind)` per arg.
#[derive(Default, Debug)]
struct NoteKernel {
    keys: BTreeMap<String, String>,
    args: Vec<BTreeMap<String, String>>,
}

/// Parses the `amdhsa.kernels` list of `llvm-readelf --notes` by indentation: kernel keys at 4
/// columns (or after `  - `), argument keys at 8 (or after `      - `).
fn note_kernels(notes: &str) -> Vec<NoteKernel> {
    let mut kernels: Vec<NoteKernel> = Vec::new();
    for line in notes.lines() {
        let Some(dot) = line.find('.') else { continue };
        let (indent, rest) = line.split_at(dot);
        let Some((key, value)) = rest.split_once(':') else { continue };
        let value = value.trim().trim_matches('\'').to_string();
        match indent {
            "  - " => {
                kernels.push(NoteKernel::default());
                if key != ".args" {
                    kernels.last_mut().unwrap().keys.insert(key.to_string(), value);
                }
            }
            "    " => {
                kernels.last_mut().unwrap().keys.insert(key.to_string(), value);
            }
            "      - " => kernels.last_mut().unwrap().args.push(BTreeMap::from([(key.to_string(), value)])),
            "        " => {
                kernels.last_mut().unwrap().args.last_mut().unwrap().insert(key.to_string(), value);
            }
            _ => {}
        }
    }
    kernels
}

/// `name -> value` of the `.symtab` FUNC and OBJECT symbols.
fn symbols(syms: &str) -> BTreeMap<String, u64> {
    let table = syms.split("Symbol table '.symtab'").nth(1).expect(".symtab listing");
    table
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 8 && (f[3] == "FUNC" || f[3] == "OBJECT"))
                .then(|| (f[7].to_string(), u64::from_str_radix(f[1], 16).unwrap()))
        })
        .collect()
}

#[test]
fn reader_agrees_with_llvm_readelf() {
    let Some(tool) = tool() else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("llvm-readelf-19 not found and CI=true: the cross-check cannot be skipped in CI");
        }
        eprintln!("notice: llvm-readelf-19 not found; skipping the llvm-readelf cross-check");
        return;
    };
    let mut files: Vec<PathBuf> = common::CODE_OBJECTS.iter().map(|f| common::path(f)).collect();
    files.extend(kernels_objects(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/objects")));
    assert!(files.len() > common::CODE_OBJECTS.len(), "kernels objects missing");
    for path in &files {
        let file = path.display().to_string();
        let path = path.as_path();
        let co = kernarg_abi::read(&std::fs::read(path).unwrap()).unwrap();
        let header = run(&tool, &["-h"], path);
        let abi = format!("ABI Version:                       {}", co.version.abi_version());
        assert!(header.contains(&abi), "{file}: {abi}");
        let flags = header.lines().find(|l| l.trim_start().starts_with("Flags:")).unwrap();
        assert!(flags.contains(&format!(", {}", co.target.name)), "{file}: {flags}");

        let notes = run(&tool, &["--notes"], path);
        assert!(notes.contains(&format!("amdhsa.target:   {}", quoted(&co.metadata_target))), "{file}");
        let kernels = note_kernels(&notes);
        assert_eq!(kernels.len(), co.kernels.len(), "{file}");
        let syms = symbols(&run(&tool, &["--syms"], path));
        for (k, n) in co.kernels.iter().zip(&kernels) {
            let m = &k.metadata;
            let at = format!("{file} {}", m.name);
            let key = |name: &str| n.keys.get(name).unwrap_or_else(|| panic!("{at}: {name}")).clone();
            assert_eq!(m.name, key(".name"), "{at}");
            assert_eq!(m.symbol, key(".symbol"), "{at}");
            for (name, value) in [
                (".kernarg_segment_size", m.kernarg_segment_size),
                (".kernarg_segment_align", m.kernarg_segment_align),
                (".group_segment_fixed_size", m.group_segment_fixed_size),
                (".private_segment_fixed_size", m.private_segment_fixed_size),
                (".wavefront_size", m.wavefront_size),
                (".sgpr_count", m.sgpr_count),
                (".vgpr_count", m.vgpr_count),
                (".max_flat_workgroup_size", m.max_flat_workgroup_size),
            ] {
                assert_eq!(value.to_string(), key(name), "{at} {name}");
            }
            assert_eq!(m.args.len(), n.args.len(), "{at}");
            for (a, na) in m.args.iter().zip(&n.args) {
                assert_eq!(a.offset.to_string(), na[".offset"], "{at}");
                assert_eq!(a.size.to_string(), na[".size"], "{at}");
                assert_eq!(a.value_kind.as_str(), na[".value_kind"], "{at}");
            }
            assert_eq!(Some(&k.descriptor_address), syms.get(&m.symbol), "{at}");
            assert_eq!(Some(&k.entry_address), syms.get(&m.name), "{at}");
        }
    }
}

/// `.co` files below `dir`.
fn kernels_objects(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "co") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// llvm-readelf quotes YAML strings that contain `:`.
fn quoted(s: &str) -> String {
    if s.contains(':') { format!("'{s}'") } else { s.to_string() }
}
