//! `redline sim run DIR` on bundles mutated at random: a property test changes one thing in the
//! manifest or the region files of the `redline lower --example window` bundle and checks that
//! the result runs clean or fails classified by the exit-code rule of `sim_bad_input.rs` (1 for
//! an invalid bundle, 2 for usage and I/O), in process and through the binary, and that it runs
//! clean only when it left the submission and its checks as they were.

mod common;

use std::path::Path;

use common::bundles::{bundle, edit, manifest, region_of_role, sim_run, template};
use proptest::prelude::*;
use serde_json::Value;
use soft_device::bundle::Bundle;

/// Every JSON pointer of `v` (objects, arrays and leaves), the root excluded.
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let p = format!("{at}/{k}");
                out.push(p.clone());
                pointers(child, &p, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(child, &p, out);
            }
        }
        _ => {}
    }
}

/// Replacement values: other types, edge numbers, VAs near the bundle's, rules, paths, dtypes.
fn values() -> Vec<Value> {
    let mut v: Vec<Value> = vec![
        Value::Null,
        true.into(),
        0.into(),
        1.into(),
        4.into(),
        8.into(),
        200.into(),
        1280.into(),
        (-1).into(),
        u64::from(u32::MAX).into(),
        (1u64 << 32).into(),
        u64::MAX.into(),
        1.5.into(),
        "".into(),
        "0x0".into(),
        "0x10000".into(),
        "0x7e0000a00000".into(),
        "0x7e0000a0018c".into(),
        "0x7e0000a012bc".into(),
        "0x7e0000a012c4".into(),
        "0x7e0000a01000".into(),
        "0x7e0000a02000".into(),
        "0x7f000041a000".into(),
        "0xffffffffffffffff".into(),
        "0x1ffffffffffffffff".into(),
        "position ** banana".into(),
        "position + 1".into(),
        "ceil((position + 1) / 64)".into(),
        "ceil((position + 1) / 0)".into(),
        "f32".into(),
        "float".into(),
        "signal".into(),
        "kernargs".into(),
        "dispatch_dim".into(),
        "kernarg_u32".into(),
        "gfx1201".into(),
        "ib.bin".into(),
        "aql.bin".into(),
        "done.bin".into(),
        "regions/alloc6.bin".into(),
        "missing.bin".into(),
        "regions".into(),
        "../x".into(),
        "/dev/zero".into(),
        "alloc6".into(),
        Value::Array(vec![]),
        serde_json::json!({}),
    ];
    v.push("x".repeat(100_000).into());
    v
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the value at the pointer (index into [`pointers`]) with one of [`values`].
    Set(usize, usize),
    /// Remove the member or element at the pointer.
    Remove(usize),
    /// Rewrite region `i`'s file with `len` zero bytes.
    Resize(usize, usize),
    /// Rewrite region `i`'s file with as many zero bytes as it holds (its size stays right).
    Zero(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<prop::sample::Index>(), any::<prop::sample::Index>()).prop_map(|(p, v)| Mutation::Set(p.index(1 << 20), v.index(1 << 20))),
        1 => any::<prop::sample::Index>().prop_map(|p| Mutation::Remove(p.index(1 << 20))),
        1 => (0usize..8, prop_oneof![Just(0usize), Just(1279), Just(1280), Just(1281), 0usize..70_000])
            .prop_map(|(r, len)| Mutation::Resize(r, len)),
        1 => (0usize..8).prop_map(Mutation::Zero),
    ]
}

/// Applies `mutation` to the bundle in `dir`; returns true when it makes a file the manifest
/// names something that exists but is not a regular file (then the error must be an I/O one;
/// otherwise never: a named file that is missing makes the bundle invalid).
fn apply(dir: &Path, mutation: &Mutation) -> bool {
    let mut m = manifest(dir);
    let mut all = Vec::new();
    pointers(&m, "", &mut all);
    let values = values();
    let mut io = false;
    match *mutation {
        Mutation::Set(p, v) => {
            let pointer = &all[p % all.len()];
            let value = values[v % values.len()].clone();
            if pointer.ends_with("/file")
                && let Some(name) = value.as_str()
                && !name.is_empty()
                && !name.starts_with('/')
                && !name.contains("..")
                && name.len() <= soft_device::bundle::FILE_NAME_BYTES_MAX
                && std::fs::metadata(dir.join(name)).is_ok_and(|meta| !meta.is_file())
            {
                io = true;
            }
            *m.pointer_mut(pointer).unwrap() = value;
        }
        Mutation::Remove(p) => {
            let pointer = &all[p % all.len()];
            let (parent, last) = pointer.rsplit_once('/').unwrap();
            match m.pointer_mut(parent).unwrap() {
                Value::Object(map) => {
                    map.remove(last);
                }
                Value::Array(items) => {
                    items.remove(last.parse::<usize>().unwrap());
                }
                _ => unreachable!("a parent is a container"),
            }
        }
        Mutation::Resize(r, len) => {
            let file = m["regions"][r]["file"].as_str().unwrap().to_owned();
            std::fs::write(dir.join(file), vec![0u8; len]).unwrap();
        }
        Mutation::Zero(r) => {
            let file = dir.join(m["regions"][r]["file"].as_str().unwrap());
            let len = std::fs::metadata(&file).unwrap().len();
            std::fs::write(file, vec![0u8; usize::try_from(len).unwrap()]).unwrap();
        }
    }
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    io
}

