//! Run-time loading of C libraries with a checked symbol table and header-checked layouts.
//!
//! The pieces a `-sys` crate needs to bind a C runtime without linking it at build time:
//!
//! - **Loading**: [`candidates`] picks the library names or paths to try (a user override from the
//!   environment, or the crate's defaults), [`open_first`] `dlopen`s the first that opens, with
//!   `RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE`, and reports every failed attempt in
//!   [`LoadError::NotFound`]; [`object_path_of`] asks `dladdr` which file was actually mapped.
//! - **[`fn_table!`]**: a struct of `unsafe extern "C"` function pointers resolved from the
//!   library all at once; a missing symbol yields the list of every missing one (for
//!   [`LoadError::MissingSymbols`]), never a null pointer. The table implements [`FnTable`].
//! - **[`Runtime`]**: the opened library and its resolved [`FnTable`], kept together so the
//!   pointers never outlive the library; it also records the candidate that opened and the file
//!   `dladdr` says was mapped.
//! - **[`c_enums!`]**: C enums as transparent newtypes with one constant per enumerator, so a
//!   value the bindings do not know stays representable.
//! - **[`struct_layout!`]**: compile-time asserts of a `#[repr(C)]` struct's size, alignment and
//!   every field offset.
//!
//! [`c_enums!`] and [`struct_layout!`] also emit [`LayoutEntry`] rows (a C expression and the
//! Rust value it must equal); a crate's integration test hands them to the hidden `c_check`
//! module, which compiles a C program against the installed headers and compares.
//!
//! # Safety
//!
//! The `unsafe` here is `dlopen` (which runs the library's initialisers), `dladdr`, and the symbol
//! lookups of [`fn_table!`], whose generated [`FnTable::resolve`] is an `unsafe fn`: its caller
//! vouches that the library matches the transcribed prototypes. [`Runtime::load_from`] passes that
//! obligation on to its own caller, the `-sys` crate that knows which library its candidates name.

mod c_enum;
mod fn_table;
mod layout;
mod loader;
mod runtime;
mod struct_layout;

#[doc(hidden)]
pub mod c_check;

// `struct_layout!` expands to these asserts in the caller's crate.
#[doc(hidden)]
pub use static_assertions as __static_assertions;

pub use fn_table::FnTable;
pub use layout::LayoutEntry;
pub use libloading::Library;
pub use loader::{LoadError, OpenAttempt, candidates, object_path_of, open_first};
pub use runtime::Runtime;
