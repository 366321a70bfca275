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
//! VAs are hex strings; files are relative to the bundle directory and may not leave it. A region
//! without `file` starts zeroed. Roles: `kernargs`, `input`, `output`, `state`, `signal` (a signal
//! region holds the 8-byte initial value of the completion signal whose handle is its VA).

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The format tag this reader accepts.
pub const FORMAT: &str = "redline-ib-bundle/1";
/// Limits on what a bundle may describe.
pub const REGIONS_MAX: usize = 4096;
/// At most this many code objects.
pub const CODE_OBJECTS_MAX: usize = 64;
/// At most this many bytes in any one file or region.
pub const FILE_BYTES_MAX: u64 = 256 << 20;

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
        let digits = s
            .strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .ok_or_else(|| serde::de::Error::custom(format!("VA {s:?} must be a hex string starting with 0x")))?;
        u64::from_str_radix(digits, 16).map(Va).map_err(|e| serde::de::Error::custom(format!("VA {s:?}: {e}")))
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
    /// Initial bytes (at most `size`; the rest is zero); none = zeroed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What it is for.
    pub role: Role,
    /// Element type for tools that display it (`f32`, `u32`, `bytes`).
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
    /// The rule, e.g. `position + 1` or `ceil((position + 1) / 64)`.
    pub rule: String,
}

/// Kinds of patch sites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchKind {
    /// A `u32` in a retained kernarg segment.
    KernargU32,
    /// A DISPATCH_DIRECT dimension dword in the IB.
    DispatchDim,
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

/// Why a bundle cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `manifest.json` is not valid.
    #[error("manifest.json: {0}")]
    Manifest(#[from] serde_json::Error),
    /// The manifest is well-formed but says something impossible.
    #[error("manifest.json: {0}")]
    Invalid(String),
}

impl Manifest {
    /// Checks what serde cannot: format, target, limits, names, relative paths, sizes.
    ///
    /// # Errors
    /// [`BundleError::Invalid`] naming the field.
    pub fn validate(&self) -> Result<pm4_encoding::Target, BundleError> {
        let bad = |m: String| Err(BundleError::Invalid(m));
        if self.format != FORMAT {
            return bad(format!("format {:?} is not {FORMAT:?}", self.format));
        }
        let Ok(target) = self.arch.parse::<pm4_encoding::Target>() else {
            return bad(format!("arch {:?} is not a supported target", self.arch));
        };
        if self.regions.len() > REGIONS_MAX || self.code_objects.len() > CODE_OBJECTS_MAX {
            return bad(format!(
                "{} regions / {} code objects exceed the limits",
                self.regions.len(),
                self.code_objects.len()
            ));
        }
        let mut files: Vec<&str> = vec![&self.ib.file, &self.aql.file];
        files.extend(self.code_objects.iter().map(|c| c.file.as_str()));
        files.extend(self.regions.iter().filter_map(|r| r.file.as_deref()));
        files.extend(self.expected.iter().map(|e| e.file.as_str()));
        for f in files {
            if !is_inside(f) {
                return bad(format!("file {f:?} must be a relative path inside the bundle"));
            }
        }
        let mut names: Vec<&str> = self.regions.iter().map(|r| r.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return bad(format!("region name {:?} is used twice", w[0]));
        }
        for r in &self.regions {
            if r.size == 0 || r.size > FILE_BYTES_MAX {
                return bad(format!("region {:?}: size {} outside 1..={FILE_BYTES_MAX}", r.name, r.size));
            }
            if r.role == Role::Signal && r.size != 8 {
                return bad(format!("signal region {:?} must be 8 bytes, not {}", r.name, r.size));
            }
        }
        for e in &self.expected {
            if !self.regions.iter().any(|r| r.name == e.region) {
                return bad(format!("expected result names unknown region {:?}", e.region));
            }
            if e.sha256.len() != 64 || !e.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return bad(format!("expected {:?}: sha256 {:?} is not 64 hex digits", e.region, e.sha256));
            }
        }
        if u64::from(self.ib.size_dwords) * 4 > FILE_BYTES_MAX || self.ib.size_dwords == 0 {
            return bad(format!("ib.size_dwords {} outside 1..={}", self.ib.size_dwords, FILE_BYTES_MAX / 4));
        }
        Ok(target)
    }
}

