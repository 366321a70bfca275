//! Declared resource effects: for every kernel, which pointer arguments it reads and writes and
//! how many bytes from each, as data the soft device's hazard model and the tape's dependency
//! derivation can inspect without running anything.
//!
//! An extent is a small expression ([`Extent`]) over the kernel's `u32` arguments and the launch
//! geometry; [`crate::resolve::resolve`] evaluates it for one launch into byte ranges (the
//! soft device does, before it runs a kernel's CPU reference). Every declared range contains
//! everything the CPU reference (and the GPU kernel) may touch through that argument;
//! `kernel-refs/tests/effects_cover.rs` checks this on recorded accesses.

use std::fmt;

use crate::signature::{self, ArgDecl};
use Access::{Read, ReadWrite, Write};
use Extent::{Add, Arg, Const, Div, GridSizeX, Min, Mul, WorkgroupCountX};

/// How a kernel uses a buffer: the tape's own access kind, so resolved effects go into launch
/// records unchanged.
pub use tape_core::Access;

/// A byte count as an expression over a kernel's scalar arguments and the launch geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extent {
    /// A constant.
    Const(u64),
    /// The explicit `u32` argument with this index.
    Arg(usize),
    /// `grid_size[0]`, in work-items.
    GridSizeX,
    /// `workgroup_size[0]`.
    WorkgroupSizeX,
    /// `ceil(grid_size[0] / workgroup_size[0])`.
    WorkgroupCountX,
    /// The product.
    Mul(&'static Extent, &'static Extent),
    /// The smaller of the two.
    Min(&'static Extent, &'static Extent),
    /// The sum: a range that ends past a computed offset (a cache row at `pos * width`).
    Add(&'static Extent, &'static Extent),
    /// The quotient rounded down by a constant: a count of 32-element blocks or of element pairs.
    /// A divisor of 0 makes the extent unresolvable ([`crate::resolve::ResolveError::ExtentOverflow`]).
    Div(&'static Extent, u64),
}

/// One effect: an access to the buffer one pointer argument points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EffectDecl {
    /// Index of the pointer argument among the explicit arguments.
    pub arg_index: usize,
    /// Its name.
    pub arg_name: &'static str,
    /// How the kernel uses the buffer.
    pub access: Access,
    /// Bytes from the pointer on that the kernel may touch.
    pub bytes: Extent,
}

/// A kernel's effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EffectsDecl {
    /// The kernel.
    pub kernel: &'static str,
    /// Its explicit arguments, which [`Extent::Arg`] and [`EffectDecl::arg_index`] index.
    pub args: &'static [ArgDecl],
    /// One entry per pointer argument.
    pub effects: &'static [EffectDecl],
}

impl Extent {
    /// The expression written out with the argument names of `args`, e.g. `4 * min(n, grid_size_x)`.
    #[must_use]
    pub fn display<'a>(&'a self, args: &'a [ArgDecl]) -> impl fmt::Display + 'a {
        ExtentDisplay { extent: self, args }
    }
}

struct ExtentDisplay<'a> {
    extent: &'a Extent,
    args: &'a [ArgDecl],
}

impl fmt::Display for ExtentDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sub = |extent| ExtentDisplay { extent, args: self.args };
        match *self.extent {
            Extent::Const(v) => write!(f, "{v}"),
            Extent::Arg(i) => match self.args.get(i) {
                Some(a) => f.write_str(a.name),
                None => write!(f, "arg{i}"),
            },
            Extent::GridSizeX => f.write_str("grid_size_x"),
            Extent::WorkgroupSizeX => f.write_str("workgroup_size_x"),
            Extent::WorkgroupCountX => f.write_str("number_of_workgroups_x"),
            Extent::Mul(a, b) => write!(f, "{} * {}", sub(a), sub(b)),
            Extent::Min(a, b) => write!(f, "min({}, {})", sub(a), sub(b)),
            Extent::Add(a, b) => write!(f, "({} + {})", sub(a), sub(b)),
            Extent::Div(a, d) => write!(f, "floor({} / {d})", sub(a)),
        }
    }
}

/// `4 * min(n, grid_size_x)` for `n` at argument index 2: one `f32` per work-item whose global
/// id is below `n`.
const PER_ITEM_N2: Extent = Mul(&Const(4), &Min(&Arg(2), &GridSizeX));
/// [`PER_ITEM_N2`] for `n` at argument index 3.
const PER_ITEM_N3: Extent = Mul(&Const(4), &Min(&Arg(3), &GridSizeX));

const fn effect(arg_index: usize, arg: ArgDecl, access: Access, bytes: Extent) -> EffectDecl {
    EffectDecl { arg_index, arg_name: arg.name, access, bytes }
}

/// `fill`: writes `out[0, 4 * min(n, grid_size_x))`.
pub static FILL: EffectsDecl = EffectsDecl {
    kernel: "fill",
    args: signature::FILL.explicit_args,
    effects: &[effect(0, signature::fill::OUT, Write, PER_ITEM_N2)],
};

