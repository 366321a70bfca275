//! Every supported type against gguf-py's `gguf.quants` (llama.cpp's Python package), bit for
//! bit: random blocks decoded by both, and, for the types gguf-py can encode, random values
//! encoded by both. Each test draws its cases with proptest, writes them to one file and runs
//! `tests/data/quants_with_gguf_py.py` once on the batch.
//!
//! Needs `REDLINE_GGUF_PY` naming a Python interpreter with `gguf` and `numpy`; without it the
//! tests say so and pass (under `CI=true` they fail).
//!
//! Where numpy and this crate differ, the difference is stated and compared exactly:
//! - numpy's float16 → float32 cast keeps a signalling NaN signalling (f16 0x7c01 becomes
//!   0x7f80_2000); this crate, like ggml's F16C conversion (`vcvtph2ps`), quiets it
//!   (0x7fc0_2000). That shows in F16 tensors only: in every other type an f16 field reaches the
//!   output through an f32 operation, which quiets the NaN on both sides.
//! - numpy's float32 → float16 cast keeps a NaN signalling too: it stores the top 10 payload
//!   bits as they are (0x7c01 when they are all zero), where this crate, like `vcvtps2ph`, sets
//!   the quiet bit (0x7e00 | payload).
//! - Encoders are compared on finite input. For NaN and infinities ggml's C leaves the
//!   float-to-integer conversion undefined and numpy's reductions (`min`, `max`, `argmax`)
//!   pick NaN where ggml's comparisons skip it; this crate follows ggml and clamps.
//! - Blocks whose deciding value is a zero of either sign are generated with +0.0 only: which
//!   zero numpy's `min`/`max` return among ±0 is unspecified, and ggml's Q4_0/Q5_0 scan starts
//!   from `max = 0.0f` where gguf-py takes the block's first element.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use gguf::GgmlType;
use gguf::f16::f16_to_f32;
use gguf::quant;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

/// Random blocks decoded per quantized type (per float type: values).
const DEQUANT_BLOCKS: usize = 8192;
/// Random blocks encoded per type gguf-py can encode.
const QUANT_BLOCKS: usize = 8192;

fn python() -> Option<OsString> {
    let python = std::env::var_os("REDLINE_GGUF_PY");
    if python.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "REDLINE_GGUF_PY is not set; CI needs a Python with gguf"
        );
        eprintln!("REDLINE_GGUF_PY is not set: skipping the gguf-py comparison");
    }
    python
}

/// Runs the script once on `input`: `mode` is `dequantize` or `quantize`.
fn gguf_py(python: &OsString, mode: &str, ty: GgmlType, input: &[u8]) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let stem = format!("gguf-py-{mode}-{ty}");
    let (src, dst) = (dir.join(format!("{stem}.in")), dir.join(format!("{stem}.out")));
    std::fs::write(&src, input).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/quants_with_gguf_py.py");
    let out = Command::new(python).arg(script).arg(mode).arg(ty.to_string()).arg(&src).arg(&dst).output().unwrap();
    eprint!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "gguf-py failed on {mode} {ty}");
    std::fs::read(&dst).unwrap()
}

/// `n` values drawn from `strategy` (a fresh random seed each run; a failure prints the case).
fn draw<S: Strategy>(strategy: &S, n: usize) -> Vec<S::Value> {
    let mut runner = TestRunner::default();
    (0..n).map(|_| strategy.new_tree(&mut runner).expect("strategies here never reject").current()).collect()
}

fn f32s(bytes: &[u8]) -> Vec<u32> {
    bytes.as_chunks::<4>().0.iter().map(|b| u32::from_le_bytes(*b)).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// f16 bit patterns that scales must survive: ±0, the smallest and largest subnormals, the
/// smallest normal, ±1, ±max, ±inf, quiet and signalling NaNs with and without payload.
const SPECIAL_F16: [u16; 16] = [
    0x0000, 0x8000, 0x0001, 0x03ff, 0x8200, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00,
    0x7c01, 0x7d55,
];

/// The f16 fields of each block type, by byte offset (`ggml-common.h`): the scales and minimums.
fn half_fields(ty: GgmlType) -> &'static [usize] {
    match ty {
        GgmlType::F16 | GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => &[0],
        GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4K | GgmlType::Q5K => &[0, 2],
        GgmlType::Q2K => &[80, 82],
        GgmlType::Q3K => &[108],
        GgmlType::Q6K => &[208],
        _ => &[],
    }
}

fn block_bytes(ty: GgmlType) -> usize {
    usize::try_from(ty.layout().unwrap().block_bytes).unwrap()
}

fn block_elems(ty: GgmlType) -> usize {
    usize::try_from(ty.layout().unwrap().block_elems).unwrap()
}

