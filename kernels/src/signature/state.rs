//! The signatures of the kernels of the models whose layers carry sequence state: module `lfm2`
//! (LFM2's gated short convolution) and module `qwen35` (Qwen 3.5's gated DeltaNet and gated
//! attention), re-exported by [`crate::signature`].

#[allow(clippy::wildcard_imports)]
use super::*;

// Module `lfm2`: the gated short convolution of LFM2's convolution blocks.

/// `shortconv(float* out, float* state, const float* bcx, const float* weight, u32 dim,
/// u32 d_conv)` and `shortconv_rows(..., u32 n)` (module `lfm2`).
pub mod shortconv {
    use super::ArgDecl;
    /// `float* out`: `dim` floats per token.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `float* state`: one layer's convolution state, `[dim][d_conv]`, rewritten in place.
    pub const STATE: ArgDecl = ArgDecl::global_buffer("state", 8);
    /// `const float* bcx`: the in_proj output, `[3][dim]` per token (B, C, x).
    pub const BCX: ArgDecl = ArgDecl::global_buffer("bcx", 16);
    /// `const float* weight`: the convolution taps, `[dim][d_conv + 1]`, oldest first.
    pub const WEIGHT: ArgDecl = ArgDecl::global_buffer("weight", 24);
    /// `u32 dim`: channels.
    pub const DIM: ArgDecl = ArgDecl::u32("dim", 32);
    /// `u32 d_conv`: previous inputs the convolution reads (`lfm2.shortconv.l_cache - 1`).
    pub const D_CONV: ArgDecl = ArgDecl::u32("d_conv", 36);
    /// `u32 n` (`shortconv_rows` only): tokens.
    pub const N: ArgDecl = ArgDecl::u32("n", 40);
}

/// `shortconv` in module `lfm2`: one work-item per channel.
pub static SHORTCONV: Signature = plain(
    "shortconv",
    &[shortconv::OUT, shortconv::STATE, shortconv::BCX, shortconv::WEIGHT, shortconv::DIM, shortconv::D_CONV],
    52,
);

/// `shortconv_rows` in module `lfm2`: [`SHORTCONV`]'s arguments and the token count.
pub static SHORTCONV_ROWS: Signature = plain(
    "shortconv_rows",
    &[
        shortconv::OUT,
        shortconv::STATE,
        shortconv::BCX,
        shortconv::WEIGHT,
        shortconv::DIM,
        shortconv::D_CONV,
        shortconv::N,
    ],
    60,
);

// Module `qwen35`: the kernels Qwen 3.5 needs beyond llama's and gemma's.

/// `ssm_conv_silu(float* out, float* state, const float* x, const float* weight, u32 channels,
/// u32 history, u32 n)` (module `qwen35`): the gated-DeltaNet layer's causal depthwise
/// convolution with SiLU over `n` tokens, updating the convolution state in place.
pub mod ssm_conv_silu {
    use super::ArgDecl;
    /// `float* out`: `n` rows of `channels` floats.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `float* state`: `[channel][history]`, each channel's last inputs, oldest first.
    pub const STATE: ArgDecl = ArgDecl::global_buffer("state", 8);
    /// `const float* x`: `n` rows of `channels` floats.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 16);
    /// `const float* weight`: `[channel][history + 1]` taps, oldest input first.
    pub const WEIGHT: ArgDecl = ArgDecl::global_buffer("weight", 24);
    /// `u32 channels`.
    pub const CHANNELS: ArgDecl = ArgDecl::u32("channels", 32);
    /// `u32 history`: the kernel size minus 1.
    pub const HISTORY: ArgDecl = ArgDecl::u32("history", 36);
    /// `u32 n`: tokens.
    pub const N: ArgDecl = ArgDecl::u32("n", 40);
}

/// `gated_delta_net(float* out, float* state, const float* qkv, const float* alpha,
/// const float* beta, const float* dt_bias, const float* ssm_a, u32 v_heads, u32 k_heads,
/// u32 head_dim, u32 n, float eps, float scale)` (module `qwen35`): the gated delta rule over
/// `n` tokens, updating the state matrices in place.
pub mod gated_delta_net {
    use super::ArgDecl;
    /// `float* out`: `n` rows of `v_heads * head_dim` floats.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `float* state`: `v_heads` matrices `[key][value]` of `head_dim * head_dim` floats.
    pub const STATE: ArgDecl = ArgDecl::global_buffer("state", 8);
    /// `const float* qkv`: `n` rows of `(2 * k_heads + v_heads) * head_dim` floats.
    pub const QKV: ArgDecl = ArgDecl::global_buffer("qkv", 16);
    /// `const float* alpha`: `n` rows of `v_heads` floats.
    pub const ALPHA: ArgDecl = ArgDecl::global_buffer("alpha", 24);
    /// `const float* beta`: `n` rows of `v_heads` floats.
    pub const BETA: ArgDecl = ArgDecl::global_buffer("beta", 32);
    /// `const float* dt_bias`: `v_heads` floats.
    pub const DT_BIAS: ArgDecl = ArgDecl::global_buffer("dt_bias", 40);
    /// `const float* ssm_a`: `v_heads` floats.
    pub const SSM_A: ArgDecl = ArgDecl::global_buffer("ssm_a", 48);
    /// `u32 v_heads`.
    pub const V_HEADS: ArgDecl = ArgDecl::u32("v_heads", 56);
    /// `u32 k_heads`.
    pub const K_HEADS: ArgDecl = ArgDecl::u32("k_heads", 60);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 64);
    /// `u32 n`: tokens.
    pub const N: ArgDecl = ArgDecl::u32("n", 68);
    /// `float eps`: the L2 normalisation's epsilon.
    pub const EPS: ArgDecl = ArgDecl::f32("eps", 72);
    /// `float scale`: what each output is multiplied by.
    pub const SCALE: ArgDecl = ArgDecl::f32("scale", 76);
}

