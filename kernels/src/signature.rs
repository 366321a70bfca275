//! Kernel signatures: the explicit kernarg layout of every kernel, and the launch facts from its
//! code-object metadata that the CPU references rely on.
//!
//! Every number here is what `llvm-readelf-19 --notes` prints for the checked-in code objects
//! (`.args[].offset/.size/.value_kind`, the `hidden_group_size_x` offset,
//! `.max_flat_workgroup_size`, `.group_segment_fixed_size`); `tests/catalog_notes.rs` checks
//! them against every catalogued code object. Explicit arguments sit at natural alignment from
//! offset 0; the hidden arguments of code object v5 start at the next multiple of 8.

/// How an explicit argument is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// A 64-bit global address (`.value_kind: global_buffer`).
    GlobalBuffer,
    /// A 32-bit unsigned integer by value (`.value_kind: by_value`).
    U32,
    /// A 32-bit float by value (`.value_kind: by_value`).
    F32,
}

/// One explicit kernel argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgDecl {
    /// The parameter name in the HIP source.
    pub name: &'static str,
    /// Byte offset in the kernarg segment.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// How it is passed.
    pub kind: ArgKind,
}

impl ArgDecl {
    const fn global_buffer(name: &'static str, offset: usize) -> Self {
        Self { name, offset, size: 8, kind: ArgKind::GlobalBuffer }
    }

    const fn u32(name: &'static str, offset: usize) -> Self {
        Self { name, offset, size: 4, kind: ArgKind::U32 }
    }

    const fn f32(name: &'static str, offset: usize) -> Self {
        Self { name, offset, size: 4, kind: ArgKind::F32 }
    }
}

/// What a kernel's code object says about its arguments and launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    /// The kernel symbol name (`.name`).
    pub name: &'static str,
    /// Explicit arguments in declaration order.
    pub explicit_args: &'static [ArgDecl],
    /// Kernarg offset of the 16-bit `hidden_group_size_x`, from which the kernel reads its
    /// work-group size; `None` for a kernel without hidden arguments.
    pub hidden_group_size_x: Option<usize>,
    /// `.max_flat_workgroup_size`: the largest work-group the code object supports.
    pub max_flat_workgroup_size: u16,
    /// `.group_segment_fixed_size`: static LDS bytes.
    pub static_lds_bytes: u32,
}

impl Signature {
    /// The explicit argument called `name` and its index.
    #[must_use]
    pub fn arg(&self, name: &str) -> Option<(usize, &'static ArgDecl)> {
        self.explicit_args.iter().enumerate().find(|(_, a)| a.name == name)
    }
}

/// The default flat work-group size limit of HIP kernels without a launch-bounds attribute.
const DEFAULT_MAX_FLAT_WORKGROUP_SIZE: u16 = 1024;

/// `fill(float* out, float value, u32 n)`.
pub mod fill {
    use super::ArgDecl;
    /// `float* out`.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `float value`.
    pub const VALUE: ArgDecl = ArgDecl::f32("value", 8);
    /// `u32 n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 12);
}

/// `copy(float* dst, const float* src, u32 n)`.
pub mod copy {
    use super::ArgDecl;
    /// `float* dst`.
    pub const DST: ArgDecl = ArgDecl::global_buffer("dst", 0);
    /// `const float* src`.
    pub const SRC: ArgDecl = ArgDecl::global_buffer("src", 8);
    /// `u32 n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 16);
}

/// `axpy(float* y, const float* x, float a, u32 n)`.
pub mod axpy {
    use super::ArgDecl;
    /// `float* y`.
    pub const Y: ArgDecl = ArgDecl::global_buffer("y", 0);
    /// `const float* x`.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 8);
    /// `float a`.
    pub const A: ArgDecl = ArgDecl::f32("a", 16);
    /// `u32 n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 20);
}

/// `add`/`mul(float* out, const float* a, const float* b, u32 n)` (module `elementwise`).
pub mod binary {
    use super::ArgDecl;
    /// `float* out`.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* a`.
    pub const A: ArgDecl = ArgDecl::global_buffer("a", 8);
    /// `const float* b`.
    pub const B: ArgDecl = ArgDecl::global_buffer("b", 16);
    /// `u32 n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 24);
}

/// `scale(float* out, const float* x, float s, u32 n)`.
pub mod scale {
    use super::ArgDecl;
    /// `float* out`.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* x`.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 8);
    /// `float s`.
    pub const S: ArgDecl = ArgDecl::f32("s", 16);
    /// `u32 n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 20);
}

