//! A tape lowered into an IB bundle.
//!
//! 1. **Regions.** Every allocation the tape's pointers and effects name becomes a region at the
//!    VA the recording saw (`pointer − offset`), as large as the furthest byte any effect or
//!    pointer reaches (rounded up to 256 bytes). A launch with unknown effects is refused: a bundle
//!    must say how large every region is. Roles come from the effects: read only → `input`,
//!    written only → `output`, both → `state`. Initial contents are the caller's (the example's
//!    primed state, or a deterministic pattern for a tape file).
//! 2. **Code objects.** Each launch's artifact is looked up by digest among the `kernels` crate's
//!    built code objects for the target and placed at `va_base` upward.
//! 3. **Expected results.** The tape runs through the ordinary path of a soft device laid out
//!    identically: each recorded blob, with the bindings' values at `position`, one dispatch at a
//!    time. Every region's bytes afterwards are the bundle's `expected` entries.
//! 4. **The submission.** The retained kernargs (placed as a prepared plan places them) follow
//!    the code objects, the PM4 IB lowered with
//!    [`lower_pm4`] and checked with [`verify`] follows them, both patched for `position`, and
//!    one AQL vendor PM4-IB packet with a completion signal calls the IB.
//!
//! The bundle is then run once on a fresh soft device ([`Bundle::run`]) before this returns, so a
//! bundle that is written has run clean at least once.

use std::path::Path;

use pm4_encoding::Target;
use tape_core::AllocationId;
use tape_core::record::{Access, Effects};
use tape_core::tape::Tape;

use hal::Device;
use lowering::lower::{PatchTarget, apply_patch_sites, lower_pm4, slot_by_artifact, verify};
use lowering::plan::{kernarg_image, kernarg_placement};
use soft_device::SimDevice;
use soft_device::bundle::{
    AqlEntry, Bundle, CodeObjectEntry, Expected, FORMAT, IbEntry, KernelEntry, Manifest, PatchKind, PatchSite, Region,
    Role, RunReport, Va,
};
use soft_device::memory::SimMemory;

/// Where the bundle's own objects (code objects, kernargs, IB, signal) start by default: below
/// the soft device's own allocation range, so they never collide with recorded allocations.
pub const DEFAULT_VA_BASE: u64 = 0x7e00_0000_0000;

/// One allocation the tape names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TapeRegion {
    /// The recorded allocation.
    pub allocation: AllocationId,
    /// Its VA in the recording.
    pub va: u64,
    /// Bytes the tape reaches from `va`: the furthest byte any pointer or effect reaches. The
    /// recorded allocation holds at least these.
    pub extent: u64,
    /// Bytes the bundle gives it: `extent` rounded up to 256 bytes
    /// ([`SimMemory::ALLOCATE_AT_ALIGN`]), so it may run past the recorded allocation's end.
    pub size: u64,
    /// Read by some launch.
    pub read: bool,
    /// Written by some launch.
    pub written: bool,
}

/// What [`export`] produced.
#[derive(Debug)]
pub struct Exported {
    /// The manifest.
    pub manifest: Manifest,
    /// Its files, relative paths and bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// The regions, in allocation order.
    pub regions: Vec<TapeRegion>,
    /// What the check run of the bundle reported.
    pub run: RunReport,
}

/// Why a tape could not be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The tape cannot be laid out as a bundle.
    #[error("{0}")]
    Tape(String),
    /// A device step failed while building or checking the bundle.
    #[error("{0}")]
    Device(String),
    /// The bundle did not run clean on a fresh soft device.
    #[error("the written bundle does not run clean: {0}")]
    Check(String),
    /// The bundle could not be written.
    #[error(transparent)]
    Write(#[from] soft_device::bundle::BundleError),
}