/// Blocks of `ty`: raw random bytes, or random bytes whose f16 fields are each a special value
/// or random bits.
fn random_blocks(ty: GgmlType) -> impl Strategy<Value = Vec<u8>> {
    let n = block_bytes(ty);
    let fields = half_fields(ty);
    let half = prop_oneof![select(&SPECIAL_F16[..]), any::<u16>()];
    let special = (proptest::collection::vec(any::<u8>(), n), proptest::collection::vec(half, fields.len())).prop_map(
        move |(mut bytes, halves)| {
            for (&at, h) in fields.iter().zip(halves) {
                bytes[at..at + 2].copy_from_slice(&h.to_le_bytes());
            }
            bytes
        },
    );
    prop_oneof![proptest::collection::vec(any::<u8>(), n), special]
}

/// What gguf-py's output for an element must be, given this crate's `ours`: equal bits, except
/// that an F16 signalling NaN stays signalling in numpy (see the module doc).
fn agrees(ty: GgmlType, ours: u32, theirs: u32) -> bool {
    const QUIET: u32 = 0x0040_0000;
    let theirs_nan = f32::from_bits(theirs).is_nan();
    if ty == GgmlType::F16 && theirs_nan && theirs & QUIET == 0 {
        return ours == theirs | QUIET;
    }
    ours == theirs
}

/// Decodes `blocks` of `ty` here (whole row, and element by element) and with gguf-py, and
/// compares every value bit for bit.
fn compare_dequantize(python: &OsString, ty: GgmlType, blocks: &[Vec<u8>]) {
    let bytes: Vec<u8> = blocks.concat();
    let mut ours = vec![0f32; blocks.len() * block_elems(ty)];
    quant::dequantize_row(ty, &bytes, &mut ours).unwrap();
    let theirs = f32s(&gguf_py(python, "dequantize", ty, &bytes));
    assert_eq!(theirs.len(), ours.len());
    let per_block = block_elems(ty);
    for (k, (o, &t)) in ours.iter().zip(&theirs).enumerate() {
        let block = &blocks[k / per_block];
        assert!(
            agrees(ty, o.to_bits(), t),
            "{ty} block {} ({}) value {}: ours {:#010x}, gguf-py {t:#010x}",
            k / per_block,
            hex(block),
            k % per_block,
            o.to_bits()
        );
    }
    // The per-element entry point gives the same bits as the row decoder, for every element of
    // a few blocks' worth of rows (each element of the first 64 blocks).
    let some = &bytes[..bytes.len().min(64 * block_bytes(ty))];
    for (k, o) in ours.iter().enumerate().take(some.len() / block_bytes(ty) * per_block) {
        let v = quant::dequantize_value(ty, some, k).unwrap();
        assert_eq!(v.to_bits(), o.to_bits(), "{ty} element {k}");
    }
    eprintln!("{ty}: {} blocks ({} values) equal to gguf-py's", blocks.len(), ours.len());
}

fn dequantize_random(ty: GgmlType) {
    let Some(python) = python() else { return };
    let mut blocks = draw(&random_blocks(ty), DEQUANT_BLOCKS);
    // Every special value in every f16 field (other fields random), once each.
    for (i, &at) in half_fields(ty).iter().enumerate() {
        for (s, &h) in SPECIAL_F16.iter().enumerate() {
            let mut b = blocks[(i * SPECIAL_F16.len() + s) % blocks.len()].clone();
            b[at..at + 2].copy_from_slice(&h.to_le_bytes());
            blocks.push(b);
        }
    }
    compare_dequantize(&python, ty, &blocks);
}

#[test]
fn q4_0_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q4_0);
}

#[test]
fn q4_1_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q4_1);
}

#[test]
fn q5_0_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q5_0);
}

#[test]
fn q5_1_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q5_1);
}

#[test]
fn q8_0_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q8_0);
}

#[test]
fn q2_k_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q2K);
}

#[test]
fn q3_k_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q3K);
}

#[test]
fn q4_k_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q4K);
}

#[test]
fn q5_k_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q5K);
}

#[test]
fn q6_k_dequantizes_as_gguf_py() {
    dequantize_random(GgmlType::Q6K);
}

/// F16 and BF16: all 65,536 bit patterns, in order.
#[test]
fn f16_and_bf16_dequantize_as_gguf_py_for_every_pattern() {
    let Some(python) = python() else { return };
    for ty in [GgmlType::F16, GgmlType::Bf16] {
        let blocks: Vec<Vec<u8>> = (0..=u16::MAX).map(|h| h.to_le_bytes().to_vec()).collect();
        compare_dequantize(&python, ty, &blocks);
    }
}

#[test]
fn f32_dequantizes_as_gguf_py() {
    let Some(python) = python() else { return };
    let blocks = draw(&any::<u32>().prop_map(|b| b.to_le_bytes().to_vec()), DEQUANT_BLOCKS);
    compare_dequantize(&python, GgmlType::F32, &blocks);
}

