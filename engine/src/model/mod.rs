//! The model adapter: a llama-family GGUF model as a [`crate::workload::Workload`] whose decode
//! step is kernel launches through the funnel.

pub mod context;
pub mod fixed_prompt;
pub mod gemma3;
pub mod language;
pub mod lfm2;
pub mod llama;
pub mod open;
mod ops;
pub mod params;
mod prefix;
pub mod qwen35;
mod weights;

pub use context::{ContextError, check_context, default_context};
pub use fixed_prompt::FixedPrompt;
pub use gemma3::{Gemma3, Gemma3Params};
pub use language::{ARCHITECTURES, LanguageModel};
pub use lfm2::{Lfm2, Lfm2Params};
pub use llama::{KvCacheLayout, Llama, LoadError, PREFILL_CHUNK, rope_table, rope_table_of};
pub use open::{ModelFile, OpenError, open_model, snapshot_digest};
pub use params::{LlamaParams, ParamsError};
pub use qwen35::{Qwen35, Qwen35Params};
pub mod session;

pub use session::{GenerateOptions, Generation, Output, Session, SessionError, tokenizer_from_gguf};
