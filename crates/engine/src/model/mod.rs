//! The model adapter: a llama-family GGUF model as a [`crate::workload::Workload`] whose decode
//! step is kernel launches through the funnel.

pub mod llama;
pub mod params;

pub use llama::{KvCacheLayout, Llama, LoadError, PREFILL_CHUNK, rope_table};
pub use params::{LlamaParams, ParamsError};
pub mod session;

pub use session::{GenerateOptions, Generation, Output, Session, SessionError, tokenizer_from_gguf};
