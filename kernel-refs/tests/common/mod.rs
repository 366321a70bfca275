//! Helpers shared by the CPU-reference tests: kernarg building from the signatures, buffers with
//! guard elements, a deterministic generator, and a recording address space.
#![allow(dead_code)]

use std::cell::RefCell;

use kernel_refs::cpu::CpuReference;
use kernel_refs::effects::ResolvedEffect;
use kernel_refs::launch::Launch;
use kernel_refs::memory::{DeviceMemory, HostMemory, MemoryFault};
use kernels::signature::{ArgKind, Signature};

/// Bytes of the kernarg segment the code object declares (`.kernarg_segment_size`): the explicit
/// arguments, then 256 bytes of code-object-v5 hidden arguments from the next multiple of 8.
pub(crate) fn segment_len(sig: &Signature) -> usize {
    let end = sig.explicit_args.iter().map(|a| a.offset + a.size).max().unwrap_or(0);
    if sig.hidden_group_size_x.is_some() { end.next_multiple_of(8) + 256 } else { end }
}

/// A kernarg segment under construction, arguments set by name.
pub(crate) struct Kernarg {
    sig: &'static Signature,
    bytes: Vec<u8>,
}

impl Kernarg {
    pub(crate) fn new(sig: &'static Signature) -> Self {
        Self { sig, bytes: vec![0; segment_len(sig)] }
    }

    fn put(mut self, name: &str, kind: ArgKind, value: &[u8]) -> Self {
        let (_, arg) = self.sig.arg(name).unwrap_or_else(|| panic!("{} has no argument {name}", self.sig.name));
        assert_eq!(arg.kind, kind, "{}.{name}", self.sig.name);
        assert_eq!(arg.size, value.len());
        self.bytes[arg.offset..arg.offset + arg.size].copy_from_slice(value);
        self
    }

    pub(crate) fn ptr(self, name: &str, address: u64) -> Self {
        self.put(name, ArgKind::GlobalBuffer, &address.to_le_bytes())
    }

    pub(crate) fn u32(self, name: &str, value: u32) -> Self {
        self.put(name, ArgKind::U32, &value.to_le_bytes())
    }

    pub(crate) fn f32(self, name: &str, value: f32) -> Self {
        self.put(name, ArgKind::F32, &value.to_le_bytes())
    }

    /// Sets `hidden_group_size_x`, which the runtime writes from the dispatch's work-group size.
    pub(crate) fn group_size(mut self, workgroup_size_x: u16) -> Self {
        if let Some(offset) = self.sig.hidden_group_size_x {
            self.bytes[offset..offset + 2].copy_from_slice(&workgroup_size_x.to_le_bytes());
        }
        self
    }

    pub(crate) fn bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// A one-dimensional launch without dynamic LDS.
pub(crate) fn launch_1d(kernarg: &[u8], grid_size_x: u32, workgroup_size_x: u16) -> Launch<'_> {
    Launch { kernarg, grid_size: [grid_size_x, 1, 1], workgroup_size: [workgroup_size_x, 1, 1], dynamic_lds_bytes: 0 }
}

/// Guard elements after every buffer, to catch stores past the end.
pub(crate) const GUARD: usize = 8;
/// Bits of every element a kernel must not have written (a signalling NaN nothing computes).
pub(crate) const SENTINEL: u32 = 0x7fa0_dead;

/// Maps `values` plus [`GUARD`] sentinel elements at `base`.
pub(crate) fn buffer(memory: &mut HostMemory, base: u64, values: &[f32]) {
    let len = values.len() + GUARD;
    memory.allocate(base, 4 * len as u64).unwrap();
    let mut bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
    bits.resize(len, SENTINEL);
    memory.write_u32s(base, &bits).unwrap();
}

/// Maps `len` sentinel elements plus [`GUARD`] more at `base`.
pub(crate) fn sentinel_buffer(memory: &mut HostMemory, base: u64, len: usize) {
    memory.allocate(base, 4 * (len + GUARD) as u64).unwrap();
    memory.write_u32s(base, &vec![SENTINEL; len + GUARD]).unwrap();
}

/// The `len` + [`GUARD`] elements at `base`, as bits.
pub(crate) fn read_bits(memory: &HostMemory, base: u64, len: usize) -> Vec<u32> {
    let mut bits = vec![0u32; len + GUARD];
    memory.read_u32s(base, &mut bits).unwrap();
    bits
}

/// SplitMix64: deterministic test data without a dependency.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A float uniformly in `[lo, hi)` (24 random bits).
    pub(crate) fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }

    pub(crate) fn f32s(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32_in(lo, hi)).collect()
    }
}

/// A [`DeviceMemory`] that records every access it is asked for (faulting ones included) and
/// passes it on.
pub(crate) struct Recorder<'m> {
    pub(crate) inner: &'m mut HostMemory,
    pub(crate) reads: RefCell<Vec<(u64, u64)>>,
    pub(crate) writes: Vec<(u64, u64)>,
}

impl<'m> Recorder<'m> {
    pub(crate) fn new(inner: &'m mut HostMemory) -> Self {
        Self { inner, reads: RefCell::new(Vec::new()), writes: Vec::new() }
    }
}

impl DeviceMemory for Recorder<'_> {
    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryFault> {
        self.reads.borrow_mut().push((address, out.len() as u64));
        self.inner.read(address, out)
    }

    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), MemoryFault> {
        self.writes.push((address, data.len() as u64));
        self.inner.write(address, data)
    }
}

