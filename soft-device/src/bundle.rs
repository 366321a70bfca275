//! IB bundles: a directory that fully describes one submission — code objects at their VAs, memory
//! regions with their initial bytes, the PM4 IB, the AQL packets that submit it, the patch sites
//! of its dynamic bindings, and the expected bytes of its outputs — so that it can be executed by
//! the soft device here and by independent tools elsewhere.
//!
//! `manifest.json`:
//! ```json
//! {"format": "redline-ib-bundle/1", "arch": "gfx1100",
//!  "ib": {"va": "0x7f0000100000", "file": "ib.bin", "size_dwords": 123},
//!  "aql": {"file": "aql.bin", "packets": 1},
//!  "code_objects": [{"file": "fill.co", "load_va": "0x7f0000000000",
//!                    "kernels": [{"symbol": "fill", "kd_va": "0x...", "entry_va": "0x..."}]}],
//!  "regions": [{"name": "x", "va": "0x...", "size": 4096, "file": "x.bin", "role": "input",
//!               "dtype": "f32"}],
//!  "patch_sites": [{"binding": "launch0.kernarg@12", "kind": "kernarg_u32", "va": "0x...",
//!                   "rule": "position + 1"}],
//!  "expected": [{"region": "y", "sha256": "…", "file": "expected/y.bin"}]}
//! ```
//!
//! # What a bundle must satisfy
//!
//! [`Manifest::validate`] checks the manifest alone, [`Bundle::check`] the files against it;
//! [`Bundle::run`] does both before it loads anything. Every refusal names the manifest's JSON
//! path (`patch_sites[2].rule`) or the file, and the offending value next to the rule it breaks.
//!
//! - **Files.** Paths are relative to the bundle directory (at most [`FILE_NAME_BYTES_MAX`]
//!   bytes) and may not leave it, neither as written (no `..`, no root) nor through symlinks; each must be a regular file (a symlink to
//!   `/dev/zero` is refused before a byte is read). Sizes: `manifest.json` at most
//!   [`MANIFEST_BYTES_MAX`]; a code object at most [`CODE_OBJECT_BYTES_MAX`]; the IB exactly
//!   `4 * size_dwords` bytes; the AQL file exactly `64 * packets` bytes; a region's file exactly
//!   the region's `size` (a region without `file` starts zeroed); an expected file exactly its
//!   region's `size`.
//! - **Memory.** VAs are hex strings. Regions other than signals, and the IB, lie in
//!   `[`[`SimMemory::VA_MIN`]`, `[`SimMemory::VA_END`]`)` at 256-byte aligned VAs, overlap
//!   nothing, and together (granule-rounded, with the AQL ring) fit [`DEVICE_BYTES_MAX`], what
//!   the soft device's memory accepts. At most [`REGIONS_MAX`] regions, [`CODE_OBJECTS_MAX`]
//!   code objects, [`AQL_PACKETS_MAX`] AQL packets, [`PATCH_SITES_MAX`] patch sites.
//! - **Regions.** Unique names; roles `kernargs`, `input`, `output`, `state`, `signal` (a signal
//!   region holds the 8-byte initial value of the completion signal whose handle, non-zero and
//!   unique, is its VA); `dtype`, when given, one of [`DTYPES`], the size a whole number of its
//!   elements.
//! - **AQL.** A vendor PM4-IB packet calls exactly `ib.va` with at most `ib.size_dwords` dwords;
//!   a completion signal a packet names (non-zero) is one of the signal regions. Packets that do
//!   not decode are left to the device, which reports them as faults.
//! - **Patch sites.** `rule` is one of the forms of [`rule`] ([`rule::FORMS`]); `va` is dword
//!   aligned; a `kernarg_u32` site's 4 bytes lie inside a `kernargs` region; a `dispatch_dim`
//!   site is a `DIM_X`/`DIM_Y`/`DIM_Z` dword (body dword 1 to 3) of a `DISPATCH_DIRECT` packet of
//!   the IB as `pm4_encoding`'s decoder reads it — never a packet header.
//! - **Expected results.** Each names a memory region (not a signal), a 64-hex-digit SHA-256 and
//!   a file that is present.
//!
//! [`BundleError::is_io`] tells a bundle that cannot be read (missing directory or file,
//! unreadable, not a regular file) from one that is invalid (everything else).

