//! Every ggml block format's kernels (`matvec_<t>`, `matmul_<t>`, `get_row_<t>`, `get_rows_<t>`:
//! module `ggml_quants`, and `quant`/`prefill` for Q4_1 and Q8_0, which follow the same contract)
//! against computations independent of `kernel_refs::cpu::ggml`:
//! - every value against a transcription of ggml's `dequantize_row_*` written here in ggml's own
//!   loop structure (whole blocks, `*y++`, the `kmask` and `get_scale_min_k4` unpacking), bit for
//!   bit;
//! - the matrix-vector products against an `f64` sum within the bound of their `f32` order, and
//!   against hand-derived values where the order decides;
//! - matmul row `t` against matvec on `x[t]`, bit for bit, over tiles and tails of tokens;
//! - the gathers against the transcription, with out-of-range token ids writing nothing;
//! - launches that break a precondition, as typed errors.

mod common;

use common::{Kernarg, Rng, SENTINEL, buffer, f16_value, launch_1d, map_bytes, read_bits, sentinel_buffer, u32_of};
use kernel_refs::cpu::{BlockFormat, CpuReference, KernelError, dequantize_row};
use kernel_refs::memory::HostMemory;
use kernel_refs::registry::kernel_defs;
use kernels::signature::Signature;

const Y: u64 = 0x100_0000;
const W: u64 = 0x200_0000;
const X: u64 = 0x400_0000;
const TOKENS: u64 = 0x600_0000;

// ---------------------------------------------------------------------------------------------
// ggml's dequantize_row_*, one block at a time, in ggml's loop structure.

#[allow(clippy::cast_possible_truncation)]
fn f16_at(b: &[u8], at: usize) -> f32 {
    let bits = u16::from_le_bytes([b[at], b[at + 1]]);
    match (bits >> 10) & 0x1f {
        // Infinities, and NaNs quiet with their payload (F16C's vcvtph2ps, the GPU's conversion).
        0x1f => f32::from_bits(
            (u32::from(bits & 0x8000) << 16)
                | 0x7f80_0000
                | (u32::from(bits & 0x3ff) << 13)
                | if bits & 0x3ff != 0 { 0x40_0000 } else { 0 },
        ),
        // Finite: exact in f32.
        _ => f16_value(bits) as f32,
    }
}