/// `rmsnorm(float* out, const float* x, const float* weight, u32 rows, u32 cols, float eps)`.
pub mod rmsnorm {
    use super::ArgDecl;
    /// `float* out`.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* x`.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 8);
    /// `const float* weight`.
    pub const WEIGHT: ArgDecl = ArgDecl::global_buffer("weight", 16);
    /// `u32 rows`.
    pub const ROWS: ArgDecl = ArgDecl::u32("rows", 24);
    /// `u32 cols`.
    pub const COLS: ArgDecl = ArgDecl::u32("cols", 28);
    /// `float eps`.
    pub const EPS: ArgDecl = ArgDecl::f32("eps", 32);
    /// `RMSNORM_BLOCK` in `hip/rmsnorm.hip`: the required work-group size.
    pub const BLOCK: u16 = 256;
}

/// `matvec(float* y, const float* a, const float* x, u32 rows, u32 cols)`.
pub mod matvec {
    use super::ArgDecl;
    /// `float* y`.
    pub const Y: ArgDecl = ArgDecl::global_buffer("y", 0);
    /// `const float* a`.
    pub const A: ArgDecl = ArgDecl::global_buffer("a", 8);
    /// `const float* x`.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 16);
    /// `u32 rows`.
    pub const ROWS: ArgDecl = ArgDecl::u32("rows", 24);
    /// `u32 cols`.
    pub const COLS: ArgDecl = ArgDecl::u32("cols", 28);
}

/// `block_sum(float* out, const float* x, u32 n)`.
pub mod block_sum {
    use super::ArgDecl;
    /// `float* out`.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* x`.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 8);
    /// `u32 n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 16);
}

/// `matvec_q4_1`/`matvec_q8_0(float* y, const unsigned char* w, const float* x, u32 rows, u32 cols)`
/// (module `quant`).
pub mod matvec_q {
    use super::ArgDecl;
    /// `float* y`.
    pub const Y: ArgDecl = ArgDecl::global_buffer("y", 0);
    /// `const unsigned char* w`: `rows` rows of `cols / 32` blocks.
    pub const W: ArgDecl = ArgDecl::global_buffer("w", 8);
    /// `const float* x`.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 16);
    /// `u32 rows`.
    pub const ROWS: ArgDecl = ArgDecl::u32("rows", 24);
    /// `u32 cols`: a multiple of 32.
    pub const COLS: ArgDecl = ArgDecl::u32("cols", 28);
    /// `QMATVEC_BLOCK` in `hip/quant.hip`: the required work-group size (one wave32 per row).
    pub const BLOCK: u16 = 32;
}

/// `get_row_q8_0(float* out, const unsigned char* table, const u32* token, u32 cols, u32 rows)`
/// (module `quant`).
pub mod get_row_q8_0 {
    use super::ArgDecl;
    /// `float* out`.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const unsigned char* table`: `rows` rows of `cols / 32` Q8_0 blocks.
    pub const TABLE: ArgDecl = ArgDecl::global_buffer("table", 8);
    /// `const u32* token`: the row to read, as data.
    pub const TOKEN: ArgDecl = ArgDecl::global_buffer("token", 16);
    /// `u32 cols`: a multiple of 32.
    pub const COLS: ArgDecl = ArgDecl::u32("cols", 24);
    /// `u32 rows`.
    pub const ROWS: ArgDecl = ArgDecl::u32("rows", 28);
}

/// `rope(float* x, const float* table, u32 pos, u32 heads, u32 head_dim)` (module `llama`).
pub mod rope {
    use super::ArgDecl;
    /// `float* x`.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 0);
    /// `const float* table`: `(cos, sin)` pairs, `head_dim / 2` per position.
    pub const TABLE: ArgDecl = ArgDecl::global_buffer("table", 8);
    /// `u32 pos`.
    pub const POS: ArgDecl = ArgDecl::u32("pos", 16);
    /// `u32 heads`.
    pub const HEADS: ArgDecl = ArgDecl::u32("heads", 20);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 24);
}

/// `rope_store(float* cache, const float* src, const float* table, u32 pos, u32 heads,
/// u32 head_dim)` (module `llama`).
pub mod rope_store {
    use super::ArgDecl;
    /// `float* cache`.
    pub const CACHE: ArgDecl = ArgDecl::global_buffer("cache", 0);
    /// `const float* src`.
    pub const SRC: ArgDecl = ArgDecl::global_buffer("src", 8);
    /// `const float* table`.
    pub const TABLE: ArgDecl = ArgDecl::global_buffer("table", 16);
    /// `u32 pos`.
    pub const POS: ArgDecl = ArgDecl::u32("pos", 24);
    /// `u32 heads`.
    pub const HEADS: ArgDecl = ArgDecl::u32("heads", 28);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 32);
}

