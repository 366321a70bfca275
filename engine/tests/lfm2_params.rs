//! `lfm2` hyperparameters from GGUF: the published LFM2-350M shape (`gguf::shaped_lfm2`, written
//! to a file and opened as a user's would be) reads as llama.cpp reads it, the tiny writer's
//! follow its configuration, and every key and tensor the adapter needs is refused by name when
//! it is missing, malformed or out of range.

use engine::model::language::ModelParams;
use engine::model::lfm2::params::Lfm2Params;
use gguf::{GgmlType, Gguf, GgufWriter, TinyLfm2Config, Value, tiny_lfm2, tiny_lfm2_writer};

#[test]
fn lfm2_350m_reads_as_llama_cpp_reads_it() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lfm2-350m-{}.gguf", std::process::id()));
    gguf::shaped_lfm2::write_lfm2_350m(&path, 1).unwrap();
    let file = Gguf::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let p = Lfm2Params::from_gguf(&file).unwrap();
    assert_eq!((p.layers, p.dim, p.ffn, p.heads, p.kv_heads, p.head_dim), (16, 1024, 4608, 16, 8, 64));
    assert_eq!((p.vocab, p.context_train, p.l_cache, p.d_conv()), (65_536, 128_000, 3, 2));
    assert_eq!((p.rope_base, p.eps), (1_000_000.0, 1e-5));
    // 1 / sqrt(64) is exactly 1/8.
    assert_eq!(p.attention_scale, 0.125);
    assert!(p.tied_output);
    let attention: Vec<u32> = (0..p.layers).filter(|&l| p.is_attention(l)).collect();
    assert_eq!(attention, [2, 5, 8, 10, 12, 14]);
    assert_eq!((p.attention_layers(), p.conv_layers()), (6, 10));
    // Block 8 is the third attention block; block 9 the sixth convolution block.
    assert_eq!((p.attention_before(8), 9 - p.attention_before(9)), (2, 6));
    // The KV cache holds the six attention blocks only.
    let layout = ModelParams::Lfm2(p).kv_cache_layout(100);
    assert_eq!((layout.layers, layout.kv_heads, layout.head_dim, layout.positions), (6, 8, 64, 100));
    assert_eq!(layout.surface_bytes, 6 * 100 * 8 * 64 * 4);
    // Every weight is finite, as a load checks while uploading.
    ModelParams::Lfm2(p).check_weights(&file).unwrap();
    assert_eq!(file.tensor("token_embd.weight").unwrap().ty(), GgmlType::Q6K);
    assert_eq!(ModelParams::Lfm2(p).tensor_names().len(), file.tensors().len());
}

#[test]
fn the_tiny_model_has_its_configuration() {
    let c = TinyLfm2Config::default();
    let p = Lfm2Params::from_gguf(&Gguf::parse(tiny_lfm2(&c)).unwrap()).unwrap();
    assert_eq!((p.layers, p.dim, p.ffn, p.heads, p.kv_heads, p.head_dim, p.l_cache), (6, 256, 512, 4, 2, 64, 3));
    assert_eq!(p.attention_mask, 0b10100);
    assert_eq!(p.attention_scale, 0.125);
}

/// A change to the tiny model's file before it is read.
type Edit = Box<dyn FnOnce(&mut GgufWriter)>;

fn refused(edit: impl FnOnce(&mut GgufWriter)) -> String {
    let mut w = tiny_lfm2_writer(&TinyLfm2Config::default());
    edit(&mut w);
    match Lfm2Params::from_gguf(&Gguf::parse(w.to_bytes()).unwrap()) {
        Err(e) => e.to_string(),
        Ok(p) => panic!("accepted: {p:?}"),
    }
}

