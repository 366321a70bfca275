//! Every transcribed struct, union, ioctl request and constant against the installed C headers.
//!
//! The C program is generated from `kmd_direct::layout_table()`: one `printf` per row, compiled
//! with `cc -I/usr/include/libdrm` and run; each printed value must equal the Rust one. Needs the
//! Debian packages `libdrm-dev` and `gcc`. Without them the test fails when `CI=true` and skips
//! (saying why) otherwise.
#![cfg(all(
    target_os = "linux",
    target_pointer_width = "64",
    any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")
))]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const INCLUDE_DIR: &str = "/usr/include/libdrm";

/// Fails under CI, skips with a message elsewhere.
fn missing(why: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(!ci, "layout check cannot run under CI: {why} (install libdrm-dev and gcc)");
    eprintln!("skipping the layout check: {why} (install libdrm-dev and gcc)");
}

fn c_program(rows: &[(String, i128)]) -> String {
    let mut src =
        String::from("#include <stddef.h>\n#include <stdio.h>\n#include <amdgpu_drm.h>\n\nint main(void) {\n");
    for (expr, _) in rows {
        writeln!(src, "    printf(\"%lld\\n\", (long long)({expr}));").unwrap();
    }
    src.push_str("    return 0;\n}\n");
    src
}

fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("kmd-direct-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn layout_table_matches_the_installed_headers() {
    let header = Path::new(INCLUDE_DIR).join("amdgpu_drm.h");
    if !header.exists() {
        return missing(&format!("{} not found", header.display()));
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    if Command::new(&cc).arg("--version").output().is_err() {
        return missing(&format!("C compiler `{cc}` not found"));
    }

    let rows = kmd_direct::layout_table();
    assert!(rows.len() > 300, "the table lost rows: {}", rows.len());
    for name in ["DRM_IOCTL_VERSION", "DRM_IOCTL_GEM_CLOSE", "DRM_IOCTL_AMDGPU_CS", "AMDGPU_HW_IP_COMPUTE"] {
        assert!(rows.iter().any(|(expr, _)| expr == name), "{name} missing from the table");
    }

    let dir = work_dir();
    let source = dir.join("layout.c");
    let binary = dir.join("layout");
    std::fs::write(&source, c_program(&rows)).unwrap();
    let compile = Command::new(&cc)
        .args(["-std=gnu11", "-Wall", "-Werror", "-I", INCLUDE_DIR, "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        compile.status.success(),
        "{cc} failed on {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&compile.stderr)
    );
    let run = Command::new(&binary).output().unwrap();
    assert!(run.status.success(), "{} failed", binary.display());
    let stdout = String::from_utf8(run.stdout).unwrap();
    let c_values: Vec<i128> = stdout.lines().map(|line| line.parse().unwrap()).collect();
    assert_eq!(c_values.len(), rows.len(), "one printed value per row");

    let mismatches: Vec<String> = rows
        .iter()
        .zip(&c_values)
        .filter(|((_, rust), c)| rust != *c)
        .map(|((expr, rust), c)| format!("{expr}: C {c} ({c:#x}), Rust {rust} ({rust:#x})"))
        .collect();
    assert!(mismatches.is_empty(), "{} of {} rows differ:\n{}", mismatches.len(), rows.len(), mismatches.join("\n"));
    std::fs::remove_dir_all(&dir).ok();
}
