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
pub mod rule;
mod validate;

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
/// Offending text longer than this many characters is cut in messages.
pub const SHOWN_CHARS_MAX: usize = 64;

/// `text` as a message shows it, quoted: at most [`SHOWN_CHARS_MAX`] characters, then `…` and
/// its length (`"xxxx"… (100000 bytes)`).
pub(crate) fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS_MAX) {
        None => format!("{text:?}"),
        Some((at, _)) => format!("{:?}… ({} bytes)", &text[..at], text.len()),
    }
}

/// `text` unquoted, cut as [`shown`] cuts it (for numbers).
pub(crate) fn cut(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS_MAX) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
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

/// Why a bundle cannot be read, set up or written. [`BundleError::is_io`] classifies it.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The bundle directory cannot be inspected (missing, permission).
    #[error("cannot open the bundle directory {}: {source}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bundle path names something other than a directory.
    #[error("{} is {kind}, not a bundle directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// A file of the bundle was not read: unreadable or not a regular file (I/O), or missing,
    /// over its limit or outside the bundle directory (invalid; a missing `manifest.json` is
    /// I/O).
    #[error("{at}: {source}")]
    Read {
        /// The manifest field that names the file (`regions[3].file`), or `manifest.json`.
        at: String,
        /// Why.
        source: infile::ReadError,
    },
    /// `manifest.json` is not JSON of this format.
    #[error("manifest.json: line {line}, column {column}: {message}")]
    Parse {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde found wrong, cut to a short prefix.
        message: String,
    },
    /// The manifest is well-formed but a field breaks a rule.
    #[error("manifest.json: {at}: {message}")]
    Invalid {
        /// The JSON path of the field (`patch_sites[2].rule`).
        at: String,
        /// The offending value and the rule it breaks.
        message: String,
    },
    /// A file's size is not the size the manifest gives it.
    #[error("{at} {file}: the file is {actual} bytes, but {what} is {declared} bytes")]
    SizeMismatch {
        /// The JSON path of the field naming the file.
        at: String,
        /// The file as the manifest names it.
        file: String,
        /// What declares the size (`region "x"`, `ib.size_dwords * 4`).
        what: String,
        /// The declared size.
        declared: u64,
        /// The file's size.
        actual: u64,
    },
    /// A vendor PM4-IB AQL packet calls another address than `ib.va`.
    #[error(
        "{file} packet {packet}: the PM4-IB packet calls the IB at {called:#x}, but ib.va is {manifest:#x}: they must agree"
    )]
    IbVa {
        /// The AQL file, quoted and cut.
        file: String,
        /// Index of the packet.
        packet: usize,
        /// The address the packet calls.
        called: u64,
        /// The manifest's `ib.va`.
        manifest: u64,
    },
    /// A file's content disagrees with the manifest (a code object that does not load where the
    /// manifest says, a patch site on the wrong IB dword, an AQL packet naming an unknown signal),
    /// or the device refuses what the manifest describes.
    #[error("{at}: {message}")]
    Content {
        /// The JSON path of the field concerned.
        at: String,
        /// The offending value and the rule it breaks.
        message: String,
    },
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl BundleError {
    /// True for usage and I/O errors (a missing or unreadable directory or manifest, an unreadable
    /// file, a path that is not a regular file, a failed write: exit 2 by the command-line rule),
    /// false for an invalid bundle (exit 1), which includes a file the manifest names but the
    /// bundle does not hold.
    #[must_use]
    pub fn is_io(&self) -> bool {
        match self {
            BundleError::Dir { .. } | BundleError::NotADirectory { .. } | BundleError::Write { .. } => true,
            BundleError::Read { at, source } => {
                // A file the manifest promises and the bundle lacks makes the bundle incomplete.
                let declared_but_absent = at != "manifest.json"
                    && matches!(source, infile::ReadError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound);
                !source.is_invalid_input() && !declared_but_absent
            }
            BundleError::Parse { .. }
            | BundleError::Invalid { .. }
            | BundleError::SizeMismatch { .. }
            | BundleError::IbVa { .. }
            | BundleError::Content { .. } => false,
        }
    }

    fn parse(e: &serde_json::Error) -> Self {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full);
        let message = match message.char_indices().nth(4 * SHOWN_CHARS_MAX) {
            None => message.to_owned(),
            Some((cut, _)) => format!("{}…", &message[..cut]),
        };
        BundleError::Parse { line: e.line(), column: e.column(), message }
    }
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

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The bundle cannot be read (exit 2, [`BundleError::is_io`]) or is invalid (exit 1).
    #[error("{0}")]
    Bundle(#[from] BundleError),
    /// The device faulted (exit 1).
    #[error("device fault: {0}")]
    Fault(String),
    /// Outputs differ from what was expected (exit 1).
    #[error("{} expected region(s) differ: {}", .0.len(), .0.iter().map(|m| format!("{} (sha256 {}{})", m.region, m.actual_sha256, m.first_difference.map_or(String::new(), |o| format!(", first difference at byte {o}")))).collect::<Vec<_>>().join("; "))]
    Mismatch(Vec<Mismatch>),
}

