//! A model opened for a session ([`open_model`], as `generate` and `serve` open it) runs from
//! the sealed snapshot the loader took: a file rewritten in place or truncated after the open
//! changes nothing the session computes, and the digest the open reports (the one admission and
//! every report name) is the digest of exactly the bytes that were parsed.
//!
//! The file is changed between the open and the session's start, before a single weight is
//! uploaded: an open that mapped the file (or read it again) would upload the new bytes, or die
//! of `SIGBUS` on the truncated ones.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use engine::model::{GenerateOptions, ModelFile, Session, open_model};
use engine::replay::ReplayConfig;
use gguf::{Gguf, TinyLlamaConfig, tiny_llama};
use pm4_encoding::Target;
use soft_device::SimDevice;
use tokenizer::{LogitsConfig, SamplerConfig};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("model-snapshot").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The digest by coreutils' `sha256sum`, independent of the loader.
fn sha256sum(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().expect("sha256sum runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_owned()
}

fn model(seed: u64) -> Vec<u8> {
    tiny_llama(&TinyLlamaConfig { seed, ..TinyLlamaConfig::default() })
}

/// What a session of `file` computes from a fixed prompt on a fresh soft device: the greedy
/// tokens and, bit for bit, the log-probabilities of the five most likely tokens at every step.
fn computed(file: &Gguf) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut session = Session::new(SimDevice::new(Target::Gfx1100), file, 64, ReplayConfig::default()).unwrap();
    let options = GenerateOptions {
        max_tokens: 12,
        sampler: SamplerConfig::default(),
        stop: Vec::new(),
        logits: LogitsConfig::default(),
        top_logprobs: Some(5),
    };
    let mut logprobs = Vec::new();
    let generation = session
        .generate_with(&[1, 2, 3, 4], &options, |output| {
            if let Some(record) = output.logprobs {
                logprobs.extend(record.top.iter().map(|&(token, logprob)| (token, logprob.to_bits())));
            }
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(logprobs.len(), 5 * generation.tokens.len());
    (generation.tokens, logprobs)
}

fn open(path: &Path) -> ModelFile {
    open_model(path.to_str().unwrap(), Some(64), |p| Ok(Gguf::open(p)?)).unwrap()
}

#[test]
fn a_file_rewritten_in_place_after_the_open_changes_nothing_the_session_computes() {
    let dir = scratch("rewritten");
    let path = dir.join("m.gguf");
    let (original, other) = (model(7), model(8));
    assert_eq!(original.len(), other.len(), "the two seeds give files of one size");
    std::fs::write(&path, &original).unwrap();
    let pristine = dir.join("pristine.gguf");
    std::fs::write(&pristine, &original).unwrap();

    let opened = open(&path);
    // Overwritten in place, same length (no truncation): a shared mapping of the file would see
    // every new byte.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all(&other).unwrap();

    let expected = computed(&Gguf::parse(original.clone()).unwrap());
    let changed = computed(&Gguf::parse(other).unwrap());
    assert_ne!(expected, changed, "the rewrite would change what is computed");
    assert_eq!(computed(&opened.file), expected);
    assert!(opened.file.as_bytes() == original.as_slice(), "the bytes parsed are the file as opened");
    assert_eq!(opened.sha256, sha256sum(&pristine), "the digest is that of the bytes parsed");
    assert_ne!(opened.sha256, sha256sum(&path));
}

#[test]
fn a_file_truncated_after_the_open_changes_nothing_the_session_computes() {
    let dir = scratch("truncated");
    let path = dir.join("m.gguf");
    let original = model(7);
    std::fs::write(&path, &original).unwrap();
    let digest = sha256sum(&path);

    let opened = open(&path);
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4096).unwrap();

    assert_eq!(computed(&opened.file), computed(&Gguf::parse(original).unwrap()));
    assert_eq!(opened.sha256, digest);
}
