//! `redline census` and the census in the route proof, end to end: a trace of ordinary
//! forwards written by the soft device's packet processor (`REDLINE_KERNEL_TRACE`), and by the
//! soft HSA runtime's for `--device hsa`, reconciles with the tape `redline lower --model`
//! writes at every position; a trace with a launch removed, added or swapped fails gate 2 naming
//! the position and the kernel (exit 1); a malformed trace names its line; a missing file is
//! exit 2. `generate --json` carries the census of the tape its route captured, three counts and
//! a verdict per recorded position. The tiny model always runs; SmolLM2-135M
//! (`REDLINE_SMOLLM2_GGUF`; under `CI=true` its absence is a failure) too.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("census").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn redline(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_redline"));
    command.args(args).env_remove("REDLINE_REPLAY_BACKEND").env_remove("REDLINE_REPLAY_TRANSPORT");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn ok(out: &Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The tape of `model`'s decode step (`lower --model`).
fn tape(dir: &Path, model: &str, home: &Path) -> PathBuf {
    let out = dir.join("bundle");
    let home = home.to_str().unwrap();
    ok(
        &redline(
            &["lower", "--model", model, "--position", "3", "--arch", "gfx1100", "--out", out.to_str().unwrap()],
            &[("REDLINE_HOME", home)],
        ),
        "lower",
    );
    out.join("tape.json")
}

/// A trace of `tokens` new tokens of ordinary forwards from position 0 (the prompt step by step).
fn trace(dir: &Path, model: &str, home: &Path, device: &[&str], env: &[(&str, &str)], tokens: &str) -> PathBuf {
    let path = dir.join("kernel_trace.csv");
    let mut all = vec![("REDLINE_KERNEL_TRACE", path.to_str().unwrap()), ("REDLINE_HOME", home.to_str().unwrap())];
    all.extend_from_slice(env);
    let args =
        [
            &[
                "generate",
                "--model",
                model,
                "--replay-backend",
                "hip",
                "--prompt",
                "Hello there",
                "--max-tokens",
                tokens,
            ][..],
            &["--prefill-chunk", "1"],
            device,
        ]
        .concat();
    ok(&redline(&args, &all), "generate");
    path
}

fn census(tape: &Path, trace: &Path, extra: &[&str]) -> Output {
    let args = [&["census", "--tape", tape.to_str().unwrap(), "--trace", trace.to_str().unwrap()][..], extra].concat();
    redline(&args, &[])
}

/// Every position of `doc` (`census --json`) reconciled, counts adding up to the tape's.
fn assert_reconciled(doc: &Value, forwards: usize, what: &str) {
    assert_eq!(doc["reconciled"], true, "{what}: {doc}");
    let dispatches = doc["tape"]["dispatch_count"].as_u64().unwrap();
    let positions = doc["positions"].as_array().unwrap();
    assert_eq!(positions.len(), forwards, "{what}");
    for (i, p) in positions.iter().enumerate() {
        assert_eq!(p["position"], i, "{what}");
        assert_eq!(p["verdict"], "reconciled", "{what}: {p}");
        assert_eq!(p["retained_dispatches"], dispatches, "{what}");
        assert_eq!(p["external_launches"], 0, "{what}");
        assert_eq!(p["compute_launches"], dispatches, "{what}");
    }
}

/// The trace's CSV lines (header first).
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn the_tiny_models_trace_reconciles_on_both_backends_and_every_tampering_is_named() {
    let dir = scratch("tiny");
    let home = dir.join("home");
    let tape = tape(&dir, "tiny", &home);
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    let library = library.to_str().unwrap();
    for (name, device, env) in [
        ("sim", &["--device", "sim"][..], &[][..]),
        ("hsa", &["--device", "hsa"][..], &[("REDLINE_HSA_LIBRARY", library), ("REDLINE_SOFT_HSA_ISA", "gfx1100")][..]),
    ] {
        let run = scratch(&format!("tiny-{name}"));
        let trace = trace(&run, "tiny", &home, device, env, "6");
        // "Hello there" is 2 tokens here, then 6 new ones: 7 forwards (the last token is not
        // forwarded).
        let out = census(&tape, &trace, &["--json"]);
        let doc: Value = serde_json::from_str(&ok(&out, name)).unwrap();
        let forwards = doc["positions"].as_array().unwrap().len();
        assert!(forwards >= 5, "{name}: {doc}");
        assert_reconciled(&doc, forwards, name);
        let text = ok(&census(&tape, &trace, &[]), name);
        assert!(
            text.contains(&format!("{forwards} position(s): {forwards} certified, {forwards} reconciled, 0 not")),
            "{text}"
        );
        // Tampering: each a separate copy of the trace, its verdict naming position and kernel.
        let rows = lines(&trace);
        let per_forward = usize::try_from(doc["tape"]["dispatch_count"].as_u64().unwrap()).unwrap();
        let at = 1 + 2 * per_forward + 4; // position 2, launch 4
        let kernel = |line: &str| line.split(',').nth(7).unwrap().trim_matches('"').to_owned();
        let mut removed = rows.clone();
        let gone = kernel(&removed.remove(at));
        let mut added = rows.clone();
        added.insert(at, rows[at].clone());
        // Two dispatches that ran in the other order: the rows swapped, each keeping the
        // Dispatch_Id of its place (the census reads rows in Dispatch_Id order).
        let mut swapped = rows.clone();
        let next = (at..).find(|&i| kernel(&rows[i]) != kernel(&rows[i + 1])).unwrap();
        let with_id = |line: &str, id: &str| {
            let mut fields: Vec<&str> = line.split(',').collect();
            fields[5] = id;
            fields.join(",")
        };
        let id = |line: &str| line.split(',').nth(5).unwrap().to_owned();
        swapped[next] = with_id(&rows[next + 1], &id(&rows[next]));
        swapped[next + 1] = with_id(&rows[next], &id(&rows[next + 1]));
        for (what, tampered, named) in
            [("removed", removed, gone), ("added", added, kernel(&rows[at])), ("swapped", swapped, kernel(&rows[next]))]
        {
            let path = run.join(format!("{what}.csv"));
            std::fs::write(&path, tampered.join("\n") + "\n").unwrap();
            let out = census(&tape, &path, &[]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{name} {what}: {stderr}");
            assert!(stderr.contains("gate 2") && stderr.contains("position 2:"), "{name} {what}: {stderr}");
            assert!(stderr.contains(&named), "{name} {what}: {stderr} names {named}");
        }
    }
    // A malformed trace names its line; a missing one is exit 2.
    let bad = dir.join("bad.csv");
    let mut rows = lines(&trace(&scratch("tiny-bad"), "tiny", &home, &["--device", "sim"], &[], "2"));
    rows[3] = rows[3].replacen("\"KERNEL_DISPATCH\"", "\"KERNEL_DISPATCH\",\"extra\"", 1);
    std::fs::write(&bad, rows.join("\n") + "\n").unwrap();
    let out = census(&tape, &bad, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("line 4"), "{stderr}");
    assert_eq!(census(&tape, &dir.join("missing.csv"), &[]).status.code(), Some(2));
}

#[test]
fn generate_json_carries_the_census_of_each_recorded_position_on_both_backends() {
    let dir = scratch("generate-json");
    let home = dir.join("home");
    let library = soft_hsa::built_library().unwrap_or_else(|error| panic!("{error}"));
    let library = library.to_str().unwrap();
    let mut models = vec!["tiny".to_owned()];
    models.extend(common::reference_model());
    for model in &models {
        for (device, env) in
            [("sim", &[][..]), ("hsa", &[("REDLINE_HSA_LIBRARY", library), ("REDLINE_SOFT_HSA_ISA", "gfx1100")][..])]
        {
            let what = format!("{model} on {device}");
            let mut all = vec![("REDLINE_HOME", home.to_str().unwrap())];
            all.extend_from_slice(env);
            let args = [
                "generate",
                "--model",
                model,
                "--device",
                device,
                "--replay-backend",
                "auto",
                "--prompt",
                "The capital of France is",
                "--max-tokens",
                "12",
                "--json",
            ];
            let doc: Value = serde_json::from_str(&ok(&redline(&args, &all), &what)).unwrap();
            let route = &doc["route"];
            assert_eq!(route["state"], "ready", "{what}: {route}");
            let census = &route["census"];
            assert!(census["trace"].as_str().unwrap().contains("packet processor"), "{what}: {census}");
            let positions = census["positions"].as_array().unwrap();
            assert_eq!(positions.len(), 3, "{what}: the three recorded warm-ups");
            let dispatches = &route["tape"]["dispatch_count"];
            for p in positions {
                assert_eq!(p["verdict"], "reconciled", "{what}: {p}");
                assert_eq!(
                    (&p["compute_launches"], &p["retained_dispatches"]),
                    (dispatches, dispatches),
                    "{what}: {p}"
                );
                assert_eq!(p["external_launches"], 0, "{what}: {p}");
            }
        }
    }
}

#[test]
fn smollm2s_trace_reconciles_with_its_tape() {
    let Some(model) = common::reference_model() else { return };
    let dir = scratch("smollm2");
    let home = dir.join("home");
    let tape = tape(&dir, &model, &home);
    let trace = trace(&dir, &model, &home, &["--device", "sim"], &[], "8");
    let doc: Value = serde_json::from_str(&ok(&census(&tape, &trace, &["--json"]), "smollm2")).unwrap();
    let forwards = doc["positions"].as_array().unwrap().len();
    assert!(forwards >= 8, "{doc}");
    assert_reconciled(&doc, forwards, "smollm2");
    assert_eq!(doc["tape"]["dispatch_count"], 483);
}
