//! The declared effects of the kernels of the models whose layers carry sequence state: module
//! `lfm2` and module `qwen35`, re-exported by [`crate::effects`]. Their state arguments are
//! `ReadWrite`: each kernel rewrites its state in place.

#[allow(clippy::wildcard_imports)]
use super::*;

// Module `lfm2`.

/// Channels a short-convolution launch handles (dim 4): `min(dim, grid_size_x)`.
const CHANNELS: Extent = Min(&Arg(4), &GridSizeX);
/// Bytes of the state rows of the handled channels (d_conv 5): `4 * channels * d_conv`.
const CONV_STATE: Extent = Mul(&Mul(&Const(4), &CHANNELS), &Arg(5));
/// Bytes of the taps of the handled channels: `4 * channels * (d_conv + 1)`.
const CONV_TAPS: Extent = Mul(&Mul(&Const(4), &CHANNELS), &Add(&Arg(5), &Const(1)));

/// `shortconv` (dim 4, d_conv 5): writes `out` (`4 * channels` bytes, `channels = min(dim,
/// grid_size_x)`), reads and rewrites the handled channels' state rows in place
/// (`4 * channels * d_conv`), reads their taps (`4 * channels * (d_conv + 1)`) and `bcx` from its
/// start to the end of the x third's handled channels, `4 * (2 * dim + channels)` (exactly the
/// three thirds when the grid covers every channel).
pub static SHORTCONV: EffectsDecl = EffectsDecl {
    kernel: "shortconv",
    args: signature::SHORTCONV.explicit_args,
    effects: &[
        effect(0, signature::shortconv::OUT, Write, Mul(&Const(4), &CHANNELS)),
        effect(1, signature::shortconv::STATE, ReadWrite, CONV_STATE),
        effect(2, signature::shortconv::BCX, Read, Mul(&Const(4), &Add(&Mul(&Const(2), &Arg(4)), &CHANNELS))),
        effect(3, signature::shortconv::WEIGHT, Read, CONV_TAPS),
    ],
};

/// `shortconv_rows` (dim 4, d_conv 5, n 6): as [`SHORTCONV`] over `n` tokens: writes `out`'s
/// `n` rows (`4 * n * dim` bytes: conservative when the grid leaves channels out), reads `bcx`'s
/// `n` rows (`4 * n * 3 * dim`, as conservative), and the state and taps as [`SHORTCONV`].
pub static SHORTCONV_ROWS: EffectsDecl = EffectsDecl {
    kernel: "shortconv_rows",
    args: signature::SHORTCONV_ROWS.explicit_args,
    effects: &[
        effect(0, signature::shortconv::OUT, Write, Mul(&Mul(&Const(4), &Arg(6)), &Arg(4))),
        effect(1, signature::shortconv::STATE, ReadWrite, CONV_STATE),
        effect(2, signature::shortconv::BCX, Read, Mul(&Mul(&Const(12), &Arg(6)), &Arg(4))),
        effect(3, signature::shortconv::WEIGHT, Read, CONV_TAPS),
    ],
};

// Module `qwen35`.

/// `ssm_conv_silu` (channels 4, history 5, n 6): writes `out` and reads `x`, `4 * n * channels`
/// bytes each; reads and writes the state, `4 * channels * history` bytes; reads the weights,
/// `4 * (channels * history + channels)` bytes. Independent of the grid (conservative when it
/// stops short of `channels`: the channels past it are not touched).
pub static SSM_CONV_SILU: EffectsDecl = EffectsDecl {
    kernel: "ssm_conv_silu",
    args: signature::SSM_CONV_SILU.explicit_args,
    effects: &[
        effect(0, signature::ssm_conv_silu::OUT, Write, Mul(&Const(4), &Mul(&Arg(6), &Arg(4)))),
        effect(1, signature::ssm_conv_silu::STATE, ReadWrite, Mul(&Const(4), &Mul(&Arg(4), &Arg(5)))),
        effect(2, signature::ssm_conv_silu::X, Read, Mul(&Const(4), &Mul(&Arg(6), &Arg(4)))),
        effect(3, signature::ssm_conv_silu::WEIGHT, Read, Mul(&Const(4), &Add(&Mul(&Arg(4), &Arg(5)), &Arg(4)))),
    ],
};

/// `n * v_heads` (v_heads 7, n 10 of `gated_delta_net`): the alpha and beta values.
const DELTA_GATES: Extent = Mul(&Arg(10), &Arg(7));