/// `kv_store(float* cache, const float* src, u32 pos, u32 width)` (module `llama`).
pub mod kv_store {
    use super::ArgDecl;
    /// `float* cache`.
    pub const CACHE: ArgDecl = ArgDecl::global_buffer("cache", 0);
    /// `const float* src`.
    pub const SRC: ArgDecl = ArgDecl::global_buffer("src", 8);
    /// `u32 pos`.
    pub const POS: ArgDecl = ArgDecl::u32("pos", 16);
    /// `u32 width`.
    pub const WIDTH: ArgDecl = ArgDecl::u32("width", 20);
}

/// `attention(float* out, const float* q, const float* k_cache, const float* v_cache,
/// float* scores, u32 n, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride, float scale)`
/// (module `llama`).
pub mod attention {
    use super::ArgDecl;
    /// `float* out`.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* q`.
    pub const Q: ArgDecl = ArgDecl::global_buffer("q", 8);
    /// `const float* k_cache`.
    pub const K_CACHE: ArgDecl = ArgDecl::global_buffer("k_cache", 16);
    /// `const float* v_cache`.
    pub const V_CACHE: ArgDecl = ArgDecl::global_buffer("v_cache", 24);
    /// `float* scores`.
    pub const SCORES: ArgDecl = ArgDecl::global_buffer("scores", 32);
    /// `u32 n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 40);
    /// `u32 heads`.
    pub const HEADS: ArgDecl = ArgDecl::u32("heads", 44);
    /// `u32 kv_heads`.
    pub const KV_HEADS: ArgDecl = ArgDecl::u32("kv_heads", 48);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 52);
    /// `u32 scores_stride`.
    pub const SCORES_STRIDE: ArgDecl = ArgDecl::u32("scores_stride", 56);
    /// `float scale`.
    pub const SCALE: ArgDecl = ArgDecl::f32("scale", 60);
    /// `ATTN_BLOCK` in `hip/llama.hip`: the required work-group size.
    pub const BLOCK: u16 = 64;
}

/// `silu_mul(float* out, const float* gate, const float* up, u32 n)` (module `llama`).
pub mod silu_mul {
    use super::ArgDecl;
    /// `float* out`.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* gate`.
    pub const GATE: ArgDecl = ArgDecl::global_buffer("gate", 8);
    /// `const float* up`.
    pub const UP: ArgDecl = ArgDecl::global_buffer("up", 16);
    /// `u32 n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 24);
}

/// `matmul_q4_1`/`matmul_q8_0(float* y, const unsigned char* w, const float* x, u32 rows,
/// u32 cols, u32 n)` (module `prefill`): `y` and `x` are `n` rows of `rows` and `cols` floats.
pub mod matmul_q {
    use super::ArgDecl;
    /// `float* y`: `n` rows of `rows` floats.
    pub const Y: ArgDecl = ArgDecl::global_buffer("y", 0);
    /// `const unsigned char* w`: `rows` rows of `cols / 32` blocks.
    pub const W: ArgDecl = ArgDecl::global_buffer("w", 8);
    /// `const float* x`: `n` rows of `cols` floats.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 16);
    /// `u32 rows`.
    pub const ROWS: ArgDecl = ArgDecl::u32("rows", 24);
    /// `u32 cols`: a multiple of 32.
    pub const COLS: ArgDecl = ArgDecl::u32("cols", 28);
    /// `u32 n`: tokens.
    pub const N: ArgDecl = ArgDecl::u32("n", 32);
    /// `MATMUL_BLOCK` in `hip/prefill.hip`: the required work-group size (one wave32 per row).
    pub const BLOCK: u16 = 32;
    /// `MATMUL_TILE` in `hip/prefill.hip`: tokens per pass of the kernel's token loop.
    pub const TILE: u32 = 8;
}

/// `get_rows_q8_0(float* out, const unsigned char* table, const u32* tokens, u32 cols, u32 rows,
/// u32 n)` (module `prefill`).
pub mod get_rows_q8_0 {
    use super::ArgDecl;
    /// `float* out`: `n` rows of `cols` floats.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const unsigned char* table`: `rows` rows of `cols / 32` Q8_0 blocks.
    pub const TABLE: ArgDecl = ArgDecl::global_buffer("table", 8);
    /// `const u32* tokens`: the `n` rows to read, as data.
    pub const TOKENS: ArgDecl = ArgDecl::global_buffer("tokens", 16);
    /// `u32 cols`: a multiple of 32.
    pub const COLS: ArgDecl = ArgDecl::u32("cols", 24);
    /// `u32 rows`.
    pub const ROWS: ArgDecl = ArgDecl::u32("rows", 28);
    /// `u32 n`: tokens.
    pub const N: ArgDecl = ArgDecl::u32("n", 32);
}

