//! [`Gguf`]: a parsed file over its bytes (a sealed snapshot of the file, or bytes in memory),
//! typed metadata access and tensor views.

use core::fmt;
use std::path::Path;

use infile::{Opened, Snapshot, SnapshotOptions};

use crate::error::GgufError;
use crate::parse::{HEADER_BYTES, Layout, TensorInfo, check_header, parse_layout};
use crate::quant::{self, QuantError};
use crate::types::GgmlType;
use crate::value::{Value, ValueType};

/// The bytes a [`Gguf`] was parsed from.
enum Storage {
    Snapshot(Snapshot),
    Owned(Vec<u8>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Self::Snapshot(snapshot) => snapshot.bytes(),
            Self::Owned(bytes) => bytes,
        }
    }
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Snapshot(snapshot) => write!(f, "{snapshot:?}"),
            Self::Owned(bytes) => write!(f, "Owned({} bytes)", bytes.len()),
        }
    }
}

/// A validated GGUF file: header, metadata, tensor infos and the bytes they point into.
///
/// Everything [`Gguf::parse`] accepts has been checked: strings are UTF-8, keys and tensor
/// names unique, dimensions non-zero with a representable product and whole blocks per row,
/// tensor data aligned, inside the file and non-overlapping.
#[derive(Debug)]
pub struct Gguf {
    storage: Storage,
    layout: Layout,
}

impl Gguf {
    /// Opens the file at `path` through the trusted loader and parses the snapshot: see
    /// [`Gguf::load`]. The file is opened once, as a regular file of at most
    /// [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES).
    ///
    /// # Errors
    /// As [`Gguf::load`], and [`GgufError::Read`] when the path cannot be opened, is not a
    /// regular file or is over the limit.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, GgufError> {
        let opened = Opened::open(path.as_ref(), crate::LIMIT)?;
        Self::load(&opened, &SnapshotOptions::default())
    }

    /// Loads an opened file: its header is judged from its first [`HEADER_BYTES`] bytes
    /// ([`check_header`]) before anything else is read; then the file is copied into a sealed
    /// snapshot while it is hashed ([`infile::snapshot`]), and parsed from that snapshot. The file
    /// is never mapped: whatever happens to it afterwards changes nothing this value holds, and
    /// [`Gguf::sha256`] is the digest of exactly the bytes parsed.
    ///
    /// # Errors
    /// A [`GgufError`] of the header or of the parse; [`GgufError::Read`] when the file changed
    /// while it was copied (a short read, growth, a write: the file's fault), would not fit the
    /// snapshot budget, or could not be read.
    pub fn load(opened: &Opened, options: &SnapshotOptions) -> Result<Self, GgufError> {
        check_header(&opened.prefix(HEADER_BYTES)?, opened.size())?;
        let snapshot = opened.snapshot(options)?;
        let layout = parse_layout(snapshot.bytes())?;
        Ok(Self { storage: Storage::Snapshot(snapshot), layout })
    }

    /// Parses a file held in memory (the same parser as [`Gguf::open`], over `&[u8]`).
    ///
    /// # Errors
    /// A [`GgufError`] naming what is wrong and its byte offset, key or tensor.
    pub fn parse(bytes: impl Into<Vec<u8>>) -> Result<Self, GgufError> {
        let bytes = bytes.into();
        let layout = parse_layout(&bytes)?;
        Ok(Self { storage: Storage::Owned(bytes), layout })
    }

    /// The snapshot the file was parsed from; `None` for [`Gguf::parse`].
    #[must_use]
    pub fn snapshot(&self) -> Option<&Snapshot> {
        match &self.storage {
            Storage::Snapshot(snapshot) => Some(snapshot),
            Storage::Owned(_) => None,
        }
    }

    /// The SHA-256 of the bytes parsed, lowercase hex, when they came from a file
    /// ([`Gguf::open`], [`Gguf::load`]): computed as the snapshot was copied, so it is the digest
    /// of exactly [`Gguf::as_bytes`]. `None` for [`Gguf::parse`].
    #[must_use]
    pub fn sha256(&self) -> Option<String> {
        self.snapshot().map(Snapshot::sha256_hex)
    }

    /// The whole file.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    /// The format version (2 or 3).
    #[must_use]
    pub fn version(&self) -> u32 {
        self.layout.version
    }

    /// The alignment of the data section and of every tensor (`general.alignment`, default 32).
    #[must_use]
    pub fn alignment(&self) -> u32 {
        self.layout.alignment
    }

    /// Byte offset of the data section in the file.
    #[must_use]
    pub fn data_offset(&self) -> usize {
        self.layout.data_offset
    }

    /// All key/value pairs in file order.
    pub fn metadata(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.layout.metadata.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The value of `key`, if present.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        let &i = self.layout.key_index.get(key)?;
        self.layout.metadata.get(i).map(|(_, v)| v)
    }

    fn typed<'a, T>(
        &'a self,
        key: &str,
        expected: &'static str,
        pick: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Result<T, GgufError> {
        let value = self.get(key).ok_or_else(|| GgufError::MissingKey { key: key.to_owned() })?;
        pick(value).ok_or_else(|| GgufError::WrongType {
            key: key.to_owned(),
            expected,
            found: value.type_description(),
        })
    }

    fn array<'a, T>(
        &'a self,
        key: &str,
        expected: &'static str,
        elem: ValueType,
        pick: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<Vec<T>, GgufError> {
        self.typed(key, expected, |value| match value {
            Value::Array(array) if array.elem_type() == elem => array.items().iter().map(pick).collect(),
            _ => None,
        })
    }
}

