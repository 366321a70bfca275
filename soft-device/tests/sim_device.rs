//! The soft device through the `Device` trait: a chain of dependent kernels on every target with
//! kernarg blobs built from the code objects' metadata, checked against plain f64 math; and the
//! faults the ordinary path must raise.

use hal::{AllocateError, Device, DeviceAllocation, FreeError, LaunchError, LaunchRequest, LoadedCodeObject};
use hal::{FaultReason, MemoryFault};
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use pm4_encoding::Target;
use soft_device::{SimDevice, SoftFault};
use tape_core::{Access, AllocationId};

const N: u32 = 1000;
const GRID: u32 = 1024;
const WG: u16 = 64;

fn load(device: &mut SimDevice, module: &str) -> (Vec<u8>, LoadedCodeObject) {
    let path = format!("{}/{module}.co", device.target());
    let bytes = kernels::artifact(&path).unwrap().bytes.to_vec();
    let loaded = device.load_code_object(&bytes).unwrap();
    (bytes, loaded)
}

/// The kernarg blob of `kernel` in `code_object`, built from its own metadata.
fn kernarg(
    device: &SimDevice,
    code_object: &[u8],
    kernel: &str,
    args: &[ArgValue],
    geometry: &DispatchGeometry,
) -> Vec<u8> {
    let co = kernarg_abi::read_any(code_object, Some(device.target())).unwrap();
    co.kernel(kernel).unwrap().kernarg_layout().unwrap().build(args, geometry).unwrap()
}

fn f32s(device: &mut SimDevice, va: u64, count: usize) -> Vec<f32> {
    let mut bytes = vec![0u8; 4 * count];
    device.read(va, &mut bytes).unwrap();
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn bytes_of(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// x[i] = (i mod 7) / 4 - 0.5: multiples of 1/4, so every value below is exact in f32 and f64.
fn x_value(i: u32) -> f64 {
    f64::from(i % 7) / 4.0 - 0.5
}

struct Launcher<'a> {
    device: &'a mut SimDevice,
}

impl Launcher<'_> {
    fn run(
        &mut self,
        co: &(Vec<u8>, LoadedCodeObject),
        kernel: &str,
        args: &[ArgValue],
        lds: u32,
    ) -> soft_device::exec::ExecutedDispatch {
        let geometry = DispatchGeometry { dynamic_lds_bytes: lds, ..DispatchGeometry::linear(GRID, WG) };
        let blob = kernarg(self.device, &co.0, kernel, args, &geometry);
        let k = co.1.kernel(kernel).unwrap();
        let request = LaunchRequest {
            kernel_object: k.kd_va,
            grid_work_items: [GRID, 1, 1],
            workgroup_work_items: [WG, 1, 1],
            dynamic_lds_bytes: lds,
            kernarg: &blob,
        };
        self.device.launch_traced(&request).unwrap_or_else(|e| panic!("{kernel}: {e}"))
    }
}

