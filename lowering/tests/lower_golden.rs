//! Golden PM4 output of the lowering: input tapes under `tests/golden/in`, one text file per
//! (tape, family) under `tests/golden/out/<family>`:
//!
//! - `tests/golden/in/<tape>.<target>.json`: the input tape in tape-core's JSON form. A tape names
//!   its code objects by digest and the code objects are built per target, so each family lowers
//!   its own recording of the same program. The file is written from the recording below and then
//!   read back: what is lowered is the decoded file, not the in-memory tape.
//! - `tests/golden/out/<family>/<tape>.pm4`: the lowered IB disassembled with pm4-encoding's
//!   decoder and register maps, annotated with the tape's identity, the dispatch boundaries and the
//!   patch sites.
//!
//! Both are compared byte for byte and rewritten only with `REDLINE_BLESS=1`. Every VA in them
//! comes from the soft device, whose allocator hands out the same addresses for the same sequence
//! of allocations, so the files do not depend on the machine.

mod tape_fixture;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use hal::Device;
use kernarg_abi::layout::ArgValue;
use kernarg_abi::metadata::ValueKind;
use lowering::lower::{DimUnit, LoweredIb, PatchTarget, lower_pm4, slot_by_artifact, verify};
use pm4_encoding::bits::FieldDesc;
use pm4_encoding::disasm::Visitor;
use pm4_encoding::regs::RegisterInfo;
use pm4_encoding::{Decoder, Header, Packet, ShaderType, Target};
use soft_device::SimDevice;
use tape_core::binding::{Binding, BindingKind};
use tape_core::recorder::Recorder;
use tape_core::tape::Tape;
use tape_core::{Access, LaunchRecord};
use tape_fixture::{GRID, N, N_ADDEND, WG, bytes_of, load, record, record_with};

/// One target per family: gfx10.3, gfx11, gfx12.
const TARGETS: [Target; 3] = [Target::Gfx1030, Target::Gfx1100, Target::Gfx1200];
const POSITION: u32 = 100;
const BLESS_COMMAND: &str = "REDLINE_BLESS=1 cargo nextest run -p lowering --test lower_golden";

#[test]
fn chain_golden() {
    check_tape("chain", record_chain);
}

#[test]
fn lds_golden() {
    check_tape("lds", record_lds);
}

// ---------------------------------------------------------------------------------------------
// Input tapes.

/// fill(y, 1.5, n) → axpy(y, x, 2.0, N) → scale(c, y, 0.5, N) with the independent fill(z, -2.0, N)
/// (`tape_fixture`'s chain), recorded at `POSITION` with fill(y)'s `n`, its grid and its hidden
/// block count following the position: a kernarg patch site, a `DIM_X` patch site and the
/// grid-workgroups word, and waits before axpy and scale only.
fn record_chain(device: &mut SimDevice) -> Tape {
    let (fill, axpy, scale) = (load(device, "fill"), load(device, "axpy"), load(device, "scale"));
    let size = 4 * u64::from(GRID);
    let [x, y, z, c] = [0; 4].map(|_| device.allocate(size).unwrap().va);
    let n = u32::try_from(i64::from(POSITION) + N_ADDEND).unwrap();
    let fill_grid = n.div_ceil(u32::from(WG)) * u32::from(WG);
    let launches = [
        (
            &fill,
            record(
                device,
                &fill,
                fill_grid,
                &[ArgValue::Pointer(y), ArgValue::F32(1.5), ArgValue::U32(n)],
                &[(0, y)],
                &[(0, Access::Write, bytes_of(n))],
            ),
        ),
        (
            &fill,
            record(
                device,
                &fill,
                GRID,
                &[ArgValue::Pointer(z), ArgValue::F32(-2.0), ArgValue::U32(N)],
                &[(0, z)],
                &[(0, Access::Write, bytes_of(N))],
            ),
        ),
        (
            &axpy,
            record(
                device,
                &axpy,
                GRID,
                &[ArgValue::Pointer(y), ArgValue::Pointer(x), ArgValue::F32(2.0), ArgValue::U32(N)],
                &[(0, y), (8, x)],
                &[(0, Access::ReadWrite, bytes_of(N)), (1, Access::Read, bytes_of(N))],
            ),
        ),
        (
            &scale,
            record(
                device,
                &scale,
                GRID,
                &[ArgValue::Pointer(c), ArgValue::Pointer(y), ArgValue::F32(0.5), ArgValue::U32(N)],
                &[(0, c), (8, y)],
                &[(0, Access::Write, bytes_of(N)), (1, Access::Read, bytes_of(N))],
            ),
        ),
    ];
    let block_count = fill.layout.offset_of(&ValueKind::HiddenBlockCountX).unwrap();
    let (addend, divisor, max_workgroups) = (N_ADDEND, u32::from(WG), GRID / u32::from(WG));
    let bindings = vec![
        Binding { name: "fill.n".into(), launch: 0, kind: BindingKind::KernargU32 { offset: 12, addend } },
        Binding {
            name: "fill.grid.x".into(),
            launch: 0,
            kind: BindingKind::GridAxis { axis: 0, addend, divisor, max_workgroups },
        },
        Binding {
            name: "fill.block_count.x".into(),
            launch: 0,
            kind: BindingKind::KernargGridWorkgroups { offset: block_count, axis: 0, addend, divisor, max_workgroups },
        },
    ];
    finish(launches.iter().map(|(m, l)| (l.clone(), &m.layout)), bindings)
}

