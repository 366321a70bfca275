//! Any bytes as ggml Q4_1/Q8_0 blocks and a small launch of the quantised CPU references
//! (`matvec_q4_1`, `matvec_q8_0`, `get_row_q8_0`): `Ok` or a typed `KernelError`, never a panic,
//! and every value `get_row_q8_0` writes is its block's `q * d`.
#![no_main]

use kernel_refs::cpu::{self, KernelError, Q8_0_BLOCK_BYTES, f16_to_f32};
use kernel_refs::launch::Launch;
use kernel_refs::memory::{DeviceMemory, HostMemory};
use kernels::signature::{self, Signature};
use libfuzzer_sys::fuzz_target;

const OUT: u64 = 0x1_0000;
const W: u64 = 0x10_0000;
const X: u64 = 0x20_0000;
const TOKEN: u64 = 0x30_0000;

fn kernarg(sig: &Signature, values: &[u64]) -> Vec<u8> {
    let mut bytes = vec![0u8; 320];
    for (arg, &v) in sig.explicit_args.iter().zip(values) {
        bytes[arg.offset..arg.offset + arg.size].copy_from_slice(&v.to_le_bytes()[..arg.size]);
    }
    bytes
}

fuzz_target!(|data: &[u8]| {
    let [kernel, rows, cols, token, rest @ ..] = data else { return };
    let rows = u32::from(rows % 8);
    // Mostly whole blocks, sometimes not.
    let cols = if cols & 0x80 != 0 { u32::from(*cols) } else { 32 * u32::from(cols % 4) };
    let mut memory = HostMemory::new();
    memory.allocate(OUT, 4 * 256).unwrap();
    memory.allocate(X, 4 * 256).unwrap();
    memory.write_f32s(X, &[1.0; 256]).unwrap();
    memory.allocate(TOKEN, 4).unwrap();
    memory.write(TOKEN, &u32::from(*token % 10).to_le_bytes()).unwrap();
    if !rest.is_empty() {
        memory.allocate(W, rest.len() as u64).unwrap();
        memory.write(W, rest).unwrap();
    }
    let result: Result<(), KernelError> = match kernel % 3 {
        0 | 1 => {
            let (sig, run) = if kernel % 3 == 0 {
                (&signature::MATVEC_Q4_1, cpu::matvec_q4_1 as cpu::CpuReference)
            } else {
                (&signature::MATVEC_Q8_0, cpu::matvec_q8_0 as cpu::CpuReference)
            };
            let k = kernarg(sig, &[OUT, W, X, rows.into(), cols.into()]);
            run(
                &Launch { kernarg: &k, grid_size: [8 * 32, 1, 1], workgroup_size: [32, 1, 1], dynamic_lds_bytes: 0 },
                &mut memory,
            )
        }
        _ => {
            let mut k = kernarg(&signature::GET_ROW_Q8_0, &[OUT, W, TOKEN, cols.into(), rows.into()]);
            let hidden = signature::GET_ROW_Q8_0.hidden_group_size_x.unwrap();
            k[hidden..hidden + 2].copy_from_slice(&64u16.to_le_bytes());
            let launch =
                Launch { kernarg: &k, grid_size: [256, 1, 1], workgroup_size: [64, 1, 1], dynamic_lds_bytes: 0 };
            let result = cpu::get_row_q8_0(&launch, &mut memory);
            let tok = u32::from(*token % 10);
            if result.is_ok() && tok < rows && cols > 0 {
                let row = (tok * cols / 32) as usize * Q8_0_BLOCK_BYTES;
                let mut out = vec![0f32; cols as usize];
                memory.read_f32s(OUT, &mut out).unwrap();
                for (c, v) in out.iter().enumerate() {
                    let block = &rest[row + c / 32 * Q8_0_BLOCK_BYTES..];
                    let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
                    let q = f32::from(block[2 + c % 32].cast_signed());
                    assert_eq!(v.to_bits(), (q * d).to_bits(), "element {c}");
                }
            }
            result
        }
    };
    let _ = result;
});