fn get_scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// The values of one block, as ggml's `dequantize_row_*` writes them (its loops kept as they are).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::needless_range_loop)]
fn ggml_block(format: BlockFormat, x: &[u8]) -> Vec<f32> {
    let mut y = Vec::new();
    match format {
        BlockFormat::Q4_0 | BlockFormat::Q4_1 | BlockFormat::Q5_0 | BlockFormat::Q5_1 => {
            let (with_min, five) = (
                matches!(format, BlockFormat::Q4_1 | BlockFormat::Q5_1),
                matches!(format, BlockFormat::Q5_0 | BlockFormat::Q5_1),
            );
            let d = f16_at(x, 0);
            let m = if with_min { f16_at(x, 2) } else { 0.0 };
            let mut at = if with_min { 4 } else { 2 };
            let qh = if five { u32::from_le_bytes([x[at], x[at + 1], x[at + 2], x[at + 3]]) } else { 0 };
            if five {
                at += 4;
            }
            let qs = &x[at..at + 16];
            let mut lo = [0.0f32; 16];
            let mut hi = [0.0f32; 16];
            for j in 0..16 {
                let xh_0 = (((qh >> j) << 4) & 0x10) as i32;
                let xh_1 = ((qh >> (j + 12)) & 0x10) as i32;
                let offset = match format {
                    BlockFormat::Q4_0 => 8,
                    BlockFormat::Q5_0 => 16,
                    _ => 0,
                };
                let x0 = ((i32::from(qs[j]) & 0x0F) | xh_0) - offset;
                let x1 = ((i32::from(qs[j]) >> 4) | xh_1) - offset;
                if with_min {
                    lo[j] = x0 as f32 * d + m;
                    hi[j] = x1 as f32 * d + m;
                } else {
                    lo[j] = x0 as f32 * d;
                    hi[j] = x1 as f32 * d;
                }
            }
            y.extend(lo);
            y.extend(hi);
        }
        BlockFormat::Q8_0 => {
            let d = f16_at(x, 0);
            y.extend(x[2..34].iter().map(|&q| f32::from(q as i8) * d));
        }
        BlockFormat::Q2K => {
            let (d, min) = (f16_at(x, 80), f16_at(x, 82));
            let mut q = &x[16..80];
            let mut is = 0;
            for _n in (0..256).step_by(128) {
                let mut shift = 0;
                for _j in 0..4 {
                    let sc = x[is];
                    is += 1;
                    let (dl, ml) = (d * f32::from(sc & 0xF), min * f32::from(sc >> 4));
                    for l in 0..16 {
                        y.push(dl * f32::from(((q[l] >> shift) & 3) as i8) - ml);
                    }
                    let sc = x[is];
                    is += 1;
                    let (dl, ml) = (d * f32::from(sc & 0xF), min * f32::from(sc >> 4));
                    for l in 0..16 {
                        y.push(dl * f32::from(((q[l + 16] >> shift) & 3) as i8) - ml);
                    }
                    shift += 2;
                }
                q = &q[32..];
            }
        }
        BlockFormat::Q3K => {
            let (kmask1, kmask2) = (0x0303_0303u32, 0x0f0f_0f0fu32);
            let d_all = f16_at(x, 108);
            let (hm, mut q) = (&x[0..32], &x[32..96]);
            let word = |i: usize| u32::from_le_bytes([x[96 + 4 * i], x[97 + 4 * i], x[98 + 4 * i], x[99 + 4 * i]]);
            let mut aux = [word(0), word(1), word(2), 0];
            let tmp = aux[2];
            aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
            aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
            aux[0] = (aux[0] & kmask2) | ((tmp & kmask1) << 4);
            aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
            let scales: Vec<i8> = aux.iter().flat_map(|w| w.to_le_bytes()).map(|b| b as i8).collect();
            let mut m = 1u8;
            let mut is = 0;
            for _n in (0..256).step_by(128) {
                let mut shift = 0;
                for _j in 0..4 {
                    for half in 0..2 {
                        let dl = d_all * f32::from(i16::from(scales[is]) - 32);
                        is += 1;
                        for l in 0..16 {
                            let l = l + 16 * half;
                            let q = i16::from(((q[l] >> shift) & 3) as i8) - if hm[l] & m != 0 { 0 } else { 4 };
                            y.push(dl * f32::from(q));
                        }
                    }
                    shift += 2;
                    m <<= 1;
                }
                q = &q[32..];
            }
        }
        BlockFormat::Q4K | BlockFormat::Q5K => {
            let five = format == BlockFormat::Q5K;
            let (d, min) = (f16_at(x, 0), f16_at(x, 2));
            let scales = &x[4..16];
            let qh = &x[16..48];
            let mut ql = if five { &x[48..176] } else { &x[16..144] };
            let (mut is, mut u1, mut u2) = (0, 1u8, 2u8);
            for _j in (0..256).step_by(64) {
                let (sc, m) = get_scale_min_k4(is, scales);
                let (d1, m1) = (d * f32::from(sc), min * f32::from(m));
                let (sc, m) = get_scale_min_k4(is + 1, scales);
                let (d2, m2) = (d * f32::from(sc), min * f32::from(m));
                for l in 0..32 {
                    let h = if five && qh[l] & u1 != 0 { 16 } else { 0 };
                    y.push(d1 * f32::from((ql[l] & 0xF) + h) - m1);
                }
                for l in 0..32 {
                    let h = if five && qh[l] & u2 != 0 { 16 } else { 0 };
                    y.push(d2 * f32::from((ql[l] >> 4) + h) - m2);
                }
                ql = &ql[32..];
                is += 2;
                u1 <<= 2;
                u2 <<= 2;
            }
        }
        BlockFormat::Q6K => {
            let d = f16_at(x, 208);
            let mut out = [0.0f32; 256];
            for n in 0..2 {
                let (ql, qh, sc) = (&x[64 * n..], &x[128 + 32 * n..], &x[192 + 8 * n..]);
                for l in 0..32 {
                    let is = l / 16;
                    let q1 = (((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i8) - 32;
                    let q2 = (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i8) - 32;
                    let q3 = (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8) - 32;
                    let q4 = (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8) - 32;
                    let s = |i: usize| f32::from(sc[is + i] as i8);
                    out[128 * n + l] = d * s(0) * f32::from(q1);
                    out[128 * n + l + 32] = d * s(2) * f32::from(q2);
                    out[128 * n + l + 64] = d * s(4) * f32::from(q3);
                    out[128 * n + l + 96] = d * s(6) * f32::from(q4);
                }
            }
            y.extend(out);
        }
        BlockFormat::F16 => y.extend((0..32).map(|j| f16_at(x, 2 * j))),
        BlockFormat::BF16 => {
            y.extend((0..32).map(|j| f32::from_bits(u32::from(u16::from_le_bytes([x[2 * j], x[2 * j + 1]])) << 16)));
        }
    }
    y
}

/// ggml's values of whole rows of blocks.
fn ggml_values(format: BlockFormat, bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(format.block_bytes()).flat_map(|b| ggml_block(format, b)).collect()
}

// ---------------------------------------------------------------------------------------------
// Test data.

/// Byte offsets of each format's f16 scales (ggml-common.h).
fn scale_offsets(format: BlockFormat) -> Vec<usize> {
    match format {
        BlockFormat::Q4_0 | BlockFormat::Q5_0 | BlockFormat::Q8_0 => vec![0],
        BlockFormat::Q4_1 | BlockFormat::Q5_1 | BlockFormat::Q4K | BlockFormat::Q5K => vec![0, 2],
        BlockFormat::Q2K => vec![80, 82],
        BlockFormat::Q3K => vec![108],
        BlockFormat::Q6K => vec![208],
        BlockFormat::F16 | BlockFormat::BF16 => (0..64).step_by(2).collect(),
    }
}

const SPECIAL_F16: [u16; 12] =
    [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00];

/// `blocks` random blocks: random bytes with finite scales of magnitude in [2^-8, 2^-2) (F16 and
/// BF16: every value), or with `special` one scale in three a special pattern.
fn random_blocks(rng: &mut Rng, format: BlockFormat, blocks: usize, special: bool) -> Vec<u8> {
    let block_bytes = format.block_bytes();
    let mut bytes: Vec<u8> = (0..blocks * block_bytes).map(|_| rng.next_u64().to_le_bytes()[5]).collect();
    for block in bytes.chunks_exact_mut(block_bytes) {
        for at in scale_offsets(format) {
            let mut bits = common::random_f16(rng);
            if format == BlockFormat::BF16 {
                // The same magnitudes as bfloat16: 2^-8 .. 2^-2.
                bits = (bits & 0x8000) | (((bits & 0x7c00) >> 3) + (112 << 7)) | (bits & 0x7f);
            }
            if special && rng.next_u64().is_multiple_of(3) {
                bits = SPECIAL_F16[usize::try_from(rng.next_u64() % 12).unwrap()];
            }
            block[at..at + 2].copy_from_slice(&bits.to_le_bytes());
        }
    }
    bytes
}

/// Bits equal, or both NaN (whose payload is unspecified where two NaNs meet).
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The kernel named `name` with its reference.
fn kernel(name: &str) -> (&'static Signature, CpuReference) {
    let def = kernel_defs().find(|k| k.signature.name == name).unwrap_or_else(|| panic!("no kernel {name}"));
    (def.signature, def.cpu)
}

fn suffix(format: BlockFormat) -> String {
    format.name().to_lowercase()
}

// ---------------------------------------------------------------------------------------------
// Launches.

/// `matvec_<t>` over `rows` rows of `w`, with `groups` work-groups; `y` as bits (sentinels past
/// the rows handled).
fn matvec(format: BlockFormat, w: &[u8], xs: &[f32], rows: usize, groups: usize) -> Result<Vec<u32>, KernelError> {
    let (sig, cpu) = kernel(&format!("matvec_{}", suffix(format)));
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, Y, rows);
    map_bytes(&mut memory, W, w);
    buffer(&mut memory, X, xs);
    let k = Kernarg::new(sig)
        .ptr("y", Y)
        .ptr("w", W)
        .ptr("x", X)
        .u32("rows", u32_of(rows))
        .u32("cols", u32_of(xs.len()))
        .bytes();
    cpu(&launch_1d(&k, u32_of(groups * 32), 32), &mut memory)?;
    Ok(read_bits(&memory, Y, rows))
}

/// `matmul_<t>` over `n` tokens of `cols` values in `xs`.
fn matmul(format: BlockFormat, w: &[u8], xs: &[f32], rows: usize, cols: usize) -> Result<Vec<u32>, KernelError> {
    let (sig, cpu) = kernel(&format!("matmul_{}", suffix(format)));
    let n = xs.len() / cols;
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, Y, n * rows);
    map_bytes(&mut memory, W, w);
    buffer(&mut memory, X, xs);
    let k = Kernarg::new(sig)
        .ptr("y", Y)
        .ptr("w", W)
        .ptr("x", X)
        .u32("rows", u32_of(rows))
        .u32("cols", u32_of(cols))
        .u32("n", u32_of(n))
        .bytes();
    cpu(&launch_1d(&k, u32_of(rows * 32), 32), &mut memory)?;
    Ok(read_bits(&memory, Y, n * rows))
}

