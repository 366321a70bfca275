//! Compiles a C program against the installed ROCm headers that prints every entry of
//! `hip_sys::layout::layout_table()` and compares the output with the Rust values.
//!
//! Needs a C compiler (`$CC`, else `cc`) and the headers (Debian: `libamdhip64-dev`). Without
//! them the test fails under `CI=true` and is skipped, with the reason printed, otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use hip_sys::layout::{LAYOUT_DEFINES, LAYOUT_HEADERS, LayoutEntry, layout_table};

/// Include directories besides the compiler's defaults (`/usr/include` on Debian).
const INCLUDE_DIRS: &[&str] = &["/opt/rocm/include"];

fn skip(reason: &str) {
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and {reason}");
    eprintln!("skipping the C layout check: {reason}");
}

fn compile(source: &str, dir: &Path, name: &str) -> Result<PathBuf, String> {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let source_path = dir.join(format!("{name}.c"));
    let binary = dir.join(name);
    std::fs::write(&source_path, source).map_err(|error| format!("writing {}: {error}", source_path.display()))?;
    let mut command = Command::new(&compiler);
    command.arg("-std=c11").arg("-Wall").arg("-o").arg(&binary).arg(&source_path);
    command.args(LAYOUT_DEFINES.iter().map(|define| format!("-D{define}")));
    command.args(INCLUDE_DIRS.iter().map(|dir| format!("-I{dir}")));
    let output = command.output().map_err(|error| format!("running {compiler}: {error}"))?;
    if !output.status.success() {
        return Err(format!("{compiler} failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    Ok(binary)
}

fn includes() -> String {
    let mut text = String::from("#include <stddef.h>\n#include <stdio.h>\n");
    for header in LAYOUT_HEADERS {
        text.push_str(&format!("#include <{header}>\n"));
    }
    text
}

fn program(table: &[LayoutEntry]) -> String {
    let mut text = includes();
    text.push_str("int main(void) {\n");
    for entry in table {
        text.push_str(&format!("    printf(\"%lld\\n\", (long long)({}));\n", entry.c_expr));
    }
    text.push_str("    return 0;\n}\n");
    text
}

#[test]
fn every_transcribed_item_matches_the_c_headers() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hip-sys-c-layout");
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    // A program that only includes the headers tells "no compiler or headers" (a skip) apart
    // from a table expression the headers do not declare (a failure).
    if let Err(reason) = compile(&format!("{}int main(void) {{ return 0; }}\n", includes()), &dir, "probe") {
        skip(&reason);
        return;
    }
    let table = layout_table();
    let binary = compile(&program(&table), &dir, "layout").unwrap_or_else(|error| panic!("{error}"));
    let output = Command::new(&binary).output().expect("run the layout program");
    assert!(output.status.success(), "the layout program failed: {:?}", output.status);
    let stdout = String::from_utf8(output.stdout).expect("the layout program prints ASCII");
    let c_values: Vec<i128> = stdout.lines().map(|line| line.parse().expect("one integer a line")).collect();
    assert_eq!(c_values.len(), table.len(), "one line per entry");
    let mismatches: Vec<String> = table
        .iter()
        .zip(&c_values)
        .filter(|(entry, c_value)| entry.rust != **c_value)
        .map(|(entry, c_value)| format!("{}: C {c_value}, Rust {}", entry.c_expr, entry.rust))
        .collect();
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n"));
    println!("{} entries match the C headers", table.len());
}