/// `copy`: reads `src` and writes `dst`, `4 * min(n, grid_size_x)` bytes each.
pub static COPY: EffectsDecl = EffectsDecl {
    kernel: "copy",
    args: signature::COPY.explicit_args,
    effects: &[effect(0, signature::copy::DST, Write, PER_ITEM_N2), effect(1, signature::copy::SRC, Read, PER_ITEM_N2)],
};

/// `axpy`: reads and writes `y`, reads `x`, `4 * min(n, grid_size_x)` bytes each.
pub static AXPY: EffectsDecl = EffectsDecl {
    kernel: "axpy",
    args: signature::AXPY.explicit_args,
    effects: &[effect(0, signature::axpy::Y, ReadWrite, PER_ITEM_N3), effect(1, signature::axpy::X, Read, PER_ITEM_N3)],
};

const BINARY: &[EffectDecl] = &[
    effect(0, signature::binary::OUT, Write, PER_ITEM_N3),
    effect(1, signature::binary::A, Read, PER_ITEM_N3),
    effect(2, signature::binary::B, Read, PER_ITEM_N3),
];

/// `add`: reads `a` and `b`, writes `out`, `4 * min(n, grid_size_x)` bytes each.
pub static ADD: EffectsDecl = EffectsDecl { kernel: "add", args: signature::ADD.explicit_args, effects: BINARY };

/// `mul`: reads `a` and `b`, writes `out`, `4 * min(n, grid_size_x)` bytes each.
pub static MUL: EffectsDecl = EffectsDecl { kernel: "mul", args: signature::MUL.explicit_args, effects: BINARY };

/// `scale`: reads `x`, writes `out`, `4 * min(n, grid_size_x)` bytes each.
pub static SCALE: EffectsDecl = EffectsDecl {
    kernel: "scale",
    args: signature::SCALE.explicit_args,
    effects: &[effect(0, signature::scale::OUT, Write, PER_ITEM_N3), effect(1, signature::scale::X, Read, PER_ITEM_N3)],
};

/// `matvec` (rows 3, cols 4): writes `y[0, 4 * min(rows, grid_size_x))`, reads that many rows of
/// `a` and `4 * cols` bytes of `x`.
pub static MATVEC: EffectsDecl = EffectsDecl {
    kernel: "matvec",
    args: signature::MATVEC.explicit_args,
    effects: &[
        effect(0, signature::matvec::Y, Write, Mul(&Const(4), &Min(&Arg(3), &GridSizeX))),
        effect(1, signature::matvec::A, Read, Mul(&Mul(&Const(4), &Min(&Arg(3), &GridSizeX)), &Arg(4))),
        effect(2, signature::matvec::X, Read, Mul(&Const(4), &Arg(4))),
    ],
};

/// `block_sum`: writes one `f32` per work-group to `out`, reads `4 * min(n, grid_size_x)` bytes
/// of `x`.
pub static BLOCK_SUM: EffectsDecl = EffectsDecl {
    kernel: "block_sum",
    args: signature::BLOCK_SUM.explicit_args,
    effects: &[
        effect(0, signature::block_sum::OUT, Write, Mul(&Const(4), &WorkgroupCountX)),
        effect(1, signature::block_sum::X, Read, PER_ITEM_N2),
    ],
};

/// `rmsnorm` (rows 3, cols 4): one row per work-group, so `min(rows, number_of_workgroups_x)`
/// rows of `x` read and of `out` written, and `4 * cols` bytes of `weight` read.
pub static RMSNORM: EffectsDecl = EffectsDecl {
    kernel: "rmsnorm",
    args: signature::RMSNORM.explicit_args,
    effects: &[
        effect(0, signature::rmsnorm::OUT, Write, Mul(&Mul(&Const(4), &Min(&Arg(3), &WorkgroupCountX)), &Arg(4))),
        effect(1, signature::rmsnorm::X, Read, Mul(&Mul(&Const(4), &Min(&Arg(3), &WorkgroupCountX)), &Arg(4))),
        effect(2, signature::rmsnorm::WEIGHT, Read, Mul(&Const(4), &Arg(4))),
    ],
};

/// Rows a one-row-per-work-group kernel handles: `min(rows, number_of_workgroups_x)` for `rows`
/// at argument index 3.
const GROUP_ROWS3: Extent = Min(&Arg(3), &WorkgroupCountX);
/// Bytes of one row of a quantised matrix of `cols` (argument 4) columns: `cols / 32` blocks of
/// 20 (Q4_1) or 34 (Q8_0) bytes.
const Q4_1_ROW: Extent = Mul(&Div(&Arg(4), 32), &Const(20));
const Q8_0_ROW: Extent = Mul(&Div(&Arg(4), 32), &Const(34));

/// `matvec_q4_1` (rows 3, cols 4): one row per work-group, so `4 * min(rows,
/// number_of_workgroups_x)` bytes of `y` written, that many rows of `cols / 32` 20-byte blocks of
/// `w` read, and `4 * cols` bytes of `x`.
pub static MATVEC_Q4_1: EffectsDecl = EffectsDecl {
    kernel: "matvec_q4_1",
    args: signature::MATVEC_Q4_1.explicit_args,
    effects: &[
        effect(0, signature::matvec_q::Y, Write, Mul(&Const(4), &GROUP_ROWS3)),
        effect(1, signature::matvec_q::W, Read, Mul(&GROUP_ROWS3, &Q4_1_ROW)),
        effect(2, signature::matvec_q::X, Read, Mul(&Const(4), &Arg(4))),
    ],
};