mod contents;
mod error;
mod validate;

/// The rules of patch sites and their text form are tape-core's ([`tape_core::binding::Rule`]):
/// the text a bundle carries is written and read by the implementation that computes the values
/// its sites were patched with.
pub use tape_core::binding::rule;

pub use error::{BundleError, RunError};

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::memory::SimMemory;

/// The format tag this reader accepts.
pub const FORMAT: &str = "redline-ib-bundle/1";
/// At most this many regions.
pub const REGIONS_MAX: usize = 4096;
/// At most this many code objects.
pub const CODE_OBJECTS_MAX: usize = 64;
/// At most this many patch sites.
pub const PATCH_SITES_MAX: usize = 1 << 16;
/// At most this many AQL packets (a 4 MiB ring).
pub const AQL_PACKETS_MAX: u32 = 1 << 16;
/// The longest file name (path relative to the bundle) a manifest may give, in bytes.
pub const FILE_NAME_BYTES_MAX: usize = 1024;
/// The largest `manifest.json` read: 16 MiB.
pub const MANIFEST_BYTES_MAX: u64 = 16 << 20;
/// The largest code object file read: 256 MiB.
pub const CODE_OBJECT_BYTES_MAX: u64 = 256 << 20;
/// Bytes of the soft device's memory a bundle's regions, IB and AQL ring may take together
/// (granule-rounded): the address space's budget less the device's own kernarg pool.
pub const DEVICE_BYTES_MAX: u64 = SimMemory::TOTAL_BYTES_MAX - crate::SimDevice::KERNARG_POOL_BYTES;
/// The element types a region's `dtype` may name, with their sizes in bytes.
pub const DTYPES: [(&str, u64); 13] = [
    ("bytes", 1),
    ("u8", 1),
    ("i8", 1),
    ("u16", 2),
    ("i16", 2),
    ("f16", 2),
    ("bf16", 2),
    ("u32", 4),
    ("i32", 4),
    ("f32", 4),
    ("u64", 8),
    ("i64", 8),
    ("f64", 8),
];
/// Offending text longer than this many characters is cut in messages (as in a rule's).
pub const SHOWN_CHARS_MAX: usize = rule::SHOWN_CHARS_MAX;

/// `text` as a message shows it, quoted, its control characters spelled out
/// ([`infile::escape`]): at most [`SHOWN_CHARS_MAX`] characters, then `…` and its length
/// (`"xxxx"… (100000 bytes)`).
pub(crate) fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS_MAX) {
        None => format!("\"{}\"", infile::escape(text)),
        Some((at, _)) => format!("\"{}\"… ({} bytes)", infile::escape(&text[..at]), text.len()),
    }
}

/// A VA written as a hex string (`"0x7f0000001000"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Va(pub u64);

impl Serialize for Va {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:#x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Va {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).ok_or_else(|| {
            serde::de::Error::custom(format!("VA {} must be a hex string starting with 0x", shown(&s)))
        })?;
        u64::from_str_radix(digits, 16)
            .map(Va)
            .map_err(|e| serde::de::Error::custom(format!("VA {}: {e} (at most 16 hex digits)", shown(&s))))
    }
}

/// The IB.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IbEntry {
    /// Where it is loaded.
    pub va: Va,
    /// Its little-endian dwords.
    pub file: String,
    /// Its length.
    pub size_dwords: u32,
}

/// The AQL packets that submit the IB.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AqlEntry {
    /// 64 bytes per packet.
    pub file: String,
    /// How many.
    pub packets: u32,
}

/// A kernel of a code object, where the bundle expects it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelEntry {
    /// Kernel name.
    pub symbol: String,
    /// Its descriptor.
    pub kd_va: Va,
    /// Its entry point.
    pub entry_va: Va,
}