/// The mutation in words: the JSON pointer it changes and how.
fn describe(mutation: &Mutation) -> String {
    let mut all = Vec::new();
    pointers(&manifest(template()), "", &mut all);
    match *mutation {
        Mutation::Set(p, v) => format!("{} = {}", all[p % all.len()], values()[v % values().len()]),
        Mutation::Remove(p) => format!("{} removed", all[p % all.len()]),
        Mutation::Resize(r, len) => format!("regions[{r}]'s file rewritten as {len} zero bytes"),
        Mutation::Zero(r) => format!("regions[{r}]'s file zeroed"),
    }
}

/// What `redline sim run` exits with for the bundle, computed in process.
fn in_process(dir: &Path) -> (i32, String) {
    match Bundle::open(dir).map_err(soft_device::bundle::RunError::from).and_then(|b| b.run()) {
        Ok(_) => (0, String::new()),
        Err(e) => (if e.is_io() { 2 } else { 1 }, e.to_string()),
    }
}

/// What a bundle submits and checks, by content, as the manifest format documents it (the
/// module documentation of `soft_device::bundle`): the format and target; the IB's VA, dword
/// count and bytes; the AQL packets' count and bytes; each code object's load VA and bytes; each
/// region's VA, size, whether it is a signal, its initial bytes (zeros without a file) and whether
/// the step reads them (an input or kernargs region); each expected result's region (by index),
/// digest and bytes. Names,
/// dtypes, binding names, patch sites and the declared kernel lists are left out: they label or
/// re-check the submission without changing what it computes. `None` when a field is missing, of the wrong type, or names a region or
/// file that is not there.
#[derive(Debug, PartialEq)]
struct Meaning {
    head: [String; 2],
    ib: (String, u64, Vec<u8>),
    aql: (u64, Vec<u8>),
    code: Vec<(String, Vec<u8>)>,
    regions: Vec<Region>,
    expected: Vec<(usize, String, Vec<u8>)>,
}

/// One region as [`Meaning`] sees it.
#[derive(Debug, PartialEq)]
struct Region {
    va: String,
    size: u64,
    signal: bool,
    read: bool,
    bytes: Vec<u8>,
}

impl Region {
    /// Whether a region laid out as `self` may stand for `before` in a clean run: the same VA,
    /// size and signal, and the same initial bytes whenever either side's role reads them. A
    /// role is otherwise a label: a state region relabelled kernargs keeps its bytes, and so
    /// submits the same step.
    fn stands_for(&self, before: &Region) -> bool {
        (&self.va, self.size, self.signal) == (&before.va, before.size, before.signal)
            && (!(self.read || before.read) || self.bytes == before.bytes)
    }
}

