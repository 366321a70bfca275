//! The reader's error: what was wrong, and where (byte offset, key or tensor name).

use crate::quant::QuantError;
use crate::types::GgmlType;

/// Why a GGUF file could not be opened, parsed or queried.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GgufError {
    /// The file could not be opened or read by the loader: missing or unreadable, not a regular
    /// file, over [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES) or the snapshot's memory budget, or
    /// changed while it was copied (a short read, growth, a write). Its
    /// [`infile::ReadError::is_invalid_input`] says whether the file is at fault.
    #[error(transparent)]
    Read(#[from] infile::ReadError),
    /// The first four bytes are not `GGUF`.
    #[error("bad magic {found:02x?} at byte offset 0 (expected \"GGUF\")")]
    BadMagic {
        /// The bytes found.
        found: [u8; 4],
    },
    /// A version other than 2 or 3.
    #[error("GGUF version {version} at byte offset 4 is not supported (2 and 3 are)")]
    UnsupportedVersion {
        /// The version found.
        version: u32,
    },
    /// The file ends inside an item.
    #[error("truncated {what} at byte offset {offset}: needs {needed} bytes, {available} left")]
    Truncated {
        /// The item being read.
        what: String,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the file.
        available: usize,
    },
    /// An item count that the remaining bytes cannot hold (refused before allocating).
    #[error("{what} at byte offset {offset} counts {count} items; the remaining bytes hold at most {limit}")]
    CountTooLarge {
        /// What is counted.
        what: String,
        /// Where the count is.
        offset: usize,
        /// The count found.
        count: u64,
        /// The most items the remaining bytes could hold.
        limit: u64,
    },
    /// A string that is not UTF-8.
    #[error("{what} at byte offset {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// The string's role (key, value of a key, tensor name).
        what: String,
        /// Where the string's bytes start.
        offset: usize,
    },
    /// A metadata key that appears twice.
    #[error("duplicate metadata key {key:?} at byte offset {offset}")]
    DuplicateKey {
        /// The key.
        key: String,
        /// Where its second occurrence starts.
        offset: usize,
    },
    /// A value type id GGUF does not define.
    #[error("metadata key {key:?}: unknown value type {raw} at byte offset {offset}")]
    UnknownValueType {
        /// The key.
        key: String,
        /// The raw id.
        raw: u32,
        /// Where the id is.
        offset: usize,
    },
    /// Arrays nested deeper than [`MAX_ARRAY_DEPTH`](crate::MAX_ARRAY_DEPTH).
    #[error("metadata key {key:?}: arrays nested deeper than {limit} at byte offset {offset}")]
    ArrayTooDeep {
        /// The key.
        key: String,
        /// Where the too-deep array starts.
        offset: usize,
        /// The nesting limit.
        limit: usize,
    },
    /// A bool byte other than 0 or 1.
    #[error("metadata key {key:?}: bool byte {raw} at byte offset {offset} is neither 0 nor 1")]
    InvalidBool {
        /// The key.
        key: String,
        /// The byte found.
        raw: u8,
        /// Where it is.
        offset: usize,
    },
    /// A tensor name that appears twice.
    #[error("duplicate tensor name {name:?} at byte offset {offset}")]
    DuplicateTensor {
        /// The name.
        name: String,
        /// Where the second tensor info starts.
        offset: usize,
    },
    /// A tensor name longer than ggml's `GGML_MAX_NAME - 1`.
    #[error("tensor name at byte offset {offset} is {len} bytes long, more than the limit of {limit}")]
    TensorNameTooLong {
        /// Where the name starts.
        offset: usize,
        /// Its length.
        len: u64,
        /// The limit.
        limit: usize,
    },
    /// A dimension count of 0 or above [`MAX_DIMS`](crate::MAX_DIMS).
    #[error("tensor {tensor:?} at byte offset {offset} has {n_dims} dimensions (1 to {limit} allowed)")]
    DimCount {
        /// The tensor.
        tensor: String,
        /// Where its dimension count is.
        offset: usize,
        /// The count found.
        n_dims: u32,
        /// The limit.
        limit: usize,
    },
    /// A dimension of size 0.
    #[error("tensor {tensor:?} at byte offset {offset}: dimension {axis} is 0")]
    ZeroDim {
        /// The tensor.
        tensor: String,
        /// Where the dimension is.
        offset: usize,
        /// Which dimension.
        axis: usize,
    },
    /// Dimensions whose product (or byte size) does not fit `i64`/`usize`.
    #[error("tensor {tensor:?} at byte offset {offset}: element count or byte size overflows")]
    SizeOverflow {
        /// The tensor.
        tensor: String,
        /// Where its info starts.
        offset: usize,
    },
    /// A row length that is not a whole number of the type's blocks.
    #[error("tensor {tensor:?}: row length {row} is not a multiple of {ty}'s block of {block}")]
    RowNotBlockMultiple {
        /// The tensor.
        tensor: String,
        /// Its type.
        ty: GgmlType,
        /// Its first dimension.
        row: u64,
        /// The type's block size.
        block: u64,
    },
    /// `general.alignment` is 0 or not a power of two.
    #[error("general.alignment {found} is not a power of two")]
    BadAlignment {
        /// The value found.
        found: u32,
    },
    /// A tensor data offset that is not a multiple of the alignment.
    #[error("tensor {tensor:?}: data offset {offset} is not a multiple of the alignment {alignment}")]
    MisalignedTensor {
        /// The tensor.
        tensor: String,
        /// Its offset within the data section.
        offset: u64,
        /// The alignment.
        alignment: u32,
    },
    /// Tensor data that ends beyond the file.
    #[error(
        "tensor {tensor:?}: data offset {offset} and size {len} put its bytes at {start}..{end}, beyond the file's \
         {file_len} bytes"
    )]
    TensorOutOfBounds {
        /// The tensor.
        tensor: String,
        /// Its offset within the data section, as the file says.
        offset: u64,
        /// Its size in bytes.
        len: u64,
        /// Absolute start of its data in the file (exact: data section start + offset).
        start: u128,
        /// Absolute end of its data (exact: start + size).
        end: u128,
        /// The file's length.
        file_len: usize,
    },
    /// Two tensors whose data overlap.
    #[error("tensors {first:?} and {second:?} overlap: {second:?} starts at data offset {offset}, inside {first:?}")]
    TensorOverlap {
        /// The tensor that starts first.
        first: String,
        /// The tensor starting inside it.
        second: String,
        /// The second tensor's data offset.
        offset: u64,
    },
    /// A metadata key that is absent.
    #[error("metadata key {key:?} is missing")]
    MissingKey {
        /// The key.
        key: String,
    },
    /// A metadata key whose value has another type.
    #[error("metadata key {key:?} has type {found}, expected {expected}")]
    WrongType {
        /// The key.
        key: String,
        /// The type asked for.
        expected: &'static str,
        /// The type found.
        found: String,
    },
    /// No tensor of that name.
    #[error("no tensor named {name:?}")]
    NoSuchTensor {
        /// The name.
        name: String,
    },
    /// A tensor whose type this crate does not give data access to.
    #[error("unsupported type {ty} for tensor {tensor:?}")]
    UnsupportedType {
        /// The tensor.
        tensor: String,
        /// Its type.
        ty: GgmlType,
    },
    /// A weight that is NaN or infinite: an element of an F32/F16/BF16 tensor, or an f16 scale
    /// or minimum of a quantised block.
    #[error(
        "tensor {tensor:?} ({ty}): {field} of {unit} {index} at byte offset {offset} is {value}; weights must be finite"
    )]
    NonFinite {
        /// The tensor.
        tensor: String,
        /// Its type.
        ty: GgmlType,
        /// `element` (F32, F16, BF16) or `block` (quantised types).
        unit: &'static str,
        /// The element's or block's index within the tensor.
        index: u64,
        /// What holds the value: `value` for an element; `scale d`, `minimum m` (Q4_1, Q5_1) or
        /// `minimum scale dmin` (Q2_K, Q4_K, Q5_K) for a block.
        field: &'static str,
        /// The value (NaN or ±inf).
        value: f32,
        /// Absolute byte offset of the value in the file.
        offset: u64,
    },
    /// Dequantizing a tensor's row failed.
    #[error("tensor {tensor:?}: {source}")]
    Quant {
        /// The tensor.
        tensor: String,
        /// The decoder's error.
        source: QuantError,
    },
}
