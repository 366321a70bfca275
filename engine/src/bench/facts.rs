//! The report's facts about the run's surroundings, each `{"value": V, "why": null}` when known
//! or `{"value": null, "why": "..."}` when not: the source checkout, the host CPU and its
//! frequency governors, and the `REDLINE_*` environment.

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

/// A known fact.
#[must_use]
pub fn known(value: impl Serialize) -> Value {
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    assert!(!value.is_null(), "a known fact has a value; an unknown one says why");
    json!({"value": value, "why": null})
}

/// An unknown fact and why it is unknown.
#[must_use]
pub fn unknown(why: impl Into<String>) -> Value {
    let why = why.into();
    assert!(!why.is_empty(), "an unknown fact says why");
    json!({"value": null, "why": why})
}

/// A fact from a result: its value, or its error as the why.
#[must_use]
pub fn fact<T: Serialize, E: std::fmt::Display>(result: Result<T, E>) -> Value {
    match result {
        Ok(value) => known(value),
        Err(error) => unknown(error.to_string()),
    }
}

/// Runs `git` with `args` in the working directory: its trimmed standard output, or why not.
fn git(args: &[&str]) -> Result<String, String> {
    let output = std::process::Command::new("git")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git {}: {e}", args.join(" ")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("git {} failed: {}", args.join(" "), stderr.trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The source checkout's commit, dirty state and branch (the harness revision), captured at run
/// time with `git` in the working directory.
#[must_use]
pub fn source() -> Value {
    let commit = git(&["rev-parse", "HEAD"]);
    let dirty = git(&["status", "--porcelain"]).map(|status| !status.is_empty());
    let branch = match git(&["rev-parse", "--abbrev-ref", "HEAD"]) {
        Ok(name) if name == "HEAD" => Err("detached HEAD: the checkout is on no branch".to_owned()),
        other => other,
    };
    json!({
        "commit": fact(commit), "dirty": fact(dirty), "branch": fact(branch),
        "captured": "run time: git rev-parse HEAD, git status --porcelain and git rev-parse --abbrev-ref HEAD \
                     in the working directory",
    })
}

/// The first `model name` (x86) or `Hardware`/`cpu model` line of a `/proc/cpuinfo` text.
#[must_use]
pub fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        let wanted = ["model name", "Hardware", "cpu model", "uarch"].contains(&key);
        (wanted && !value.trim().is_empty()).then(|| value.trim().to_owned())
    })
}

/// The host: CPU model (`/proc/cpuinfo`), logical CPUs and kernel release.
#[must_use]
pub fn host() -> Value {
    let cpu_model = match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(text) => {
            cpu_model_of(&text).ok_or("/proc/cpuinfo names no model (no model name, Hardware or cpu model line)")
        }
        Err(_) => Err("/proc/cpuinfo cannot be read"),
    };
    let cpus = std::thread::available_parallelism().map(std::num::NonZeroUsize::get);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .map_err(|e| format!("/proc/sys/kernel/osrelease: {e}"));
    json!({"cpu_model": fact(cpu_model), "logical_cpus": fact(cpus), "kernel_release": fact(kernel)})
}

/// Most CPUs whose governor is read.
const CPUS_MAX: usize = 4096;

/// The CPU frequency governors under `cpu_dir` (`/sys/devices/system/cpu`): each `cpuN`'s
/// `cpufreq/scaling_governor`, in CPU order, and the distinct ones.
///
/// # Errors
/// Why there is none to read.
pub fn governors_in(cpu_dir: &Path) -> Result<Value, String> {
    let entries = std::fs::read_dir(cpu_dir).map_err(|e| format!("{}: {e}", cpu_dir.display()))?;
    let mut cpus: Vec<(u32, String)> = Vec::new();
    for entry in entries.flatten().take(CPUS_MAX * 2) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(index) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else { continue };
        if let Ok(governor) = std::fs::read_to_string(entry.path().join("cpufreq/scaling_governor")) {
            cpus.push((index, governor.trim().to_owned()));
        }
    }
    if cpus.is_empty() {
        return Err(format!(
            "no {}/cpu*/cpufreq/scaling_governor: the kernel exposes no cpufreq policy (a VM or container)",
            cpu_dir.display()
        ));
    }
    cpus.sort();
    cpus.truncate(CPUS_MAX);
    let mut distinct: Vec<&str> = cpus.iter().map(|(_, g)| g.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let per_cpu: serde_json::Map<String, Value> = cpus.iter().map(|(i, g)| (format!("cpu{i}"), json!(g))).collect();
    Ok(json!({"distinct": distinct, "per_cpu": per_cpu}))
}

/// The clock policies: the CPU frequency governors, and the GPU's (`gpu`, from the device).
#[must_use]
pub fn clocks(gpu: Value) -> Value {
    json!({"cpu_governor": fact(governors_in(Path::new("/sys/devices/system/cpu"))), "gpu": gpu})
}