macro_rules! scalar_getters {
    ($($(#[$doc:meta])* $fn:ident -> $ty:ty = $variant:ident, $name:literal;)*) => {
        impl Gguf {
            $(
                $(#[$doc])*
                ///
                /// # Errors
                /// [`GgufError::MissingKey`] or [`GgufError::WrongType`] naming the key.
                pub fn $fn(&self, key: &str) -> Result<$ty, GgufError> {
                    self.typed(key, $name, |v| match v {
                        Value::$variant(x) => Some(*x),
                        _ => None,
                    })
                }
            )*
        }
    };
}

scalar_getters! {
    /// The `u8` value of `key`.
    u8 -> u8 = U8, "u8";
    /// The `u16` value of `key`.
    u16 -> u16 = U16, "u16";
    /// The `u32` value of `key`.
    u32 -> u32 = U32, "u32";
    /// The `i32` value of `key`.
    i32 -> i32 = I32, "i32";
    /// The `u64` value of `key`.
    u64 -> u64 = U64, "u64";
    /// The `i64` value of `key`.
    i64 -> i64 = I64, "i64";
    /// The `f32` value of `key`.
    f32 -> f32 = F32, "f32";
    /// The `f64` value of `key`.
    f64 -> f64 = F64, "f64";
    /// The `bool` value of `key`.
    bool -> bool = Bool, "bool";
}

impl Gguf {
    /// The string value of `key`.
    ///
    /// # Errors
    /// [`GgufError::MissingKey`] or [`GgufError::WrongType`] naming the key.
    pub fn str(&self, key: &str) -> Result<&str, GgufError> {
        self.typed(key, "string", |v| match v {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        })
    }

    /// The array-of-string value of `key`.
    ///
    /// # Errors
    /// [`GgufError::MissingKey`] or [`GgufError::WrongType`] naming the key.
    pub fn string_array(&self, key: &str) -> Result<Vec<&str>, GgufError> {
        self.array(key, "array of string", ValueType::String, |v| match v {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        })
    }

    /// The array-of-`i32` value of `key`.
    ///
    /// # Errors
    /// [`GgufError::MissingKey`] or [`GgufError::WrongType`] naming the key.
    pub fn i32_array(&self, key: &str) -> Result<Vec<i32>, GgufError> {
        self.array(key, "array of i32", ValueType::I32, |v| match v {
            Value::I32(x) => Some(*x),
            _ => None,
        })
    }

    /// The array-of-`f32` value of `key`.
    ///
    /// # Errors
    /// [`GgufError::MissingKey`] or [`GgufError::WrongType`] naming the key.
    pub fn f32_array(&self, key: &str) -> Result<Vec<f32>, GgufError> {
        self.array(key, "array of f32", ValueType::F32, |v| match v {
            Value::F32(x) => Some(*x),
            _ => None,
        })
    }

    /// All tensor infos in file order (of any type, supported or not).
    #[must_use]
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.layout.tensors
    }

    /// The info of the tensor called `name`.
    #[must_use]
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        let &i = self.layout.tensor_index.get(name)?;
        self.layout.tensors.get(i)
    }

    /// The tensor called `name` with its data.
    ///
    /// # Errors
    /// [`GgufError::NoSuchTensor`], or [`GgufError::UnsupportedType`] for a type
    /// [`GgmlType::is_supported`] refuses.
    pub fn tensor(&self, name: &str) -> Result<TensorView<'_>, GgufError> {
        let info = self.tensor_info(name).ok_or_else(|| GgufError::NoSuchTensor { name: name.to_owned() })?;
        let unsupported = || GgufError::UnsupportedType { tensor: info.name.clone(), ty: info.ty };
        if !info.ty.is_supported() {
            return Err(unsupported());
        }
        // INVARIANT: the parser checked that these bytes lie inside the file.
        let (start, bytes) = info
            .byte_len
            .and_then(|len| {
                let start = self.layout.data_offset.checked_add(usize::try_from(info.offset).ok()?)?;
                let end = start.checked_add(usize::try_from(len).ok()?)?;
                Some((u64::try_from(start).ok()?, self.as_bytes().get(start..end)?))
            })
            .ok_or_else(unsupported)?;
        Ok(TensorView { info, bytes, start })
    }
}