/// `rope_rows(float* x, const float* table, u32 pos0, u32 heads, u32 head_dim, u32 n)` (module
/// `prefill`).
pub mod rope_rows {
    use super::ArgDecl;
    /// `float* x`: `n` rows of `heads * head_dim` floats.
    pub const X: ArgDecl = ArgDecl::global_buffer("x", 0);
    /// `const float* table`: `(cos, sin)` pairs, `head_dim / 2` per position.
    pub const TABLE: ArgDecl = ArgDecl::global_buffer("table", 8);
    /// `u32 pos0`: the position of row 0.
    pub const POS0: ArgDecl = ArgDecl::u32("pos0", 16);
    /// `u32 heads`.
    pub const HEADS: ArgDecl = ArgDecl::u32("heads", 20);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 24);
    /// `u32 n`: rows.
    pub const N: ArgDecl = ArgDecl::u32("n", 28);
}

/// `attention_rows(float* out, const float* q, const float* k_cache, const float* v_cache,
/// float* scores, u32 pos0, u32 n, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride,
/// float scale)` (module `prefill`).
pub mod attention_rows {
    use super::ArgDecl;
    /// `float* out`: `n` rows of `heads * head_dim` floats.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* q`: `n` rows of `heads * head_dim` floats.
    pub const Q: ArgDecl = ArgDecl::global_buffer("q", 8);
    /// `const float* k_cache`: `[position][kv_heads * head_dim]`.
    pub const K_CACHE: ArgDecl = ArgDecl::global_buffer("k_cache", 16);
    /// `const float* v_cache`: `[position][kv_heads * head_dim]`.
    pub const V_CACHE: ArgDecl = ArgDecl::global_buffer("v_cache", 24);
    /// `float* scores`: `n * heads` rows of `scores_stride` floats of scratch.
    pub const SCORES: ArgDecl = ArgDecl::global_buffer("scores", 32);
    /// `u32 pos0`: the position of query row 0.
    pub const POS0: ArgDecl = ArgDecl::u32("pos0", 40);
    /// `u32 n`: query rows.
    pub const N: ArgDecl = ArgDecl::u32("n", 44);
    /// `u32 heads`.
    pub const HEADS: ArgDecl = ArgDecl::u32("heads", 48);
    /// `u32 kv_heads`.
    pub const KV_HEADS: ArgDecl = ArgDecl::u32("kv_heads", 52);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 56);
    /// `u32 scores_stride`.
    pub const SCORES_STRIDE: ArgDecl = ArgDecl::u32("scores_stride", 60);
    /// `float scale`.
    pub const SCALE: ArgDecl = ArgDecl::f32("scale", 64);
    /// `ATTN_BLOCK` in `hip/prefill.hip`: the required work-group size.
    pub const BLOCK: u16 = 64;
}

const fn plain(name: &'static str, explicit_args: &'static [ArgDecl], hidden_group_size_x: usize) -> Signature {
    Signature {
        name,
        explicit_args,
        hidden_group_size_x: Some(hidden_group_size_x),
        max_flat_workgroup_size: DEFAULT_MAX_FLAT_WORKGROUP_SIZE,
        static_lds_bytes: 0,
    }
}

/// `fill` in module `fill`.
pub static FILL: Signature = plain("fill", &[fill::OUT, fill::VALUE, fill::N], 28);
/// `copy` in module `copy`.
pub static COPY: Signature = plain("copy", &[copy::DST, copy::SRC, copy::N], 36);
/// `axpy` in module `axpy` (and the wave64 fixture).
pub static AXPY: Signature = plain("axpy", &[axpy::Y, axpy::X, axpy::A, axpy::N], 36);
/// `add` in module `elementwise`.
pub static ADD: Signature = plain("add", &[binary::OUT, binary::A, binary::B, binary::N], 44);
/// `mul` in module `elementwise`.
pub static MUL: Signature = plain("mul", &[binary::OUT, binary::A, binary::B, binary::N], 44);
/// `scale` in module `scale`.
pub static SCALE: Signature = plain("scale", &[scale::OUT, scale::X, scale::S, scale::N], 36);
/// `matvec` in module `matvec`.
pub static MATVEC: Signature = plain("matvec", &[matvec::Y, matvec::A, matvec::X, matvec::ROWS, matvec::COLS], 44);
/// `block_sum` in module `block_sum` (its LDS is all dynamic).
pub static BLOCK_SUM: Signature = plain("block_sum", &[block_sum::OUT, block_sum::X, block_sum::N], 36);
/// `rmsnorm` in module `rmsnorm`: no hidden arguments (it never asks for its group size), a
/// launch-bounds attribute of exactly [`rmsnorm::BLOCK`] and `float partial[256]` of static LDS.
pub static RMSNORM: Signature = Signature {
    name: "rmsnorm",
    explicit_args: &[rmsnorm::OUT, rmsnorm::X, rmsnorm::WEIGHT, rmsnorm::ROWS, rmsnorm::COLS, rmsnorm::EPS],
    hidden_group_size_x: None,
    max_flat_workgroup_size: rmsnorm::BLOCK,
    static_lds_bytes: 4 * 256,
};

