//! `prepare` refuses, before it allocates anything, a tape whose kernel cannot be replayed from a
//! retained body: each checked-in fixture code object the `kernarg_abi::verdict` rejects, named
//! with the verdict's reasons; a kernel name that names two descriptors of its code object (an
//! ambiguous alias); a kernarg segment alignment that cannot keep the arguments aligned.

mod tape_fixture;

use hal::Device;
use kernarg_abi::layout::ArgValue;
use kernarg_abi::metadata::ValueKind;
use lowering::plan::{PrepareError, prepare};
use soft_device::SimDevice;
use tape_core::Access;
use tape_core::recorder::Recorder;
use tape_core::tape::Tape;
use tape_fixture::{Module, TARGETS, record};

/// A one-launch tape of `m` over 64 work-items: every pointer argument a fresh 256-byte buffer
/// (written), every by-value argument 1.
fn one_launch(device: &mut SimDevice, m: &Module) -> Tape {
    let mut args = Vec::new();
    let mut pointers = Vec::new();
    let mut effects = Vec::new();
    for arg in m.layout.explicit_args() {
        match arg.kind {
            ValueKind::GlobalBuffer => {
                let buffer = device.allocate(256).unwrap();
                effects.push((pointers.len(), Access::Write, 256));
                pointers.push((arg.offset, buffer.va));
                args.push(ArgValue::Pointer(buffer.va));
            }
            ValueKind::ByValue if arg.size == 4 => args.push(ArgValue::U32(1)),
            ValueKind::ByValue if arg.size == 8 => args.push(ArgValue::U64(1)),
            ref other => panic!("{}: argument {} of kind {other:?} in a fixture", m.name, arg.index),
        }
    }
    let launch = record(device, m, 64, &args, &pointers, &effects);
    let mut recorder = Recorder::new(4);
    recorder.begin(0).unwrap();
    recorder.record(launch, &m.layout).unwrap();
    recorder.finish().unwrap()
}

/// The fixture at `fixtures/{target}/{file}` loaded on `device`, with its one kernel.
fn load_fixture(device: &mut SimDevice, file: &str) -> (Module, kernarg_abi::Verdict) {
    let target = device.target();
    let bytes = kernels::artifact(&format!("fixtures/{target}/{file}")).unwrap().bytes;
    let loaded = device.load_code_object(bytes).unwrap();
    let co = kernarg_abi::read_any(bytes, Some(target)).unwrap();
    assert_eq!(co.kernels.len(), 1, "{file}: one kernel");
    let kernel = &co.kernels[0];
    let name: &'static str = Box::leak(kernel.metadata.name.clone().into_boxed_str());
    let verdict = kernarg_abi::verdict(kernel, &co.target);
    let placed = loaded.kernel(name).unwrap();
    let module = Module {
        name,
        sha256: loaded.sha256,
        layout: kernel.kernarg_layout().unwrap(),
        static_lds: placed.group_segment_fixed_size,
        wave_size: u8::try_from(placed.wavefront_size).unwrap(),
    };
    (module, verdict)
}

#[test]
fn prepare_refuses_every_fixture_the_verdict_rejects_naming_the_kernel_and_the_reason() {
    let mut refused = 0;
    for target in TARGETS {
        let fixtures: Vec<&str> = kernels::artifacts()
            .iter()
            .filter_map(|a| a.path.strip_prefix(&format!("fixtures/{target}/")).filter(|f| f.ends_with(".co")))
            .collect();
        assert!(fixtures.contains(&"scratch.co") && fixtures.contains(&"dispatch_ptr.co"), "{target}: {fixtures:?}");
        for file in fixtures {
            let mut device = SimDevice::new(target);
            let (module, verdict) = load_fixture(&mut device, file);
            let tape = one_launch(&mut device, &module);
            let before = device.memory().len();
            match prepare(&mut device, &tape) {
                Err(PrepareError::UnsupportedKernel { launch, symbol, reasons }) => {
                    assert!(!verdict.supported, "{target} {file}: refused though the verdict supports it");
                    assert_eq!((launch, symbol.as_str()), (0, module.name));
                    for reason in &verdict.reasons {
                        assert!(reasons.contains(&reason.to_string()), "{target} {file}: {reasons} lacks {reason}");
                    }
                    assert_eq!(device.memory().len(), before, "nothing allocated before the refusal");
                    refused += 1;
                }
                other => {
                    assert!(verdict.supported, "{target} {file}: verdict {verdict:?} but prepare gave {other:?}");
                }
            }
        }
    }
    assert!(refused >= 2 * TARGETS.len(), "scratch and dispatch_ptr refused on every target ({refused})");
}

