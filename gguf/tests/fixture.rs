//! Tests against the real SmolLM2-135M-Instruct Q4_1 fixture, whose path comes from
//! `REDLINE_SMOLLM2_GGUF`. Without it they say so and pass, except under `CI=true`, where the
//! fixture is required.

use std::collections::BTreeSet;

use gguf::{GgmlType, Gguf, GgufError, TinyLlamaConfig, tiny_llama};

const FIXTURE_ENV: &str = "REDLINE_SMOLLM2_GGUF";

fn fixture() -> Option<Gguf> {
    let Some(path) = std::env::var_os(FIXTURE_ENV) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{FIXTURE_ENV} is not set; CI needs it to point at SmolLM2-135M-Instruct.Q4_1.gguf"
        );
        eprintln!("{FIXTURE_ENV} is not set: skipping the SmolLM2 fixture test");
        return None;
    };
    Some(Gguf::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.to_string_lossy())))
}

#[test]
fn fixture_header_and_metadata() {
    let Some(g) = fixture() else { return };
    // Counts and data offset as gguf-py's GGUFReader reports them.
    assert_eq!(g.version(), 3);
    assert_eq!(g.metadata().len(), 33);
    assert_eq!(g.tensors().len(), 272);
    assert_eq!(g.alignment(), 32);
    assert_eq!(g.data_offset(), 1_785_664);
    assert_eq!(g.str("general.architecture").unwrap(), "llama");
    assert_eq!(g.u32("llama.block_count").unwrap(), 30);
    assert_eq!(g.u32("llama.embedding_length").unwrap(), 576);
    assert_eq!(g.u32("llama.attention.head_count_kv").unwrap(), 3);
    assert_eq!(g.f32("llama.rope.freq_base").unwrap(), 100_000.0);
    assert_eq!(g.f32("llama.attention.layer_norm_rms_epsilon").unwrap(), 1e-5);
    assert!(!g.bool("tokenizer.ggml.add_bos_token").unwrap());
    let tokens = g.string_array("tokenizer.ggml.tokens").unwrap();
    assert_eq!(tokens.len(), 49_152);
    assert_eq!(&tokens[..3], ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]);
    assert_eq!(&g.i32_array("tokenizer.ggml.token_type").unwrap()[..3], [3, 3, 3]);
    assert_eq!(&g.string_array("tokenizer.ggml.merges").unwrap()[..3], ["Ġ t", "Ġ a", "i n"]);
    match g.u32("llama.rope.freq_base") {
        Err(GgufError::WrongType { key, expected, found }) => {
            assert_eq!((key.as_str(), expected, found.as_str()), ("llama.rope.freq_base", "u32", "f32"));
        }
        other => panic!("expected a type error, got {other:?}"),
    }
    assert!(matches!(g.u32("general.alignment"), Err(GgufError::MissingKey { .. })));
    let embd = g.tensor("token_embd.weight").unwrap();
    assert_eq!((embd.ty(), embd.dims()), (GgmlType::Q8_0, &[576, 49_152][..]));
    assert_eq!(g.tensor("blk.29.attn_v.weight").unwrap().ty(), GgmlType::Q4_1);
    assert!(matches!(g.tensor("output.weight"), Err(GgufError::NoSuchTensor { .. })));
}

#[test]
fn fixture_mapped_and_in_memory_parses_agree() {
    let Some(mapped) = fixture() else { return };
    let owned = Gguf::parse(mapped.as_bytes()).unwrap();
    assert_eq!(owned.tensors(), mapped.tensors());
    assert!(owned.metadata().eq(mapped.metadata()));
}

/// Rows dequantized here against gguf-py's `gguf.quants.dequantize` (see
/// `tests/data/dequant_reference.py`), bit for bit.
#[test]
fn fixture_dequantizes_like_gguf_py() {
    let Some(g) = fixture() else { return };
    let reference = include_str!("data/dequant_reference.txt");
    let mut lines = reference.lines();
    let mut checked = 0;
    while let Some(header) = lines.next() {
        let f: Vec<&str> = header.split(' ').collect();
        let [name, row, start, count, ty] = f[..] else { panic!("bad header {header:?}") };
        let (row, start, count): (u64, usize, usize) =
            (row.parse().unwrap(), start.parse().unwrap(), count.parse().unwrap());
        let t = g.tensor(name).unwrap();
        assert_eq!(t.ty().name(), Some(ty));
        let mut out = vec![0.0f32; usize::try_from(t.row_len()).unwrap()];
        t.dequantize_row(row, &mut out).unwrap();
        for (i, line) in lines.by_ref().take(count).enumerate() {
            let expected = u32::from_str_radix(line, 16).unwrap();
            assert_eq!(out[start + i].to_bits(), expected, "{name} row {row} element {}", start + i);
            checked += 1;
        }
    }
    assert_eq!(checked, 448);
}

fn key_set(g: &Gguf) -> BTreeSet<String> {
    g.metadata().map(|(k, _)| k.to_owned()).collect()
}

#[test]
fn tiny_llama_has_the_fixtures_keys_and_tensors() {
    let Some(fixture) = fixture() else { return };
    let config = TinyLlamaConfig::default();
    let tiny = Gguf::parse(tiny_llama(&config)).unwrap();
    assert_eq!(key_set(&tiny), key_set(&fixture));
    for (key, value) in fixture.metadata() {
        assert_eq!(tiny.get(key).unwrap().type_description(), value.type_description(), "{key}");
    }
    // The fixture's tensors of the first `n_layers` blocks plus the global ones, same types.
    let wanted: BTreeSet<(String, u32)> = fixture
        .tensors()
        .iter()
        .filter(|t| {
            let block = t.name().strip_prefix("blk.").and_then(|r| r.split('.').next()?.parse::<u32>().ok());
            block.is_none_or(|b| b < config.n_layers)
        })
        .map(|t| (t.name().to_owned(), t.ty().id()))
        .collect();
    let got: BTreeSet<(String, u32)> = tiny.tensors().iter().map(|t| (t.name().to_owned(), t.ty().id())).collect();
    assert_eq!(got, wanted);
}
