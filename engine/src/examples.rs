//! Built-in example workloads made from the `kernels` crate's general kernels, for
//! `redline lower --example`, the shadow oracle's tests and the benchmarks.
//!
//! - [`Chain`] (`chain`): `fill(y, 1.5, n = position + 600)` → `axpy(y += 2·x)` →
//!   `scale(c = 0.5·y)`, with an independent sibling `fill(z, -2)` that `add(o = c + z)` joins:
//!   a dependent chain, independent siblings and a position-bound kernarg word.
//! - [`Window`] (`window`): a decode-like step. `rmsnorm(h = norm(x)·w)` → `matvec(q = W·h)`;
//!   beside it the history `fill(hist, 0.25, n = position + 1)` → `block_sum` over the history
//!   whose grid grows with the position (`ceil((position + 1) / 64)` work-groups, dynamic LDS) →
//!   a second `block_sum` over the partial sums → `axpy(q += total)`: position-bound kernarg
//!   words, a position-bound grid (and, on code-object v5, the hidden block count that follows
//!   it), LDS, chains and siblings.
//! - [`Wide`] (`wide`): `n` independent `fill`s of one element each, the first bound to the
//!   position: tapes of any length with one binding, for the benchmarks.
//!
//! Every launch declares its effects over the whole buffer it may touch at any position, so that
//! recorded effects do not move with the position.

use kernarg_abi::layout::ArgValue;
use pm4_encoding::Target;
use tape_core::calibrate::GridRule;

use crate::funnel::{DeclaredArg, Funnel, Kernel, Launch, Rule, Use};
use crate::workload::{GUARD_BYTES, Surface, Workload, WorkloadError, check_position};
use hal::Device;

/// The names [`example`] knows, with a line each.
pub const EXAMPLES: [(&str, &str); 3] = [
    ("chain", "fill → axpy → scale with an independent fill joined by add; a position-bound n"),
    ("window", "rmsnorm → matvec beside a growing history: position-bound n and grid, dynamic LDS"),
    ("wide", "64 independent one-element fills, the first bound to the position"),
];

/// The example `name` set up on `device`.
///
/// # Errors
/// [`WorkloadError::Init`] for an unknown name (listing the known ones), or a setup error.
pub fn example(name: &str, device: &mut dyn Device) -> Result<Box<dyn Workload>, WorkloadError> {
    Ok(match name {
        "chain" => Box::new(Chain::new(device)?),
        "window" => Box::new(Window::new(device)?),
        "wide" => Box::new(Wide::new(device, 64)?),
        _ => {
            let known: Vec<&str> = EXAMPLES.iter().map(|(n, _)| *n).collect();
            return Err(WorkloadError::Init(format!(
                "unknown example {name:?}; the examples are: {}",
                known.join(", ")
            )));
        }
    })
}

/// Loads `module`'s code object for the device's target and returns its kernels `names`.
fn kernels(device: &mut dyn Device, module: &str, names: &[&str]) -> Result<Vec<Kernel>, WorkloadError> {
    let target: Target = device.target();
    let path = format!("{target}/{module}.co");
    let artifact = kernels::artifact(&path)
        .ok_or_else(|| WorkloadError::Init(format!("no built code object {path} in the kernels crate")))?;
    Ok(Kernel::load_all(device, artifact.bytes, names)?)
}

fn one(device: &mut dyn Device, module: &str) -> Result<Kernel, WorkloadError> {
    let mut k = kernels(device, module, &[module])?;
    // PANIC: `kernels` returns one kernel per name asked for.
    Ok(k.remove(0))
}