/// `matvec_q8_0`: as [`MATVEC_Q4_1`] with 34-byte blocks.
pub static MATVEC_Q8_0: EffectsDecl = EffectsDecl {
    kernel: "matvec_q8_0",
    args: signature::MATVEC_Q8_0.explicit_args,
    effects: &[
        effect(0, signature::matvec_q::Y, Write, Mul(&Const(4), &GROUP_ROWS3)),
        effect(1, signature::matvec_q::W, Read, Mul(&GROUP_ROWS3, &Q8_0_ROW)),
        effect(2, signature::matvec_q::X, Read, Mul(&Const(4), &Arg(4))),
    ],
};

/// `get_row_q8_0` (cols 3, rows 4): writes `out[0, 4 * min(cols, grid_size_x))`, reads the 4-byte
/// token id and, conservatively, the whole table (the row read depends on the token id, which is
/// data): `rows * (cols / 32) * 34` bytes.
pub static GET_ROW_Q8_0: EffectsDecl = EffectsDecl {
    kernel: "get_row_q8_0",
    args: signature::GET_ROW_Q8_0.explicit_args,
    effects: &[
        effect(0, signature::get_row_q8_0::OUT, Write, PER_ITEM_N3),
        effect(1, signature::get_row_q8_0::TABLE, Read, Mul(&Arg(4), &Mul(&Div(&Arg(3), 32), &Const(34)))),
        effect(2, signature::get_row_q8_0::TOKEN, Read, Const(4)),
    ],
};

/// Rotated pairs of `rope` (heads 3, head_dim 4) and `rope_store` (heads 4, head_dim 5):
/// `min(heads * (head_dim / 2), grid_size_x)`.
const ROPE_PAIRS: Extent = Min(&Mul(&Arg(3), &Div(&Arg(4), 2)), &GridSizeX);
const ROPE_STORE_PAIRS: Extent = Min(&Mul(&Arg(4), &Div(&Arg(5), 2)), &GridSizeX);

/// `rope` (pos 2, heads 3, head_dim 4): reads and writes 8 bytes of `x` per rotated pair; reads
/// the `(cos, sin)` rows of positions `0..=pos` of `table` (conservative: only row `pos` is
/// read, and an extent starts at the pointer).
pub static ROPE: EffectsDecl = EffectsDecl {
    kernel: "rope",
    args: signature::ROPE.explicit_args,
    effects: &[
        effect(0, signature::rope::X, ReadWrite, Mul(&Const(8), &ROPE_PAIRS)),
        effect(1, signature::rope::TABLE, Read, Mul(&Const(8), &Mul(&Add(&Arg(2), &Const(1)), &Div(&Arg(4), 2)))),
    ],
};

/// `rope_store` (pos 3, heads 4, head_dim 5): writes the cache from its start to the end of the
/// pairs written in row `pos` (conservative: rows before `pos` are untouched), reads 8 bytes of
/// `src` per pair and the table as [`ROPE`] does.
pub static ROPE_STORE: EffectsDecl = EffectsDecl {
    kernel: "rope_store",
    args: signature::ROPE_STORE.explicit_args,
    effects: &[
        effect(
            0,
            signature::rope_store::CACHE,
            Write,
            Add(&Mul(&Const(4), &Mul(&Arg(3), &Mul(&Arg(4), &Arg(5)))), &Mul(&Const(8), &ROPE_STORE_PAIRS)),
        ),
        effect(1, signature::rope_store::SRC, Read, Mul(&Const(8), &ROPE_STORE_PAIRS)),
        effect(2, signature::rope_store::TABLE, Read, Mul(&Const(8), &Mul(&Add(&Arg(3), &Const(1)), &Div(&Arg(5), 2)))),
    ],
};

/// `kv_store` (pos 2, width 3): writes the cache up to `4 * (pos * width + min(width,
/// grid_size_x))` (conservative: rows before `pos` are untouched), reads `4 * min(width,
/// grid_size_x)` bytes of `src`.
pub static KV_STORE: EffectsDecl = EffectsDecl {
    kernel: "kv_store",
    args: signature::KV_STORE.explicit_args,
    effects: &[
        effect(
            0,
            signature::kv_store::CACHE,
            Write,
            Mul(&Const(4), &Add(&Mul(&Arg(2), &Arg(3)), &Min(&Arg(3), &GridSizeX))),
        ),
        effect(1, signature::kv_store::SRC, Read, PER_ITEM_N3),
    ],
};

/// Query heads `attention` handles (heads 6): `min(heads, number_of_workgroups_x)`.
const ATTENTION_HEADS: Extent = Min(&Arg(6), &WorkgroupCountX);
/// Bytes of one cache tensor (n 5, kv_heads 7, head_dim 8): `4 * n * kv_heads * head_dim`.
const ATTENTION_CACHE: Extent = Mul(&Mul(&Const(4), &Arg(5)), &Mul(&Arg(7), &Arg(8)));

