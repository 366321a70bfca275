//! The ggml tensor types, with the ids ggml assigns them in `ggml.h`.

use core::fmt;

/// How a tensor type stores its elements: blocks of `block_elems` values in `block_bytes`
/// bytes each (1 and the element size for the plain types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockLayout {
    /// Elements per block.
    pub block_elems: u64,
    /// Bytes per block.
    pub block_bytes: u64,
}

macro_rules! ggml_types {
    ($($(#[$doc:meta])* $variant:ident = $id:literal, $name:literal, $elems:literal, $bytes:expr;)*) => {
        /// A ggml tensor type (`enum ggml_type` in `ggml.h`). Ids this crate does not know stay
        /// representable as [`GgmlType::Unknown`], so a file with a newer type still parses.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum GgmlType {
            $($(#[$doc])* $variant,)*
            /// An id not in the table above (including the ids ggml retired: 4, 5, 31–33, 36–38).
            Unknown(u32),
        }

        impl GgmlType {
            /// The type for a raw ggml id.
            #[must_use]
            pub fn from_id(id: u32) -> Self {
                match id {
                    $($id => Self::$variant,)*
                    other => Self::Unknown(other),
                }
            }

            /// The raw ggml id.
            #[must_use]
            pub fn id(self) -> u32 {
                match self {
                    $(Self::$variant => $id,)*
                    Self::Unknown(id) => id,
                }
            }

            /// ggml's name for the type (`"Q4_1"`), or `None` for an unknown id.
            #[must_use]
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(Self::$variant => Some($name),)*
                    Self::Unknown(_) => None,
                }
            }

            /// The block layout, as gguf-py's `GGML_QUANT_SIZES` lists it; `None` for an
            /// unknown id (its tensors' sizes cannot be known).
            #[must_use]
            pub fn layout(self) -> Option<BlockLayout> {
                match self {
                    $(Self::$variant => Some(BlockLayout { block_elems: $elems, block_bytes: $bytes }),)*
                    Self::Unknown(_) => None,
                }
            }
        }
    };
}

/// `QK_K`: elements per super-block of the k-quant and i-quant families.
const QK_K: u64 = 256;

ggml_types! {
    /// 32-bit IEEE float.
    F32 = 0, "F32", 1, 4;
    /// 16-bit IEEE float.
    F16 = 1, "F16", 1, 2;
    /// 4-bit, one f16 scale per 32.
    Q4_0 = 2, "Q4_0", 32, 2 + 16;
    /// 4-bit, f16 scale and f16 minimum per 32.
    Q4_1 = 3, "Q4_1", 32, 2 + 2 + 16;
    /// 5-bit, one scale per 32.
    Q5_0 = 6, "Q5_0", 32, 2 + 4 + 16;
    /// 5-bit, scale and minimum per 32.
    Q5_1 = 7, "Q5_1", 32, 2 + 2 + 4 + 16;
    /// 8-bit, one f16 scale per 32.
    Q8_0 = 8, "Q8_0", 32, 2 + 32;
    /// 8-bit, f32 scale and sum per 32.
    Q8_1 = 9, "Q8_1", 32, 4 + 4 + 32;
    /// k-quant, 2-bit.
    Q2K = 10, "Q2_K", 256, 2 + 2 + QK_K / 16 + QK_K / 4;
    /// k-quant, 3-bit.
    Q3K = 11, "Q3_K", 256, 2 + QK_K / 4 + QK_K / 8 + 12;
    /// k-quant, 4-bit.
    Q4K = 12, "Q4_K", 256, 2 + 2 + QK_K / 2 + 12;
    /// k-quant, 5-bit.
    Q5K = 13, "Q5_K", 256, 2 + 2 + QK_K / 2 + QK_K / 8 + 12;
    /// k-quant, 6-bit.
    Q6K = 14, "Q6_K", 256, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16;
    /// k-quant, 8-bit (intermediate).
    Q8K = 15, "Q8_K", 256, 4 + QK_K + QK_K / 8;
    /// i-quant.
    Iq2Xxs = 16, "IQ2_XXS", 256, 2 + QK_K / 4;
    /// i-quant.
    Iq2Xs = 17, "IQ2_XS", 256, 2 + QK_K / 4 + QK_K / 32;
    /// i-quant.
    Iq3Xxs = 18, "IQ3_XXS", 256, 2 + QK_K / 4 + QK_K / 8;
    /// i-quant.
    Iq1S = 19, "IQ1_S", 256, 2 + QK_K / 8 + QK_K / 16;
    /// i-quant, non-linear 4-bit.
    Iq4Nl = 20, "IQ4_NL", 32, 2 + 16;
    /// i-quant.
    Iq3S = 21, "IQ3_S", 256, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4;
    /// i-quant.
    Iq2S = 22, "IQ2_S", 256, 2 + QK_K / 4 + QK_K / 16;
    /// i-quant.
    Iq4Xs = 23, "IQ4_XS", 256, 2 + 2 + QK_K / 2 + QK_K / 64;
    /// 8-bit integer.
    I8 = 24, "I8", 1, 1;
    /// 16-bit integer.
    I16 = 25, "I16", 1, 2;
    /// 32-bit integer.
    I32 = 26, "I32", 1, 4;
    /// 64-bit integer.
    I64 = 27, "I64", 1, 8;
    /// 64-bit IEEE float.
    F64 = 28, "F64", 1, 8;
    /// i-quant.
    Iq1M = 29, "IQ1_M", 256, QK_K / 8 + QK_K / 16 + QK_K / 32;
    /// bfloat16.
    Bf16 = 30, "BF16", 1, 2;
    /// Ternary.
    Tq1_0 = 34, "TQ1_0", 256, 2 + 4 * 13;
    /// Ternary.
    Tq2_0 = 35, "TQ2_0", 256, 2 + 64;
    /// Microscaling FP4.
    Mxfp4 = 39, "MXFP4", 32, 1 + 16;
    /// NVIDIA FP4.
    Nvfp4 = 40, "NVFP4", 64, 4 + 32;
    /// 1-bit.
    Q1_0 = 41, "Q1_0", 128, 2 + 16;
}

impl GgmlType {
    /// Whether this crate decodes and encodes the type's data: F32, F16, BF16, Q4_0, Q4_1,
    /// Q5_0, Q5_1, Q8_0 and the k-quants Q2_K to Q6_K (the table in [`crate::quant`]).
    #[must_use]
    pub fn is_supported(self) -> bool {
        crate::quant::is_supported(self)
    }

    /// Bytes taken by `elems` elements, `None` when the type's layout is unknown, `elems` is
    /// not a whole number of blocks, or the size overflows `u64`.
    #[must_use]
    pub fn bytes_for(self, elems: u64) -> Option<u64> {
        let layout = self.layout()?;
        if !elems.is_multiple_of(layout.block_elems) {
            return None;
        }
        (elems / layout.block_elems).checked_mul(layout.block_bytes)
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown ggml type {}", self.id()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_match_ggml_h() {
        // Spot values transcribed from ggml.h's `enum ggml_type`.
        let expected = [(GgmlType::F32, 0), (GgmlType::F16, 1), (GgmlType::Q4_0, 2), (GgmlType::Q4_1, 3)];
        for (ty, id) in expected {
            assert_eq!(ty.id(), id);
        }
        assert_eq!(GgmlType::from_id(8), GgmlType::Q8_0);
        assert_eq!(GgmlType::from_id(30), GgmlType::Bf16);
        assert_eq!(GgmlType::from_id(4), GgmlType::Unknown(4));
        for id in 0..64 {
            assert_eq!(GgmlType::from_id(id).id(), id);
        }
    }

    #[test]
    fn supported_layouts() {
        assert_eq!(GgmlType::Q4_1.bytes_for(64), Some(40));
        assert_eq!(GgmlType::Q8_0.bytes_for(32), Some(34));
        assert_eq!(GgmlType::F16.bytes_for(3), Some(6));
        assert_eq!(GgmlType::Q8_0.bytes_for(33), None);
        assert_eq!(GgmlType::Unknown(99).bytes_for(32), None);
        assert_eq!(GgmlType::Q4_1.to_string(), "Q4_1");
        assert_eq!(GgmlType::Unknown(99).to_string(), "unknown ggml type 99");
    }
}
