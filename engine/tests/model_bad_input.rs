//! A model file altered one key or one tensor at a time from the tiny llama: loading refuses it
//! with the key or tensor, the value and the rule it breaks, classified as a fault of the file
//! ([`SessionError::is_invalid_input`]), before any forward can turn it into a NaN logit.

use engine::model::{Llama, LlamaParams, LoadError, ParamsError, Session, SessionError};
use engine::replay::ReplayConfig;
use gguf::{GgmlType, Gguf, GgufWriter, TinyLlamaConfig, Value, tiny_llama_writer};
use pm4_encoding::Target;
use soft_device::SimDevice;

const CONTEXT: u32 = 16;

fn writer() -> GgufWriter {
    tiny_llama_writer(&TinyLlamaConfig::default())
}

fn with(key: &str, value: Value) -> Gguf {
    let mut w = writer();
    w.set(key, value).unwrap();
    Gguf::parse(w.to_bytes()).unwrap()
}

/// The session error for `file`, checked to be classified as the file's fault.
fn session_error(file: &Gguf) -> SessionError {
    let err = Session::new(SimDevice::new(Target::Gfx1100), file, CONTEXT, ReplayConfig::default()).unwrap_err();
    assert!(err.is_invalid_input(), "{err} is not classified as invalid input");
    err
}

fn params_error(file: &Gguf) -> ParamsError {
    LlamaParams::from_gguf(file).unwrap_err()
}

#[test]
fn the_unaltered_model_loads() {
    let file = Gguf::parse(writer().to_bytes()).unwrap();
    let params = LlamaParams::from_gguf(&file).unwrap();
    params.check_weights(&file).unwrap();
    // Tied output: the embedding, the output norm, nine per layer.
    assert_eq!(params.tensor_names().len(), 2 + 9 * 2);
    Session::new(SimDevice::new(Target::Gfx1100), &file, CONTEXT, ReplayConfig::default()).unwrap();
}

#[test]
fn hyperparameters_out_of_range_name_the_key_value_and_rule() {
    let eps = "llama.attention.layer_norm_rms_epsilon";
    let base = "llama.rope.freq_base";
    let cases: [(&str, Value, &str); 8] = [
        (eps, Value::F32(-1.0), "llama.attention.layer_norm_rms_epsilon = -1.0: the RMSNorm epsilon must be finite"),
        (eps, Value::F32(0.0), "= 0.0: the RMSNorm epsilon"),
        (eps, Value::F32(f32::NAN), "= NaN: the RMSNorm epsilon"),
        (
            base,
            Value::F32(0.0),
            "llama.rope.freq_base = 0.0: the RoPE frequency base must be finite and greater than 0",
        ),
        (base, Value::F32(f32::INFINITY), "llama.rope.freq_base = inf"),
        (base, Value::F32(-10_000.0), "llama.rope.freq_base = -10000.0"),
        ("llama.context_length", Value::U32(0), "llama.context_length = 0: the trained context must be at least 1"),
        ("llama.attention.head_count", Value::U32(3), "llama.attention.head_count = 3: must divide the embedding"),
    ];
    for (key, value, needle) in cases {
        let file = with(key, value.clone());
        let err = params_error(&file);
        assert!(err.to_string().contains(needle), "{key} {value:?}: {err}");
        let err = session_error(&file);
        assert!(err.to_string().contains(needle), "{key} {value:?}: {err}");
    }
}

#[test]
fn vocabulary_sizes_must_agree() {
    // The tiny vocabulary: 3 specials, 256 bytes, the merge results.
    let tokens = gguf::tiny::tiny_vocab().tokens.len();
    let err = params_error(&with("llama.vocab_size", Value::U32(1 << 31)));
    assert!(
        matches!(&err, ParamsError::VocabMismatch { first, first_value: 2_147_483_648, second, second_value }
        if first == "llama.vocab_size" && second.contains("token_embd.weight") && *second_value == u64::try_from(tokens).unwrap()),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "llama.vocab_size is 2147483648 but the row count of token_embd.weight (dimension 1) is {tokens}: \
             the vocabulary sizes must agree"
        )
    );

    // One token fewer in tokenizer.ggml.tokens (and its types, and the merge that made it) than
    // embedding rows.
    let mut w = writer();
    let mut vocab = gguf::tiny::tiny_vocab();
    vocab.tokens.pop();
    vocab.token_types.pop();
    vocab.merges.pop();
    w.set("tokenizer.ggml.merges", Value::string_array(vocab.merges)).unwrap();
    w.set("tokenizer.ggml.tokens", Value::string_array(vocab.tokens)).unwrap();
    w.set("tokenizer.ggml.token_type", Value::i32_array(vocab.token_types)).unwrap();
    let file = Gguf::parse(w.to_bytes()).unwrap();
    let err = params_error(&file);
    assert!(
        matches!(&err, ParamsError::VocabMismatch { first, first_value, second_value, .. }
            if first == "the length of tokenizer.ggml.tokens" && *first_value + 1 == *second_value),
        "{err}"
    );
    let err = session_error(&file);
    assert!(err.to_string().contains("tokenizer.ggml.tokens"), "{err}");

    // An untied output matrix with one row fewer than the embedding.
    let mut w = writer();
    let rows = u64::try_from(tokens).unwrap() - 1;
    let data = gguf::quant::quantize(GgmlType::Q8_0, &vec![0.1; usize::try_from(64 * rows).unwrap()]).unwrap();
    w.add_tensor("output.weight", &[64, rows], GgmlType::Q8_0, data).unwrap();
    let err = params_error(&Gguf::parse(w.to_bytes()).unwrap());
    assert!(
        matches!(&err, ParamsError::VocabMismatch { second, second_value, .. }
            if second.contains("output.weight") && *second_value == rows),
        "{err}"
    );
}

