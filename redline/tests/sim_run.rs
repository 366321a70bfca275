//! `redline sim run` on IB bundles: a dependent chain (fill → axpy → scale → block_sum) captured as
//! a bundle for every target runs and matches the outputs of the ordinary path; each mutation of
//! the IB or the AQL packet is detected with exit 1 and a message naming the fault; a missing
//! bundle exits 2, an invalid manifest 1.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aql_packets::{AmdPm4IbPacket, FenceScope};
use hal::{Device, DeviceAllocation, LaunchRequest};
use kernarg_abi::layout::{ArgValue, DispatchGeometry};
use lowering::ib_builder::{self, IbDispatch};
use pm4_encoding::packet::{AcquireMem, DispatchDirect, SetShReg};
use pm4_encoding::{Decoder, Emit, Packet, Target};
use soft_device::SimDevice;
use soft_device::bundle::{
    AqlEntry, Bundle, CodeObjectEntry, Expected, FORMAT, IbEntry, KernelEntry, Manifest, PatchKind, PatchSite, Region,
    Role, Va,
};

const N: u32 = 1000;
const GRID: u32 = 1024;
const WG: u16 = 64;
const LDS: u32 = 4 * 64;
const MODULES: [&str; 4] = ["fill", "axpy", "scale", "block_sum"];
/// The completion signal's handle, named by a signal region of the bundle.
const SIGNAL_HANDLE: u64 = 0x5160_0000;

/// A chain laid out on a device, plus everything a bundle needs.
struct Capture {
    target: Target,
    files: Vec<(String, Vec<u8>)>,
    manifest: Manifest,
    ib: Vec<u32>,
}

fn f32_bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values.flat_map(f32::to_le_bytes).collect()
}

fn region(name: &str, a: &DeviceAllocation, file: Option<&str>, role: Role, dtype: &str) -> Region {
    Region {
        name: name.into(),
        va: Va(a.va),
        size: a.size,
        file: file.map(Into::into),
        role,
        dtype: Some(dtype.into()),
    }
}