/// A relative path with no `..`, root or prefix.
fn is_inside(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
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
    /// Reads and validates `dir/manifest.json`.
    ///
    /// # Errors
    /// [`BundleError`] naming the problem.
    pub fn open(dir: &Path) -> Result<Self, BundleError> {
        let path = dir.join("manifest.json");
        let text = std::fs::read(&path).map_err(|source| BundleError::Io { path: path.clone(), source })?;
        let manifest: Manifest = serde_json::from_slice(&text)?;
        let target = manifest.validate()?;
        Ok(Self { dir: dir.to_owned(), manifest, target })
    }

    /// The bytes of a file of the bundle, at most `limit` bytes.
    ///
    /// # Errors
    /// [`BundleError::Io`], or [`BundleError::Invalid`] when it is larger than `limit`.
    pub fn read(&self, file: &str, limit: u64) -> Result<Vec<u8>, BundleError> {
        let path = self.dir.join(file);
        let len = std::fs::metadata(&path).map_err(|source| BundleError::Io { path: path.clone(), source })?.len();
        if len > limit {
            return Err(BundleError::Invalid(format!("{file}: {len} bytes, more than {limit}")));
        }
        std::fs::read(&path).map_err(|source| BundleError::Io { path, source })
    }

    /// Writes `manifest` and `files` (relative name → bytes) into `dir`, creating it.
    ///
    /// # Errors
    /// [`BundleError`] when the manifest is invalid or a file cannot be written.
    pub fn write(dir: &Path, manifest: &Manifest, files: &[(String, Vec<u8>)]) -> Result<(), BundleError> {
        manifest.validate()?;
        for (name, bytes) in files {
            if !is_inside(name) {
                return Err(BundleError::Invalid(format!("file {name:?} must be inside the bundle")));
            }
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|source| BundleError::Io { path: parent.to_owned(), source })?;
            }
            std::fs::write(&path, bytes).map_err(|source| BundleError::Io { path, source })?;
        }
        let path = dir.join("manifest.json");
        let text = serde_json::to_vec_pretty(manifest)?;
        std::fs::write(&path, text).map_err(|source| BundleError::Io { path, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn va_hex_strings() {
        let v: Va = serde_json::from_str("\"0x7f0000001000\"").unwrap();
        assert_eq!(v, Va(0x7f00_0000_1000));
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"0x7f0000001000\"");
        assert!(serde_json::from_str::<Va>("\"7f00\"").is_err());
        assert!(serde_json::from_str::<Va>("4096").is_err());
        assert!(serde_json::from_str::<Va>("\"0xZZ\"").is_err());
    }

    #[test]
    fn paths_stay_inside() {
        assert!(is_inside("ib.bin"));
        assert!(is_inside("expected/y.bin"));
        for bad in ["", "/etc/passwd", "../x", "a/../../b"] {
            assert!(!is_inside(bad), "{bad}");
        }
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
    /// First differing byte, when the expected file was readable.
    pub first_difference: Option<u64>,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The bundle cannot be set up as described (exit 2).
    #[error("{0}")]
    Bundle(#[from] BundleError),
    /// The device faulted (exit 1).
    #[error("device fault: {0}")]
    Fault(String),
    /// Outputs differ from what was expected (exit 1).
    #[error("{} expected region(s) differ: {}", .0.len(), .0.iter().map(|m| format!("{} (sha256 {}{})", m.region, m.actual_sha256, m.first_difference.map_or(String::new(), |o| format!(", first difference at byte {o}")))).collect::<Vec<_>>().join("; "))]
    Mismatch(Vec<Mismatch>),
}

impl Bundle {
    /// Loads the bundle into a fresh soft device at exactly its VAs, submits its AQL packets,
    /// and checks every expected region.
    ///
    /// # Errors
    /// [`RunError::Bundle`] when the bundle cannot be set up, [`RunError::Fault`] for a queue or
    /// command-processor fault, [`RunError::Mismatch`] when outputs differ.
    pub fn run(&self) -> Result<RunReport, RunError> {
        use hal::Device;
        let invalid = |m: String| RunError::Bundle(BundleError::Invalid(m));
        let m = &self.manifest;
        let mut device = crate::SimDevice::new(self.target);
        for co in &m.code_objects {
            let bytes = self.read(&co.file, FILE_BYTES_MAX)?;
            let loaded = device
                .load_code_object_at(&bytes, co.load_va.0)
                .map_err(|e| invalid(format!("{}: cannot load at {:#x}: {e}", co.file, co.load_va.0)))?;
            for k in &co.kernels {
                let Some(found) = loaded.kernel(&k.symbol) else {
                    return Err(invalid(format!("{}: no kernel {:?}", co.file, k.symbol)));
                };
                if (found.kd_va, found.entry_va) != (k.kd_va.0, k.entry_va.0) {
                    return Err(invalid(format!(
                        "{}: kernel {} loads at kd {:#x} / entry {:#x}, the manifest says {:#x} / {:#x}",
                        co.file, k.symbol, found.kd_va, found.entry_va, k.kd_va.0, k.entry_va.0
                    )));
                }
            }
        }
        for r in &m.regions {
            let init = match &r.file {
                Some(f) => self.read(f, r.size)?,
                None => Vec::new(),
            };
            if r.role == Role::Signal {
                let mut value = [0u8; 8];
                value[..init.len()].copy_from_slice(&init);
                device
                    .create_signal_at(r.va.0, i64::from_le_bytes(value))
                    .map_err(|e| invalid(format!("signal {}: {e}", r.name)))?;
                continue;
            }
            device.allocate_at(r.va.0, r.size).map_err(|e| invalid(format!("region {}: {e}", r.name)))?;
            device.write(r.va.0, &init).map_err(|e| invalid(format!("region {}: {e}", r.name)))?;
        }
        let ib_bytes = u64::from(m.ib.size_dwords) * 4;
        let ib = self.read(&m.ib.file, ib_bytes)?;
        device.allocate_at(m.ib.va.0, ib_bytes).map_err(|e| invalid(format!("ib: {e}")))?;
        device.write(m.ib.va.0, &ib).map_err(|e| invalid(format!("ib: {e}")))?;
        let aql = self.read(&m.aql.file, u64::from(m.aql.packets) * 64)?;
        let (packets, rest) = aql.as_chunks::<64>();
        if !rest.is_empty()
            || packets.len() != usize::try_from(m.aql.packets).unwrap_or(usize::MAX)
            || packets.is_empty()
        {
            return Err(invalid(format!("{}: {} bytes is not {} AQL packets", m.aql.file, aql.len(), m.aql.packets)));
        }
        let ring =
            aql_packets::RingSize::new(m.aql.packets.next_power_of_two()).map_err(|e| invalid(format!("aql: {e}")))?;
        let queue = device.create_queue(ring).map_err(|e| invalid(format!("aql queue: {e}")))?;
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
        for e in &m.expected {
            // PANIC: validate() checked that every expected region exists.
            let r = m.regions.iter().find(|r| r.name == e.region).expect("validated region");
            let mut actual = vec![0u8; usize::try_from(r.size).unwrap_or(0)];
            device.read(r.va.0, &mut actual).map_err(|err| invalid(format!("expected {}: {err}", r.name)))?;
            let actual_sha256 = kernels::compile::sha256_hex(&actual);
            let wanted = self.read(&e.file, r.size).ok();
            let first_difference = wanted.as_ref().and_then(|w| {
                actual
                    .iter()
                    .zip(w)
                    .position(|(a, b)| a != b)
                    .or((w.len() != actual.len()).then_some(w.len().min(actual.len())))
            });
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