const QMATVEC_ARGS: &[ArgDecl] = &[matvec_q::Y, matvec_q::W, matvec_q::X, matvec_q::ROWS, matvec_q::COLS];

/// A kernel with a fixed work-group size and no hidden arguments (it never asks for its group
/// size), like [`RMSNORM`].
const fn fixed(name: &'static str, explicit_args: &'static [ArgDecl], block: u16, static_lds_bytes: u32) -> Signature {
    Signature { name, explicit_args, hidden_group_size_x: None, max_flat_workgroup_size: block, static_lds_bytes }
}

/// `matvec_q4_1` in module `quant`: one wave32 per row, `float partial[32]` of static LDS.
pub static MATVEC_Q4_1: Signature = fixed("matvec_q4_1", QMATVEC_ARGS, matvec_q::BLOCK, 4 * 32);
/// `matvec_q8_0` in module `quant`: as [`MATVEC_Q4_1`].
pub static MATVEC_Q8_0: Signature = fixed("matvec_q8_0", QMATVEC_ARGS, matvec_q::BLOCK, 4 * 32);
/// `get_row_q8_0` in module `quant`.
pub static GET_ROW_Q8_0: Signature = plain(
    "get_row_q8_0",
    &[get_row_q8_0::OUT, get_row_q8_0::TABLE, get_row_q8_0::TOKEN, get_row_q8_0::COLS, get_row_q8_0::ROWS],
    44,
);
/// `rope` in module `llama`.
pub static ROPE: Signature = plain("rope", &[rope::X, rope::TABLE, rope::POS, rope::HEADS, rope::HEAD_DIM], 44);
/// `rope_store` in module `llama`.
pub static ROPE_STORE: Signature = plain(
    "rope_store",
    &[rope_store::CACHE, rope_store::SRC, rope_store::TABLE, rope_store::POS, rope_store::HEADS, rope_store::HEAD_DIM],
    52,
);
/// `kv_store` in module `llama`.
pub static KV_STORE: Signature =
    plain("kv_store", &[kv_store::CACHE, kv_store::SRC, kv_store::POS, kv_store::WIDTH], 36);
/// `attention` in module `llama`: [`attention::BLOCK`] work-items per head, `float red[64]` of
/// static LDS.
pub static ATTENTION: Signature = fixed(
    "attention",
    &[
        attention::OUT,
        attention::Q,
        attention::K_CACHE,
        attention::V_CACHE,
        attention::SCORES,
        attention::N,
        attention::HEADS,
        attention::KV_HEADS,
        attention::HEAD_DIM,
        attention::SCORES_STRIDE,
        attention::SCALE,
    ],
    attention::BLOCK,
    4 * 64,
);
/// `silu_mul` in module `llama`.
pub static SILU_MUL: Signature = plain("silu_mul", &[silu_mul::OUT, silu_mul::GATE, silu_mul::UP, silu_mul::N], 44);

const MATMUL_ARGS: &[ArgDecl] = &[matmul_q::Y, matmul_q::W, matmul_q::X, matmul_q::ROWS, matmul_q::COLS, matmul_q::N];