#[test]
fn fill_axpy_scale_block_sum_chain_on_every_target() {
    for target in Target::ALL {
        let mut device = SimDevice::new(target);
        let fill = load(&mut device, "fill");
        let axpy = load(&mut device, "axpy");
        let scale = load(&mut device, "scale");
        let block_sum = load(&mut device, "block_sum");
        let bytes = 4 * u64::from(GRID);
        let (y, x, c) =
            (device.allocate(bytes).unwrap(), device.allocate(bytes).unwrap(), device.allocate(bytes).unwrap());
        let groups = GRID / u32::from(WG);
        let d = device.allocate(4 * u64::from(groups)).unwrap();
        #[allow(clippy::cast_possible_truncation)] // CAST: exact multiples of 1/4.
        let xs: Vec<f32> = (0..GRID).map(|i| x_value(i) as f32).collect();
        device.write(x.va, &bytes_of(&xs)).unwrap();

        let mut l = Launcher { device: &mut device };
        let f = l.run(&fill, "fill", &[ArgValue::Pointer(y.va), ArgValue::F32(1.5), ArgValue::U32(N)], 0);
        let a = l.run(
            &axpy,
            "axpy",
            &[ArgValue::Pointer(y.va), ArgValue::Pointer(x.va), ArgValue::F32(2.0), ArgValue::U32(N)],
            0,
        );
        let s = l.run(
            &scale,
            "scale",
            &[ArgValue::Pointer(c.va), ArgValue::Pointer(y.va), ArgValue::F32(0.5), ArgValue::U32(N)],
            0,
        );
        let b = l.run(
            &block_sum,
            "block_sum",
            &[ArgValue::Pointer(d.va), ArgValue::Pointer(c.va), ArgValue::U32(N)],
            4 * u32::from(WG),
        );

        // Plain f64 math: y = 2x + 1.5 below n (0 above, never written), c = y / 2 below n.
        let y_expected: Vec<f64> = (0..GRID).map(|i| if i < N { 2.0 * x_value(i) + 1.5 } else { 0.0 }).collect();
        let c_expected: Vec<f64> = y_expected.iter().map(|v| v * 0.5).collect();
        let d_expected: Vec<f64> = c_expected.chunks(usize::from(WG)).map(|g| g.iter().sum()).collect();
        let got = |device: &mut SimDevice, va, n| f32s(device, va, n).into_iter().map(f64::from).collect::<Vec<_>>();
        assert_eq!(got(&mut device, y.va, 1024), y_expected, "{target} y");
        assert_eq!(got(&mut device, c.va, 1024), c_expected, "{target} c");
        assert_eq!(got(&mut device, d.va, 16), d_expected, "{target} d");
        assert!(d_expected.iter().all(|&v| v != 0.0));

        // The records name the allocations and offsets of every declared effect.
        let ranges = |e: &soft_device::exec::ExecutedDispatch| {
            e.effects.iter().map(|x| (x.allocation, x.effect.bytes, x.effect.access)).collect::<Vec<_>>()
        };
        let n_bytes = 4 * u64::from(N);
        assert_eq!(f.kernel, "fill");
        assert_eq!(ranges(&f), [(Some((y.id, 0)), n_bytes, Access::Write)]);
        assert_eq!(
            ranges(&a),
            [(Some((y.id, 0)), n_bytes, Access::ReadWrite), (Some((x.id, 0)), n_bytes, Access::Read)]
        );
        assert_eq!(ranges(&s), [(Some((c.id, 0)), n_bytes, Access::Write), (Some((y.id, 0)), n_bytes, Access::Read)]);
        assert_eq!(ranges(&b), [(Some((d.id, 0)), 64, Access::Write), (Some((c.id, 0)), n_bytes, Access::Read)]);
    }
}

fn fill_request<'a>(co: &LoadedCodeObject, blob: &'a [u8]) -> LaunchRequest<'a> {
    LaunchRequest {
        kernel_object: co.kernel("fill").unwrap().kd_va,
        grid_work_items: [64, 1, 1],
        workgroup_work_items: [64, 1, 1],
        dynamic_lds_bytes: 0,
        kernarg: blob,
    }
}

fn fill_blob(device: &SimDevice, co: &[u8], out: u64, n: u32, workgroup: u16) -> Vec<u8> {
    let geometry = DispatchGeometry::linear(64, workgroup);
    kernarg(device, co, "fill", &[ArgValue::Pointer(out), ArgValue::F32(1.0), ArgValue::U32(n)], &geometry)
}