/// Every `REDLINE_*` environment variable the workspace reads, with who reads it. The unit test
/// `every_redline_variable_the_workspace_names_is_listed` keeps it complete.
pub const REDLINE_VARIABLES: [(&str, &str); 20] = [
    ("REDLINE_API_KEY", "redline serve: the API key clients must send (its value is never recorded)"),
    ("REDLINE_BLESS", "tape-core tests: rewrite the golden files"),
    ("REDLINE_CLANG", "kernels build (build-kernels): the clang to compile the kernels with"),
    ("REDLINE_CONFORMANCE_CHILD", "conformance suite (tests/): marks its child process"),
    ("REDLINE_GEMMA3_GGUF", "tests: the Gemma 3 270M model file"),
    ("REDLINE_GGUF_PY", "tests: the Python with the gguf package for the reference checks"),
    ("REDLINE_HIP_LIBRARY", "hip-sys: the HIP runtime library to load"),
    ("REDLINE_HOME", "redline: the model cache root (models, pull)"),
    ("REDLINE_HSA_DEVICE_TEST_CHILD", "hsa-device tests: marks their child process"),
    ("REDLINE_HSA_LIBRARY", "hsa-sys: the HSA runtime library to load (--device hsa|auto)"),
    (
        "REDLINE_KERNEL_TRACE",
        "soft device and soft-hsa runtime: write rocprofv3's kernel_trace.csv to this file or directory",
    ),
    ("REDLINE_LFM2_GGUF", "the decode benchmark: an lfm2 model file (the lfm2-350m shape)"),
    ("REDLINE_PYTHON", "redline pull: the Python interpreter"),
    ("REDLINE_QWEN35_GGUF", "the decode benchmark: a qwen35 model file (the qwen35-0.8b shape)"),
    (
        "REDLINE_REPLAY_BACKEND",
        "engine replay configuration (generate, serve); the bench's arms take flags only and ignore it",
    ),
    ("REDLINE_REPLAY_MANUAL_CAPTURE", "engine replay configuration; the bench's arms ignore it"),
    ("REDLINE_REPLAY_TRANSPORT", "engine replay configuration; the bench's arms ignore it"),
    ("REDLINE_SMOLLM2_GGUF", "tests: the SmolLM2-135M reference model file"),
    ("REDLINE_SOFT_HSA_ISA", "soft-hsa runtime: the targets of its GPU agents"),
    ("REDLINE_SOFT_HSA_LOG", "soft-hsa runtime: print each queue fault"),
];

/// Variables whose values are secrets: a report says whether they are set, not what they hold.
const SECRET_VARIABLES: [&str; 1] = ["REDLINE_API_KEY"];

/// What a report shows for a secret that is set.
const REDACTED: &str = "(set; not recorded)";

/// The `REDLINE_*` environment of `vars`: every listed variable, set (with its value) or not, and
/// any other `REDLINE_*` variable that is set.
#[must_use]
pub fn environment_of(vars: &[(String, String)]) -> Value {
    let value_of = |name: &str| {
        let value = vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        // A secret is recorded as set, never by its value.
        if SECRET_VARIABLES.contains(&name) { value.map(|_| REDACTED.to_owned()) } else { value }
    };
    let listed: Vec<Value> = REDLINE_VARIABLES
        .iter()
        .map(|(name, read_by)| {
            let value = value_of(name);
            json!({"name": name, "read_by": read_by, "set": value.is_some(), "value": value})
        })
        .collect();
    let mut other: Vec<Value> = vars
        .iter()
        .filter(|(n, _)| n.starts_with("REDLINE_") && !REDLINE_VARIABLES.iter().any(|(l, _)| l == n))
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    other.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    json!({"listed": listed, "other_set": other})
}

