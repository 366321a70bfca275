//! The CPU references the soft device runs every token of a 135M-parameter llama model with:
//! the Q4_1 matrix-vector product at the model's FFN shapes (1536 x 576 and 576 x 1536), with
//! the f32 `matvec` reference at the same shapes as the baseline, the same Q4_1 product over 64
//! different matrices in turn (35 MB: past the core's cache, as a decode token's weights are)
//! and the Q8_0 product at the model's output shape (49152 x 576, 30 MB), the batched
//! `matmul_q4_1` of a 128-token prefill pass at each of the model's projection shapes (its time
//! over 128 tokens against `matvec_q4_1`'s over one is the batching gain), attention over 256
//! positions (9 query heads, 3 KV heads, head size 64), and `attention_rows` over a 128-token
//! pass.

use criterion::{Criterion, criterion_group, criterion_main};
use kernel_refs::cpu::{self, CpuReference, Q4_1_BLOCK_BYTES};
use kernel_refs::launch::Launch;
use kernel_refs::memory::{DeviceMemory, HostMemory};
use kernels::signature::{self, ArgKind, Signature};

const Y: u64 = 0x1000_0000;
const A: u64 = 0x2000_0000;
const X: u64 = 0x3000_0000;
const K: u64 = 0x4000_0000;
const V: u64 = 0x5000_0000;
const S: u64 = 0x6000_0000;

/// A kernarg segment for `sig`: named pointer and `u32`/`f32` arguments, `hidden_group_size_x`.
fn kernarg(sig: &Signature, ptrs: &[(&str, u64)], u32s: &[(&str, u32)], f32s: &[(&str, f32)], wg: u16) -> Vec<u8> {
    let mut bytes = vec![0u8; 512];
    for arg in sig.explicit_args {
        let range = arg.offset..arg.offset + arg.size;
        let value: Vec<u8> = match arg.kind {
            ArgKind::GlobalBuffer => ptrs.iter().find(|(n, _)| *n == arg.name).unwrap().1.to_le_bytes().to_vec(),
            ArgKind::U32 => u32s.iter().find(|(n, _)| *n == arg.name).unwrap().1.to_le_bytes().to_vec(),
            ArgKind::F32 => f32s.iter().find(|(n, _)| *n == arg.name).unwrap().1.to_le_bytes().to_vec(),
        };
        bytes[range].copy_from_slice(&value);
    }
    if let Some(offset) = sig.hidden_group_size_x {
        bytes[offset..offset + 2].copy_from_slice(&wg.to_le_bytes());
    }
    bytes
}

/// Deterministic bytes (SplitMix64).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let z = (state ^ (state >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            (z >> 56) as u8
        })
        .collect()
}

/// Small finite f32 values.
fn floats(len: usize, seed: u64) -> Vec<u8> {
    noise(len, seed).iter().flat_map(|&b| (f32::from(b) / 256.0 - 0.5).to_le_bytes()).collect()
}

/// Q4_1 blocks with d, m = 2^-6 (f16 0x2400) and random nibbles.
fn q4_1(blocks: usize) -> Vec<u8> {
    let qs = noise(16 * blocks, 5);
    let mut out = Vec::with_capacity(blocks * Q4_1_BLOCK_BYTES);
    for b in 0..blocks {
        out.extend([0x00, 0x24, 0x00, 0xa4]);
        out.extend(&qs[16 * b..16 * b + 16]);
    }
    out
}

fn map(memory: &mut HostMemory, base: u64, bytes: &[u8]) {
    memory.allocate(base, bytes.len() as u64).unwrap();
    memory.write(base, bytes).unwrap();
}

fn bench_launch(c: &mut Criterion, name: &str, cpu: CpuReference, memory: &mut HostMemory, launch: &Launch<'_>) {
    cpu(launch, memory).unwrap();
    c.bench_function(name, |b| b.iter(|| cpu(launch, memory).unwrap()));
}

