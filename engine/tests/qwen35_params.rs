//! `qwen35` hyperparameters from GGUF: the tiny writer's follow its configuration, the layer kinds
//! come from `attention.recurrent_layers` or, without it, from `full_attention_interval`, a
//! multi-token-prediction block is left out, and every key the adapter needs is refused by name
//! when it is missing or out of range.

use engine::model::qwen35::params::Qwen35Params;
use gguf::{Array, Gguf, GgufWriter, TinyQwen35Config, Value, ValueType, tiny_qwen35, tiny_qwen35_writer};

fn params(w: &GgufWriter) -> Result<Qwen35Params, String> {
    Qwen35Params::from_gguf(&Gguf::parse(w.to_bytes()).unwrap()).map_err(|e| e.to_string())
}

fn refused(edit: impl FnOnce(&mut GgufWriter)) -> String {
    let mut w = tiny_qwen35_writer(&TinyQwen35Config::default());
    edit(&mut w);
    match params(&w) {
        Err(e) => e,
        Ok(p) => panic!("accepted: {p:?}"),
    }
}

#[test]
fn the_tiny_model_has_its_configuration() {
    let c = TinyQwen35Config::default();
    let p = Qwen35Params::from_gguf(&Gguf::parse(tiny_qwen35(&c)).unwrap()).unwrap();
    assert_eq!((p.layers, p.dim, p.ffn, p.heads, p.kv_heads, p.head_dim), (6, 128, 256, 4, 2, 64));
    assert_eq!((p.rope_dims, p.rope_sections, p.rope_base), (16, [3, 3, 2, 0], 10_000_000.0));
    assert_eq!((p.conv_kernel, p.state, p.k_heads, p.v_heads), (4, 64, 2, 4));
    assert_eq!((p.conv_dim(), p.value_dim(), p.recurrent_layers(), p.attention_layers()), (512, 256, 4, 2));
    let kinds: Vec<bool> = (0..6).map(|l| p.is_recurrent(l)).collect();
    assert_eq!(kinds, [true, true, false, true, true, false]);
    // 1 / sqrt(64) and ggml's 1.0f / sqrtf(64) are exactly 1/8.
    assert_eq!((p.attention_scale, p.delta_scale), (0.125, 0.125));
    assert!(p.tied_output);
    // The embedding (tied: no output matrix), the output norm, then each layer's.
    assert_eq!(p.tensor_names().len(), 2 + 4 * (11 + 3) + 2 * (8 + 3));
}

#[test]
fn the_layer_kinds_come_from_the_flags_else_from_the_interval() {
    // The flags win over the interval: every other layer.
    let mut w = tiny_qwen35_writer(&TinyQwen35Config::default());
    let flags = (0..6).map(|l| Value::Bool(l % 2 == 0)).collect();
    w.set("qwen35.attention.recurrent_layers", Value::Array(Array::new(ValueType::Bool, flags).unwrap())).unwrap();
    // The tensors no longer fit the layer kinds: layer 1 is now a full-attention layer, with the
    // fused projection of a DeltaNet layer.
    let text = params(&w).unwrap_err();
    assert!(text.contains("blk.1.attn_qkv.weight") && text.contains("separate attn_q"), "{text}");
    // Without the flags, the interval: layers 2 and 5 attend fully, as the tensors say.
    let mut w = tiny_qwen35_writer(&TinyQwen35Config::default());
    w.remove("qwen35.attention.recurrent_layers");
    let p = params(&w).unwrap();
    assert_eq!((0..6).filter(|&l| !p.is_recurrent(l)).collect::<Vec<_>>(), [2, 5]);
    // Without either, llama.cpp's interval of 4: layer 2 is a DeltaNet layer, which the file's
    // layer 2 (a full-attention layer) cannot be.
    w.remove("qwen35.full_attention_interval");
    let text = params(&w).unwrap_err();
    assert!(text.contains("blk.2.ssm_conv1d.weight is missing"), "{text}");
}

