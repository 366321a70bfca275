//! Bad model files through `redline generate` and `redline serve`: each file is the tiny llama
//! with one thing wrong (a byte range, one metadata value, one tensor), and each command exits 1
//! naming the key or tensor and the value; a proptest mutates the tiny model's bytes and single
//! metadata values and asserts that model loading, as the commands do it, either succeeds or
//! fails as invalid input, and a sample of those mutations goes through the real binary.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use engine::admission::AdmissionDecision;
use engine::replay::ReplayConfig;
use gguf::{Gguf, GgufWriter, TinyLlamaConfig, Value, tiny_llama_writer};
use proptest::prelude::*;
use redline::model_args::{SessionArgs, start_session};
use redline::select::{DeviceKind, select_for_model};

fn dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("model_bad_input");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `bytes` as `name.gguf` (a name of its own per test: tests run concurrently).
fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir().join(format!("{name}.gguf"));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn writer() -> GgufWriter {
    tiny_llama_writer(&TinyLlamaConfig::default())
}

fn tiny() -> Vec<u8> {
    writer().to_bytes()
}

fn with(key: &str, value: Value) -> Vec<u8> {
    let mut w = writer();
    w.set(key, value).unwrap();
    w.to_bytes()
}

/// Where `needle` first occurs in `bytes`.
fn find(bytes: &[u8], needle: &[u8]) -> usize {
    bytes.windows(needle.len()).position(|w| w == needle).unwrap()
}

fn generate(path: &Path, extra: &[&str]) -> Output {
    let model = path.to_str().unwrap();
    let args =
        [&["generate", "--model", model, "--prompt", "hi", "--max-tokens", "1", "--device", "sim"], extra].concat();
    common::redline(&args)
}

