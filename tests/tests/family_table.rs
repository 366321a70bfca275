//! "Per-family and per-target differences live in one table each": outside `pm4-encoding`'s family
//! and target tables (`src/family.rs`, the family modules of `src/regs/`) and its decoder, no
//! non-test source matches on a family or target, compares one, compares a target name, or looks a
//! register up by its name string. Shared code reads a field of the family's row
//! (`docs/ARCHITECTURE.md`, "Adding a GPU target or family").

use std::path::{Path, PathBuf};

/// Files that are the tables (or decode any family's words for display), relative to the
/// workspace root.
const TABLE_FILES: [&str; 3] = ["pm4-encoding/src/family.rs", "pm4-encoding/src/regs/", "pm4-encoding/src/decoder.rs"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Every `.rs` file below `dir` that is not test code (a `tests/` or `benches/` directory, which
/// holds the workspace suite too, a `tests.rs` module, a fuzz target, build output in `target/`).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["tests", "benches", "target", "fuzz", ".git"].contains(&name.as_str()) {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// `text` without its `#[cfg(test)]` items: from each `#[cfg(test)]` line to the end of the item
/// it opens (brace depth back to where it started).
fn non_test_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut skipping: Option<i32> = None;
    let mut depth = 0i32;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if skipping.is_none() && trimmed.starts_with("#[cfg(test)]") {
            skipping = Some(depth);
            continue;
        }
        let opens = i32::try_from(line.matches('{').count()).unwrap();
        let closes = i32::try_from(line.matches('}').count()).unwrap();
        depth += opens - closes;
        match skipping {
            // A braced item ends when the depth is back; a one-line item (`mod tests;`) ends at `;`.
            Some(start) if (opens > 0 || closes > 0) && depth <= start => skipping = None,
            Some(start) if opens == 0 && closes == 0 && depth == start && trimmed.ends_with(';') => skipping = None,
            Some(_) => {}
            None if trimmed.starts_with("//") => {}
            None => out.push((number + 1, line)),
        }
    }
    out
}

/// What a line does that only the tables may do, if anything.
fn dispatch_on_family(line: &str) -> Option<&'static str> {
    let variant = |from: usize| -> Option<usize> {
        ["Family::Gfx", "Target::Gfx"].iter().filter_map(|p| line[from..].find(p).map(|at| from + at)).min()
    };
    let mut from = 0;
    while let Some(at) = variant(from) {
        let end =
            at + line[at..].find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(line.len() - at);
        let before = line[..at].trim_end();
        let after = line[end..].trim_start();
        if after.starts_with("=>") || after.starts_with('|') && !after.starts_with("||") {
            return Some("a match arm on a family or target");
        }
        if before.ends_with("==") || before.ends_with("!=") || after.starts_with("==") || after.starts_with("!=") {
            return Some("a family or target comparison");
        }
        if before.contains("matches!(") || before.ends_with("if let") || before.ends_with("let") {
            return Some("a pattern on a family or target");
        }
        from = end;
    }
    if line.contains("by_name(") && line.contains("regs::") {
        return Some("a register looked up by its name string");
    }
    let target_name = line.match_indices("\"gfx1").any(|(at, _)| {
        let rest = &line[at + 1..];
        let close = rest.find('"').unwrap_or(rest.len());
        let after = rest[close..].trim_start_matches('"').trim_start();
        let before = line[..at].trim_end();
        after.starts_with("=>") || after.starts_with("==") || before.ends_with("==") || before.ends_with("!=")
    });
    target_name.then_some("a target name compared as a string")
}

/// Every `(file:line, what)` outside the tables.
fn findings() -> Vec<(String, &'static str)> {
    let root = workspace();
    let mut files = Vec::new();
    sources(&root, &mut files);
    files.sort();
    assert!(files.len() > 100, "the scan found the workspace's sources ({} files)", files.len());
    let mut out = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        if TABLE_FILES.iter().any(|t| relative.starts_with(t)) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in non_test_lines(&text) {
            if let Some(what) = dispatch_on_family(line) {
                out.push((format!("{relative}:{number}"), what));
            }
        }
    }
    out
}

#[test]
fn no_family_or_target_dispatch_outside_the_tables() {
    let found = findings();
    assert!(found.is_empty(), "read a field of `Family::facts()` / `Target::facts()` instead:\n{found:#?}");
}

#[test]
fn the_scan_recognises_each_kind_of_dispatch() {
    for line in [
        "        Family::Gfx10_3 => gfx10_3::FACTS,",
        "        Target::Gfx1100 | Target::Gfx1151 => Family::Gfx11,",
        "    let work_items = family == Family::Gfx12;",
        "    if Target::Gfx1201 != target {",
        "    matches!(family, Family::Gfx11)",
        "    regs::by_name(family, name).unwrap()",
        "    if target.name() == \"gfx1100\" {",
        "        \"gfx1030\" => 0x73bf,",
    ] {
        assert!(dispatch_on_family(line).is_some(), "{line}");
    }
    for line in [
        "    let target = arch.unwrap_or(Target::Gfx1100);",
        "    family.facts().dims_in_work_items",
        "        0x036 => \"gfx1030\",",
        "    let a = b || Family::ALL.len() == 3;",
    ] {
        assert_eq!(dispatch_on_family(line), None, "{line}");
    }
}

#[test]
fn test_items_are_left_out_of_the_scan() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { x == Family::Gfx12 }\n}\nfn c() {}\n";
    let lines: Vec<usize> = non_test_lines(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(lines, [1, 6]);
    let text = "#[cfg(test)]\nmod tests;\nfn d() {}\n";
    assert_eq!(non_test_lines(text).into_iter().map(|(n, _)| n).collect::<Vec<_>>(), [3]);
}