/// A tensor of a supported type and its data.
#[derive(Debug, Clone, Copy)]
pub struct TensorView<'a> {
    info: &'a TensorInfo,
    bytes: &'a [u8],
    /// Absolute byte offset of `bytes` in the file.
    start: u64,
}

impl<'a> TensorView<'a> {
    /// The tensor's name.
    #[must_use]
    pub fn name(&self) -> &'a str {
        &self.info.name
    }

    /// Dimensions, row length first.
    #[must_use]
    pub fn dims(&self) -> &'a [u64] {
        &self.info.dims
    }

    /// The element type.
    #[must_use]
    pub fn ty(&self) -> GgmlType {
        self.info.ty
    }

    /// The raw data.
    #[must_use]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Absolute byte offset of the data in the file.
    #[must_use]
    pub fn file_offset(&self) -> u64 {
        self.start
    }

    /// Checks that every weight is finite, without decoding: each element of an F32, F16 or
    /// BF16 tensor, and the f16 fields of each quantised block that scale its integer levels
    /// (`d`, and the minimum `m` of Q4_1/Q5_1 or the minimum scale `dmin` of Q2_K, Q4_K and
    /// Q5_K), which are the only parts of a block that can be NaN or infinite. One pass over the
    /// bytes reading a few bits per value: for a Q4_1 model, one block per 32 weights.
    ///
    /// # Errors
    /// [`GgufError::NonFinite`] for the first non-finite value, naming the tensor, the element
    /// or block index, the field, the value and its byte offset in the file.
    pub fn check_finite(&self) -> Result<(), GgufError> {
        let Some(found) = quant::first_non_finite(self.info.ty, self.bytes) else { return Ok(()) };
        let per_block = self.info.ty.layout().map_or(1, |l| l.block_elems);
        Err(GgufError::NonFinite {
            tensor: self.info.name.clone(),
            ty: self.info.ty,
            unit: if per_block == 1 { "element" } else { "block" },
            index: u64::try_from(found.index).unwrap_or(u64::MAX),
            field: found.field,
            value: found.value,
            offset: self.start.saturating_add(u64::try_from(found.offset).unwrap_or(u64::MAX)),
        })
    }

    /// Elements per row (`dims()[0]`).
    #[must_use]
    pub fn row_len(&self) -> u64 {
        self.info.dims.first().copied().unwrap_or(0)
    }

    /// Number of rows (the product of the other dimensions).
    #[must_use]
    pub fn row_count(&self) -> u64 {
        self.info.dims.iter().skip(1).product()
    }

    /// The raw bytes of row `row`, `None` past the last row.
    #[must_use]
    pub fn row_bytes(&self, row: u64) -> Option<&'a [u8]> {
        let row_bytes = usize::try_from(self.info.ty.bytes_for(self.row_len())?).ok()?;
        let start = usize::try_from(row).ok()?.checked_mul(row_bytes)?;
        self.bytes.get(start..start.checked_add(row_bytes)?)
    }

    /// Dequantizes row `row` into `out` (which must hold [`row_len`](Self::row_len) values).
    ///
    /// # Errors
    /// [`GgufError::Quant`] when `row` is past the end or `out` has the wrong length.
    pub fn dequantize_row(&self, row: u64, out: &mut [f32]) -> Result<(), GgufError> {
        let quant = |source| GgufError::Quant { tensor: self.info.name.clone(), source };
        let bytes =
            self.row_bytes(row).ok_or_else(|| quant(QuantError::RowOutOfRange { row, rows: self.row_count() }))?;
        quant::dequantize_row(self.info.ty, bytes, out).map_err(quant)
    }

    /// The whole tensor as `f32`, rows in order.
    ///
    /// # Errors
    /// [`GgufError::Quant`] if the tensor is too large to hold in memory on this target.
    pub fn to_f32(&self) -> Result<Vec<f32>, GgufError> {
        let quant = |source| GgufError::Quant { tensor: self.info.name.clone(), source };
        let elems = usize::try_from(self.info.element_count())
            .map_err(|_| quant(QuantError::TooLarge { elements: self.info.element_count() }))?;
        let mut out = vec![0.0; elems];
        quant::dequantize_row(self.info.ty, self.bytes, &mut out).map_err(quant)?;
        Ok(out)
    }
}
