//! The rows of the C layout cross-check.

/// One C expression and the Rust value it must equal.
///
/// [`c_enums!`](crate::c_enums) and [`struct_layout!`](crate::struct_layout) produce these, so a
/// transcribed item is checked by construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutEntry {
    /// A C integer constant expression over the declarations of the bindings' headers.
    pub c_expr: &'static str,
    /// The Rust side's value.
    pub rust: i128,
}

impl LayoutEntry {
    /// An entry for a size, alignment or offset.
    #[must_use]
    pub fn size(c_expr: &'static str, bytes: usize) -> Self {
        // CAST: usize is at most 64 bits wide on every target, so it fits i128.
        let rust = bytes as i128;
        Self { c_expr, rust }
    }

    /// An entry for a constant's value.
    #[must_use]
    pub fn value(c_expr: &'static str, rust: i128) -> Self {
        Self { c_expr, rust }
    }
}
