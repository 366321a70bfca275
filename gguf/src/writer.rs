//! [`GgufWriter`]: metadata and tensors in, a GGUF v3 file out.

use std::collections::HashSet;
use std::io::Write;

use crate::parse::{
    ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAGIC, MAX_ARRAY_DEPTH, MAX_DIMS, MAX_TENSOR_NAME_BYTES, align_up,
};
use crate::types::GgmlType;
use crate::value::Value;

/// The version this writer emits.
pub const WRITE_VERSION: u32 = 3;

/// Why a file could not be assembled or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A key added twice.
    #[error("duplicate metadata key {key:?}")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// `general.alignment` that is not a power-of-two `u32`.
    #[error("general.alignment must be a power-of-two u32, got {found}")]
    BadAlignment {
        /// The value given, described.
        found: String,
    },
    /// Arrays nested deeper than the reader accepts.
    #[error("metadata key {key:?}: arrays nested deeper than {limit}")]
    ArrayTooDeep {
        /// The key.
        key: String,
        /// The limit.
        limit: usize,
    },
    /// A tensor name added twice.
    #[error("duplicate tensor name {name:?}")]
    DuplicateTensor {
        /// The name.
        name: String,
    },
    /// A tensor name longer than the reader accepts.
    #[error("tensor name {name:?} is {len} bytes long, more than the limit of {limit}")]
    TensorNameTooLong {
        /// The name.
        name: String,
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A type [`GgmlType::is_supported`] refuses.
    #[error("tensor {name:?}: unsupported type {ty}")]
    UnsupportedType {
        /// The tensor.
        name: String,
        /// Its type.
        ty: GgmlType,
    },
    /// Dimensions the reader would refuse: none, more than four, a zero, an overflowing product,
    /// or a row that is not whole blocks.
    #[error("tensor {name:?}: invalid dimensions {dims:?} for type {ty}")]
    BadDims {
        /// The tensor.
        name: String,
        /// The dimensions.
        dims: Vec<u64>,
        /// Its type.
        ty: GgmlType,
    },
    /// Data whose length does not match the dimensions and type.
    #[error("tensor {name:?}: {found} data bytes given, dimensions and type need {expected}")]
    DataLength {
        /// The tensor.
        name: String,
        /// Bytes needed.
        expected: u64,
        /// Bytes given.
        found: usize,
    },
    /// The sink failed.
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
}

#[derive(Debug)]
struct PendingTensor {
    name: String,
    dims: Vec<u64>,
    ty: GgmlType,
    data: Vec<u8>,
}

/// Collects metadata and tensors, then writes a GGUF v3 file: header, metadata in insertion
/// order, tensor infos, padding to the alignment, tensor data (each aligned) in insertion order.
#[derive(Debug, Default)]
pub struct GgufWriter {
    metadata: Vec<(String, Value)>,
    keys: HashSet<String>,
    tensors: Vec<PendingTensor>,
    names: HashSet<String>,
    alignment: Option<u32>,
}

impl GgufWriter {
    /// An empty file (alignment 32 unless `general.alignment` is added).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The alignment the file will use.
    #[must_use]
    pub fn alignment(&self) -> u32 {
        self.alignment.unwrap_or(DEFAULT_ALIGNMENT)
    }

    /// Adds a key/value pair. `general.alignment` must be a power-of-two `u32`; it sets the
    /// alignment.
    ///
    /// # Errors
    /// [`WriteError::DuplicateKey`], [`WriteError::BadAlignment`], [`WriteError::ArrayTooDeep`].
    pub fn add(&mut self, key: impl Into<String>, value: Value) -> Result<&mut Self, WriteError> {
        let key = key.into();
        if self.keys.contains(&key) {
            return Err(WriteError::DuplicateKey { key });
        }
        self.check_value(&key, &value)?;
        self.keys.insert(key.clone());
        self.metadata.push((key, value));
        Ok(self)
    }

    /// Checks a value about to be stored under `key` (array depth; the alignment key a power of
    /// two, which then becomes the file's alignment).
    fn check_value(&mut self, key: &str, value: &Value) -> Result<(), WriteError> {
        if array_depth(value) > MAX_ARRAY_DEPTH {
            return Err(WriteError::ArrayTooDeep { key: key.to_owned(), limit: MAX_ARRAY_DEPTH });
        }
        if key == ALIGNMENT_KEY {
            match value {
                Value::U32(a) if a.is_power_of_two() => self.alignment = Some(*a),
                other => return Err(WriteError::BadAlignment { found: format!("{other:?}") }),
            }
        }
        Ok(())
    }

    /// Sets `key` to `value`: in place when the key is already there (its position in the file
    /// kept), added at the end otherwise. The same rules as [`GgufWriter::add`] apply to the value.
    ///
    /// # Errors
    /// [`WriteError::BadAlignment`], [`WriteError::ArrayTooDeep`].
    pub fn set(&mut self, key: impl Into<String>, value: Value) -> Result<&mut Self, WriteError> {
        let key = key.into();
        let Some(i) = self.metadata.iter().position(|(k, _)| *k == key) else {
            return self.add(key, value);
        };
        self.check_value(&key, &value)?;
        if let Some(slot) = self.metadata.get_mut(i) {
            slot.1 = value;
        }
        Ok(self)
    }

