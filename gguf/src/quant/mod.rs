//! The ggml tensor encodings this crate reads and writes, bit-exact with ggml's reference code
//! (`ggml-common.h` block structs, `dequantize_row_*` and `quantize_row_*_ref` in
//! `ggml-quants.c`) and with gguf-py's `gguf.quants`.
//!
//! | type | values per block | bytes per block | decoded by |
//! |------|-----:|-----:|-------|
//! | F32  | 1    | 4    | the f32 itself |
//! | F16  | 1    | 2    | [`crate::f16::f16_to_f32`] |
//! | BF16 | 1    | 2    | [`bf16_to_f32`] |
//! | Q4_0 | 32   | 18   | [`BlockQ4_0`] |
//! | Q4_1 | 32   | 20   | [`BlockQ4_1`] |
//! | Q5_0 | 32   | 22   | [`BlockQ5_0`] |
//! | Q5_1 | 32   | 24   | [`BlockQ5_1`] |
//! | Q8_0 | 32   | 34   | [`BlockQ8_0`] |
//! | Q2_K | 256  | 84   | [`BlockQ2K`] |
//! | Q3_K | 256  | 110  | [`BlockQ3K`] |
//! | Q4_K | 256  | 144  | [`BlockQ4K`] |
//! | Q5_K | 256  | 176  | [`BlockQ5K`] |
//! | Q6_K | 256  | 210  | [`BlockQ6K`] |
//!
//! The code is split by family: `float` (F32, F16, BF16), `legacy` (the 32-value blocks) and
//! `k` (the k-quants, [`QK_K`] values per super-block).
//!
//! **Decoding** is defined per element: each block type's `value(j)` documents the exact f32
//! operations, in order, that give value `j` (ggml's C order, which gguf-py's numpy code
//! follows too), and [`dequantize_value`] applies it to element `k` of a row. Every other
//! decoder here ([`dequantize_row`], each block's `dequantize`) is that expression per element,
//! so all of them agree bit for bit. There is no fused multiply-add anywhere. f16 fields are
//! widened with [`crate::f16::f16_to_f32`], which quiets a signalling NaN; the payload of a NaN
//! that an operation produces is the platform's (on x86-64 the same as ggml's and numpy's).
//!
//! gguf-py's numpy code computes the same expressions in the same order for every type here
//! (`tests/quant_gguf_py.rs` compares every value of random and special-scale blocks bit for
//! bit). It differs from ggml, and this crate, only at the edges: numpy's float16 casts keep a
//! signalling NaN signalling (F16 tensors decode `0x7c01` to `0x7f80_2000` there, `0x7fc0_2000`
//! here and in ggml's F16C conversion), its encoders let NaN win `min`/`max`/`argmax` where
//! ggml's comparisons skip it, and its Q4_0/Q5_0 encoders take an all-zero block's sign from the
//! block's first value where ggml starts from `+0.0`.
//!
//! **Encoding**: F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 follow ggml's `quantize_row_*_ref`
//! bit for bit on finite input (where C leaves a float-to-integer conversion undefined, NaN or
//! infinite input, levels are clamped into range). The k-quant encoders are simpler than ggml's
//! search-based ones; each block type's `quantize` documents its method and error bound.

mod float;
mod k;
mod legacy;

use crate::types::GgmlType;

pub use float::{bf16_to_f32, f32_to_bf16};
pub use k::{
    BLOCK_Q2_K_BYTES, BLOCK_Q3_K_BYTES, BLOCK_Q4_K_BYTES, BLOCK_Q5_K_BYTES, BLOCK_Q6_K_BYTES, BlockQ2K, BlockQ3K,
    BlockQ4K, BlockQ5K, BlockQ6K, K_SCALE_SIZE, QK_K,
};
pub use legacy::{
    BLOCK_Q4_0_BYTES, BLOCK_Q4_1_BYTES, BLOCK_Q5_0_BYTES, BLOCK_Q5_1_BYTES, BLOCK_Q8_0_BYTES, BlockQ4_0, BlockQ4_1,
    BlockQ5_0, BlockQ5_1, BlockQ8_0, QK4_0, QK4_1, QK5_0, QK5_1, QK8_0,
};