/// `redline serve` of `path`, which must exit on its own (within a minute) with a bad model.
fn serve(path: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["serve", "--port", "0", "--device", "sim", "--model", path.to_str().unwrap()])
        .env_remove("REDLINE_REPLAY_BACKEND")
        .env_remove("REDLINE_REPLAY_TRANSPORT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("serve {} still running: {}", path.display(), String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Asserts exit 1, nothing on stdout and every part in the message.
fn assert_invalid(out: &Output, what: &str, parts: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
    for part in parts {
        assert!(stderr.contains(part), "{what}: {part:?} not in {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"), "{what}");
}

/// Structural faults, each with the parts its message must hold.
fn structural() -> Vec<(&'static str, Vec<u8>, Vec<String>)> {
    let good = tiny();
    let mut cases = Vec::new();

    // Cut 5 bytes into the last tensor info's 18-byte name.
    let last = Gguf::parse(good.clone()).unwrap().tensors().len() - 1;
    let cut = find(&good, b"output_norm.weight") + 5;
    cases.push((
        "truncated",
        good[..cut].to_vec(),
        vec![format!("truncated name of tensor #{last} at byte offset {}: needs 18 bytes, 5 left", cut - 5)],
    ));

    // `general.type` renamed `general.name` (same length): the second `general.name` is a
    // duplicate at its own key's offset (its length prefix, 8 bytes before the text).
    let mut dup = good.clone();
    let at = find(&dup, b"general.type");
    dup[at..at + 12].copy_from_slice(b"general.name");
    let second = at + 12 + find(&dup[at + 12..], b"general.name") - 8;
    cases.push((
        "duplicate-key",
        dup,
        vec!["duplicate metadata key \"general.name\"".to_owned(), format!("at byte offset {second}")],
    ));

    // general.alignment written as 32, then its value patched to 48.
    let mut w = writer();
    w.set("general.alignment", Value::U32(32)).unwrap();
    let mut aligned = w.to_bytes();
    let value = find(&aligned, b"general.alignment") + "general.alignment".len() + 4;
    aligned[value..value + 4].copy_from_slice(&48u32.to_le_bytes());
    cases.push(("bad-alignment", aligned, vec!["general.alignment 48 is not a power of two".to_owned()]));

    // The merges array claims 2^40 strings: key, array type, element type, then the count.
    let mut counted = good.clone();
    let count = find(&counted, b"tokenizer.ggml.merges") + "tokenizer.ggml.merges".len() + 4 + 4;
    counted[count..count + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    cases.push((
        "count-past-end",
        counted,
        vec![
            format!("array of key \"tokenizer.ggml.merges\" at byte offset {count} counts 1099511627776 items"),
            "the remaining bytes hold at most".to_owned(),
        ],
    ));

    // output_norm.weight's data offset (after its name, dimension count, one dimension and
    // type) set to 2^64 - 32: the message has the real offset and range, not a saturated one.
    let mut far = good.clone();
    let g = Gguf::parse(good.clone()).unwrap();
    let offset_field = find(&far, b"output_norm.weight") + "output_norm.weight".len() + 4 + 8 + 4;
    let offset = u64::MAX - 31;
    far[offset_field..offset_field + 8].copy_from_slice(&offset.to_le_bytes());
    let start = u128::try_from(g.data_offset()).unwrap() + u128::from(offset);
    cases.push((
        "far-offset",
        far,
        vec![
            "tensor \"output_norm.weight\"".to_owned(),
            format!("data offset {offset} and size 256"),
            format!("{start}..{}", start + 256),
        ],
    ));
    cases
}

#[test]
fn structural_faults_exit_1_from_generate_and_serve() {
    for (name, bytes, parts) in structural() {
        let path = write(&format!("structural-{name}"), &bytes);
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let shown = path.display().to_string();
        let with_path = [&parts[..], &[shown.as_str()]].concat();
        assert_invalid(&generate(&path, &[]), &format!("generate {name}"), &with_path);
        assert_invalid(&serve(&path), &format!("serve {name}"), &with_path);
    }
}

/// Semantic faults: one key or tensor altered.
fn semantic() -> Vec<(&'static str, Vec<u8>, Vec<String>)> {
    let tokens = gguf::tiny::tiny_vocab().tokens.len();
    let mut cases = vec![
        (
            "vocab-size",
            with("llama.vocab_size", Value::U32(1 << 31)),
            vec![
                "llama.vocab_size is 2147483648".to_owned(),
                format!("the row count of token_embd.weight (dimension 1) is {tokens}"),
            ],
        ),
        (
            "rms-eps",
            with("llama.attention.layer_norm_rms_epsilon", Value::F32(-1.0)),
            vec!["llama.attention.layer_norm_rms_epsilon = -1.0".to_owned(), "greater than 0".to_owned()],
        ),
        (
            "rope-base",
            with("llama.rope.freq_base", Value::F32(0.0)),
            vec!["llama.rope.freq_base = 0.0".to_owned(), "finite and greater than 0".to_owned()],
        ),
        (
            "context-length",
            with("llama.context_length", Value::U32(0)),
            vec!["llama.context_length = 0".to_owned(), "at least 1 position".to_owned()],
        ),
    ];
    let mut vocab = gguf::tiny::tiny_vocab();
    let again = vocab.merges[7].clone();
    vocab.merges.push(again.clone());
    let index = vocab.merges.len() - 1;
    cases.push((
        "duplicate-merge",
        with("tokenizer.ggml.merges", Value::string_array(vocab.merges)),
        vec![format!("tokenizer.ggml.merges: merge {index} {again:?} duplicates merge 7")],
    ));
    // Block 2 of a Q4_1 matrix: its scale `d` (bytes 0..2 of the 20-byte block) is NaN.
    let mut w = writer();
    w.tensor_data_mut("blk.0.attn_q.weight").unwrap()[40..42].copy_from_slice(&0x7e00u16.to_le_bytes());
    cases.push((
        "nan-weight",
        w.to_bytes(),
        vec!["tensor \"blk.0.attn_q.weight\" (Q4_1): scale d of block 2".to_owned(), "is NaN".to_owned()],
    ));
    cases
}

#[test]
fn semantic_faults_exit_1_naming_the_key_or_tensor_and_value() {
    for (name, bytes, parts) in semantic() {
        let path = write(&format!("semantic-{name}"), &bytes);
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let out = generate(&path, &[]);
        assert_invalid(&out, &format!("generate {name}"), &parts);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("sampling"), "{name}");
        assert_invalid(&serve(&path), &format!("serve {name}"), &parts);
    }
    // With --context: the file's fault is found before the flag is checked against it.
    let path = write("semantic-context-flag", &with("llama.context_length", Value::U32(0)));
    assert_invalid(&generate(&path, &["--context", "5"]), "generate --context 5", &["llama.context_length = 0"]);
}

#[test]
fn an_unrecognised_chat_template_exits_1_with_chat_and_warns_in_serve() {
    let template = gguf::tiny::CHAT_TEMPLATE.replace("message['content']", "message.content");
    let at = gguf::tiny::CHAT_TEMPLATE.find("message['content']").unwrap() + "message".len();
    let path = write("chat-template", &with("tokenizer.chat_template", Value::String(template)));
    let parts = ["tokenizer.chat_template", &format!("from byte offset {at} (\".content")];
    assert_invalid(&generate(&path, &["--chat"]), "generate --chat", &parts);
    // Without --chat the template is not used.
    let out = generate(&path, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let path = write("chat-template-type", &with("tokenizer.chat_template", Value::U32(1)));
    assert_invalid(
        &generate(&path, &["--chat"]),
        "--chat with a u32 template",
        &["\"tokenizer.chat_template\" has type u32, expected string"],
    );

    // serve keeps serving completions for such a model, with a warning naming the key and offset.
    let path = write("chat-template-serve", &with("tokenizer.chat_template", Value::String("{{ nope }}".into())));
    let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["serve", "--port", "0", "--device", "sim", "--model", path.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(line.starts_with("listening on"), "{line}: {stderr}");
    assert!(stderr.contains("warning: the model 'chat-template-serve': tokenizer.chat_template:"), "{stderr}");
    assert!(stderr.contains("from byte offset 1 (\"{ nope }}\")"), "{stderr}");
}

// ---- The mutation fuzz ----

/// Model loading as `generate` and `serve` do it: open and check the file, then start a
/// session on the soft device (tokenizer, weights, KV cache).
fn load(path: &Path) -> anyhow::Result<()> {
    let args = SessionArgs { context: None, replay_backend: None, transport: None, admissions: None };
    let model = args.open_model(path.to_str().unwrap())?;
    let (device, _) = select_for_model(DeviceKind::Sim, None)?;
    start_session(device, &model.file, model.context, ReplayConfig::default(), AdmissionDecision::not_evaluated())?;
    Ok(())
}

/// Loads `bytes`; an error must be invalid input (exit 1), never I/O or usage.
fn check_load(name: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let path = write(name, bytes);
    let result = load(&path);
    if let Err(error) = &result {
        assert_eq!(redline::exit::code(error), 1, "not classified as invalid input: {error:#}");
    }
    result
}

/// A mutation of the tiny model.
#[derive(Debug, Clone)]
enum Mutation {
    /// Bytes overwritten: (position in the header and tensor infos, or anywhere, and the byte).
    Bytes { header: bool, at: Vec<(prop::sample::Index, u8)> },
    /// The file cut short.
    Cut(prop::sample::Index),
    /// One metadata value replaced.
    Set(prop::sample::Index, Value),
    /// One metadata key removed.
    Remove(prop::sample::Index),
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop_oneof![Just(0u32), Just(1), Just(2), Just(3), Just(31), Just(1 << 31), Just(u32::MAX), any::<u32>()]
            .prop_map(Value::U32),
        prop_oneof![
            Just(f32::NAN),
            Just(f32::INFINITY),
            Just(-1.0f32),
            Just(0.0),
            Just(1e-5),
            Just(1e38),
            any::<f32>()
        ]
        .prop_map(Value::F32),
        any::<i32>().prop_map(Value::I32),
        any::<u64>().prop_map(Value::U64),
        any::<bool>().prop_map(Value::Bool),
        "[a-z. ĠĊ]{0,12}".prop_map(Value::String),
        proptest::collection::vec("[a-zĠ]{1,3} [a-z]{1,3}", 0..6).prop_map(Value::string_array),
        proptest::collection::vec(-2i32..8, 0..6).prop_map(Value::i32_array),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<bool>(), proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4))
            .prop_map(|(header, at)| Mutation::Bytes { header, at }),
        any::<prop::sample::Index>().prop_map(Mutation::Cut),
        (any::<prop::sample::Index>(), value()).prop_map(|(key, value)| Mutation::Set(key, value)),
        any::<prop::sample::Index>().prop_map(Mutation::Remove),
    ]
}

