//! `gemma3` hyperparameters from GGUF: Gemma 3 270M's (`REDLINE_GEMMA3_GGUF`) are the numbers
//! its model card and llama.cpp give it, the tiny writer's follow its configuration, and every
//! key the adapter needs is refused by name when it is missing or out of range.

use engine::model::gemma3::params::{Gemma3Params, ROPE_BASE_LOCAL};
use gguf::{Gguf, TinyGemma3Config, Value, tiny_gemma3, tiny_gemma3_writer};

const GGUF_ENV: &str = "REDLINE_GEMMA3_GGUF";

#[test]
fn gemma_3_270m_has_the_published_shape() {
    let Ok(path) = std::env::var(GGUF_ENV) else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{GGUF_ENV} is not set: CI must run the Gemma 3 tests");
        println!("{GGUF_ENV} not set: the Gemma 3 270M parameter test did nothing");
        return;
    };
    let p = Gemma3Params::from_gguf(&Gguf::open(&path).unwrap()).unwrap();
    assert_eq!((p.layers, p.dim, p.ffn, p.heads, p.kv_heads, p.head_dim), (18, 640, 2048, 4, 1, 256));
    assert_eq!((p.vocab, p.context_train, p.window), (262_144, 32_768, 512));
    assert_eq!((p.rope_base_global, p.rope_base_local), (1_000_000.0, 10_000.0));
    assert!(p.tied_output);
    // 1 / sqrt(256) is exactly 1/16; sqrt(640) rounded to f32 is sqrtf(640).
    assert_eq!(p.attention_scale, 0.0625);
    assert_eq!(p.embedding_scale, 640f32.sqrt());
    assert_eq!(p.eps, 1e-6);
    // Five sliding layers, then a global one: layers 5, 11 and 17 attend globally.
    let global: Vec<u32> = (0..p.layers).filter(|&l| !p.is_sliding(l)).collect();
    assert_eq!(global, [5, 11, 17]);
}

#[test]
fn the_tiny_model_has_its_configuration() {
    let c = TinyGemma3Config::default();
    let p = Gemma3Params::from_gguf(&Gguf::parse(tiny_gemma3(&c)).unwrap()).unwrap();
    assert_eq!((p.layers, p.dim, p.ffn, p.heads, p.kv_heads, p.head_dim, p.window), (7, 128, 256, 4, 2, 64, 8));
    assert_eq!(p.rope_base_local, ROPE_BASE_LOCAL);
    assert_eq!(p.attention_scale, 0.125);
    assert!(p.is_sliding(4) && !p.is_sliding(5) && p.is_sliding(6));
}

fn refused(edit: impl FnOnce(&mut gguf::GgufWriter)) -> String {
    let mut w = tiny_gemma3_writer(&TinyGemma3Config::default());
    edit(&mut w);
    match Gemma3Params::from_gguf(&Gguf::parse(w.to_bytes()).unwrap()) {
        Err(e) => e.to_string(),
        Ok(p) => panic!("accepted: {p:?}"),
    }
}

#[test]
fn missing_and_unsupported_keys_are_refused_by_name() {
    let text = refused(|w| {
        w.remove("gemma3.attention.sliding_window");
    });
    assert!(text.contains("gemma3.attention.sliding_window"), "{text}");
    let text = refused(|w| {
        w.set("gemma3.attention.value_length", Value::U32(128)).unwrap();
    });
    assert!(text.contains("gemma3.attention.value_length = 128: must equal the key length"), "{text}");
    let text = refused(|w| {
        w.set("gemma3.attention.sliding_window", Value::U32(0)).unwrap();
    });
    assert!(text.contains("gemma3.attention.sliding_window = 0"), "{text}");
    let text = refused(|w| {
        w.set("gemma3.attention.key_length", Value::U32(320)).unwrap();
    });
    assert!(text.contains("gemma3.attention.key_length = 320"), "{text}");
    let text = refused(|w| {
        w.add("gemma3.rope.scaling.factor", Value::F32(8.0)).unwrap();
    });
    assert!(text.contains("scaled RoPE"), "{text}");
    let text = refused(|w| {
        w.set("general.architecture", Value::String("gemma2".into())).unwrap();
    });
    assert!(text.contains("\"gemma2\"") && text.contains("llama, gemma3"), "{text}");
    let text = refused(|w| {
        w.remove_tensor("blk.3.post_ffw_norm.weight");
    });
    assert!(text.contains("blk.3.post_ffw_norm.weight is missing"), "{text}");
}