fn matvecs(c: &mut Criterion) {
    for (rows, cols) in [(1536u32, 576u32), (576, 1536)] {
        let (r, n) = (rows as usize, cols as usize);
        let mut memory = HostMemory::new();
        map(&mut memory, Y, &vec![0; 4 * r]);
        map(&mut memory, X, &floats(n, 3));
        map(&mut memory, A, &q4_1(r * n / 32));
        let k = kernarg(
            &signature::MATVEC_Q4_1,
            &[("y", Y), ("w", A), ("x", X)],
            &[("rows", rows), ("cols", cols)],
            &[],
            32,
        );
        let launch =
            Launch { kernarg: &k, grid_size: [rows * 32, 1, 1], workgroup_size: [32, 1, 1], dynamic_lds_bytes: 0 };
        bench_launch(c, &format!("matvec_q4_1 {rows}x{cols}"), cpu::matvec_q4_1, &mut memory, &launch);

        let mut memory = HostMemory::new();
        map(&mut memory, Y, &vec![0; 4 * r]);
        map(&mut memory, X, &floats(n, 3));
        map(&mut memory, A, &floats(r * n, 7));
        let k =
            kernarg(&signature::MATVEC, &[("y", Y), ("a", A), ("x", X)], &[("rows", rows), ("cols", cols)], &[], 64);
        let launch = Launch { kernarg: &k, grid_size: [rows, 1, 1], workgroup_size: [64, 1, 1], dynamic_lds_bytes: 0 };
        bench_launch(c, &format!("matvec f32 {rows}x{cols} (baseline)"), cpu::matvec, &mut memory, &launch);
    }
}

fn attention(c: &mut Criterion) {
    let (n, heads, kv_heads, head_dim) = (256u32, 9u32, 3u32, 64u32);
    let cache = (n * kv_heads * head_dim) as usize;
    let mut memory = HostMemory::new();
    map(&mut memory, Y, &vec![0; 4 * (heads * head_dim) as usize]);
    map(&mut memory, X, &floats((heads * head_dim) as usize, 11));
    map(&mut memory, K, &floats(cache, 13));
    map(&mut memory, V, &floats(cache, 17));
    map(&mut memory, S, &vec![0; 4 * (heads * n) as usize]);
    let k = kernarg(
        &signature::ATTENTION,
        &[("out", Y), ("q", X), ("k_cache", K), ("v_cache", V), ("scores", S)],
        &[("n", n), ("heads", heads), ("kv_heads", kv_heads), ("head_dim", head_dim), ("scores_stride", n)],
        &[("scale", 0.125)],
        64,
    );
    let launch =
        Launch { kernarg: &k, grid_size: [heads * 64, 1, 1], workgroup_size: [64, 1, 1], dynamic_lds_bytes: 0 };
    bench_launch(c, "attention n=256 heads=9 kv_heads=3 head_dim=64", cpu::attention, &mut memory, &launch);
}

/// `attention_rows` of a 128-token prefill pass from position 0 (the model's heads), scores rows
/// of a 2048-position context.
fn attention_rows(c: &mut Criterion) {
    let (n, heads, kv_heads, head_dim, stride) = (128u32, 9u32, 3u32, 64u32, 2048u32);
    let (rows, cache) = ((n * heads * head_dim) as usize, (n * kv_heads * head_dim) as usize);
    let mut memory = HostMemory::new();
    map(&mut memory, Y, &vec![0; 4 * rows]);
    map(&mut memory, X, &floats(rows, 11));
    map(&mut memory, K, &floats(cache, 13));
    map(&mut memory, V, &floats(cache, 17));
    map(&mut memory, S, &vec![0; 4 * (n * heads * stride) as usize]);
    let k = kernarg(
        &signature::ATTENTION_ROWS,
        &[("out", Y), ("q", X), ("k_cache", K), ("v_cache", V), ("scores", S)],
        &[
            ("pos0", 0),
            ("n", n),
            ("heads", heads),
            ("kv_heads", kv_heads),
            ("head_dim", head_dim),
            ("scores_stride", stride),
        ],
        &[("scale", 0.125)],
        64,
    );
    let launch =
        Launch { kernarg: &k, grid_size: [n * heads * 64, 1, 1], workgroup_size: [64, 1, 1], dynamic_lds_bytes: 0 };
    bench_launch(c, "attention_rows n=128 heads=9 kv_heads=3 head_dim=64", cpu::attention_rows, &mut memory, &launch);
}