/// Deterministic inputs: small exact binary fractions, so every kernel's result is exact in f32.
pub fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut out = Vec::with_capacity(len * 4);
    for _ in 0..len {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        // CAST: a value in 0..16, exact in f32.
        #[allow(clippy::cast_precision_loss)]
        let v = ((state >> 16) % 16) as f32 / 8.0 - 1.0;
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn surface(device: &mut dyn Device, name: &str, floats: u32) -> Result<Surface, WorkloadError> {
    Surface::allocate(device, name, 4 * u64::from(floats), GUARD_BYTES)
}

/// The `chain` example (module documentation).
#[derive(Debug)]
pub struct Chain {
    fill: Kernel,
    axpy: Kernel,
    scale: Kernel,
    add: Kernel,
    surfaces: Vec<Surface>,
}

impl Chain {
    /// Elements per buffer.
    pub const N: u32 = 1024;
    /// Work-group size.
    pub const WG: u16 = 64;
    /// `fill(y)`'s `n` is `position + N_ADDEND`.
    pub const N_ADDEND: u32 = 600;

    /// Loads the kernels and allocates and initialises the buffers on `device`.
    ///
    /// # Errors
    /// [`WorkloadError`].
    pub fn new(device: &mut dyn Device) -> Result<Self, WorkloadError> {
        let fill = one(device, "fill")?;
        let axpy = one(device, "axpy")?;
        let scale = one(device, "scale")?;
        let add = kernels(device, "elementwise", &["add"])?.remove(0);
        let mut surfaces = Vec::new();
        for name in ["y", "x", "z", "c", "o"] {
            surfaces.push(surface(device, name, Self::N)?);
        }
        surfaces[1].fill(device, &pattern(usize::try_from(Self::N).unwrap_or(0), 1))?;
        Ok(Self { fill, axpy, scale, add, surfaces })
    }
}

impl Workload for Chain {
    fn name(&self) -> &str {
        "chain"
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        check_position(position, self.max_position())?;
        let [y, x, z, c, o] = [0, 1, 2, 3, 4].map(|i| self.surfaces[i].va);
        let bytes = 4 * u64::from(Self::N);
        let (n, wg) = (Self::N, Self::WG);
        let args = [ArgValue::Pointer(y), ArgValue::F32(1.5), ArgValue::U32(position + Self::N_ADDEND)];
        let declared = [DeclaredArg { name: "y.fill.n", arg: 2, rule: Rule::Offset { addend: Self::N_ADDEND.into() } }];
        let uses = [Use::write(y, bytes)];
        let launch = Launch::linear(&self.fill, &args, n, wg, &uses).declaring(&declared);
        funnel.launch(device, &launch)?;
        let args = [ArgValue::Pointer(z), ArgValue::F32(-2.0), ArgValue::U32(n)];
        funnel.launch(device, &Launch::linear(&self.fill, &args, n, wg, &[Use::write(z, bytes)]))?;
        let args = [ArgValue::Pointer(y), ArgValue::Pointer(x), ArgValue::F32(2.0), ArgValue::U32(n)];
        let uses = [Use::read_write(y, bytes), Use::read(x, bytes)];
        funnel.launch(device, &Launch::linear(&self.axpy, &args, n, wg, &uses))?;
        let args = [ArgValue::Pointer(c), ArgValue::Pointer(y), ArgValue::F32(0.5), ArgValue::U32(n)];
        let uses = [Use::write(c, bytes), Use::read(y, bytes)];
        funnel.launch(device, &Launch::linear(&self.scale, &args, n, wg, &uses))?;
        let args = [ArgValue::Pointer(o), ArgValue::Pointer(c), ArgValue::Pointer(z), ArgValue::U32(n)];
        let uses = [Use::write(o, bytes), Use::read(c, bytes), Use::read(z, bytes)];
        funnel.launch(device, &Launch::linear(&self.add, &args, n, wg, &uses))?;
        Ok(())
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn max_position(&self) -> u32 {
        Self::N - Self::N_ADDEND
    }
}

/// The `window` example (module documentation).
#[derive(Debug)]
pub struct Window {
    rmsnorm: Kernel,
    matvec: Kernel,
    fill: Kernel,
    block_sum: Kernel,
    axpy: Kernel,
    surfaces: Vec<Surface>,
    grid_rules: [GridRule; 1],
}

impl Window {
    /// Hidden size.
    pub const D: u32 = 256;
    /// Rows of the matrix.
    pub const ROWS: u32 = 64;
    /// History entries, at most: positions 0..HISTORY.
    pub const HISTORY: u32 = 1024;
    /// Work-group size of the history reduction.
    pub const WG: u16 = 64;
    /// Partial sums of the history reduction, at most.
    pub const PARTIALS: u32 = Self::HISTORY / 64;
    /// `rmsnorm`'s fixed work-group size (`RMSNORM_BLOCK`).
    pub const RMSNORM_BLOCK: u16 = 256;
    /// Index of the history `block_sum` launch, whose grid follows the position.
    pub const GROWING_LAUNCH: usize = 3;

    /// Loads the kernels and allocates and initialises the buffers on `device`.
    ///
    /// # Errors
    /// [`WorkloadError`].
    pub fn new(device: &mut dyn Device) -> Result<Self, WorkloadError> {
        let rmsnorm = one(device, "rmsnorm")?;
        let matvec = one(device, "matvec")?;
        let fill = one(device, "fill")?;
        let block_sum = one(device, "block_sum")?;
        let axpy = one(device, "axpy")?;
        let shapes = [
            ("x", Self::D),
            ("w", Self::D),
            ("matrix", Self::ROWS * Self::D),
            ("h", Self::D),
            ("q", Self::ROWS),
            ("hist", Self::HISTORY),
            ("partials", Self::PARTIALS),
            ("total", 1),
        ];
        let mut surfaces = Vec::new();
        for (name, floats) in shapes {
            surfaces.push(surface(device, name, floats)?);
        }
        for (i, seed) in [(0, 2), (1, 3), (2, 4)] {
            let floats = usize::try_from(surfaces[i].bytes / 4).unwrap_or(0);
            let s = surfaces[i].clone();
            s.fill(device, &pattern(floats, seed))?;
        }
        let growing = GridRule { launch: Self::GROWING_LAUNCH, axis: 0, addend: 1, divisor: u32::from(Self::WG) };
        Ok(Self { rmsnorm, matvec, fill, block_sum, axpy, surfaces, grid_rules: [growing] })
    }
}

impl Workload for Window {
    fn name(&self) -> &str {
        "window"
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        check_position(position, self.max_position())?;
        let [x, w, matrix, h, q, hist, partials, total] = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| self.surfaces[i].va);
        let bytes = |floats: u32| 4 * u64::from(floats);
        let (d, rows) = (Self::D, Self::ROWS);

        let args = [
            ArgValue::Pointer(h),
            ArgValue::Pointer(x),
            ArgValue::Pointer(w),
            ArgValue::U32(1),
            ArgValue::U32(d),
            ArgValue::F32(1e-5),
        ];
        let uses = [Use::write(h, bytes(d)), Use::read(x, bytes(d)), Use::read(w, bytes(d))];
        let block = Self::RMSNORM_BLOCK;
        funnel.launch(device, &Launch::linear(&self.rmsnorm, &args, u32::from(block), block, &uses))?;

        let args = [
            ArgValue::Pointer(q),
            ArgValue::Pointer(matrix),
            ArgValue::Pointer(h),
            ArgValue::U32(rows),
            ArgValue::U32(d),
        ];
        let uses = [Use::write(q, bytes(rows)), Use::read(matrix, bytes(rows * d)), Use::read(h, bytes(d))];
        funnel.launch(device, &Launch::linear(&self.matvec, &args, rows, 64, &uses))?;

        let len = position + 1;
        let args = [ArgValue::Pointer(hist), ArgValue::F32(0.25), ArgValue::U32(len)];
        let uses = [Use::write(hist, bytes(Self::HISTORY))];
        let declared = [DeclaredArg { name: "history.fill.n", arg: 2, rule: Rule::Offset { addend: 1 } }];
        funnel
            .launch(device, &Launch::linear(&self.fill, &args, Self::HISTORY, Self::WG, &uses).declaring(&declared))?;

        let wg = u32::from(Self::WG);
        let groups = len.div_ceil(wg);
        let args = [ArgValue::Pointer(partials), ArgValue::Pointer(hist), ArgValue::U32(len)];
        let uses = [Use::write(partials, bytes(Self::PARTIALS)), Use::read(hist, bytes(Self::HISTORY))];
        let declared = [DeclaredArg { name: "history.block_sum.n", arg: 2, rule: Rule::Offset { addend: 1 } }];
        let launch = Launch {
            dynamic_lds: 4 * wg,
            ..Launch::linear(&self.block_sum, &args, groups * wg, Self::WG, &uses).declaring(&declared)
        };
        funnel.launch(device, &launch)?;

        let partial_wg = u16::try_from(Self::PARTIALS).unwrap_or(u16::MAX);
        let args = [ArgValue::Pointer(total), ArgValue::Pointer(partials), ArgValue::U32(Self::PARTIALS)];
        let uses = [Use::write(total, bytes(1)), Use::read(partials, bytes(Self::PARTIALS))];
        let launch = Launch {
            dynamic_lds: 4 * Self::PARTIALS,
            ..Launch::linear(&self.block_sum, &args, Self::PARTIALS, partial_wg, &uses)
        };
        funnel.launch(device, &launch)?;

        let args = [ArgValue::Pointer(q), ArgValue::Pointer(total), ArgValue::F32(1.0), ArgValue::U32(1)];
        let uses = [Use::read_write(q, bytes(rows)), Use::read(total, bytes(1))];
        funnel.launch(device, &Launch::linear(&self.axpy, &args, 64, 64, &uses))?;
        Ok(())
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn grid_rules(&self) -> &[GridRule] {
        &self.grid_rules
    }

    fn max_position(&self) -> u32 {
        Self::HISTORY - 1
    }
}

/// The `wide` example (module documentation).
#[derive(Debug)]
pub struct Wide {
    fill: Kernel,
    launches: u32,
    surfaces: Vec<Surface>,
}

impl Wide {
    /// `launches` independent one-element fills on `device`.
    ///
    /// # Errors
    /// [`WorkloadError`].
    pub fn new(device: &mut dyn Device, launches: u32) -> Result<Self, WorkloadError> {
        if launches == 0 {
            return Err(WorkloadError::Init("the wide example needs at least one launch".into()));
        }
        let fill = one(device, "fill")?;
        let surfaces = vec![surface(device, "out", launches)?];
        Ok(Self { fill, launches, surfaces })
    }
}

impl Workload for Wide {
    fn name(&self) -> &str {
        "wide"
    }

    fn step(&mut self, device: &mut dyn Device, funnel: &mut Funnel, position: u32) -> Result<(), WorkloadError> {
        check_position(position, self.max_position())?;
        let out = self.surfaces[0].va;
        for i in 0..self.launches {
            let va = out + 4 * u64::from(i);
            // fill #0 writes n = position + 1 elements of its one-element range only while n ≥ 1:
            // the kernel's grid is 1, so only element 0 is ever written.
            let n = if i == 0 { position + 1 } else { 1 };
            // CAST: exact small integers.
            #[allow(clippy::cast_precision_loss)]
            let value = i as f32;
            let args = [ArgValue::Pointer(va), ArgValue::F32(value), ArgValue::U32(n)];
            let declared = [DeclaredArg { name: "fill0.n", arg: 2, rule: Rule::Offset { addend: 1 } }];
            let declared = if i == 0 { &declared[..] } else { &[] };
            funnel
                .launch(device, &Launch::linear(&self.fill, &args, 1, 1, &[Use::write(va, 4)]).declaring(declared))?;
        }
        Ok(())
    }

    fn surfaces(&self) -> &[Surface] {
        &self.surfaces
    }

    fn max_position(&self) -> u32 {
        1 << 20
    }
}