#[test]
fn malformed_block_kinds_are_refused_by_name() {
    const KV: &str = "lfm2.attention.head_count_kv";
    let cases: [(Value, &str); 5] = [
        (Value::i32_array([0, 0, 2]), "3 entries: must have one entry per block"),
        (Value::i32_array([0, 0, -2, 0, 2, 0]), "-2: a KV head count is not negative"),
        (Value::i32_array([0, 0, 2, 0, 1, 0]), "every attention block must have the same KV head count"),
        (Value::i32_array([0, 0, 3, 0, 3, 0]), "must divide the head count"),
        (Value::String("0,0,2".into()), "must be a u32 or an array"),
    ];
    for (value, expected) in cases {
        let text = refused(|w| {
            w.set(KV, value).unwrap();
        });
        assert!(text.contains(KV) && text.contains(expected), "{text}");
    }
    let text = refused(|w| {
        w.remove(KV);
    });
    assert!(text.contains(KV) && text.contains("missing"), "{text}");
    // A scalar makes every block an attention block: the convolution tensors go unused, and the
    // attention tensors of block 0 are missing.
    let text = refused(|w| {
        w.set(KV, Value::U32(2)).unwrap();
    });
    assert!(text.contains("blk.0.attn_q_norm.weight is missing"), "{text}");
}

#[test]
fn missing_and_unsupported_keys_and_tensors_are_refused_by_name() {
    let set = |key: &'static str, value: Value| -> Edit {
        Box::new(move |w| {
            w.set(key, value).unwrap();
        })
    };
    let add = |key: &'static str, value: Value| -> Edit {
        Box::new(move |w| {
            w.add(key, value).unwrap();
        })
    };
    let remove_tensor =
        |name: &'static str| -> Edit { Box::new(move |w| assert!(w.remove_tensor(name), "{name} is written")) };
    let cases: Vec<(Edit, &str)> = vec![
        (set("lfm2.shortconv.l_cache", Value::U32(1)), "lfm2.shortconv.l_cache = 1"),
        (Box::new(|w| assert!(w.remove("lfm2.shortconv.l_cache").is_some())), "lfm2.shortconv.l_cache"),
        (add("lfm2.attention.sliding_window", Value::U32(512)), "sliding-window"),
        (add("lfm2.attention.causal", Value::Bool(false)), "lfm2.attention.causal"),
        (add("lfm2.rope.dimension_count", Value::U32(32)), "lfm2.rope.dimension_count = 32"),
        (add("lfm2.rope.scaling.factor", Value::F32(4.0)), "scaled RoPE"),
        (set("lfm2.attention.head_count", Value::U32(256)), "even head sizes"),
        (set("lfm2.block_count", Value::U32(65)), "lfm2.block_count = 65"),
        (set("lfm2.context_length", Value::U32(0)), "lfm2.context_length = 0"),
        (set("lfm2.embedding_length", Value::U32(1 << 17)), "lfm2.embedding_length = 131072"),
        (remove_tensor("token_embd_norm.weight"), "token_embd_norm.weight is missing"),
        (remove_tensor("blk.3.shortconv.conv.weight"), "blk.3.shortconv.conv.weight is missing"),
        (remove_tensor("blk.4.attn_k_norm.weight"), "blk.4.attn_k_norm.weight is missing"),
        (
            Box::new(|w| {
                w.add_tensor("dense_2_out.weight", &[256, 32], GgmlType::F32, vec![0; 4 * 256 * 32]).unwrap();
            }),
            "LFM2-ColBert",
        ),
    ];
    for (edit, expected) in cases {
        let text = refused(edit);
        assert!(text.contains(expected), "{text}");
    }
    // The convolution taps are F32 in every file llama.cpp makes: another type is named.
    let text = refused(|w| {
        w.remove_tensor("blk.0.shortconv.conv.weight");
        w.add_tensor("blk.0.shortconv.conv.weight", &[3, 256], GgmlType::F16, vec![0; 2 * 3 * 256]).unwrap();
    });
    assert!(text.contains("blk.0.shortconv.conv.weight: F16"), "{text}");
    let text = refused(|w| {
        w.set("general.architecture", Value::String("lfm2moe".into())).unwrap();
    });
    assert!(text.contains("\"lfm2moe\"") && text.contains("llama, gemma3, lfm2"), "{text}");
}