#[test]
fn non_finite_weights_name_the_tensor_and_block() {
    // Q4_1 blocks are 20 bytes: block 3's minimum `m` (bytes 2..4) becomes NaN.
    let mut w = writer();
    w.tensor_data_mut("blk.1.ffn_up.weight").unwrap()[3 * 20 + 2..3 * 20 + 4].copy_from_slice(&0x7e00u16.to_le_bytes());
    let file = Gguf::parse(w.to_bytes()).unwrap();
    LlamaParams::from_gguf(&file).unwrap();
    let err = session_error(&file);
    let message = err.to_string();
    for part in ["\"blk.1.ffn_up.weight\"", "Q4_1", "minimum m of block 3", "is NaN"] {
        assert!(message.contains(part), "{part}: {message}");
    }
    let mut device = SimDevice::new(Target::Gfx1100);
    let Err(LoadError::Model(ParamsError::Weights(_))) = Llama::load_model(&mut device, &file, CONTEXT) else {
        panic!("load_model did not refuse the weights")
    };
    let err = LlamaParams::from_gguf(&file).unwrap().check_weights(&file).unwrap_err();
    assert!(err.to_string().contains("minimum m of block 3"), "{err}");

    // An F32 norm element that is +inf.
    let mut w = writer();
    w.tensor_data_mut("output_norm.weight").unwrap()[5 * 4..6 * 4].copy_from_slice(&f32::INFINITY.to_le_bytes());
    let err = session_error(&Gguf::parse(w.to_bytes()).unwrap());
    assert!(err.to_string().contains("\"output_norm.weight\" (F32): value of element 5"), "{err}");

    // The Q8_0 embedding's first scale.
    let mut w = writer();
    w.tensor_data_mut("token_embd.weight").unwrap()[..2].copy_from_slice(&0xfc00u16.to_le_bytes());
    let err = session_error(&Gguf::parse(w.to_bytes()).unwrap());
    assert!(err.to_string().contains("\"token_embd.weight\" (Q8_0): scale d of block 0"), "{err}");
    assert!(err.to_string().contains("is -inf"), "{err}");
}

#[test]
fn tokenizer_errors_name_their_key() {
    let mut vocab = gguf::tiny::tiny_vocab();
    let again = vocab.merges[4].clone();
    vocab.merges.push(again.clone());
    let index = vocab.merges.len() - 1;
    let err = session_error(&with("tokenizer.ggml.merges", Value::string_array(vocab.merges)));
    assert_eq!(
        err.to_string(),
        format!("tokenizer: tokenizer.ggml.merges: merge {index} {again:?} duplicates merge 4")
    );

    let err = session_error(&with("tokenizer.ggml.eos_token_id", Value::U32(100_000)));
    assert!(err.to_string().contains("tokenizer.ggml.eos_token_id: eos id 100000 is out of range"), "{err}");

    // An optional key present with another type is refused, not ignored.
    let err = session_error(&with("tokenizer.ggml.padding_token_id", Value::String("2".into())));
    assert!(err.to_string().contains("\"tokenizer.ggml.padding_token_id\" has type string, expected u32"), "{err}");
    let err = session_error(&with("tokenizer.ggml.pre", Value::U32(1)));
    assert!(err.to_string().contains("tokenizer.ggml.pre"), "{err}");
}

#[test]
fn a_device_failure_is_not_the_files_fault() {
    let file = Gguf::parse(writer().to_bytes()).unwrap();
    // A context the model was not trained for is the caller's request, not the file.
    let err = Session::new(SimDevice::new(Target::Gfx1100), &file, 100_000, ReplayConfig::default()).unwrap_err();
    assert!(!err.is_invalid_input(), "{err}");
    assert!(err.to_string().contains("context 100000 is outside 1..=256"), "{err}");
}