/// `attention` (n 5, heads 6, kv_heads 7, head_dim 8, scores_stride 9): per handled head, writes
/// `out` and reads `q` (`4 * head_dim` bytes each) and reads and writes a `scores` row (`4 *
/// scores_stride` bytes: conservative, only `n` are touched); reads the first `n` positions of
/// both caches.
pub static ATTENTION: EffectsDecl = EffectsDecl {
    kernel: "attention",
    args: signature::ATTENTION.explicit_args,
    effects: &[
        effect(0, signature::attention::OUT, Write, Mul(&Mul(&Const(4), &ATTENTION_HEADS), &Arg(8))),
        effect(1, signature::attention::Q, Read, Mul(&Mul(&Const(4), &ATTENTION_HEADS), &Arg(8))),
        effect(2, signature::attention::K_CACHE, Read, ATTENTION_CACHE),
        effect(3, signature::attention::V_CACHE, Read, ATTENTION_CACHE),
        effect(4, signature::attention::SCORES, ReadWrite, Mul(&Mul(&Const(4), &ATTENTION_HEADS), &Arg(9))),
    ],
};

/// `silu_mul`: reads `gate` and `up`, writes `out`, `4 * min(n, grid_size_x)` bytes each.
pub static SILU_MUL: EffectsDecl = EffectsDecl {
    kernel: "silu_mul",
    args: signature::SILU_MUL.explicit_args,
    effects: &[
        effect(0, signature::silu_mul::OUT, Write, PER_ITEM_N3),
        effect(1, signature::silu_mul::GATE, Read, PER_ITEM_N3),
        effect(2, signature::silu_mul::UP, Read, PER_ITEM_N3),
    ],
};

/// Bytes of `n` (argument 5) rows of `rows` (argument 3) or `cols` (argument 4) floats: the
/// token-major operands of `matmul_q4_1` and `matmul_q8_0`.
const MATMUL_Y: Extent = Mul(&Mul(&Const(4), &Arg(5)), &Arg(3));
const MATMUL_X: Extent = Mul(&Mul(&Const(4), &Arg(5)), &Arg(4));

/// `matmul_q4_1` (rows 3, cols 4, n 5): writes `y[t][r]` for `t < n`, declared as all `4 * n *
/// rows` bytes (conservative when the grid has fewer work-groups than rows: every token's row is
/// then cut short); reads `min(rows, number_of_workgroups_x)` rows of `cols / 32` 20-byte
/// blocks of `w` and `4 * n * cols` bytes of `x`.
pub static MATMUL_Q4_1: EffectsDecl = EffectsDecl {
    kernel: "matmul_q4_1",
    args: signature::MATMUL_Q4_1.explicit_args,
    effects: &[
        effect(0, signature::matmul_q::Y, Write, MATMUL_Y),
        effect(1, signature::matmul_q::W, Read, Mul(&GROUP_ROWS3, &Q4_1_ROW)),
        effect(2, signature::matmul_q::X, Read, MATMUL_X),
    ],
};

/// `matmul_q8_0`: as [`MATMUL_Q4_1`] with 34-byte blocks.
pub static MATMUL_Q8_0: EffectsDecl = EffectsDecl {
    kernel: "matmul_q8_0",
    args: signature::MATMUL_Q8_0.explicit_args,
    effects: &[
        effect(0, signature::matmul_q::Y, Write, MATMUL_Y),
        effect(1, signature::matmul_q::W, Read, Mul(&GROUP_ROWS3, &Q8_0_ROW)),
        effect(2, signature::matmul_q::X, Read, MATMUL_X),
    ],
};

/// `get_rows_q8_0` (cols 3, rows 4, n 5): writes `out[0, 4 * min(n * cols, grid_size_x))`; reads
/// `4 * n` bytes of `tokens` (conservative when the grid ends before the last row) and,
/// conservatively, the whole table (the rows read are data): `rows * (cols / 32) * 34` bytes.
pub static GET_ROWS_Q8_0: EffectsDecl = EffectsDecl {
    kernel: "get_rows_q8_0",
    args: signature::GET_ROWS_Q8_0.explicit_args,
    effects: &[
        effect(0, signature::get_rows_q8_0::OUT, Write, Mul(&Const(4), &Min(&Mul(&Arg(5), &Arg(3)), &GridSizeX))),
        effect(1, signature::get_rows_q8_0::TABLE, Read, Mul(&Arg(4), &Mul(&Div(&Arg(3), 32), &Const(34)))),
        effect(2, signature::get_rows_q8_0::TOKENS, Read, Mul(&Const(4), &Arg(5))),
    ],
};

/// `rope_rows` (pos0 2, heads 3, head_dim 4, n 5): reads and writes 8 bytes of `x` per rotated
/// pair, `min(n * heads * (head_dim / 2), grid_size_x)` pairs; reads the `(cos, sin)` rows of
/// positions `0..pos0 + n` of `table` (conservative: rows before `pos0` are not read).
pub static ROPE_ROWS: EffectsDecl = EffectsDecl {
    kernel: "rope_rows",
    args: signature::ROPE_ROWS.explicit_args,
    effects: &[
        effect(
            0,
            signature::rope_rows::X,
            ReadWrite,
            Mul(&Const(8), &Min(&Mul(&Arg(5), &Mul(&Arg(3), &Div(&Arg(4), 2))), &GridSizeX)),
        ),
        effect(1, signature::rope_rows::TABLE, Read, Mul(&Const(8), &Mul(&Add(&Arg(2), &Arg(5)), &Div(&Arg(4), 2)))),
    ],
};