/// `matmul_q4_1` in module `prefill`: one wave32 per weight row, `float partial[8][32]` of
/// static LDS.
pub static MATMUL_Q4_1: Signature = fixed("matmul_q4_1", MATMUL_ARGS, matmul_q::BLOCK, 4 * 8 * 32);
/// `matmul_q8_0` in module `prefill`: as [`MATMUL_Q4_1`].
pub static MATMUL_Q8_0: Signature = fixed("matmul_q8_0", MATMUL_ARGS, matmul_q::BLOCK, 4 * 8 * 32);
/// `get_rows_q8_0` in module `prefill`.
pub static GET_ROWS_Q8_0: Signature = plain(
    "get_rows_q8_0",
    &[
        get_rows_q8_0::OUT,
        get_rows_q8_0::TABLE,
        get_rows_q8_0::TOKENS,
        get_rows_q8_0::COLS,
        get_rows_q8_0::ROWS,
        get_rows_q8_0::N,
    ],
    52,
);
/// `rope_rows` in module `prefill`.
pub static ROPE_ROWS: Signature = plain(
    "rope_rows",
    &[rope_rows::X, rope_rows::TABLE, rope_rows::POS0, rope_rows::HEADS, rope_rows::HEAD_DIM, rope_rows::N],
    44,
);
/// `attention_rows` in module `prefill`: [`attention_rows::BLOCK`] work-items per (row, head),
/// `float red[64]` of static LDS.
pub static ATTENTION_ROWS: Signature = fixed(
    "attention_rows",
    &[
        attention_rows::OUT,
        attention_rows::Q,
        attention_rows::K_CACHE,
        attention_rows::V_CACHE,
        attention_rows::SCORES,
        attention_rows::POS0,
        attention_rows::N,
        attention_rows::HEADS,
        attention_rows::KV_HEADS,
        attention_rows::HEAD_DIM,
        attention_rows::SCORES_STRIDE,
        attention_rows::SCALE,
    ],
    attention_rows::BLOCK,
    4 * 64,
);

/// The matrix products of module `ggml_quants`, as `(matvec static, matmul static, kernel-name
/// suffix)`: every format but Q4_1 and Q8_0, whose products are in `quant` and `prefill`.
macro_rules! ggml_products {
    ($($matvec:ident $matmul:ident $t:literal;)*) => {$(
        #[doc = concat!("`matvec_", $t, "` in module `ggml_quants`: as [`MATVEC_Q4_1`] (arguments [`matvec_q`]).")]
        pub static $matvec: Signature = fixed(concat!("matvec_", $t), QMATVEC_ARGS, matvec_q::BLOCK, 4 * 32);
        #[doc = concat!("`matmul_", $t, "` in module `ggml_quants`: as [`MATMUL_Q4_1`] (arguments [`matmul_q`]).")]
        pub static $matmul: Signature = fixed(concat!("matmul_", $t), MATMUL_ARGS, matmul_q::BLOCK, 4 * 8 * 32);
    )*};
}

/// The row gathers of module `ggml_quants`, as `(get_row static, get_rows static, suffix)`: every
/// format but Q8_0, whose gathers are in `quant` and `prefill`.
macro_rules! ggml_gathers {
    ($($get_row:ident $get_rows:ident $t:literal;)*) => {$(
        #[doc = concat!("`get_row_", $t, "` in module `ggml_quants`: as [`GET_ROW_Q8_0`] (arguments [`get_row_q8_0`]).")]
        pub static $get_row: Signature = plain(concat!("get_row_", $t), GET_ROW_ARGS, 44);
        #[doc = concat!("`get_rows_", $t, "` in module `ggml_quants`: as [`GET_ROWS_Q8_0`] (arguments [`get_rows_q8_0`]).")]
        pub static $get_rows: Signature = plain(concat!("get_rows_", $t), GET_ROWS_ARGS, 52);
    )*};
}

const GET_ROW_ARGS: &[ArgDecl] =
    &[get_row_q8_0::OUT, get_row_q8_0::TABLE, get_row_q8_0::TOKEN, get_row_q8_0::COLS, get_row_q8_0::ROWS];
const GET_ROWS_ARGS: &[ArgDecl] = &[
    get_rows_q8_0::OUT,
    get_rows_q8_0::TABLE,
    get_rows_q8_0::TOKENS,
    get_rows_q8_0::COLS,
    get_rows_q8_0::ROWS,
    get_rows_q8_0::N,
];

ggml_products! {
    MATVEC_Q4_0 MATMUL_Q4_0 "q4_0";
    MATVEC_Q5_0 MATMUL_Q5_0 "q5_0";
    MATVEC_Q5_1 MATMUL_Q5_1 "q5_1";
    MATVEC_Q2_K MATMUL_Q2_K "q2_k";
    MATVEC_Q3_K MATMUL_Q3_K "q3_k";
    MATVEC_Q4_K MATMUL_Q4_K "q4_k";
    MATVEC_Q5_K MATMUL_Q5_K "q5_k";
    MATVEC_Q6_K MATMUL_Q6_K "q6_k";
    MATVEC_F16 MATMUL_F16 "f16";
    MATVEC_BF16 MATMUL_BF16 "bf16";
}

