//! The parser over `&[u8]`: header, metadata, tensor infos, data-section layout. Every count is
//! checked against the bytes left before anything is allocated; nothing here panics.

use std::collections::HashMap;

use crate::error::GgufError;
use crate::types::GgmlType;
use crate::value::{Array, Value, ValueType};

/// The file magic, `GGUF` read as bytes.
pub const MAGIC: [u8; 4] = *b"GGUF";
/// The alignment of the data section and of every tensor when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u32 = 32;
/// Most tensor dimensions (`GGML_MAX_DIMS`).
pub const MAX_DIMS: usize = 4;
/// Longest tensor name in bytes (`GGML_MAX_NAME` is 64, terminator included).
pub const MAX_TENSOR_NAME_BYTES: usize = 63;
/// Deepest nesting of arrays in a metadata value (bounds the parser's recursion).
pub const MAX_ARRAY_DEPTH: usize = 8;
/// The metadata key that sets the alignment.
pub const ALIGNMENT_KEY: &str = "general.alignment";

/// Fewest bytes of one key/value pair: key length, value type, a one-byte value.
const MIN_KV_BYTES: u64 = 8 + 4 + 1;
/// Fewest bytes of one tensor info: name length, dimension count, one dimension, type, offset.
const MIN_TENSOR_INFO_BYTES: u64 = 8 + 4 + 8 + 4 + 8;
/// Items reserved up front for a counted list; more are pushed as they actually parse.
const RESERVE_MAX: usize = 4096;

/// One tensor's entry in the tensor-info table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub(crate) name: String,
    pub(crate) dims: Vec<u64>,
    pub(crate) ty: GgmlType,
    pub(crate) offset: u64,
    pub(crate) byte_len: Option<u64>,
    pub(crate) info_offset: usize,
}

impl TensorInfo {
    /// The tensor's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Dimensions, innermost (row length) first, as ggml's `ne`.
    #[must_use]
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// The element type.
    #[must_use]
    pub fn ty(&self) -> GgmlType {
        self.ty
    }

    /// Offset of the data within the data section.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Size of the data in bytes; `None` for a type whose layout is unknown.
    #[must_use]
    pub fn byte_len(&self) -> Option<u64> {
        self.byte_len
    }

    /// Number of elements (the product of the dimensions, checked at parse time).
    #[must_use]
    pub fn element_count(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Byte offset of this tensor's info in the file.
    #[must_use]
    pub fn info_offset(&self) -> usize {
        self.info_offset
    }
}

/// Everything a parse yields besides the bytes themselves.
#[derive(Debug)]
pub(crate) struct Layout {
    pub(crate) version: u32,
    pub(crate) alignment: u32,
    pub(crate) data_offset: usize,
    pub(crate) metadata: Vec<(String, Value)>,
    pub(crate) key_index: HashMap<String, usize>,
    pub(crate) tensors: Vec<TensorInfo>,
    pub(crate) tensor_index: HashMap<String, usize>,
}

/// A bounds-checked reader over the file bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: u64, what: impl FnOnce() -> String) -> Result<&'a [u8], GgufError> {
        let truncated =
            |what: String| GgufError::Truncated { what, offset: self.pos, needed: n, available: self.remaining() };
        let Ok(len) = usize::try_from(n) else {
            return Err(truncated(what()));
        };
        match self.pos.checked_add(len).and_then(|end| self.bytes.get(self.pos..end)) {
            Some(slice) => {
                self.pos += len;
                Ok(slice)
            }
            None => Err(truncated(what())),
        }
    }

    fn array<const N: usize>(&mut self, what: impl FnOnce() -> String) -> Result<[u8; N], GgufError> {
        let slice = self.take(u64::try_from(N).unwrap_or(u64::MAX), what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    fn u32(&mut self, what: impl FnOnce() -> String) -> Result<u32, GgufError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: impl FnOnce() -> String) -> Result<u64, GgufError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A count of items at least `min_item_bytes` each: refused if the rest of the file
    /// cannot hold that many.
    fn count(&mut self, min_item_bytes: u64, what: impl Fn() -> String) -> Result<u64, GgufError> {
        let offset = self.pos;
        let count = self.u64(&what)?;
        let limit = u64::try_from(self.remaining()).unwrap_or(u64::MAX) / min_item_bytes;
        if count > limit {
            return Err(GgufError::CountTooLarge { what: what(), offset, count, limit });
        }
        Ok(count)
    }

    /// A length-prefixed UTF-8 string.
    fn string(&mut self, what: impl Fn() -> String) -> Result<String, GgufError> {
        let len = self.u64(&what)?;
        let offset = self.pos;
        let bytes = self.take(len, &what)?;
        match core::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(GgufError::InvalidUtf8 { what: what(), offset }),
        }
    }
}