/// (row, head) work-groups `attention_rows` runs (n 6, heads 7): `min(n * heads,
/// number_of_workgroups_x)`.
const ATTENTION_ROWS_GROUPS: Extent = Min(&Mul(&Arg(6), &Arg(7)), &WorkgroupCountX);
/// Bytes of one cache tensor up to the last row's position (pos0 5, n 6, kv_heads 8,
/// head_dim 9): `4 * (pos0 + n) * kv_heads * head_dim`.
const ATTENTION_ROWS_CACHE: Extent = Mul(&Mul(&Const(4), &Add(&Arg(5), &Arg(6))), &Mul(&Arg(8), &Arg(9)));

/// `attention_rows` (pos0 5, n 6, heads 7, kv_heads 8, head_dim 9, scores_stride 10): per
/// (row, head) work-group, writes `out` and reads `q` (`4 * head_dim` bytes each) and reads and
/// writes a `scores` row (`4 * scores_stride` bytes: conservative, row `t` touches
/// `pos0 + t + 1`); reads positions `0..pos0 + n` of both caches.
pub static ATTENTION_ROWS: EffectsDecl = EffectsDecl {
    kernel: "attention_rows",
    args: signature::ATTENTION_ROWS.explicit_args,
    effects: &[
        effect(0, signature::attention_rows::OUT, Write, Mul(&Mul(&Const(4), &ATTENTION_ROWS_GROUPS), &Arg(9))),
        effect(1, signature::attention_rows::Q, Read, Mul(&Mul(&Const(4), &ATTENTION_ROWS_GROUPS), &Arg(9))),
        effect(2, signature::attention_rows::K_CACHE, Read, ATTENTION_ROWS_CACHE),
        effect(3, signature::attention_rows::V_CACHE, Read, ATTENTION_ROWS_CACHE),
        effect(4, signature::attention_rows::SCORES, ReadWrite, Mul(&Mul(&Const(4), &ATTENTION_ROWS_GROUPS), &Arg(10))),
    ],
};

/// The effects of module `ggml_quants`'s products, for a block format of `$values` values in
/// `$bytes` bytes a block, so that a row of `cols` values is `cols / $values * $bytes` bytes:
/// - `matvec_<t>` (rows 3, cols 4): as [`MATVEC_Q4_1`], `min(rows, number_of_workgroups_x)`
///   rows of `w` read;
/// - `matmul_<t>` (rows 3, cols 4, n 5): as [`MATMUL_Q4_1`].
macro_rules! ggml_product_effects {
    ($($matvec:ident $matmul:ident = $values:literal, $bytes:literal;)*) => {$(
        #[doc = concat!("`", stringify!($matvec), "`'s effects: as [`MATVEC_Q4_1`] with rows of `cols / ", $values, "` blocks of ", $bytes, " bytes.")]
        pub static $matvec: EffectsDecl = EffectsDecl {
            kernel: signature::$matvec.name,
            args: signature::$matvec.explicit_args,
            effects: &[
                effect(0, signature::matvec_q::Y, Write, Mul(&Const(4), &GROUP_ROWS3)),
                effect(1, signature::matvec_q::W, Read, Mul(&GROUP_ROWS3, &Mul(&Div(&Arg(4), $values), &Const($bytes)))),
                effect(2, signature::matvec_q::X, Read, Mul(&Const(4), &Arg(4))),
            ],
        };
        #[doc = concat!("`", stringify!($matmul), "`'s effects: as [`MATMUL_Q4_1`] with rows of `cols / ", $values, "` blocks of ", $bytes, " bytes.")]
        pub static $matmul: EffectsDecl = EffectsDecl {
            kernel: signature::$matmul.name,
            args: signature::$matmul.explicit_args,
            effects: &[
                effect(0, signature::matmul_q::Y, Write, MATMUL_Y),
                effect(1, signature::matmul_q::W, Read, Mul(&GROUP_ROWS3, &Mul(&Div(&Arg(4), $values), &Const($bytes)))),
                effect(2, signature::matmul_q::X, Read, MATMUL_X),
            ],
        };
    )*};
}