/// The regions of `tape` (see the module documentation).
///
/// # Errors
/// [`ExportError::Tape`] for unknown effects or a pointer inconsistent with another one into the
/// same allocation.
pub fn regions(tape: &Tape) -> Result<Vec<TapeRegion>, ExportError> {
    let mut regions: Vec<TapeRegion> = Vec::new();
    for (i, launch) in tape.launches().iter().enumerate() {
        let Effects::Known(effects) = &launch.effects else {
            return Err(ExportError::Tape(format!(
                "launch {i} ({}) has unknown effects: a bundle needs the extent of every region",
                launch.artifact.symbol
            )));
        };
        for p in &launch.pointers {
            let at = usize::try_from(p.kernarg_offset).unwrap_or(usize::MAX);
            let va = launch
                .kernarg
                .get(at..at.saturating_add(8))
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes)
                .ok_or_else(|| ExportError::Tape(format!("launch {i}: pointer slot {at} outside the blob")))?;
            let base = va.checked_sub(p.offset_bytes).ok_or_else(|| {
                ExportError::Tape(format!("launch {i}: pointer {va:#x} is below its offset {}", p.offset_bytes))
            })?;
            match regions.iter_mut().find(|r| r.allocation == p.allocation) {
                Some(r) if r.va != base => {
                    return Err(ExportError::Tape(format!(
                        "launch {i}: allocation {:?} starts at {base:#x} here and at {:#x} before",
                        p.allocation, r.va
                    )));
                }
                Some(r) => r.size = r.size.max(p.offset_bytes + 1),
                None => regions.push(TapeRegion {
                    allocation: p.allocation,
                    va: base,
                    extent: 0,
                    size: p.offset_bytes + 1,
                    read: false,
                    written: false,
                }),
            }
        }
        for e in effects {
            let Some(r) = regions.iter_mut().find(|r| r.allocation == e.allocation) else {
                return Err(ExportError::Tape(format!(
                    "launch {i}: an effect names allocation {:?}, which no pointer of the tape points into",
                    e.allocation
                )));
            };
            r.size = r.size.max(e.offset_bytes.saturating_add(e.len_bytes));
            r.read |= matches!(e.access, Access::Read | Access::ReadWrite);
            r.written |= matches!(e.access, Access::Write | Access::ReadWrite);
        }
    }
    for r in &mut regions {
        r.extent = r.size;
        r.size = r.size.next_multiple_of(SimMemory::ALLOCATE_AT_ALIGN);
    }
    regions.sort_by_key(|r| r.va);
    Ok(regions)
}

/// Options of [`export`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportOptions {
    /// The target.
    pub target: Target,
    /// The position the IB and kernargs are patched for and the expected results computed at.
    pub position: u32,
    /// Where the bundle's own objects start.
    pub va_base: u64,
}

fn dev(context: &str) -> impl Fn(&dyn std::fmt::Display) -> ExportError + '_ {
    move |e| ExportError::Device(format!("{context}: {e}"))
}

