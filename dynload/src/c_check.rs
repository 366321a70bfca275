//! The C layout cross-check behind the bindings crates' `tests/c_layout.rs`.
//!
//! [`check`] writes a C program that includes the bindings' headers and prints every
//! [`LayoutEntry`] expression, compiles it with `$CC` (else `cc`), runs it and compares each
//! printed value with the Rust one. A program that only includes the headers is compiled first,
//! which tells "no compiler or headers" (a skip, or a failure under `CI=true`) apart from a table
//! expression the headers do not declare (always a failure).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::LayoutEntry;

/// What the C side is compiled against.
#[derive(Clone, Copy, Debug)]
pub struct Headers<'a> {
    /// Headers to include, in order (`<...>` form).
    pub includes: &'a [&'a str],
    /// Preprocessor definitions (`-D`).
    pub defines: &'a [&'a str],
    /// Include directories besides the compiler's defaults (`-I`).
    pub include_dirs: &'a [&'a str],
}

/// How a [`check`] ended when it did not panic.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Outcome {
    /// Every entry matched; the number of entries.
    Matched(usize),
    /// The compiler or the headers are missing (and `CI` is not `true`); the reason.
    Skipped(String),
}

/// Compares `table` with the values the C compiler computes from `headers`, using `scratch` (created
/// if missing) for the generated files.
///
/// # Panics
///
/// On any mismatch, on an expression the headers do not declare, when the program fails, and,
/// when the environment variable `CI` is `true`, when the compiler or the headers are missing.
pub fn check(table: &[LayoutEntry], headers: &Headers<'_>, scratch: &Path) -> Outcome {
    std::fs::create_dir_all(scratch)
        .unwrap_or_else(|error| panic!("creating the scratch directory {}: {error}", scratch.display()));
    let probe = format!("{}int main(void) {{ return 0; }}\n", includes(headers.includes));
    if let Err(reason) = compile(&probe, headers, scratch, "probe") {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and {reason}");
        eprintln!("skipping the C layout check: {reason}");
        return Outcome::Skipped(reason);
    }
    let binary = compile(&program(table, headers.includes), headers, scratch, "layout")
        .unwrap_or_else(|error| panic!("{error}"));
    let output = Command::new(&binary).output().expect("run the layout program");
    assert!(output.status.success(), "the layout program failed: {:?}", output.status);
    let stdout = String::from_utf8(output.stdout).expect("the layout program prints ASCII");
    let c_values: Vec<i128> = stdout.lines().map(|line| line.parse().expect("one integer a line")).collect();
    assert_eq!(c_values.len(), table.len(), "one line per entry");
    let mismatches = mismatches(table, &c_values);
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n"));
    println!("{} entries match the C headers", table.len());
    Outcome::Matched(table.len())
}

/// One line per entry whose C value differs from the Rust one.
fn mismatches(table: &[LayoutEntry], c_values: &[i128]) -> Vec<String> {
    table
        .iter()
        .zip(c_values)
        .filter(|(entry, c_value)| entry.rust != **c_value)
        .map(|(entry, c_value)| format!("{}: C {c_value}, Rust {}", entry.c_expr, entry.rust))
        .collect()
}