/// The effects of module `ggml_quants`'s row gathers, as [`GET_ROW_Q8_0`] and [`GET_ROWS_Q8_0`]
/// with a table of `rows` rows of `cols / $values` blocks of `$bytes` bytes (read whole,
/// conservatively: the rows read are data).
macro_rules! ggml_gather_effects {
    ($($get_row:ident $get_rows:ident = $values:literal, $bytes:literal;)*) => {$(
        #[doc = concat!("`", stringify!($get_row), "`'s effects: as [`GET_ROW_Q8_0`] with rows of `cols / ", $values, "` blocks of ", $bytes, " bytes.")]
        pub static $get_row: EffectsDecl = EffectsDecl {
            kernel: signature::$get_row.name,
            args: signature::$get_row.explicit_args,
            effects: &[
                effect(0, signature::get_row_q8_0::OUT, Write, PER_ITEM_N3),
                effect(1, signature::get_row_q8_0::TABLE, Read, Mul(&Arg(4), &Mul(&Div(&Arg(3), $values), &Const($bytes)))),
                effect(2, signature::get_row_q8_0::TOKEN, Read, Const(4)),
            ],
        };
        #[doc = concat!("`", stringify!($get_rows), "`'s effects: as [`GET_ROWS_Q8_0`] with rows of `cols / ", $values, "` blocks of ", $bytes, " bytes.")]
        pub static $get_rows: EffectsDecl = EffectsDecl {
            kernel: signature::$get_rows.name,
            args: signature::$get_rows.explicit_args,
            effects: &[
                effect(0, signature::get_rows_q8_0::OUT, Write, Mul(&Const(4), &Min(&Mul(&Arg(5), &Arg(3)), &GridSizeX))),
                effect(1, signature::get_rows_q8_0::TABLE, Read, Mul(&Arg(4), &Mul(&Div(&Arg(3), $values), &Const($bytes)))),
                effect(2, signature::get_rows_q8_0::TOKENS, Read, Mul(&Const(4), &Arg(5))),
            ],
        };
    )*};
}

// Block sizes as in `hip/ggml_formats.h` (ggml-common.h's structs; F16 and BF16 in blocks of 32).
ggml_product_effects! {
    MATVEC_Q4_0 MATMUL_Q4_0 = 32, 18;
    MATVEC_Q5_0 MATMUL_Q5_0 = 32, 22;
    MATVEC_Q5_1 MATMUL_Q5_1 = 32, 24;
    MATVEC_Q2_K MATMUL_Q2_K = 256, 84;
    MATVEC_Q3_K MATMUL_Q3_K = 256, 110;
    MATVEC_Q4_K MATMUL_Q4_K = 256, 144;
    MATVEC_Q5_K MATMUL_Q5_K = 256, 176;
    MATVEC_Q6_K MATMUL_Q6_K = 256, 210;
    MATVEC_F16 MATMUL_F16 = 32, 64;
    MATVEC_BF16 MATMUL_BF16 = 32, 64;
}

ggml_gather_effects! {
    GET_ROW_Q4_0 GET_ROWS_Q4_0 = 32, 18;
    GET_ROW_Q4_1 GET_ROWS_Q4_1 = 32, 20;
    GET_ROW_Q5_0 GET_ROWS_Q5_0 = 32, 22;
    GET_ROW_Q5_1 GET_ROWS_Q5_1 = 32, 24;
    GET_ROW_Q2_K GET_ROWS_Q2_K = 256, 84;
    GET_ROW_Q3_K GET_ROWS_Q3_K = 256, 110;
    GET_ROW_Q4_K GET_ROWS_Q4_K = 256, 144;
    GET_ROW_Q5_K GET_ROWS_Q5_K = 256, 176;
    GET_ROW_Q6_K GET_ROWS_Q6_K = 256, 210;
    GET_ROW_F16 GET_ROWS_F16 = 32, 64;
    GET_ROW_BF16 GET_ROWS_BF16 = 32, 64;
}
// Module `gemma`.

/// Elements from `x` a NEOX rope launch may touch (heads 3, head_dim 4): pair `p = h * half + i`
/// touches elements `h * head_dim + i` and `h * head_dim + i + half` (`half = head_dim / 2`), so
/// the first `pairs` pairs lie below `min(heads * head_dim, 2 * pairs + half)` (exactly
/// `heads * head_dim` when the grid covers every pair; a grid cut short leaves holes in the last
/// head, which the extent covers).
const NEOX_SPAN: Extent = Min(&Mul(&Arg(3), &Arg(4)), &Add(&Mul(&Const(2), &ROPE_PAIRS), &Div(&Arg(4), 2)));
/// [`NEOX_SPAN`] for `rope_neox_store` (heads 4, head_dim 5).
const NEOX_STORE_SPAN: Extent = Min(&Mul(&Arg(4), &Arg(5)), &Add(&Mul(&Const(2), &ROPE_STORE_PAIRS), &Div(&Arg(5), 2)));
/// Pairs `rope_neox_rows` rotates (heads 3, head_dim 4, n 5): `min(n * heads * (head_dim / 2),
/// grid_size_x)`.
const NEOX_ROWS_PAIRS: Extent = Min(&Mul(&Arg(5), &Mul(&Arg(3), &Div(&Arg(4), 2))), &GridSizeX);
/// [`NEOX_SPAN`] over the `n * heads` heads of `rope_neox_rows`.
const NEOX_ROWS_SPAN: Extent =
    Min(&Mul(&Arg(5), &Mul(&Arg(3), &Arg(4))), &Add(&Mul(&Const(2), &NEOX_ROWS_PAIRS), &Div(&Arg(4), 2)));