impl RunError {
    /// True for an I/O or usage error (exit 2); everything else exits 1.
    #[must_use]
    pub fn is_io(&self) -> bool {
        matches!(self, RunError::Bundle(e) if e.is_io())
    }
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
        let long = format!("\"0x{}\"", "f".repeat(10_000));
        let msg = serde_json::from_str::<Va>(&long).unwrap_err().to_string();
        assert!(msg.len() < 300 && msg.contains("10002 bytes"), "{msg}");
    }

    #[test]
    fn paths_stay_inside() {
        assert!(is_inside("ib.bin"));
        assert!(is_inside("expected/y.bin"));
        for bad in ["", "/etc/passwd", "../x", "a/../../b"] {
            assert!(!is_inside(bad), "{bad}");
        }
    }

    #[test]
    fn shown_cuts_long_text() {
        assert_eq!(shown("short"), "\"short\"");
        assert_eq!(cut("123"), "123");
        let long = "é".repeat(100);
        let quoted = shown(&long);
        assert!(quoted.starts_with(&format!("\"{}\"", "é".repeat(SHOWN_CHARS_MAX))), "{quoted}");
        assert!(quoted.ends_with("\"… (200 bytes)"), "{quoted}");
        assert!(cut(&long).ends_with("é… (200 bytes)"));
    }

    /// A manifest that validates: a kernargs region with a kernarg site, an input, a signal, an
    /// IB with a DIM site.
    fn sample() -> Manifest {
        let region = |name: &str, va: u64, size: u64, role: Role, dtype: Option<&str>| Region {
            name: name.into(),
            va: Va(va),
            size,
            file: None,
            role,
            dtype: dtype.map(Into::into),
        };
        Manifest {
            format: FORMAT.into(),
            arch: "gfx1100".into(),
            ib: IbEntry { va: Va(0x7e00_0000_1000), file: "ib.bin".into(), size_dwords: 16 },
            aql: AqlEntry { file: "aql.bin".into(), packets: 1 },
            code_objects: Vec::new(),
            regions: vec![
                region("kernargs", 0x7e00_0000_0000, 256, Role::Kernargs, Some("bytes")),
                region("x", 0x7e00_0010_0000, 4096, Role::Input, Some("f32")),
                region("done", 0x5160_0000, 8, Role::Signal, Some("i64")),
            ],
            patch_sites: vec![
                PatchSite {
                    binding: "n".into(),
                    kind: PatchKind::KernargU32,
                    va: Va(0x7e00_0000_000c),
                    rule: "position + 1".into(),
                },
                PatchSite {
                    binding: "grid".into(),
                    kind: PatchKind::DispatchDim,
                    va: Va(0x7e00_0000_1008),
                    rule: "ceil((position + 1) / 64)".into(),
                },
            ],
            expected: vec![Expected { region: "x".into(), sha256: "0".repeat(64), file: "expected/x.bin".into() }],
        }
    }

    #[test]
    fn validation_names_the_json_path_and_the_value() {
        sample().validate().unwrap();
        type Mutation = Box<dyn Fn(&mut Manifest)>;
        let cases: Vec<(Mutation, &str, &str)> = vec![
            (Box::new(|m| m.arch = "gfx9000".into()), "arch", "\"gfx9000\" is not a supported target (one of gfx1030"),
            (Box::new(|m| m.ib.size_dwords = 0), "ib.size_dwords", "0 is outside 1..=267386880"),
            (Box::new(|m| m.aql.packets = u32::MAX), "aql.packets", "4294967295 is outside 1..=65536"),
            (Box::new(|m| m.ib.va = Va(0x7e00_0000_1004)), "ib.va", "0x7e0000001004 is not aligned to 256 bytes"),
            (Box::new(|m| m.ib.va = Va(u64::MAX - 8)), "ib.va", "is outside the address space"),
            (Box::new(|m| m.regions[1].name = "kernargs".into()), "regions[1].name", "is also the name of regions[0]"),
            (
                Box::new(|m| m.regions[1].dtype = Some("float".into())),
                "regions[1].dtype",
                "\"float\" is not a known dtype",
            ),
            (Box::new(|m| m.regions[1].size = 4098), "regions[1].size", "4098 is not a whole number of f32 elements"),
            (Box::new(|m| m.regions[2].va = Va(0)), "regions[2].va", "0 is not a signal handle"),
            (Box::new(|m| m.regions[1].va = Va(0x7e00_0000_0000)), "regions[1].va", "overlaps regions[0]"),
            (
                Box::new(|m| m.regions[1].file = Some("a/../../b".into())),
                "regions[1].file",
                "not a relative path inside",
            ),
            (
                Box::new(|m| m.regions[1].file = Some("f".repeat(2000))),
                "regions[1].file",
                "longer than the limit of 1024",
            ),
            (
                Box::new(|m| m.patch_sites[0].rule = "position ** banana".into()),
                "patch_sites[0].rule",
                "\"position ** banana\" is not a rule",
            ),
            (Box::new(|m| m.patch_sites[0].va = Va(0x10_0000)), "patch_sites[0].va", "0x100000 lies in no region"),
            (Box::new(|m| m.patch_sites[0].va = Va(0x7e00_0010_0000)), "patch_sites[0].va", "of role input"),
            (Box::new(|m| m.patch_sites[0].va = Va(0x7e00_0000_000e)), "patch_sites[0].va", "is not dword aligned"),
            (
                Box::new(|m| m.patch_sites[1].va = Va(0x7e00_0000_1040)),
                "patch_sites[1].va",
                "lies outside the IB [0x7e0000001000, 0x7e0000001040)",
            ),
            (Box::new(|m| m.expected[0].region = "done".into()), "expected[0].region", "\"done\" is a signal region"),
            (
                Box::new(|m| m.expected[0].region = "y".into()),
                "expected[0].region",
                "\"y\" is not the name of a region",
            ),
            (Box::new(|m| m.expected[0].sha256 = "g".repeat(64)), "expected[0].sha256", "is not 64 hex digits"),
            (
                Box::new(|m| m.regions[1].size = DEVICE_BYTES_MAX),
                "regions",
                "over the soft device's memory budget of 1069547520 bytes",
            ),
        ];
        for (mutate, at, needle) in cases {
            let mut m = sample();
            mutate(&mut m);
            let err = m.validate().unwrap_err();
            assert!(!err.is_io(), "{err}");
            let msg = err.to_string();
            assert!(matches!(&err, BundleError::Invalid { at: a, .. } if a == at), "{at}: {msg}");
            assert!(msg.starts_with(&format!("manifest.json: {at}: ")) && msg.contains(needle), "{at}: {msg}");
        }
    }

    #[test]
    fn io_errors_are_told_from_invalid_bundles() {
        let missing = Bundle::open(Path::new("/nonexistent/redline-bundle")).unwrap_err();
        assert!(missing.is_io() && matches!(missing, BundleError::Dir { .. }), "{missing}");
        let file = Bundle::open(Path::new("/dev/null")).unwrap_err();
        assert!(file.is_io() && file.to_string().contains("a character device, not a bundle directory"), "{file}");
        let dir = std::env::temp_dir().join(format!("redline-bundle-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let none = Bundle::open(&dir).unwrap_err();
        assert!(none.is_io() && none.to_string().starts_with("manifest.json: cannot read"), "{none}");
        std::fs::write(dir.join("manifest.json"), b"{\"format\": 1}").unwrap();
        let parse = Bundle::open(&dir).unwrap_err();
        assert!(!parse.is_io(), "{parse}");
        assert_eq!(parse.to_string(), "manifest.json: line 1, column 12: invalid type: integer `1`, expected a string");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_budget_is_the_memory_less_the_kernarg_pool() {
        assert_eq!(DEVICE_BYTES_MAX, (1 << 30) - (4 << 20));
    }
}
