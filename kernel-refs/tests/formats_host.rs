//! The CPU references' element values are the kernels' own: `kernels/hip/ggml_formats.h`, the
//! header `hip/ggml_quants.hip` includes for every format, compiled for the host with clang-19
//! and `-ffp-contract=off` (at `-O3`, as the kernels, and at `-O0`) and driven by
//! `tests/formats_host/driver.cpp`, reads every value of thousands of random rows of every format
//! exactly as the kernels read them; each must have the bits `kernel_refs::cpu::dequantize_row`
//! gives. The f16 scales include every special class (signed zeros, subnormals, the largest
//! finite, infinities, quiet and signalling NaNs).
//!
//! Values that are NaN on both sides must be NaN, with the same payload for F16 and BF16 (a
//! conversion); where an operation meets two NaNs (`q * d + m` with both scales NaN) which
//! payload survives depends on the operand order a compiler picks, on the GPU too, so only
//! NaN-ness is compared there.
//!
//! Without clang-19 the test says so and passes, except under `CI=true`, where it fails.

mod common;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::Rng;
use kernel_refs::cpu::{BlockFormat, dequantize_row};

/// Rows per format; each has 1 to 4 blocks.
const ROWS: usize = 700;

/// Byte offsets of each format's f16 scales in a block (ggml-common.h), written out here rather
/// than taken from the code under test.
fn scale_offsets(format: BlockFormat) -> &'static [usize] {
    match format {
        BlockFormat::Q4_0 | BlockFormat::Q5_0 | BlockFormat::Q8_0 => &[0],
        BlockFormat::Q4_1 | BlockFormat::Q5_1 | BlockFormat::Q4K | BlockFormat::Q5K => &[0, 2],
        BlockFormat::Q2K => &[80, 82],
        BlockFormat::Q3K => &[108],
        BlockFormat::Q6K => &[208],
        BlockFormat::F16 | BlockFormat::BF16 => &[0, 2, 4, 6, 8, 10, 12, 14, 30, 62],
    }
}

/// f16 bit patterns of every special class, and some ordinary ones.
const SPECIAL_F16: [u16; 16] = [
    0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00, 0x7fff,
    0x3c00, 0xb555,
];

/// A random row of `blocks` blocks: random bytes, each scale replaced by a special pattern one
/// time in three.
fn random_row(rng: &mut Rng, format: BlockFormat, blocks: usize) -> Vec<u8> {
    let block_bytes = format.block_bytes();
    let mut row: Vec<u8> = (0..blocks * block_bytes).map(|_| rng.next_u64().to_le_bytes()[3]).collect();
    for block in row.chunks_exact_mut(block_bytes) {
        for &at in scale_offsets(format) {
            if rng.next_u64().is_multiple_of(3) {
                let special = SPECIAL_F16[usize::try_from(rng.next_u64() % 16).unwrap()];
                // As bf16, the same bits are zeros, subnormals, large values, infinities and NaNs
                // of f32 too (0x7c00 is a finite bf16; 0x7f80 is its infinity).
                let bits = if format == BlockFormat::BF16 && special == 0x7c00 { 0x7f80 } else { special };
                block[at..at + 2].copy_from_slice(&bits.to_le_bytes());
            }
        }
    }
    row
}

/// The driver built at `opt` into a temporary directory, or `None` without clang-19.
fn build_driver(opt: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cc = kernels::compile::compiler();
    let out = std::env::temp_dir().join(format!("redline-formats-host-{}{opt}", std::process::id()));
    let status = Command::new(&cc)
        .args(["-x", "c++", "-std=c++17", opt, "-ffp-contract=off"])
        .arg(format!("-I{}", root.join("../kernels/hip").display()))
        .arg(root.join("tests/formats_host/driver.cpp"))
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        Ok(s) => panic!("{cc} failed to build the host driver ({s})"),
        Err(e) => {
            let why = format!("{cc} cannot be run ({e})");
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and {why}: .ci/run must install clang-19");
            eprintln!("SKIPPED host check of ggml_formats.h: {why}");
            None
        }
    }
}

/// What the driver writes for `records` (format index, block count, row).
fn run_driver(driver: &PathBuf, input: &[u8]) -> Vec<u32> {
    let mut child =
        Command::new(driver).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("start the host driver");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "host driver failed: {}", output.status);
    output.stdout.as_chunks::<4>().0.iter().map(|b| u32::from_le_bytes(*b)).collect()
}

/// Whether two values may differ: only in a NaN's payload, and only where the format combines
/// two values that may both be NaN.
fn same(format: BlockFormat, host: u32, cpu: u32) -> bool {
    let nan = |b: u32| f32::from_bits(b).is_nan();
    host == cpu || (nan(host) && nan(cpu) && !matches!(format, BlockFormat::F16 | BlockFormat::BF16))
}

#[test]
fn every_element_of_every_format_has_the_host_compiled_headers_bits() {
    let Some(o3) = build_driver("-O3") else { return };
    let o0 = build_driver("-O0").expect("the compiler ran once");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut input = Vec::new();
    let mut expected: Vec<(BlockFormat, usize, u32)> = Vec::new();
    let mut blocks_per_format = [0usize; 12];
    for (index, &format) in BlockFormat::ALL.iter().enumerate() {
        for r in 0..ROWS {
            let blocks = 1 + r % 4;
            let row = random_row(&mut rng, format, blocks);
            let mut values = vec![0.0f32; blocks * format.block_values()];
            dequantize_row(format, &row, &mut values).unwrap();
            input.extend([u8::try_from(index).unwrap(), u8::try_from(blocks).unwrap()]);
            input.extend(&row);
            expected.extend(values.iter().enumerate().map(|(i, v)| (format, i, v.to_bits())));
            blocks_per_format[index] += blocks;
        }
    }
    for (driver, opt) in [(&o3, "-O3"), (&o0, "-O0")] {
        let host = run_driver(driver, &input);
        assert_eq!(host.len(), expected.len(), "{opt}: values written");
        let mut nan_payloads = [0usize; 12];
        for (&(format, i, cpu), &host) in expected.iter().zip(&host) {
            assert!(
                same(format, host, cpu),
                "{opt} {}: value {i}: host {host:#010x}, CPU reference {cpu:#010x}",
                format.name()
            );
            if host != cpu {
                nan_payloads[BlockFormat::ALL.iter().position(|&f| f == format).unwrap()] += 1;
            }
        }
        for (index, format) in BlockFormat::ALL.iter().enumerate() {
            eprintln!(
                "{opt} {}: {} blocks, {} values compared, {} NaNs of another payload",
                format.name(),
                blocks_per_format[index],
                blocks_per_format[index] * format.block_values(),
                nan_payloads[index]
            );
        }
    }
    std::fs::remove_file(o3).ok();
    std::fs::remove_file(o0).ok();
}