/// `rope_neox` (pos 2, heads 3, head_dim 4): reads and writes `x` below `min(heads * head_dim,
/// 2 * pairs + head_dim / 2)` elements, `pairs = min(heads * (head_dim / 2), grid_size_x)` (pair
/// `p = h * half + i` touches elements `h * head_dim + i` and `+ half`: exactly the heads when the
/// grid covers every pair, and the holes a shorter grid leaves in the last head); reads the table
/// as [`ROPE`] does.
pub static ROPE_NEOX: EffectsDecl = EffectsDecl {
    kernel: "rope_neox",
    args: signature::ROPE_NEOX.explicit_args,
    effects: &[
        effect(0, signature::rope::X, ReadWrite, Mul(&Const(4), &NEOX_SPAN)),
        effect(1, signature::rope::TABLE, Read, Mul(&Const(8), &Mul(&Add(&Arg(2), &Const(1)), &Div(&Arg(4), 2)))),
    ],
};

/// `rope_neox_store` (pos 3, heads 4, head_dim 5): writes the cache from its start to the end of
/// the span written in row `pos` (conservative: rows before `pos` are untouched), reads `src`
/// below the span and the table as [`ROPE_STORE`] does.
pub static ROPE_NEOX_STORE: EffectsDecl = EffectsDecl {
    kernel: "rope_neox_store",
    args: signature::ROPE_NEOX_STORE.explicit_args,
    effects: &[
        effect(
            0,
            signature::rope_store::CACHE,
            Write,
            Add(&Mul(&Const(4), &Mul(&Arg(3), &Mul(&Arg(4), &Arg(5)))), &Mul(&Const(4), &NEOX_STORE_SPAN)),
        ),
        effect(1, signature::rope_store::SRC, Read, Mul(&Const(4), &NEOX_STORE_SPAN)),
        effect(2, signature::rope_store::TABLE, Read, Mul(&Const(8), &Mul(&Add(&Arg(3), &Const(1)), &Div(&Arg(5), 2)))),
    ],
};

/// `rope_neox_rows` (pos0 2, heads 3, head_dim 4, n 5): reads and writes `x` below
/// `min(n * heads * head_dim, 2 * pairs + head_dim / 2)` elements, `pairs = min(n * heads *
/// (head_dim / 2), grid_size_x)`, as [`ROPE_NEOX`] over the `n * heads` heads of the rows; reads
/// the table as [`ROPE_ROWS`] does.
pub static ROPE_NEOX_ROWS: EffectsDecl = EffectsDecl {
    kernel: "rope_neox_rows",
    args: signature::ROPE_NEOX_ROWS.explicit_args,
    effects: &[
        effect(0, signature::rope_rows::X, ReadWrite, Mul(&Const(4), &NEOX_ROWS_SPAN)),
        effect(1, signature::rope_rows::TABLE, Read, Mul(&Const(8), &Mul(&Add(&Arg(2), &Arg(5)), &Div(&Arg(4), 2)))),
    ],
};

/// Query heads `attention_window` handles (heads 7): `min(heads, number_of_workgroups_x)`.
const WINDOW_HEADS: Extent = Min(&Arg(7), &WorkgroupCountX);
/// Bytes of one cache tensor up to position `n` (n 6, kv_heads 8, head_dim 9):
/// `4 * n * kv_heads * head_dim`, from the cache's start whatever `first` is.
const WINDOW_CACHE: Extent = Mul(&Mul(&Const(4), &Arg(6)), &Mul(&Arg(8), &Arg(9)));

/// `attention_window` (first 5, n 6, heads 7, kv_heads 8, head_dim 9, scores_stride 10): per
/// handled head, writes `out` and reads `q` (`4 * head_dim` bytes each) and reads and writes a
/// `scores` row (`4 * scores_stride` bytes: conservative, `n - first` are touched); reads the
/// caches from their start to position `n` as [`ATTENTION`] does (conservative: positions before
/// `first` are not read), so that the effects do not depend on `first`.
pub static ATTENTION_WINDOW: EffectsDecl = EffectsDecl {
    kernel: "attention_window",
    args: signature::ATTENTION_WINDOW.explicit_args,
    effects: &[
        effect(0, signature::attention_window::OUT, Write, Mul(&Mul(&Const(4), &WINDOW_HEADS), &Arg(9))),
        effect(1, signature::attention_window::Q, Read, Mul(&Mul(&Const(4), &WINDOW_HEADS), &Arg(9))),
        effect(2, signature::attention_window::K_CACHE, Read, WINDOW_CACHE),
        effect(3, signature::attention_window::V_CACHE, Read, WINDOW_CACHE),
        effect(4, signature::attention_window::SCORES, ReadWrite, Mul(&Mul(&Const(4), &WINDOW_HEADS), &Arg(10))),
    ],
};

/// (row, head) work-groups `attention_window_rows` runs (n 6, heads 8): `min(n * heads,
/// number_of_workgroups_x)`.
const WINDOW_ROWS_GROUPS: Extent = Min(&Mul(&Arg(6), &Arg(8)), &WorkgroupCountX);
/// Bytes of one cache tensor up to the last row's position (pos0 5, n 6, kv_heads 9,
/// head_dim 10): `4 * (pos0 + n) * kv_heads * head_dim`.
const WINDOW_ROWS_CACHE: Extent = Mul(&Mul(&Const(4), &Add(&Arg(5), &Arg(6))), &Mul(&Arg(9), &Arg(10)));