/// A code object loaded at a fixed VA.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeObjectEntry {
    /// The file.
    pub file: String,
    /// Load base of its PT_LOAD image.
    pub load_va: Va,
    /// Its kernels as the IB uses them.
    pub kernels: Vec<KernelEntry>,
}

/// What a region is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Kernel arguments.
    Kernargs,
    /// Read by the submission.
    Input,
    /// Written by the submission.
    Output,
    /// Read and written (KV cache, recurrent state).
    State,
    /// A completion signal: 8 bytes, its initial value.
    Signal,
}

impl Role {
    /// The name the manifest uses.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Role::Kernargs => "kernargs",
            Role::Input => "input",
            Role::Output => "output",
            Role::State => "state",
            Role::Signal => "signal",
        }
    }
}

/// A memory region.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Unique name.
    pub name: String,
    /// Where it lives.
    pub va: Va,
    /// Bytes.
    pub size: u64,
    /// Initial bytes, exactly `size` of them; none = zeroed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What it is for.
    pub role: Role,
    /// Element type for tools that display it (one of [`DTYPES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
}

/// Where a dynamic binding is patched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchSite {
    /// The binding's name.
    pub binding: String,
    /// `kernarg_u32` or `dispatch_dim`.
    pub kind: PatchKind,
    /// Byte address of the patched dword.
    pub va: Va,
    /// The rule, one of [`rule::FORMS`], e.g. `position + 1` or `ceil((position + 1) / 64)`.
    pub rule: String,
}

/// Kinds of patch sites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchKind {
    /// A `u32` in a retained kernarg segment (a `kernargs` region).
    KernargU32,
    /// A DISPATCH_DIRECT dimension dword in the IB.
    DispatchDim,
}

impl PatchKind {
    /// The name the manifest uses.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            PatchKind::KernargU32 => "kernarg_u32",
            PatchKind::DispatchDim => "dispatch_dim",
        }
    }
}

/// An expected result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The region.
    pub region: String,
    /// SHA-256 of the region's bytes after the submission, lower-case hex.
    pub sha256: String,
    /// The expected bytes.
    pub file: String,
}

/// `manifest.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// `gfxNNNN`.
    pub arch: String,
    /// The IB.
    pub ib: IbEntry,
    /// Its submission.
    pub aql: AqlEntry,
    /// Code objects.
    pub code_objects: Vec<CodeObjectEntry>,
    /// Memory regions.
    pub regions: Vec<Region>,
    /// Patch sites.
    #[serde(default)]
    pub patch_sites: Vec<PatchSite>,
    /// Expected outputs.
    #[serde(default)]
    pub expected: Vec<Expected>,
}

/// A relative path with no `..`, root or prefix.
fn is_inside(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && p.components().all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
}

/// A bundle read from disk: the manifest and a reader for its files.
#[derive(Debug)]
pub struct Bundle {
    /// Its directory.
    pub dir: PathBuf,
    /// Its manifest, validated.
    pub manifest: Manifest,
    /// The target it is for.
    pub target: pm4_encoding::Target,
}

impl Bundle {
    /// Reads `dir/manifest.json` (at most [`MANIFEST_BYTES_MAX`]) and validates it
    /// ([`Manifest::validate`]).
    ///
    /// # Errors
    /// [`BundleError::Dir`] or [`BundleError::NotADirectory`] for `dir`, [`BundleError::Read`]
    /// for the file, [`BundleError::Parse`] or [`BundleError::Invalid`] for its content.
    pub fn open(dir: &Path) -> Result<Self, BundleError> {
        let meta = std::fs::metadata(dir).map_err(|source| BundleError::Dir { path: dir.to_owned(), source })?;
        if !meta.is_dir() {
            return Err(BundleError::NotADirectory { path: dir.to_owned(), kind: infile::kind(&meta) });
        }
        let limit = infile::Limit::new("manifest", MANIFEST_BYTES_MAX);
        let text = infile::read_inside(dir, Path::new("manifest.json"), limit)
            .map_err(|source| BundleError::Read { at: "manifest.json".into(), source })?;
        let manifest: Manifest = serde_json::from_slice(&text).map_err(|e| BundleError::parse(&e))?;
        let target = manifest.validate()?;
        Ok(Self { dir: dir.to_owned(), manifest, target })
    }

