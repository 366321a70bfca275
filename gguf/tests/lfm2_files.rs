//! The `lfm2` files this crate writes, read back: the streaming writer of published shapes
//! ([`gguf::shaped_lfm2`]) gives, for any shape, a file whose metadata and tensor inventory are
//! the shape's plan, in order, at aligned offsets, with finite weights and the K-quant scales the
//! module documents; and gguf-py (`REDLINE_GGUF_PY`, a Python with llama.cpp's `gguf` package)
//! reads the tiny `lfm2` and a small shaped file exactly as this crate does (without it the
//! cross-check says so and passes; under `CI=true` it fails).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use gguf::shaped_lfm2::{self, Lfm2Shape, PlannedTensor};
use gguf::{GgmlType, Gguf, TinyLfm2Config, Value, ValueType, f16, tiny_lfm2};
use proptest::prelude::*;

fn temp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-{name}", std::process::id()))
}

/// A shape of `layers` blocks with attention where `attention` says, leaked to be `'static`
/// as a published shape is.
fn shape(layers: u32, attention: &[bool], dim: u32, heads: u32, l_cache: u32, vocab: u32) -> Lfm2Shape {
    let attention_layers: Vec<u32> = (0..layers).filter(|&l| attention[usize::try_from(l).unwrap()]).collect();
    Lfm2Shape {
        name: "lfm2-test",
        display_name: "test",
        layers,
        attention_layers: Box::leak(attention_layers.into_boxed_slice()),
        dim,
        ffn: 2 * dim,
        heads,
        kv_heads: heads / 2,
        vocab,
        l_cache,
        context_length: 4096,
        rope_freq_base: 1e6,
        rms_eps: 1e-5,
    }
}

/// Checks the file at `path` against `s`'s plan, returning the parsed file.
fn check_written(path: &Path, s: &Lfm2Shape, written: u64) -> Gguf {
    let file = Gguf::open(path).unwrap();
    assert_eq!(written, std::fs::metadata(path).unwrap().len());
    let metadata: Vec<(String, Value)> = file.metadata().map(|(k, v)| (k.to_owned(), v.clone())).collect();
    assert_eq!(metadata, s.metadata());
    let planned: Vec<PlannedTensor> = file
        .tensors()
        .iter()
        .map(|t| PlannedTensor { name: t.name().to_owned(), dims: t.dims().to_vec(), ty: t.ty() })
        .collect();
    assert_eq!(planned, s.tensors());
    for info in file.tensors() {
        let view = file.tensor(info.name()).unwrap();
        assert_eq!(view.file_offset() % 32, 0, "{} is aligned", info.name());
        view.check_finite().unwrap();
        // Every K-quant block carries the documented f16 scale of its fan-in.
        let fan_in = if info.name().ends_with("ffn_down.weight") { s.ffn } else { s.dim };
        let (block, at, divisor) = match info.ty() {
            GgmlType::Q4K => (144, 0, 255.0),
            GgmlType::Q6K => (210, 208, 682.0),
            _ => continue,
        };
        let expected = f16::f32_to_f16(1.0 / (fan_in as f32).sqrt() / divisor);
        for b in view.bytes().chunks_exact(block) {
            assert_eq!(u16::from_le_bytes([b[at], b[at + 1]]), expected, "{}", info.name());
        }
    }
    file
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn a_written_shape_reads_back_as_its_plan(
        layers in 1u32..5,
        attention in proptest::collection::vec(any::<bool>(), 5),
        dim in prop_oneof![Just(256u32), Just(512)],
        heads in prop_oneof![Just(2u32), Just(4)],
        l_cache in 2u32..6,
        vocab in 300u32..700,
        seed in any::<u64>(),
    ) {
        let s = shape(layers, &attention, dim, heads, l_cache, vocab);
        let path = temp(&format!("shape-{seed}.gguf"));
        let written = shaped_lfm2::write_lfm2(&path, &s, seed).unwrap();
        let file = check_written(&path, &s, written);
        // The same seed writes the same bytes.
        let again = temp(&format!("shape-{seed}-again.gguf"));
        shaped_lfm2::write_lfm2(&again, &s, seed).unwrap();
        prop_assert!(std::fs::read(&again).unwrap() == file.as_bytes());
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&again).unwrap();
    }
}

#[test]
fn a_shape_whose_rows_are_not_whole_blocks_is_refused_before_anything_is_written() {
    let s = Lfm2Shape { dim: 320, heads: 4, ..shape(2, &[false, true], 256, 4, 3, 300) };
    let path = temp("bad-shape.gguf");
    let err = shaped_lfm2::write_lfm2(&path, &s, 0).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("token_embd.weight"), "{err}");
    assert!(!path.exists());
}

/// What this crate reads from `file`, in the format `tests/data/check_with_gguf_py.py` expects.
fn expectation(file: &Gguf) -> String {
    let py = |ty: ValueType| match ty {
        ValueType::U32 => "uint32",
        ValueType::I32 => "int32",
        ValueType::F32 => "float32",
        ValueType::Bool => "bool",
        ValueType::String => "string",
        other => panic!("{other:?} is not written by the lfm2 writers"),
    };
    let mut out = String::new();
    for (key, value) in file.metadata() {
        let ty = match value {
            Value::Array(a) => format!("array/{}", py(a.elem_type())),
            v => py(v.value_type()).to_owned(),
        };
        writeln!(out, "kv {key} {ty}").unwrap();
    }
    for info in file.tensors() {
        let values = file.tensor(info.name()).unwrap().to_f32().unwrap();
        let dims: Vec<String> = info.dims().iter().map(u64::to_string).collect();
        write!(out, "tensor {} {} {}", info.name(), info.ty(), dims.join(",")).unwrap();
        for v in values {
            write!(out, " {:08x}", v.to_bits()).unwrap();
        }
        out.push('\n');
    }
    out
}

#[test]
fn gguf_py_reads_the_lfm2_files_as_this_crate_does() {
    let Some(python) = std::env::var_os("REDLINE_GGUF_PY") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "REDLINE_GGUF_PY is not set; CI needs a Python with gguf"
        );
        eprintln!("REDLINE_GGUF_PY is not set: skipping the gguf-py cross-check of the lfm2 files");
        return;
    };
    let tiny = temp("tiny-lfm2.gguf");
    std::fs::write(&tiny, tiny_lfm2(&TinyLfm2Config::default())).unwrap();
    let small = temp("small-lfm2.gguf");
    let s = shape(3, &[false, true, false], 256, 4, 3, 320);
    shaped_lfm2::write_lfm2(&small, &s, 11).unwrap();
    for path in [&tiny, &small] {
        let file = Gguf::open(path).unwrap();
        std::fs::write(format!("{}.expect", path.display()), expectation(&file)).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/check_with_gguf_py.py");
    let out = Command::new(python).arg(script).arg(&tiny).arg(&small).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "gguf-py disagrees");
    assert_eq!(stdout.lines().filter(|l| l.ends_with("all values equal")).count(), 2);
}
