//! Every command that reads a file, given what is not a file it can read: `/dev/zero`, a symlink
//! to it, a directory, and a (sparse) regular file over the format's size limit. The first three
//! exit 2 (I/O), the last exits 1 (invalid input); each answers within a second and stays under
//! 100 MB of peak memory, measured for the child by `wait4`'s resource usage.
//!
//! The tests of this file spawn no other children, so nothing else shares the measurements.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of the binary did.
struct Run {
    code: Option<i32>,
    stderr: String,
    elapsed: Duration,
    peak_bytes: u64,
}

/// Runs `redline args` with stdout discarded, reaping the child with `wait4` to read its own
/// peak resident set.
// The child is reaped by `wait4` (for its resource usage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run(args: &[&str]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(args)
        .env("REDLINE_HOME", scratch_root().join("home"))
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    });
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: `libc::rusage` is plain old data, so all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is this process's own child, not yet reaped (the `Child` handle is never
    // waited on); `status` and `usage` are valid, exclusive out-pointers for the call.
    let reaped = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(reaped, pid, "wait4 failed: {}", std::io::Error::last_os_error());
    let elapsed = started.elapsed();
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let stderr = reader.join().unwrap();
    // Linux reports ru_maxrss in kilobytes.
    let peak_bytes = u64::try_from(usage.ru_maxrss).unwrap() * 1024;
    Run { code, stderr, elapsed, peak_bytes }
}

fn scratch_root() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad-input-files")
}