/// The tiny model with `m` applied.
fn mutated(m: &Mutation) -> Vec<u8> {
    let good = tiny();
    match m {
        Mutation::Bytes { header, at } => {
            let header_len = Gguf::parse(good.clone()).unwrap().data_offset();
            let mut bytes = good;
            let span = if *header { header_len } else { bytes.len() };
            for (i, b) in at {
                let i = i.index(span);
                bytes[i] = *b;
            }
            bytes
        }
        Mutation::Cut(at) => good[..at.index(good.len())].to_vec(),
        Mutation::Set(key, _) | Mutation::Remove(key) => {
            let keys: Vec<String> = Gguf::parse(good).unwrap().metadata().map(|(k, _)| k.to_owned()).collect();
            let key = &keys[key.index(keys.len())];
            let mut w = writer();
            if let Mutation::Set(_, value) = m {
                w.set(key.as_str(), value.clone()).unwrap();
            } else {
                w.remove(key);
            }
            w.to_bytes()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn mutated_models_load_or_fail_as_invalid_input(m in mutation()) {
        let _ = check_load(&format!("fuzz-{}", std::process::id()), &mutated(&m));
    }
}

/// A fixed sample of mutations (from a fixed seed) through the real binary: the exit code is 1
/// with the in-process error's message when loading fails, and never a usage or I/O code or a
/// panic when it succeeds (a finite but extreme weight may still end the generation with 1).
#[test]
fn a_sample_of_mutations_through_generate() {
    use proptest::strategy::ValueTree as _;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let mut failed = 0;
    for i in 0..12 {
        let m = mutation().new_tree(&mut runner).unwrap().current();
        let bytes = mutated(&m);
        let name = format!("sample-{i}");
        let expected = check_load(&name, &bytes);
        let path = dir().join(format!("{name}.gguf"));
        let out = generate(&path, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{m:?}: {stderr}");
        match expected {
            Err(error) => {
                failed += 1;
                assert_eq!(out.status.code(), Some(1), "{m:?}: {stderr}");
                let root = error.root_cause().to_string();
                assert!(stderr.contains(&root), "{m:?}: {root:?} not in {stderr}");
            }
            Ok(()) => assert!(matches!(out.status.code(), Some(0 | 1)), "{m:?}: {stderr}"),
        }
    }
    assert!(failed > 0, "no sampled mutation was refused: the sample tests nothing");
}