    /// Writes `manifest` and `files` (relative name → bytes) into `dir`, creating it.
    ///
    /// # Errors
    /// [`BundleError`] when the manifest is invalid or a file cannot be written.
    pub fn write(dir: &Path, manifest: &Manifest, files: &[(String, Vec<u8>)]) -> Result<(), BundleError> {
        manifest.validate()?;
        for (name, bytes) in files {
            if !is_inside(name) {
                return Err(BundleError::Invalid {
                    at: format!("file {}", shown(name)),
                    message: "a bundle's files must be relative paths inside it".into(),
                });
            }
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|source| BundleError::Write { path: parent.to_owned(), source })?;
            }
            std::fs::write(&path, bytes).map_err(|source| BundleError::Write { path, source })?;
        }
        let path = dir.join("manifest.json");
        let text = serde_json::to_vec_pretty(manifest).map_err(|e| BundleError::parse(&e))?;
        std::fs::write(&path, text).map_err(|source| BundleError::Write { path, source })
    }
}

/// What a successful run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// AQL packets processed.
    pub packets: usize,
    /// Kernels executed, in execution order, with the IB dword offset of their DISPATCH_DIRECT.
    pub dispatches: Vec<(String, usize)>,
    /// PM4 packets executed over all IBs.
    pub pm4_packets: usize,
    /// Expected regions checked (all matched).
    pub expected_checked: usize,
    /// Final value of each signal region.
    pub signals: Vec<(String, i64)>,
}

/// An expected region whose bytes differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The region.
    pub region: String,
    /// SHA-256 of what the run left there.
    pub actual_sha256: String,
    /// First differing byte.
    pub first_difference: Option<u64>,
}

impl Bundle {
    /// Checks the bundle's files against the manifest ([module documentation](self)): every
    /// file is present, a regular file inside the bundle, of its size; the AQL packets call the
    /// IB; the patch sites land on `DISPATCH_DIRECT` dimensions. Code objects are parsed only by
    /// [`Bundle::run`].
    ///
    /// # Errors
    /// [`BundleError`] naming the field and the file.
    pub fn check(&self) -> Result<(), BundleError> {
        self.check_files().map(drop)
    }