/// Writes `source` to `scratch/name.c` and compiles it to `scratch/name`.
fn compile(source: &str, headers: &Headers<'_>, scratch: &Path, name: &str) -> Result<PathBuf, String> {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let source_path = scratch.join(format!("{name}.c"));
    let binary = scratch.join(name);
    std::fs::write(&source_path, source).map_err(|error| format!("writing {}: {error}", source_path.display()))?;
    let mut command = Command::new(&compiler);
    command.arg("-std=c11").arg("-Wall").arg("-o").arg(&binary).arg(&source_path);
    command.args(headers.defines.iter().map(|define| format!("-D{define}")));
    command.args(headers.include_dirs.iter().map(|dir| format!("-I{dir}")));
    let output = command.output().map_err(|error| format!("running {compiler}: {error}"))?;
    if !output.status.success() {
        return Err(format!("{compiler} failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    Ok(binary)
}

/// The `#include` lines: the standard headers the program needs, then `headers`.
fn includes(headers: &[&str]) -> String {
    let mut text = String::from("#include <stddef.h>\n#include <stdio.h>\n");
    for header in headers {
        let _ = writeln!(text, "#include <{header}>");
    }
    text
}

/// The program that prints every entry's C value, one a line.
fn program(table: &[LayoutEntry], headers: &[&str]) -> String {
    let mut text = includes(headers);
    text.push_str("int main(void) {\n");
    for entry in table {
        let _ = writeln!(text, "    printf(\"%lld\\n\", (long long)({}));", entry.c_expr);
    }
    text.push_str("    return 0;\n}\n");
    text
}

/// The structs declared with fields in `types_source` (`pub struct Name {`) that have no
/// `struct_layout!(out; Name = ...)` there: a struct without one would be neither asserted at
/// compile time nor cross-checked against C.
#[must_use]
pub fn structs_without_layout(types_source: &str) -> Vec<&str> {
    types_source
        .lines()
        .filter_map(|line| line.strip_prefix("pub struct "))
        .filter(|rest| rest.ends_with('{'))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|name| !types_source.contains(&format!("struct_layout!(out; {name} =")))
        .collect()
}

/// The C expressions that occur more than once in `table` (each listed once per repeat).
#[must_use]
pub fn repeated_expressions(table: &[LayoutEntry]) -> Vec<&'static str> {
    table
        .iter()
        .enumerate()
        .filter(|(index, entry)| table[..*index].iter().any(|other| other.c_expr == entry.c_expr))
        .map(|(_, entry)| entry.c_expr)
        .collect()
}

/// The two self-checks of a `-sys` crate's layout table, as unit tests: every struct declared in
/// its `types.rs` source has a `struct_layout!` invocation, and no C expression of the table is
/// repeated (a repeated one would compare one fact twice and hide a missing one).
#[macro_export]
macro_rules! layout_self_checks {
    ($types_source:expr, $table:expr) => {
        #[test]
        fn every_struct_has_a_layout_invocation() {
            let source = $types_source;
            assert!(source.contains("pub struct "));
            assert_eq!($crate::c_check::structs_without_layout(source), Vec::<&str>::new());
        }

        #[test]
        fn expressions_are_unique() {
            assert_eq!($crate::c_check::repeated_expressions(&$table), Vec::<&str>::new());
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_prints_every_expression() {
        let table = [LayoutEntry::size("sizeof(int)", 4), LayoutEntry::value("EOF", -1)];
        let text = program(&table, &["stdint.h"]);
        assert!(text.starts_with("#include <stddef.h>\n#include <stdio.h>\n#include <stdint.h>\n"), "{text}");
        assert!(text.contains("printf(\"%lld\\n\", (long long)(sizeof(int)));"), "{text}");
        assert!(text.contains("printf(\"%lld\\n\", (long long)(EOF));"), "{text}");
    }

    #[test]
    fn mismatches_name_the_expression_and_both_values() {
        let table = [LayoutEntry::size("sizeof(int)", 4), LayoutEntry::value("EOF", -1)];
        assert!(mismatches(&table, &[4, -1]).is_empty());
        assert_eq!(mismatches(&table, &[8, -1]), ["sizeof(int): C 8, Rust 4"]);
    }

    #[test]
    fn standard_headers_match() {
        let table = [
            LayoutEntry::size("sizeof(char)", 1),
            LayoutEntry::size("_Alignof(long long)", core::mem::align_of::<i64>()),
            LayoutEntry::value("EOF", -1),
        ];
        let headers = Headers { includes: &["stdint.h"], defines: &["DYNLOAD_TEST=1"], include_dirs: &[] };
        let scratch = std::env::temp_dir().join(format!("dynload-c-check-{}", std::process::id()));
        let outcome = check(&table, &headers, &scratch);
        let _ = std::fs::remove_dir_all(&scratch);
        if let Outcome::Matched(count) = outcome {
            assert_eq!(count, table.len());
        }
    }

    #[test]
    fn structs_without_a_layout_invocation_are_named() {
        let source = "pub struct A {\n}\nstruct_layout!(out; A = ...);\npub struct B {\n}\npub struct C(u32);\n";
        assert_eq!(structs_without_layout(source), vec!["B"]);
    }

    #[test]
    fn repeated_expressions_are_named() {
        let table =
            [LayoutEntry::size("sizeof(a)", 4), LayoutEntry::size("sizeof(b)", 4), LayoutEntry::value("sizeof(a)", 4)];
        assert_eq!(repeated_expressions(&table), vec!["sizeof(a)"]);
        assert!(repeated_expressions(&table[..2]).is_empty());
    }
}
