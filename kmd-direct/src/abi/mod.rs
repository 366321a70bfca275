//! The kernel ABI, transcribed from the installed libdrm headers (`drm.h`, `amdgpu_drm.h`, Debian
//! package `libdrm-dev` 2.4.114) and the Linux `asm-generic/ioctl.h` request encoding.
//!
//! Every struct is `#[repr(C)]` with compile-time asserts (`static_assertions`) of its size,
//! alignment and every field offset; every struct, ioctl request and constant also lands in `layout_table()`, which the
//! `layout` integration test compiles against the C headers. Names are the C names in Rust casing
//! (`struct drm_amdgpu_cs_chunk` → [`DrmAmdgpuCsChunk`]); a union stays a `union`, with its `in`
//! member spelled `r#in`.

/// Defines one `#[repr(C)]` struct or union with compile-time asserts of size, alignment and each
/// field offset, and its rows in the layout table.
///
/// Field syntax: `pub name @ offset: Type`, or `pub name ("c_member") @ offset: Type` when the
/// C member has another name (a keyword, an anonymous union).
macro_rules! abi_type {
    // A type with raw pointers (`struct drm_version`): not every bit pattern is a valid value, so
    // no zerocopy traits.
    (
        $(#[$meta:meta])*
        @raw_pointers pub $kind:ident $name:ident = $cty:literal, size = $size:literal, align = $align:literal {
            $( $(#[$fmeta:meta])* pub $f:ident $(($cf:literal))? @ $off:literal : $fty:ty ),* $(,)?
        }
    ) => {
        $crate::abi::abi_type!(@define [] $(#[$meta])* pub $kind $name = $cty, size = $size, align = $align {
            $( $(#[$fmeta])* pub $f $(($cf))? @ $off : $fty ),*
        });
    };
    // Integers, arrays of them, and structs and unions of such: zerocopy derives `FromBytes` (every
    // bit pattern is a valid value, checked field by field), what a `sys::PlainData` argument the
    // kernel writes back stands on.
    (
        $(#[$meta:meta])*
        pub $kind:ident $name:ident = $cty:literal, size = $size:literal, align = $align:literal {
            $( $(#[$fmeta:meta])* pub $f:ident $(($cf:literal))? @ $off:literal : $fty:ty ),* $(,)?
        }
    ) => {
        $crate::abi::abi_type!(
            @define [zerocopy::FromBytes]
            $(#[$meta])* pub $kind $name = $cty, size = $size, align = $align {
                $( $(#[$fmeta])* pub $f $(($cf))? @ $off : $fty ),*
            }
        );
    };
    (
        @define [$($derive:path),*]
        $(#[$meta:meta])*
        pub $kind:ident $name:ident = $cty:literal, size = $size:literal, align = $align:literal {
            $( $(#[$fmeta:meta])* pub $f:ident $(($cf:literal))? @ $off:literal : $fty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy $(, $derive)*)]
        pub $kind $name {
            $( $(#[$fmeta])* pub $f: $fty, )*
        }

        // Every ABI type has `Debug` (derived, or `union_debug!`): checked here because the modules
        // allow `missing_debug_implementations` for zerocopy's field marker types.
        static_assertions::assert_impl_all!($name: core::fmt::Debug);
        static_assertions::const_assert_eq!(core::mem::size_of::<$name>(), $size);
        static_assertions::const_assert_eq!(core::mem::align_of::<$name>(), $align);
        $( static_assertions::const_assert_eq!(core::mem::offset_of!($name, $f), $off); )*

        impl $crate::abi::AbiType for $name {
            fn layout_rows(rows: &mut Vec<$crate::abi::LayoutRow>) {
                let c = $cty;
                rows.push($crate::abi::row(format!("sizeof({c})"), core::mem::size_of::<$name>()));
                rows.push($crate::abi::row(format!("_Alignof({c})"), core::mem::align_of::<$name>()));
                $(
                    let member = $crate::abi::c_member!($f $(, $cf)?);
                    rows.push($crate::abi::row(format!("offsetof({c}, {member})"), core::mem::offset_of!($name, $f)));
                    rows.push($crate::abi::row(
                        format!("sizeof((({c} *)0)->{member})"),
                        core::mem::size_of::<$fty>(),
                    ));
                )*
            }
        }
    };
}

/// The C member name of a field: the explicit one, else the Rust field name.
macro_rules! c_member {
    ($f:ident) => {
        stringify!($f)
    };
    ($f:ident, $cf:literal) => {
        $cf
    };
}

/// Defines `pub const`s of one type from a header, and a function adding their rows to the
/// layout table.
macro_rules! abi_consts {
    (fn $rows:ident; $header:literal, $ty:ty; $( $(#[$m:meta])* $name:ident = $v:expr; )*) => {
        $(
            $(#[$m])*
            #[doc = concat!("`", stringify!($name), "` from `", $header, "`.")]
            pub const $name: $ty = $v;
        )*

        pub(crate) fn $rows(rows: &mut Vec<$crate::abi::LayoutRow>) {
            $( rows.push((stringify!($name).to_owned(), i128::from($name))); )*
        }
    };
}

pub(crate) use {abi_type, c_member};

// zerocopy's `FromBytes` derive emits an empty marker type per field, with the field's
// visibility and no `Debug`; `abi_type!` asserts `Debug` for the ABI types themselves instead.
#[allow(missing_debug_implementations)]
pub mod amdgpu;
pub mod consts;
#[allow(missing_debug_implementations)]
pub mod drm;
pub mod ioctl;

pub use amdgpu::*;
pub use consts::*;
pub use drm::*;
pub use ioctl::*;

/// One row of the layout table: a C expression, and the value the Rust transcription has for it.
pub type LayoutRow = (String, i128);

/// A transcribed type that knows its own layout rows.
pub(crate) trait AbiType {
    /// Appends `sizeof`, `_Alignof` and, per field, `offsetof` and the member's `sizeof`.
    fn layout_rows(rows: &mut Vec<LayoutRow>);
}

/// A layout row from a size or offset.
pub(crate) fn row(c_expr: String, value: usize) -> LayoutRow {
    // PANIC: a `usize` always fits an `i128` on the 64-bit targets this crate builds for.
    (c_expr, i128::try_from(value).expect("usize fits i128"))
}

/// Every transcribed struct, union, ioctl request and constant as (C expression, Rust value).
///
/// The `layout` test prints each C expression from a program compiled against the installed
/// headers and compares; adding a type or constant here is what puts it under that check.
#[doc(hidden)]
#[must_use]
pub fn layout_table() -> Vec<LayoutRow> {
    let mut rows = Vec::new();
    drm::layout_rows(&mut rows);
    amdgpu::layout_rows(&mut rows);
    consts::layout_rows(&mut rows);
    ioctl::layout_rows(&mut rows);
    rows
}
