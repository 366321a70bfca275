//! Writer ↔ reader: arbitrary metadata and tensors written and parsed back unchanged; mutated
//! files (bit flips, truncations) give a result or an error, never a panic.

use std::collections::BTreeMap;

use gguf::{Array, GgmlType, Gguf, GgufWriter, TinyLlamaConfig, Value, ValueType, tiny_llama};
use proptest::prelude::*;

fn float32() -> impl Strategy<Value = f32> {
    use proptest::num::f32::{INFINITE, NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO | INFINITE
}

fn float64() -> impl Strategy<Value = f64> {
    use proptest::num::f64::{INFINITE, NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO | INFINITE
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u8>().prop_map(Value::U8),
        any::<i8>().prop_map(Value::I8),
        any::<u16>().prop_map(Value::U16),
        any::<i16>().prop_map(Value::I16),
        any::<u32>().prop_map(Value::U32),
        any::<i32>().prop_map(Value::I32),
        float32().prop_map(Value::F32),
        any::<bool>().prop_map(Value::Bool),
        ".{0,12}".prop_map(Value::String),
        any::<u64>().prop_map(Value::U64),
        any::<i64>().prop_map(Value::I64),
        float64().prop_map(Value::F64),
    ]
}

/// Same-typed items: an array of copies of one strategy's output type, possibly nested.
fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 32, 6, |inner| {
        (inner, 0usize..6).prop_flat_map(|(seed, n)| {
            let ty = seed.value_type();
            proptest::collection::vec(same_type(seed), n)
                .prop_map(move |items| Value::Array(Array::new(ty, items).expect("items share the seed's type")))
        })
    })
}

/// Values of `seed`'s type (for arrays: the seed itself, so nested element types agree).
fn same_type(seed: Value) -> BoxedStrategy<Value> {
    match seed.value_type() {
        ValueType::U8 => any::<u8>().prop_map(Value::U8).boxed(),
        ValueType::I32 => any::<i32>().prop_map(Value::I32).boxed(),
        ValueType::String => ".{0,8}".prop_map(Value::String).boxed(),
        ValueType::F32 => float32().prop_map(Value::F32).boxed(),
        _ => Just(seed).boxed(),
    }
}

#[derive(Debug, Clone)]
struct Tensor {
    name: String,
    dims: Vec<u64>,
    ty: GgmlType,
    data: Vec<u8>,
}

fn tensor() -> impl Strategy<Value = Tensor> {
    let ty = prop_oneof![Just(GgmlType::F32), Just(GgmlType::F16), Just(GgmlType::Q4_1), Just(GgmlType::Q8_0)];
    (ty, 1u64..3, proptest::collection::vec(1u64..4, 0..3), "[a-z.]{1,20}").prop_flat_map(|(ty, blocks, rest, name)| {
        let block = ty.layout().unwrap().block_elems;
        let mut dims = vec![blocks * block];
        dims.extend(rest);
        let len = usize::try_from(ty.bytes_for(dims.iter().product()).unwrap()).unwrap();
        proptest::collection::vec(any::<u8>(), len).prop_map(move |data| Tensor {
            name: name.clone(),
            dims: dims.clone(),
            ty,
            data,
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn written_files_parse_back_unchanged(
        metadata in proptest::collection::btree_map("[a-z_.]{1,16}", value(), 0..8),
        tensors in proptest::collection::vec(tensor(), 0..5),
        align_exp in proptest::option::of(0u32..8),
    ) {
        let mut w = GgufWriter::new();
        let mut expected: BTreeMap<String, Value> = metadata.clone();
        if let Some(e) = align_exp {
            expected.insert(gguf::ALIGNMENT_KEY.to_owned(), Value::U32(1 << e));
            w.add(gguf::ALIGNMENT_KEY, Value::U32(1 << e)).unwrap();
        }
        // Generated keys have at most 16 bytes, so never collide with general.alignment.
        for (k, v) in &metadata {
            w.add(k.clone(), v.clone()).unwrap();
        }
        let mut names = std::collections::HashSet::new();
        let tensors: Vec<Tensor> = tensors.into_iter().filter(|t| names.insert(t.name.clone())).collect();
        for t in &tensors {
            w.add_tensor(t.name.clone(), &t.dims, t.ty, t.data.clone()).unwrap();
        }
        let bytes = w.to_bytes();
        let mut streamed = Vec::new();
        w.write_to(&mut streamed).unwrap();
        prop_assert_eq!(&streamed, &bytes);

        let g = Gguf::parse(bytes).unwrap();
        prop_assert_eq!(g.version(), 3);
        prop_assert_eq!(g.alignment(), align_exp.map_or(32, |e| 1 << e));
        let got: BTreeMap<String, Value> = g.metadata().map(|(k, v)| (k.to_owned(), v.clone())).collect();
        prop_assert_eq!(got, expected);
        prop_assert_eq!(g.tensors().len(), tensors.len());
        for t in &tensors {
            let view = g.tensor(&t.name).unwrap();
            prop_assert_eq!(view.dims(), &t.dims[..]);
            prop_assert_eq!(view.ty(), t.ty);
            prop_assert_eq!(view.bytes(), &t.data[..]);
            prop_assert_eq!(g.tensor_info(&t.name).unwrap().offset() % u64::from(g.alignment()), 0);
        }
    }
}

/// Walks everything a parsed file offers, the way a consumer would.
fn walk(g: &Gguf) {
    for (key, value) in g.metadata() {
        assert!(g.get(key).is_some());
        let _ = value.type_description();
    }
    for info in g.tensors() {
        if let Ok(view) = g.tensor(info.name()) {
            let _ = view.to_f32();
        }
    }
}

fn small_model() -> Vec<u8> {
    tiny_llama(&TinyLlamaConfig {
        n_layers: 1,
        dim: 32,
        ffn_dim: 32,
        n_heads: 2,
        n_kv_heads: 1,
        ..TinyLlamaConfig::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn bit_flips_never_panic(flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..8)) {
        let mut bytes = small_model();
        for (at, bit) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
        }
        if let Ok(g) = Gguf::parse(bytes) {
            walk(&g);
        }
    }

    #[test]
    fn header_byte_rewrites_never_panic(at in 0usize..4096, byte in any::<u8>()) {
        // Most of the interesting structure (counts, lengths, types) is in the first pages.
        let mut bytes = small_model();
        let i = at % bytes.len();
        bytes[i] = byte;
        if let Ok(g) = Gguf::parse(bytes) {
            walk(&g);
        }
    }

    #[test]
    fn truncations_are_errors(cut in any::<prop::sample::Index>()) {
        let bytes = small_model();
        let keep = cut.index(bytes.len());
        // The last tensor ends at the end of the file, so every strict prefix loses something.
        prop_assert!(Gguf::parse(&bytes[..keep]).is_err());
    }
}
