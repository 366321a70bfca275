//! Rebuilds Redline's code objects with clang-19 and rewrites `objects/MANIFEST`.
//!
//! Usage: `cargo run -p kernels --bin build-kernels [-- --check]`. With `--check`, builds into a
//! temporary directory and compares with the checked-in manifest and files instead (exit 1 on any
//! difference). `REDLINE_CLANG` overrides the compiler (default `clang-19`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kernels::compile::{self, MANIFEST_PATH};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = match args.as_slice() {
        [] => false,
        [flag] if flag == "--check" => true,
        [flag] if flag == "--help" || flag == "-h" => {
            println!(
                "usage: build-kernels [--check]\n\nRebuilds kernels/objects with clang-19 (or $REDLINE_CLANG) and rewrites objects/MANIFEST;\n--check builds into a temporary directory and compares digests with the manifest instead."
            );
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("build-kernels: unexpected arguments {args:?} (usage: build-kernels [--check])");
            return ExitCode::from(2);
        }
    };
    match run(check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("build-kernels: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(check: bool) -> Result<bool, compile::CompileError> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let hip = root.join("hip");
    let version = compile::compiler_version()?;
    eprintln!("build-kernels: {version}");
    let out = if check {
        std::env::temp_dir().join(format!("redline-kernels-{}", std::process::id()))
    } else {
        root.join("objects")
    };
    let rows = compile::build_all(&hip, &out, |i, n, a| eprintln!("[{i:>2}/{n}] {}", a.path))?;
    let manifest = root.join(MANIFEST_PATH);
    if !check {
        let text = compile::format_manifest(&version, &rows);
        std::fs::write(&manifest, text)
            .map_err(|source| compile::CompileError::Io { path: manifest.clone(), source })?;
        eprintln!("build-kernels: wrote {} artifacts and {}", rows.len(), manifest.display());
        return Ok(true);
    }
    let same = compare(&manifest, &rows);
    std::fs::remove_dir_all(&out).ok();
    Ok(same)
}

fn compare(manifest: &Path, rows: &[(String, String)]) -> bool {
    let Ok(text) = std::fs::read_to_string(manifest) else {
        eprintln!("build-kernels: cannot read {}", manifest.display());
        return false;
    };
    let expected = compile::parse_manifest(&text);
    let mut same = expected.len() == rows.len();
    for (want, got) in expected.iter().zip(rows) {
        if want != got {
            eprintln!("differs: manifest {} {} / rebuilt {} {}", want.0, want.1, got.0, got.1);
            same = false;
        }
    }
    eprintln!("build-kernels: {} artifacts, {}", rows.len(), if same { "all digests match" } else { "MISMATCH" });
    same
}