/// Why a row could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantError {
    /// The type has no decoder/encoder here.
    #[error("unsupported type {ty} (supported: {list})", list = supported_list())]
    UnsupportedType {
        /// The type.
        ty: GgmlType,
    },
    /// A value count that is not a whole number of blocks.
    #[error("{elements} values are not a whole number of {ty} blocks of {block}")]
    NotBlockMultiple {
        /// The type.
        ty: GgmlType,
        /// The value count.
        elements: usize,
        /// Values per block.
        block: usize,
    },
    /// Encoded bytes whose length does not match the value count.
    #[error("{ty}: {elements} values take {expected} bytes, got {found}")]
    LengthMismatch {
        /// The type.
        ty: GgmlType,
        /// The value count.
        elements: usize,
        /// Bytes those values take.
        expected: usize,
        /// Bytes given.
        found: usize,
    },
    /// A row index past the tensor's last row.
    #[error("row {row} is past the last of {rows} rows")]
    RowOutOfRange {
        /// The row asked for.
        row: u64,
        /// Rows in the tensor.
        rows: u64,
    },
    /// A tensor with more elements than this target can address.
    #[error("{elements} elements do not fit in memory on this target")]
    TooLarge {
        /// The element count.
        elements: u64,
    },
    /// Encoded bytes that end inside a block.
    #[error("{ty}: {found} bytes are not a whole number of {block_bytes}-byte blocks")]
    PartialBlock {
        /// The type.
        ty: GgmlType,
        /// Bytes given.
        found: usize,
        /// Bytes per block.
        block_bytes: usize,
    },
    /// An element index past the last value of a row.
    #[error("{ty}: element {index} is past the last of the row's {elements} values")]
    ElementOutOfRange {
        /// The type.
        ty: GgmlType,
        /// The element asked for.
        index: usize,
        /// Values in the row.
        elements: usize,
    },
}

/// One block format: `ELEMS` values in `BYTES` bytes. Implemented by every block type (and a
/// one-value wrapper for each float type); [`CODECS`] instantiates the row functions from it.
trait Format<const ELEMS: usize, const BYTES: usize>: Sized {
    /// The f16 fields that can hold a NaN or an infinity: name and byte offset in the block.
    const HALF_FIELDS: &'static [(&'static str, usize)] = &[];

    /// The block stored in `bytes`.
    fn read(bytes: &[u8; BYTES]) -> Self;
    /// The block's bytes.
    fn write(&self) -> [u8; BYTES];
    /// Value `j` (`j < ELEMS`).
    fn value(&self, j: usize) -> f32;
    /// The block for `x`.
    fn encode(x: &[f32; ELEMS]) -> Self;

    /// The first field of the block in `bytes` that is NaN or infinite: its name, its byte
    /// offset in the block and its value.
    fn non_finite(bytes: &[u8; BYTES]) -> Option<(&'static str, usize, f32)> {
        // An f16 is NaN or infinite when its exponent bits are all set.
        Self::HALF_FIELDS.iter().find_map(|&(name, at)| {
            let h = u16::from_le_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]);
            (h & 0x7c00 == 0x7c00).then(|| (name, at, crate::f16::f16_to_f32(h)))
        })
    }
}

/// A non-finite field found by [`first_non_finite`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NonFinite {
    /// Index of the block (or element, for the float types).
    pub(crate) index: usize,
    /// The field's name.
    pub(crate) field: &'static str,
    /// Its byte offset from the start of the data.
    pub(crate) offset: usize,
    /// Its value.
    pub(crate) value: f32,
}

/// The row functions of one supported type, instantiated from its [`Format`].
struct Codec {
    ty: GgmlType,
    elems: usize,
    bytes: usize,
    /// Whole blocks of bytes → values; the caller checked both lengths.
    decode: fn(&[u8], &mut [f32]),
    /// Whole blocks of values → bytes; the caller checked both lengths.
    encode: fn(&[f32], &mut [u8]),
    /// Value `j` of one block (`bytes.len()` is the block size, `j` below its value count).
    value: fn(&[u8], usize) -> Option<f32>,
    /// The first non-finite field in whole blocks.
    non_finite: fn(&[u8]) -> Option<NonFinite>,
}

fn decode_blocks<const E: usize, const N: usize, B: Format<E, N>>(bytes: &[u8], out: &mut [f32]) {
    for (o, b) in out.as_chunks_mut::<E>().0.iter_mut().zip(bytes.as_chunks::<N>().0) {
        let block = B::read(b);
        for (j, v) in o.iter_mut().enumerate() {
            *v = block.value(j);
        }
    }
}

fn encode_blocks<const E: usize, const N: usize, B: Format<E, N>>(x: &[f32], out: &mut [u8]) {
    for (o, v) in out.as_chunks_mut::<N>().0.iter_mut().zip(x.as_chunks::<E>().0) {
        *o = B::encode(v).write();
    }
}

fn block_value<const E: usize, const N: usize, B: Format<E, N>>(bytes: &[u8], j: usize) -> Option<f32> {
    let block: &[u8; N] = bytes.try_into().ok()?;
    (j < E).then(|| B::read(block).value(j))
}

