//! One exit rule for every command that reads a file: a missing file is a usage or I/O error
//! (exit 2), a file that is there but invalid is invalid input (exit 1), and so is a manifest
//! that names a file by a path no file can have (a NUL or another control character, a trailing
//! `/`). And every input-controlled string the commands print (a path, a kernel symbol, a model's
//! vocabulary) reaches the terminal with its control characters spelled out.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("exit-rule").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn redline(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(args)
        .env("REDLINE_HOME", home)
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Control characters other than the line feeds and tabs of a layout.
fn has_raw_control(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes).chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

/// Each command that takes a file, as `args(path)`.
type Case = (&'static str, Box<dyn Fn(&str, &str) -> Vec<String>>);

fn commands() -> Vec<Case> {
    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }
    vec![
        ("disasm", Box::new(|p, _| v(&["disasm", "--format", "hex", p]))),
        ("inspect", Box::new(|p, _| v(&["inspect", p]))),
        ("tape show", Box::new(|p, _| v(&["tape", "show", p]))),
        ("lower --tape", Box::new(|p, out| v(&["lower", "--tape", p, "--arch", "gfx1100", "--out", out]))),
        (
            "lower --model",
            Box::new(|p, out| v(&["lower", "--model", p, "--position", "3", "--arch", "gfx1100", "--out", out])),
        ),
        ("generate --model", Box::new(|p, _| v(&["generate", "--model", p, "--prompt", "x", "--device", "sim"]))),
        (
            "generate --admissions",
            Box::new(|p, _| v(&["generate", "--model", "tiny", "--admissions", p, "--prompt", "x", "--device", "sim"])),
        ),
        ("serve --model", Box::new(|p, _| v(&["serve", "--model", p, "--port", "0", "--device", "sim"]))),
        ("bench --model", Box::new(|p, out| v(&["bench", "--model", p, "--device", "sim", "--out", out]))),
        ("golden --registry", Box::new(|p, _| v(&["golden", "--registry", p, "--device", "sim"]))),
        ("census --tape", Box::new(|p, _| v(&["census", "--tape", p, "--trace", p]))),
        (
            "census --trace",
            Box::new(|p, _| {
                let tape = concat!(env!("CARGO_MANIFEST_DIR"), "/../tape-core/tests/golden/three-launch.json");
                v(&["census", "--tape", tape, "--trace", p])
            }),
        ),
        ("profile --model", Box::new(|p, _| v(&["profile", "--model", p, "--device", "sim"]))),
    ]
}