/// A soft device with the code objects at their places and the regions at their VAs, holding
/// their initial contents.
fn layout(
    target: Target,
    objects: &[(&'static kernels::EmbeddedArtifact, u64)],
    regions: &[TapeRegion],
    contents: &[Vec<u8>],
) -> Result<SimDevice, ExportError> {
    let mut device = SimDevice::new(target);
    for (artifact, va) in objects {
        device.load_code_object_at(artifact.bytes, *va).map_err(|e| dev(artifact.path)(&e))?;
    }
    for (r, bytes) in regions.iter().zip(contents) {
        device.allocate_at(r.va, r.size).map_err(|e| dev("region")(&e))?;
        device.write(r.va, bytes).map_err(|e| dev("region")(&e))?;
    }
    Ok(device)
}

fn region_name(r: &TapeRegion) -> String {
    format!("alloc{}", r.allocation.0)
}

/// Lowers `tape` into a bundle (see the module documentation) and checks it runs clean.
/// `initial(region)` gives each region's initial bytes (at most its size).
///
/// # Errors
/// [`ExportError`].
pub fn export(
    tape: &Tape,
    options: ExportOptions,
    initial: &mut dyn FnMut(&TapeRegion) -> Vec<u8>,
) -> Result<Exported, ExportError> {
    let target = options.target;
    if tape.launches().is_empty() {
        return Err(ExportError::Tape("the tape has no launches".into()));
    }
    let regions = regions(tape)?;
    let contents: Vec<Vec<u8>> = regions
        .iter()
        .map(|r| {
            let mut bytes = initial(r);
            bytes.truncate(usize::try_from(r.size).unwrap_or(usize::MAX));
            bytes
        })
        .collect();

    // Code objects, by digest, among the built artifacts for the target.
    let mut objects: Vec<(&'static kernels::EmbeddedArtifact, u64)> = Vec::new();
    let mut cursor = options.va_base;
    for (i, launch) in tape.launches().iter().enumerate() {
        let wanted = launch.artifact.code_object_sha256;
        if objects.iter().any(|(a, _)| kernels::parse_sha256_hex(a.sha256) == Some(wanted)) {
            continue;
        }
        let prefix = format!("{target}/");
        let artifact = kernels::artifacts()
            .iter()
            .find(|a| a.path.starts_with(&prefix) && kernels::parse_sha256_hex(a.sha256) == Some(wanted))
            .ok_or_else(|| {
                ExportError::Tape(format!(
                    "launch {i} ({}): its code object (sha256 {}) is not one of the built {target} code objects",
                    launch.artifact.symbol,
                    tape_core::serial::HexBytes(&wanted)
                ))
            })?;
        objects.push((artifact, cursor));
        // The loader places the image at `load_va`; the next object starts a granule-aligned
        // 1 MiB further, far more than any built code object's image.
        cursor += (u64::try_from(artifact.bytes.len()).unwrap_or(u64::MAX) + (1 << 20)).next_multiple_of(1 << 20);
    }

    // The ordinary path: expected results.
    let mut ordinary = layout(target, &objects, &regions, &contents)?;
    engine::shadow::relaunch(&mut ordinary, tape, options.position).map_err(|e| dev("ordinary path")(&e))?;

    // The retained kernargs and the IB.
    let mut lowered_device = layout(target, &objects, &regions, &contents)?;
    let kernarg_base = cursor.next_multiple_of(SimMemory::GRANULE_BYTES);
    let (offsets, total) = kernarg_placement(&lowered_device, tape).map_err(|e| ExportError::Tape(e.to_string()))?;
    let kernarg_vas: Vec<u64> = offsets.iter().map(|&o| kernarg_base + o).collect();
    let kernarg_size = total.next_multiple_of(SimMemory::ALLOCATE_AT_ALIGN);
    let kernarg_image = kernarg_image(tape, &offsets, kernarg_size);
    let lowered = {
        let lookup = slot_by_artifact(lowered_device.kernels());
        let lowered =
            lower_pm4(tape, target.family(), &lookup, &kernarg_vas).map_err(|e| ExportError::Tape(e.to_string()))?;
        verify(&lowered, tape, target.family(), &lookup, &kernarg_vas).map_err(|e| ExportError::Tape(e.to_string()))?;
        lowered
    };
    let ib_va = (kernarg_base + kernarg_size).next_multiple_of(SimMemory::GRANULE_BYTES);
    let ib_bytes: Vec<u8> = lowered.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let ib_size = u64::try_from(ib_bytes.len()).unwrap_or(u64::MAX);
    let signal_va = (ib_va + ib_size).next_multiple_of(SimMemory::GRANULE_BYTES);
    lowered_device.allocate_at(kernarg_base, kernarg_size).map_err(|e| dev("kernargs")(&e))?;
    lowered_device.write(kernarg_base, &kernarg_image).map_err(|e| dev("kernargs")(&e))?;
    lowered_device.allocate_at(ib_va, ib_size).map_err(|e| dev("ib")(&e))?;
    lowered_device.write(ib_va, &ib_bytes).map_err(|e| dev("ib")(&e))?;
    apply_patch_sites(&mut lowered_device, ib_va, &lowered.patch_sites, options.position)
        .map_err(|e| ExportError::Tape(format!("patching for position {}: {e}", options.position)))?;
    let mut patched_kernargs = vec![0u8; kernarg_image.len()];
    lowered_device.read(kernarg_base, &mut patched_kernargs).map_err(|e| dev("kernargs")(&e))?;
    let mut patched_ib = vec![0u8; ib_bytes.len()];
    lowered_device.read(ib_va, &mut patched_ib).map_err(|e| dev("ib")(&e))?;

    // The manifest.
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut code_objects = Vec::new();
    for (artifact, va) in &objects {
        let file = format!("code/{}", artifact.path.replace('/', "-"));
        let loaded = lowered_device
            .kernels()
            .objects()
            .iter()
            .find(|o| o.load_va == *va)
            .ok_or_else(|| ExportError::Device(format!("{} is not loaded at {va:#x}", artifact.path)))?;
        code_objects.push(CodeObjectEntry {
            file: file.clone(),
            load_va: Va(*va),
            kernels: loaded
                .kernels
                .iter()
                .map(|k| KernelEntry { symbol: k.name.clone(), kd_va: Va(k.kd_va), entry_va: Va(k.entry_va) })
                .collect(),
        });
        files.push((file, artifact.bytes.to_vec()));
    }
    let mut manifest_regions = Vec::new();
    let mut expected = Vec::new();
    // The initial bytes move into the files: a model's weights are most of them.
    for (r, bytes) in regions.iter().zip(contents) {
        let name = region_name(r);
        let role = match (r.read, r.written) {
            (true, true) => Role::State,
            (false, true) => Role::Output,
            _ => Role::Input,
        };
        let file = (!bytes.is_empty()).then(|| format!("regions/{name}.bin"));
        if let Some(f) = &file {
            files.push((f.clone(), bytes));
        }
        manifest_regions.push(Region { name: name.clone(), va: Va(r.va), size: r.size, file, role, dtype: None });
        let mut after = vec![0u8; usize::try_from(r.size).unwrap_or(0)];
        ordinary.read(r.va, &mut after).map_err(|e| dev("expected")(&e))?;
        let path = format!("expected/{name}.bin");
        expected.push(Expected { region: name, sha256: kernels::compile::sha256_hex(&after), file: path.clone() });
        files.push((path, after));
    }
    manifest_regions.push(Region {
        name: "kernargs".into(),
        va: Va(kernarg_base),
        size: kernarg_size,
        file: Some("kernargs.bin".into()),
        role: Role::Kernargs,
        dtype: Some("bytes".into()),
    });
    files.push(("kernargs.bin".into(), patched_kernargs));
    manifest_regions.push(Region {
        name: "done".into(),
        va: Va(signal_va),
        size: 8,
        file: Some("done.bin".into()),
        role: Role::Signal,
        dtype: Some("i64".into()),
    });
    files.push(("done.bin".into(), 1i64.to_le_bytes().to_vec()));
    let ib_dwords = u32::try_from(lowered.words.len())
        .map_err(|_| ExportError::Tape(format!("IB of {} dwords is too large", lowered.words.len())))?;
    files.push(("ib.bin".into(), patched_ib));
    let packet = aql_packets::AmdPm4IbPacket::new(
        ib_va,
        ib_dwords,
        aql_packets::FenceScope::System,
        aql_packets::FenceScope::System,
        signal_va,
    )
    .map_err(|e| ExportError::Tape(format!("the IB cannot be called by one packet: {e}")))?;
    files.push(("aql.bin".into(), packet.as_array().to_vec()));
    let patch_sites = lowered
        .patch_sites
        .iter()
        .map(|site| {
            let binding = &tape.bindings()[site.binding];
            // The rule the site was just patched by, in tape-core's text form, which the bundle
            // reader parses back.
            let rule = site.rule().map_err(|e| ExportError::Tape(format!("binding {}: {e}", binding.name)))?;
            let (kind, va) = match site.target {
                PatchTarget::KernargU32 { va } => (PatchKind::KernargU32, va),
                PatchTarget::DispatchDim { ib_dword, .. } => {
                    (PatchKind::DispatchDim, ib_va + 4 * u64::try_from(ib_dword).unwrap_or(0))
                }
            };
            Ok(PatchSite { binding: binding.name.clone(), kind, va: Va(va), rule: rule.to_string() })
        })
        .collect::<Result<_, ExportError>>()?;
    let manifest = Manifest {
        format: FORMAT.into(),
        arch: target.name().into(),
        ib: IbEntry { va: Va(ib_va), file: "ib.bin".into(), size_dwords: ib_dwords },
        aql: AqlEntry { file: "aql.bin".into(), packets: 1 },
        code_objects,
        regions: manifest_regions,
        patch_sites,
        expected,
    };
    manifest.validate()?;
    let run = check(&manifest, &files)?;
    Ok(Exported { manifest, files, regions, run })
}

/// Writes the bundle to a scratch directory, runs it, and removes the directory.
fn check(manifest: &Manifest, files: &[(String, Vec<u8>)]) -> Result<RunReport, ExportError> {
    let dir = std::env::temp_dir().join(format!("redline-export-check-{}-{}", std::process::id(), unique()));
    let result = (|| {
        Bundle::write(&dir, manifest, files)?;
        let bundle = Bundle::open(&dir)?;
        bundle.run().map_err(|e| ExportError::Check(e.to_string()))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Writes an exported bundle into `dir` (which must not exist or be empty).
///
/// # Errors
/// [`ExportError::Write`].
pub fn write(dir: &Path, exported: &Exported) -> Result<(), ExportError> {
    Bundle::write(dir, &exported.manifest, &exported.files)?;
    Ok(())
}

/// Deterministic initial bytes for a region of a tape file: small exact f32 values, so that the
/// kernels' results are exact and not all zero.
#[must_use]
pub fn pattern(region: &TapeRegion) -> Vec<u8> {
    engine::examples::pattern(usize::try_from(region.size / 4).unwrap_or(0), region.allocation.0)
}