/// `get_row_<t>` of token `tok` with `grid` work-items.
fn get_row(format: BlockFormat, table: &[u8], cols: usize, rows: u32, tok: u32, grid: u32) -> Vec<u32> {
    let (sig, cpu) = kernel(&format!("get_row_{}", suffix(format)));
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, Y, cols);
    map_bytes(&mut memory, W, table);
    map_bytes(&mut memory, TOKENS, &tok.to_le_bytes());
    let k = Kernarg::new(sig)
        .ptr("out", Y)
        .ptr("table", W)
        .ptr("token", TOKENS)
        .u32("cols", u32_of(cols))
        .u32("rows", rows)
        .group_size(64)
        .bytes();
    common::run(cpu, &launch_1d(&k, grid, 64), &mut memory);
    read_bits(&memory, Y, cols)
}

/// `get_rows_<t>` of `tokens` with `grid` work-items.
fn get_rows(format: BlockFormat, table: &[u8], cols: usize, rows: u32, tokens: &[u32], grid: u32) -> Vec<u32> {
    let (sig, cpu) = kernel(&format!("get_rows_{}", suffix(format)));
    let mut memory = HostMemory::new();
    sentinel_buffer(&mut memory, Y, tokens.len() * cols);
    map_bytes(&mut memory, W, table);
    let ids: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    map_bytes(&mut memory, TOKENS, &ids);
    let k = Kernarg::new(sig)
        .ptr("out", Y)
        .ptr("table", W)
        .ptr("tokens", TOKENS)
        .u32("cols", u32_of(cols))
        .u32("rows", rows)
        .u32("n", u32_of(tokens.len()))
        .group_size(128)
        .bytes();
    common::run(cpu, &launch_1d(&k, grid, 128), &mut memory);
    read_bits(&memory, Y, tokens.len() * cols)
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn every_value_is_ggmls_dequantisation() {
    let mut rng = Rng(11);
    for format in BlockFormat::ALL {
        let bytes = random_blocks(&mut rng, format, 400, true);
        let mut values = vec![0.0f32; 400 * format.block_values()];
        dequantize_row(format, &bytes, &mut values).unwrap();
        let expected = ggml_values(format, &bytes);
        for (i, (v, e)) in values.iter().zip(&expected).enumerate() {
            assert!(same(*v, *e), "{} value {i}: {:#010x} vs ggml {:#010x}", format.name(), v.to_bits(), e.to_bits());
        }
    }
}

#[test]
fn matvec_is_within_the_bound_of_its_f32_order() {
    let mut rng = Rng(12);
    for format in BlockFormat::ALL {
        // Up to 1024 chunks: a work-item adds up to 32 chunks.
        for (rows, cols) in [(5, 256), (37, 1024), (3, 256 * 40), (2, 256 * 128)] {
            let w = random_blocks(&mut rng, format, rows * cols / format.block_values(), false);
            let xs = rng.f32s(cols, -1.0, 1.0);
            let ys = matvec(format, &w, &xs, rows, rows).unwrap();
            let values = ggml_values(format, &w);
            // Per work-item at most 32 * ceil(chunks / 32) rounded additions, then 5 levels of the
            // tree, each product rounded once: relative error (k + 6) * 2^-24 of sum |w x|.
            let k = 32 * (cols / 32).div_ceil(32);
            let gamma = (k + 6) as f64 * 2f64.powi(-24) * 1.01;
            for (r, y) in ys[..rows].iter().enumerate() {
                let row = &values[r * cols..(r + 1) * cols];
                let exact: f64 = row.iter().zip(&xs).map(|(&w, &x)| f64::from(w) * f64::from(x)).sum();
                let magnitude: f64 = row.iter().zip(&xs).map(|(&w, &x)| (f64::from(w) * f64::from(x)).abs()).sum();
                let got = f64::from(f32::from_bits(*y));
                assert!(
                    (got - exact).abs() <= gamma * magnitude + 1e-30,
                    "{} {rows}x{cols} row {r}: {got} vs {exact} (bound {})",
                    format.name(),
                    gamma * magnitude
                );
            }
            assert!(ys[rows..].iter().all(|&b| b == SENTINEL), "{}: nothing past the rows", format.name());
        }
    }
}

/// A block of `format` whose every value is exactly 1.0, hand-encoded from the block layouts.
fn ones_block(format: BlockFormat) -> Vec<u8> {
    let one = 0x3c00u16.to_le_bytes();
    let mut b = vec![0u8; format.block_bytes()];
    match format {
        // d = 1, q - 8 = 1.
        BlockFormat::Q4_0 => {
            b[0..2].copy_from_slice(&one);
            b[2..18].fill(0x99);
        }
        // d = 1, m = 0, q = 1.
        BlockFormat::Q4_1 => {
            b[0..2].copy_from_slice(&one);
            b[4..20].fill(0x11);
        }
        // d = 1, q = 17 - 16: low nibbles 1, every fifth bit set.
        BlockFormat::Q5_0 => {
            b[0..2].copy_from_slice(&one);
            b[2..6].fill(0xff);
            b[6..22].fill(0x11);
        }
        // d = 1, m = 0, q = 1, no fifth bits.
        BlockFormat::Q5_1 => {
            b[0..2].copy_from_slice(&one);
            b[8..24].fill(0x11);
        }
        BlockFormat::Q8_0 => {
            b[0..2].copy_from_slice(&one);
            b[2..34].fill(1);
        }
        // Scales 1, mins 0, every 2-bit q 1, d = 1, dmin = 0.
        BlockFormat::Q2K => {
            b[0..16].fill(0x01);
            b[16..80].fill(0x55);
            b[80..82].copy_from_slice(&one);
        }
        // Every 6-bit scale 33 (low nibbles 1, top bits 2), q = 1 with its hmask bit set, d = 1.
        BlockFormat::Q3K => {
            b[0..32].fill(0xff);
            b[32..96].fill(0x55);
            b[96..104].fill(0x11);
            b[104..108].fill(0xaa);
            b[108..110].copy_from_slice(&one);
        }
        // d = 1, dmin = 0, every 6-bit scale 1 and min 0, q = 1 (Q5_K: no fifth bits).
        BlockFormat::Q4K | BlockFormat::Q5K => {
            b[0..2].copy_from_slice(&one);
            b[4..8].fill(0x01);
            b[12..16].fill(0x01);
            let qs = if format == BlockFormat::Q4K { 16 } else { 48 };
            b[qs..].fill(0x11);
        }
        // q = 33 - 32: low nibbles 1, high bits 2; scales 1; d = 1.
        BlockFormat::Q6K => {
            b[0..128].fill(0x11);
            b[128..192].fill(0xaa);
            b[192..208].fill(1);
            b[208..210].copy_from_slice(&one);
        }
        BlockFormat::F16 => b.chunks_exact_mut(2).for_each(|v| v.copy_from_slice(&one)),
        BlockFormat::BF16 => b.chunks_exact_mut(2).for_each(|v| v.copy_from_slice(&0x3f80u16.to_le_bytes())),
    }
    b
}

#[test]
fn the_chunk_order_decides_hand_derived_sums() {
    for format in BlockFormat::ALL {
        let block = ones_block(format);
        let w1 = ones_block(format).repeat(512 / format.block_values());
        assert!(ggml_values(format, &w1).iter().all(|&v| v == 1.0), "{}: the block encodes ones", format.name());
        // Q4_1 and Q8_0 add a block by two chains of fused multiply-adds, elements 0..15 and
        // 16..31, then the chains' sum times d (m = 0 here): chunk 0 of work-item 0 is
        // (2^24 + 15 ones, each lost) + 16 = 2^24 + 16, where the other formats' one chain
        // loses all 31 ones after 2^24.
        let fused = matches!(format, BlockFormat::Q4_1 | BlockFormat::Q8_0);
        // 16 chunks, one per work-item 0..15: work-item 0 adds 2^24 then 31 ones, each lost to
        // rounding (ties to even); the others add 32 ones. The tree pairs 0+8, 0+4, 0+2, 0+1:
        // 2^24 + 32 + 64 + 128 + 256 = 2^24 + 480 (fused: 2^24 + 16 + 480 = 2^24 + 496). In
        // column order every 1 after 2^24 is lost (2^24); exactly, 2^24 + 511.
        let mut xs = vec![1.0f32; 512];
        xs[0] = 16_777_216.0;
        let y = matvec(format, &w1, &xs, 1, 1).unwrap()[0];
        let expected = if fused { 16_777_712.0 } else { 16_777_696.0 };
        assert_eq!(f32::from_bits(y), expected, "{}", format.name());
        // 64 chunks: work-item t takes chunks t and t + 32. Chunk 32 holds twos, which work-item
        // 0 adds exactly after its 2^24 (+64); every other work-item sums 64. Tree: 2^24 + 64 +
        // 64, + 128, + 256, + 512, + 1024 = 2^24 + 2048. A work-item taking chunks 2t, 2t + 1
        // would lose chunk 1's ones and give work-item 16 the twos: 2^24 + 2016. Fused, work-item
        // 0 keeps its chunk 0's 16 as well: 2^24 + 2064.
        let w2 = block.repeat(2048 / format.block_values());
        let mut xs = vec![1.0f32; 2048];
        xs[0] = 16_777_216.0;
        xs[32 * 32..33 * 32].fill(2.0);
        let y = matvec(format, &w2, &xs, 1, 1).unwrap()[0];
        let expected = if fused { 16_779_280.0 } else { 16_779_264.0 };
        assert_eq!(f32::from_bits(y), expected, "{}", format.name());
        // The same in every row of a taller matrix (the references take rows in groups).
        let ys = matvec(format, &w2.repeat(11), &xs, 11, 11).unwrap();
        assert!(ys[..11].iter().all(|&b| b == y), "{}", format.name());
        // The batched product gives the same bits for the same tokens.
        let both: Vec<f32> = xs.iter().chain(&xs).copied().collect();
        assert_eq!(matmul(format, &w2, &both, 1, 2048).unwrap()[..2], [y, y], "{}", format.name());
    }
}

#[test]
fn matmul_rows_are_matvec_bit_for_bit() {
    let mut rng = Rng(13);
    // Token counts below, at and past a tile of 8 and the references' tiles of 32, rows that are
    // not a multiple of a row group, and rows whose work-items take several chunks.
    for format in BlockFormat::ALL {
        for (rows, cols, n) in [(9, 256, 1), (13, 512, 8), (3, 256, 37), (17, 1024, 9), (1, 8448, 3), (5, 256, 70)] {
            if cols % format.block_values() != 0 {
                continue;
            }
            let w = random_blocks(&mut rng, format, rows * cols / format.block_values(), true);
            let xs = rng.f32s(n * cols, -2.0, 2.0);
            let batched = matmul(format, &w, &xs, rows, cols).unwrap();
            for (t, x) in xs.chunks_exact(cols).enumerate() {
                let single = matvec(format, &w, x, rows, rows).unwrap();
                for r in 0..rows {
                    let (b, s) = (f32::from_bits(batched[t * rows + r]), f32::from_bits(single[r]));
                    assert!(same(b, s), "{} {rows}x{cols} n {n}: token {t} row {r}: {b:e} vs {s:e}", format.name());
                }
            }
            assert!(batched[n * rows..].iter().all(|&b| b == SENTINEL));
        }
    }
}

#[test]
fn matvec_stops_at_the_work_groups_launched() {
    let mut rng = Rng(14);
    for format in [BlockFormat::Q4_0, BlockFormat::Q6K, BlockFormat::BF16] {
        let (rows, cols) = (10, 512);
        let w = random_blocks(&mut rng, format, rows * cols / format.block_values(), false);
        let xs = rng.f32s(cols, -1.0, 1.0);
        let all = matvec(format, &w, &xs, rows, rows).unwrap();
        let some = matvec(format, &w, &xs, rows, 4).unwrap();
        assert_eq!(some[..4], all[..4], "{}", format.name());
        assert!(some[4..].iter().all(|&b| b == SENTINEL), "{}", format.name());
    }
}

#[test]
fn gathers_give_the_dequantised_rows_and_skip_unknown_tokens() {
    let mut rng = Rng(15);
    for format in BlockFormat::ALL {
        let (rows, cols) = (5u32, 512usize);
        let table = random_blocks(&mut rng, format, 5 * cols / format.block_values(), true);
        let values = ggml_values(format, &table);
        let row = |t: usize| &values[t * cols..(t + 1) * cols];
        let name = format.name();
        for tok in 0..rows as usize {
            let out = get_row(format, &table, cols, rows, u32_of(tok), u32_of(cols));
            assert!(out[..cols].iter().zip(row(tok)).all(|(&o, &e)| same(f32::from_bits(o), e)), "{name} token {tok}");
            assert!(out[cols..].iter().all(|&b| b == SENTINEL));
        }
        // A grid shorter than the row: the first 300 values only.
        let out = get_row(format, &table, cols, rows, 3, 300);
        assert!(out[..300].iter().zip(row(3)).all(|(&o, &e)| same(f32::from_bits(o), e)), "{name}");
        assert!(out[300..].iter().all(|&b| b == SENTINEL), "{name}");
        // A token id past the table writes nothing.
        assert!(get_row(format, &table, cols, rows, rows, 512).iter().all(|&b| b == SENTINEL), "{name}");
        assert!(get_row(format, &table, cols, rows, u32::MAX, 512).iter().all(|&b| b == SENTINEL), "{name}");
        // Batched: rows t of out are tokens[t]'s, unknown ids skipped, the grid cut inside row 3.
        let tokens = [4, 0, 9, 2, 4];
        let out = get_rows(format, &table, cols, rows, &tokens, u32_of(3 * cols + 100));
        for (t, &tok) in tokens.iter().enumerate() {
            let got = &out[t * cols..(t + 1) * cols];
            let handled = (3 * cols + 100).saturating_sub(t * cols).min(cols);
            if tok < rows {
                let expected = row(tok as usize);
                assert!(got[..handled].iter().zip(expected).all(|(&o, &e)| same(f32::from_bits(o), e)), "{name} t {t}");
                assert!(got[handled..].iter().all(|&b| b == SENTINEL), "{name} t {t}");
            } else {
                assert!(got.iter().all(|&b| b == SENTINEL), "{name} t {t}: unknown id");
            }
        }
    }
}

#[test]
fn bad_launches_are_typed_errors() {
    let mut rng = Rng(16);
    for format in BlockFormat::ALL {
        let values = u32_of(format.block_values());
        let w = random_blocks(&mut rng, format, 4 * 512 / format.block_values(), false);
        let xs = rng.f32s(512, -1.0, 1.0);
        let name = format.name();
        // cols not a whole number of blocks: 32 more than a multiple (and for the K formats a
        // multiple of 32 that is not one of 256).
        let bad_cols = if values == 32 { 48 } else { 288 };
        let (sig, cpu) = kernel(&format!("matvec_{}", suffix(format)));
        let mut memory = HostMemory::new();
        sentinel_buffer(&mut memory, Y, 4);
        map_bytes(&mut memory, W, &w);
        buffer(&mut memory, X, &xs);
        let args =
            |cols: u32| Kernarg::new(sig).ptr("y", Y).ptr("w", W).ptr("x", X).u32("rows", 4).u32("cols", cols).bytes();
        let k = args(bad_cols);
        assert_eq!(
            cpu(&launch_1d(&k, 128, 32), &mut memory),
            Err(KernelError::ColsNotBlockMultiple { cols: bad_cols, block: values }),
            "{name}"
        );
        let k = args(512);
        assert_eq!(
            cpu(&launch_1d(&k, 128, 16), &mut memory),
            Err(KernelError::WorkgroupSizeRequired { workgroup_size_x: 16, required: 32 }),
            "{name}"
        );
        assert_eq!(
            cpu(&launch_1d(&k, 100, 32), &mut memory),
            Err(KernelError::PartialWorkgroup { grid_size_x: 100, workgroup_size_x: 32 }),
            "{name}"
        );
        // Weights past the mapping: a fault on w.
        let k = Kernarg::new(sig).ptr("y", Y).ptr("w", W + 64).ptr("x", X).u32("rows", 4).u32("cols", 512).bytes();
        assert!(
            matches!(cpu(&launch_1d(&k, 128, 32), &mut memory), Err(KernelError::Memory { arg: "w", .. })),
            "{name}"
        );
        let (sig, cpu) = kernel(&format!("matmul_{}", suffix(format)));
        let k = Kernarg::new(sig)
            .ptr("y", Y)
            .ptr("w", W)
            .ptr("x", X)
            .u32("rows", 4)
            .u32("cols", 512)
            .u32("n", u32::MAX - 2)
            .bytes();
        assert_eq!(
            cpu(&launch_1d(&k, 128, 32), &mut memory),
            Err(KernelError::StridedLoopWraps { arg: "n", count: u32::MAX - 2, limit: u32::MAX - 7 }),
            "{name}"
        );
        let (sig, cpu) = kernel(&format!("get_row_{}", suffix(format)));
        map_bytes(&mut memory, TOKENS, &0u32.to_le_bytes());
        let k = Kernarg::new(sig)
            .ptr("out", Y)
            .ptr("table", W)
            .ptr("token", TOKENS)
            .u32("cols", bad_cols)
            .u32("rows", 1)
            .group_size(32)
            .bytes();
        assert_eq!(
            cpu(&launch_1d(&k, 64, 32), &mut memory),
            Err(KernelError::ColsNotBlockMultiple { cols: bad_cols, block: values }),
            "{name}"
        );
        let (sig, cpu) = kernel(&format!("get_rows_{}", suffix(format)));
        let k = Kernarg::new(sig)
            .ptr("out", Y)
            .ptr("table", W)
            .ptr("tokens", TOKENS)
            .u32("cols", bad_cols)
            .u32("rows", 1)
            .u32("n", 1)
            .group_size(32)
            .bytes();
        assert_eq!(
            cpu(&launch_1d(&k, 64, 32), &mut memory),
            Err(KernelError::ColsNotBlockMultiple { cols: bad_cols, block: values }),
            "{name}"
        );
    }
}
