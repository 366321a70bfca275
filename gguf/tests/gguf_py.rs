//! Files written by this crate, read by gguf-py: metadata of every value type and a tensor of
//! every supported type, and the tiny llama model. Needs `REDLINE_GGUF_PY` naming a Python
//! interpreter with the `gguf` package; without it the test says so and passes (under `CI=true`
//! it fails).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use gguf::{Array, GgmlType, Gguf, GgufWriter, TinyLlamaConfig, Value, ValueType, quant, tiny_llama};

/// Every type the crate supports, one tensor each in the sample file.
const SUPPORTED: [GgmlType; 13] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2K,
    GgmlType::Q3K,
    GgmlType::Q4K,
    GgmlType::Q5K,
    GgmlType::Q6K,
    GgmlType::Bf16,
];

fn sample() -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.add("t.u8", Value::U8(200))
        .and_then(|w| w.add("t.i8", Value::I8(-100)))
        .and_then(|w| w.add("t.u16", Value::U16(60_000)))
        .and_then(|w| w.add("t.i16", Value::I16(-30_000)))
        .and_then(|w| w.add("t.u32", Value::U32(4_000_000_000)))
        .and_then(|w| w.add("t.i32", Value::I32(-2_000_000_000)))
        .and_then(|w| w.add("t.f32", Value::F32(1.5)))
        .and_then(|w| w.add("t.bool", Value::Bool(true)))
        .and_then(|w| w.add("t.string", Value::String("héllo".to_owned())))
        .and_then(|w| w.add("t.u64", Value::U64(u64::MAX)))
        .and_then(|w| w.add("t.i64", Value::I64(i64::MIN)))
        .and_then(|w| w.add("t.f64", Value::F64(-0.25)))
        .and_then(|w| w.add("t.strings", Value::string_array(["a", "bc"])))
        .and_then(|w| w.add("t.i32s", Value::i32_array([1, -2, 3])))
        .and_then(|w| {
            let inner = Array::new(ValueType::U8, vec![Value::U8(1)]).unwrap();
            w.add("t.nested", Value::Array(Array::new(ValueType::Array, vec![Value::Array(inner)]).unwrap()))
        })
        .and_then(|w| w.add(gguf::ALIGNMENT_KEY, Value::U32(64)))
        .unwrap();
    // Two rows of 256 (a whole k-quant super-block each): a ramp with a wiggle, so that
    // sub-blocks differ in range and sign.
    let x: Vec<f32> = (0..512u16).map(|i| f32::from(i) * 0.037 - 9.0 + (f32::from(i) * 0.7).sin() * 3.0).collect();
    for ty in SUPPORTED {
        let name = ty.to_string().to_lowercase();
        w.add_tensor(name, &[256, 2], ty, quant::quantize(ty, &x).unwrap()).unwrap();
    }
    w.to_bytes()
}

/// What the crate reads from `bytes`, in the format `check_with_gguf_py.py` expects.
fn expectation(bytes: Vec<u8>) -> String {
    let g = Gguf::parse(bytes).unwrap();
    let mut out = String::new();
    for (key, value) in g.metadata() {
        let ty = match value {
            Value::Array(a) => format!("array/{}", nested_types(a)),
            v => py_name(v.value_type()).to_owned(),
        };
        writeln!(out, "kv {key} {ty}").unwrap();
    }
    for info in g.tensors() {
        let values = g.tensor(info.name()).unwrap().to_f32().unwrap();
        let dims: Vec<String> = info.dims().iter().map(u64::to_string).collect();
        write!(out, "tensor {} {} {}", info.name(), info.ty(), dims.join(",")).unwrap();
        for v in values {
            write!(out, " {:08x}", v.to_bits()).unwrap();
        }
        out.push('\n');
    }
    out
}

/// gguf-py lists an array's types as the outer array then the first item's types, down.
fn nested_types(a: &Array) -> String {
    match a.items().first() {
        Some(Value::Array(inner)) => format!("array/{}", nested_types(inner)),
        _ => py_name(a.elem_type()).to_owned(),
    }
}

/// gguf-py's `GGUFValueType` member name, lower-cased.
fn py_name(ty: ValueType) -> &'static str {
    match ty {
        ValueType::U8 => "uint8",
        ValueType::I8 => "int8",
        ValueType::U16 => "uint16",
        ValueType::I16 => "int16",
        ValueType::U32 => "uint32",
        ValueType::I32 => "int32",
        ValueType::F32 => "float32",
        ValueType::Bool => "bool",
        ValueType::String => "string",
        ValueType::Array => "array",
        ValueType::U64 => "uint64",
        ValueType::I64 => "int64",
        ValueType::F64 => "float64",
    }
}

#[test]
fn gguf_py_reads_written_files() {
    let Some(python) = std::env::var_os("REDLINE_GGUF_PY") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "REDLINE_GGUF_PY is not set; CI needs a Python with gguf"
        );
        eprintln!("REDLINE_GGUF_PY is not set: skipping the gguf-py cross-check");
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let files = [("sample.gguf", sample()), ("tiny_llama.gguf", tiny_llama(&TinyLlamaConfig::default()))];
    let mut args = Vec::new();
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        std::fs::write(dir.join(format!("{name}.expect")), expectation(bytes)).unwrap();
        args.push(path);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/check_with_gguf_py.py");
    let out = Command::new(python).arg(script).args(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "gguf-py disagrees");
    assert_eq!(stdout.lines().filter(|l| l.ends_with("all values equal")).count(), 2);
    assert!(stdout.contains(&format!("and {} tensors", SUPPORTED.len())), "every type's tensor was read");
}

#[test]
fn the_sample_covers_every_supported_type() {
    for id in 0..64 {
        let ty = GgmlType::from_id(id);
        assert_eq!(SUPPORTED.contains(&ty), ty.is_supported(), "{ty}");
    }
}
