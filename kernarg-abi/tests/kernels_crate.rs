//! The reader against the code objects the `kernels` crate builds and checks in
//! (`kernels/objects`): every file reads, for the target its directory names, and every
//! production kernel is replayable; the crate's ABI fixtures get the verdicts their names promise.

use std::path::{Path, PathBuf};

use kernarg_abi::layout::DispatchGeometry;
use kernarg_abi::{CodeObjectVersion, read, read_any, verdict};
use pm4_encoding::Target;

fn objects() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/objects")
}

/// `.co` files below `dir`, sorted.
fn code_objects(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
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

/// The target named by the file's directory (`gfx1100/axpy.co`).
fn directory_target(path: &Path) -> Target {
    let dir = path.parent().and_then(Path::file_name).and_then(|n| n.to_str()).unwrap();
    dir.parse().unwrap_or_else(|_| panic!("{}: directory is not a target", path.display()))
}

#[test]
fn production_kernels_read_and_are_replayable() {
    let files: Vec<PathBuf> =
        code_objects(&objects()).into_iter().filter(|p| !p.components().any(|c| c.as_os_str() == "fixtures")).collect();
    assert!(files.len() >= Target::ALL.len(), "kernels objects missing");
    for path in files {
        let co = read(&std::fs::read(&path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(co.target.target, Some(directory_target(&path)), "{}", path.display());
        assert!(!co.kernels.is_empty(), "{}", path.display());
        for k in &co.kernels {
            let v = verdict(k, &co.target);
            assert!(v.supported, "{} {}: {:?}", path.display(), k.name(), v.reasons);
            let layout = k.kernarg_layout().unwrap();
            // Only the sizes are checked here: the blob of zero-valued explicit arguments.
            let values: Vec<_> = layout
                .explicit_args()
                .map(|a| kernarg_abi::layout::ArgValue::Bytes(vec![0; a.size as usize]))
                .collect();
            let blob = layout.build(&values, &DispatchGeometry::linear(256, 64)).unwrap();
            assert_eq!(blob.len(), k.metadata.kernarg_segment_size as usize);
        }
    }
}

#[test]
fn kernels_abi_fixtures() {
    let files = code_objects(&objects().join("fixtures"));
    assert!(!files.is_empty());
    for path in files {
        let co = read(&std::fs::read(&path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(co.target.target, Some(directory_target(&path)));
        let stem = path.file_stem().unwrap().to_str().unwrap();
        for k in &co.kernels {
            let codes: Vec<&str> = verdict(k, &co.target).reasons.iter().map(|r| r.code()).collect();
            let at = format!("{} {}", path.display(), k.name());
            match stem {
                "axpy-wave64" => {
                    assert_eq!(k.metadata.wavefront_size, 64, "{at}");
                    assert_eq!(k.descriptor.kernel_code_properties().enable_wavefront_size32(), 0, "{at}");
                    assert!(codes.is_empty(), "{at}: {codes:?}");
                }
                "dispatch_ptr" => assert_eq!(codes, ["dispatch_ptr"], "{at}"),
                "scratch" => assert_eq!(codes.first(), Some(&"private_segment"), "{at}: {codes:?}"),
                "fill-v4" => assert_eq!(co.version, CodeObjectVersion::V4, "{at}"),
                other => panic!("unexpected fixture {other}"),
            }
        }
    }
}

#[test]
fn kernels_bundle_selects_every_target() {
    let bytes = std::fs::read(objects().join("fixtures/fill.bundle")).unwrap();
    for t in Target::ALL {
        let co = read_any(&bytes, Some(t)).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(co.target.target, Some(t));
        assert_eq!(co.kernel("fill").map(|k| verdict(k, &co.target).supported), Some(true));
    }
    assert!(
        matches!(read_any(&bytes, None), Err(kernarg_abi::ReadError::TargetRequired { available }) if available.len() == Target::ALL.len())
    );
}
