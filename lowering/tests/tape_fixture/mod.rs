//! The recorded chain of the lowering and plan tests: fill(y, 1.5, n) → axpy(y, x, 2.0, N) → scale(c, y, 0.5, N)
//! with an independent sibling fill(z, -2.0, N), recorded through the `Recorder` from the real
//! `kernels` code objects with fill(y)'s `n` bound to the position (`n = position + N_ADDEND`).
//! The same layout on a second device gives the ordinary path's bytes.

#![allow(dead_code)]

use hal::{Device, DeviceAllocation, LaunchRequest};
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use lowering::lower::slot_by_artifact;
use pm4_encoding::Target;
use soft_device::SimDevice;
use tape_core::binding::{Binding, BindingKind};
use tape_core::recorder::Recorder;
use tape_core::tape::Tape;
use tape_core::{Access, ArtifactId, Effect, Effects, Geometry, LaunchRecord, Lds, PointerArg};

pub(crate) const GRID: u32 = 1024;
pub(crate) const WG: u16 = 64;
pub(crate) const N: u32 = 1000;
/// fill(y)'s `n` = position + `N_ADDEND`.
pub(crate) const N_ADDEND: i64 = 600;
pub(crate) const TARGETS: [Target; 3] = [Target::Gfx1030, Target::Gfx1100, Target::Gfx1201];

pub(crate) fn x_value(i: u32) -> f32 {
    // CAST: small exact values.
    #[allow(clippy::cast_precision_loss)]
    let v = (i % 7) as f32 / 4.0 - 0.5;
    v
}

pub(crate) struct Module {
    pub(crate) name: &'static str,
    pub sha256: [u8; 32],
    pub(crate) layout: kernarg_abi::KernargLayout,
    pub(crate) static_lds: u32,
    pub(crate) wave_size: u8,
}

pub(crate) fn load(device: &mut SimDevice, name: &'static str) -> Module {
    let target = device.target();
    let bytes = kernels::artifact(&format!("{target}/{name}.co")).unwrap().bytes;
    let loaded = device.load_code_object(bytes).unwrap();
    let kernel = loaded.kernel(name).unwrap();
    let co = kernarg_abi::read_any(bytes, Some(target)).unwrap();
    Module {
        name,
        sha256: loaded.sha256,
        layout: co.kernel(name).unwrap().kernarg_layout().unwrap(),
        static_lds: kernel.group_segment_fixed_size,
        wave_size: u8::try_from(kernel.wavefront_size).unwrap(),
    }
}

pub(crate) fn bytes_of(n: u32) -> u64 {
    4 * u64::from(n.min(GRID))
}

/// One launch record of `m` over `grid` work-items in work-groups of up to `WG`; `pointers` are
/// (kernarg offset, VA), effects (pointer index, access, bytes).
pub(crate) fn record(
    device: &SimDevice,
    m: &Module,
    grid: u32,
    args: &[ArgValue],
    pointers: &[(u32, u64)],
    effects: &[(usize, Access, u64)],
) -> LaunchRecord {
    let wg = u16::try_from(grid.min(u32::from(WG))).unwrap();
    record_with(device, m, grid, wg, 0, args, pointers, effects)
}

/// [`record`] with its own work-group size and dynamic LDS bytes (kernels with a required
/// work-group size, kernels that take their LDS at launch).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_with(
    device: &SimDevice,
    m: &Module,
    grid: u32,
    wg: u16,
    dynamic_lds_bytes: u32,
    args: &[ArgValue],
    pointers: &[(u32, u64)],
    effects: &[(usize, Access, u64)],
) -> LaunchRecord {
    let resolved: Vec<PointerArg> = pointers
        .iter()
        .map(|&(kernarg_offset, va)| {
            let (allocation, offset_bytes) = device.resolve(va).unwrap();
            PointerArg { kernarg_offset, allocation, offset_bytes }
        })
        .collect();
    let effects = effects
        .iter()
        .map(|&(p, access, len_bytes)| Effect {
            allocation: resolved[p].allocation,
            offset_bytes: resolved[p].offset_bytes,
            len_bytes,
            access,
        })
        .collect();
    let geometry = DispatchGeometry { dynamic_lds_bytes, ..DispatchGeometry::linear(grid, wg) };
    LaunchRecord {
        artifact: ArtifactId { code_object_sha256: m.sha256, symbol: m.name.into() },
        kernarg: m.layout.build(args, &geometry).unwrap(),
        geometry: Geometry { grid_work_items: [grid, 1, 1], workgroup_work_items: [wg, 1, 1] },
        lds: Lds { static_bytes: m.static_lds, dynamic_bytes: dynamic_lds_bytes },
        wave_size: m.wave_size,
        pointers: resolved,
        effects: Effects::Known(effects),
    }
}

/// The chain's kernels and buffers on one device.
pub(crate) struct Chain {
    pub(crate) fill: Module,
    pub(crate) axpy: Module,
    pub(crate) scale: Module,
    pub(crate) x: DeviceAllocation,
    pub(crate) y: DeviceAllocation,
    pub(crate) z: DeviceAllocation,
    pub(crate) c: DeviceAllocation,
}

