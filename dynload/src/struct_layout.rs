//! `struct_layout!`: compile-time layout asserts of a `#[repr(C)]` struct that also feed the C
//! cross-check.
//!
//! One invocation per struct names its C type, its size and alignment, and every field with its
//! C name and offset. It expands to:
//! - compile-time asserts (`static_assertions`) of size, alignment and each offset (the numbers are the header's, read with
//!   `offsetof` on x86-64);
//! - a destructuring pattern without `..`, so a field missing from the list fails to compile;
//! - entries for the layout table, so the same numbers are compared with the C compiler's.

/// Asserts a struct's layout at compile time and pushes its [`LayoutEntry`](crate::LayoutEntry)
/// rows (`sizeof`, `_Alignof` and every `offsetof`) onto `$out`, a `Vec<LayoutEntry>`.
///
/// The field list must name every field: a missing one fails to compile.
///
/// ```
/// #[repr(C)]
/// struct Pair {
///     a: u32,
///     b: u64,
/// }
///
/// let mut out = Vec::new();
/// dynload::struct_layout!(out; Pair = "pair_t", size 16, align 8 { a: "a" = 0, b: "b" = 8, });
/// assert_eq!(out[2], dynload::LayoutEntry::size("offsetof(pair_t, a)", 0));
/// ```
#[macro_export]
macro_rules! struct_layout {
    ($out:ident; $name:ident = $c_type:literal, size $size:literal, align $align:literal {
        $($field:ident: $c_field:literal = $offset:literal,)*
    }) => {{
        $crate::__static_assertions::assert_eq_size!($name, [u8; $size]);
        $crate::__static_assertions::const_assert_eq!(core::mem::align_of::<$name>(), $align);
        $($crate::__static_assertions::const_assert_eq!(core::mem::offset_of!($name, $field), $offset);)*
        #[allow(dead_code, reason = "only compiled, to prove every field is listed")]
        fn every_field_is_listed(value: &$name) {
            let $name { $($field: _),* } = value;
        }
        $out.push($crate::LayoutEntry::size(
            concat!("sizeof(", $c_type, ")"),
            core::mem::size_of::<$name>(),
        ));
        $out.push($crate::LayoutEntry::size(
            concat!("_Alignof(", $c_type, ")"),
            core::mem::align_of::<$name>(),
        ));
        $(
            $out.push($crate::LayoutEntry::size(
                concat!("offsetof(", $c_type, ", ", $c_field, ")"),
                core::mem::offset_of!($name, $field),
            ));
        )*
    }};
}