fn find_non_finite<const E: usize, const N: usize, B: Format<E, N>>(bytes: &[u8]) -> Option<NonFinite> {
    bytes.as_chunks::<N>().0.iter().enumerate().find_map(|(index, block)| {
        let (field, within, value) = B::non_finite(block)?;
        Some(NonFinite { index, field, offset: index * N + within, value })
    })
}

const fn codec<const E: usize, const N: usize, B: Format<E, N>>(ty: GgmlType) -> Codec {
    Codec {
        ty,
        elems: E,
        bytes: N,
        decode: decode_blocks::<E, N, B>,
        encode: encode_blocks::<E, N, B>,
        value: block_value::<E, N, B>,
        non_finite: find_non_finite::<E, N, B>,
    }
}

/// Every supported type, in ggml id order: the one list [`GgmlType::is_supported`], the
/// dispatching functions and [`QuantError::UnsupportedType`]'s message read.
const CODECS: [Codec; 13] = [
    codec::<1, 4, float::F32Value>(GgmlType::F32),
    codec::<1, 2, float::F16Value>(GgmlType::F16),
    codec::<QK4_0, BLOCK_Q4_0_BYTES, BlockQ4_0>(GgmlType::Q4_0),
    codec::<QK4_1, BLOCK_Q4_1_BYTES, BlockQ4_1>(GgmlType::Q4_1),
    codec::<QK5_0, BLOCK_Q5_0_BYTES, BlockQ5_0>(GgmlType::Q5_0),
    codec::<QK5_1, BLOCK_Q5_1_BYTES, BlockQ5_1>(GgmlType::Q5_1),
    codec::<QK8_0, BLOCK_Q8_0_BYTES, BlockQ8_0>(GgmlType::Q8_0),
    codec::<QK_K, BLOCK_Q2_K_BYTES, BlockQ2K>(GgmlType::Q2K),
    codec::<QK_K, BLOCK_Q3_K_BYTES, BlockQ3K>(GgmlType::Q3K),
    codec::<QK_K, BLOCK_Q4_K_BYTES, BlockQ4K>(GgmlType::Q4K),
    codec::<QK_K, BLOCK_Q5_K_BYTES, BlockQ5K>(GgmlType::Q5K),
    codec::<QK_K, BLOCK_Q6_K_BYTES, BlockQ6K>(GgmlType::Q6K),
    codec::<1, 2, float::Bf16Value>(GgmlType::Bf16),
];

fn codec_of(ty: GgmlType) -> Result<&'static Codec, QuantError> {
    CODECS.iter().find(|c| c.ty == ty).ok_or(QuantError::UnsupportedType { ty })
}

/// Whether [`dequantize_row`], [`quantize_row`] and the rest handle `ty`.
pub(crate) fn is_supported(ty: GgmlType) -> bool {
    codec_of(ty).is_ok()
}

/// The supported types, as [`QuantError::UnsupportedType`] lists them: `"F32, F16, …, BF16"`.
fn supported_list() -> String {
    let names: Vec<&str> = CODECS.iter().filter_map(|c| c.ty.name()).collect();
    names.join(", ")
}

/// The first NaN or infinite field in `bytes` of type `ty` (whole blocks; a trailing partial
/// block is not looked at); `None` for an unsupported type.
pub(crate) fn first_non_finite(ty: GgmlType, bytes: &[u8]) -> Option<NonFinite> {
    (codec_of(ty).ok()?.non_finite)(bytes)
}

fn check_len(ty: GgmlType, elements: usize, found: usize) -> Result<&'static Codec, QuantError> {
    let codec = codec_of(ty)?;
    if !elements.is_multiple_of(codec.elems) {
        return Err(QuantError::NotBlockMultiple { ty, elements, block: codec.elems });
    }
    let expected = (elements / codec.elems).saturating_mul(codec.bytes);
    if expected != found {
        return Err(QuantError::LengthMismatch { ty, elements, expected, found });
    }
    Ok(codec)
}