/// `gated_delta_net` (v_heads 7, k_heads 8, head_dim 9, n 10): writes `out`,
/// `4 * n * v_heads * head_dim` bytes; reads and writes the state, `4 * v_heads * head_dim *
/// head_dim` bytes; reads `qkv`, `4 * n * (2 * k_heads + v_heads) * head_dim` bytes, `alpha` and
/// `beta`, `4 * n * v_heads` bytes each, `dt_bias` and `ssm_a`, `4 * v_heads` bytes each.
/// Independent of the grid (conservative when it stops short of `v_heads * head_dim`).
pub static GATED_DELTA_NET: EffectsDecl = EffectsDecl {
    kernel: "gated_delta_net",
    args: signature::GATED_DELTA_NET.explicit_args,
    effects: &[
        effect(0, signature::gated_delta_net::OUT, Write, Mul(&Mul(&Const(4), &DELTA_GATES), &Arg(9))),
        effect(1, signature::gated_delta_net::STATE, ReadWrite, Mul(&Mul(&Const(4), &Arg(7)), &Mul(&Arg(9), &Arg(9)))),
        effect(
            2,
            signature::gated_delta_net::QKV,
            Read,
            Mul(&Mul(&Const(4), &Arg(10)), &Mul(&Add(&Mul(&Const(2), &Arg(8)), &Arg(7)), &Arg(9))),
        ),
        effect(3, signature::gated_delta_net::ALPHA, Read, Mul(&Const(4), &DELTA_GATES)),
        effect(4, signature::gated_delta_net::BETA, Read, Mul(&Const(4), &DELTA_GATES)),
        effect(5, signature::gated_delta_net::DT_BIAS, Read, Mul(&Const(4), &Arg(7))),
        effect(6, signature::gated_delta_net::SSM_A, Read, Mul(&Const(4), &Arg(7))),
    ],
};

/// `half * rows` (half 3, rows 4 of `split_halves`).
const SPLIT_ITEMS: Extent = Mul(&Arg(3), &Arg(4));
/// The work-items of `split_halves` that copy: `min(half * rows, grid_size_x)`.
const SPLIT_ACTIVE: Extent = Min(&SPLIT_ITEMS, &GridSizeX);

/// `split_halves` (half 3, rows 4): writes `a` and `b`, `4 * min(half * rows, grid_size_x)` bytes
/// each; reads `src` below `min(2 * half * rows, 2 * active + half)` elements (`active` the copying
/// work-items: item `i` reads elements `2 * half * (i / half) + i % half` and that plus `half`,
/// below `2 * i + half + 1`; exactly the rows when the grid covers them).
pub static SPLIT_HALVES: EffectsDecl = EffectsDecl {
    kernel: "split_halves",
    args: signature::SPLIT_HALVES.explicit_args,
    effects: &[
        effect(0, signature::split_halves::A, Write, Mul(&Const(4), &SPLIT_ACTIVE)),
        effect(1, signature::split_halves::B, Write, Mul(&Const(4), &SPLIT_ACTIVE)),
        effect(
            2,
            signature::split_halves::SRC,
            Read,
            Mul(&Const(4), &Min(&Mul(&Const(2), &SPLIT_ITEMS), &Add(&Mul(&Const(2), &SPLIT_ACTIVE), &Arg(3)))),
        ),
    ],
};

/// Heads `rope_partial` rotates in (heads 3, rot 5, n 6): `min(n * heads, min(n * heads *
/// (rot / 2), grid_size_x))` (pair `p` lies in head `p / (rot / 2) <= p`).
const PARTIAL_HEADS: Extent =
    Min(&Mul(&Arg(6), &Arg(3)), &Min(&Mul(&Mul(&Arg(6), &Arg(3)), &Div(&Arg(5), 2)), &GridSizeX));

/// `rope_partial` (pos0 2, heads 3, head_dim 4, rot 5, n 6): reads and writes `x` over the heads
/// it rotates in, `4 * head_dim` bytes each (the pass-through elements included: conservative);
/// reads the table from its start to the end of row `pos0 + n - 1`, `8 * (pos0 + n) * (rot / 2)`
/// bytes (conservative: the rows before `pos0` are not read).
pub static ROPE_PARTIAL: EffectsDecl = EffectsDecl {
    kernel: "rope_partial",
    args: signature::ROPE_PARTIAL.explicit_args,
    effects: &[
        effect(0, signature::rope_partial::X, ReadWrite, Mul(&Mul(&Const(4), &Arg(4)), &PARTIAL_HEADS)),
        effect(1, signature::rope_partial::TABLE, Read, Mul(&Const(8), &Mul(&Add(&Arg(2), &Arg(6)), &Div(&Arg(5), 2)))),
    ],
};

/// `sigmoid_mul`: reads `gate` and `up`, writes `out`, `4 * min(n, grid_size_x)` bytes each.
pub static SIGMOID_MUL: EffectsDecl = EffectsDecl {
    kernel: "sigmoid_mul",
    args: signature::SIGMOID_MUL.explicit_args,
    effects: &[
        effect(0, signature::silu_mul::OUT, Write, PER_ITEM_N3),
        effect(1, signature::silu_mul::GATE, Read, PER_ITEM_N3),
        effect(2, signature::silu_mul::UP, Read, PER_ITEM_N3),
    ],
};
