//! AMDGPU code objects, kernel descriptors, kernarg layouts and retained-replay verdicts.
//!
//! - [`read`] / [`read_any`]: an ELF64 HSA code object (v4, v5, v6), or a clang offload
//!   [`bundle`], into a [`CodeObject`]: the target from `e_flags`, the metadata note, and for each
//!   kernel its 64-byte [`KernelDescriptor`] located through the `.kd` symbol and PT_LOAD segments.
//! - [`parse_metadata`]: the `NT_AMDGPU_METADATA` MessagePack document into [`Metadata`].
//! - [`descriptor`]: the descriptor struct with RSRC1/2/3 typed per family.
//! - [`sgpr`]: the user SGPRs a descriptor enables, in ABI order.
//! - [`layout`]: a checked [`KernargLayout`] and the kernarg blob of one dispatch, hidden
//!   arguments included.
//! - [`verdict()`]: whether a kernel can be replayed from a retained PM4 body, with every reason
//!   it cannot.
//! - `inspect` (feature `inspect`): a code object as people read it, as JSON and text.
//!
//! Facts come from `reference/amd-reference.md` §6 and §7. The crate is `no_std` + `alloc` and
//! free of `unsafe`; no input makes it panic, and every loop and allocation is bounded by the
//! input's size or a documented limit ([`metadata::METADATA_DEPTH_MAX`],
//! [`layout::KERNARG_SEGMENT_MAX_BYTES`]).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use kernarg_abi::layout::{ArgValue, DispatchGeometry};
//! use pm4_encoding::Target;
//!
//! let bytes = include_bytes!("../tests/data/kernels-gfx1100.co");
//! let code_object = kernarg_abi::read_any(bytes, Some(Target::Gfx1100))?;
//! let scratch = code_object.kernel("scratch").ok_or("no kernel scratch")?;
//! let verdict = kernarg_abi::verdict(scratch, &code_object.target);
//! assert!(!verdict.supported);
//! assert_eq!(verdict.reasons[0].code(), "private_segment");
//!
//! // add(float* a, const float* b, int n): 20 bytes of kernarg.
//! let add = code_object.kernel("add").ok_or("no kernel add")?;
//! assert!(kernarg_abi::verdict(add, &code_object.target).supported);
//! let blob = add.kernarg_layout()?.build(
//!     &[ArgValue::Pointer(0x7f00_0000_0000), ArgValue::Pointer(0x7f00_0001_0000), ArgValue::I32(1024)],
//!     &DispatchGeometry::linear(1024, 64),
//! )?;
//! assert_eq!(blob.len(), 20);
//! assert_eq!(&blob[16..], &1024i32.to_le_bytes());
//! # Ok(())
//! # }
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod bundle;
mod code_object;
pub mod descriptor;
mod elf;
mod family;
#[cfg(feature = "inspect")]
pub mod inspect;
pub mod layout;
pub mod metadata;
mod msgpack;
pub mod sgpr;
pub mod target;
mod text;
pub mod verdict;

pub use code_object::{CodeObject, Kernel, NotePlace, ReadError, read, read_any};
pub use descriptor::KernelDescriptor;
pub use layout::KernargLayout;
pub use metadata::{Metadata, MetadataError, parse_metadata};
pub use sgpr::UserSgprLayout;
pub use target::{CodeObjectVersion, TargetFeature, TargetId};
pub use verdict::{Reason, Verdict, verdict};