/// Decodes `bytes` of type `ty` into `out` (as many values as `out` holds): each value as
/// [`dequantize_value`] gives it.
///
/// # Errors
/// [`QuantError`] for an unsupported type, a partial block, or a length mismatch.
pub fn dequantize_row(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<(), QuantError> {
    let codec = check_len(ty, out.len(), bytes.len())?;
    (codec.decode)(bytes, out);
    Ok(())
}

/// Element `k` of the row encoded in `row_bytes` (whole blocks of type `ty`): the value the
/// block holding it gives for index `k mod n` (`n` values per block), with exactly the f32
/// operations its block type's `value` documents — F32 the stored value, F16
/// [`crate::f16::f16_to_f32`], BF16 [`bf16_to_f32`], and [`BlockQ4_0::value`],
/// [`BlockQ4_1::value`], [`BlockQ5_0::value`], [`BlockQ5_1::value`], [`BlockQ8_0::value`],
/// [`BlockQ2K::value`], [`BlockQ3K::value`], [`BlockQ4K::value`], [`BlockQ5K::value`],
/// [`BlockQ6K::value`]. Kernels that decode one element at a time compute this expression.
///
/// # Errors
/// [`QuantError::UnsupportedType`], [`QuantError::PartialBlock`] when `row_bytes` ends inside
/// a block, [`QuantError::ElementOutOfRange`] when `k` is past the row's last value.
pub fn dequantize_value(ty: GgmlType, row_bytes: &[u8], k: usize) -> Result<f32, QuantError> {
    let codec = codec_of(ty)?;
    let found = row_bytes.len();
    if !found.is_multiple_of(codec.bytes) {
        return Err(QuantError::PartialBlock { ty, found, block_bytes: codec.bytes });
    }
    let elements = (found / codec.bytes).saturating_mul(codec.elems);
    let out_of_range = QuantError::ElementOutOfRange { ty, index: k, elements };
    if k >= elements {
        return Err(out_of_range);
    }
    let start = k / codec.elems * codec.bytes;
    let block = row_bytes.get(start..start + codec.bytes).ok_or_else(|| out_of_range.clone())?;
    (codec.value)(block, k % codec.elems).ok_or(out_of_range)
}

/// Encodes `x` as type `ty` into `out`, which must be exactly the encoded size.
///
/// # Errors
/// [`QuantError`] for an unsupported type, a partial block, or a length mismatch.
pub fn quantize_row(ty: GgmlType, x: &[f32], out: &mut [u8]) -> Result<(), QuantError> {
    let codec = check_len(ty, x.len(), out.len())?;
    (codec.encode)(x, out);
    Ok(())
}

/// Encodes `x` as Q4_1 (`quantize_row_q4_1_ref`) into `out` (`x.len() / 32 * 20` bytes).
///
/// # Errors
/// [`QuantError`] for a partial block or a length mismatch.
pub fn quantize_row_q4_1(x: &[f32], out: &mut [u8]) -> Result<(), QuantError> {
    quantize_row(GgmlType::Q4_1, x, out)
}

/// Encodes `x` as Q8_0 (`quantize_row_q8_0_ref`) into `out` (`x.len() / 32 * 34` bytes).
///
/// # Errors
/// [`QuantError`] for a partial block or a length mismatch.
pub fn quantize_row_q8_0(x: &[f32], out: &mut [u8]) -> Result<(), QuantError> {
    quantize_row(GgmlType::Q8_0, x, out)
}

/// Encodes `x` as type `ty` into a new vector.
///
/// # Errors
/// [`QuantError`] for an unsupported type or a partial block.
pub fn quantize(ty: GgmlType, x: &[f32]) -> Result<Vec<u8>, QuantError> {
    let codec = codec_of(ty)?;
    let elements = x.len();
    if !elements.is_multiple_of(codec.elems) {
        return Err(QuantError::NotBlockMultiple { ty, elements, block: codec.elems });
    }
    let len = (elements / codec.elems)
        .checked_mul(codec.bytes)
        .ok_or(QuantError::TooLarge { elements: u64::try_from(elements).unwrap_or(u64::MAX) })?;
    let mut out = vec![0u8; len];
    quantize_row(ty, x, &mut out)?;
    Ok(out)
}

/// Rounds `v` to the nearest integer, ties to even (ggml's `nearest_int`), and clamps it into
/// `lo..=hi`; NaN gives `nan`.
fn nearest_level(v: f32, lo: i8, hi: i8, nan: i8) -> i8 {
    let r = v.round_ties_even();
    if r.is_nan() {
        nan
    } else if r <= f32::from(lo) {
        lo
    } else if r >= f32::from(hi) {
        hi
    } else {
        // CAST: `r` is an integer strictly between two i8 values.
        #[allow(clippy::cast_possible_truncation)]
        let q = r as i8;
        q
    }
}

/// ggml's `(uint8_t)x` / `MIN(max, (int8_t)x)` for the levels of the legacy quantizers:
/// truncation toward zero, clamped into `0..=max` (finite input never leaves that range; C
/// leaves NaN and out-of-range conversions undefined, here NaN gives 0).
fn trunc_level(v: f32, max: u8) -> u8 {
    let t = v.trunc();
    if t >= f32::from(max) {
        max
    } else if t >= 1.0 {
        // CAST: `t` is an integer in 1..max.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let q = t as u8;
        q
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_match_the_type_layouts() {
        // Sizes of ggml-common.h's block structs (static_asserts there), and QK_K = 256.
        let ggml = [
            (GgmlType::Q4_0, 32, 18),
            (GgmlType::Q4_1, 32, 20),
            (GgmlType::Q5_0, 32, 22),
            (GgmlType::Q5_1, 32, 24),
            (GgmlType::Q8_0, 32, 34),
            (GgmlType::Q2K, 256, 84),
            (GgmlType::Q3K, 256, 110),
            (GgmlType::Q4K, 256, 144),
            (GgmlType::Q5K, 256, 176),
            (GgmlType::Q6K, 256, 210),
            (GgmlType::F32, 1, 4),
            (GgmlType::F16, 1, 2),
            (GgmlType::Bf16, 1, 2),
        ];
        assert_eq!(ggml.len(), CODECS.len());
        for (ty, elems, bytes) in ggml {
            let codec = codec_of(ty).unwrap();
            assert_eq!((codec.elems, codec.bytes), (elems, bytes), "{ty}");
            let layout = ty.layout().unwrap();
            assert_eq!((layout.block_elems, layout.block_bytes), (elems as u64, bytes as u64), "{ty}");
        }
        for w in CODECS.windows(2) {
            assert!(w[0].ty.id() < w[1].ty.id(), "CODECS is in id order");
        }
    }

    #[test]
    fn unsupported_type_message_lists_the_table() {
        let err = QuantError::UnsupportedType { ty: GgmlType::Iq2Xxs };
        assert_eq!(
            err.to_string(),
            "unsupported type IQ2_XXS (supported: F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, \
             Q6_K, BF16)"
        );
    }

    #[test]
    fn lengths_are_checked() {
        let mut out = [0.0f32; 32];
        assert_eq!(
            dequantize_row(GgmlType::Q8_0, &[0; 33], &mut out),
            Err(QuantError::LengthMismatch { ty: GgmlType::Q8_0, elements: 32, expected: 34, found: 33 })
        );
        assert_eq!(
            dequantize_row(GgmlType::Iq4Nl, &[0; 18], &mut out),
            Err(QuantError::UnsupportedType { ty: GgmlType::Iq4Nl })
        );
        assert!(matches!(quantize(GgmlType::Q4_1, &[0.0; 31]), Err(QuantError::NotBlockMultiple { .. })));
        assert!(matches!(quantize(GgmlType::Q4K, &[0.0; 32]), Err(QuantError::NotBlockMultiple { block: 256, .. })));
        assert!(matches!(quantize(GgmlType::Q8K, &[0.0; 256]), Err(QuantError::UnsupportedType { .. })));
    }

    #[test]
    fn dequantize_value_checks_the_row_and_index() {
        let row = quantize(GgmlType::Q8_0, &[-127.0; 64]).unwrap();
        assert_eq!(dequantize_value(GgmlType::Q8_0, &row, 63), Ok(-127.0));
        assert_eq!(
            dequantize_value(GgmlType::Q8_0, &row, 64),
            Err(QuantError::ElementOutOfRange { ty: GgmlType::Q8_0, index: 64, elements: 64 })
        );
        assert_eq!(
            dequantize_value(GgmlType::Q8_0, &row[..35], 0),
            Err(QuantError::PartialBlock { ty: GgmlType::Q8_0, found: 35, block_bytes: 34 })
        );
        assert_eq!(dequantize_value(GgmlType::F16, &[0x00, 0x3c, 0x00, 0xc0], 1), Ok(-2.0));
        assert!(matches!(dequantize_value(GgmlType::Unknown(77), &[], 0), Err(QuantError::UnsupportedType { .. })));
    }

    #[test]
    fn levels_round_and_clamp() {
        assert_eq!(nearest_level(2.5, -4, 3, 0), 2);
        assert_eq!(nearest_level(-3.5, -4, 3, 0), -4);
        assert_eq!(nearest_level(3.5, -4, 3, 0), 3);
        assert_eq!(nearest_level(f32::NAN, 0, 15, 7), 7);
        assert_eq!(nearest_level(f32::NEG_INFINITY, -32, 31, 0), -32);
        assert_eq!(trunc_level(15.9, 15), 15);
        assert_eq!(trunc_level(16.4, 31), 16);
        assert_eq!(trunc_level(0.99, 15), 0);
        assert_eq!(trunc_level(f32::NAN, 15), 0);
        assert_eq!(trunc_level(f32::INFINITY, 31), 31);
    }
}