ggml_gathers! {
    GET_ROW_Q4_0 GET_ROWS_Q4_0 "q4_0";
    GET_ROW_Q4_1 GET_ROWS_Q4_1 "q4_1";
    GET_ROW_Q5_0 GET_ROWS_Q5_0 "q5_0";
    GET_ROW_Q5_1 GET_ROWS_Q5_1 "q5_1";
    GET_ROW_Q2_K GET_ROWS_Q2_K "q2_k";
    GET_ROW_Q3_K GET_ROWS_Q3_K "q3_k";
    GET_ROW_Q4_K GET_ROWS_Q4_K "q4_k";
    GET_ROW_Q5_K GET_ROWS_Q5_K "q5_k";
    GET_ROW_Q6_K GET_ROWS_Q6_K "q6_k";
    GET_ROW_F16 GET_ROWS_F16 "f16";
    GET_ROW_BF16 GET_ROWS_BF16 "bf16";
}
// Module `gemma`: the kernels Gemma 3 needs beyond llama's.

/// `attention_window(float* out, const float* q, const float* k_cache, const float* v_cache,
/// float* scores, u32 first, u32 n, u32 heads, u32 kv_heads, u32 head_dim, u32 scores_stride,
/// float scale)` (module `gemma`): [`attention`]'s arguments with the window's first position
/// before `n`.
pub mod attention_window {
    use super::ArgDecl;
    /// `float* out`: `heads` rows of `head_dim` floats.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* q`: `heads` rows of `head_dim` floats.
    pub const Q: ArgDecl = ArgDecl::global_buffer("q", 8);
    /// `const float* k_cache`: `[position][kv_heads * head_dim]`.
    pub const K_CACHE: ArgDecl = ArgDecl::global_buffer("k_cache", 16);
    /// `const float* v_cache`: `[position][kv_heads * head_dim]`.
    pub const V_CACHE: ArgDecl = ArgDecl::global_buffer("v_cache", 24);
    /// `float* scores`: `heads` rows of `scores_stride` floats of scratch, position `j` at
    /// column `j - first`.
    pub const SCORES: ArgDecl = ArgDecl::global_buffer("scores", 32);
    /// `u32 first`: the window's first position, `max(0, n - window)`.
    pub const FIRST: ArgDecl = ArgDecl::u32("first", 40);
    /// `u32 n`: cached positions; the window is `first..n`.
    pub const N: ArgDecl = ArgDecl::u32("n", 44);
    /// `u32 heads`.
    pub const HEADS: ArgDecl = ArgDecl::u32("heads", 48);
    /// `u32 kv_heads`.
    pub const KV_HEADS: ArgDecl = ArgDecl::u32("kv_heads", 52);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 56);
    /// `u32 scores_stride`: at least `n - first`.
    pub const SCORES_STRIDE: ArgDecl = ArgDecl::u32("scores_stride", 60);
    /// `float scale`.
    pub const SCALE: ArgDecl = ArgDecl::f32("scale", 64);
    /// `ATTN_BLOCK` in `hip/gemma.hip`: the required work-group size.
    pub const BLOCK: u16 = 64;
}

/// `attention_window_rows(float* out, const float* q, const float* k_cache, const float* v_cache,
/// float* scores, u32 pos0, u32 n, u32 window, u32 heads, u32 kv_heads, u32 head_dim,
/// u32 scores_stride, float scale)` (module `gemma`): [`attention_rows`]'s arguments with the
/// window after `n`.
pub mod attention_window_rows {
    use super::ArgDecl;
    /// `float* out`: `n` rows of `heads * head_dim` floats.
    pub const OUT: ArgDecl = ArgDecl::global_buffer("out", 0);
    /// `const float* q`: `n` rows of `heads * head_dim` floats.
    pub const Q: ArgDecl = ArgDecl::global_buffer("q", 8);
    /// `const float* k_cache`: `[position][kv_heads * head_dim]`.
    pub const K_CACHE: ArgDecl = ArgDecl::global_buffer("k_cache", 16);
    /// `const float* v_cache`: `[position][kv_heads * head_dim]`.
    pub const V_CACHE: ArgDecl = ArgDecl::global_buffer("v_cache", 24);
    /// `float* scores`: `n * heads` rows of `scores_stride` floats of scratch.
    pub const SCORES: ArgDecl = ArgDecl::global_buffer("scores", 32);
    /// `u32 pos0`: the position of query row 0.
    pub const POS0: ArgDecl = ArgDecl::u32("pos0", 40);
    /// `u32 n`: query rows.
    pub const N: ArgDecl = ArgDecl::u32("n", 44);
    /// `u32 window`: row `t` attends `max(0, pos0 + t + 1 - window)..=pos0 + t`.
    pub const WINDOW: ArgDecl = ArgDecl::u32("window", 48);
    /// `u32 heads`.
    pub const HEADS: ArgDecl = ArgDecl::u32("heads", 52);
    /// `u32 kv_heads`.
    pub const KV_HEADS: ArgDecl = ArgDecl::u32("kv_heads", 56);
    /// `u32 head_dim`.
    pub const HEAD_DIM: ArgDecl = ArgDecl::u32("head_dim", 60);
    /// `u32 scores_stride`: at least `min(window, pos0 + n)`.
    pub const SCORES_STRIDE: ArgDecl = ArgDecl::u32("scores_stride", 64);
    /// `float scale`.
    pub const SCALE: ArgDecl = ArgDecl::f32("scale", 68);
    /// `ATTN_BLOCK` in `hip/gemma.hip`: the required work-group size.
    pub const BLOCK: u16 = 64;
}