/// block_sum's `n` = position + `LDS_N_ADDEND`.
const LDS_N_ADDEND: i64 = 800;
/// rmsnorm's required work-group size (`RMSNORM_BLOCK` in `kernels/hip/rmsnorm.hip`).
const RMSNORM_BLOCK: u16 = 256;

/// fill(x, 0.25, GRID) → block_sum(sums, x, n) with 256 bytes of dynamic LDS → rmsnorm(out, x, w)
/// over 4 rows of 256 with its static LDS and 256-wide work-groups. `LDS_SIZE` comes from dynamic
/// LDS in one launch and static LDS in another; rmsnorm only reads what block_sum reads, so the
/// one wait is before block_sum.
fn record_lds(device: &mut SimDevice) -> Tape {
    let (fill, block_sum, rmsnorm) = (load(device, "fill"), load(device, "block_sum"), load(device, "rmsnorm"));
    let size = 4 * u64::from(GRID);
    let workgroups = GRID / u32::from(WG);
    let rows = GRID / u32::from(RMSNORM_BLOCK);
    let [x, sums, out] = [size, 4 * u64::from(workgroups), size].map(|s| device.allocate(s).unwrap().va);
    let w = device.allocate(4 * u64::from(RMSNORM_BLOCK)).unwrap().va;
    let n = u32::try_from(i64::from(POSITION) + LDS_N_ADDEND).unwrap();
    let launches = [
        (
            &fill,
            record(
                device,
                &fill,
                GRID,
                &[ArgValue::Pointer(x), ArgValue::F32(0.25), ArgValue::U32(GRID)],
                &[(0, x)],
                &[(0, Access::Write, size)],
            ),
        ),
        (
            &block_sum,
            record_with(
                device,
                &block_sum,
                GRID,
                WG,
                4 * u32::from(WG),
                &[ArgValue::Pointer(sums), ArgValue::Pointer(x), ArgValue::U32(n)],
                &[(0, sums), (8, x)],
                &[(0, Access::Write, 4 * u64::from(workgroups)), (1, Access::Read, bytes_of(n))],
            ),
        ),
        (
            &rmsnorm,
            record_with(
                device,
                &rmsnorm,
                GRID,
                RMSNORM_BLOCK,
                0,
                &[
                    ArgValue::Pointer(out),
                    ArgValue::Pointer(x),
                    ArgValue::Pointer(w),
                    ArgValue::U32(rows),
                    ArgValue::U32(u32::from(RMSNORM_BLOCK)),
                    ArgValue::F32(1e-5),
                ],
                &[(0, out), (8, x), (16, w)],
                &[(0, Access::Write, size), (1, Access::Read, size), (2, Access::Read, 4 * u64::from(RMSNORM_BLOCK))],
            ),
        ),
    ];
    let bindings = vec![Binding {
        name: "block_sum.n".into(),
        launch: 1,
        kind: BindingKind::KernargU32 { offset: 16, addend: LDS_N_ADDEND },
    }];
    finish(launches.iter().map(|(m, l)| (l.clone(), &m.layout)), bindings)
}