    /// Checks the bundle ([`Bundle::check`]), loads it into a fresh soft device at exactly its
    /// VAs, submits its AQL packets, and checks every expected region.
    ///
    /// # Errors
    /// [`RunError::Bundle`] when the bundle cannot be read or set up, [`RunError::Fault`] for a
    /// queue or command-processor fault, [`RunError::Mismatch`] when outputs differ.
    pub fn run(&self) -> Result<RunReport, RunError> {
        use hal::Device;
        let content = |at: String, message: String| RunError::Bundle(BundleError::Content { at, message });
        let checked = self.check_files()?;
        let m = &self.manifest;
        let mut device = crate::SimDevice::new(self.target);
        for (i, co) in m.code_objects.iter().enumerate() {
            let limit = infile::Limit::new("code object", CODE_OBJECT_BYTES_MAX);
            let bytes = self.read(&format!("code_objects[{i}].file"), &co.file, limit)?;
            let loaded = device.load_code_object_at(&bytes, co.load_va.0).map_err(|e| {
                content(
                    format!("code_objects[{i}]"),
                    format!("{} cannot be loaded at {:#x}: {e}", shown(&co.file), co.load_va.0),
                )
            })?;
            for (j, k) in co.kernels.iter().enumerate() {
                let Some(found) = loaded.kernel(&k.symbol) else {
                    return Err(content(
                        format!("code_objects[{i}].kernels[{j}].symbol"),
                        format!("{} has no kernel {}", shown(&co.file), shown(&k.symbol)),
                    ));
                };
                if (found.kd_va, found.entry_va) != (k.kd_va.0, k.entry_va.0) {
                    return Err(content(
                        format!("code_objects[{i}].kernels[{j}]"),
                        format!(
                            "{}: kernel {} loads at kd {:#x} / entry {:#x}, the manifest says {:#x} / {:#x}",
                            shown(&co.file),
                            shown(&k.symbol),
                            found.kd_va,
                            found.entry_va,
                            k.kd_va.0,
                            k.entry_va.0
                        ),
                    ));
                }
            }
        }
        for (i, r) in m.regions.iter().enumerate() {
            let init = match &r.file {
                Some(f) => {
                    self.read_sized(&format!("regions[{i}].file"), f, &format!("region {}", shown(&r.name)), r.size)?
                }
                None => Vec::new(),
            };
            if r.role == Role::Signal {
                let value = <[u8; 8]>::try_from(init.as_slice()).unwrap_or([0; 8]);
                device
                    .create_signal_at(r.va.0, i64::from_le_bytes(value))
                    .map_err(|e| content(format!("regions[{i}]"), format!("signal {}: {e}", shown(&r.name))))?;
                continue;
            }
            device
                .allocate_at(r.va.0, r.size)
                .map_err(|e| content(format!("regions[{i}]"), format!("region {}: {e}", shown(&r.name))))?;
            device
                .write(r.va.0, &init)
                .map_err(|e| content(format!("regions[{i}]"), format!("region {}: {e}", shown(&r.name))))?;
        }
        let ib_bytes = u64::from(m.ib.size_dwords) * 4;
        device.allocate_at(m.ib.va.0, ib_bytes).map_err(|e| content("ib".into(), format!("the IB: {e}")))?;
        device.write(m.ib.va.0, &checked.ib).map_err(|e| content("ib".into(), format!("the IB: {e}")))?;
        let (packets, _) = checked.aql.as_chunks::<64>();
        let ring = aql_packets::RingSize::new(m.aql.packets.next_power_of_two())
            .map_err(|e| content("aql.packets".into(), e.to_string()))?;
        let queue = device.create_queue(ring).map_err(|e| content("aql".into(), format!("the AQL queue: {e}")))?;
        for p in packets {
            device.write_packet(queue, p).map_err(|e| RunError::Fault(e.to_string()))?;
        }
        let report = device.submit_traced(queue).map_err(|e| RunError::Fault(e.to_string()))?;
        let mut dispatches = Vec::new();
        let mut pm4_packets = 0;
        for ib in device.last_ib_reports() {
            pm4_packets += ib.packets;
            for (d, offset) in ib.dispatches.iter().zip(&ib.dispatch_offsets) {
                dispatches.push((d.kernel.clone(), *offset));
            }
        }
        let mut mismatches = Vec::new();
        for (i, e) in m.expected.iter().enumerate() {
            // validate() checked that every expected result names a memory region.
            let Some(r) = m.regions.iter().find(|r| r.name == e.region) else { continue };
            let mut actual = vec![0u8; usize::try_from(r.size).unwrap_or(0)];
            device.read(r.va.0, &mut actual).map_err(|err| content(format!("expected[{i}]"), err.to_string()))?;
            let actual_sha256 = kernels::compile::sha256_hex(&actual);
            let wanted = self.read_sized(
                &format!("expected[{i}].file"),
                &e.file,
                &format!("region {}", shown(&r.name)),
                r.size,
            )?;
            let first_difference = actual.iter().zip(&wanted).position(|(a, b)| a != b);
            if actual_sha256 != e.sha256.to_ascii_lowercase() || first_difference.is_some() {
                mismatches.push(Mismatch {
                    region: e.region.clone(),
                    actual_sha256,
                    first_difference: first_difference.map(|o| u64::try_from(o).unwrap_or(u64::MAX)),
                });
            }
        }
        if !mismatches.is_empty() {
            return Err(RunError::Mismatch(mismatches));
        }
        let signals = m
            .regions
            .iter()
            .filter(|r| r.role == Role::Signal)
            .map(|r| (r.name.clone(), device.signal_value_raw(r.va.0).unwrap_or(i64::MIN)))
            .collect();
        Ok(RunReport {
            packets: report.packets.len(),
            dispatches,
            pm4_packets,
            expected_checked: m.expected.len(),
            signals,
        })
    }
}

#[cfg(test)]
mod tests;