/// Bytes of the fixed header: magic, version, tensor count, metadata count.
pub const HEADER_BYTES: usize = 4 + 4 + 8 + 8;

/// Judges a file from its first bytes, before the rest is read: the magic, the version, and
/// the two counts against what a file of `file_bytes` bytes could hold. `prefix` is the file's
/// first [`HEADER_BYTES`] bytes (fewer when the file is shorter). A file this accepts may still
/// be refused by the full parse; one it refuses, the full parse refuses too (with the same error
/// for the magic, the version, a file shorter than its header and the metadata count; a tensor
/// count is held here to the bytes after the header, there to the bytes after the metadata).
///
/// # Errors
/// [`GgufError::BadMagic`], [`GgufError::UnsupportedVersion`], [`GgufError::Truncated`] (a file
/// shorter than its header) or [`GgufError::CountTooLarge`].
pub fn check_header(prefix: &[u8], file_bytes: u64) -> Result<(), GgufError> {
    let prefix = prefix.get(..HEADER_BYTES).unwrap_or(prefix);
    let mut cur = Cursor { bytes: prefix, pos: 0 };
    let magic: [u8; 4] = cur.array(|| "magic".to_owned())?;
    if magic != MAGIC {
        return Err(GgufError::BadMagic { found: magic });
    }
    let version = cur.u32(|| "version".to_owned())?;
    if !matches!(version, 2 | 3) {
        return Err(GgufError::UnsupportedVersion { version });
    }
    let n_tensors = cur.u64(|| "tensor count".to_owned())?;
    let n_kv = cur.u64(|| "metadata count".to_owned())?;
    // What the bytes after the header can hold at the least per item.
    let rest = file_bytes.saturating_sub(HEADER_BYTES as u64);
    for (what, offset, count, per_item) in
        [("metadata count", 16, n_kv, MIN_KV_BYTES), ("tensor count", 8, n_tensors, MIN_TENSOR_INFO_BYTES)]
    {
        let limit = rest / per_item;
        if count > limit {
            return Err(GgufError::CountTooLarge { what: what.to_owned(), offset, count, limit });
        }
    }
    Ok(())
}

/// Parses everything but the tensor data.
pub(crate) fn parse_layout(bytes: &[u8]) -> Result<Layout, GgufError> {
    let mut cur = Cursor { bytes, pos: 0 };
    let magic: [u8; 4] = cur.array(|| "magic".to_owned())?;
    if magic != MAGIC {
        return Err(GgufError::BadMagic { found: magic });
    }
    let version = cur.u32(|| "version".to_owned())?;
    if !matches!(version, 2 | 3) {
        return Err(GgufError::UnsupportedVersion { version });
    }
    let n_tensors = cur.u64(|| "tensor count".to_owned())?;
    let n_kv = cur.count(MIN_KV_BYTES, || "metadata count".to_owned())?;
    let (metadata, key_index) = parse_metadata(&mut cur, n_kv)?;
    let alignment = alignment(&metadata, &key_index)?;
    let tensor_limit = u64::try_from(cur.remaining()).unwrap_or(u64::MAX) / MIN_TENSOR_INFO_BYTES;
    if n_tensors > tensor_limit {
        return Err(GgufError::CountTooLarge {
            what: "tensor count".to_owned(),
            offset: 8,
            count: n_tensors,
            limit: tensor_limit,
        });
    }
    let (tensors, tensor_index) = parse_tensor_infos(&mut cur, n_tensors)?;
    let data_offset = align_up(cur.pos, alignment).ok_or(GgufError::Truncated {
        what: "data section padding".to_owned(),
        offset: cur.pos,
        needed: u64::from(alignment),
        available: cur.remaining(),
    })?;
    check_tensor_data(&tensors, alignment, data_offset, bytes.len())?;
    Ok(Layout { version, alignment, data_offset, metadata, key_index, tensors, tensor_index })
}

/// `pos` rounded up to a multiple of `alignment` (a power of two), `None` on overflow.
pub(crate) fn align_up(pos: usize, alignment: u32) -> Option<usize> {
    let align = usize::try_from(alignment).ok()?;
    pos.checked_next_multiple_of(align)
}

type Metadata = (Vec<(String, Value)>, HashMap<String, usize>);

