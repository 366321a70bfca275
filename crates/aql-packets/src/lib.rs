//! HSA AQL packets and AMD vendor packets.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