#[test]
fn launch_checks_are_typed_faults() {
    let mut device = SimDevice::new(Target::Gfx1100);
    let (bytes, fill) = load(&mut device, "fill");
    let out = device.allocate(256).unwrap();
    let blob = fill_blob(&device, &bytes, out.va, 64, 64);
    let ok = fill_request(&fill, &blob);
    device.launch(&ok).unwrap();

    // Request checks fail at the launch; failures while the kernel runs at the next wait.
    let err =
        |device: &mut SimDevice, r: LaunchRequest<'_>| device.launch(&r).and_then(|()| device.finish()).unwrap_err();
    let kd = ok.kernel_object;
    assert!(
        matches!(err(&mut device, LaunchRequest { kernel_object: kd + 64, ..ok }), LaunchError::UnknownKernel { kernel_object } if kernel_object == kd + 64)
    );
    let short = &blob[..blob.len() - 1];
    assert!(matches!(
        err(&mut device, LaunchRequest { kernarg: short, ..ok }),
        LaunchError::KernargSize { expected, found, .. } if usize::try_from(expected).unwrap() == found + 1
    ));
    assert!(matches!(
        err(&mut device, LaunchRequest { grid_work_items: [64, 0, 1], ..ok }),
        LaunchError::ZeroDimension { grid: [64, 0, 1], .. }
    ));
    assert!(matches!(
        err(&mut device, LaunchRequest { workgroup_work_items: [64, 32, 1], ..ok }),
        LaunchError::WorkgroupTooLarge { work_items: 2048, limit: 1024, .. }
    ));
    assert!(matches!(
        err(&mut device, LaunchRequest { dynamic_lds_bytes: 64 * 1024 + 1, ..ok }),
        LaunchError::LdsTooLarge { static_bytes: 0, dynamic_bytes: 65_537, limit: 65_536, .. }
    ));
    // A pointer to memory that is not allocated: the declared range names no allocation.
    let unmapped = 0x7e00_0000_0000;
    let blob = fill_blob(&device, &bytes, unmapped, 64, 64);
    let e = err(&mut device, fill_request(&fill, &blob));
    assert!(
        matches!(e.device_fault(), Some(SoftFault::EffectUnmapped { arg_index: 0, va, bytes: 256 }) if *va == unmapped),
        "{e}"
    );
    // A range running past the end of its allocation.
    let blob = fill_blob(&device, &bytes, out.va + 4, 64, 64);
    let e = err(&mut device, fill_request(&fill, &blob));
    assert!(matches!(e.device_fault(), Some(SoftFault::EffectUnmapped { .. })), "{e}");
    // A kernarg built for work-groups of 32 (2 blocks of 32) launched with work-groups of 64:
    // the first hidden argument in layout order, hidden_block_count_x, disagrees (1 block).
    let blob = fill_blob(&device, &bytes, out.va, 64, 32);
    let e = err(&mut device, fill_request(&fill, &blob));
    assert!(
        matches!(e.device_fault(), Some(SoftFault::HiddenArg(m)) if m.arg == "hidden_block_count_x" && m.found == 2 && m.expected == 1),
        "{e}"
    );
}

#[test]
fn kernels_without_cpu_reference_are_refused_on_every_target() {
    for target in Target::ALL {
        let mut device = SimDevice::new(target);
        let bytes = kernels::artifact(&format!("fixtures/{target}/scratch.co")).unwrap().bytes;
        let loaded = device.load_code_object(bytes).unwrap();
        let co = kernarg_abi::read_any(bytes, Some(target)).unwrap();
        for k in &loaded.kernels {
            let kernel = co.kernel(&k.name).unwrap();
            let layout = kernel.kernarg_layout().unwrap();
            let args: Vec<ArgValue> =
                layout.explicit_args().map(|a| ArgValue::Bytes(vec![0; usize::try_from(a.size).unwrap()])).collect();
            let blob = layout.build(&args, &DispatchGeometry::linear(64, 64)).unwrap();
            let request = LaunchRequest {
                kernel_object: k.kd_va,
                grid_work_items: [64, 1, 1],
                workgroup_work_items: [64, 1, 1],
                dynamic_lds_bytes: 0,
                kernarg: &blob,
            };
            device.launch(&request).unwrap();
            let e = device.finish().unwrap_err();
            assert!(
                matches!(&e, LaunchError::Device { kernel, .. } if *kernel == k.name)
                    && matches!(e.device_fault(), Some(SoftFault::NoCpuImplementation { kernel_object }) if *kernel_object == k.kd_va),
                "{target} {}: {e}",
                k.name
            );
        }
    }
}