#[test]
fn a_missing_file_exits_2_and_an_invalid_one_exits_1_for_every_command() {
    let dir = scratch("files");
    let home = dir.join("home");
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let missing = dir.join("missing.bin");
    // Invalid for every reader: not hex, not an ELF, not a tape, not a GGUF, not a registry.
    let invalid = dir.join("invalid.bin");
    std::fs::write(&invalid, b"zz not a valid input of any kind {").unwrap();
    for (name, args) in commands() {
        for (path, code) in [(&missing, 2), (&invalid, 1)] {
            let p = path.to_str().unwrap();
            let run = redline(&home, &args(p, out).iter().map(String::as_str).collect::<Vec<_>>());
            let err = stderr(&run);
            assert_eq!(run.status.code(), Some(code), "{name} {p}: {err}");
            assert!(err.contains(p), "{name}: the message names the file: {err}");
        }
    }
    // sim run takes a directory: missing (2), and one whose manifest is not JSON (1).
    let run = redline(&home, &["sim", "run", missing.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    let bundle = dir.join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(bundle.join("manifest.json"), b"{ not json").unwrap();
    let run = redline(&home, &["sim", "run", bundle.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
}

/// A bundle written by `lower --example chain` into `dir/bundle`, and its manifest.
fn bundle(home: &Path, dir: &Path) -> (PathBuf, serde_json::Value) {
    let path = dir.join("bundle");
    let out = redline(home, &["lower", "--example", "chain", "--arch", "gfx1100", "--out", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let manifest = serde_json::from_slice(&std::fs::read(path.join("manifest.json")).unwrap()).unwrap();
    (path, manifest)
}

#[test]
fn a_manifest_path_no_file_can_have_is_invalid_input_and_is_shown_escaped() {
    let dir = scratch("manifest");
    let home = dir.join("home");
    let (path, manifest) = bundle(&home, &dir);
    let run = redline(&home, &["sim", "run", path.to_str().unwrap()]);
    assert!(run.status.success(), "the bundle runs as written: {}", stderr(&run));
    let original = manifest["regions"][0]["file"].as_str().unwrap().to_owned();
    let cases = [
        (format!("{original}\0x"), "\\0x\" holds a control character"),
        (format!("{original}/"), "ends with `/`: it names a directory, not a file"),
        ("regions/\u{1b}[2J\u{1b}]0;pwned\u{7}.bin".to_owned(), "regions/\\x1b[2J\\x1b]0;pwned\\x07.bin"),
    ];
    for (file, needle) in cases {
        let mut edited = manifest.clone();
        edited["regions"][0]["file"] = file.clone().into();
        std::fs::write(path.join("manifest.json"), serde_json::to_vec(&edited).unwrap()).unwrap();
        for json in [false, true] {
            let args = if json { vec!["sim", "run", "--json"] } else { vec!["sim", "run"] };
            let run = redline(&home, &[&args[..], &[path.to_str().unwrap()]].concat());
            let err = stderr(&run);
            assert_eq!(run.status.code(), Some(1), "{file:?}: {err}");
            assert!(err.contains("regions[0].file") && err.contains(needle), "{file:?}: {err}");
            assert!(!has_raw_control(&run.stderr) && !has_raw_control(&run.stdout), "{file:?}: {err}");
        }
    }
}

#[test]
fn a_kernel_symbol_from_a_tape_is_shown_escaped() {
    let dir = scratch("symbol");
    let home = dir.join("home");
    let (path, _) = bundle(&home, &dir);
    let mut tape: serde_json::Value = serde_json::from_slice(&std::fs::read(path.join("tape.json")).unwrap()).unwrap();
    tape["launches"][0]["artifact"]["symbol"] = "fi\u{1b}]0;pwned\u{7}ll\u{1b}[2J".into();
    let file = dir.join("tape.json");
    std::fs::write(&file, serde_json::to_vec(&tape).unwrap()).unwrap();
    let run = redline(&home, &["tape", "show", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(text.contains("fi\\x1b]0;pwned\\x07ll\\x1b[2J"), "{text}");
    assert!(!has_raw_control(&run.stdout), "{text}");
    // The JSON form escapes it as JSON does.
    let run = redline(&home, &["tape", "show", "--json", file.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(doc["launches"][0]["symbol"], "fi\u{1b}]0;pwned\u{7}ll\u{1b}[2J");
}

#[test]
fn a_path_with_control_characters_is_shown_escaped() {
    let dir = scratch("path");
    let home = dir.join("home");
    let file = dir.join("a\u{1b}[31mred\u{7}.gguf");
    for (exists, code) in [(false, 2), (true, 1)] {
        if exists {
            std::fs::write(&file, b"GGUX and more").unwrap();
        }
        for args in [
            vec!["generate", "--model", file.to_str().unwrap(), "--prompt", "x", "--device", "sim"],
            vec!["tape", "show", file.to_str().unwrap()],
            vec!["disasm", file.to_str().unwrap()],
        ] {
            let run = redline(&home, &args);
            let err = stderr(&run);
            assert_eq!(run.status.code(), Some(code), "{args:?}: {err}");
            assert!(err.contains("a\\x1b[31mred\\x07.gguf"), "{args:?}: {err}");
            assert!(!has_raw_control(&run.stderr), "{args:?}: {err}");
        }
    }
}

#[test]
fn generated_text_from_a_models_vocabulary_is_shown_escaped() {
    let dir = scratch("vocabulary");
    let home = dir.join("home");
    // The tiny model's byte-level vocabulary decodes to raw bytes: this prompt makes it generate
    // U+0006 (ACK), a control character, again and again.
    let args = ["generate", "--model", "tiny", "--prompt", "the cat", "--max-tokens", "24", "--device", "sim"];
    let json = redline(&home, &[&args[..], &["--json"]].concat());
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(doc["text"].as_str().unwrap().contains('\u{6}'), "the text holds a control character: {doc}");
    let run = redline(&home, &args);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(String::from_utf8_lossy(&run.stdout).contains("\\x06"));
    assert!(!has_raw_control(&run.stdout));
}
