//! The table the C cross-check (`tests/c_layout.rs`) compiles against the installed headers.
//!
//! Each entry pairs a C expression (`sizeof(hipDeviceProp_t)`, `offsetof(hipDeviceProp_t, gcnArchName)`,
//! `hipErrorInvalidDevice`) with the value the Rust side has for it. The entries are produced by the
//! same macros that declare the enums and assert the struct layouts, so a transcribed item is
//! checked by construction.

pub use dynload::LayoutEntry;

/// Headers the C side includes, in order.
pub const LAYOUT_HEADERS: &[&str] = &["hip/hip_runtime_api.h", "hip/hip_version.h"];

/// Preprocessor definitions the C side needs (`-D`): `hip_runtime_api.h` refuses to compile
/// unless exactly one platform is chosen.
pub const LAYOUT_DEFINES: &[&str] = &["__HIP_PLATFORM_AMD__"];

/// Every transcribed type, field offset and constant of the crate.
#[must_use]
pub fn layout_table() -> Vec<LayoutEntry> {
    let mut out = Vec::new();
    crate::consts::enum_layout_entries(&mut out);
    crate::types::struct_layout_entries(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // A struct declared in `types.rs` without a `struct_layout!` would be neither asserted nor
    // cross-checked. `DeviceArch` is checked bit by bit; the `opaque!` structs have no layout of their own.
    dynload::layout_self_checks!(include_str!("types.rs"), layout_table());
}