/// A fresh directory for one command's cases.
fn scratch(name: &str) -> PathBuf {
    let dir = scratch_root().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The three I/O cases and the over-limit case for a command reading one file named `name`
/// inside `dir`: `/dev/zero` itself, a symlink `name` to it, a directory `name`, and a sparse
/// file of `over_limit` bytes.
fn cases(dir: &Path, name: &str, over_limit: u64) -> [(PathBuf, i32, &'static str); 4] {
    let link = dir.join("link").join(name);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let directory = dir.join("directory").join(name);
    std::fs::create_dir_all(&directory).unwrap();
    let large = dir.join("large").join(name);
    std::fs::create_dir_all(large.parent().unwrap()).unwrap();
    std::fs::File::create(&large).unwrap().set_len(over_limit).unwrap();
    [
        (PathBuf::from("/dev/zero"), 2, "a character device"),
        (link, 2, "a character device"),
        (directory, 2, "a directory"),
        (large, 1, "limit of"),
    ]
}

const PEAK_LIMIT: u64 = 100 << 20;

/// Runs `args(path)` for each case and checks code, message, time and memory.
fn check(command: &str, cases: &[(PathBuf, i32, &str)], args: impl Fn(&str) -> Vec<String>) {
    for (path, code, needle) in cases {
        let path = path.to_str().unwrap();
        let args = args(path);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = run(&args);
        let what = format!("{command} {path}");
        assert_eq!(run.code, Some(*code), "{what}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{what}: the message says {needle:?}: {}", run.stderr);
        assert!(run.elapsed < Duration::from_secs(1), "{what}: took {:?}", run.elapsed);
        assert!(run.peak_bytes < PEAK_LIMIT, "{what}: peak memory {} bytes", run.peak_bytes);
    }
}

#[test]
fn disasm() {
    let dir = scratch("disasm");
    let cases = cases(&dir, "stream.bin", (4 << 30) + 4);
    check("disasm", &cases, |p| vec!["disasm".into(), p.into()]);
    check("disasm --aql", &cases, |p| vec!["disasm".into(), "--aql".into(), "--format".into(), "hex".into(), p.into()]);
}

#[test]
fn inspect() {
    let dir = scratch("inspect");
    check("inspect", &cases(&dir, "kernels.co", (256 << 20) + 1), |p| vec!["inspect".into(), p.into()]);
}

#[test]
fn tape_show() {
    let dir = scratch("tape");
    check("tape show", &cases(&dir, "step.tape", (256 << 20) + 1), |p| vec!["tape".into(), "show".into(), p.into()]);
}

#[test]
fn lower_tape() {
    let dir = scratch("lower-tape");
    let out = dir.join("out");
    let out = out.to_str().unwrap().to_owned();
    check("lower --tape", &cases(&dir, "step.tape", (256 << 20) + 1), |p| {
        ["lower", "--tape", p, "--arch", "gfx1100", "--out", &out].map(String::from).to_vec()
    });
}

#[test]
fn sim_run() {
    let dir = scratch("sim");
    // The bundle directory itself: /dev/zero, a symlink to it, and a file where a directory
    // belongs are all I/O errors.
    let link = dir.join("zero-link");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let plain = dir.join("plain-file");
    std::fs::write(&plain, b"{}").unwrap();
    for bundle in [Path::new("/dev/zero"), &link, &plain] {
        let run = run(&["sim", "run", bundle.to_str().unwrap()]);
        assert_eq!(run.code, Some(2), "sim run {}: {}", bundle.display(), run.stderr);
        assert!(run.elapsed < Duration::from_secs(1) && run.peak_bytes < PEAK_LIMIT);
    }
    // Its manifest: the four cases, each as DIR/manifest.json.
    let cases = cases(&dir, "manifest.json", (16 << 20) + 1);
    let bundles: Vec<(PathBuf, i32, &str)> =
        cases[1..].iter().map(|(p, code, needle)| (p.parent().unwrap().to_owned(), *code, *needle)).collect();
    check("sim run", &bundles, |p| vec!["sim".into(), "run".into(), p.into()]);
}

/// The model-loading commands take `--model PATH`.
fn model_cases(name: &str) -> [(PathBuf, i32, &'static str); 4] {
    let dir = scratch(name);
    cases(&dir, "model.gguf", (512 << 30) + 1)
}

#[test]
fn generate_model_loading() {
    check("generate --model", &model_cases("generate"), |p| {
        ["generate", "--model", p, "--prompt", "hi", "--max-tokens", "1", "--device", "sim"].map(String::from).to_vec()
    });
}

#[test]
fn serve_model_loading() {
    check("serve --model", &model_cases("serve"), |p| {
        ["serve", "--model", p, "--port", "0", "--device", "sim"].map(String::from).to_vec()
    });
}

#[test]
fn lower_model_loading() {
    let out = scratch("lower-model-out").join("out");
    let out = out.to_str().unwrap().to_owned();
    check("lower --model", &model_cases("lower-model"), |p| {
        ["lower", "--model", p, "--position", "3", "--arch", "gfx1100", "--out", &out].map(String::from).to_vec()
    });
}

/// A 512 MiB model file (sparse) whose magic is wrong: every command that loads a model judges
/// the header from the first bytes and refuses the file (exit 1, "bad magic", naming it) before
/// reading the rest, so its peak memory stays that of a process that read nothing. (The time
/// taken is printed, not checked: `serve` takes a few milliseconds.)
#[test]
fn a_large_model_with_bad_magic_is_refused_before_it_is_read() {
    let dir = scratch("bad-magic");
    let path = dir.join("big.gguf");
    std::fs::write(&path, b"GGUX").unwrap();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(512 << 20).unwrap();
    let p = path.to_str().unwrap();
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let commands: [&[&str]; 4] = [
        &["serve", "--model", p, "--port", "0", "--device", "sim"],
        &["generate", "--model", p, "--prompt", "hi", "--max-tokens", "1", "--device", "sim"],
        &["lower", "--model", p, "--position", "3", "--arch", "gfx1100", "--out", out],
        &["bench", "--model", p, "--device", "sim", "--out", out],
    ];
    for args in commands {
        let run = run(args);
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("bad magic") && run.stderr.contains(p), "{args:?}: {}", run.stderr);
        assert!(run.peak_bytes < 50 << 20, "{args:?}: peak memory {} bytes", run.peak_bytes);
        println!("{}: refused in {:?}, peak {} bytes", args[0], run.elapsed, run.peak_bytes);
    }
}