/// `attention_window_rows` (pos0 5, n 6, window 7, heads 8, kv_heads 9, head_dim 10,
/// scores_stride 11): per (row, head) work-group, writes `out` and reads `q` (`4 * head_dim`
/// bytes each) and reads and writes a `scores` row (`4 * scores_stride` bytes: conservative, row
/// `t` touches `min(window, pos0 + t + 1)`); reads the caches from their start to position
/// `pos0 + n` as [`ATTENTION_ROWS`] does (conservative: positions before the first row's window
/// are not read).
pub static ATTENTION_WINDOW_ROWS: EffectsDecl = EffectsDecl {
    kernel: "attention_window_rows",
    args: signature::ATTENTION_WINDOW_ROWS.explicit_args,
    effects: &[
        effect(0, signature::attention_window_rows::OUT, Write, Mul(&Mul(&Const(4), &WINDOW_ROWS_GROUPS), &Arg(10))),
        effect(1, signature::attention_window_rows::Q, Read, Mul(&Mul(&Const(4), &WINDOW_ROWS_GROUPS), &Arg(10))),
        effect(2, signature::attention_window_rows::K_CACHE, Read, WINDOW_ROWS_CACHE),
        effect(3, signature::attention_window_rows::V_CACHE, Read, WINDOW_ROWS_CACHE),
        effect(
            4,
            signature::attention_window_rows::SCORES,
            ReadWrite,
            Mul(&Mul(&Const(4), &WINDOW_ROWS_GROUPS), &Arg(11)),
        ),
    ],
};

/// `gelu_mul`: reads `gate` and `up`, writes `out`, `4 * min(n, grid_size_x)` bytes each.
pub static GELU_MUL: EffectsDecl = EffectsDecl {
    kernel: "gelu_mul",
    args: signature::GELU_MUL.explicit_args,
    effects: &[
        effect(0, signature::silu_mul::OUT, Write, PER_ITEM_N3),
        effect(1, signature::silu_mul::GATE, Read, PER_ITEM_N3),
        effect(2, signature::silu_mul::UP, Read, PER_ITEM_N3),
    ],
};

mod state;
pub use state::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::ArgKind;

    /// Every catalogued kernel's effects: a new kernel is covered once it is catalogued.
    fn all() -> impl Iterator<Item = &'static EffectsDecl> {
        crate::catalog::MODULES.iter().flat_map(|m| m.kernels).map(|k| k.effects)
    }

    fn arg_indices(e: &Extent, out: &mut Vec<usize>) {
        match *e {
            Extent::Arg(i) => out.push(i),
            Extent::Mul(a, b) | Extent::Min(a, b) | Extent::Add(a, b) => {
                arg_indices(a, out);
                arg_indices(b, out);
            }
            Extent::Div(a, d) => {
                assert_ne!(d, 0, "a declared divisor is a non-zero constant");
                arg_indices(a, out);
            }
            _ => {}
        }
    }

    #[test]
    fn declarations_fit_their_signatures() {
        assert!(all().count() >= 17, "every catalogued kernel, the model kernels included");
        for decl in all() {
            let mut pointers: Vec<usize> = decl.effects.iter().map(|e| e.arg_index).collect();
            for e in decl.effects {
                assert_eq!(decl.args[e.arg_index].name, e.arg_name, "{}", decl.kernel);
                assert_eq!(decl.args[e.arg_index].kind, ArgKind::GlobalBuffer, "{}.{}", decl.kernel, e.arg_name);
                let mut scalars = Vec::new();
                arg_indices(&e.bytes, &mut scalars);
                for i in scalars {
                    assert_eq!(decl.args[i].kind, ArgKind::U32, "{}.{} extent", decl.kernel, e.arg_name);
                }
            }
            // Exactly one effect per pointer argument.
            pointers.sort_unstable();
            let expected: Vec<usize> =
                (0..decl.args.len()).filter(|&i| decl.args[i].kind == ArgKind::GlobalBuffer).collect();
            assert_eq!(pointers, expected, "{}", decl.kernel);
        }
    }

    #[test]
    fn extents_display_with_argument_names() {
        let shown: Vec<String> = RMSNORM.effects.iter().map(|e| e.bytes.display(RMSNORM.args).to_string()).collect();
        assert_eq!(
            shown,
            [
                "4 * min(rows, number_of_workgroups_x) * cols",
                "4 * min(rows, number_of_workgroups_x) * cols",
                "4 * cols"
            ]
        );
        assert_eq!(FILL.effects[0].bytes.display(FILL.args).to_string(), "4 * min(n, grid_size_x)");
        assert_eq!(
            MATVEC_Q4_1.effects[1].bytes.display(MATVEC_Q4_1.args).to_string(),
            "min(rows, number_of_workgroups_x) * floor(cols / 32) * 20"
        );
        assert_eq!(
            ROPE_STORE.effects[0].bytes.display(ROPE_STORE.args).to_string(),
            "(4 * pos * heads * head_dim + 8 * min(heads * floor(head_dim / 2), grid_size_x))"
        );
    }
}