/// The `REDLINE_*` environment of this process (values that are not UTF-8 are shown lossily).
#[must_use]
pub fn environment() -> Value {
    let vars: Vec<(String, String)> = std::env::vars_os()
        .map(|(n, v)| (n.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
        .filter(|(n, _)| n.starts_with("REDLINE_"))
        .collect();
    environment_of(&vars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn facts_are_a_value_or_null_with_why() {
        assert_eq!(known(3), json!({"value": 3, "why": null}));
        assert_eq!(unknown("none"), json!({"value": null, "why": "none"}));
        assert_eq!(fact::<u8, _>(Err("gone")), json!({"value": null, "why": "gone"}));
    }

    #[test]
    fn cpu_models_come_from_the_first_model_line() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nmodel name\t: other\n";
        assert_eq!(cpu_model_of(x86).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model_of("processor : 0\nHardware : BCM2835\n").as_deref(), Some("BCM2835"));
        assert_eq!(cpu_model_of("processor : 0\nmodel name :   \n"), None);
        assert_eq!(cpu_model_of(""), None);
    }

    #[test]
    fn governors_are_read_per_cpu_or_say_why_not() {
        let dir = std::env::temp_dir().join(format!("redline-governors-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cpufreq")).unwrap();
        let error = governors_in(&dir).unwrap_err();
        assert!(error.contains("scaling_governor"), "{error}");
        for (cpu, governor) in [(0, "performance"), (1, "powersave"), (10, "performance")] {
            std::fs::create_dir_all(dir.join(format!("cpu{cpu}/cpufreq"))).unwrap();
            std::fs::write(dir.join(format!("cpu{cpu}/cpufreq/scaling_governor")), format!("{governor}\n")).unwrap();
        }
        let value = governors_in(&dir).unwrap();
        assert_eq!(value["distinct"], json!(["performance", "powersave"]));
        assert_eq!(value["per_cpu"]["cpu10"], "performance");
        assert_eq!(value["per_cpu"].as_object().unwrap().len(), 3);
        assert!(governors_in(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_environment_lists_every_variable_set_or_not_and_the_others() {
        let vars = [("REDLINE_HOME".to_owned(), "/h".to_owned()), ("REDLINE_NEW_THING".to_owned(), "1".to_owned())];
        let env = environment_of(&vars);
        let listed = env["listed"].as_array().unwrap();
        assert_eq!(listed.len(), REDLINE_VARIABLES.len());
        let home = listed.iter().find(|v| v["name"] == "REDLINE_HOME").unwrap();
        assert_eq!((&home["set"], &home["value"]), (&json!(true), &json!("/h")));
        let isa = listed.iter().find(|v| v["name"] == "REDLINE_SOFT_HSA_ISA").unwrap();
        assert_eq!((&isa["set"], &isa["value"]), (&json!(false), &Value::Null));
        assert_eq!(env["other_set"], json!([{"name": "REDLINE_NEW_THING", "value": "1"}]));
    }

    #[test]
    fn a_secret_is_recorded_as_set_but_never_by_its_value() {
        let vars = [("REDLINE_API_KEY".to_owned(), "sk-secret".to_owned())];
        let env = environment_of(&vars);
        let key = env["listed"].as_array().unwrap().iter().find(|v| v["name"] == "REDLINE_API_KEY").unwrap();
        assert_eq!((&key["set"], &key["value"]), (&json!(true), &json!("(set; not recorded)")));
        assert!(!env.to_string().contains("sk-secret"), "{env}");
        let unset = environment_of(&[]);
        let key = unset["listed"].as_array().unwrap().iter().find(|v| v["name"] == "REDLINE_API_KEY").unwrap();
        assert_eq!((&key["set"], &key["value"]), (&json!(false), &Value::Null));
    }

    /// `REDLINE_` names in the workspace that are not environment variables.
    const NOT_VARIABLES: [&str; 2] = [
        // hsa-sys: the soft HSA runtime's extension symbol, `redline_soft_hsa_inject`.
        "REDLINE_SOFT_HSA_INJECT",
        // The unlisted variable of `the_environment_lists_every_variable_set_or_not_and_the_others`
        // and of the bench tests.
        "REDLINE_NEW_THING",
    ];

    /// Every `REDLINE_` name quoted in a Rust file (`"REDLINE_HOME"`: an `env::var` argument, a
    /// constant or a test's environment) or written in a shell script, under `dir`.
    fn names_in(dir: &Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && name != ".git" {
                    names_in(&path, found);
                }
                continue;
            }
            let needle = if name.ends_with(".rs") {
                "\"REDLINE_"
            } else if name.ends_with(".sh") || name == "run" {
                "REDLINE_"
            } else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            for (at, _) in text.match_indices(needle) {
                let rest = text[at..].trim_start_matches('"');
                let end = rest.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'));
                let name = &rest[..end.unwrap_or(rest.len())];
                // `"REDLINE_"` alone is the prefix this module filters on, not a variable.
                if !name.ends_with('_') {
                    found.insert(name.to_owned());
                }
            }
        }
    }

    #[test]
    fn every_redline_variable_the_workspace_names_is_listed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut found = BTreeSet::new();
        // The whole checkout: the crates sit at its top level, beside tests, tools, fuzz, docs
        // and .ci (`names_in` skips build output).
        names_in(&root, &mut found);
        assert!(found.contains("REDLINE_HSA_LIBRARY"), "{found:?}");
        let listed: BTreeSet<String> =
            REDLINE_VARIABLES.iter().map(|(n, _)| *n).chain(NOT_VARIABLES).map(str::to_owned).collect();
        let missing: Vec<&String> = found.difference(&listed).collect();
        assert!(missing.is_empty(), "add these to REDLINE_VARIABLES: {missing:?}");
        let names: Vec<&str> = REDLINE_VARIABLES.iter().map(|(n, _)| *n).collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "the list is kept sorted");
    }
}