/// `split_halves(float* a, float* b, const float* src, u32 half, u32 rows)` (module `qwen35`).
pub mod split_halves {
    use super::ArgDecl;
    /// `float* a`: `rows` rows of `half` floats, the first half of each source row.
    pub const A: ArgDecl = ArgDecl::global_buffer("a", 0);
    /// `float* b`: `rows` rows of `half` floats, the second half of each source row.
    pub const B: ArgDecl = ArgDecl::global_buffer("b", 8);
    /// `const float* src`: `rows` rows of `2 * half` floats.
    pub const SRC: ArgDecl = ArgDecl::global_buffer("src", 16);
    /// `u32 half`.
    pub const HALF: ArgDecl = ArgDecl::u32("half", 24);
    /// `u32 rows`.
    pub const ROWS: ArgDecl = ArgDecl::u32("rows", 28);
}

/// `rope_partial(float* x, const float* table, u32 pos0, u32 heads, u32 head_dim, u32 rot,
/// u32 n)` (module `qwen35`): NEOX rotary embedding of each head's first `rot` elements.
pub mod rope_partial {
    use super::ArgDecl;
    /// `float* x`: `n` rows of `heads * head_dim` floats.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 0);
    /// `const float* table`: `(cos, sin)` pairs, `rot / 2` per position.
    pub const TABLE: ArgDecl = ArgDecl::global_buffer("table", 8);
    /// `u32 pos0`: the position of row 0.
    pub const POS0: ArgDecl = ArgDecl::u32("pos0", 16);
    /// `u32 heads`.
    pub const HEADS: ArgDecl = ArgDecl::u32("heads", 20);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 24);
    /// `u32 rot`: rotated elements per head.
    pub const ROT: ArgDecl = ArgDecl::u32("rot", 28);
    /// `u32 n`: rows.
    pub const N: ArgDecl = ArgDecl::u32("n", 32);
}

/// `ssm_conv_silu` in module `qwen35`.
pub static SSM_CONV_SILU: Signature = plain(
    "ssm_conv_silu",
    &[
        ssm_conv_silu::OUT,
        ssm_conv_silu::STATE,
        ssm_conv_silu::X,
        ssm_conv_silu::WEIGHT,
        ssm_conv_silu::CHANNELS,
        ssm_conv_silu::HISTORY,
        ssm_conv_silu::N,
    ],
    60,
);
/// `gated_delta_net` in module `qwen35`.
pub static GATED_DELTA_NET: Signature = plain(
    "gated_delta_net",
    &[
        gated_delta_net::OUT,
        gated_delta_net::STATE,
        gated_delta_net::QKV,
        gated_delta_net::ALPHA,
        gated_delta_net::BETA,
        gated_delta_net::DT_BIAS,
        gated_delta_net::SSM_A,
        gated_delta_net::V_HEADS,
        gated_delta_net::K_HEADS,
        gated_delta_net::HEAD_DIM,
        gated_delta_net::N,
        gated_delta_net::EPS,
        gated_delta_net::SCALE,
    ],
    92,
);
/// `split_halves` in module `qwen35`.
pub static SPLIT_HALVES: Signature = plain(
    "split_halves",
    &[split_halves::A, split_halves::B, split_halves::SRC, split_halves::HALF, split_halves::ROWS],
    44,
);
/// `rope_partial` in module `qwen35`.
pub static ROPE_PARTIAL: Signature = plain(
    "rope_partial",
    &[
        rope_partial::X,
        rope_partial::TABLE,
        rope_partial::POS0,
        rope_partial::HEADS,
        rope_partial::HEAD_DIM,
        rope_partial::ROT,
        rope_partial::N,
    ],
    52,
);
/// `sigmoid_mul(float* out, const float* gate, const float* up, u32 n)` in module `qwen35`:
/// [`silu_mul`]'s arguments.
pub static SIGMOID_MUL: Signature =
    plain("sigmoid_mul", &[silu_mul::OUT, silu_mul::GATE, silu_mul::UP, silu_mul::N], 44);
