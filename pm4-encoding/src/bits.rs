//! `hi:lo` bit fields of 32-bit words, and the macro that declares typed words from field tables.
//!
//! Every register and packet control word in this crate is declared with [`bitfield32!`](crate::bitfield32), which
//! generates a `Copy` newtype over `u32`, one getter and one `with_*` builder per field, and a
//! `FIELDS` table (hardware name, `hi`, `lo`) that the disassembler and the reference-table tests
//! read. Getters never panic; builders assert that the value fits (a programmer error otherwise).

/// One named bit field of a 32-bit word, `[hi:lo]` inclusive, bit 0 = least significant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldDesc {
    /// The hardware name, as the reference table spells it (`LDS_SIZE`).
    pub name: &'static str,
    /// Highest bit, inclusive.
    pub hi: u8,
    /// Lowest bit.
    pub lo: u8,
}

impl FieldDesc {
    /// Width in bits.
    #[must_use]
    pub const fn width(self) -> u32 {
        (self.hi - self.lo) as u32 + 1
    }

    /// The field's bits in place.
    #[must_use]
    pub const fn mask(self) -> u32 {
        mask(self.hi, self.lo)
    }

    /// The field's value in `word`.
    #[must_use]
    pub const fn get(self, word: u32) -> u32 {
        get(word, self.hi, self.lo)
    }
}

/// The field called `name` in `fields`, for tables built at compile time.
///
/// PANIC: a missing name is a compile-time error where the result initialises a constant.
#[must_use]
pub const fn field(fields: &[FieldDesc], name: &str) -> FieldDesc {
    let mut i = 0;
    while i < fields.len() {
        if str_eq(fields[i].name, name) {
            return fields[i];
        }
        i += 1;
    }
    panic!("no field of that name")
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Mask of bits `hi..=lo`.
#[must_use]
#[inline(always)]
pub const fn mask(hi: u8, lo: u8) -> u32 {
    assert!(hi < 32 && lo <= hi, "bit range out of a 32-bit word");
    let width = (hi - lo) as u32 + 1;
    let ones = if width == 32 { u32::MAX } else { (1u32 << width) - 1 };
    ones << lo
}

/// Reads bits `hi..=lo` of `word`, shifted down.
#[must_use]
#[inline(always)]
pub const fn get(word: u32, hi: u8, lo: u8) -> u32 {
    (word & mask(hi, lo)) >> lo
}

/// Whether `value` fits in a field of bits `hi..=lo`.
#[must_use]
#[inline(always)]
pub const fn fits(value: u32, hi: u8, lo: u8) -> bool {
    value & !(mask(hi, lo) >> lo) == 0
}

/// Replaces bits `hi..=lo` of `word` with `value`.
///
/// PANIC: asserts that `value` fits in the field; a value that does not is a programmer error.
#[must_use]
#[inline(always)]
pub const fn set(word: u32, hi: u8, lo: u8, value: u32) -> u32 {
    assert!(fits(value, hi, lo), "value does not fit in the bit field");
    (word & !mask(hi, lo)) | (value << lo)
}

/// Declares a typed 32-bit word from a field table.
///
/// ```
/// pm4_encoding::bitfield32! {
///     /// Example word.
///     pub struct Example {
///         /// Low nibble.
///         [3:0] low, with_low = "LOW";
///         [31] top, with_top = "TOP";
///     }
/// }
/// let w = Example::default().with_low(5).with_top(1);
/// assert_eq!(w.raw(), 0x8000_0005);
/// assert_eq!(Example::FIELDS[0].name, "LOW");
/// ```
#[macro_export]
macro_rules! bitfield32 {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                [$hi:literal $(: $lo:literal)?] $get:ident, $with:ident = $hw:literal;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        $vis struct $name(u32);

        #[allow(dead_code, unreachable_pub)]
        impl $name {
            /// Every named field, as `(hardware name, hi, lo)`, in declaration order.
            pub const FIELDS: &'static [$crate::bits::FieldDesc] = &[
                $( $crate::bits::FieldDesc {
                    name: $hw,
                    hi: $hi,
                    lo: $crate::bitfield32!(@lo $hi $(, $lo)?),
                }, )*
            ];

            /// Bits covered by a named field.
            pub const KNOWN_MASK: u32 = 0 $( | $crate::bits::mask($hi, $crate::bitfield32!(@lo $hi $(, $lo)?)) )*;

            /// Wraps a raw word; every bit pattern is representable.
            #[must_use]
            #[inline(always)]
            pub const fn from_raw(raw: u32) -> Self {
                Self(raw)
            }

            /// The raw word.
            #[must_use]
            #[inline(always)]
            pub const fn raw(self) -> u32 {
                self.0
            }

            /// Bits set outside every named field (reserved bits).
            #[must_use]
            pub const fn unknown_bits(self) -> u32 {
                self.0 & !Self::KNOWN_MASK
            }

            $(
                $(#[$fmeta])*
                #[must_use]
                #[inline(always)]
                pub const fn $get(self) -> u32 {
                    $crate::bits::get(self.0, $hi, $crate::bitfield32!(@lo $hi $(, $lo)?))
                }

                #[doc = concat!("Returns a copy with `", $hw, "` set to `value`.")]
                ///
                /// PANIC: asserts that `value` fits in the field.
                #[must_use]
                #[inline(always)]
                pub const fn $with(self, value: u32) -> Self {
                    Self($crate::bits::set(self.0, $hi, $crate::bitfield32!(@lo $hi $(, $lo)?), value))
                }
            )*
        }

        impl From<u32> for $name {
            fn from(raw: u32) -> Self {
                Self(raw)
            }
        }

        impl From<$name> for u32 {
            fn from(word: $name) -> u32 {
                word.0
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let mut s = f.debug_struct(stringify!($name));
                $( s.field($hw, &self.$get()); )*
                if self.unknown_bits() != 0 {
                    s.field("unknown_bits", &format_args!("{:#010x}", self.unknown_bits()));
                }
                s.finish()
            }
        }
    };
    (@lo $hi:literal) => { $hi };
    (@lo $hi:literal, $lo:literal) => { $lo };
}

#[cfg(test)]
mod tests {
    use super::*;

    bitfield32! {
        struct Word {
            [0] a, with_a = "A";
            [5:1] b, with_b = "B";
            [31:24] c, with_c = "C";
        }
    }

    #[test]
    fn fields_round_trip_literal_words() {
        let w = Word::default().with_a(1).with_b(0x1F).with_c(0xAB);
        assert_eq!(w.raw(), 0xAB00_003F);
        assert_eq!(Word::from_raw(0xAB00_003F).b(), 0x1F);
        assert_eq!(Word::KNOWN_MASK, 0xFF00_003F);
        assert_eq!(Word::from_raw(0x0000_0040).unknown_bits(), 0x40);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn builder_rejects_wide_value() {
        let _ = Word::default().with_b(0x20);
    }

    #[test]
    fn full_width_mask() {
        assert_eq!(mask(31, 0), u32::MAX);
        assert_eq!(get(0xDEAD_BEEF, 31, 0), 0xDEAD_BEEF);
        assert!(!fits(2, 0, 0));
    }
}