fn finish<'a>(
    launches: impl Iterator<Item = (LaunchRecord, &'a kernarg_abi::KernargLayout)>,
    bindings: Vec<Binding>,
) -> Tape {
    let mut recorder = Recorder::new(8);
    recorder.begin(POSITION).unwrap();
    for (launch, layout) in launches {
        recorder.record(launch, layout).unwrap();
    }
    recorder.finish().unwrap().with_bindings(bindings).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Golden files.

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn input_path(tape: &str, target: Target) -> PathBuf {
    golden_dir().join("in").join(format!("{tape}.{target}.json"))
}

fn output_path(tape: &str, target: Target) -> PathBuf {
    golden_dir().join("out").join(target.family().name()).join(format!("{tape}.pm4"))
}

/// The path as the files name it: relative to the crate, so that no checkout path is written.
fn display(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(path).display().to_string()
}

/// Compares `bytes` with the golden file at `path`, or rewrites it when `REDLINE_BLESS=1`; a
/// mismatch is returned (not raised) so that one run names every stale file.
fn check_golden(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if std::env::var("REDLINE_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
        return Ok(());
    }
    let shown = display(path);
    let expected = std::fs::read(path).map_err(|e| format!("{shown}: {e} (run `{BLESS_COMMAND}` to write it)"))?;
    if expected == bytes {
        return Ok(());
    }
    let (expected, found) = (String::from_utf8_lossy(&expected), String::from_utf8_lossy(bytes));
    let first = expected.lines().zip(found.lines()).position(|(a, b)| a != b);
    let line = first.unwrap_or_else(|| expected.lines().count().min(found.lines().count()));
    let at = |text: &str| text.lines().nth(line).unwrap_or("<end of file>").to_owned();
    Err(format!(
        "{shown} differs from the lowering's output, first at line {}:\n  golden: {}\n  output: {}\n\
         If the change is intended, review it and refresh the golden files with `{BLESS_COMMAND}`.",
        line + 1,
        at(&expected),
        at(&found),
    ))
}

/// Records `tape` on every target, checks its input file, lowers the decoded file and checks the
/// disassembly; fails naming every differing file.
fn check_tape(tape: &str, record: fn(&mut SimDevice) -> Tape) {
    let mut failures = Vec::new();
    for target in TARGETS {
        let recorded = record(&mut SimDevice::new(target));
        let mut json = serde_json::to_string_pretty(&recorded).unwrap();
        json.push('\n');
        let input = input_path(tape, target);
        failures.extend(check_golden(&input, json.as_bytes()).err());
        let Ok(stored) = std::fs::read_to_string(&input) else { continue };
        let stored: Tape = serde_json::from_str(&stored).unwrap();
        let lowering = match Lowering::new(&stored, target) {
            Ok(lowering) => lowering,
            Err(e) => {
                failures.push(format!("{}: {e}", display(&input)));
                continue;
            }
        };
        let text = render(&display(&input), &stored, target, &lowering);
        failures.extend(check_golden(&output_path(tape, target), text.as_bytes()).err());
        // The golden output describes an IB the verifier accepts.
        let lookup = slot_by_artifact(lowering.device.kernels());
        if let Err(e) = verify(&lowering.lowered, &stored, target.family(), &lookup, &lowering.kernarg_vas) {
            failures.push(format!("{tape} on {target}: the lowered IB fails verification: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------
// Lowering a stored tape.

/// A stored tape lowered on a fresh soft device: the tape's code objects loaded in order of first
/// use (found among the checked-in artifacts by digest), then one allocation per launch holding
/// its kernarg blob. The same tape gives the same VAs every time.
struct Lowering {
    device: SimDevice,
    kernarg_vas: Vec<u64>,
    lowered: LoweredIb,
}

impl Lowering {
    /// `Err` names a code object the stored tape uses that is no longer checked in.
    fn new(tape: &Tape, target: Target) -> Result<Self, String> {
        let mut device = SimDevice::new(target);
        let mut loaded: Vec<[u8; 32]> = Vec::new();
        for launch in tape.launches() {
            let digest = launch.artifact.code_object_sha256;
            if loaded.contains(&digest) {
                continue;
            }
            let hex = hex(&digest);
            let Some(artifact) = kernels::artifacts().iter().find(|a| a.sha256 == hex) else {
                return Err(format!(
                    "no checked-in code object has the digest {hex}; after review, re-record with `{BLESS_COMMAND}`"
                ));
            };
            device.load_code_object(artifact.bytes).unwrap();
            loaded.push(digest);
        }
        let kernarg_vas: Vec<u64> = tape
            .launches()
            .iter()
            .map(|launch| {
                let blob = device.allocate(u64::try_from(launch.kernarg.len()).unwrap()).unwrap();
                device.write(blob.va, &launch.kernarg).unwrap();
                blob.va
            })
            .collect();
        let lowered = {
            let lookup = slot_by_artifact(device.kernels());
            lower_pm4(tape, target.family(), &lookup, &kernarg_vas).unwrap()
        };
        Ok(Self { device, kernarg_vas, lowered })
    }

    fn entry_va(&self, launch: &LaunchRecord) -> u64 {
        slot_by_artifact(self.device.kernels())(&launch.artifact).unwrap().loaded.entry_va
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

// ---------------------------------------------------------------------------------------------
// Disassembly.

/// One field a packet reports, kept so that a control word can take the symbols of the enum
/// fields that restate its bits.
enum Item {
    Field(&'static str, u64),
    Enum(&'static str, u64, Option<&'static str>),
    Word(&'static str, u32, &'static [FieldDesc]),
    Register(u32, u32, Option<&'static RegisterInfo>),
    Payload(&'static str, Vec<u32>),
}

#[derive(Default)]
struct Items(Vec<Item>);

impl Visitor for Items {
    fn field(&mut self, name: &'static str, value: u64) {
        self.0.push(Item::Field(name, value));
    }
    fn enum_field(&mut self, name: &'static str, value: u64, symbol: Option<&'static str>) {
        self.0.push(Item::Enum(name, value, symbol));
    }
    fn word(&mut self, name: &'static str, raw: u32, fields: &'static [FieldDesc]) {
        self.0.push(Item::Word(name, raw, fields));
    }
    fn register(&mut self, dword: u32, value: u32, info: Option<&'static RegisterInfo>) {
        self.0.push(Item::Register(dword, value, info));
    }
    fn payload(&mut self, name: &'static str, words: &[u32]) {
        self.0.push(Item::Payload(name, words.to_vec()));
    }
}

/// `hi:lo` fields of `raw` that are not 0 or that carry a symbol, then the bits outside every
/// named field.
/// `: fields`, or nothing for a word whose fields are all 0.
fn with_colon(fields: &str) -> String {
    if fields.is_empty() { String::new() } else { format!(":{fields}") }
}

fn fields_text(raw: u32, fields: &[FieldDesc], symbols: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut known = 0u32;
    for f in fields {
        known |= f.mask();
        let symbol = symbols.iter().find(|(n, _)| *n == f.name).map(|(_, s)| *s);
        if f.get(raw) != 0 || symbol.is_some() {
            let _ = write!(out, " {}={}", f.name, f.get(raw));
            if let Some(symbol) = symbol {
                let _ = write!(out, "({symbol})");
            }
        }
    }
    if !fields.is_empty() && raw & !known != 0 {
        let _ = write!(out, " unnamed_bits={:#010x}", raw & !known);
    }
    out
}

/// What a binding's site says, in words.
fn site_text(lowering: &Lowering, binding: &Binding, target: &PatchTarget) -> String {
    let launch = usize::try_from(binding.launch).unwrap();
    match *target {
        PatchTarget::KernargU32 { va } => {
            format!("kernarg word {va:#x} (launch {launch} kernarg + {})", va - lowering.kernarg_vas[launch])
        }
        PatchTarget::DispatchDim { ib_dword, unit } => {
            let axis = ib_dword - lowering.lowered.dispatch_offsets[launch] - 1;
            format!("IB dword {ib_dword} (DIM_{} of dispatch {launch}), {}", ["X", "Y", "Z"][axis], unit_text(unit))
        }
    }
}

fn unit_text(unit: DimUnit) -> String {
    match unit {
        DimUnit::Workgroups => "in work-groups".into(),
        DimUnit::WorkItems { workgroup_work_items } => {
            format!("in work-items (work-groups x {workgroup_work_items})")
        }
    }
}

/// The disassembly of `lowering`'s IB with the tape's identity, launches and patch sites.
fn render(input: &str, tape: &Tape, target: Target, lowering: &Lowering) -> String {
    let family = target.family();
    let ib = &lowering.lowered;
    let mut out = String::new();
    let _ = writeln!(out, "# The lowering of {input} for {family} (soft device {target}).");
    let _ = writeln!(out, "# Written by tests/lower_golden.rs; after review, refresh with");
    let _ = writeln!(out, "#   {BLESS_COMMAND}");
    let _ = writeln!(out, "# Register and control-word fields are listed when not 0; `<-` marks what a binding");
    let _ = writeln!(out, "# patches at replay and the dwords that carry the kernarg pointer.");
    let _ = writeln!(out, "tape: position={} {}", tape.position(), tape.identity());
    let offsets: Vec<String> = ib.dispatch_offsets.iter().map(ToString::to_string).collect();
    let _ = writeln!(
        out,
        "ib: {} dwords, {} dispatches (DISPATCH_DIRECT at dwords {}), waits before launches {:?}",
        ib.words.len(),
        ib.dispatch_offsets.len(),
        offsets.join(", "),
        ib.boundaries
    );
    let _ = writeln!(out, "launches:");
    for (i, (launch, &kernarg_va)) in tape.launches().iter().zip(&lowering.kernarg_vas).enumerate() {
        let g = launch.geometry;
        let _ = writeln!(
            out,
            "  {i} {}: code object {}, entry {:#x}, kernarg {kernarg_va:#x} ({} bytes), grid {:?}, \
             work-group {:?}, LDS {} static + {} dynamic bytes, wave{}",
            launch.artifact.symbol,
            hex(&launch.artifact.code_object_sha256),
            lowering.entry_va(launch),
            launch.kernarg.len(),
            g.grid_work_items,
            g.workgroup_work_items,
            launch.lds.static_bytes,
            launch.lds.dynamic_bytes,
            launch.wave_size,
        );
    }
    let _ = writeln!(out, "patch sites:");
    if ib.patch_sites.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for site in &ib.patch_sites {
        let binding = &tape.bindings()[site.binding];
        let _ = writeln!(
            out,
            "  binding {} `{}` of launch {}, {:?}: {}",
            site.binding,
            binding.name,
            site.launch,
            site.kind,
            site_text(lowering, binding, &site.target)
        );
    }

    // Packets from the start of the IB (or the previous DISPATCH_DIRECT) up to the first register
    // write of a launch are the synchronisation before it; the register writes through the
    // DISPATCH_DIRECT are the launch; what follows the last DISPATCH_DIRECT is the terminal.
    let launches = tape.launches().len();
    let mut next = 0usize;
    let mut in_launch = false;
    let mut section_open = false;
    for decoded in Decoder::new(&ib.words) {
        let d = decoded.unwrap();
        let starts_launch = matches!(d.packet, Packet::SetShReg(_)) && !in_launch && next < launches;
        if starts_launch {
            let launch = &tape.launches()[next];
            let _ = writeln!(out, "\n== launch {next} `{}` ==", launch.artifact.symbol);
            // The kernarg words a binding rewrites (in memory, not in the IB).
            for site in ib.patch_sites.iter().filter(|s| s.launch == next) {
                if let PatchTarget::KernargU32 { va } = site.target {
                    let offset = va - lowering.kernarg_vas[next];
                    let _ = writeln!(out, "     kernarg + {offset}  <- patched by binding {}", site.binding);
                }
            }
            in_launch = true;
        } else if !in_launch && !section_open {
            let title = match next {
                0 => "entry".to_owned(),
                n if n == launches => "terminal".to_owned(),
                n => format!("between launch {} and launch {n}", n - 1),
            };
            let _ = writeln!(out, "\n== {title} ==");
            section_open = true;
        }
        render_packet(&mut out, &d, target, lowering, if in_launch { Some(next) } else { None });
        if matches!(d.packet, Packet::DispatchDirect(_)) {
            let _ = writeln!(out, "-- end of dispatch {next} --");
            next += 1;
            in_launch = false;
            section_open = false;
        }
    }
    out
}

fn render_packet(
    out: &mut String,
    d: &pm4_encoding::Decoded<'_>,
    target: Target,
    lowering: &Lowering,
    launch: Option<usize>,
) {
    let opcode = d.packet.opcode().map_or_else(|| "TYPE0/TYPE2".to_owned(), |o| o.to_string());
    let mut flags = String::new();
    if let Ok(Header::Type3(h)) = Header::decode(d.words[0]) {
        if h.shader_type == ShaderType::Compute {
            flags.push_str(" compute");
        }
        if h.predicate {
            flags.push_str(" predicate");
        }
    }
    let _ = writeln!(out, "{:04} {opcode}{flags} ({} dwords)", d.offset, d.words.len());
    for (i, chunk) in d.words.chunks(8).enumerate() {
        let words: Vec<String> = chunk.iter().map(|w| format!("{w:08x}")).collect();
        let _ = writeln!(out, "     {} {}", if i == 0 { "words:" } else { "      " }, words.join(" "));
    }
    let mut items = Items::default();
    d.packet.visit(target.family(), &mut items);
    let kernarg = launch.map(|l| lowering.kernarg_vas[l]);
    let mut i = 0;
    while i < items.0.len() {
        match &items.0[i] {
            Item::Field(name, value) => {
                let _ = write!(out, "       {name} = {value} ({value:#x})");
                let axis = ["DIM_X", "DIM_Y", "DIM_Z"].iter().position(|n| n == name);
                if let (Packet::DispatchDirect(_), Some(axis)) = (d.packet, axis) {
                    out.push_str(&dim_patches(d.offset + 1 + axis, lowering));
                }
                out.push('\n');
            }
            Item::Enum(name, value, symbol) => {
                let _ = writeln!(out, "       {name} = {value} ({})", symbol.unwrap_or("unknown value"));
            }
            Item::Word(name, raw, fields) => {
                // Enum fields right after a word that restate one of its fields become symbols.
                let mut symbols = Vec::new();
                while let Some(Item::Enum(field, value, Some(symbol))) = items.0.get(i + 1) {
                    let restates = fields.iter().any(|f| f.name == *field && u64::from(f.get(*raw)) == *value);
                    if !restates {
                        break;
                    }
                    symbols.push((*field, *symbol));
                    i += 1;
                }
                let fields = fields_text(*raw, fields, &symbols);
                let _ = writeln!(out, "       {name} = {raw:#010x}{}", with_colon(&fields));
            }
            Item::Register(dword, value, info) => {
                let label = info.map_or("(unnamed register)", |r| r.name);
                let fields = info.map_or(&[][..], |r| r.fields);
                let _ = write!(out, "       {label} [{dword:#06x}] = {value:#010x}");
                out.push_str(&with_colon(&fields_text(*value, fields, &[])));
                // The kernarg pointer: a USER_DATA pair holding the launch's kernarg VA.
                if let (Some(va), Some(r)) = (kernarg, info)
                    && r.name.starts_with("COMPUTE_USER_DATA_")
                {
                    let next = items.0.get(i + 1);
                    let prev = i.checked_sub(1).and_then(|p| items.0.get(p));
                    let (lo, hi) = (u32::try_from(va & 0xffff_ffff).unwrap(), u32::try_from(va >> 32).unwrap());
                    if *value == lo && matches!(next, Some(Item::Register(_, v, _)) if *v == hi) {
                        out.push_str("  <- kernarg pointer, low dword");
                    } else if *value == hi && matches!(prev, Some(Item::Register(_, v, _)) if *v == lo) {
                        out.push_str("  <- kernarg pointer, high dword");
                    }
                }
                out.push('\n');
            }
            Item::Payload(name, words) => {
                let words: Vec<String> = words.iter().map(|w| format!("{w:#010x}")).collect();
                let _ = writeln!(out, "       {name}: {}", words.join(" "));
            }
        }
        i += 1;
    }
}

/// The patch sites on IB dword `dword`.
fn dim_patches(dword: usize, lowering: &Lowering) -> String {
    let mut out = String::new();
    for site in &lowering.lowered.patch_sites {
        if let PatchTarget::DispatchDim { ib_dword, unit } = site.target
            && ib_dword == dword
        {
            let _ = write!(out, "  <- patched by binding {}, {}", site.binding, unit_text(unit));
        }
    }
    out
}
