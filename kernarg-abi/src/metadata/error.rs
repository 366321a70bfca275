//! Why a metadata document does not parse, and where in it: [`FieldPath`] and [`MetadataError`].

use alloc::string::String;
use core::fmt;

use crate::text::{Short, cut};

/// Where in the document an error is: `amdhsa.kernels[1].args[0].size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath(pub(super) String);

impl FieldPath {
    /// The path as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    /// The path, its input-controlled key cut to a short prefix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Short(&self.0))
    }
}

/// Why the metadata MessagePack could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// The document ends inside a value.
    #[error("metadata ends early at byte {offset} ({path})")]
    Truncated {
        /// Field being read.
        path: FieldPath,
        /// Byte offset of the value.
        offset: usize,
    },
    /// A value of the wrong MessagePack type.
    #[error("{path} at byte {offset}: expected {expected}, found {found}")]
    WrongType {
        /// Field being read.
        path: FieldPath,
        /// Byte offset of the value.
        offset: usize,
        /// The type the key requires.
        expected: &'static str,
        /// The type present.
        found: &'static str,
    },
    /// An integer outside the field's range.
    #[error("{path} at byte {offset}: value {value} is outside 0..={max}")]
    OutOfRange {
        /// Field being read.
        path: FieldPath,
        /// Byte offset of the value.
        offset: usize,
        /// The value present.
        value: i128,
        /// Largest accepted value.
        max: u64,
    },
    /// A string, binary, array or map length larger than the rest of the document.
    #[error("{path} at byte {offset}: length {length} exceeds the {remaining} bytes left")]
    LengthExceedsInput {
        /// Field being read.
        path: FieldPath,
        /// Byte offset of the value.
        offset: usize,
        /// The claimed length.
        length: u32,
        /// Bytes left in the document.
        remaining: usize,
    },
    /// Arrays or maps nested deeper than [`METADATA_DEPTH_MAX`].
    #[error("{path} at byte {offset}: nesting deeper than {limit}")]
    TooDeep {
        /// Field being read.
        path: FieldPath,
        /// Byte offset of the value.
        offset: usize,
        /// [`METADATA_DEPTH_MAX`].
        limit: usize,
    },
    /// A string that is not UTF-8.
    #[error("{path} at byte {offset}: string is not UTF-8")]
    InvalidUtf8 {
        /// Field being read.
        path: FieldPath,
        /// Byte offset of the value.
        offset: usize,
    },
    /// The reserved marker byte `0xc1`.
    #[error("{path} at byte {offset}: reserved MessagePack marker 0xc1")]
    ReservedMarker {
        /// Field being read.
        path: FieldPath,
        /// Byte offset of the value.
        offset: usize,
    },
    /// A key present twice in one map.
    #[error("{path} at byte {offset}: duplicate key {:?}", cut(key))]
    DuplicateKey {
        /// The map holding the key.
        path: FieldPath,
        /// Byte offset of the second occurrence.
        offset: usize,
        /// The key.
        key: String,
    },
    /// A required root key is missing.
    #[error("required key {key} missing from the metadata root map")]
    MissingRootKey {
        /// The key.
        key: &'static str,
    },
    /// A required kernel key is missing.
    #[error("kernel {}: required key {key} missing", Short(kernel))]
    MissingKernelKey {
        /// The kernel's `.name`, or `amdhsa.kernels[i]` when the name is what is missing.
        kernel: String,
        /// The key.
        key: &'static str,
    },
    /// A required argument key is missing.
    #[error("kernel {}, argument {index}: required key {key} missing", Short(kernel))]
    MissingArgKey {
        /// The kernel's `.name`, or `amdhsa.kernels[i]`.
        kernel: String,
        /// Argument index.
        index: usize,
        /// The key.
        key: &'static str,
    },
    /// A fixed-length array (`amdhsa.version`, `.reqd_workgroup_size`) of another length.
    #[error("{path} at byte {offset}: expected {expected} elements, found {found}")]
    WrongLength {
        /// Field being read.
        path: FieldPath,
        /// Byte offset of the array.
        offset: usize,
        /// Required element count.
        expected: u32,
        /// Element count present.
        found: u32,
    },
    /// An `amdhsa.version` whose major version is not [`METADATA_VERSION_MAJOR`].
    #[error(
        "{path} at byte {offset}: version [{}, {}] has major version {}; supported: major version {supported_major}, any minor ([1, 1] is code object v4, [1, 2] v5 and v6)",
        found[0], found[1], found[0]
    )]
    UnsupportedVersion {
        /// `amdhsa.version`.
        path: FieldPath,
        /// Byte offset of the array.
        offset: usize,
        /// `[major, minor]` as found.
        found: [u32; 2],
        /// [`METADATA_VERSION_MAJOR`].
        supported_major: u32,
    },
    /// Bytes after the root map.
    #[error("{count} bytes follow the metadata map at byte {offset}")]
    TrailingBytes {
        /// Offset of the first extra byte.
        offset: usize,
        /// Number of extra bytes.
        count: usize,
    },
}
