//! Metadata values: the thirteen GGUF value types, arrays included (and nested).

use core::fmt;

/// A GGUF metadata value type, with its id in the file (`enum gguf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// `u8` (id 0).
    U8,
    /// `i8` (id 1).
    I8,
    /// `u16` (id 2).
    U16,
    /// `i16` (id 3).
    I16,
    /// `u32` (id 4).
    U32,
    /// `i32` (id 5).
    I32,
    /// `f32` (id 6).
    F32,
    /// `bool`, one byte 0 or 1 (id 7).
    Bool,
    /// UTF-8 string with a `u64` length (id 8).
    String,
    /// Array: element type, `u64` count, elements (id 9).
    Array,
    /// `u64` (id 10).
    U64,
    /// `i64` (id 11).
    I64,
    /// `f64` (id 12).
    F64,
}

impl ValueType {
    /// The type for a raw id, `None` for ids GGUF does not define.
    #[must_use]
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => Self::U8,
            1 => Self::I8,
            2 => Self::U16,
            3 => Self::I16,
            4 => Self::U32,
            5 => Self::I32,
            6 => Self::F32,
            7 => Self::Bool,
            8 => Self::String,
            9 => Self::Array,
            10 => Self::U64,
            11 => Self::I64,
            12 => Self::F64,
            _ => return None,
        })
    }

    /// The raw id written in the file.
    #[must_use]
    pub fn id(self) -> u32 {
        match self {
            Self::U8 => 0,
            Self::I8 => 1,
            Self::U16 => 2,
            Self::I16 => 3,
            Self::U32 => 4,
            Self::I32 => 5,
            Self::F32 => 6,
            Self::Bool => 7,
            Self::String => 8,
            Self::Array => 9,
            Self::U64 => 10,
            Self::I64 => 11,
            Self::F64 => 12,
        }
    }

    /// The fewest bytes one value of this type takes in a file: its size for the fixed-size
    /// types, the length prefix for a string, element type and count for an array. Bounds
    /// element counts against the bytes left before anything is allocated.
    #[must_use]
    pub fn min_encoded_bytes(self) -> u64 {
        match self {
            Self::U8 | Self::I8 | Self::Bool => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 | Self::String => 8,
            Self::Array => 4 + 8,
        }
    }

    /// The lower-case name used in error messages (`"u32"`, `"string"`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::U8 => "u8",
            Self::I8 => "i8",
            Self::U16 => "u16",
            Self::I16 => "i16",
            Self::U32 => "u32",
            Self::I32 => "i32",
            Self::F32 => "f32",
            Self::Bool => "bool",
            Self::String => "string",
            Self::Array => "array",
            Self::U64 => "u64",
            Self::I64 => "i64",
            Self::F64 => "f64",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `u8`.
    U8(u8),
    /// `i8`.
    I8(i8),
    /// `u16`.
    U16(u16),
    /// `i16`.
    I16(i16),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `f32`.
    F32(f32),
    /// `bool`.
    Bool(bool),
    /// UTF-8 string.
    String(String),
    /// Homogeneous array.
    Array(Array),
    /// `u64`.
    U64(u64),
    /// `i64`.
    I64(i64),
    /// `f64`.
    F64(f64),
}

impl Value {
    /// The value's type.
    #[must_use]
    pub fn value_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::F32(_) => ValueType::F32,
            Self::Bool(_) => ValueType::Bool,
            Self::String(_) => ValueType::String,
            Self::Array(_) => ValueType::Array,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F64(_) => ValueType::F64,
        }
    }

    /// A description of the type for error messages: `"u32"`, or `"array of string"`.
    #[must_use]
    pub fn type_description(&self) -> String {
        match self {
            Self::Array(array) => format!("array of {}", array.elem_type()),
            other => other.value_type().name().to_owned(),
        }
    }

    /// An array of strings.
    pub fn string_array<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Self {
        Self::Array(Array {
            elem: ValueType::String,
            items: items.into_iter().map(|s| Self::String(s.into())).collect(),
        })
    }

    /// An array of `i32`.
    pub fn i32_array(items: impl IntoIterator<Item = i32>) -> Self {
        Self::Array(Array { elem: ValueType::I32, items: items.into_iter().map(Self::I32).collect() })
    }

    /// An array of `f32`.
    pub fn f32_array(items: impl IntoIterator<Item = f32>) -> Self {
        Self::Array(Array { elem: ValueType::F32, items: items.into_iter().map(Self::F32).collect() })
    }
}

/// An array value: every item has the declared element type.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    elem: ValueType,
    items: Vec<Value>,
}

/// An array item whose type is not the array's element type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("array of {elem} has an item of type {found} at index {index}")]
pub struct MixedArray {
    /// The declared element type.
    pub elem: ValueType,
    /// Index of the first item of another type.
    pub index: usize,
    /// That item's type.
    pub found: ValueType,
}

impl Array {
    /// An array of `elem` values; every item must be of that type.
    ///
    /// # Errors
    /// [`MixedArray`] naming the first item of another type.
    pub fn new(elem: ValueType, items: Vec<Value>) -> Result<Self, MixedArray> {
        if let Some((index, item)) = items.iter().enumerate().find(|(_, v)| v.value_type() != elem) {
            return Err(MixedArray { elem, index, found: item.value_type() });
        }
        Ok(Self { elem, items })
    }

    /// The element type (kept for empty arrays too).
    #[must_use]
    pub fn elem_type(&self) -> ValueType {
        self.elem
    }

    /// The items.
    #[must_use]
    pub fn items(&self) -> &[Value] {
        &self.items
    }

    /// Number of items.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the array has no items.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_ids_round_trip() {
        for id in 0..13 {
            assert_eq!(ValueType::from_id(id).map(ValueType::id), Some(id));
        }
        assert_eq!(ValueType::from_id(13), None);
    }

    #[test]
    fn mixed_arrays_are_refused() {
        let err = Array::new(ValueType::U8, vec![Value::U8(1), Value::I8(2)]).unwrap_err();
        assert_eq!(err, MixedArray { elem: ValueType::U8, index: 1, found: ValueType::I8 });
        assert_eq!(Value::string_array(["a"]).type_description(), "array of string");
    }
}