impl Chain {
    /// Loads the kernels and allocates the buffers (x filled) on `device`; identical calls on
    /// identical devices give identical VAs.
    pub(crate) fn new(device: &mut SimDevice) -> Self {
        let (fill, axpy, scale) = (load(device, "fill"), load(device, "axpy"), load(device, "scale"));
        let size = 4 * u64::from(GRID);
        let [x, y, z, c] = [0; 4].map(|_| device.allocate(size).unwrap());
        let xs: Vec<u8> = (0..GRID).flat_map(|i| x_value(i).to_le_bytes()).collect();
        device.write(x.va, &xs).unwrap();
        Self { fill, axpy, scale, x, y, z, c }
    }

    /// The launches of one step at `position`, with the layout each was built from.
    pub(crate) fn launches(
        &self,
        device: &SimDevice,
        position: u32,
    ) -> Vec<(LaunchRecord, &kernarg_abi::KernargLayout)> {
        let n = u32::try_from(i64::from(position) + N_ADDEND).unwrap();
        let (fill, axpy, scale) = (&self.fill, &self.axpy, &self.scale);
        let (x, y, z, c) = (self.x.va, self.y.va, self.z.va, self.c.va);
        vec![
            (
                record(
                    device,
                    fill,
                    GRID,
                    &[ArgValue::Pointer(y), ArgValue::F32(1.5), ArgValue::U32(n)],
                    &[(0, y)],
                    &[(0, Access::Write, bytes_of(n))],
                ),
                &fill.layout,
            ),
            (
                record(
                    device,
                    fill,
                    GRID,
                    &[ArgValue::Pointer(z), ArgValue::F32(-2.0), ArgValue::U32(N)],
                    &[(0, z)],
                    &[(0, Access::Write, bytes_of(N))],
                ),
                &fill.layout,
            ),
            (
                record(
                    device,
                    axpy,
                    GRID,
                    &[ArgValue::Pointer(y), ArgValue::Pointer(x), ArgValue::F32(2.0), ArgValue::U32(N)],
                    &[(0, y), (8, x)],
                    &[(0, Access::ReadWrite, bytes_of(N)), (1, Access::Read, bytes_of(N))],
                ),
                &axpy.layout,
            ),
            (
                record(
                    device,
                    scale,
                    GRID,
                    &[ArgValue::Pointer(c), ArgValue::Pointer(y), ArgValue::F32(0.5), ArgValue::U32(N)],
                    &[(0, c), (8, y)],
                    &[(0, Access::Write, bytes_of(N)), (1, Access::Read, bytes_of(N))],
                ),
                &scale.layout,
            ),
        ]
    }

    /// The step recorded at `position`, fill(y)'s `n` bound to the position.
    pub(crate) fn tape(&self, device: &SimDevice, position: u32) -> Tape {
        let mut recorder = Recorder::new(8);
        recorder.begin(position).unwrap();
        for (launch, layout) in self.launches(device, position) {
            recorder.record(launch, layout).unwrap();
        }
        let binding = Binding {
            name: "fill.n".into(),
            launch: 0,
            kind: BindingKind::KernargU32 { offset: 12, addend: N_ADDEND },
        };
        recorder.finish().unwrap().with_bindings(vec![binding]).unwrap()
    }

    /// One ordinary step at `position`: every launch through `Device::launch`.
    pub(crate) fn run_ordinary(&self, device: &mut SimDevice, position: u32) {
        for (launch, _) in self.launches(device, position) {
            let kd = slot_by_artifact(device.kernels())(&launch.artifact).unwrap().loaded.kd_va;
            let request = LaunchRequest {
                kernel_object: kd,
                grid_work_items: launch.geometry.grid_work_items,
                workgroup_work_items: launch.geometry.workgroup_work_items,
                dynamic_lds_bytes: launch.lds.dynamic_bytes,
                kernarg: &launch.kernarg,
            };
            device.launch(&request).unwrap();
        }
    }

    /// y, z and c.
    pub(crate) fn outputs(&self, device: &mut SimDevice) -> Vec<Vec<u8>> {
        [self.y, self.z, self.c]
            .map(|a| {
                let mut out = vec![0u8; usize::try_from(a.size).unwrap()];
                device.read(a.va, &mut out).unwrap();
                out
            })
            .to_vec()
    }
}

/// `y` after one step on a zeroed y, from plain math: fill(y, 1.5, n) then axpy(y, x, 2.0, N).
pub(crate) fn expected_y_first_step(position: u32) -> Vec<u8> {
    let n = u32::try_from(i64::from(position) + N_ADDEND).unwrap();
    (0..GRID)
        .flat_map(|i| {
            let fill = if i < n { 1.5 } else { 0.0 };
            let v = if i < N { 2.0 * x_value(i) + fill } else { fill };
            v.to_le_bytes()
        })
        .collect()
}