/// A finite f32 with −0.0 made +0.0 (see the module doc).
fn plus_zero(v: f32) -> f32 {
    if v == 0.0 { 0.0 } else { v }
}

/// Blocks of 32 finite values of the kinds that reach ggml's quantizers' edge cases: uniform
/// at a random scale over 60 decades; multiples of a scale (the `x + 0.5` and `roundf` ties);
/// f16 values; a repeated value among zeros.
fn finite_block() -> impl Strategy<Value = Vec<f32>> {
    let uniform = (-30i32..30)
        .prop_flat_map(|e| proptest::collection::vec(-1f32..1.0, 32).prop_map(move |v| (v, 10f32.powi(e))))
        .prop_map(|(v, s)| v.into_iter().map(|x| plus_zero(x * s)).collect());
    let grid = (1u16..2048, -20i32..20, proptest::collection::vec(-40i16..40, 32)).prop_map(|(a, p, k)| {
        let step = f32::from(a) * 2f32.powi(p);
        k.into_iter().map(|k| plus_zero(f32::from(k) * step / 2.0)).collect()
    });
    let halves = proptest::collection::vec(any::<u16>(), 32)
        .prop_map(|h| h.into_iter().map(f16_to_f32).map(|v| if v.is_finite() { plus_zero(v) } else { 1.0 }).collect());
    let sparse = (-1e6f32..1e6, proptest::collection::vec(any::<bool>(), 32))
        .prop_map(|(v, at)| at.into_iter().map(|on| if on { plus_zero(v) } else { 0.0 }).collect());
    prop_oneof![uniform, grid, halves, sparse]
}

/// Encodes `values` (whole blocks) here and with gguf-py and compares the bytes per block.
fn compare_quantize(python: &OsString, ty: GgmlType, values: &[f32], same: impl Fn(&[f32], &[u8], &[u8]) -> bool) {
    let ours = quant::quantize(ty, values).unwrap();
    let input: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let theirs = gguf_py(python, "quantize", ty, &input);
    assert_eq!(theirs.len(), ours.len());
    let (n, b) = (block_elems(ty), block_bytes(ty));
    for (i, ((x, o), t)) in values.chunks(n).zip(ours.chunks(b)).zip(theirs.chunks(b)).enumerate() {
        assert!(same(x, o, t), "{ty} block {i}: input {x:?}: ours {}, gguf-py {}", hex(o), hex(t));
    }
    eprintln!("{ty}: {} blocks encoded as gguf-py encodes them", values.len() / n);
}

fn quantize_random(ty: GgmlType) {
    let Some(python) = python() else { return };
    let values: Vec<f32> = draw(&finite_block(), QUANT_BLOCKS).concat();
    compare_quantize(&python, ty, &values, |_, o, t| o == t);
}

#[test]
fn q4_0_quantizes_as_gguf_py() {
    quantize_random(GgmlType::Q4_0);
}

#[test]
fn q4_1_quantizes_as_gguf_py() {
    quantize_random(GgmlType::Q4_1);
}

#[test]
fn q5_0_quantizes_as_gguf_py() {
    quantize_random(GgmlType::Q5_0);
}

#[test]
fn q5_1_quantizes_as_gguf_py() {
    quantize_random(GgmlType::Q5_1);
}

#[test]
fn q8_0_quantizes_as_gguf_py() {
    quantize_random(GgmlType::Q8_0);
}

/// Any f32 bits, NaNs and infinities included: BF16 and F32 agree bit for bit, F16 up to
/// numpy's unquieted NaNs (see the module doc).
#[test]
fn float_types_quantize_as_gguf_py() {
    let Some(python) = python() else { return };
    let specials = [0x7f80_0001u32, 0xff80_0001, 0x7fc0_0000, 0x7fa0_0000, 0x7f80_2000, 0x0000_0001, 0x8000_0000];
    let mut bits = draw(&any::<u32>(), 4 * DEQUANT_BLOCKS);
    bits.extend(specials);
    let values: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
    compare_quantize(&python, GgmlType::Bf16, &values, |_, o, t| o == t);
    compare_quantize(&python, GgmlType::F32, &values, |_, o, t| o == t);
    compare_quantize(&python, GgmlType::F16, &values, |x, o, t| {
        let (ours, theirs) = (u16::from_le_bytes([o[0], o[1]]), u16::from_le_bytes([t[0], t[1]]));
        if !x[0].is_nan() {
            return ours == theirs;
        }
        // ggml/F16C: sign | 0x7e00 | top payload bits; numpy: sign | 0x7c00 | top payload bits,
        // or | 1 when those are zero.
        let b = x[0].to_bits();
        let sign = u16::try_from((b >> 16) & 0x8000).unwrap();
        let top = u16::try_from((b >> 13) & 0x3ff).unwrap();
        ours == sign | 0x7e00 | top && theirs == sign | 0x7c00 | top.max(1)
    });
}
