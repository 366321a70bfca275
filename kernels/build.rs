//! Embeds the checked-in code objects listed in `objects/MANIFEST` (no compiler involved).

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let manifest = root.join("objects/MANIFEST");
    println!("cargo::rerun-if-changed={}", manifest.display());
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let mut out = String::from("pub(super) static ARTIFACTS: &[crate::EmbeddedArtifact] = &[\n");
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (digest, path) = line.split_once("  ").unwrap_or_else(|| panic!("bad manifest line {line:?}"));
        let file = root.join("objects").join(path.trim());
        println!("cargo::rerun-if-changed={}", file.display());
        let _ = writeln!(
            out,
            "    crate::EmbeddedArtifact {{ path: {:?}, sha256: {:?}, bytes: include_bytes!({:?}) }},",
            path.trim(),
            digest,
            file.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("artifacts.rs");
    std::fs::write(dest, out).expect("write artifacts.rs");
}