fn matmul(c: &mut Criterion) {
    // The model's projections: gate and up, q and out, k and v, down.
    for (rows, cols) in [(1536u32, 576u32), (576, 576), (192, 576), (576, 1536)] {
        matmul_shape(c, rows, cols, 128);
    }
}

fn matmul_shape(c: &mut Criterion, rows: u32, cols: u32, n: u32) {
    let (r, k, t) = (rows as usize, cols as usize, n as usize);
    let mut memory = HostMemory::new();
    map(&mut memory, Y, &vec![0; 4 * r * t]);
    map(&mut memory, X, &floats(k * t, 3));
    map(&mut memory, A, &q4_1(r * k / 32));
    let kernarg_bytes = kernarg(
        &signature::MATMUL_Q4_1,
        &[("y", Y), ("w", A), ("x", X)],
        &[("rows", rows), ("cols", cols), ("n", n)],
        &[],
        32,
    );
    let launch = Launch {
        kernarg: &kernarg_bytes,
        grid_size: [rows * 32, 1, 1],
        workgroup_size: [32, 1, 1],
        dynamic_lds_bytes: 0,
    };
    bench_launch(c, &format!("matmul_q4_1 {rows}x{cols} n={n}"), cpu::matmul_q4_1, &mut memory, &launch);
}

/// The products as a decode token runs them: every matrix read once per token, from past the
/// core's own cache.
fn streamed(c: &mut Criterion) {
    const COPIES: u64 = 64;
    let (rows, cols) = (1536u32, 576u32);
    let (r, n) = (rows as usize, cols as usize);
    let mut memory = HostMemory::new();
    map(&mut memory, Y, &vec![0; 4 * r]);
    map(&mut memory, X, &floats(n, 3));
    let matrix = q4_1(r * n / 32);
    let stride = (matrix.len() as u64).next_multiple_of(4096);
    let kernargs: Vec<Vec<u8>> = (0..COPIES)
        .map(|i| {
            map(&mut memory, A + i * stride, &matrix);
            kernarg(
                &signature::MATVEC_Q4_1,
                &[("y", Y), ("w", A + i * stride), ("x", X)],
                &[("rows", rows), ("cols", cols)],
                &[],
                32,
            )
        })
        .collect();
    let mut next = 0;
    c.bench_function(&format!("matvec_q4_1 {rows}x{cols} x{COPIES} matrices in turn"), |b| {
        b.iter(|| {
            let launch = Launch {
                kernarg: &kernargs[next % kernargs.len()],
                grid_size: [rows * 32, 1, 1],
                workgroup_size: [32, 1, 1],
                dynamic_lds_bytes: 0,
            };
            next += 1;
            cpu::matvec_q4_1(&launch, &mut memory).unwrap();
        })
    });

    let (rows, cols) = (49152u32, 576u32);
    let (r, n) = (rows as usize, cols as usize);
    let mut memory = HostMemory::new();
    map(&mut memory, Y, &vec![0; 4 * r]);
    map(&mut memory, X, &floats(n, 3));
    let qs = noise(r * n, 9);
    let table: Vec<u8> = qs.chunks_exact(32).flat_map(|q| [0x00, 0x24].into_iter().chain(q.iter().copied())).collect();
    map(&mut memory, A, &table);
    let k =
        kernarg(&signature::MATVEC_Q8_0, &[("y", Y), ("w", A), ("x", X)], &[("rows", rows), ("cols", cols)], &[], 32);
    let launch = Launch { kernarg: &k, grid_size: [rows * 32, 1, 1], workgroup_size: [32, 1, 1], dynamic_lds_bytes: 0 };
    bench_launch(c, &format!("matvec_q8_0 {rows}x{cols}"), cpu::matvec_q8_0, &mut memory, &launch);
}

criterion_group!(benches, matvecs, streamed, matmul, attention, attention_rows);
criterion_main!(benches);