/// Lays the chain out on a fresh device, builds its IB (waits before every dependent dispatch),
/// runs the same launches through the ordinary path on a second, identically laid out device for
/// the expected outputs, and describes it all as a bundle.
fn capture(target: Target) -> Capture {
    let mut layout = SimDevice::new(target);
    let mut ordinary = SimDevice::new(target);
    let mut files = Vec::new();
    let mut code_objects = Vec::new();
    let mut kds = Vec::new();
    for module in MODULES {
        let bytes = kernels::artifact(&format!("{target}/{module}.co")).unwrap().bytes.to_vec();
        let loaded = layout.load_code_object(&bytes).unwrap();
        assert_eq!(ordinary.load_code_object(&bytes).unwrap().load_va, loaded.load_va);
        let k = loaded.kernel(module).unwrap();
        kds.push(k.kd_va);
        code_objects.push(CodeObjectEntry {
            file: format!("{module}.co"),
            load_va: Va(loaded.load_va),
            kernels: vec![KernelEntry { symbol: module.into(), kd_va: Va(k.kd_va), entry_va: Va(k.entry_va) }],
        });
        files.push((format!("{module}.co"), bytes));
    }
    let bytes = 4 * u64::from(GRID);
    fn alloc(layout: &mut SimDevice, ordinary: &mut SimDevice, size: u64) -> DeviceAllocation {
        let a = layout.allocate(size).unwrap();
        assert_eq!(ordinary.allocate(size).unwrap().va, a.va, "both devices lay out alike");
        a
    }
    let y = alloc(&mut layout, &mut ordinary, bytes);
    let x = alloc(&mut layout, &mut ordinary, bytes);
    let c = alloc(&mut layout, &mut ordinary, bytes);
    let d = alloc(&mut layout, &mut ordinary, 4 * u64::from(GRID / u32::from(WG)));
    let xs = f32_bytes((0..GRID).map(|i| (i % 7) as f32 / 4.0 - 0.5));
    ordinary.write(x.va, &xs).unwrap();
    files.push(("x.bin".into(), xs));
    let mut regions = vec![
        region("y", &y, None, Role::Output, "f32"),
        region("x", &x, Some("x.bin"), Role::Input, "f32"),
        region("c", &c, None, Role::Output, "f32"),
        region("d", &d, None, Role::Output, "f32"),
    ];
    let args: [Vec<ArgValue>; 4] = [
        vec![ArgValue::Pointer(y.va), ArgValue::F32(1.5), ArgValue::U32(N)],
        vec![ArgValue::Pointer(y.va), ArgValue::Pointer(x.va), ArgValue::F32(2.0), ArgValue::U32(N)],
        vec![ArgValue::Pointer(c.va), ArgValue::Pointer(y.va), ArgValue::F32(0.5), ArgValue::U32(N)],
        vec![ArgValue::Pointer(d.va), ArgValue::Pointer(c.va), ArgValue::U32(N)],
    ];
    let mut segments = Vec::new();
    let mut patch_sites = Vec::new();
    for (i, values) in args.iter().enumerate() {
        let co = kernarg_abi::read_any(&files[i].1, Some(target)).unwrap();
        let lds = if MODULES[i] == "block_sum" { LDS } else { 0 };
        let geometry = DispatchGeometry { dynamic_lds_bytes: lds, ..DispatchGeometry::linear(GRID, WG) };
        let blob = co.kernel(MODULES[i]).unwrap().kernarg_layout().unwrap().build(values, &geometry).unwrap();
        let seg = alloc(&mut layout, &mut ordinary, u64::try_from(blob.len()).unwrap());
        let name = format!("kernargs.{}", MODULES[i]);
        regions.push(region(&name, &seg, Some(&format!("{name}.bin")), Role::Kernargs, "bytes"));
        // `n` is the last explicit argument of every chain kernel: a position-like value.
        let n_offset = co
            .kernel(MODULES[i])
            .unwrap()
            .metadata
            .args
            .iter()
            .rev()
            .find(|a| a.value_kind.as_str() == "by_value")
            .unwrap()
            .offset;
        patch_sites.push(PatchSite {
            binding: format!("launch{i}.n"),
            kind: PatchKind::KernargU32,
            va: Va(seg.va + u64::from(n_offset)),
            rule: "position + 1000".into(),
        });
        files.push((format!("{name}.bin"), blob));
        segments.push((seg.va, lds));
    }
    // The expected outputs: the same launches through the ordinary path (one AQL dispatch each),
    // after every allocation so that the two layouts stay identical.
    for (i, module) in MODULES.iter().enumerate() {
        let blob = &files.iter().find(|(n, _)| *n == format!("kernargs.{module}.bin")).unwrap().1;
        let request = LaunchRequest {
            kernel_object: kds[i],
            grid_work_items: [GRID, 1, 1],
            workgroup_work_items: [WG, 1, 1],
            dynamic_lds_bytes: segments[i].1,
            kernarg: blob,
        };
        ordinary.launch(&request).unwrap();
    }
    let objects = layout.kernels();
    let dispatches: Vec<IbDispatch<'_>> = segments
        .iter()
        .enumerate()
        .map(|(i, &(va, lds))| {
            IbDispatch::from_slot(objects.by_kd(kds[i]).unwrap(), va, [GRID, 1, 1], [WG, 1, 1], lds, i > 0)
        })
        .collect();
    let mut ib = vec![0u32; 1024];
    let len = ib_builder::build(target.family(), &dispatches, &mut ib).unwrap();
    ib.truncate(len);
    let ib_alloc = layout.allocate_ib(u32::try_from(len).unwrap()).unwrap();
    let mut expected = Vec::new();
    for (name, a) in [("y", y), ("c", c), ("d", d)] {
        let mut bytes = vec![0u8; usize::try_from(a.size).unwrap()];
        ordinary.read(a.va, &mut bytes).unwrap();
        expected.push(Expected {
            region: name.into(),
            sha256: kernels::compile::sha256_hex(&bytes),
            file: format!("expected/{name}.bin"),
        });
        files.push((format!("expected/{name}.bin"), bytes));
    }
    regions.push(Region {
        name: "done".into(),
        va: Va(SIGNAL_HANDLE),
        size: 8,
        file: Some("done.bin".into()),
        role: Role::Signal,
        dtype: Some("i64".into()),
    });
    files.push(("done.bin".into(), 1i64.to_le_bytes().to_vec()));
    let packet = AmdPm4IbPacket::new(
        ib_alloc.va,
        u32::try_from(len).unwrap(),
        FenceScope::System,
        FenceScope::System,
        SIGNAL_HANDLE,
    )
    .unwrap();
    files.push(("aql.bin".into(), packet.as_array().to_vec()));
    let manifest = Manifest {
        format: FORMAT.into(),
        arch: target.name().into(),
        ib: IbEntry { va: Va(ib_alloc.va), file: "ib.bin".into(), size_dwords: u32::try_from(len).unwrap() },
        aql: AqlEntry { file: "aql.bin".into(), packets: 1 },
        code_objects,
        regions,
        patch_sites,
        expected,
    };
    Capture { target, files, manifest, ib }
}