#[test]
fn a_prediction_block_past_the_main_layers_is_left_out() {
    // Seven blocks, the last a multi-token-prediction head: the main pass runs the first six,
    // and the seventh's tensors are neither needed nor checked.
    let mut w = tiny_qwen35_writer(&TinyQwen35Config::default());
    w.set("qwen35.block_count", Value::U32(7)).unwrap();
    w.add("qwen35.nextn_predict_layers", Value::U32(1)).unwrap();
    let flags = (0..7).map(|l| Value::Bool(l % 3 != 2 && l < 6)).collect();
    w.set("qwen35.attention.recurrent_layers", Value::Array(Array::new(ValueType::Bool, flags).unwrap())).unwrap();
    let p = params(&w).unwrap();
    assert_eq!((p.layers, p.recurrent_layers()), (6, 4));
    assert!(p.tensor_names().iter().all(|n| !n.starts_with("blk.6.")));
    w.set("qwen35.nextn_predict_layers", Value::U32(7)).unwrap();
    let text = params(&w).unwrap_err();
    assert!(text.contains("qwen35.nextn_predict_layers = 7"), "{text}");
}

/// A change to the tiny model's file.
type Edit = Box<dyn FnOnce(&mut GgufWriter)>;

#[test]
fn missing_and_unsupported_keys_are_refused_by_name() {
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|w| drop(w.remove("qwen35.ssm.conv_kernel"))), "qwen35.ssm.conv_kernel"),
        (Box::new(|w| drop(w.set("qwen35.ssm.conv_kernel", Value::U32(1)))), "qwen35.ssm.conv_kernel = 1"),
        (Box::new(|w| drop(w.set("qwen35.ssm.inner_size", Value::U32(255)))), "qwen35.ssm.inner_size = 255"),
        (Box::new(|w| drop(w.set("qwen35.ssm.time_step_rank", Value::U32(3)))), "qwen35.ssm.time_step_rank = 3"),
        (Box::new(|w| drop(w.set("qwen35.ssm.group_count", Value::U32(0)))), "qwen35.ssm.group_count = 0"),
        (Box::new(|w| drop(w.set("qwen35.rope.dimension_count", Value::U32(66)))), "qwen35.rope.dimension_count = 66"),
        (Box::new(|w| drop(w.set("qwen35.rope.dimension_count", Value::U32(15)))), "qwen35.rope.dimension_count = 15"),
        (
            Box::new(|w| drop(w.set("qwen35.rope.dimension_sections", Value::i32_array([0, 0, 0, 0])))),
            "dimension_sections",
        ),
        (
            Box::new(|w| drop(w.set("qwen35.rope.dimension_sections", Value::i32_array([3, -1, 2, 0])))),
            "dimension_sections",
        ),
        (Box::new(|w| drop(w.set("qwen35.rope.dimension_sections", Value::i32_array([3, 3])))), "dimension_sections"),
        (Box::new(|w| drop(w.remove("qwen35.rope.dimension_sections"))), "qwen35.rope.dimension_sections"),
        (Box::new(|w| drop(w.set("qwen35.attention.value_length", Value::U32(32)))), "must equal the key length"),
        (Box::new(|w| drop(w.add("qwen35.rope.scaling.type", Value::String("yarn".into())))), "scaled RoPE"),
        (
            Box::new(|w| {
                w.remove("qwen35.attention.recurrent_layers");
                w.set("qwen35.full_attention_interval", Value::U32(0)).unwrap();
            }),
            "qwen35.full_attention_interval = 0",
        ),
        (
            Box::new(|w| drop(w.set("qwen35.attention.recurrent_layers", Value::i32_array([1, 1, 0, 1, 1, 0])))),
            "qwen35.attention.recurrent_layers",
        ),
        (
            Box::new(|w| {
                let flags = (0..5).map(|_| Value::Bool(true)).collect();
                w.set("qwen35.attention.recurrent_layers", Value::Array(Array::new(ValueType::Bool, flags).unwrap()))
                    .unwrap();
            }),
            "an array of 5",
        ),
        (Box::new(|w| assert!(w.remove_tensor("blk.0.ssm_a"))), "blk.0.ssm_a is missing"),
        (Box::new(|w| assert!(w.remove_tensor("blk.5.attn_q_norm.weight"))), "blk.5.attn_q_norm.weight is missing"),
        (
            Box::new(|w| {
                w.add_tensor("blk.2.attn_qkv.weight", &[128, 32], gguf::GgmlType::F32, vec![0; 128 * 32 * 4]).unwrap();
            }),
            "separate attn_q, attn_k and attn_v",
        ),
        (
            Box::new(|w| drop(w.set("general.architecture", Value::String("qwen35moe".into())))),
            "llama, gemma3, lfm2, qwen35",
        ),
    ];
    for (edit, expected) in cases {
        let text = refused(edit);
        assert!(text.contains(expected), "{expected:?} not in {text:?}");
    }
}