#[test]
fn host_copies_fault_outside_allocations() {
    let mut device = SimDevice::new(Target::Gfx1201);
    let a = device.allocate(16).unwrap();
    device.write(a.va, &[7; 16]).unwrap();
    let mut out = [0u8; 17];
    let e = device.read(a.va, &mut out).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "memory fault on 17 bytes at {:#x}: the access runs past the end of the allocation at {:#x} of 16 bytes",
            a.va, a.va
        )
    );
    assert_eq!(
        device.write(0x1234, &[0; 4]),
        Err(MemoryFault { address: 0x1234, len: 4, reason: FaultReason::Unmapped }.into())
    );
    let mut ok = [0u8; 16];
    device.read(a.va, &mut ok).unwrap();
    assert_eq!(ok, [7; 16]);
    assert_eq!(device.resolve(a.va + 15), Some((a.id, 15)));
    assert_eq!(device.resolve(a.va + 16), None);
}

#[test]
fn free_reuse_and_reset_rules() {
    let mut device = SimDevice::new(Target::Gfx1030);
    let (bytes, fill) = load(&mut device, "fill");
    let a = device.allocate(256).unwrap();
    device.free(a).unwrap();
    assert_eq!(device.free(a), Err(FreeError::NotLive { id: a.id, va: a.va }));
    // Freed memory faults and its range is not handed out again.
    let b = device.allocate(256).unwrap();
    assert_ne!(b.va, a.va);
    assert_eq!(device.resolve(a.va), None);
    let blob = fill_blob(&device, &bytes, a.va, 64, 64);
    device.launch(&fill_request(&fill, &blob)).unwrap();
    let e = device.finish().unwrap_err();
    assert!(matches!(e.device_fault(), Some(SoftFault::EffectUnmapped { .. })), "{e}");
    // Device-owned memory cannot be freed by the caller.
    let kernarg = device.kernarg_buffer_allocation();
    assert_eq!(device.free(kernarg), Err(FreeError::DeviceOwned { id: kernarg.id, va: kernarg.va }));
    assert_eq!(
        device.free(fill.allocation),
        Err(FreeError::DeviceOwned { id: fill.allocation.id, va: fill.allocation.va })
    );
    // Reset: every allocation and code object is gone, identities restart after the device's
    // own kernarg buffer.
    device.reset();
    assert_eq!(device.resolve(b.va), None);
    let blob = fill_blob(&device, &bytes, b.va, 64, 64);
    assert!(matches!(device.launch(&fill_request(&fill, &blob)), Err(LaunchError::UnknownKernel { .. })));
    let c = device.allocate(256).unwrap();
    assert_eq!(c.id, AllocationId(1));
    assert_eq!(device.kernarg_buffer_allocation().id, AllocationId(0));
    assert_eq!(device.free(DeviceAllocation { id: c.id, ..b }), Err(FreeError::NotLive { id: c.id, va: b.va }));
}

#[test]
fn caller_given_vas_replay_a_layout_and_overlaps_are_errors() {
    let mut device = SimDevice::new(Target::Gfx1200);
    let (bytes, fill) = load(&mut device, "fill");
    let out = device.allocate_at(0x10_0000_0000, 256).unwrap();
    assert_eq!(out.va, 0x10_0000_0000);
    assert_eq!(
        device.allocate_at(0x0f_ffff_ff00, 512),
        Err(AllocateError::Overlaps { va: 0x0f_ffff_ff00, size: 512, existing_va: 0x10_0000_0000, existing_size: 256 })
    );
    device.allocate_at(0x0f_ffff_ff00, 256).unwrap();
    let blob = fill_blob(&device, &bytes, out.va, 64, 64);
    device.launch(&fill_request(&fill, &blob)).unwrap();
    assert_eq!(f32s(&mut device, out.va, 64), vec![1.0; 64]);
}