fn parse_metadata(cur: &mut Cursor<'_>, n_kv: u64) -> Result<Metadata, GgufError> {
    let mut metadata = Vec::with_capacity(reserve(n_kv));
    let mut index = HashMap::with_capacity(reserve(n_kv));
    for i in 0..n_kv {
        let key_offset = cur.pos;
        let key = cur.string(|| format!("metadata key #{i}"))?;
        if index.contains_key(&key) {
            return Err(GgufError::DuplicateKey { key, offset: key_offset });
        }
        let ty = value_type(cur, &key)?;
        let value = parse_value(cur, &key, ty, 0)?;
        index.insert(key.clone(), metadata.len());
        metadata.push((key, value));
    }
    Ok((metadata, index))
}

fn reserve(count: u64) -> usize {
    usize::try_from(count).map_or(RESERVE_MAX, |n| n.min(RESERVE_MAX))
}

fn value_type(cur: &mut Cursor<'_>, key: &str) -> Result<ValueType, GgufError> {
    let offset = cur.pos;
    let raw = cur.u32(|| format!("value type of key {key:?}"))?;
    ValueType::from_id(raw).ok_or_else(|| GgufError::UnknownValueType { key: key.to_owned(), raw, offset })
}

fn parse_value(cur: &mut Cursor<'_>, key: &str, ty: ValueType, depth: usize) -> Result<Value, GgufError> {
    let what = || format!("{ty} value of key {key:?}");
    Ok(match ty {
        ValueType::U8 => Value::U8(u8::from_le_bytes(cur.array(what)?)),
        ValueType::I8 => Value::I8(i8::from_le_bytes(cur.array(what)?)),
        ValueType::U16 => Value::U16(u16::from_le_bytes(cur.array(what)?)),
        ValueType::I16 => Value::I16(i16::from_le_bytes(cur.array(what)?)),
        ValueType::U32 => Value::U32(u32::from_le_bytes(cur.array(what)?)),
        ValueType::I32 => Value::I32(i32::from_le_bytes(cur.array(what)?)),
        ValueType::F32 => Value::F32(f32::from_le_bytes(cur.array(what)?)),
        ValueType::U64 => Value::U64(u64::from_le_bytes(cur.array(what)?)),
        ValueType::I64 => Value::I64(i64::from_le_bytes(cur.array(what)?)),
        ValueType::F64 => Value::F64(f64::from_le_bytes(cur.array(what)?)),
        ValueType::Bool => {
            let offset = cur.pos;
            match u8::from_le_bytes(cur.array(what)?) {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                raw => return Err(GgufError::InvalidBool { key: key.to_owned(), raw, offset }),
            }
        }
        ValueType::String => Value::String(cur.string(what)?),
        ValueType::Array => parse_array(cur, key, depth)?,
    })
}

fn parse_array(cur: &mut Cursor<'_>, key: &str, depth: usize) -> Result<Value, GgufError> {
    let offset = cur.pos;
    if depth >= MAX_ARRAY_DEPTH {
        return Err(GgufError::ArrayTooDeep { key: key.to_owned(), offset, limit: MAX_ARRAY_DEPTH });
    }
    let elem = value_type(cur, key)?;
    let count = cur.count(elem.min_encoded_bytes(), || format!("array of key {key:?}"))?;
    let mut items = Vec::with_capacity(reserve(count));
    for _ in 0..count {
        items.push(parse_value(cur, key, elem, depth + 1)?);
    }
    // INVARIANT: every item was parsed as `elem`, so the array is homogeneous.
    Array::new(elem, items).map(Value::Array).map_err(|mixed| GgufError::WrongType {
        key: key.to_owned(),
        expected: elem.name(),
        found: mixed.found.name().to_owned(),
    })
}

fn alignment(metadata: &[(String, Value)], index: &HashMap<String, usize>) -> Result<u32, GgufError> {
    let Some(&i) = index.get(ALIGNMENT_KEY) else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    match metadata.get(i).map(|(_, v)| v) {
        Some(Value::U32(found)) if found.is_power_of_two() => Ok(*found),
        Some(Value::U32(found)) => Err(GgufError::BadAlignment { found: *found }),
        other => Err(GgufError::WrongType {
            key: ALIGNMENT_KEY.to_owned(),
            expected: "u32",
            found: other.map_or_else(|| "nothing".to_owned(), Value::type_description),
        }),
    }
}

type Tensors = (Vec<TensorInfo>, HashMap<String, usize>);

fn parse_tensor_infos(cur: &mut Cursor<'_>, n_tensors: u64) -> Result<Tensors, GgufError> {
    let mut tensors = Vec::with_capacity(reserve(n_tensors));
    let mut index = HashMap::with_capacity(reserve(n_tensors));
    for i in 0..n_tensors {
        let info = parse_tensor_info(cur, i)?;
        if index.contains_key(&info.name) {
            return Err(GgufError::DuplicateTensor { name: info.name, offset: info.info_offset });
        }
        index.insert(info.name.clone(), tensors.len());
        tensors.push(info);
    }
    Ok((tensors, index))
}