/// `rope_neox` in module `gemma`: [`rope`]'s arguments.
pub static ROPE_NEOX: Signature =
    plain("rope_neox", &[rope::X, rope::TABLE, rope::POS, rope::HEADS, rope::HEAD_DIM], 44);
/// `rope_neox_store` in module `gemma`: [`rope_store`]'s arguments.
pub static ROPE_NEOX_STORE: Signature = plain(
    "rope_neox_store",
    &[rope_store::CACHE, rope_store::SRC, rope_store::TABLE, rope_store::POS, rope_store::HEADS, rope_store::HEAD_DIM],
    52,
);
/// `rope_neox_rows` in module `gemma`: [`rope_rows`]'s arguments.
pub static ROPE_NEOX_ROWS: Signature = plain(
    "rope_neox_rows",
    &[rope_rows::X, rope_rows::TABLE, rope_rows::POS0, rope_rows::HEADS, rope_rows::HEAD_DIM, rope_rows::N],
    44,
);
/// `attention_window` in module `gemma`: [`attention_window::BLOCK`] work-items per head,
/// `float red[64]` of static LDS.
pub static ATTENTION_WINDOW: Signature = fixed(
    "attention_window",
    &[
        attention_window::OUT,
        attention_window::Q,
        attention_window::K_CACHE,
        attention_window::V_CACHE,
        attention_window::SCORES,
        attention_window::FIRST,
        attention_window::N,
        attention_window::HEADS,
        attention_window::KV_HEADS,
        attention_window::HEAD_DIM,
        attention_window::SCORES_STRIDE,
        attention_window::SCALE,
    ],
    attention_window::BLOCK,
    4 * 64,
);
/// `attention_window_rows` in module `gemma`: [`attention_window_rows::BLOCK`] work-items per
/// (row, head), `float red[64]` of static LDS.
pub static ATTENTION_WINDOW_ROWS: Signature = fixed(
    "attention_window_rows",
    &[
        attention_window_rows::OUT,
        attention_window_rows::Q,
        attention_window_rows::K_CACHE,
        attention_window_rows::V_CACHE,
        attention_window_rows::SCORES,
        attention_window_rows::POS0,
        attention_window_rows::N,
        attention_window_rows::WINDOW,
        attention_window_rows::HEADS,
        attention_window_rows::KV_HEADS,
        attention_window_rows::HEAD_DIM,
        attention_window_rows::SCORES_STRIDE,
        attention_window_rows::SCALE,
    ],
    attention_window_rows::BLOCK,
    4 * 64,
);
/// `gelu_mul(float* out, const float* gate, const float* up, u32 n)` in module `gemma`:
/// [`silu_mul`]'s arguments.
pub static GELU_MUL: Signature = plain("gelu_mul", &[silu_mul::OUT, silu_mul::GATE, silu_mul::UP, silu_mul::N], 44);

mod state;
pub use state::*;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every catalogued kernel's signature: a new kernel is covered once it is catalogued.
    fn all() -> impl Iterator<Item = &'static Signature> {
        crate::catalog::MODULES.iter().flat_map(|m| m.kernels).map(|k| k.signature)
    }

    #[test]
    fn explicit_args_are_naturally_aligned_and_packed_from_zero() {
        assert!(all().count() >= 17, "every catalogued kernel, the model kernels included");
        for sig in all() {
            let mut end: usize = 0;
            for a in sig.explicit_args {
                let aligned = end.next_multiple_of(a.size);
                assert_eq!(a.offset, aligned, "{}.{}", sig.name, a.name);
                end = a.offset + a.size;
            }
            if let Some(hidden) = sig.hidden_group_size_x {
                // hidden_block_count_x/y/z (3 x 4 bytes) precede hidden_group_size_x.
                assert_eq!(hidden, end.next_multiple_of(8) + 12, "{}", sig.name);
            }
        }
    }

    #[test]
    fn args_are_found_by_name() {
        assert_eq!(RMSNORM.arg("cols"), Some((4, &rmsnorm::COLS)));
        assert_eq!(FILL.arg("missing"), None);
    }
}
