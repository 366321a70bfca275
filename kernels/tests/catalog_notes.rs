//! The catalogue covers every kernel of every module code object (and the wave64 `axpy`
//! fixture), and every kernel's argument layout and launch facts agree with what
//! `llvm-readelf-19 --notes` prints for that code object.
//!
//! Without `llvm-readelf-19` the notes check is skipped with a notice, except under `CI=true`,
//! where it fails.

use std::path::PathBuf;
use std::process::Command;

use kernels::catalog;
use kernels::signature::ArgKind;

const READELF: &str = "llvm-readelf-19";

/// Supported targets: every code object below is built once per target of the target table.
const TARGETS: usize = pm4_encoding::Target::ALL.len();
/// Module code objects (15 per target) plus one wave64 `axpy` fixture per target.
const CATALOGUED_ARTIFACTS: usize = TARGETS * 15 + TARGETS;
/// Their kernels: 77 per target (42 of them in `ggml_quants`, 6 in `gemma`, 2 in `lfm2`, 5 in
/// `qwen35`), plus one wave64 `axpy` kernel per target.
const CATALOGUED_KERNELS: usize = TARGETS * 77 + TARGETS;

#[derive(Debug, Default)]
struct NoteArg {
    name: Option<String>,
    offset: Option<usize>,
    size: Option<usize>,
    value_kind: String,
}

#[derive(Debug, Default)]
struct NoteKernel {
    name: String,
    args: Vec<NoteArg>,
    max_flat_workgroup_size: Option<u16>,
    group_segment_fixed_size: Option<u32>,
}

fn set_arg(arg: &mut NoteArg, key: &str, value: &str) {
    match key {
        ".name" => arg.name = Some(value.to_owned()),
        ".offset" => arg.offset = Some(value.parse().unwrap()),
        ".size" => arg.size = Some(value.parse().unwrap()),
        ".value_kind" => arg.value_kind = value.to_owned(),
        _ => {}
    }
}

fn set_kernel(kernel: &mut NoteKernel, key: &str, value: &str) {
    match key {
        ".name" => kernel.name = value.to_owned(),
        ".max_flat_workgroup_size" => kernel.max_flat_workgroup_size = Some(value.parse().unwrap()),
        ".group_segment_fixed_size" => kernel.group_segment_fixed_size = Some(value.parse().unwrap()),
        _ => {}
    }
}

fn key_value(text: &str) -> (&str, &str) {
    let (key, value) = text.split_once(':').unwrap_or((text, ""));
    (key.trim(), value.trim())
}

/// The `amdhsa.kernels` list of `llvm-readelf --notes` output (the YAML form of the
/// code-object metadata): kernels at `  - `, their keys at 4 spaces, arguments at `      - ` with
/// their keys at 8 spaces.
fn parse_notes(text: &str) -> Vec<NoteKernel> {
    let mut kernels: Vec<NoteKernel> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("amdhsa.kernels:") {
            inside = true;
            continue;
        }
        if !line.starts_with([' ', '-']) {
            inside = false;
        }
        if !inside {
            continue;
        }
        if let Some(rest) = line.strip_prefix("  - ") {
            kernels.push(NoteKernel::default());
            let (k, v) = key_value(rest);
            set_kernel(kernels.last_mut().unwrap(), k, v);
        } else if let Some(rest) = line.strip_prefix("      - ") {
            let kernel = kernels.last_mut().unwrap();
            kernel.args.push(NoteArg::default());
            let (k, v) = key_value(rest);
            set_arg(kernel.args.last_mut().unwrap(), k, v);
        } else if let Some(rest) = line.strip_prefix("        ") {
            let (k, v) = key_value(rest);
            set_arg(kernels.last_mut().unwrap().args.last_mut().unwrap(), k, v);
        } else if let Some(rest) = line.strip_prefix("    ") {
            let (k, v) = key_value(rest);
            set_kernel(kernels.last_mut().unwrap(), k, v);
        }
    }
    kernels
}

#[test]
fn the_notes_parser_reads_a_literal_excerpt() {
    let text = "\
Displaying notes found in: .note
  Owner                Data size 	Description
  AMDGPU               0x000004a3	NT_AMDGPU_METADATA (AMDGPU Metadata)
    AMDGPU Metadata:
        ---
amdhsa.kernels:
  - .args:
      - .address_space:  global
        .name:           out
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .offset:         8
        .size:           4
        .value_kind:     by_value
    .group_segment_fixed_size: 1024
    .max_flat_workgroup_size: 256
    .name:           k
amdhsa.target:   amdgcn-amd-amdhsa--gfx1100
amdhsa.version:
  - 1
  - 2
...
";
    let kernels = parse_notes(text);
    assert_eq!(kernels.len(), 1);
    let k = &kernels[0];
    assert_eq!((k.name.as_str(), k.max_flat_workgroup_size, k.group_segment_fixed_size), ("k", Some(256), Some(1024)));
    assert_eq!(k.args.len(), 2);
    assert_eq!((k.args[0].name.as_deref(), k.args[0].offset, k.args[0].size), (Some("out"), Some(0), Some(8)));
    assert_eq!((k.args[1].value_kind.as_str(), k.args[1].offset, k.args[1].size), ("by_value", Some(8), Some(4)));
}