#[test]
fn the_same_code_object_loaded_twice_is_not_refused() {
    // Two loads of the same bytes give two identical kernels: either serves the tape.
    let mut device = SimDevice::new(TARGETS[1]);
    let fill = tape_fixture::load(&mut device, "fill");
    let tape = one_launch(&mut device, &fill);
    let bytes = kernels::artifact(&format!("{}/fill.co", device.target())).unwrap().bytes;
    device.load_code_object(bytes).unwrap();
    prepare(&mut device, &tape).unwrap();
}

/// `bytes` with the one occurrence of `from` replaced by `to` (same length).
fn patched(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at: Vec<usize> = bytes.windows(from.len()).enumerate().filter(|(_, w)| *w == from).map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "{:?} occurs {} times", String::from_utf8_lossy(from), at.len());
    let mut out = bytes.to_vec();
    out[at[0]..at[0] + to.len()].copy_from_slice(to);
    out
}

/// A module of the code object `bytes` (already loaded on `device`) for kernel `name`.
fn module_of(device: &mut SimDevice, bytes: &[u8], name: &'static str, sha256: [u8; 32]) -> Module {
    let co = kernarg_abi::read_any(bytes, Some(device.target())).unwrap();
    let kernel = co.kernel(name).unwrap();
    Module {
        name,
        sha256,
        layout: kernel.kernarg_layout().unwrap(),
        static_lds: kernel.metadata.group_segment_fixed_size,
        wave_size: u8::try_from(kernel.metadata.wavefront_size).unwrap(),
    }
}

#[test]
fn a_kernel_name_that_names_two_descriptors_is_refused() {
    for target in TARGETS {
        // `elementwise.co` holds `add` and `mul`; renaming `mul`'s metadata `.name` to `add`
        // leaves two descriptors (`add.kd`, `mul.kd`) under one name: an ambiguous alias.
        let original = kernels::artifact(&format!("{target}/elementwise.co")).unwrap().bytes;
        let bytes = patched(original, b"\xa5.name\xa3mul", b"\xa5.name\xa3add");
        let mut device = SimDevice::new(target);
        let loaded = device.load_code_object(&bytes).unwrap();
        let descriptors: Vec<u64> = loaded.kernels.iter().filter(|k| k.name == "add").map(|k| k.kd_va).collect();
        assert_eq!(descriptors.len(), 2, "{target}: the patched object names two kernels add");
        assert_ne!(descriptors[0], descriptors[1]);
        let module = module_of(&mut device, &bytes, "add", loaded.sha256);
        let tape = one_launch(&mut device, &module);
        let before = device.memory().len();
        match prepare(&mut device, &tape) {
            Err(PrepareError::AmbiguousKernel { launch: 0, symbol, descriptors: named }) => {
                assert_eq!(symbol, "add");
                assert_eq!(named, descriptors);
            }
            other => panic!("{target}: {other:?}"),
        }
        assert_eq!(device.memory().len(), before, "nothing allocated before the refusal");
        let text = prepare(&mut device, &tape).unwrap_err().to_string();
        assert!(text.contains("kernel name `add` is ambiguous"), "{text}");

        // The unpatched object, on a fresh device, prepares.
        let mut device = SimDevice::new(target);
        let loaded = device.load_code_object(original).unwrap();
        let module = module_of(&mut device, original, "add", loaded.sha256);
        let tape = one_launch(&mut device, &module);
        prepare(&mut device, &tape).unwrap();
    }
}

#[test]
fn a_kernarg_alignment_below_the_arguments_is_refused() {
    for target in TARGETS {
        // `fill(out: pointer, value: f32, n: u32)` declares `.kernarg_segment_align 8`; 4 would
        // place its pointer misaligned.
        let original = kernels::artifact(&format!("{target}/fill.co")).unwrap().bytes;
        let bytes = patched(original, b"\xb6.kernarg_segment_align\x08", b"\xb6.kernarg_segment_align\x04");
        let mut device = SimDevice::new(target);
        let loaded = device.load_code_object(&bytes).unwrap();
        assert_eq!(loaded.kernel("fill").unwrap().kernarg_segment_align, 4);
        let module = module_of(&mut device, &bytes, "fill", loaded.sha256);
        let tape = one_launch(&mut device, &module);
        let before = device.memory().len();
        match prepare(&mut device, &tape) {
            Err(PrepareError::KernargAlignment { launch: 0, symbol, detail }) => {
                assert_eq!(symbol, "fill");
                assert!(
                    detail.contains(".kernarg_segment_align 4 is below the 8-byte alignment of argument 0"),
                    "{detail}"
                );
            }
            other => panic!("{target}: {other:?}"),
        }
        assert_eq!(device.memory().len(), before, "nothing allocated before the refusal");
    }
}
