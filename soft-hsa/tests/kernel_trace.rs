//! The soft HSA runtime's kernel trace, as a C program sees it: `tests/c/two_kernels.c`, built
//! with the system's C compiler against ROCr's headers and linked against `libsoft_hsa.so`, runs
//! two kernels with `REDLINE_KERNEL_TRACE` set, and the file it leaves holds exactly their two
//! rows under rocprofv3's header. Without gcc or the headers (`libhsa-runtime-dev`) the test fails
//! under `CI=true` and is skipped, with the reason printed, otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use tape_core::census::trace::parse;

/// rocprofv3's `kernel_trace.csv` header, as rocprofiler-sdk writes it (its `generateCSV.cpp`).
const ROCPROFV3_HEADER: &str = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"";

fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// A fresh directory under the target directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let lib = soft_hsa::built_library().unwrap();
    let dir = lib.parent().unwrap().join(format!("soft-hsa-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds the C program, or `None` (outside CI) when the compiler or the headers are missing.
fn build_program(dir: &Path) -> Option<PathBuf> {
    let header = Path::new("/usr/include/hsa/hsa.h");
    let gcc = Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success());
    if !gcc || !header.is_file() {
        let why = format!("gcc found: {gcc}; {} found: {}", header.display(), header.is_file());
        assert!(!in_ci(), "CI=true and the C toolchain for the soft HSA runtime's C test is missing: {why}");
        eprintln!("skipping: {why}");
        return None;
    }
    let lib = soft_hsa::built_library().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/two_kernels.c");
    let program = dir.join("two_kernels");
    let output = Command::new("gcc")
        .args(["-std=c11", "-Wall", "-Werror", "-D__HIP_PLATFORM_AMD__", "-O1", "-o"])
        .arg(&program)
        .arg(&source)
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.parent().unwrap().display()))
        .arg("-lm")
        .output()
        .unwrap();
    assert!(output.status.success(), "gcc: {}", String::from_utf8_lossy(&output.stderr));
    Some(program)
}

/// Writes a checked-in gfx1100 code object to `dir` and returns its path.
fn code_object(dir: &Path, module: &str) -> PathBuf {
    let artifact = kernels::artifact(&format!("gfx1100/{module}.co")).unwrap();
    let path = dir.join(format!("{module}.co"));
    std::fs::write(&path, artifact.bytes).unwrap();
    path
}

#[test]
fn a_c_program_dispatching_two_kernels_leaves_exactly_their_two_rows() {
    let dir = scratch("trace");
    let Some(program) = build_program(&dir) else { return };
    let (fill, rmsnorm) = (code_object(&dir, "fill"), code_object(&dir, "rmsnorm"));
    // A directory: the runtime names the file `<pid>_kernel_trace.csv` in it.
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    let output = Command::new(&program)
        .arg(&fill)
        .arg(&rmsnorm)
        .env("REDLINE_KERNEL_TRACE", &traces)
        .env("REDLINE_SOFT_HSA_ISA", "gfx1100")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let files: Vec<_> = std::fs::read_dir(&traces).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with("_kernel_trace.csv") && name[..name.len() - 17].parse::<u32>().is_ok(), "{name}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(text.lines().next(), Some(ROCPROFV3_HEADER));
    // A CSV reader that is not ours (Python's csv module) reads the same two rows under
    // rocprofv3's column names.
    let script = "import csv, json, sys\nr = csv.DictReader(open(sys.argv[1], newline=''))\n\
                  rows = list(r)\nprint(json.dumps({'fields': r.fieldnames, 'rows': rows}))";
    let out = Command::new("python3").arg("-c").arg(script).arg(&files[0]).output().expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let header: Vec<String> = ROCPROFV3_HEADER.split(',').map(|f| f.trim_matches('"').to_owned()).collect();
    assert_eq!(read["fields"], serde_json::json!(header));
    let names: Vec<&str> =
        read["rows"].as_array().unwrap().iter().map(|r| r["Kernel_Name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fill", "rmsnorm"]);
    assert_eq!(read["rows"][1]["LDS_Block_Size"], "1024");
    let rows = parse(&text).unwrap();
    assert_eq!(rows.len(), 2, "{text}");
    let (a, b) = (&rows[0], &rows[1]);
    assert_eq!((a.kernel_name.as_str(), b.kernel_name.as_str()), ("fill", "rmsnorm"));
    assert_eq!((a.dispatch_id, b.dispatch_id), (1, 2));
    assert_eq!((a.agent_id.as_str(), b.agent_id.as_str()), ("Agent 1", "Agent 1"));
    assert_eq!(a.queue_id, b.queue_id);
    assert_eq!((a.grid_size, a.workgroup_size), ([256, 1, 1], [64, 1, 1]));
    assert_eq!((b.grid_size, b.workgroup_size), ([256, 1, 1], [256, 1, 1]));
    // fill has no static LDS; rmsnorm's `float partial[256]` is 1 KiB, two 512-byte blocks.
    assert_eq!((a.lds_block_size_bytes, b.lds_block_size_bytes), (0, 1024));
    assert_eq!((a.scratch_size_bytes, b.scratch_size_bytes), (0, 0));
    // The register counts are the code objects' own metadata.
    for (row, module) in [(a, "fill"), (b, "rmsnorm")] {
        let bytes = kernels::artifact(&format!("gfx1100/{module}.co")).unwrap().bytes;
        let object = kernarg_abi::read(bytes).unwrap();
        let m = &object.kernel(module).unwrap().metadata;
        assert_eq!((row.vgpr_count, row.sgpr_count), (m.vgpr_count, m.sgpr_count), "{module}");
        assert!(row.vgpr_count > 0);
    }
    // Each span is ordered, and the second dispatch starts after the first ended (the program
    // waits for each).
    assert!(a.start_timestamp_ns <= a.end_timestamp_ns && b.start_timestamp_ns <= b.end_timestamp_ns);
    assert!(a.end_timestamp_ns <= b.start_timestamp_ns);
}

#[test]
fn without_the_variable_no_trace_is_written() {
    let dir = scratch("untraced");
    let Some(program) = build_program(&dir) else { return };
    let (fill, rmsnorm) = (code_object(&dir, "fill"), code_object(&dir, "rmsnorm"));
    let output = Command::new(&program)
        .arg(&fill)
        .arg(&rmsnorm)
        .env_remove("REDLINE_KERNEL_TRACE")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let csv: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    assert!(csv.is_empty(), "{csv:?}");
}