fn meaning(dir: &Path, m: &Value) -> Option<Meaning> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let file = |v: &Value| -> Option<Vec<u8>> {
        let name = v.as_str()?;
        if name.is_empty() || name.starts_with('/') || name.contains("..") {
            return None;
        }
        std::fs::read(dir.join(name)).ok()
    };
    let head = [text(&m["format"])?, text(&m["arch"])?];
    let ib = (text(&m["ib"]["va"])?, m["ib"]["size_dwords"].as_u64()?, file(&m["ib"]["file"])?);
    let aql = (m["aql"]["packets"].as_u64()?, file(&m["aql"]["file"])?);
    let code = m["code_objects"]
        .as_array()?
        .iter()
        .map(|c| Some((text(&c["load_va"])?, file(&c["file"])?)))
        .collect::<Option<_>>()?;
    let mut names = Vec::new();
    let mut regions = Vec::new();
    for r in m["regions"].as_array()? {
        let size = r["size"].as_u64()?;
        let bytes = match r.get("file") {
            None | Some(Value::Null) => vec![0; usize::try_from(size).ok()?],
            Some(f) => file(f)?,
        };
        names.push(text(&r["name"])?);
        // The initial bytes that count are those the step reads: its inputs and kernargs. A
        // state or output region may be written whole before it is read (the window example's
        // state is), and a signal region's bytes are the completion signal's initial value,
        // which the soft device's run does not depend on (it runs the packets whatever it is).
        let role = text(&r["role"])?;
        let read = matches!(role.as_str(), "input" | "kernargs");
        regions.push(Region { va: text(&r["va"])?, size, signal: role == "signal", read, bytes });
    }
    // An absent list of expected results checks nothing.
    let no_expected = Vec::new();
    let expected = m
        .get("expected")
        .map_or(Some(&no_expected), Value::as_array)?
        .iter()
        .map(|e| {
            let name = e["region"].as_str()?;
            Some((names.iter().position(|n| n == name)?, text(&e["sha256"])?, file(&e["file"])?))
        })
        .collect::<Option<_>>()?;
    Some(Meaning { head, ib, aql, code, regions, expected })
}

/// Whether a bundle that means `after` may run clean where the original meant `before`: the
/// same submission, checked against some of the same expected results.
fn may_run_clean(before: &Meaning, after: Option<&Meaning>) -> bool {
    after.is_some_and(|after| {
        let same = (&after.head, &after.ib, &after.aql, &after.code)
            == (&before.head, &before.ib, &before.aql, &before.code)
            && after.regions.len() == before.regions.len()
            && after.regions.iter().zip(&before.regions).all(|(a, b)| a.stands_for(b));
        same && after.expected.iter().all(|e| before.expected.contains(e))
    })
}

/// A state region relabelled kernargs keeps its bytes, so the step it submits is the one before
/// and it runs clean; the same relabelling over other bytes changes what the step reads, and the
/// oracle must call it a change. (An oracle that drops unread regions' bytes from both sides
/// wrongly calls the first a change.)
#[test]
fn a_role_is_a_label_unless_the_bytes_it_reads_change() {
    let dir = bundle("relabel");
    let before = meaning(&dir, &manifest(&dir)).unwrap();
    let state = region_of_role(&manifest(&dir), "state");
    edit(&dir, |m| m["regions"][state]["role"] = Value::from("kernargs"));
    assert_eq!(in_process(&dir).0, 0, "{}", in_process(&dir).1);
    assert!(may_run_clean(&before, meaning(&dir, &manifest(&dir)).as_ref()));
    let file = dir.join(manifest(&dir)["regions"][state]["file"].as_str().unwrap());
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&file, bytes).unwrap();
    assert!(!may_run_clean(&before, meaning(&dir, &manifest(&dir)).as_ref()));
    let _ = std::fs::remove_dir_all(&dir);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any single mutation runs clean or fails classified by the rule, without a panic, and
    /// with a message of bounded length; and it runs clean only when it left the submission and
    /// its checks as they were ([`Meaning`]): a mutation of what runs (a VA, a size, a file's
    /// bytes, the IB, a digest) must be refused.
    #[test]
    fn mutated_bundles_fail_classified_in_process(mutation in mutation()) {
        let dir = bundle("prop");
        let before = meaning(&dir, &manifest(&dir)).expect("the bundle as written");
        let io = apply(&dir, &mutation);
        let after = meaning(&dir, &manifest(&dir));
        let (code, message) = in_process(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        prop_assert!(message.len() < 2000, "{mutation:?}: a {}-byte message", message.len());
        if io {
            prop_assert_eq!(code, 2, "{:?}: {}", mutation, message);
        } else {
            prop_assert!(code != 2, "{:?}: {}", mutation, message);
        }
        if code == 0 {
            prop_assert!(
                may_run_clean(&before, after.as_ref()),
                "{:?} ({}) changed what runs, and it ran clean",
                mutation,
                describe(&mutation)
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// The binary exits with the code the in-process run implies for a sample of mutations.
    #[test]
    fn mutated_bundles_exit_by_the_rule(mutation in mutation()) {
        let dir = bundle("prop-cli");
        let io = apply(&dir, &mutation);
        let (code, message) = in_process(&dir);
        let out = sim_run(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        prop_assert_eq!(out.status.code(), Some(code), "{:?}: {} / {}", mutation, message, stderr);
        prop_assert_eq!(code == 2, io, "{:?}: {}", mutation, stderr);
        if code != 0 {
            prop_assert!(stderr.contains(&message), "{:?}: {}", mutation, stderr);
        }
    }
}