fn parse_tensor_info(cur: &mut Cursor<'_>, i: u64) -> Result<TensorInfo, GgufError> {
    let info_offset = cur.pos;
    let name_len = u64::from_le_bytes(cur.array(|| format!("name length of tensor #{i}"))?);
    if usize::try_from(name_len).map_or(true, |len| len > MAX_TENSOR_NAME_BYTES) {
        return Err(GgufError::TensorNameTooLong { offset: info_offset, len: name_len, limit: MAX_TENSOR_NAME_BYTES });
    }
    cur.pos = info_offset;
    let name = cur.string(|| format!("name of tensor #{i}"))?;
    let dims_offset = cur.pos;
    let n_dims = cur.u32(|| format!("dimension count of tensor {name:?}"))?;
    let dim_count = usize::try_from(n_dims).unwrap_or(usize::MAX);
    if dim_count == 0 || dim_count > MAX_DIMS {
        return Err(GgufError::DimCount { tensor: name, offset: dims_offset, n_dims, limit: MAX_DIMS });
    }
    let mut dims = Vec::with_capacity(dim_count);
    let mut elems: u64 = 1;
    for axis in 0..dim_count {
        let offset = cur.pos;
        let dim = cur.u64(|| format!("dimension {axis} of tensor {name:?}"))?;
        if dim == 0 {
            return Err(GgufError::ZeroDim { tensor: name, offset, axis });
        }
        // ggml keeps element counts in int64_t.
        elems = match elems.checked_mul(dim) {
            Some(n) if i64::try_from(n).is_ok() => n,
            _ => return Err(GgufError::SizeOverflow { tensor: name, offset: info_offset }),
        };
        dims.push(dim);
    }
    let ty = GgmlType::from_id(cur.u32(|| format!("type of tensor {name:?}"))?);
    let offset = cur.u64(|| format!("data offset of tensor {name:?}"))?;
    let byte_len = tensor_byte_len(&name, &dims, ty, elems, info_offset)?;
    Ok(TensorInfo { name, dims, ty, offset, byte_len, info_offset })
}

fn tensor_byte_len(
    name: &str,
    dims: &[u64],
    ty: GgmlType,
    elems: u64,
    info_offset: usize,
) -> Result<Option<u64>, GgufError> {
    let Some(layout) = ty.layout() else {
        return Ok(None);
    };
    let row = dims.first().copied().unwrap_or(0);
    if row % layout.block_elems != 0 {
        return Err(GgufError::RowNotBlockMultiple { tensor: name.to_owned(), ty, row, block: layout.block_elems });
    }
    match ty.bytes_for(elems) {
        Some(len) if usize::try_from(len).is_ok() => Ok(Some(len)),
        _ => Err(GgufError::SizeOverflow { tensor: name.to_owned(), offset: info_offset }),
    }
}

/// Offsets aligned, data inside the file, no two tensors overlapping.
fn check_tensor_data(
    tensors: &[TensorInfo],
    alignment: u32,
    data_offset: usize,
    file_len: usize,
) -> Result<(), GgufError> {
    // Exact arithmetic: a usize and two u64 sum below 2^66, far inside u128.
    let wide = |n: usize| u128::try_from(n).unwrap_or(u128::MAX);
    let mut spans = Vec::with_capacity(tensors.len());
    for t in tensors {
        if t.offset % u64::from(alignment) != 0 {
            return Err(GgufError::MisalignedTensor { tensor: t.name.clone(), offset: t.offset, alignment });
        }
        let len = t.byte_len.unwrap_or(0);
        let start = wide(data_offset) + u128::from(t.offset);
        let end = start + u128::from(len);
        if end > wide(file_len) {
            return Err(GgufError::TensorOutOfBounds {
                tensor: t.name.clone(),
                offset: t.offset,
                len,
                start,
                end,
                file_len,
            });
        }
        // INVARIANT: the data lies inside the file, so offset + len fits u64.
        spans.push((t.offset, t.offset.saturating_add(len), t));
    }
    spans.sort_by_key(|&(start, _, _)| start);
    for pair in spans.windows(2) {
        let [(_, first_end, first), (second_start, _, second)] = pair else { continue };
        // A tensor of unknown size claims no bytes, so only a known-size tensor around its start
        // is found to overlap it.
        if second_start < first_end {
            return Err(GgufError::TensorOverlap {
                first: first.name.clone(),
                second: second.name.clone(),
                offset: *second_start,
            });
        }
    }
    Ok(())
}