fn readelf_available() -> bool {
    match Command::new(READELF).arg("--version").output() {
        Ok(out) if out.status.success() => true,
        other => {
            let why = format!("{READELF} is not available ({:?})", other.map(|o| o.status));
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and {why}: CI must install llvm-19");
            eprintln!("SKIPPED code-object notes check: {why}");
            false
        }
    }
}

#[test]
fn catalogued_kernels_agree_with_the_code_object_notes() {
    if !readelf_available() {
        return;
    }
    let objects = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("objects");
    let mut checked_artifacts = 0;
    let mut checked_kernels = 0;
    for artifact in kernels::artifacts() {
        let Some(module) = catalog::module_of(artifact.path) else { continue };
        let out = Command::new(READELF).arg("--notes").arg(objects.join(artifact.path)).output().unwrap();
        assert!(out.status.success(), "{READELF} --notes {}: {}", artifact.path, String::from_utf8_lossy(&out.stderr));
        let notes = parse_notes(&String::from_utf8(out.stdout).unwrap());
        let mut in_notes: Vec<&str> = notes.iter().map(|k| k.name.as_str()).collect();
        let mut declared: Vec<&str> = module.kernels.iter().map(|k| k.signature.name).collect();
        in_notes.sort_unstable();
        declared.sort_unstable();
        assert_eq!(in_notes, declared, "{}: kernels in the code object vs the module's list", artifact.path);

        for note in &notes {
            let what = format!("{} {}", artifact.path, note.name);
            let signature = module.kernel(&note.name).unwrap_or_else(|| panic!("{what} not catalogued")).signature;
            let explicit: Vec<&NoteArg> =
                note.args.iter().filter(|a| matches!(a.value_kind.as_str(), "global_buffer" | "by_value")).collect();
            assert_eq!(explicit.len(), signature.explicit_args.len(), "{what}: explicit argument count");
            for (arg, decl) in explicit.iter().zip(signature.explicit_args) {
                assert_eq!((arg.offset, arg.size), (Some(decl.offset), Some(decl.size)), "{what}.{}", decl.name);
                let kind = if decl.kind == ArgKind::GlobalBuffer { "global_buffer" } else { "by_value" };
                assert_eq!(arg.value_kind, kind, "{what}.{}", decl.name);
                // clang-19 leaves argument names out of the metadata unless asked; compare them
                // wherever they are present.
                if let Some(name) = &arg.name {
                    assert_eq!(name, decl.name, "{what}: argument at offset {}", decl.offset);
                }
            }
            let hidden_group_size_x = note.args.iter().find(|a| a.value_kind == "hidden_group_size_x");
            assert_eq!(hidden_group_size_x.and_then(|a| a.offset), signature.hidden_group_size_x, "{what}");
            if let Some(a) = hidden_group_size_x {
                assert_eq!(a.size, Some(2), "{what}: hidden_group_size_x is 16-bit");
            }
            assert_eq!(note.max_flat_workgroup_size, Some(signature.max_flat_workgroup_size), "{what}");
            assert_eq!(note.group_segment_fixed_size, Some(signature.static_lds_bytes), "{what}");
            checked_kernels += 1;
        }
        checked_artifacts += 1;
    }
    assert_eq!(checked_artifacts, CATALOGUED_ARTIFACTS);
    assert_eq!(checked_kernels, CATALOGUED_KERNELS);
}

#[test]
fn the_catalogue_covers_every_module_code_object_and_the_wave64_fixtures() {
    let catalogued: Vec<&str> =
        kernels::artifacts().iter().filter(|a| catalog::module_of(a.path).is_some()).map(|a| a.path).collect();
    assert_eq!(catalogued.len(), CATALOGUED_ARTIFACTS, "{catalogued:?}");
    let kernels: usize = catalogued.iter().filter_map(|p| catalog::module_of(p)).map(|m| m.kernels.len()).sum();
    assert_eq!(kernels, CATALOGUED_KERNELS);
    for artifact in kernels::artifacts() {
        let is_module = artifact.path.split('/').count() == 2 && artifact.path.ends_with(".co");
        let is_wave64 = artifact.path.starts_with("fixtures/") && artifact.path.ends_with("/axpy-wave64.co");
        assert_eq!(catalog::module_of(artifact.path).is_some(), is_module || is_wave64, "{}", artifact.path);
    }
}