/// Whether `[address, address + len)` lies inside one effect that allows `wanted`.
fn covered(effects: &[ResolvedEffect], address: u64, len: u64, wanted: fn(&ResolvedEffect) -> bool) -> bool {
    let end = u128::from(address) + u128::from(len);
    effects
        .iter()
        .filter(|e| wanted(e))
        .any(|e| address >= e.address && end <= u128::from(e.address) + u128::from(e.bytes))
}

/// Every recorded read lies in a read effect and every write in a write effect.
pub(crate) fn check_within(effects: &[ResolvedEffect], recorder: &Recorder<'_>) -> Result<(), String> {
    for &(address, len) in recorder.reads.borrow().iter().filter(|(_, len)| *len > 0) {
        if !covered(effects, address, len, |e| e.access.reads()) {
            return Err(format!("read of {len} bytes at {address:#x} is outside the read effects {effects:x?}"));
        }
    }
    for &(address, len) in recorder.writes.iter().filter(|(_, len)| *len > 0) {
        if !covered(effects, address, len, |e| e.access.writes()) {
            return Err(format!("write of {len} bytes at {address:#x} is outside the write effects {effects:x?}"));
        }
    }
    Ok(())
}

/// Rounds an `f64` (an operation on `f32` values, done exactly) to the nearest `f32`.
pub(crate) fn f32_of(v: f64) -> f32 {
    // CAST: rounding to the nearest f32 is the point.
    #[allow(clippy::cast_possible_truncation)]
    let rounded = v as f32;
    rounded
}

/// Runs a CPU reference that must succeed.
pub(crate) fn run(cpu: CpuReference, launch: &Launch<'_>, memory: &mut HostMemory) {
    cpu(launch, memory).unwrap_or_else(|e| panic!("{launch:?}: {e}"));
}

/// A test size as a kernel's `u32` argument.
pub(crate) fn u32_of(v: usize) -> u32 {
    u32::try_from(v).unwrap()
}

/// Maps `bytes` (at least one byte of allocation) at `base`.
pub(crate) fn map_bytes(memory: &mut HostMemory, base: u64, bytes: &[u8]) {
    memory.allocate(base, bytes.len().max(1) as u64).unwrap();
    memory.write(base, bytes).unwrap();
}

/// The binary16 value of `bits` from its definition, in `f64` (finite values only).
pub(crate) fn f16_value(bits: u16) -> f64 {
    let (s, e, m) = (bits >> 15, (bits >> 10) & 0x1f, f64::from(bits & 0x3ff));
    let magnitude =
        if e == 0 { m / 1024.0 * 2f64.powi(-14) } else { (1.0 + m / 1024.0) * 2f64.powi(i32::from(e) - 15) };
    if s == 1 { -magnitude } else { magnitude }
}

/// A random finite f16 of magnitude in [2^-8, 2^-1), either sign.
pub(crate) fn random_f16(rng: &mut Rng) -> u16 {
    let bits = rng.next_u64();
    let exponent = 7 + (bits % 7) as u16; // 2^-8 .. 2^-2
    let mantissa = ((bits >> 8) & 0x3ff) as u16;
    let sign = ((bits >> 20) & 1) as u16;
    (sign << 15) | (exponent << 10) | mantissa
}

/// Random quantised blocks and the matrix they encode, in `f64`.
pub(crate) type Matrix = (Vec<u8>, Vec<f64>);

/// `rows x cols` random Q4_1 blocks and the matrix they encode, in `f64`.
pub(crate) fn q4_1_matrix(rng: &mut Rng, rows: usize, cols: usize) -> Matrix {
    let (mut bytes, mut values) = (Vec::new(), Vec::new());
    for _ in 0..rows * cols / 32 {
        let (d, m) = (random_f16(rng), random_f16(rng));
        let qs: Vec<u8> = (0..16).map(|_| (rng.next_u64() >> 56) as u8).collect();
        bytes.extend(d.to_le_bytes());
        bytes.extend(m.to_le_bytes());
        bytes.extend(&qs);
        let (d, m) = (f16_value(d), f16_value(m));
        values.extend(qs.iter().map(|q| f64::from(q & 15) * d + m));
        values.extend(qs.iter().map(|q| f64::from(q >> 4) * d + m));
    }
    (bytes, values)
}

/// `rows x cols` random Q8_0 blocks and the matrix they encode, in `f64`.
pub(crate) fn q8_0_matrix(rng: &mut Rng, rows: usize, cols: usize) -> Matrix {
    let (mut bytes, mut values) = (Vec::new(), Vec::new());
    for _ in 0..rows * cols / 32 {
        let d = random_f16(rng);
        let qs: Vec<i8> = (0..32).map(|_| (rng.next_u64() >> 56) as u8 as i8).collect();
        bytes.extend(d.to_le_bytes());
        bytes.extend(qs.iter().map(|q| q.to_le_bytes()[0]));
        values.extend(qs.iter().map(|&q| f64::from(q) * f16_value(d)));
    }
    (bytes, values)
}

/// The host's rope table: `(cos, sin)` of `pos * theta_i`, `theta_i = 10000^(-2i / head_dim)`,
/// for positions `0..positions`.
pub(crate) fn rope_table(positions: usize, head_dim: usize) -> Vec<f32> {
    let half = head_dim / 2;
    let mut table = Vec::with_capacity(positions * head_dim);
    for pos in 0..positions {
        for i in 0..half {
            let angle = pos as f64 * 10000f64.powf(-2.0 * i as f64 / head_dim as f64);
            table.push(f32_of(angle.cos()));
            table.push(f32_of(angle.sin()));
        }
    }
    table
}