impl Capture {
    /// Writes the bundle with `ib` as its IB, submitted by a PM4-IB packet of `size_dwords`
    /// (or by the raw `aql` packets given).
    fn write(&self, dir: &Path, ib: &[u32], size_dwords: u32, aql: Option<Vec<u8>>) {
        let mut files = self.files.clone();
        files.push(("ib.bin".into(), ib.iter().flat_map(|w| w.to_le_bytes()).collect()));
        let mut manifest = self.manifest.clone();
        manifest.ib.size_dwords = u32::try_from(ib.len()).unwrap();
        let aql = aql.unwrap_or_else(|| {
            let p = AmdPm4IbPacket::new(
                manifest.ib.va.0,
                size_dwords,
                FenceScope::System,
                FenceScope::System,
                SIGNAL_HANDLE,
            );
            p.unwrap().as_array().to_vec()
        });
        files.retain(|(n, _)| n != "aql.bin");
        files.push(("aql.bin".into(), aql));
        Bundle::write(dir, &manifest, &files).unwrap();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-sim-run-{}-{name}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

fn sim_run(dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redline")).args(["sim", "run"]).arg(dir).output().expect("run redline")
}

fn expect_fault(cap: &Capture, name: &str, ib: &[u32], size: u32, aql: Option<Vec<u8>>, needle: &str) {
    let dir = scratch(&format!("{}-{name}", cap.target));
    cap.write(&dir, ib, size, aql);
    let out = sim_run(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{} {name}: {stderr}", cap.target);
    assert!(stderr.contains(needle), "{} {name}: expected {needle:?} in: {stderr}", cap.target);
    std::fs::remove_dir_all(&dir).ok();
}

/// Re-emits `words` with `f` replacing some packets.
fn rewrite(words: &[u32], mut f: impl FnMut(&Packet<'_>) -> Option<Vec<u32>>) -> Vec<u32> {
    let mut out = Vec::new();
    for d in Decoder::new(words) {
        let d = d.unwrap();
        out.extend(f(&d.packet).unwrap_or_else(|| d.words.to_vec()));
    }
    out
}

fn emit(p: &impl Emit) -> Vec<u32> {
    let mut out = vec![0; p.buffer_len()];
    p.emit(&mut out);
    out
}

/// Rewrites the `n`-th SET_SH_REG that starts at register `name`.
fn patch_reg(cap: &Capture, name: &str, n: usize, f: impl Fn(&mut Vec<u32>)) -> Vec<u32> {
    let reg = pm4_encoding::regs::by_name(cap.target.family(), name).unwrap().dword;
    let mut seen = 0;
    rewrite(&cap.ib, |p| match p {
        Packet::SetShReg(s) if s.first_dword() == reg => {
            seen += 1;
            (seen == n + 1).then(|| {
                let mut values = s.values.to_vec();
                f(&mut values);
                emit(&SetShReg::new(reg, &values).unwrap())
            })
        }
        _ => None,
    })
}

fn patch_dispatch(cap: &Capture, n: usize, f: impl Fn(&mut DispatchDirect)) -> Vec<u32> {
    let mut seen = 0;
    rewrite(&cap.ib, |p| match p {
        Packet::DispatchDirect(d) => {
            seen += 1;
            (seen == n + 1).then(|| {
                let mut d = *d;
                f(&mut d);
                emit(&d)
            })
        }
        _ => None,
    })
}

#[test]
fn captured_chain_bundles_run_and_match_on_every_target() {
    for target in Target::ALL {
        let cap = capture(target);
        let dir = scratch(&format!("{target}-ok"));
        cap.write(&dir, &cap.ib, u32::try_from(cap.ib.len()).unwrap(), None);
        let out =
            Command::new(env!("CARGO_BIN_EXE_redline")).args(["sim", "run", "--json"]).arg(&dir).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{target}: {}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let kernels: Vec<&str> =
            report["dispatches"].as_array().unwrap().iter().map(|d| d["kernel"].as_str().unwrap()).collect();
        assert_eq!(kernels, MODULES, "{target}");
        assert_eq!(report["expected_checked"], 3);
        assert_eq!(report["signals"][0]["value"], 0, "{target}: the completion signal reached 0");
        // A wrong expected output is a mismatch naming the region.
        let mut files = cap.files.clone();
        for (name, bytes) in &mut files {
            if name == "expected/d.bin" {
                bytes[0] ^= 1;
            }
        }
        let bad = Capture { target, files, manifest: cap.manifest.clone(), ib: cap.ib.clone() };
        expect_fault(&bad, "mismatch", &cap.ib, u32::try_from(cap.ib.len()).unwrap(), None, "d (sha256");
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn every_mutation_is_detected_by_sim_run() {
    for target in Target::ALL {
        let cap = capture(target);
        let size = |ib: &[u32]| u32::try_from(ib.len()).unwrap();
        let family = target.family();

        // A missing wait between dependent dispatches (fill → axpy): drop the CS_PARTIAL_FLUSH.
        let mut flushes = 0;
        let ib = rewrite(&cap.ib, |p| match p {
            Packet::EventWrite(_) => {
                flushes += 1;
                (flushes == 1).then(Vec::new)
            }
            _ => None,
        });
        expect_fault(&cap, "missing-wait", &ib, size(&ib), None, "not separated by a wait");

        // A missing cache invalidate before a consumer: the acquire after the first wait
        // invalidates nothing.
        let mut acquires = 0;
        let ib = rewrite(&cap.ib, |p| match p {
            Packet::AcquireMem(_) => {
                acquires += 1;
                (acquires == 2).then(|| emit(&AcquireMem::full_range(pm4_encoding::packet::GcrCntl::from_raw(0))))
            }
            _ => None,
        });
        expect_fault(
            &cap,
            "missing-invalidate",
            &ib,
            size(&ib),
            None,
            "no ACQUIRE_MEM invalidating the consumer caches",
        );

        // A wrong PGM address (one 256-byte step off).
        let ib = patch_reg(&cap, "COMPUTE_PGM_LO", 1, |v| v[0] += 1);
        expect_fault(&cap, "wrong-pgm", &ib, size(&ib), None, "no loaded kernel starts there");

        // A wrong user-SGPR count in RSRC2 (USER_SGPR is bits [5:1]).
        let ib = patch_reg(&cap, "COMPUTE_PGM_RSRC1", 1, |v| v[1] = (v[1] & !0x3E) | (1 << 1));
        expect_fault(&cap, "user-sgpr-count", &ib, size(&ib), None, "RSRC2.USER_SGPR is 1");

        // The kernarg pointer two USER_DATA registers above where the descriptor's user-SGPR
        // layout puts it (USER_DATA_0/1, or 4/5 after gfx1030's private segment buffer).
        let kva = cap.manifest.regions.iter().find(|r| r.name == "kernargs.axpy").unwrap().va.0;
        let (lo, hi) = (u32::try_from(kva & 0xFFFF_FFFF).unwrap(), u32::try_from(kva >> 32).unwrap());
        let ib = patch_reg(&cap, "COMPUTE_USER_DATA_0", 1, |v| {
            let i = v.windows(2).position(|w| w == [lo, hi]).expect("the kernarg pointer");
            v.resize(v.len().max(i + 4), 0);
            v[i..i + 4].copy_from_slice(&[0, 0, lo, hi]);
        });
        expect_fault(&cap, "kernarg-user-data", &ib, size(&ib), None, "not a mapped");

        // A wrong wave32 bit (CS_W32_EN, initiator bit 15).
        let ib = patch_dispatch(&cap, 1, |d| {
            d.initiator = pm4_encoding::packet::DispatchInitiator::from_raw(d.initiator.raw() ^ (1 << 15));
        });
        expect_fault(&cap, "wave32", &ib, size(&ib), None, "CS_W32_EN");

        // LDS too small for block_sum (RSRC2 LDS_SIZE [23:15] = 0).
        let ib = patch_reg(&cap, "COMPUTE_PGM_RSRC1", 3, |v| v[1] &= !(0x1FF << 15));
        expect_fault(&cap, "lds", &ib, size(&ib), None, "RSRC2.LDS_SIZE 0");

        // gfx10.3/gfx11 dimensions given as work-items.
        if family != pm4_encoding::Family::Gfx12 {
            let ib = patch_dispatch(&cap, 0, |d| d.dim_x = GRID);
            expect_fault(&cap, "dims", &ib, size(&ib), None, "hidden_block_count_x");
        }

        // A truncated IB: the manifest says fewer dwords than the last packet needs.
        let ib = cap.ib.clone();
        expect_fault(&cap, "truncated", &ib, size(&ib) - 3, None, "decode:");

        // A bad AQL header: fence scope 3 in the acquire field (header bits [10:9]).
        let mut aql = cap.files.iter().find(|(n, _)| n == "aql.bin").unwrap().1.clone();
        aql[1] |= 0x06;
        expect_fault(&cap, "aql-header", &cap.ib, size(&cap.ib), Some(aql), "not a fence scope");
    }
}

#[test]
fn a_missing_bundle_exits_2_and_an_invalid_manifest_1() {
    let dir = scratch("missing");
    let out = sim_run(&dir);
    assert_eq!(out.status.code(), Some(2));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("manifest.json"), br#"{"format": "redline-ib-bundle/9"}"#).unwrap();
    let out = sim_run(&dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("manifest.json"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
}
