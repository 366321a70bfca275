//! GGUF v3 model files.
//!
//! - [`Gguf`] parses a file (a sealed snapshot of it with [`Gguf::open`], whose header is
//!   judged before the rest is read, or bytes in memory with [`Gguf::parse`]) and validates all
//!   of it before handing anything out; errors name the key or tensor and the byte offset. Metadata is typed ([`Value`]); tensors are [`TensorInfo`]s
//!   and, for the supported types, [`TensorView`]s over their bytes.
//! - [`quant`] holds ggml's tensor encodings, bit-exact with its reference code and gguf-py:
//!   F32, F16, BF16, the 32-value blocks Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and the k-quants Q2_K to
//!   Q6_K; [`f16`](mod@f16) holds the exact binary16 conversions they rest on.
//! - [`GgufWriter`] writes files; [`tiny_llama`] generates a deterministic tiny model in the
//!   shape of the SmolLM2 fixture, [`tiny_gemma3()`] and [`tiny_lfm2()`] tiny models of those
//!   architectures; [`shaped_lfm2`] writes LFM2's published shapes with random weights.
//!
//! The file is never mapped: the trusted loader (`infile::snapshot`) copies it into a sealed
//! snapshot first, so this crate holds no `unsafe` code.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
pub mod f16;
mod file;
mod parse;
pub mod quant;
pub mod shaped_lfm2;
pub mod shaped_qwen35;
pub mod tiny;
pub mod tiny_gemma3;
pub mod tiny_lfm2;
pub mod tiny_qwen35;
mod types;
mod value;
mod writer;

pub use error::GgufError;

/// The largest GGUF file [`Gguf::open`] takes: 512 GiB, above the largest quantised models
/// published; a size past it is refused from the file's metadata, before anything is read. (A
/// file must also fit the snapshot's memory budget, [`infile::memory_budget`].)
pub const MAX_FILE_BYTES: u64 = infile::gib(512);

/// [`MAX_FILE_BYTES`] as the limit the loader opens a model file with.
pub const LIMIT: infile::Limit = infile::Limit::new("GGUF model", MAX_FILE_BYTES);
pub use file::{Gguf, TensorView};
pub use parse::{
    ALIGNMENT_KEY, DEFAULT_ALIGNMENT, HEADER_BYTES, MAGIC, MAX_ARRAY_DEPTH, MAX_DIMS, MAX_TENSOR_NAME_BYTES,
    TensorInfo, check_header,
};
pub use quant::QuantError;
pub use shaped_qwen35::{QWEN35_0_8B, Qwen35Shape, write_shaped_qwen35, write_shaped_qwen35_file};
pub use tiny::{TinyLlamaConfig, tiny_llama, tiny_llama_writer, write_tiny_llama};
pub use tiny_gemma3::{TinyGemma3Config, tiny_gemma3, tiny_gemma3_writer, write_tiny_gemma3};
pub use tiny_lfm2::{TinyLfm2Config, tiny_lfm2, tiny_lfm2_writer, write_tiny_lfm2};
pub use tiny_qwen35::{TinyQwen35Config, tiny_qwen35, tiny_qwen35_writer, write_tiny_qwen35};
pub use types::{BlockLayout, GgmlType};
pub use value::{Array, MixedArray, Value, ValueType};
pub use writer::{GgufWriter, WRITE_VERSION, WriteError};