    /// Removes `key`; its value, or `None` when it was not there.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.metadata.iter().position(|(k, _)| k == key)?;
        self.keys.remove(key);
        if key == ALIGNMENT_KEY {
            self.alignment = None;
        }
        Some(self.metadata.remove(i).1)
    }

    /// The value of `key`, if added.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Removes the tensor `name`; whether it was there.
    pub fn remove_tensor(&mut self, name: &str) -> bool {
        let Some(i) = self.tensors.iter().position(|t| t.name == name) else {
            return false;
        };
        self.names.remove(name);
        self.tensors.remove(i);
        true
    }

    /// The encoded bytes of tensor `name`, to alter in place (their length is fixed by the
    /// dimensions and type).
    pub fn tensor_data_mut(&mut self, name: &str) -> Option<&mut [u8]> {
        self.tensors.iter_mut().find(|t| t.name == name).map(|t| t.data.as_mut_slice())
    }

    /// Adds a tensor of a supported type ([`GgmlType::is_supported`]) from its encoded bytes;
    /// `dims` row length first (ggml's `ne`).
    ///
    /// # Errors
    /// [`WriteError`] naming the tensor when its name, type, dimensions or data length would
    /// make a file the reader refuses.
    pub fn add_tensor(
        &mut self,
        name: impl Into<String>,
        dims: &[u64],
        ty: GgmlType,
        data: Vec<u8>,
    ) -> Result<&mut Self, WriteError> {
        let name = name.into();
        if self.names.contains(&name) {
            return Err(WriteError::DuplicateTensor { name });
        }
        if name.len() > MAX_TENSOR_NAME_BYTES {
            let len = name.len();
            return Err(WriteError::TensorNameTooLong { name, len, limit: MAX_TENSOR_NAME_BYTES });
        }
        if !ty.is_supported() {
            return Err(WriteError::UnsupportedType { name, ty });
        }
        let expected = expected_len(dims, ty).ok_or_else(|| WriteError::BadDims {
            name: name.clone(),
            dims: dims.to_vec(),
            ty,
        })?;
        if u64::try_from(data.len()).ok() != Some(expected) {
            return Err(WriteError::DataLength { name, expected, found: data.len() });
        }
        self.names.insert(name.clone());
        self.tensors.push(PendingTensor { name, dims: dims.to_vec(), ty, data });
        Ok(self)
    }

    /// Writes the file to `sink`.
    ///
    /// # Errors
    /// [`WriteError::Io`] when the sink fails.
    pub fn write_to(&self, mut sink: impl Write) -> Result<(), WriteError> {
        let (head, offsets) = self.head();
        sink.write_all(&head)?;
        let mut pos = head.len();
        for (tensor, offset) in self.tensors.iter().zip(offsets) {
            let pad = (head.len() + offset).saturating_sub(pos);
            sink.write_all(&vec![0u8; pad])?;
            sink.write_all(&tensor.data)?;
            pos = head.len() + offset + tensor.data.len();
        }
        Ok(())
    }

    /// The file as bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let (mut out, offsets) = self.head();
        let data_start = out.len();
        for (tensor, offset) in self.tensors.iter().zip(offsets) {
            out.resize(data_start + offset, 0);
            out.extend_from_slice(&tensor.data);
        }
        out
    }

    /// Header, metadata, tensor infos and padding up to the data section; and each tensor's
    /// offset within the data section.
    fn head(&self) -> (Vec<u8>, Vec<usize>) {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&WRITE_VERSION.to_le_bytes());
        out.extend_from_slice(&len_u64(self.tensors.len()).to_le_bytes());
        out.extend_from_slice(&len_u64(self.metadata.len()).to_le_bytes());
        for (key, value) in &self.metadata {
            put_str(&mut out, key);
            out.extend_from_slice(&value.value_type().id().to_le_bytes());
            put_value(&mut out, value);
        }
        let alignment = self.alignment();
        let mut offsets = Vec::with_capacity(self.tensors.len());
        let mut offset = 0usize;
        for tensor in &self.tensors {
            offset = align_up(offset, alignment).unwrap_or(offset);
            put_str(&mut out, &tensor.name);
            out.extend_from_slice(&len_u32(tensor.dims.len()).to_le_bytes());
            for dim in &tensor.dims {
                out.extend_from_slice(&dim.to_le_bytes());
            }
            out.extend_from_slice(&tensor.ty.id().to_le_bytes());
            out.extend_from_slice(&len_u64(offset).to_le_bytes());
            offsets.push(offset);
            offset += tensor.data.len();
        }
        let data_start = align_up(out.len(), alignment).unwrap_or(out.len());
        out.resize(data_start, 0);
        (out, offsets)
    }
}

/// Bytes of a tensor with these dimensions and type, `None` if the reader would refuse them.
fn expected_len(dims: &[u64], ty: GgmlType) -> Option<u64> {
    if dims.is_empty() || dims.len() > MAX_DIMS || dims.contains(&0) {
        return None;
    }
    let elems = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
    i64::try_from(elems).ok()?;
    let layout = ty.layout()?;
    if !dims[0].is_multiple_of(layout.block_elems) {
        return None;
    }
    ty.bytes_for(elems).filter(|&n| usize::try_from(n).is_ok())
}

fn array_depth(value: &Value) -> usize {
    match value {
        Value::Array(array) => 1 + array.items().iter().map(array_depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn len_u64(n: usize) -> u64 {
    // CAST: usize is at most 64 bits on every target Rust supports.
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn len_u32(n: usize) -> u32 {
    // Dimension counts are at most MAX_DIMS, checked in `add_tensor`.
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&len_u64(s.len()).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I8(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => put_str(out, s),
        Value::Array(array) => {
            out.extend_from_slice(&array.elem_type().id().to_le_bytes());
            out.extend_from_slice(&len_u64(array.len()).to_le_bytes());
            for item in array.items() {
                put_value(out, item);
            }
        }
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}
